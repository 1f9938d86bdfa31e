"""A progress line while a study runs: evaluations done of the budget, best so far, failures."""

import math
import sys
import time

from rich.console import Console


class Progress:
    """Prints a status line at most every ``interval`` seconds, and once at the end."""

    def __init__(self, budget=None, interval=2.0, done=0, failed=0, best=math.inf, stream=None):
        self.budget, self.interval = budget, interval
        self.done, self.failed, self.best = done, failed, best
        self.running = 0
        self.console = Console(file=stream or sys.stdout, highlight=False)
        self.last = time.monotonic()

    def update(self, finished, running=0):
        """Count ``(task, rank, outcome)`` results; print if the interval has passed."""
        for _, _, outcome in finished:
            self.done += 1
            if outcome.status != "done":
                self.failed += 1
            elif outcome.value < self.best:
                self.best = outcome.value
        self.running = running
        if time.monotonic() - self.last >= self.interval:
            self.show()

    def line(self):
        """The status line as text."""
        of = f"/{self.budget}" if self.budget else ""
        best = "-" if math.isinf(self.best) else f"{self.best:.6g}"
        return (f"[progress] evaluations {self.done}{of} | best {best} | failed {self.failed}"
                f" | running {self.running}")

    def show(self):
        """Print the status line now."""
        self.last = time.monotonic()
        self.console.print(self.line(), markup=False)
