"""Part 11's utilization on a real pool: the product's master, pruning, on real MPI ranks.

The simulation of :mod:`benchmarks.fidelity` cannot show what pruning costs a pool: there a
freed worker gets its next configuration at once, by construction. Here each study is
``emews.run`` under ``mpiexec -n WORKERS+1`` with the ``pow3`` problem as a ``py`` model
(:func:`curve`): each epoch sleeps a lognormal time (median :data:`EPOCH_S`, sigma 0.5, drawn
from a hash of the point) and reports the curve's value with ``emews.report``, so every
report travels to the master, is stored, and is judged by the pruner; a pruned run ends at
that report and its rank takes the next point. One study of :data:`STUDIES` pauses instead of
pruning (``[pruner] pause = true``): its drain thaws paused runs into the free workers (the
model keeps the last step it trained in its checkpoint directory and goes on after it). From
the store (every attempt that ran: done, pruned, paused, a thaw's)::

    utilization = sum(finished - started) / (workers x (last finish - first point queued))

and the steady utilization, the same up to the moment the last run started (see
:func:`benchmarks.common.utilization`): the drain at the end of a finite budget left out.
"""

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from .common import mpiexec_python, utilization
from .objectives import lognormal_duration

EPOCH_S, SIGMA = 0.2, 0.5
EPOCHS = "EMEWS_BENCH_FIDELITY_EPOCHS"   # the environment variable of the epochs a run trains
STUDIES = (("random", "asha", False), ("optuna", "asha", False), ("optuna", "asha", True),
           ("optuna", "hyperband", False))   # (algorithm, pruner, pause)


def curve(params):
    """``pow3`` as a model: sleep an epoch, report its value, as many times as the
    environment variable :data:`EPOCHS` says; the last step trained is kept in the run's
    checkpoint directory, and a thawed run goes on after it."""
    import emews

    from .fidelity import PROBLEMS

    values = PROBLEMS["pow3"].curve(params, 0, int(os.environ[EPOCHS]))
    epoch = lognormal_duration(params, mean=EPOCH_S, sigma=SIGMA)
    saved = emews.checkpoint_dir() / "step.txt"
    first = int(saved.read_text()) if saved.exists() else 0
    for step, value in enumerate(values[first:], first + 1):
        time.sleep(epoch)
        saved.write_text(str(step))
        emews.report(float(value), step)
    return float(values[-1])


def run(workers, points, epochs):
    """Each of :data:`STUDIES` (algorithm, pruner, pause) with ``points`` points of ``epochs``
    on ``workers`` ranks; its figures."""
    with tempfile.TemporaryDirectory(prefix="emews-bench-") as tmp:
        out = Path(tmp) / "figures.json"
        (Path(tmp) / "space.json").write_text(json.dumps(
            [{"name": f"x{i}", "type": "float", "lower": 0.0, "upper": 1.0} for i in range(3)]))
        mpiexec_python(workers + 1, ["-m", __name__, str(points), str(epochs), str(out),
                                     "--dir", tmp])
        return json.loads(out.read_text())


def _study(algorithm, pruner, pause, points, epochs, directory):
    """Runs under mpiexec: one study, then (rank 0) its figures from the store."""
    from mpi4py import MPI

    import emews
    from emews._status import Status
    from emews.store import SQLiteStore

    options = {"sampler": "tpe"} if algorithm == "optuna" else {}
    result = emews.run({
        "system": {"progress_interval": 3600.0},
        "study": {"algorithm": algorithm, "space": str(Path(directory) / "space.json"),
                  "budget": points, "impl": "py", "objective": "benchmarks.fidelity_pool:curve",
                  "mode": "async", "seed": 0, "data_dir": str(directory),
                  "name": f"pool-{algorithm}-{pruner}{'-pause' * pause}", "pruner": pruner},
        "pruner": {"min_resource": 1, "max_resource": epochs, "reduction_factor": 3,
                   "pause": pause},
        "algorithm": options,
    })
    if result is None:  # a worker rank
        return None
    store = SQLiteStore(result.expdir / "results.db", readonly=True)
    rows = store.rows(Status.DONE, Status.PRUNED, Status.PAUSED)
    queued = {r["id"]: r["queued"] for r in rows}
    ran = [a for a in store.attempts() if a["id"] in queued and a["status"] in (
        Status.DONE, Status.PRUNED, Status.PAUSED)]
    store.close()
    workers = MPI.COMM_WORLD.Get_size() - 1
    return {"algorithm": algorithm, "pruner": pruner, "pause": pause, "workers": workers,
            "points": len(rows), "pruned": sum(r["status"] != Status.DONE for r in rows),
            "thaws": sum(a["attempt"] > 1 for a in ran),
            "paused": sum(r["status"] == Status.PAUSED for r in rows),
            "epoch_s": EPOCH_S, "epochs": epochs, **utilization(
                [(queued[a["id"]], a["started"], a["finished"]) for a in ran], workers)}


def main(argv=None):
    """Run the studies one after the other (under mpiexec); write their figures."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("points", type=int)
    parser.add_argument("epochs", type=int)
    parser.add_argument("out")
    parser.add_argument("--dir", default=".")
    args = parser.parse_args(argv)
    os.environ[EPOCHS] = str(args.epochs)   # every rank's, and its models' nanny processes'
    runs = [_study(*study, args.points, args.epochs, args.dir) for study in STUDIES]
    if None not in runs:  # rank 0
        Path(args.out).write_text(json.dumps(runs))


if __name__ == "__main__":
    sys.exit(main())
