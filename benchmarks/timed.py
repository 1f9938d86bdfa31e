"""An algorithm wrapper that times the algorithm and every point's round trip on the ME thread.

``Timed`` runs any registered algorithm (option ``inner``, other options passed on) and records:

* ``ask_seconds``: how long each ``ask`` of the inner algorithm took (its proposal latency);
* ``tell_seconds``: how long each ``tell`` took;
* ``first_ask``, ``last_tell`` (``perf_counter``) and ``cpu_first_ask``, ``cpu_last_tell``
  (this process's CPU time, every thread);
* ``round_trips``: for every point, the seconds from the moment ``ask`` returned it to the moment
  its result was told: the whole path ME -> master -> worker -> master -> ME.

The latest instance is :attr:`Timed.latest`, so a benchmark that ran a study in this process
(rank 0 holds the ME thread) can read the figures afterwards.
"""

import time

from emews.core._algorithm import Algorithm, load


class Timed(Algorithm):
    """Wraps ``inner`` (a registered name or dotted path) and times it."""

    latest = None

    def __init__(self, space, seed=None, inner="random", **options):
        super().__init__(space, seed)
        self.inner = load(inner, "[algorithm].inner")(space, seed=seed, **options)
        self.ready_share = self.inner.ready_share   # keep as many points ready as the inner
        self.ask_seconds, self.tell_seconds, self.round_trips = [], [], []
        self.first_ask = self.last_tell = None
        self.cpu_first_ask = self.cpu_last_tell = None
        self._asked_at = {}
        Timed.latest = self

    def ask(self, n):
        start = time.perf_counter()
        points = self.inner.ask(n)
        now = time.perf_counter()
        self.ask_seconds.append(now - start)
        if self.first_ask is None:
            self.first_ask, self.cpu_first_ask = now, time.process_time()
        self._asked_at.update((id(p), now) for p in points)
        return points

    def tell(self, points, values):
        now = time.perf_counter()
        asked = (self._asked_at.pop(id(p), None) for p in points)
        self.round_trips += [now - t for t in asked if t is not None]
        self.inner.tell(points, values)
        self.last_tell, self.cpu_last_tell = time.perf_counter(), time.process_time()
        self.tell_seconds.append(self.last_tell - now)

    def done(self):
        return self.inner.done()
