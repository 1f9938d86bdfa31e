"""What every implementation (:class:`Implementation`) shares: the run's context and the
failure exceptions.
"""

import contextvars
from dataclasses import asdict, dataclass, field
from pathlib import Path

CANCELLED = "cancelled"


@dataclass(frozen=True)
class Resources:
    """What the pool gave one evaluation: ``ranks`` processes, the ``hosts`` they run on (one
    name per rank; empty: this node alone) and the ``gpus`` it may use (device ids; a shared
    GPU appears in the resources of each evaluation that shares it)."""

    ranks: int = 1
    hosts: tuple = ()
    gpus: tuple = ()

    def as_dict(self):
        """The resources as JSON-able data."""
        return {"ranks": self.ranks, "hosts": list(self.hosts), "gpus": list(self.gpus)}

    @classmethod
    def from_dict(cls, data):
        """The inverse of :meth:`as_dict`."""
        return cls(int(data["ranks"]), tuple(data["hosts"]), tuple(data["gpus"]))


ONE_RANK = Resources()   # what an evaluation gets unless its pool says otherwise


@dataclass
class RunContext:
    """Where one evaluation runs: ids, its run directory (made on first use) and model settings.

    ``env`` holds the model's settings as Supervisor's environment variables (``MODEL_NAME``,
    ``FRAMEWORK``, ``CANDLE_DATA_DIR``, ...); a ``py`` objective reads them from here.
    ``resources`` are what the pool gave the evaluation (:class:`Resources`).
    """

    exp_id: str
    run_id: str
    model_name: str
    expdir: Path
    env: dict = field(default_factory=dict)
    resources: Resources = ONE_RANK

    @property
    def checkpoint_dir(self):
        """``EXPDIR/checkpoints/RUN_ID`` of the point (its first attempt's run id: every
        attempt of the point, a rerun after an interruption included, gets the same one),
        created when first asked for."""
        path = Path(self.expdir) / "checkpoints" / self.run_id.split("-")[0]
        path.mkdir(parents=True, exist_ok=True)
        return path

    @property
    def run_dir(self):
        """``EXPDIR/run/RUN_ID``, created when first asked for."""
        path = Path(self.expdir) / "run" / self.run_id
        path.mkdir(parents=True, exist_ok=True)
        return path

    def as_dict(self):
        """The context as JSON-able data (it travels to an isolated child with the task)."""
        return dict(asdict(self), expdir=str(self.expdir), resources=self.resources.as_dict())

    @classmethod
    def from_dict(cls, data):
        """The inverse of :meth:`as_dict`."""
        return cls(**dict(data, expdir=Path(data["expdir"]),
                          resources=Resources.from_dict(data["resources"])))


_current_run = contextvars.ContextVar("emews_current_run", default=None)


def current_run():
    """The :class:`RunContext` of the evaluation running in this thread (``None`` outside)."""
    return _current_run.get()


def checkpoint_dir():
    """The directory where the running model keeps its checkpoints: the same for every
    attempt of its point, so that a run interrupted (a kill, a lost lease, a walltime) and run
    again finds what it saved and may go on from there (its reported steps too)."""
    context = current_run()
    if context is None:
        raise RuntimeError("emews.checkpoint_dir() must be called while emews runs the "
                           "objective (it was called outside a run)")
    return context.checkpoint_dir


_group_comm = None   # the communicator of this evaluation's ranks (set by .group_rank)


def comm():
    """The MPI communicator of the running evaluation's processes: its ``k`` ranks when the
    study gives each evaluation ``ranks_per_eval = k`` (rank 0 reports the result and the
    learning curve; the other ranks' returns are ignored), else ``MPI.COMM_SELF`` (size 1).
    Horovod and ``torch.distributed`` (backend ``mpi``, or ``nccl``/``gloo`` with the
    ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT`` every process has) use the
    same processes. Needs ``mpi4py``."""
    if _group_comm is not None:
        return _group_comm
    from mpi4py import MPI

    return MPI.COMM_SELF


class EvaluationFailed(Exception):
    """An evaluation that produced no usable value; ``log_tail`` is kept in the store."""

    def __init__(self, reason, log_tail=None):
        super().__init__(reason)
        self.log_tail = log_tail


class Cancelled(Exception):
    """The run was cancelled from outside (its ``cancelled`` callable returned True)."""

    def __init__(self, log_tail=None):
        super().__init__(CANCELLED)
        self.log_tail = log_tail


class Implementation:
    """How one point is evaluated (the contract every implementation module fulfils)."""

    def run(self, params, params_json, context, watch):
        """The value of ``params`` (a dict; ``params_json`` is its text) for ``context``;
        ``watch`` (:class:`~.process.Watch`) says when to stop a run early. Raises
        :class:`EvaluationFailed` or :class:`Cancelled` when there is no value."""
        raise NotImplementedError

    def close(self):
        """Stop any process this implementation keeps; safe to call twice."""
