"""Shared helpers: starting Python under the virtualenv's ``mpiexec``, summaries, utilization."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from emews.evaluate._launcher import default_mpiexec
from emews.launch._spawn import MPI_ENVIRONMENT

REPO = Path(__file__).resolve().parent.parent


def mpiexec_python(ranks, args, timeout=1800):
    """Run ``python ARGS`` on ``ranks`` MPI ranks from the repository root; raise if it fails.

    The ranks may write bytecode whatever ``PYTHONDONTWRITEBYTECODE`` says: without ``.pyc``
    files each rank compiles what it imports at every start, and a worker still compiling
    emews while rank 0 already times its tasks would count that in the dispatch rate."""
    env = mpi_environment(os.pathsep.join(filter(None, [str(REPO),
                                                         os.environ.get("PYTHONPATH")])))
    command = [default_mpiexec(), "-n", str(ranks), sys.executable, *args]
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited with status {done.returncode}:\n"
                           f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    return done.stdout


def mpi_environment(pythonpath):
    """This environment for an ``mpiexec`` launch of Python with ``PYTHONPATH`` set to
    ``pythonpath``: without the variables of an enclosing MPI job, one BLAS thread, and
    bytecode written (see :func:`mpiexec_python`)."""
    env = {k: v for k, v in os.environ.items()
           if k not in MPI_ENVIRONMENT and k != "PYTHONDONTWRITEBYTECODE"}
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", PYTHONPATH=pythonpath)
    return env


def summary(values, prefix):
    """Median, 99th percentile and mean of ``values`` as ``{prefix}_p50`` etc."""
    values = np.asarray(values, dtype=float)
    return {f"{prefix}_p50": float(np.percentile(values, 50)),
            f"{prefix}_p99": float(np.percentile(values, 99)),
            f"{prefix}_mean": float(values.mean())}


def utilization(intervals, workers):
    """Utilization of ``workers`` that ran the ``(queued, started, finished)`` intervals.

    ``utilization``: busy time / (workers x makespan), the makespan running from the first
    point queued to the last finish. ``steady_utilization``: the same within the window that
    ends when the last task started, which leaves out the drain at the end of a finite budget
    (workers falling idle one by one while the longest last tasks finish).
    """
    queued, started, finished = (np.asarray(column, dtype=float) for column in zip(*intervals))
    begin, last_start, end = queued.min(), started.max(), finished.max()
    busy = float(np.sum(finished - started))
    window = last_start - begin
    busy_in_window = float(np.sum(np.clip(np.minimum(finished, last_start) - started, 0, None)))
    return {"busy_s": busy, "makespan_s": float(end - begin),
            "utilization": busy / (workers * (end - begin)),
            "steady_utilization": busy_in_window / (workers * window) if window > 0 else None}
