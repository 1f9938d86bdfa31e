"""Part 2, worker utilization: real MPI ranks that sleep, with each algorithm, async and batch.

Each run is ``emews.run`` under ``mpiexec -n WORKERS+1``: the objective
:func:`benchmarks.utilization_tasks.sleep` sleeps a lognormal time (median 1 s, sigma 1) drawn
from a hash of the point, so the durations do not depend on the algorithm, and returns
Hartmann-6 at the point, so a model has something to learn. From the store::

    utilization = sum(finished - started) / (workers x (last finish - first point queued))

the steady utilization, the same up to the moment the last task started (see
:func:`benchmarks.common.utilization`), and ``after_design_utilization``, the steady one from
the moment the first point beyond the algorithm's initial design (:data:`DESIGN`) started: the
model-based part of the search, where a slow proposal would show.

The algorithm is wrapped in :class:`benchmarks.timed.Timed`, which gives its proposal latency:
the time ``ask`` and ``tell`` took on the ME thread (model-based algorithms may do their work in
either: scikit-optimize refits its model in ``tell``). A run stops at the task budget or after
``utilization_max_time`` seconds, whichever comes first (a slow proposer may not finish).
In async mode the GA is the steady-state GA (``ga_async``), in batch mode the generational one.
"""

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

from . import utilization_peers, utilization_tasks
from .common import mpiexec_python, summary, utilization

SPACE = [{"name": f"x{i}", "type": "float", "lower": 0.0, "upper": 1.0} for i in range(1, 7)]
ASYNC_VARIANTS = {"ga": "ga_async"}
DESIGN = {"random": 0, "ga": 20, "gp": 10, "mbo": 4 * len(SPACE)}   # the defaults' designs


def run(sizes):
    """Every algorithm in ``sizes.utilization_algorithms``, async then batch, in one launch."""
    studies = [(a, m) for a in sizes.utilization_algorithms for m in ("async", "batch")]
    print(f"[utilization] {len(studies)} studies under mpiexec -n "
          f"{sizes.utilization_workers + 1}", flush=True)
    with tempfile.TemporaryDirectory(prefix="emews-bench-") as tmp:
        out = Path(tmp) / "figures.json"
        (Path(tmp) / "space.json").write_text(json.dumps(SPACE))
        mpiexec_python(sizes.utilization_workers + 1, [
            "-m", __name__, str(sizes.utilization_tasks), str(out), "--dir", tmp,
            "--max-time", str(sizes.utilization_max_time),
            *(f"{a}:{m}" for a, m in studies)])
        runs = json.loads(out.read_text())
    runs += utilization_peers.rows(sizes)  # libEnsemble and Optuna, the same tasks
    return {"workers": sizes.utilization_workers, "tasks": sizes.utilization_tasks,
            "max_time_s": sizes.utilization_max_time,
            "duration": utilization_tasks.DESCRIPTION, "runs": runs}


def _study(algorithm, mode, tasks, directory, max_time):
    """Runs under mpiexec: the study, then (rank 0) its figures from the store."""
    from mpi4py import MPI

    import emews
    from emews.store import SQLiteStore

    from .timed import Timed

    plugin = ASYNC_VARIANTS.get(algorithm, algorithm) if mode == "async" else algorithm
    space = Path(directory) / "space.json"
    result = emews.run({
        "system": {"progress_interval": 3600.0},
        "study": {"algorithm": "benchmarks.timed:Timed", "space": str(space), "budget": tasks,
                  "impl": "py", "objective": "benchmarks.utilization_tasks:sleep", "mode": mode,
                  "seed": 0, "data_dir": str(directory), "name": "utilization",
                  "max_time": max_time},
        "algorithm": {"inner": plugin},
    })
    if result is None:  # a worker rank
        return None
    store = SQLiteStore(result.expdir / "results.db")
    rows = store.rows("done", "failed")
    store.close()
    timed = Timed.latest
    workers = MPI.COMM_WORLD.Get_size() - 1
    after = [r for r in rows if r["seq"] >= DESIGN.get(algorithm, 0)]
    begin = min((r["started"] for r in after), default=None)
    after_design = utilization([(max(r["queued"], begin), max(r["started"], begin),
                                 max(r["finished"], begin)) for r in rows], workers) \
        if begin is not None else {"steady_utilization": None}
    return {"algorithm": algorithm, "plugin": plugin, "mode": mode, "workers": workers,
            "evaluations": len(rows), "stop_reason": result.stop_reason,
            **utilization([(r["queued"], r["started"], r["finished"]) for r in rows], workers),
            "after_design_utilization": after_design["steady_utilization"],
            "ask_calls": len(timed.ask_seconds), "ask_total_s": float(np.sum(timed.ask_seconds)),
            **summary(np.asarray(timed.ask_seconds) * 1e3, "ask_ms"),
            "tell_total_s": float(np.sum(timed.tell_seconds)),
            **summary(np.asarray(timed.tell_seconds) * 1e3, "tell_ms")}


def main(argv=None):
    """Run utilization studies one after the other (under mpiexec); write their figures."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("tasks", type=int)
    parser.add_argument("out")
    parser.add_argument("studies", nargs="+", metavar="ALGORITHM:MODE")
    parser.add_argument("--dir", default=".")
    parser.add_argument("--max-time", type=float, default=None)
    args = parser.parse_args(argv)
    runs = [_study(*study.split(":"), args.tasks, args.dir, args.max_time)
            for study in args.studies]
    if None not in runs:  # rank 0
        Path(args.out).write_text(json.dumps(runs))


if __name__ == "__main__":
    sys.exit(main())
