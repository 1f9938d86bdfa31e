"""What workflow.swift's python_persist calls run: the study's master on the ME's rank, the
outcome on a worker's. workflow.sh puts this directory on PYTHONPATH.

The resident ME rank (one interpreter, kept by python_persist) runs the master of ``emews run``
(:func:`emews._study.run_master`: the ME's thread, the store, the failure policy, the pruner,
the limits, the resume and the final record) on a thread of its own, on the study that
``prepare_study.py`` recorded in ``config.json``, opened as the job that ``emews run`` spawns
opens it (:func:`emews._prepare.reopen`: its lock, spec, store and algorithm). Its pool is a
:class:`SwiftPool`, which workflow.swift serves::

    next_message()     the next batch of tasks the master hands the workers, as
                       "EVAL;RUNID;POINT;RUNID;POINT..." (retries among them, RUNnnnnnn-2, ...);
                       "DONE" when the study has ended (final.json written), "ABORT" when the
                       ME or the study failed (the reason printed here)
    tell(results)      the outcomes of that batch, in order, handed back to the master

A worker rank calls :func:`evaluate` for one point; its stdout and stderr go to
``out/out-RANK.txt`` from its first evaluation on; it returns the outcome as one JSON object,
``{"outcome", "rank", "reports"}``: its wire form (:meth:`emews.evaluate.Outcome.to_wire`), the
worker's rank and the run's reports (``emews.report`` calls and ``EMEWS_REPORT`` lines, each a
:class:`~emews.evaluate._outcome.Report`'s wire form). Under Swift/T a running task cannot hear
from the ME's rank: every report is answered "go on", and the master's pruner judges them
when the outcome comes back (a run it stops is stored ``pruned`` at that step).

Everything that goes back to Swift/T is JSON written with ``ensure_ascii=True`` with ``;``
escaped: Tcl cannot hold a character beyond U+FFFF (an emoji comes back as broken UTF-8), and
``;`` separates the points and results of a batch.
"""

import atexit
import importlib
import json
import os
import queue
import socket
import sys
import threading
import time
import traceback
from pathlib import Path

from emews._errors import MEAborted
from emews.core._pruners import PAUSE
from emews.evaluate import Outcome, from_env
from emews.evaluate._base import Resources
from emews.evaluate._launcher import launcher_rank
from emews.evaluate._outcome import BadOutcome, Report
from emews.evaluate._reporting import Pruned
from emews.pools._base import Pool
from emews.pools._mpi import redirect_output
from emews._prepare import reopen
from emews._status import Status
from emews._study import run_master
from emews._validation import env_flag


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

_pool = None         # the ME's rank: the SwiftPool its master hands tasks to
_batch = []          # the tasks of the batch workflow.swift evaluates, in order
_objective = None


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
    return launcher_rank(default=None)


# --- the ME's rank -----------------------------------------------------------------------------

class SwiftPool(Pool):
    """The master's pool under Swift/T: the job's workers, reached through workflow.swift.

    :meth:`collect` hands the tasks submitted since the last batch to workflow.swift (through
    ``batches``, which :func:`next_message` reads), and takes back their outcomes (through
    ``outcomes``, which :func:`tell` fills) with the reports each run made. Swift/T queues every
    task it is given and balances them over its workers, so slots are never short, and no task
    is known to start before its outcome comes back (its row stays ``queued``). A running task
    cannot hear from this rank: its reports are judged when its outcome comes back, in order,
    and the first that the pruner stops makes it ``pruned`` at that step (the rest of its
    reports left out), as the model would have stopped there under ``emews run``.

    A run the pruner pauses (``pause = true``) trained to its end all the same: its later
    reports and its outcome are kept here (:attr:`trained`), and its thaw is answered from
    them, judged in turn, without training again: the steps and the value a thaw from the
    checkpoint would have reported (a thaw after the study resumed in a later job runs it again).
    """

    def __init__(self, slots):
        super().__init__(slots)              # running: task id -> Task, not yet come back
        self.unsent = []                     # submitted, not yet handed to workflow.swift
        self.batches = queue.SimpleQueue()   # to workflow.swift: task lists, then "DONE"/"ABORT"
        self.outcomes = queue.SimpleQueue()  # from workflow.swift: a batch's (task, wire) pairs
        self.trained = {}   # a paused point's id -> (its reports after the pause, its outcome)
        self.thawed = []    # thaws of those, to answer from them

    def free_slots(self):
        return sys.maxsize

    def submit(self, tasks, slots=None):
        for task in tasks:
            self.running[task.id] = task
            (self.thawed if task.id in self.trained else self.unsent).append(task)
        return []

    def collect(self, block=True):
        """Finished tasks; with ``block``, first hand workflow.swift the tasks not yet sent
        (the master has committed their rows by then: while workflow.swift runs them, this
        rank's Python runs only inside :func:`next_message` and :func:`tell`), then wait for
        their batch to come back."""
        thawed, self.thawed = self.thawed, []
        finished = [(task, None, self._judged(task, None, *self.trained.pop(task.id)))
                    for task in thawed]
        for task in thawed:
            del self.running[task.id]
        if block and self.unsent:
            self.batches.put(self.unsent)
            self.unsent = []
        try:
            batch = self.outcomes.get(block=block and not finished and bool(self.running))
        except queue.Empty:
            return finished
        for task, data in batch:
            del self.running[task.id]
            worker = data.get("rank") if isinstance(data, dict) else None
            worker = worker if type(worker) is int else None
            outcome = Outcome.received(data.get("outcome") if isinstance(data, dict) else data)
            finished.append((task, worker, self._judged(task, worker, _reports(data), outcome)))
        return finished

    def _judged(self, task, worker, reports, outcome):
        """``outcome``, pruned at the first of ``reports`` that the master's pruner stops (the
        rest kept with it in :attr:`trained` when it pauses the run)."""
        for i, report in enumerate(reports):
            verdict = self.judge(task, worker, report)
            if verdict:
                if verdict == PAUSE:
                    self.trained[task.id] = (reports[i + 1:], outcome)
                pruned = Outcome(report.value, Status.PRUNED, str(Pruned(report.value,
                                                                          report.step)))
                pruned.started, pruned.finished = outcome.started, outcome.finished
                return pruned
        return outcome


def _run_study(pool):
    """The ME's rank: run the study's master on ``pool`` (what ``emews run`` runs, with the ME
    thread, the store and the final record), then tell workflow.swift how it ended."""
    end = "ABORT"
    try:
        package = os.environ.get("EMEWS_ME")
        try:
            classic = importlib.import_module(package) if package else None
        except Exception:   # noqa: BLE001 - a classic ME that does not import: as EQPY_ABORT
            raise MEAborted(traceback.format_exc()) from None
        study = reopen(expdir(), classic)
        try:
            run_master(study, pool)
        finally:
            study.release()
        end = "DONE"
    except MEAborted as exc:
        print("workflow.swift: the model-exploration algorithm failed (EQPY_ABORT):\n"
              f"{exc.traceback}", flush=True)
    except BaseException:   # noqa: BLE001 - the job must end, with the reason
        print(f"workflow.swift: the study failed:\n{traceback.format_exc()}", flush=True)
    finally:
        pool.batches.put(end)


def _point(text):
    """The point as the worker gets it (ASCII JSON, or a classic ME's text that is not JSON)."""
    try:
        return wire(json.loads(text))
    except ValueError:
        return tcl_safe(text)


def next_message():
    """What workflow.swift does next: ``EVAL;RUNID;POINT;RUNID;POINT...`` (a batch to
    evaluate), ``DONE`` or ``ABORT``. The first call starts the study's master (see
    :func:`_run_study`) on a thread of this rank."""
    global _pool
    _under_turbine()
    if _pool is None:
        _pool = SwiftPool(int(os.environ.get("RESIDENT_WORK_RANKS", "1")))
        threading.Thread(target=_run_study, args=(_pool,), name="emews-master",
                         daemon=True).start()
    item = _pool.batches.get()
    if isinstance(item, str):
        return item
    _batch[:] = item
    return ";".join(["EVAL", *(part for task in item for part in (task.run_id,
                                                                  _point(task.params)))])


def tell(results):
    """Hand the outcomes of the batch (JSON objects joined by ';', in order) to the master."""
    outcomes = [json.loads(part) for part in results.split(";")] if results else []
    if len(outcomes) != len(_batch):
        raise RuntimeError(f"emews_swift.tell: {len(outcomes)} results for a batch of "
                           f"{len(_batch)} points")
    _pool.outcomes.put(list(zip(_batch, outcomes)))
    return ""


def _reports(wire):
    """The reports a worker sent with an outcome (a malformed one left out)."""
    found = wire.pop("reports", None) if isinstance(wire, dict) else None
    reports = []
    for data in found if isinstance(found, list) else ():
        try:
            reports.append(Report.from_wire(data))
        except BadOutcome:
            continue
    return reports


# --- a worker's rank ---------------------------------------------------------------------------

def evaluate_parallel(params, exp_id, run_id, model_name):
    """Evaluate one point on the workers of a Swift/T parallel task (``@par=k``): the first
    evaluates it with ``Resources(k, the workers' hosts)`` (the model's k processes start with
    the site's launcher), the others wait until it is done; the first's outcome (others: "").

    The task's communicator is Turbine's MPI's (already loaded in this process, which may not
    be mpi4py's): its rank and size are asked of that library, the hosts pass through files in
    the run's directory, and the others wait on a file, not spinning on a core the model's
    processes use.
    """
    rank, size = _task_rank_size()
    meeting = expdir() / "run" / run_id / "par-task"
    meeting.mkdir(parents=True, exist_ok=True)
    (meeting / f"host-{rank}").write_text(socket.gethostname())
    if rank != 0:
        _wait_for(lambda: (meeting / "done").exists())
        return ""
    _wait_for(lambda: all((meeting / f"host-{r}").exists() for r in range(size)))
    hosts = tuple((meeting / f"host-{r}").read_text() for r in range(size))
    try:
        return evaluate(params, exp_id, run_id, model_name, Resources(size, hosts))
    finally:
        (meeting / "done").write_text("")


def _task_rank_size():
    """This worker's rank in its parallel task, and the task's size, asked of the MPI library
    Turbine runs on (the ``libmpi`` mapped into this process) with the task's communicator."""
    import ctypes

    import turbine_helpers

    with open("/proc/self/maps") as maps:
        libraries = [line.split()[-1] for line in maps if line.rstrip().endswith(".so")
                     or ".so." in line]
    path = next(p for p in libraries if os.path.basename(p).startswith(("libmpi.", "libmpich.")))
    library = ctypes.CDLL(path)
    handle = (ctypes.c_int if turbine_helpers.mpi_impl == "MPICH" else ctypes.c_void_p)(
        turbine_helpers.task_comm)
    rank, size = ctypes.c_int(), ctypes.c_int()
    library.MPI_Comm_rank(handle, ctypes.byref(rank))
    library.MPI_Comm_size(handle, ctypes.byref(size))
    return rank.value, size.value


def _wait_for(condition, poll=0.05):
    while not condition():
        time.sleep(poll)


def evaluate(params, exp_id, run_id, model_name, resources=None):
    """Evaluate one point (a JSON object) on this worker; the outcome as JSON for the wire."""
    global _objective
    _under_turbine()
    if _objective is None:
        out = expdir() / "out"
        out.mkdir(exist_ok=True)
        redirect_output(out / f"out-{rank() if rank() is not None else os.getpid()}.txt")
        _objective = from_env(isolate=env_flag("EMEWS_ISOLATE", False))
    _objective.exp_id, _objective.model_name = exp_id, model_name
    reports = []

    def keep(report):   # no verdict can reach a running task: stored, never stopped
        reports.append(report.to_wire())
        return False

    outcome = _objective.evaluate(params, run_id, resources=resources, report=keep)
    return wire({"outcome": outcome.to_wire(), "rank": rank(), "reports": reports})
