"""Progress while a study runs: evaluations done of the budget, what it found so far (the best,
a point's in a study with replicas; or the size of its Pareto front), failures, pruned runs,
evaluations running and queued, and an ETA (:meth:`Progress.eta`).

On a terminal it is a live rich progress bar; elsewhere (batch jobs, CI, a pipe) a plain line
every ``interval`` seconds and one at the end. ``emews run`` started alone from a terminal tells
its spawned job so (``EMEWS_TERMINAL=1``): the job's output reaches the terminal through
``mpiexec``, which is not a terminal itself.
"""

import json
import math
import os
import sys
import time

from rich.console import Console

from ..core._pareto import front, minimized
from .._status import Status

TERMINAL_VARIABLE = "EMEWS_TERMINAL"
BAR_EVERY = 0.25  # seconds between updates of the live bar (it redraws twice a second)


class Progress:
    """Reports the study's progress (see the module docstring). ``directions``: in a study of
    several objectives or with constraints, its objectives' directions, and ``pareto`` the raw
    objective vectors on its front when the run starts."""

    def __init__(self, budget=None, interval=2.0, done=0, failed=0, best=math.inf, stream=None,
                 max_time=None, pruned=0, replicas=None, directions=None, pareto=(),
                 step_budget=None):
        self.budget, self.interval, self.max_time = budget, interval, max_time
        self.step_budget, self.steps, self.steps_at_start = step_budget, 0, 0
        self.replicas = replicas   # a study with replicas: its Gathered (emews.core._replicas)
        self.done, self.failed, self.best, self.pruned = done, failed, best, pruned
        self.done_at_start = done
        self.directions, self.pareto = directions, list(pareto)
        self.running = self.queued = 0
        force = True if os.environ.get(TERMINAL_VARIABLE) == "1" else None
        self.console = Console(file=stream or sys.stdout, highlight=False, force_terminal=force)
        self.started = self.last = time.monotonic()
        self.bar = None
        if self.console.is_terminal:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn

            columns = [TextColumn("evaluations"), BarColumn(), MofNCompleteColumn()] \
                if budget else [TextColumn("evaluations {task.completed}")]
            self.bar = Bar(*columns, TextColumn("{task.description}"), console=self.console,
                           refresh_per_second=2, transient=False)
            self.bar.add_task(self._details(), total=budget, completed=done)
            self.bar.start()

    def resume(self, steps):
        """Go on from the ``steps`` that earlier runs of the study reported (this
        run's step rate counts only its own)."""
        self.steps = self.steps_at_start = steps

    def update(self, finished, running=0, queued=0, steps=None):
        """Count ``(task, rank, outcome)`` results, with ``running`` evaluations on workers,
        ``queued`` ones waiting for a slot and ``steps`` reported so far (``None``: as before);
        update the bar (at most every :data:`BAR_EVERY` s), or print if the interval passed."""
        for task, _, outcome in finished:
            self.done += 1
            value = outcome.value if outcome.status == Status.DONE else math.nan
            if outcome.status in (Status.PRUNED, Status.PAUSED):   # a paused one as pruned
                self.pruned += 1
            elif outcome.status != Status.DONE:
                self.failed += 1
            if self.directions is not None:
                if outcome.status == Status.DONE and outcome.feasible is not False:
                    vectors = [*self.pareto, list(outcome.objectives or [outcome.value])]
                    kept = front([minimized(v, self.directions) for v in vectors])
                    self.pareto = [vectors[i] for i in kept]
                continue
            if self.replicas is not None:
                told = self.replicas.add(json.loads(task.params), value)
                value = math.nan if told is None else told[1]
            if value < self.best:   # NaN never compares smaller
                self.best = value
        self.running, self.queued = running, queued
        self.steps = self.steps if steps is None else steps
        now = time.monotonic()
        if self.bar is not None:
            if now - self.last >= BAR_EVERY:
                self.last = now
                self._draw()
        elif now - self.last >= self.interval:
            self.show()

    def _draw(self):
        self.bar.update(self.bar.task_ids[0], completed=self.done, description=self._details())

    def _found(self):
        """What the study found so far: ``best VALUE``, or ``front N`` in a study of several
        objectives."""
        if self.directions is not None and len(self.directions) > 1:
            return f"front {len(self.pareto)}"
        if self.directions is not None:   # constraints on one objective
            return "best " + (f"{self.pareto[0][0]:.6g}" if self.pareto else "-")
        return "best " + ("-" if math.isinf(self.best) else f"{self.best:.6g}")

    def eta(self):
        """Seconds left until the first limit ends the study, or None: the evaluation budget
        at this run's rate of evaluations, the step budget at its rate of steps, or
        ``max_time``."""
        elapsed = time.monotonic() - self.started
        left = []
        new = self.done - self.done_at_start
        if self.budget and new:
            left.append(max(self.budget - self.done, 0) * elapsed / new)
        trained = self.steps - self.steps_at_start
        if self.step_budget and trained:
            left.append(max(self.step_budget - self.steps, 0) * elapsed / trained)
        if self.max_time:
            left.append(max(self.max_time - elapsed, 0.0))
        return min(left) if left else None

    def _details(self):
        eta = self.eta()
        pruned = f" | pruned {self.pruned}" if self.pruned else ""
        queued = f" | queued {self.queued}" if self.queued else ""
        return (f"{self._found()} | failed {self.failed}{pruned} | running {self.running}"
                + queued + ("" if eta is None else f" | ETA {duration(eta)}"))

    def line(self):
        """The status line as text."""
        of = f"/{self.budget}" if self.budget else ""
        return f"[progress] evaluations {self.done}{of} | {self._details()}"

    def show(self):
        """Report now (the final report when the study ends: the bar stops)."""
        self.last = time.monotonic()
        if self.bar is None:
            self.console.print(self.line(), markup=False, soft_wrap=True)   # a log: one line
        else:
            self._draw()
            self.close()

    def close(self):
        """Stop the live bar (safe to call twice)."""
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


def duration(seconds):
    """``seconds`` as a person reads them: ``1h02m03s``, ``5m07s`` (the progress line's ETA,
    and ``emews status``'s)."""
    minutes, seconds = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{seconds:02d}s" if hours else f"{minutes}m{seconds:02d}s"
