"""The ME driver: runs an ask/tell :class:`~emews.core._algorithm.Algorithm` on the ME thread.

It is itself an EQ/Py ME module (``run()``), so the Python master and Swift/T's workflow drive
it the same way: the master's process hands :func:`run` the settings, the algorithm and its
limits as objects; driven by text (Swift/T, :func:`emews.testing.drive`), it reads the settings
(JSON, by hand or from Swift/T's ``prepare_study.py``) after the ``Params`` handshake. Modes:
``batch`` (ask a batch, wait for all of its results, tell them), ``async`` (keep every slot
busy, and :func:`ready_points` points more) and ``sequential`` (``async`` with one slot,
however many the pool has): docs/src/running.md (One point at a time).

Settings keys: ``algorithm``, ``options``, ``space`` (a space-file path or a GA JSON list),
``seed``, ``mode``, ``slots``, ``batch_size``, ``stop`` (keyword arguments of
:class:`~emews.core._algorithm.Stopper`), ``history`` (``[point, value]`` pairs of a resumed run,
each value as :func:`emews.core._criteria.as_json` writes it), ``pending`` (points a killed run
left running: told with ``running``, proposed again first) and ``checkpoint`` (``store``,
``name``, ``restore``): in batch mode the driver saves the algorithm's state and its own in the
store after every tell, and a resumed study restores them (``put_base``: the points proposed
before the checkpoint), so that a seeded search proposes exactly what an uninterrupted one would.
"""

import collections
import json
import math
from pathlib import Path

from . import _queues as queues
from ._algorithm import Stopper, load, point_key
from ._criteria import from_json
from ._replicas import wrap as with_replicas
from ._vector import finite_or_none
from .._space import Space


def run(settings=None, algorithm=None, limits=None):
    """EQ/Py entry point: handshake (unless the master's process passes the ``settings``, the
    ``algorithm`` and its ``limits``), search, then ``DONE`` and the final message."""
    if settings is None:
        queues.OUT_put(queues.PARAMS)
        text = queues.IN_get().strip()   # the settings, or the path of their file
        settings = json.loads(text if text.startswith("{") else Path(text).read_text())
    search = Search.from_settings(settings, algorithm, limits)
    try:
        reason = search.run_batch() if settings.get("mode", "batch") == "batch" \
            else search.run_async()
    finally:
        if search.store is not None:
            search.store.close()
    queues.OUT_put(queues.DONE)
    queues.OUT_put(json.dumps(search.final_message(reason)))


def ready_points(algorithm, slots):
    """How many points the async driver keeps ready beyond ``slots``: the algorithm's
    ``ready_share`` of them, rounded up; none with one slot (a study of one worker is
    sequential). A fixed number, so that a seeded async search is repeatable."""
    return 0 if slots == 1 else math.ceil(slots * algorithm.ready_share)


def build_algorithm(settings, cls=None, space=None):
    """The algorithm the settings name, on their space (with their ``replicas``); ``cls`` and
    ``space``, when given, are those already loaded."""
    spec = settings.get("space")
    if space is None and spec is not None:
        space = Space.from_file(spec) if isinstance(spec, str) else Space.from_ga_json(spec)
    cls = cls or load(settings["algorithm"])
    return with_replicas(cls(space, seed=settings.get("seed"), **settings.get("options", {})),
                         settings.get("replicas"))


class Limits:
    """The driver's limits, counted in one place: by the master's process, which gives its
    :class:`~emews.core._algorithm.Verdict` at the start (``given``) and with each answer; or,
    driven by text, by the driver's own ``stopper`` of the settings' ``stop`` rules."""

    def __init__(self, given=None, stopper=None):
        self.given, self.stopper = given, stopper

    def verdict(self, in_flight=0):
        """What the limits say now: the master's latest verdict (it counted what is in flight),
        or the stopper's with ``in_flight`` points untold."""
        return self.given if self.stopper is None else self.stopper.verdict(in_flight)

    def count_results(self, values):
        """Count told results (the master counted them before it answered)."""
        if self.stopper is not None:
            self.stopper.record(values)

    def proposed(self):
        """Count a round that proposed points (the master counts the rounds it receives)."""
        if self.stopper is not None:
            self.stopper.iterations += 1

    def restore(self, counts):
        """Go on from a checkpoint's counts (the master restored its own)."""
        if self.stopper is not None:
            self.stopper.restore(counts)

    def take_verdict(self, verdict):
        """Take the verdict of an answer (a text answer carries none)."""
        if verdict is not None:
            self.given = verdict


class Search:
    """One search: an algorithm and its :class:`Limits`."""

    def __init__(self, algorithm, limits, slots=1, batch_size=None, pending=()):
        self.algorithm = algorithm
        self.limits = limits
        self.slots = max(int(slots), 1)
        self.batch_size = int(batch_size or self.slots)
        self.ready = ready_points(algorithm, self.slots)
        self.pending = list(pending)
        self.replayed = collections.Counter(point_key(p) for p in self.pending)
        self.best_point, self.best_value = None, math.inf
        self.next_index = 0
        self.put_base = 0
        self.store = self.checkpoint = None   # the store and name of a batch checkpoint

    @classmethod
    def from_settings(cls, settings, algorithm=None, limits=None):
        """A search of the ``settings`` (with its ``algorithm`` and ``limits``, when given),
        restored from its checkpoint, or told a resumed run's history."""
        mode = settings.get("mode", "batch")
        search = cls(algorithm or build_algorithm(settings),
                     limits or Limits(stopper=Stopper(**settings.get("stop", {}))),
                     1 if mode == "sequential" else settings.get("slots", 1),
                     settings.get("batch_size"),
                     settings.get("pending", ()))
        where = settings.get("checkpoint")
        if where and mode == "batch":
            from ..store import open_store

            search.store = open_store(where["store"], create=False)
            search.checkpoint = where["name"]
            if where.get("restore"):
                search.restore(*search.store.checkpoint(search.checkpoint))
        history = settings.get("history", [])
        if history:
            points, values = zip(*history)
            search.tell(list(points), [from_json(v) for v in values])
        if search.pending:
            search.algorithm.running(list(search.pending))
        return search

    def driver_state(self):
        """The driver's own part of a checkpoint: the limits' counts, points proposed, best."""
        return {"put": self.put_base + self.next_index, **self.limits.verdict().counts,
                "best_point": self.best_point,
                "best_value": finite_or_none(self.best_value)}

    def restore(self, state, driver):
        """Continue from a checkpoint: the algorithm's ``state`` and :meth:`driver_state`."""
        self.algorithm.restore(state)
        self.put_base = driver["put"]
        self.limits.restore(driver)
        self.best_point = driver["best_point"]
        self.best_value = math.inf if driver["best_value"] is None else driver["best_value"]

    def tell(self, points, values):
        """Pass results to the algorithm and the limits; keep the best point."""
        self.algorithm.tell(points, values)
        self.limits.count_results(values)
        for point, value in zip(points, values):
            if not math.isnan(value) and value < self.best_value:
                self.best_point, self.best_value = point, value

    def stop_reason(self):
        """Why the search ends now, or ``None`` while it goes on."""
        reason = self.limits.verdict().reason
        if reason is None and not self.pending and self.algorithm.done():
            reason = "the algorithm has no more points to propose"
        return reason

    def propose(self, n):
        """Up to ``n`` points: first those left running by a killed run, then new ones."""
        allowed = self.limits.verdict().allowed
        if allowed is not None:
            n = min(n, allowed)
        points, self.pending = self.pending[:n], self.pending[n:]
        while len(points) < n:
            asked = self.algorithm.ask(n - len(points))
            fresh = [p for p in asked if not self._replayed(p)]
            points += fresh
            if len(fresh) == len(asked):
                break
        if points:
            self.limits.proposed()
        return points

    def _replayed(self, point):
        """True (once per copy) for a point the driver already re-proposed from a killed run."""
        if not self.replayed:  # a fresh run, or every replayed copy seen: no key to compute
            return False
        key = point_key(point)
        if key not in self.replayed:
            return False
        self.replayed -= collections.Counter([key])   # which drops a count at 0
        return True

    def _put(self, points):
        queues.OUT_put(queues.encode_points(points))
        indices = range(self.next_index, self.next_index + len(points))
        self.next_index += len(points)
        return indices

    def run_batch(self):
        """Ask a batch, wait for all of it, tell; until a stopping rule fires."""
        while (reason := self.stop_reason()) is None:
            points = self.propose(self.batch_size)
            if not points:
                return "the algorithm proposed no points"
            self._put(points)
            self.tell(points, self._results(queues.IN_get_answer()))
            state = None if self.store is None else self.algorithm.state()
            if state is not None:   # a checkpoint of the algorithm's state and the driver's
                self.store.save_checkpoint(self.checkpoint, state, self.driver_state())
        return reason

    def run_async(self):
        """Keep ``slots`` evaluations in flight and :attr:`ready` points more, as results come."""
        in_flight = {}
        reason = None
        while True:
            reason = reason or self.stop_reason()
            allowed = self.limits.verdict(len(in_flight)).allowed
            free = self.slots + self.ready - len(in_flight)
            if allowed is not None:
                free = min(free, allowed)
            points = self.propose(free) if reason is None and free > 0 else []
            if not points and not in_flight:
                return reason or "the algorithm proposed no points"
            in_flight.update(zip(self._put(points), points))
            pairs = self._results(queues.IN_get_answer(tagged=True))
            self.tell([in_flight.pop(i) for i, _ in pairs], [v for _, v in pairs])

    def _results(self, answer):
        """The values of an :class:`~emews.core._queues.Answer` (as floats, NaN for a failure;
        ``(index, value)`` pairs when tagged), after hearing its verdict."""
        self.limits.take_verdict(answer.verdict)
        return answer.floats()

    def final_message(self, reason):
        """The final message: best point and value, counts and the reason for stopping."""
        counts = self.limits.verdict().counts
        return {"best_point": self.best_point,
                "best_value": finite_or_none(self.best_value),
                "evaluations": counts["evaluations"], "iterations": counts["iterations"],
                "stop_reason": reason}
