"""Part 9, launching evaluations of several ranks: what a k-rank evaluation costs over one rank.

A real run on this machine, no study around it: the leading worker's side of one evaluation
(``implementation.run`` with ``RunContext.resources`` of k ranks, as the pool gives it) timed
from start to value, ``launch_repeats`` times each, medians. Every process does one
``allreduce`` over the evaluation's processes and nothing else, so the figures are the launch
itself:

* ``app``: the Model Shell runs ``python -c ...``; at k > 1 through ``mpiexec -n k`` and
  ``emews/evaluate/_launcher.py`` (its variables, then exec). One rank is a fresh
  process too, so ``overhead_s`` is the launcher's own cost.
* ``py``: one rank is a call in the worker's warm nanny (no process starts); k ranks are k
  fresh interpreters started by ``mpiexec`` that import mpi4py and the objective, then connect
  back. ``overhead_s`` is what a user sees going from ``ranks_per_eval = 1`` to k.
"""

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

APP_CODE = ("import os; from mpi4py import MPI; c = MPI.COMM_WORLD; t = c.allreduce(1); "
            "c.Get_rank() or open(os.environ['EMEWS_RUN_DIR'] + '/result.txt', 'w')"
            ".write(str(t))")


def group_allreduce(params):
    """The ``py`` objective: one allreduce over the evaluation's processes."""
    import emews

    return {"val_loss": float(emews.comm().allreduce(1))}


def measure(model, ranks, repeats, directory):
    """Median seconds of one evaluation of ``ranks`` ranks of ``model`` (``app`` or ``py``)."""
    from emews.evaluate import _process as process
    from emews.evaluate._app import App
    from emews.evaluate._base import Resources, RunContext
    from emews.evaluate._py import Py

    implementation = (App([sys.executable, "-c", APP_CODE], {}) if model == "app"
                      else Py("benchmarks.launch:group_allreduce"))
    seconds = []
    try:
        for attempt in range(repeats + (model == "py")):   # py: the first starts the nanny
            context = RunContext("EXP", f"RUN{ranks}-{attempt}", "launch", Path(directory),
                                 {}, Resources(ranks, ("localhost",) * ranks, ()))
            started = time.perf_counter()
            value = implementation.run({}, json.dumps({}), context, process.Watch(120))
            elapsed = time.perf_counter() - started
            if float(value) != ranks:
                raise RuntimeError(f"{model} at {ranks} ranks gave {value}, not {ranks}")
            if not (model == "py" and attempt == 0):
                seconds.append(elapsed)
    finally:
        implementation.close()
    return statistics.median(seconds)


def run(sizes):
    """Both models at each number of ranks."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="emews-launch-") as directory:
        for model in ("app", "py"):
            one = None
            for ranks in sizes.launch_ranks:
                print(f"[launch] {model}, {ranks} ranks", flush=True)
                median = measure(model, ranks, sizes.launch_repeats, directory)
                one = median if ranks == 1 else one
                rows.append({"model": model, "ranks": ranks, "median_s": median,
                             "overhead_s": median - one, "ratio_to_one_rank": median / one})
    return {"repeats": sizes.launch_repeats, "runs": rows}


def markdown(part):
    """The part's table for the README."""
    rows = "\n".join(f"| {r['model']} | {r['ranks']} | {r['median_s']:.3f} | "
                     f"{r['overhead_s']:.3f} | {r['ratio_to_one_rank']:.2f} |"
                     for r in part["runs"])
    return (f"### 10. Launching evaluations of several ranks: median seconds per evaluation "
            f"({part['repeats']} repeats)\n\n"
            "| model | ranks | median (s) | over one rank (s) | ratio to one rank |\n"
            "|---|---|---|---|---|\n" + rows)
