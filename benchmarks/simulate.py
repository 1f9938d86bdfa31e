"""Part 5, scale by simulation: the real master with up to 4,096 simulated workers.

:class:`SimulatedPool` is a :class:`emews.pools._base.Pool` whose workers take simulated time. It drives
the real :class:`emews.core._master.Master`, the real ME thread (the random algorithm, async or batch),
and the real SQLite store, on a virtual clock::

    virtual time = real time elapsed + idle time skipped

When the master waits for a result and none is due yet, the clock jumps to the next finish
instead of sleeping; everything the master, the ME and the store do costs its real time. So
utilization reflects exactly the overhead of our code at that number of workers, with messages
free (the MPI part of the path is measured for real in parts 1 and 2).

Per worker count and mode:

* ``utilization`` with training-length tasks: busy / (workers x makespan), durations lognormal
  (sigma 1) with each mean of ``sizes.simulation_task_means`` (10 s and 1 h at full size);
* with zero-length tasks, the most the master can turn over at that number of slots:
  ``master_tasks_per_s`` (per real second) and ``master_cpu_us_per_task`` (the process's CPU
  time, the ME thread's included, per task), and ``queue_peak_mib`` (the peak of Python memory
  the master, the ME and the store held, from ``tracemalloc`` in a run of its own);
* ``saturation_workers``: from the CPU per task ``c``, the worker count at which one master is
  busy all the time for tasks of 1 s, 1 min and 1 h (``task time / c``).
"""

import heapq
import itertools
import json
import tempfile
import time
import tracemalloc
from pathlib import Path

from emews import eqpy
from emews.core._master import Master
from emews.core._plan import MasterPlan
from emews.evaluate import Outcome
from emews.pools._base import Pool
from emews.store import SQLiteStore

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
        super().__init__(workers)
        self.duration = duration
        self.clock = VirtualClock()
        self.idle = list(range(workers, 0, -1))
        self.due = []              # heap of (finish, sequence, task, rank, start, value)
        self.sequence = itertools.count()
        self.intervals = []               # (queued, started, finished) of every task

    def free_slots(self):
        return len(self.idle)

    def submit(self, tasks, slots=None):
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


def simulate(workers, tasks, duration, mode="async", trace=False):
    """Run one simulated study; return its figures (with ``queue_peak_mib`` when ``trace``)."""
    pool = SimulatedPool(workers, duration)
    with tempfile.TemporaryDirectory(prefix="emews-bench-") as tmp:
        space = Path(tmp) / "space.json"
        space.write_text(json.dumps(SPACE))
        store = SQLiteStore(Path(tmp) / "results.db")
        settings = {"algorithm": "random", "space": str(space), "seed": 0, "mode": mode,
                    "slots": workers, "stop": {"budget": tasks}}
        master = Master(pool, store, MasterPlan(mode))
        if trace:
            tracemalloc.start()
        started, cpu = time.perf_counter(), time.process_time()
        eqpy.init("emews.core._me")
        master.run(json.dumps(settings))
        real, cpu = time.perf_counter() - started, time.process_time() - cpu
        peak = tracemalloc.get_traced_memory()[1] if trace else None
        tracemalloc.stop()
        store.close()
    found = {"workers": workers, "tasks": tasks, "mode": mode, "real_s": real,
             "tasks_per_real_s": tasks / real, "cpu_us_per_task": cpu / tasks * 1e6,
             **utilization(pool.intervals, workers)}
    if trace:
        found["queue_peak_mib"] = peak / 2 ** 20
    return found


def lognormal(mean):
    """Task durations lognormal with ``mean`` seconds (sigma 1), drawn from each point."""
    return lambda params: lognormal_duration(params, mean=mean, sigma=1.0)


SATURATION_TASKS = {"1 s": 1.0, "1 min": 60.0, "1 h": 3600.0}


def run(sizes):
    """Utilization with training-length tasks, and the master's throughput, CPU per task and
    memory with zero-length tasks, at each simulated worker count."""
    figures = []
    for workers in sizes.simulation_workers:
        tasks = workers * sizes.simulation_tasks_per_worker
        for mode in ("async", "batch"):
            print(f"[simulation] {workers} workers, {mode}", flush=True)
            entry = {"workers": workers, "mode": mode, "tasks": tasks}
            for mean in sizes.simulation_task_means:
                found = simulate(workers, tasks, lognormal(mean), mode)
                entry[f"utilization_{mean:g}s"] = found["utilization"]
                entry[f"steady_utilization_{mean:g}s"] = found["steady_utilization"]
            zero = simulate(workers, tasks, lambda params: 0.0, mode)
            entry.update(master_tasks_per_s=zero["tasks_per_real_s"],
                         master_cpu_us_per_task=zero["cpu_us_per_task"],
                         queue_peak_mib=simulate(workers, tasks, lambda params: 0.0, mode,
                                                 trace=True)["queue_peak_mib"])
            entry["saturation_workers"] = {
                label: seconds / (zero["cpu_us_per_task"] * 1e-6)
                for label, seconds in SATURATION_TASKS.items()}
            figures.append(entry)
    return {"duration": "lognormal, sigma 1, means "
                        + ", ".join(f"{m:g} s" for m in sizes.simulation_task_means),
            "task_means": list(sizes.simulation_task_means), "runs": figures}
