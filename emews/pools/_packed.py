"""A pool whose evaluations hold several slots, GPUs or nodes: packing over another pool.

::

    master --submit--> PackedPool: each task's Request (emews.pools._requests), queued here
                        Packer.schedule: which start, on which slots and GPUs
                        --submit(task + Resources, lead slot)--> MPIPool / InProcessPool
           <-collect-- its slots and GPUs given back; more start; outcome.metrics["slots"]

An evaluation of ``k`` ranks holds ``k`` slots, led by the lowest (docs/src/parallel-evals.md).
A task whose request can never fit (or breaks a setting's rule) comes back ``failed`` with that
one line, never run. A study whose evaluations are all one rank without GPUs does not use this
pool.
"""

import json
import math
import os
import time

from .._errors import ConfigError
from ..evaluate._base import Resources
from ..evaluate._outcome import Outcome
from ..evaluate._launcher import gpu_binding
from .._status import Status
from .._validation import Invalid
from ._base import Pool
from ._packing import NeverFits, Packer
from ._requests import Demand


def with_packing(pool, cfg):
    """``pool`` wrapped in a :class:`PackedPool` when an evaluation of the study ``cfg`` may
    ask for more than one rank or any GPU, else ``pool``; a ConfigError when a request of
    constant size can never fit the pool's slots (:meth:`Pool.hosts`)."""
    demand = Demand.from_config(cfg)
    if demand.trivial:
        return pool
    packer = Packer(pool.hosts(), cfg.system.gpus_per_node, visible_devices())
    if not demand.parameters:
        try:
            packer.check(demand.of({}))
        except (Invalid, NeverFits) as exc:
            raise ConfigError("[study]", str(exc), None, show_value=False) from None
    return PackedPool(pool, demand, packer)


def visible_devices(environ=os.environ):
    """The GPU ids the job was given (the site binding's variable, by default
    ``CUDA_VISIBLE_DEVICES``), or ``None``: ``0 .. gpus_per_node - 1``."""
    listed = environ.get(gpu_binding(environ)) or ""
    return [device.strip() for device in listed.split(",") if device.strip()] or None


class PackedPool(Pool):
    """Packs tasks of mixed sizes (``demand``) onto ``inner``'s slots with ``packer``."""

    def __init__(self, inner, demand, packer):
        super().__init__(inner.slots)   # running: task id -> Task, queued here or in inner
        self.inner, self.demand, self.packer = inner, demand, packer
        self.pending = {}        # task id -> (Task, Request), in their order
        self.placements = {}     # task id -> Placement
        self.refused = []        # (task, rank, outcome) to hand back by the next collect
        self.late = []           # (task id, lead rank) started after their submit

    def bind_judge(self, judge):
        """The inner pool's workers report: it judges them with ``judge``."""
        self.inner.bind_judge(judge)

    def free_slots(self):
        """The free slots not yet promised to tasks queued here."""
        promised = sum(request.ranks for _, request in self.pending.values())
        return max(len(self.packer.hosts) - self.packer.in_use() - promised, 0)

    def submit(self, tasks, slots=None):
        """Queue ``tasks`` and start what fits (the packer picks the slots, never ``slots``)."""
        for task in tasks:
            try:
                request = self.demand.of(json.loads(task.params))
                self.packer.check(request)
            except (Invalid, NeverFits) as exc:
                self._refuse(task, Status.FAILED, str(exc))
                continue
            self.running[task.id] = task
            self.pending[task.id] = (task, request)
        return self._start()

    def _start(self):
        """Start what the packer allows of the queued tasks; ``(task, lead rank)`` pairs."""
        if not self.pending:
            return []
        queued = list(self.pending.values())
        started = []
        for index, placement in self.packer.schedule([request for _, request in queued]):
            task, request = queued[index]
            del self.pending[task.id]
            self.placements[task.id] = placement
            gpus = dict.fromkeys(device for taken in placement.gpus for device, _ in taken)
            resources = Resources(request.ranks, tuple(self.packer.hosts[s]
                                                       for s in placement.slots), tuple(gpus))
            started.append((task._replace(resources=resources), placement.slots[0]))
        if not started:
            return []
        return self.inner.submit([task for task, _ in started], [slot for _, slot in started])

    def _refuse(self, task, status, reason):
        """Hand ``task`` back, never run, by the next collect (it counts as running till
        then, so that the master waits for it)."""
        self.running[task.id] = task
        now = time.time()
        self.refused.append((task, 0, Outcome(math.nan, status, reason, started=now,
                                              finished=now)))

    def queued(self):
        return len(self.pending)

    def started(self):
        late, self.late = self.late, []
        return late

    def collect(self, block=True):
        finished, self.refused = self.refused, []
        for task, _, _ in finished:
            del self.running[task.id]
        if not finished or self.inner.running:   # give back their slots and GPUs, note them
            for task, rank, outcome in self.inner.collect(block=block and not finished):
                placement = self.placements.pop(task.id, None)
                if placement is not None:
                    self.packer.release(placement)
                    outcome.metrics.setdefault("slots", len(placement.slots))
                    gpus = sum(share for taken in placement.gpus for _, share in taken)
                    if gpus:
                        outcome.metrics.setdefault("gpus", float(gpus))
                finished.append((self.running.pop(task.id, task), rank, outcome))
        self.late += [(task.id, rank) for task, rank in self._start()]
        return finished

    def hold(self):
        held = [task for task, _ in self.pending.values()]
        for task in held:
            del self.running[task.id]
        self.pending.clear()
        return held + self.inner.hold()

    def cancel(self):
        """Call off the running tasks; those queued here come back cancelled, never run."""
        for task, _ in self.pending.values():
            self._refuse(task, Status.CANCELLED, "cancelled")
        self.pending.clear()
        self.inner.cancel()

    def answer(self, task_id, stop):
        """Give a verdict given later to the worker waiting for it (see MPIPool.answer)."""
        self.inner.answer(task_id, stop)

    def close(self, status=0):
        self.inner.close(status)
