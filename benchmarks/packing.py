"""Part 9, packing by simulation: evaluations of 1, 2, 4 and 8 slots on 1,024 slots.

The product's own :class:`emews.pools._packed.PackedPool` (with its
:class:`emews.pools._packing.Packer`) packs the evaluations; a simulated inner pool runs each for
a lognormal time on a virtual clock, and a loop does what the master does with a pool: hands it
as many waiting tasks as it has free slots, collects what finishes. The sizes are drawn
uniformly from ``packing_sizes``; the times are lognormal (mean 1, sigma 1), independent of the
size; all the tasks wait from the start (a backlog: the queue is never empty).

Two layouts: ``any nodes`` (an evaluation's ranks may lie on any nodes) and ``one node``
(``nodes_per_eval = 1``: all its ranks on one node, as data-parallel training on one node's
GPUs). Three policies, side by side on the same tasks:

* ``emews``: the product's packer, a reservation for the oldest waiting evaluation that does
  not fit (the hosts with the most room) and backfill of the others elsewhere;
* ``first-come-first-served``: the same placement, but nothing starts while the oldest waits;
* ``first fit``: whatever fits starts, in order, skipping what does not (no reservation): the
  large ones may starve.

``utilization`` is slot-seconds busy / (slots x makespan); ``steady_utilization`` the same up to
the last start (without the drain at the end of a finite backlog, where the longest lognormal
times run alone). ``largest_wait_ratio``: the mean start of the 8-slot evaluations over that of
the 1-slot ones (near 1: no starvation).
"""

import heapq
import itertools
import json
import math
import random

import numpy as np

from emews.pools._base import Pool, Task
from emews.pools._packed import PackedPool
from emews.pools._packing import Packer
from emews.pools._requests import Demand

SIGMA = 1.0
LAYOUTS = {"any nodes": None, "one node": 1}


class FirstComeFirstServed(Packer):
    """The product's placement; nothing starts while the oldest waiting evaluation waits."""

    def schedule(self, requests):
        started = []
        for index, request in enumerate(requests):
            placement = self.place(request)
            if placement is None:
                break
            started.append((index, placement))
        return started


class FirstFit(Packer):
    """The product's placement; whatever fits starts, with no reservation for what waits."""

    def schedule(self, requests):
        return [(index, placement) for index, request in enumerate(requests)
                if (placement := self.place(request)) is not None]


POLICIES = {"emews": Packer, "first-come-first-served": FirstComeFirstServed,
            "first fit": FirstFit}


class SimulatedSlots(Pool):
    """The inner pool: each task runs for its given time on a virtual clock."""

    def __init__(self, slots, durations):
        super().__init__(slots)
        self.durations = durations
        self.now, self.due = 0.0, []
        self.sequence = itertools.count()
        self.intervals = []        # (started, finished, slots held, task id)

    def submit(self, tasks, slots=None):
        for task, slot in zip(tasks, slots):
            finish = self.now + self.durations[task.id]
            heapq.heappush(self.due, (finish, next(self.sequence), task, slot))
            self.running[task.id] = task
            self.intervals.append((self.now, finish, task.resources.ranks, task.id))
        return [(task, slot + 1) for task, slot in zip(tasks, slots)]

    def free_slots(self):
        return self.slots - sum(task.resources.ranks for task in self.running.values())

    def collect(self, block=True):
        if not self.due:
            return []
        self.now = self.due[0][0]
        finished = []
        while self.due and self.due[0][0] <= self.now:
            _, _, task, slot = heapq.heappop(self.due)
            del self.running[task.id]
            finished.append((task, slot + 1, _Outcome()))
        return finished


class _Outcome:
    """What the packed pool reads of an outcome: its metrics."""

    def __init__(self):
        self.metrics = {}


def simulate(policy, layout, slots, per_node, tasks, sizes, seed):
    """Run ``tasks`` evaluations through a :class:`PackedPool` with the ``policy`` packer;
    return the ``(started, finished, slots held, task id)`` of each and the size of each."""
    rng = random.Random(seed)
    mu = -SIGMA ** 2 / 2    # mean 1
    durations = [math.exp(rng.gauss(mu, SIGMA)) for _ in range(tasks)]
    size_of = [rng.choice(sizes) for _ in range(tasks)]
    hosts = [f"node{i // per_node:04d}" for i in range(slots)]
    inner = SimulatedSlots(slots, durations)
    demand = Demand({"ranks_per_eval": "$k", "nodes_per_eval": LAYOUTS[layout]})
    pool = PackedPool(inner, demand, POLICIES[policy](hosts))
    waiting = [Task(i, json.dumps({"k": size_of[i]}), f"RUN{i}") for i in range(tasks)]
    waiting.reverse()
    while waiting or pool.running:
        handed = [waiting.pop() for _ in range(min(pool.free_slots(), len(waiting)))]
        pool.submit(handed)
        pool.collect()
    return inner.intervals, size_of


def figures(intervals, size_of, slots):
    """Utilization (whole and steady), and how long the largest evaluations waited next to
    the smallest: the mean start of each size (every task waits from time 0, in an order
    drawn at random, so a fair packing starts them alike: a ratio near 1; a starving one
    much later)."""
    starts = np.array([s for s, _, _, _ in intervals])
    ends = np.array([f for _, f, _, _ in intervals])
    held = np.array([k for _, _, k, _ in intervals], dtype=float)
    started_at = {task_id: start for start, _, _, task_id in intervals}
    makespan, last_start = float(ends.max()), float(starts.max())
    busy = float(np.sum((ends - starts) * held))
    steady = float(np.sum((np.minimum(ends, last_start) - starts).clip(0) * held))
    mean_start = {k: float(np.mean([started_at[i] for i, size in enumerate(size_of)
                                    if size == k])) for k in (min(size_of), max(size_of))}
    return {"utilization": busy / (slots * makespan),
            "steady_utilization": steady / (slots * last_start) if last_start > 0 else None,
            "makespan": makespan,
            "largest_wait_ratio": mean_start[max(size_of)] / mean_start[min(size_of)]}


def run(sizes):
    """Every policy on every layout, on the same tasks; the part's figures."""
    slots, per_node = sizes.packing_slots, sizes.packing_slots_per_node
    mean_size = sum(sizes.packing_sizes) / len(sizes.packing_sizes)
    tasks = int(sizes.packing_tasks_per_slot * slots / mean_size)
    runs = []
    for layout in LAYOUTS:
        for policy in POLICIES:
            found = figures(*simulate(policy, layout, slots, per_node, tasks,
                                      sizes.packing_sizes, seed=1), slots)
            runs.append({"layout": layout, "policy": policy, "slots": slots, "tasks": tasks,
                         **found})
            print(f"packing: {layout:9} {policy:24} steady utilization "
                  f"{found['steady_utilization']:.3f}", flush=True)
    return {"slots": slots, "slots_per_node": per_node, "sizes": list(sizes.packing_sizes),
            "duration": f"lognormal times (mean 1, sigma {SIGMA:g})", "runs": runs}
