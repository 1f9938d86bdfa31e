"""Part 5, scale by simulation: the real master with 64 and 256 simulated workers.

:class:`SimulatedPool` is a :class:`emews.pools.base.Pool` whose workers take simulated time. It drives
the real :class:`emews.core.master.Master`, the real ME thread (the random algorithm, async or batch),
and the real SQLite store, on a virtual clock::

    virtual time = real time elapsed + idle time skipped

When the master waits for a result and none is due yet, the clock jumps to the next finish
instead of sleeping; everything the master, the ME and the store do costs its real time. So
utilization reflects exactly the overhead of our code at that number of workers, with messages
free (the MPI part of the path is measured for real in parts 1 and 2).

Two figures per worker count:

* ``utilization``: busy / (workers x makespan) with lognormal durations (mean 0.2 s, sigma 1);
* ``master_tasks_per_s``: tasks per real second with zero-length tasks, the most the master
  can hand out and take back at that number of slots.
"""

import heapq
import itertools
import json
import tempfile
import time
from pathlib import Path

from emews.core import eqpy
from emews.core.master import Master
from emews.evaluate import Outcome
from emews.pools.base import Pool
from emews.store import Store

from .common import utilization
from .objectives import lognormal_duration, sleep_value
from .utilization import SPACE


class VirtualClock:
    """Real time plus every idle stretch skipped."""

    def __init__(self):
        self.skipped = 0.0

    def now(self):
        """The virtual time (seconds)."""
        return time.perf_counter() + self.skipped

    def skip_to(self, moment):
        """Jump forward to ``moment`` (never back)."""
        self.skipped += max(moment - self.now(), 0.0)


class SimulatedPool(Pool):
    """``workers`` simulated workers; a task takes ``duration(params)`` virtual seconds."""

    def __init__(self, workers, duration):
        self.slots = workers
        self.duration = duration
        self.clock = VirtualClock()
        self.idle = list(range(workers, 0, -1))
        self.running = {}
        self.due = []              # heap of (finish, sequence, task, rank, start, value)
        self.sequence = itertools.count()
        self.intervals = []               # (queued, started, finished) of every task

    def free_slots(self):
        return len(self.idle)

    def submit(self, tasks):
        now = self.clock.now()
        assigned = []
        for task in tasks:
            rank = self.idle.pop()
            params = json.loads(task.params)  # the worker's side: decoded once, not timed
            heapq.heappush(self.due, (now + self.duration(params), next(self.sequence), task,
                                      rank, now, sleep_value(params)))
            self.running[task.id] = task
            assigned.append((task, rank))
        return assigned

    def collect(self, block=True):
        if block and self.due and self.due[0][0] > self.clock.now():
            self.clock.skip_to(self.due[0][0])
        now = self.clock.now()
        finished = []
        while self.due and self.due[0][0] <= now:
            finish, _, task, rank, start, value = heapq.heappop(self.due)
            del self.running[task.id]
            self.idle.append(rank)
            self.intervals.append((start, start, finish))
            finished.append((task, rank, Outcome(value, started=start, finished=finish)))
        return finished


def simulate(workers, tasks, duration, mode="async"):
    """Run one simulated study; return its figures."""
    pool = SimulatedPool(workers, duration)
    with tempfile.TemporaryDirectory(prefix="emews-bench-") as tmp:
        space = Path(tmp) / "space.json"
        space.write_text(json.dumps(SPACE))
        store = Store(Path(tmp) / "results.db")
        settings = {"algorithm": "random", "space": str(space), "seed": 0, "mode": mode,
                    "slots": workers, "stop": {"budget": tasks}}
        master = Master(pool, store, mode)
        started = time.perf_counter()
        eqpy.init("emews.core.me")
        master.run(json.dumps(settings))
        real = time.perf_counter() - started
        store.close()
    return {"workers": workers, "tasks": tasks, "mode": mode, "real_s": real,
            "tasks_per_real_s": tasks / real, **utilization(pool.intervals, workers)}


def run(sizes):
    """Utilization and master throughput at each simulated worker count."""
    figures = []
    for workers in sizes.simulation_workers:
        tasks = workers * sizes.simulation_tasks_per_worker
        for mode in ("async", "batch"):
            print(f"[simulation] {workers} workers, {mode}", flush=True)
            entry = simulate(workers, tasks, lognormal_duration, mode)
            entry["master_tasks_per_s"] = simulate(workers, tasks, lambda params: 0.0,
                                                   mode)["tasks_per_real_s"]
            figures.append(entry)
    return {"duration": "lognormal, mean 0.2 s, sigma 1", "runs": figures}
