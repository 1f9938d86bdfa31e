"""The study service's side of remote pools: a :class:`~emews.pools.base.Pool` over a zmq ROUTER.

::

    Master --submit--> ServicePool --tasks (leased)--> pool job 1 (mpiexec: rank 0 + workers)
           <-collect--             <--results-------   pool job 2 ...
                                   <--heartbeat----    renews the pool's leases

The master's queue stays the one queue: this pool only hands its tasks to whichever attached
pool asked for work, and brings results back. Every task a pool holds carries a lease of
``lease`` seconds, renewed by the pool's heartbeats. When a pool goes silent (killed, node lost,
walltime, network cut), its tasks come back from :meth:`collect` as ``interrupted`` once their
leases expire, and the master runs them again as new attempts. A result that arrives late for
such a task is not lost: the first result of a point wins, and any later one comes back with
status ``duplicate`` for the record.
"""

import dataclasses
import json
import logging
import math
import time

import zmq

from ..evaluate import Outcome
from ..pools.base import Backoff, Pool, Task
from ..status import Status
from . import protocol

log = logging.getLogger("emews.service")
DESCRIBE_EVERY = 2.0   # seconds between rewrites of the pools file


class AttachedPool:
    """What the service knows of one attached pool."""

    def __init__(self, identity, hello):
        self.identity = identity
        self.name, self.workers, self.host = hello["pool"], hello["workers"], hello["host"]
        self.free = 0
        self.sent = self.received = hello["received"]  # tasks it got from earlier services
        self.last_seen = time.monotonic()
        self.leases = set()

    @property
    def demand(self):
        """How many more tasks this pool has asked for and not yet been sent."""
        return max(self.free - (self.sent - self.received), 0)

    def describe(self):
        """A summary for ``emews status``."""
        return {"pool": self.name, "host": self.host, "workers": self.workers,
                "tasks": len(self.leases),
                "last_heard": time.time() - (time.monotonic() - self.last_seen)}


class ServicePool(Pool):
    """Tasks leased to pools that attach over zmq (see the module docstring).

    ``socket`` is a bound zmq ROUTER socket; ``lease`` is the lease in seconds; ``slots`` is how
    many tasks the study expects its pools to hold at once in all (its workers times their
    ``slots_per_worker``: what the ME plans for); ``pools_file`` is where the
    attached pools are described for ``emews status`` (rewritten every few seconds); ``study``
    (``config``, ``expdir``) is what a pool is told when it says hello.
    """

    def __init__(self, socket, lease=60.0, slots=1, pools_file=None, study=None):
        self.socket, self.lease, self.slots = socket, float(lease), max(int(slots), 1)
        self.study = study or {"config": {}, "expdir": ""}
        self.pools_file, self.described = pools_file, 0.0
        self.pools = {}
        self.running = {}                  # task id -> Task
        self.holder = {}                   # task id -> (identity, lease deadline)
        self.earliest = math.inf           # no lease in holder ends before this
        self.interrupted = {}              # task id -> attempt whose lease expired
        self.finished = set()              # task ids with a final result from a pool
        self.to_ack = {}                   # identity -> ids returned by the last collect
        self.draining = False
        self.backoff = Backoff(maximum=0.05)

    def free_slots(self):
        if self.draining:
            return 0
        return sum(p.demand for p in self.pools.values())

    def submit(self, tasks):
        assigned, queue = [], list(tasks)
        for pool in sorted(self.pools.values(), key=lambda p: -p.demand):
            batch, queue = queue[:pool.demand], queue[pool.demand:]
            if not batch:
                continue
            deadline = time.monotonic() + self.lease
            self.earliest = min(self.earliest, deadline)
            for task in batch:
                self.running[task.id] = task
                self.holder[task.id] = (pool.identity, deadline)
                pool.leases.add(task.id)
                assigned.append((task, 0))
            pool.sent += len(batch)
            self._send(pool.identity, "tasks", lease=self.lease, tasks=[
                [t.id, t.params, t.run_id, t.attempt] for t in batch])
        if queue:
            raise RuntimeError("ServicePool.submit: more tasks than free slots")
        return assigned

    def collect(self, block=True):
        """Results, expired leases and duplicates. With ``block``, wait until some message
        has come (a pool that attached or asked for work is news too) or a lease expired."""
        self._acknowledge()
        self._describe()
        finished, heard = [], False
        while True:
            while True:
                try:
                    frames = self.socket.recv_multipart(zmq.NOBLOCK)
                except zmq.Again:
                    break
                heard = True
                finished += self._receive(frames)
            finished += self._expire()
            if finished or heard or not block:
                self.backoff.reset()
                return finished
            self.backoff.wait(lambda delay: self.socket.poll(int(delay * 1000) + 1))

    def _acknowledge(self):
        for identity, ids in self.to_ack.items():
            self._send(identity, "ack", ids=ids)
        self.to_ack = {}

    def _receive(self, frames):
        if len(frames) != 2:
            log.warning("service: dropped a message of %d frames", len(frames))
            return []
        identity, frame = frames
        try:
            message = protocol.decode(frame)
        except protocol.BadMessage as exc:
            log.warning("service: dropped %s", exc)
            return []
        pool = self.pools.get(identity)
        if message["op"] == "hello":
            self.pools[identity] = AttachedPool(identity, message)
            log.info("service: pool %s attached (%d workers on %s)", message["pool"],
                     message["workers"], message["host"])
            self._describe(every=0)
            self._send(identity, "study", **self.study)
            return []
        if pool is None:  # a pool of an earlier service of this study, reconnected
            self._send(identity, "who")
            return []
        pool.last_seen = time.monotonic()
        op = message["op"]
        if op == "want":
            pool.free, pool.received = message["free"], message["received"]
        elif op == "heartbeat":
            deadline = time.monotonic() + self.lease
            for task_id in pool.leases:
                self.holder[task_id] = (identity, deadline)
            self._send(identity, "ack", ids=[])  # so that the pool knows the service lives
        elif op == "bye":
            del self.pools[identity]
            self._describe(every=0)
        elif op == "results":
            return self._results(pool, message["results"])
        return []

    def _results(self, pool, results):
        finished, acknowledged = [], self.to_ack.setdefault(pool.identity, [])
        for entry in results:
            try:
                task_id, attempt, rank, outcome = protocol.result(entry)
            except protocol.BadMessage as exc:
                log.warning("service: dropped %s from %s", exc, pool.name)
                continue
            acknowledged.append(task_id)
            pool.leases.discard(task_id)
            finished.append(self._result(task_id, attempt, rank, outcome))
        return finished

    def _result(self, task_id, attempt, rank, outcome):
        """The ``(task, rank, outcome)`` that a pool's result makes.

        The first result of a task wins, whichever attempt it comes from; a later one comes
        back as a ``duplicate``. A result for a task this service never handed out (a pool
        that outlived an earlier service of the study) comes back with ``params=None``, for
        the master to adopt.
        """
        task = self.running.pop(task_id, None)
        if task is not None or task_id in self.interrupted:
            self.holder.pop(task_id, None)
            self.interrupted.pop(task_id, None)
            self.finished.add(task_id)
            if task is None:
                return Task(task_id, "", "", attempt), rank, outcome
            return (task if task.attempt == attempt else task._replace(attempt=attempt)), \
                rank, outcome
        if task_id in self.finished:
            duplicate = dataclasses.replace(outcome, status=Status.DUPLICATE)
            return Task(task_id, "", "", attempt), rank, duplicate
        self.finished.add(task_id)
        return Task(task_id, None, "", attempt), rank, outcome

    def _expire(self):
        """The tasks whose leases have ended, as ``interrupted`` results."""
        now, expired = time.monotonic(), []
        if now < self.earliest:
            return expired
        self.earliest = math.inf
        for task_id, (identity, deadline) in list(self.holder.items()):
            if deadline >= now:
                self.earliest = min(self.earliest, deadline)
                continue
            task = self.running.pop(task_id)
            del self.holder[task_id]
            self.interrupted[task_id] = task.attempt
            pool = self.pools.get(identity)
            name = pool.name if pool else "a pool that left"
            if pool is not None:
                pool.leases.discard(task_id)
            expired.append((task, 0, Outcome(float("nan"), "interrupted",
                                             f"lease expired: {name} stopped answering")))
        return expired

    def _send(self, identity, op, **fields):
        self.socket.send_multipart([identity, protocol.encode(op, **fields)])

    def cancel(self):
        for identity in self.pools:
            self._send(identity, "drain")

    def close(self, status=0):
        self._acknowledge()
        if self.pools_file is not None:
            self.pools_file.unlink(missing_ok=True)
        for identity in list(self.pools):
            self._send(identity, "stop", reason="the study ended")
        self.pools.clear()

    def _describe(self, every=DESCRIBE_EVERY):
        """Rewrite ``pools_file`` when ``every`` seconds have passed since the last time."""
        if self.pools_file is None or time.monotonic() - self.described < every:
            return
        self.described = time.monotonic()
        tmp = self.pools_file.with_suffix(".tmp")
        tmp.write_text(json.dumps({"time": time.time(), "lease": self.lease,
                                   "pools": [p.describe() for p in self.pools.values()]}))
        tmp.replace(self.pools_file)
