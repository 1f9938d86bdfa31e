"""Part 11's utilization on a real pool: the product's master, pruning, on real MPI ranks.

The simulation of :mod:`benchmarks.fidelity` cannot show what pruning costs a pool: there a
freed worker gets its next configuration at once, by construction. Here each study is
``emews.run`` under ``mpiexec -n WORKERS+1`` with the ``pow3`` problem as a ``py`` model
(:func:`curve`): each epoch sleeps a lognormal time (median :data:`EPOCH_S`, sigma 0.5, drawn
from a hash of the point) and reports the curve's value with ``emews.report``, so every
report travels to the master, is stored, and is judged by the pruner; a pruned run ends at
that report and its rank takes the next point. From the store (done and pruned rows)::

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
STUDIES = (("random", "asha"), ("optuna", "asha"), ("optuna", "hyperband"))


def curve(params):
    """``pow3`` as a model: sleep an epoch, report its value, as many times as the
    environment variable :data:`EPOCHS` says."""
    import emews

    from .fidelity import PROBLEMS

    values = PROBLEMS["pow3"].curve(params, 0, int(os.environ[EPOCHS]))
    epoch = lognormal_duration(params, mean=EPOCH_S, sigma=SIGMA)
    for step, value in enumerate(values, 1):
        time.sleep(epoch)
        emews.report(float(value), step)
    return float(values[-1])


def run(workers, points, epochs):
    """Each of :data:`STUDIES` (algorithm, pruner) with ``points`` points of ``epochs`` on
    ``workers`` ranks; its figures."""
    with tempfile.TemporaryDirectory(prefix="emews-bench-") as tmp:
        out = Path(tmp) / "figures.json"
        (Path(tmp) / "space.json").write_text(json.dumps(
            [{"name": f"x{i}", "type": "float", "lower": 0.0, "upper": 1.0} for i in range(3)]))
        mpiexec_python(workers + 1, ["-m", __name__, str(points), str(epochs), str(out),
                                     "--dir", tmp])
        return json.loads(out.read_text())


def _study(algorithm, pruner, points, epochs, directory):
    """Runs under mpiexec: one study, then (rank 0) its figures from the store."""
    from mpi4py import MPI

    import emews
    from emews.status import Status
    from emews.store import SQLiteStore

    options = {"sampler": "tpe"} if algorithm == "optuna" else {}
    result = emews.run({
        "system": {"progress_interval": 3600.0},
        "study": {"algorithm": algorithm, "space": str(Path(directory) / "space.json"),
                  "budget": points, "impl": "py", "objective": "benchmarks.fidelity_pool:curve",
                  "mode": "async", "seed": 0, "data_dir": str(directory),
                  "name": f"pool-{algorithm}-{pruner}", "pruner": pruner},
        "pruner": {"min_resource": 1, "max_resource": epochs, "reduction_factor": 3},
        "algorithm": options,
    })
    if result is None:  # a worker rank
        return None
    store = SQLiteStore(result.expdir / "results.db", readonly=True)
    rows = store.rows(Status.DONE, Status.PRUNED)
    store.close()
    workers = MPI.COMM_WORLD.Get_size() - 1
    return {"algorithm": algorithm, "pruner": pruner, "workers": workers,
            "points": len(rows), "pruned": sum(r["status"] == Status.PRUNED for r in rows),
            "epoch_s": EPOCH_S, "epochs": epochs, **utilization(
                [(r["queued"], r["started"], r["finished"]) for r in rows], workers)}


def main(argv=None):
    """Run the studies one after the other (under mpiexec); write their figures."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("points", type=int)
    parser.add_argument("epochs", type=int)
    parser.add_argument("out")
    parser.add_argument("--dir", default=".")
    args = parser.parse_args(argv)
    os.environ[EPOCHS] = str(args.epochs)   # every rank's, and its models' nanny processes'
    runs = [_study(algorithm, pruner, args.points, args.epochs, args.dir)
            for algorithm, pruner in STUDIES]
    if None not in runs:  # rank 0
        Path(args.out).write_text(json.dumps(runs))


if __name__ == "__main__":
    sys.exit(main())
