"""A model's reports between its steps, and the pruner's answer: ``emews.report``.

::

    model: emews.report(0.7, step=3, acc=0.8)
      -> the run's Reporter (set around the objective's call): checks it, makes a Report
      -> send(report): the pool's callback in this process; from a nanny child, a frame to its
         worker, which calls the pool's callback; the pool hands it to the master
      <- True when the master's pruner stops the run: emews.report raises Pruned

``app`` and ``container`` models report with a line of their output (:data:`LINE`, then the
:class:`~.outcome.Report` wire form), which the worker reads from the run's log while it waits
(:class:`LogReports`). docs/src/fidelity.md tabulates the rules a report must keep and what
follows a bad one or a stop.
"""

import contextvars
import json
import operator
import time

from . import _channel as channel
from ._outcome import BadOutcome, Report

LINE = "EMEWS_REPORT "       # an app's report: this, then the Report's wire form (JSON)


class Pruned(Exception):
    """The study's pruner stopped this run at a report: raised by ``emews.report``; let it
    propagate out of the objective (the run is stored ``pruned`` with ``value`` at ``step``)."""

    def __init__(self, value, step):
        super().__init__(f"pruned at step {step}")
        self.value, self.step = value, step


class Reporter:
    """One run's reports: checks each, hands it to ``send`` (``Report -> bool``: stop the run?;
    ``None``: reports go nowhere and never stop it) and remembers a stop."""

    def __init__(self, send=None):
        self.send, self.last_step, self.pruned = send, None, None   # pruned: the Pruned raised

    def report(self, value, step, metrics):
        """Check and send one report; raise :class:`Pruned` when the run must stop."""
        if self.pruned is not None:
            raise self.pruned
        step = _step(step)
        if self.last_step is not None and step <= self.last_step:
            raise ValueError(f"emews.report(): step must be above the run's last reported step "
                             f"({self.last_step}), got {step}")
        value = _number("value", value)
        metrics = {str(name): _number(name, number) for name, number in metrics.items()}
        self.last_step = step
        if self.send is not None and self.send(Report(step, value, metrics, time.time())):
            self.pruned = Pruned(value, step)
            raise self.pruned


def _step(step):
    """``step`` as an int (a numpy integer too), or a one-line ValueError."""
    try:
        whole = operator.index(step)
    except TypeError:
        whole = -1
    if isinstance(step, bool) or whole < 0:
        raise ValueError(f"emews.report(): step must be a whole number, 0 or more, got "
                         f"{step!r:.40}")
    return whole


def _number(name, value):
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"emews.report(): {name} must be a number, got {value!r:.40}") \
            from None


_reporter = contextvars.ContextVar("emews_reporter", default=None)   # the run's (.py sets it)


def report(value, step, **metrics):
    """Report ``value`` (the quantity the study minimizes) at ``step`` (a whole number that
    grows from one report to the next: an epoch, a number of samples seen) during a run, with
    other ``metrics`` (name=number), in the order of Optuna's ``trial.report(value, step)``.

    It is stored as the run's learning curve. When the study's pruner (``[study] pruner``)
    stops the run, this raises :class:`emews.Pruned`: let it propagate (the run is stored
    ``pruned`` with this value and step). See the module docstring for bad reports.
    """
    reporter = _reporter.get()
    if reporter is None:
        raise RuntimeError("emews.report() must be called while emews runs the objective "
                           "(it was called outside a run)")
    reporter.report(value, step, metrics)


def in_run():
    """Whether ``emews.report`` may be called here (a run of emews in this process)."""
    return _reporter.get() is not None


class LogReports:
    """The :data:`LINE` reports an app writes to its log at ``path``, read as it grows, handed
    to a :class:`Reporter` on ``send``."""

    def __init__(self, path, send):
        self.path, self.reporter = path, Reporter(send)
        self.offset, self.partial = 0, b""

    def poll(self):
        """Read what the log gained; raise :class:`Pruned` when a report stopped the run."""
        with open(self.path, "rb") as log:
            log.seek(self.offset)
            data = log.read()
        self.offset += len(data)
        *lines, self.partial = (self.partial + data).split(b"\n")
        notes = []
        try:
            for line in lines:
                text = line.decode("utf-8", "replace").strip()
                if text.startswith(LINE):
                    self._take(text[len(LINE):], notes)
        finally:
            if notes:
                with open(self.path, "a") as log:
                    log.write("".join(notes))

    def _take(self, text, notes):
        """One report line's JSON; a bad one is noted in ``notes`` and skipped."""
        try:
            wire = json.loads(text)
            one = Report.from_wire({"time": time.time(), **wire})
            self.reporter.report(one.value, one.step, one.metrics)
        except (ValueError, TypeError, BadOutcome) as exc:  # JSON, a rule: skip it
            notes.append(f"emews: a report line was skipped: {exc}\n")


def answered(sock, messages, watch):
    """The reply among ``messages`` (frames that came on ``sock`` from a nanny child or an
    evaluation's rank 0): the first that is no report; ``None`` when all are. Each report
    before it goes to ``watch.report``, and its verdict, ``{"prune": bool}``, back on ``sock``
    (a malformed report stops nothing; a sender gone gets no answer: its end tells how)."""
    for message in messages:
        if "report" not in message:
            return message
        try:
            prune = bool(watch.report(Report.from_wire(message["report"]))) \
                if watch.report else False
        except BadOutcome:
            prune = False
        try:
            channel.send(sock, {"prune": prune})
        except OSError:
            pass
    return None
