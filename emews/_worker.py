"""The worker entry: what a rank >= 1 of a study's (or a pool's) MPI job runs (:func:`run_worker`).

:func:`python_path` and :func:`make_objective` also serve rank 0 and the validation of a
configuration: the objective is imported the same way everywhere.
"""

import sys

from .evaluate import Objective
from .launch import _gpus as gpus


def python_path(cfg):
    """Make ``[system].python_path`` importable (by default the configuration's directory)."""
    for directory in reversed(cfg.system.python_path):
        if directory not in sys.path:
            sys.path.insert(0, directory)


def make_objective(cfg, expdir):
    """The configured :class:`~emews.evaluate.Objective` for runs under ``expdir``."""
    python_path(cfg)
    return Objective.from_config(cfg, expdir)


def run_worker(expdir, cfg, comm, rank, label=None):
    """Rank ``rank`` >= 1: evaluate what rank 0 sends until it says stop; output to
    ``out/out-[LABEL-]RANK.txt``."""
    from .pools._mpi import redirect_output, serve

    redirect_output(expdir / "out" / f"out-{label + '-' if label else ''}{rank}.txt")
    if cfg.study.gpus_per_eval is None:   # else each evaluation's resources name its GPUs
        gpus.assign(rank, cfg.system.gpus_per_node, cfg.system.cuda_offset)
    status = serve(comm, make_objective(cfg, expdir))
    if status:
        raise SystemExit(status)
