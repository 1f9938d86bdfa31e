"""What workflow.swift's python_persist calls run: the store on the ME's rank, the outcome on a
worker's. workflow.sh puts this directory on PYTHONPATH.

The resident ME rank (one interpreter, kept by python_persist, holding emews.core.eqpy's queues and
the ME's thread) keeps the experiment's store, ``$TURBINE_OUTPUT/results.db``, as the master of
``emews run`` does::

    next_message()     the ME's next message, answered or turned into what Swift/T needs:
                         "Params"        answered here with the settings file (no round trip)
                         points          each point added to the store (queued) with its id and
                                         run id RUNnnnnnn (emews run's numbering, from 0); returns
                                         "EVAL;RUNID;POINT;RUNID;POINT..." (a point that a killed
                                         run left ``interrupted``, which a resumed ME proposes
                                         first, keeps its row: its next attempt, RUNnnnnnn-2)
                         DONE + final    final.json written, the store's meta "final"; "DONE"
                         EQPY_ABORT      the traceback printed here; "ABORT"
    tell(results)      the outcomes of a batch stored and committed (done or failed, with
                       params, result, rank, times, error and log tail; several objectives
                       judged as emews run's master does), then the values given to the ME
                       (several objectives: JSON lists, see emews.core.eqpy)

A worker rank calls :func:`evaluate` for one point; its stdout and stderr go to
``out/out-RANK.txt`` from its first evaluation on; it returns the outcome as one JSON object,
its wire form (:meth:`emews.evaluate.Outcome.to_wire`) with the worker's ``rank``.

Everything that goes back to Swift/T is JSON written with ``ensure_ascii=True`` with ``;``
escaped: Tcl cannot hold a character beyond U+FFFF (an emoji comes back as broken UTF-8), and
``;`` separates the points and results of a batch.
"""

import atexit
import collections
import json
import math
import os
import socket
import sys
import time
from pathlib import Path

import emews.core.eqpy as eqpy
from emews import experiment
from emews.core.algorithm import point_key
from emews.core.criteria import Criteria
from emews.core.master import run_id
from emews.evaluate import Outcome, from_env
from emews.pools.mpi import redirect_output
from emews.result import final_record
from emews.status import FINAL, Status
from emews.store import SQLiteStore
from emews.validation import env_flag



def _exit_without_finalizing():
    """Turbine finalizes the embedded Python at the process's exit (an atexit handler of its own,
    after MPI_Finalize). Tearing down the modules of scikit-learn, scipy and pyarrow there
    corrupted the heap and hung the rank in glibc's malloc (seen under Debian's MPICH, even with
    PYTHONMALLOC=malloc). Everything is committed and MPI is finalized by then, so leave at once:
    Python runs this before it finalizes its modules."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _under_turbine():
    """Called by the functions Turbine runs (only there: a plain Python would lose its exit
    status)."""
    global _registered
    if not _registered:
        atexit.register(_exit_without_finalizing)
        _registered = True


_registered = False

_store = None
_batch = []          # (id, attempt) of the points being evaluated, in order
_requeue = {}        # point key -> deque of (id, attempt) that a killed run left interrupted
_objective = None
_study = None         # config.json's [study]: what the study optimizes, its replicas


def expdir():
    """The experiment directory (TURBINE_OUTPUT, which workflow.sh sets)."""
    return Path(os.environ["TURBINE_OUTPUT"])


def wire(data):
    """``data`` as JSON that Tcl can hold and that never contains ``;``."""
    return json.dumps(data, ensure_ascii=True).replace(";", "\\u003b")


def tcl_safe(text):
    """``text`` with every character beyond U+FFFF written as a \\U escape."""
    return "".join(c if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}" for c in text)


def rank():
    """This process's MPI rank, from the launcher's environment (``None`` when unknown)."""
    for name in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID"):
        if os.environ.get(name, "").isdigit():
            return int(os.environ[name])
    return None


# --- the ME's rank -----------------------------------------------------------------------------

def store():
    global _store
    if _store is None:
        _store = SQLiteStore(expdir() / "results.db")
        _store.set_meta("started", time.time())
        _store.set_meta("master", {"host": socket.gethostname(), "pid": os.getpid(),
                                   "driver": "swift-t"})
        _store.commit()
        for row in _store.rows("interrupted"):   # workflow.sh --resume: prepare.py marked them
            _requeue.setdefault(point_key(row["params"]), collections.deque()).append(
                (row["id"], row["attempt"]))
    return _store


def study():
    """The study's ``[study]`` table as ``prepare.py`` recorded it (``config.json``)."""
    global _study
    if _study is None:
        _study = json.loads((expdir() / "config.json").read_text())["study"]
    return _study


def _point_json(text):
    """The point as the store keeps it (a JSON object), and as the worker gets it (ASCII)."""
    try:
        point = json.loads(text)
    except ValueError:
        point = text  # a classic ME's point that is not JSON: kept as a JSON string
        return json.dumps(point), tcl_safe(text)
    return json.dumps(point, ensure_ascii=False), wire(point)


def _begin_batch(message):
    db = store()
    point_id, seq = db.next_id(), db.next_seq()
    parts, rows, again = ["EVAL"], [], []
    _batch.clear()
    for text in eqpy.split_points(message):
        stored, sent = _point_json(text)
        waiting = _requeue.get(point_key(json.loads(stored)))
        if waiting:
            i, attempt = waiting.popleft()
            attempt += 1
            again.append((i, attempt, run_id(i, attempt)))
        else:
            i, attempt, point_id, seq = point_id, 1, point_id + 1, seq + 1
            rows.append((i, stored, run_id(i), None, seq - 1))
        _batch.append((i, attempt))
        parts += [run_id(i, attempt), sent]
    db.add(rows)
    db.requeue(again)
    db.commit()
    return ";".join(parts)


def _finish(final_text):
    db = store()
    settings = json.loads(Path(os.environ.get("EMEWS_SETTINGS")
                               or expdir() / "settings.json").read_text())
    final = final_record(final_text, db, {**study(), **(settings.get("replicas") or {})})
    db.set_meta("final", final)
    db.commit()
    db.close()
    experiment.write_json(expdir() / "final.json", final)


def next_message():
    """Wait for the ME's next message; return what workflow.swift acts on (see above)."""
    _under_turbine()
    while True:
        message = eqpy.output_q_get()
        if message == eqpy.PARAMS:
            eqpy.input_q.put(os.environ.get("EMEWS_SETTINGS")
                             or str(expdir() / "settings.json"))
        elif message in eqpy.END_MESSAGES:
            _finish(eqpy.output_q_get())
            return "DONE"
        elif message == eqpy.EQPY_ABORT:
            trace = eqpy.output_q_get()
            print(f"workflow.swift: the model-exploration algorithm failed (EQPY_ABORT):\n{trace}",
                  flush=True)
            if _store is not None:
                _store.set_meta("final", {"stop_reason": "the ME failed (EQPY_ABORT)"})
                _store.close()
            return "ABORT"
        else:
            return _begin_batch(message)


def tell(results):
    """Store the outcomes of the batch (JSON objects joined by ';', in order), commit, then
    answer the ME with their values."""
    outcomes = [json.loads(part) for part in results.split(";")] if results else []
    if len(outcomes) != len(_batch):
        raise RuntimeError(f"emews_swift.tell: {len(outcomes)} results for a batch of "
                           f"{len(_batch)} points")
    rows, criteria = [], Criteria.from_study(study())
    for (point_id, attempt), wire in zip(_batch, outcomes):
        outcome = criteria.judge(Outcome.received(wire))
        status = outcome.status if outcome.status in FINAL else Status.FAILED
        rank = wire.get("rank") if isinstance(wire, dict) else None
        rows.append((point_id, rank if type(rank) is int else None, outcome, attempt, status))
    db = store()
    db.finish(rows)
    db.commit()
    eqpy.input_q.put(";".join(eqpy.format_value(_told(criteria, outcome, status))
                              for _, _, outcome, _, status in rows))
    return ""


def _told(criteria, outcome, status):
    """What the ME is told of an outcome: its value, NaN for a failure, an Objectives in a
    study of several objectives or constraints."""
    if status != Status.DONE:
        return math.nan
    return criteria.told(outcome.objectives, outcome.metrics) if criteria.vector \
        else outcome.value


# --- a worker's rank ---------------------------------------------------------------------------

def evaluate(params, exp_id, run_id, model_name):
    """Evaluate one point (a JSON object) on this worker; the outcome as JSON for the wire."""
    global _objective
    _under_turbine()
    if _objective is None:
        out = expdir() / "out"
        out.mkdir(exist_ok=True)
        redirect_output(out / f"out-{rank() if rank() is not None else os.getpid()}.txt")
        _objective = from_env(isolate=env_flag("EMEWS_ISOLATE", False))
    _objective.exp_id, _objective.model_name = exp_id, model_name
    outcome = _objective.evaluate(params, run_id)
    return wire({**outcome.to_wire(), "rank": rank()})
