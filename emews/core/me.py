"""The ME driver: runs an ask/tell :class:`~emews.core.algorithm.Algorithm` on the ME thread.

It is itself an EQ/Py ME module (``run()``), so the Python master and Swift/T's workflow drive
it the same way. After the ``Params`` handshake it reads the settings file (JSON, written by
:mod:`emews.study` or by hand for Swift/T) and loops in one of two modes:

* ``batch``: ask a batch, put it, wait for all of its results, tell them;
* ``async``: keep every slot busy, and :func:`ready_points` points more: the master queues
  them and hands a freed worker one at once, while the ME tells the result and thinks about
  the next points, so a slow proposal does not make a worker wait. The algorithm sees the ready
  points as in flight (asked, not told), so its pending-point strategy keeps them apart.

Settings keys: ``algorithm``, ``options``, ``space`` (a space-file path or a GA JSON list),
``seed``, ``mode``, ``slots``, ``batch_size``, ``stop`` (keyword arguments of
:class:`~emews.core.algorithm.Stopper`), ``history`` (``[point, value]`` pairs of a resumed run,
``null`` for a failure),
``pending`` (points that were running when that run was killed) and ``checkpoint``
(``store``, ``name``, ``restore``): in batch mode the driver saves the algorithm's state and its
own in the study's store after every tell, and a resumed study restores them (``put_base`` is
then the number of points proposed before the checkpoint), so that a seeded search proposes
exactly what an uninterrupted one would.
"""

import collections
import json
import math

from . import eqpy
from .algorithm import Stopper, load, point_key
from .replicas import wrap as with_replicas
from ..space import Space


def run():
    """EQ/Py entry point: handshake, search, then ``DONE`` and the final message."""
    eqpy.OUT_put(eqpy.PARAMS)
    settings = json.loads(_read_settings(eqpy.IN_get()))
    search = Search.from_settings(settings)
    try:
        reason = search.run_async() if settings.get("mode", "batch") == "async" \
            else search.run_batch()
    finally:
        if search.checkpoint is not None:
            search.checkpoint.close()
    eqpy.OUT_put(eqpy.DONE)
    eqpy.OUT_put(json.dumps(search.final_message(reason)))


def _read_settings(message):
    text = message.strip()
    if text.startswith("{"):
        return text
    with open(text) as handle:
        return handle.read()


def ready_points(algorithm, slots):
    """How many points the async driver keeps ready beyond ``slots``: the algorithm's
    ``ready_share`` of them, rounded up. A fixed number, so that a seeded async search
    proposes the same points whenever its results come back in the same order."""
    return math.ceil(slots * algorithm.ready_share)


def build_algorithm(settings):
    """Construct the algorithm the settings name, on the space they name (wrapped to evaluate
    each point several times when the settings' ``replicas`` ask for it)."""
    space_spec = settings.get("space")
    if space_spec is None:
        space = None
    elif isinstance(space_spec, str):
        space = Space.from_file(space_spec)
    else:
        space = Space.from_ga_json(space_spec)
    cls = load(settings["algorithm"])
    return with_replicas(cls(space, seed=settings.get("seed"), **settings.get("options", {})),
                         settings.get("replicas"))


class Search:
    """One search: an algorithm, its stopping rules and the points it has in flight."""

    def __init__(self, algorithm, stopper, slots=1, batch_size=None, pending=()):
        self.algorithm = algorithm
        self.stopper = stopper
        self.slots = max(int(slots), 1)
        self.batch_size = int(batch_size or self.slots)
        self.ready = ready_points(algorithm, self.slots)
        self.pending = list(pending)
        self.replayed = collections.Counter(point_key(p) for p in self.pending)
        self.best_point, self.best_value = None, math.inf
        self.next_index = 0
        self.put_base = 0
        self.checkpoint = None

    @classmethod
    def from_settings(cls, settings):
        """Build a search from a settings dict; restore it from its checkpoint, or tell it a
        resumed run's history."""
        search = cls(build_algorithm(settings), Stopper(**settings.get("stop", {})),
                     settings.get("slots", 1), settings.get("batch_size"),
                     settings.get("pending", ()))
        where = settings.get("checkpoint")
        if where and settings.get("mode", "batch") == "batch":
            search.checkpoint = Checkpoint(where["store"], where["name"])
            if where.get("restore"):
                search.restore(*search.checkpoint.load())
        history = settings.get("history", [])
        if history:
            points, values = zip(*history)
            search.tell(list(points), [math.nan if v is None else float(v) for v in values])
        return search

    def driver_state(self):
        """The driver's own part of a checkpoint (JSON-serializable)."""
        stopper = self.stopper
        return {"put": self.put_base + self.next_index, "evaluations": stopper.evaluations,
                "iterations": stopper.iterations, "last_improvement": stopper.last_improvement,
                "best": None if math.isinf(stopper.best) else stopper.best,
                "best_point": self.best_point,
                "best_value": None if math.isinf(self.best_value) else self.best_value}

    def restore(self, state, driver):
        """Continue from a checkpoint: the algorithm's ``state`` and :meth:`driver_state`."""
        self.algorithm.restore(state)
        self.put_base = driver["put"]
        self.stopper.evaluations, self.stopper.iterations = driver["evaluations"], \
            driver["iterations"]
        self.stopper.last_improvement = driver["last_improvement"]
        self.stopper.best = math.inf if driver["best"] is None else driver["best"]
        self.best_point = driver["best_point"]
        self.best_value = math.inf if driver["best_value"] is None else driver["best_value"]

    def tell(self, points, values):
        """Pass results to the algorithm and the stopper; keep the best point."""
        self.algorithm.tell(points, values)
        self.stopper.record(values)
        for point, value in zip(points, values):
            if not math.isnan(value) and value < self.best_value:
                self.best_point, self.best_value = point, value

    def stop_reason(self):
        """Why the search ends now, or ``None`` while it goes on."""
        reason = self.stopper.reason()
        if reason is None and not self.pending and self.algorithm.done():
            reason = "the algorithm has no more points to propose"
        return reason

    def propose(self, n):
        """Up to ``n`` points: first those left running by a killed run, then new ones."""
        remaining = self.stopper.remaining()
        if remaining is not None:
            n = min(n, remaining)
        points, self.pending = self.pending[:n], self.pending[n:]
        while len(points) < n:
            asked = self.algorithm.ask(n - len(points))
            fresh = [p for p in asked if not self._replayed(p)]
            points += fresh
            if len(fresh) == len(asked):
                break
        if points:
            self.stopper.iterations += 1
        return points

    def _replayed(self, point):
        """True (once per copy) for a point the driver already re-proposed from a killed run."""
        if not self.replayed:  # a fresh run, or every replayed copy seen: no key to compute
            return False
        key = point_key(point)
        if key not in self.replayed:
            return False
        self.replayed[key] -= 1
        if not self.replayed[key]:
            del self.replayed[key]
        return True

    def _put(self, points):
        eqpy.OUT_put(eqpy.encode_points(points))
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
            self.tell(points, eqpy.IN_get_results())
            if self.checkpoint is not None:
                self.checkpoint.save(self)
        return reason

    def run_async(self):
        """Keep ``slots`` evaluations in flight and :attr:`ready` points more; refill as
        results arrive."""
        in_flight = {}
        reason = None
        while True:
            reason = reason or self.stop_reason()
            budget = self.stopper.remaining()
            free = self.slots + self.ready - len(in_flight)
            if budget is not None:
                free = min(free, budget - len(in_flight))
            points = self.propose(free) if reason is None and free > 0 else []
            if not points and not in_flight:
                return reason or "the algorithm proposed no points"
            in_flight.update(zip(self._put(points), points))
            pairs = eqpy.IN_get_tagged()
            self.tell([in_flight.pop(i) for i, _ in pairs], [v for _, v in pairs])

    def final_message(self, reason):
        """The final message: best point and value, counts and the reason for stopping."""
        return {"best_point": self.best_point,
                "best_value": None if math.isinf(self.best_value) else self.best_value,
                "evaluations": self.stopper.evaluations,
                "iterations": self.stopper.iterations,
                "stop_reason": reason}


class Checkpoint:
    """The search's checkpoint in the study's store (a connection of the ME thread's own)."""

    def __init__(self, store_path, name):
        from ..store import open_store

        self.store, self.name = open_store(store_path, create=False), name

    def save(self, search):
        """Save the algorithm's state and the driver's, if the algorithm has a state."""
        state = search.algorithm.state()
        if state is not None:
            self.store.save_checkpoint(self.name, state, search.driver_state())

    def load(self):
        """``(state, driver)`` as saved."""
        return self.store.checkpoint(self.name)

    def close(self):
        """Close the connection."""
        self.store.close()
