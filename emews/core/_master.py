"""The master loop: it answers the ME thread's messages by evaluating points on a pool.

::

    ME thread --points--> output_q --> Master --Task--> Pool --> workers
    ME thread <-results-- input_q  <-- Master <-Outcome- Pool
                                         |
                                         +--> Store: every result committed before the ME
                                              sees it, one transaction per turn

A turn takes every ready result, commits it in one transaction together with every state change
since the last one (the rows of the points the ME proposed, retries, workers refilled: group
commit), then hands the ME every result it has not seen in one message, and takes back in one
message as many points as there are free slots (and the points it keeps ready). Rows written
while the ME thinks ride on the next turn's commit, or are committed on their own once nothing
has come for a few ms. A point is stored with the first commit after the ME proposed it
(``queued``, or ``running`` when a worker got it by then); one handed out later is marked
``running`` with the commit after its turn's, unless its result came by then.

The master never waits on the ME alone: while the ME thinks, it keeps collecting results,
storing them at once and refilling free workers from points already proposed. Each result goes
through the failure policy (:mod:`emews.core._failure`): a failed point may run again as its next
attempt (``RUNnnnnnn-2``, ...), be told to the ME as failed (NaN or a penalty), or end the study
(its in-flight evaluations are then cancelled, and whatever still arrives is stored).

A model's reports (``emews.report``) reach the master through its pool while the model waits
(:meth:`Master._judge`): each is stored with the next commit, counted against ``step_budget``,
and put to the study's pruner (:mod:`emews.core._pruners`), whose verdict goes back to the model;
a stopped run comes back ``pruned`` (final: never retried, counted, never the best; the ME is
told a :class:`~emews.core._algorithm.PrunedResult`: NaN, with the run's curve).

Freeze-thaw (``[pruner] pause = true``): a run the pruner pauses comes back ``paused``, told to
the ME and counted as a pruned one, its checkpoint kept; once nothing is left to propose, the
drain thaws paused runs into free slots (:mod:`emews.core._thaw` says which, and for how long).
Thaws' results are stored (their steps and values counted by the limits), not told to the ME.

The master is the one place that counts the study's limits (budget, iterations, patience,
target, time) for any ME, a classic EQ/Py module included: it never starts more evaluations
than the budget allows and ends the study with the reason once a limit is reached and nothing
more can be answered. Each answer carries its verdict on them
(:meth:`~emews.core._algorithm.Stopper.verdict`), which the ME driver proposes and stops by.

``emews pause``, ``unpause`` and ``stop`` (:mod:`emews.core._control`) hold back new work (and
take back what a pool queued but has not started: ``Pool.hold``), hand it out again, or end
the study once what runs has finished.

In ``batch`` mode the master answers a message of points once all of them are evaluated, with
positional results. In ``async`` mode it answers as soon as any result is ready, with every
result that is ready (tagged with the point's number in the ME's order).
"""

import collections
import dataclasses
import json
import math
import sys
import time

from . import _queues as queues
from ._algorithm import point_key
from .._errors import MEAborted, ProtocolError, StudyAborted
from ._failure import classify
from ._plan import MasterPlan
from ._pruners import PAUSE
from ._thaw import Thaws
from ..pools._base import Backoff, Pool, Task
from .._status import Status
from ..store._base import Store

CANCEL_GRACE = 30.0
CONTROL_POLL = 0.2   # seconds between looks at control while paused with nothing running
CONTROL_EVERY = 0.02  # at most one look at control per this many seconds while work flows
ME_WAIT = 5e-4       # the first wait for the ME's answer: most come sooner (no wasted wake-up)


class Master:
    """Runs one study's message loop on rank 0: evaluates the ME's points on ``pool`` and
    keeps them in ``store``, as ``plan`` (a :class:`~emews.core._plan.MasterPlan`: the mode,
    the failure policy, the limits, what a resumed study left ...) says. The plan's ``pruner``
    judges the models' reports (:meth:`resume_reports` gives it those of earlier runs).
    """

    def __init__(self, pool: Pool, store: Store, plan: MasterPlan) -> None:
        self.pool, self.store, self.mode, self.progress = pool, store, plan.mode, plan.progress
        self.criteria, self.policy = plan.criteria, plan.policy
        self.limits, self.pruner = plan.limits, plan.pruner
        self.thaws = Thaws(self.pruner.max_resource if self.pruner.pause else None)
        self.pausing = set()               # (id, attempt) the pruner paused, until it returns
        self.last_steps = {}               # (id, attempt) -> the last step it reported
        self.curves = {}                   # (id, attempt) of a running task -> {step: value}
        self.draining = False              # the ME ended: it proposes nothing more
        pool.bind_judge(self._judge)
        self.next_id, self.first_seq = plan.first_id, plan.first_seq
        self.put = 0                       # points received from the ME, in its order
        self.index = {}                    # task id -> the ME's number for the point
        self.waiting = collections.OrderedDict()  # task id -> Task, in the order to hand out
        self.unreported = {}               # task id -> value the ME has not been told yet
        self.reported = []                 # ids the last turn gave a final result
        self.stop_reason = None
        self.control = plan.control
        self.state, self.control_due = "running", 0.0
        self.requeue = collections.defaultdict(collections.deque)
        self.requeued_keys = {}            # id -> point key, of the entries of requeue
        for i, params, attempt in plan.requeue:
            self.requeue[point_key(params)].append((i, attempt))
            self.requeued_keys[i] = point_key(params)
        self.stored_answers = collections.defaultdict(collections.deque)
        for i, params, value, counted in plan.stored_answers:
            self.stored_answers[point_key(params)].append((i, value, counted))

    def resume_reports(self, reports, done, interrupted=()):
        """Go on from what earlier runs of the study stored: their ``reports`` (in order) and
        ``done`` runs (``(id, attempt)``) go to the pruner, but those of ``interrupted`` runs,
        whose points run again from their start (so that the rungs are as an uninterrupted
        study's; a thaw goes to it as the run it goes on); every step counts against
        ``step_budget``. The paused runs can be thawed again."""
        thaws = self.thaws
        thaws.resume(self.store.attempts(), self.store.rows(Status.PAUSED), reports)
        first = {}
        for row in reports:
            first.setdefault((row["id"], row["attempt"]), row["step"])
            self.last_steps[(row["id"], row["attempt"])] = row["step"]
        self.limits.steps = sum(last - self._base(run, first[run])
                                for run, last in self.last_steps.items())
        if self.progress is not None:
            self.progress.resume(self.limits.steps)
        interrupted = set(interrupted)
        self.pruner.replay([dict(row, attempt=thaws.run_of(run)[1]) for row in reports
                            if (run := (row["id"], row["attempt"])) not in interrupted],
                           [thaws.run_of(run) for run in done])

    def _base(self, run, step):
        """The step that ``run`` (a thaw, reporting ``step`` first) went on from: its
        previous attempt's last; 0 for a run that is no thaw, or that trained from step 0 again."""
        base = self.last_steps.get((run[0], run[1] - 1), 0) if run in self.thaws.continues \
            else 0
        return base if step > base else 0

    def _judge(self, task, rank, report):
        """A report of a running ``task``: stored, its steps counted; whether to stop it
        (:data:`~emews.core._pruners.PAUSE`, true as a stop is, when it is paused)."""
        run = (task.id, task.attempt)
        self.store.add_reports([(task.id, task.attempt, report)])
        if run in self.thaws.continues and run not in self.curves and \
                report.step <= self.last_steps.get(run, 0):
            self._restarted(task, report.step)
        self.limits.record_steps(max(report.step - self.last_steps.get(run, 0), 0))
        self.last_steps[run] = report.step
        self.curves.setdefault(run, {})[report.step] = report.value
        verdict = self.pruner.report(self.thaws.run_of(run), report.step, report.value)
        if not verdict and self.thaws.filler(run, self.limits.best) and \
                report.step < self.thaws.horizon and not self._working():
            verdict = PAUSE   # a filler, and nothing else runs: the study ends with this step
        if verdict == PAUSE:
            self.pausing.add(run)
        return verdict

    def _restarted(self, task, step):
        """A thawed run reported a step its point had reached before: it kept no checkpoint
        and trains from step 0 again; its steps count again from there, and the store's meta
        ``thaw_restarts`` lists it (one line to stderr says so)."""
        self.last_steps[(task.id, task.attempt)] = 0
        self.limits.record_steps(step)
        restarts = self.store.meta("thaw_restarts", [])
        self.store.set_meta("thaw_restarts", restarts + [{"id": task.id, "attempt": task.attempt,
                                                          "run_id": task.run_id}])
        print(f"emews: thawed {task.run_id} kept no checkpoint: it trains again from step 0",
              file=sys.stderr)

    def run(self, settings):
        """Serve the ME until it sends ``DONE`` (or a limit ends the study); return the final
        message (JSON text). ``settings`` answers the ``Params`` handshake.

        Raises :class:`~emews._errors.MEAborted` when the ME dies and
        :class:`~emews._errors.StudyAborted` when the failure policy ends the study.
        """
        message = self._next_message()
        if message == queues.PARAMS:
            queues.input_q.put(settings)
            message = self._next_message()
        while True:
            if message == queues.EQPY_ABORT:
                traceback = queues.output_q_get()
                self.store.set_meta("final", {"stop_reason": "the ME failed (EQPY_ABORT)"})
                self.cancel_all("cancelled: the model-exploration algorithm failed")
                raise MEAborted(traceback)
            if message in queues.END_MESSAGES:
                final = queues.output_q_get()
                self._drain()
                return final
            self._held_back()
            self.stop_reason = self.stop_reason or self.limits.reason()
            answer = None if self.stop_reason else self._answer(self._enqueue(message))
            if answer is None:
                self._drain()
                return json.dumps({"stop_reason": self.stop_reason})
            queues.input_q.put(answer)  # every value in it was committed by its turn
            message = self._next_message()

    def _next_message(self):
        """The ME's next message; while it thinks, keep storing results and refilling.

        The wait for it is a blocking ``get`` (the ME's answer wakes the master), a short
        one at first, then longer ones with turns between them.
        """
        backoff = Backoff(first=ME_WAIT)
        while True:
            if not self.pool.running and not self.waiting:
                self.store.commit()
                return queues.output_q_get()
            message = backoff.wait(queues.output_q_poll)
            if message is not None:
                return message
            if self._turn(block=False):
                backoff.reset()
            elif backoff.longest:
                self.store.commit()  # the ME thinks and nothing came: commit what waits

    def _enqueue(self, message):
        """Queue the message's points (as many as the limits allow), handing out as many as
        there are free slots; return their ids. Their rows are written with the next commit."""
        ids, tasks = [], []
        allowed = self._allowed()
        points = queues.split_points(message)
        if points:  # a round that proposed points (an empty message waits for results)
            self.limits.iterations += 1
        for params in points:
            index, self.put = self.put, self.put + 1
            stored = self._pop(self.stored_answers, params)
            if stored is not None:
                i, value, counted = stored
                self.unreported[i] = value
                if counted is not None:
                    self.limits.record([counted])
            elif allowed <= len(tasks):
                continue
            else:
                task = self._task(params)
                tasks.append(task)
                i = task.id
            self.index[i] = index
            ids.append(i)
        self.waiting.update({task.id: task for task in tasks})
        self.store.add([(t.id, t.params, t.run_id, None, self.first_seq + self.index[t.id])
                        for t in tasks if t.attempt == 1])
        self.store.requeue([(t.id, t.attempt, t.run_id) for t in tasks if t.attempt > 1])
        self.store.mark_running(self._submit_waiting())
        self._thaw()
        return ids

    @staticmethod
    def _pop(table, params):
        """The first entry of ``table`` (point key -> deque) for ``params``, taken out."""
        if not table:
            return None
        key = point_key(json.loads(params))
        if not table.get(key):
            return None
        entry = table[key].popleft()
        if not table[key]:
            del table[key]
        return entry

    def _task(self, params):
        """A new point, or the next attempt of a point a killed run left unfinished."""
        requeued = self._pop(self.requeue, params)
        if requeued is not None:
            i, attempt = requeued
            return Task(i, params, run_id(i, attempt + 1), attempt + 1)
        i, self.next_id = self.next_id, self.next_id + 1
        return Task(i, params, run_id(i))

    def _allowed(self):
        """How many more evaluations the budget allows to start now."""
        remaining = self.limits.remaining()
        if remaining is None:
            return float("inf")
        return remaining - self._in_flight()

    def _in_flight(self):
        """How many evaluations are queued or running (thaws are none: their points were
        counted when they paused)."""
        running = len(self.pool.running)
        if self.thaws.continues:
            running -= sum((t.id, t.attempt) in self.thaws.continues
                           for t in self.pool.running_tasks())
        return len(self.waiting) + running

    def _working(self):
        """Whether work other than filler thaws waits or runs (see :meth:`_thaw`)."""
        best = self.limits.best
        return bool(self.waiting) or any(not self.thaws.filler((t.id, t.attempt), best)
                                         for t in self.pool.running_tasks())

    def _submit_waiting(self):
        """Hand waiting tasks to free slots; return ``(task id, rank)`` pairs."""
        if not self.waiting or self.stop_reason or self._held_back():
            return []
        free = self.pool.free_slots()
        if not free:
            return []
        tasks = [self.waiting.popitem(last=False)[1]
                 for _ in range(min(free, len(self.waiting)))]
        return [(task.id, rank) for task, rank in self.pool.submit(tasks)]

    def _held_back(self):
        """True while ``emews pause`` or ``emews stop`` holds back new work (``control``
        is looked at once per :data:`CONTROL_EVERY` at most)."""
        now = time.monotonic()
        if now >= self.control_due:
            self.control_due = now + CONTROL_EVERY
            state = self.control.current()
            if state != "running" and self.state == "running":
                self._wait_again(self.pool.hold())
            self.state = state
        if self.state == "stopped" and not self.stop_reason:
            self.stop_reason = self.control.reason
            self._cancel_waiting(f"cancelled: {self.stop_reason}")
        return self.state != "running"

    def _wait_again(self, tasks):
        """Queue ``tasks`` again, before any other (retries, and tasks that the pool handed
        back unstarted on a pause or stop)."""
        self.store.requeue([(t.id, t.attempt, t.run_id) for t in tasks])
        for task in reversed(tasks):
            self.waiting[task.id] = task
            self.waiting.move_to_end(task.id, last=False)

    def _collect(self, block):
        """The ready results; with ``block``, wait for at least one.

        While rows are buffered, the wait polls for a few ms first, so that a result that
        comes soon carries them in its own turn's commit; then they are committed on their own.
        A remote pool asking for work while tasks wait ends the wait too (its request is not
        sent again).
        """
        if not block or not self.store.pending:
            return self.pool.collect(block=block)
        backoff = Backoff(first=1e-5)
        while not backoff.longest:
            finished = self.pool.collect(block=False)
            if finished or self._can_hand_out():  # or a pool asked for work
                return finished
            backoff.wait()
        self.store.commit()
        return self.pool.collect(block=True)

    def _can_hand_out(self):
        """Whether waiting tasks can go to free slots now (not while paused or stopped)."""
        return bool(self.waiting) and self.state == "running" and self.pool.free_slots() > 0

    def _turn(self, block):
        """Take the ready results (waiting for one if ``block``), refill free slots, and commit
        the results with every change since the last commit in one transaction.

        Returns how many results came back; :attr:`reported` lists the ids given a final result.
        """
        finished = self._collect(block)
        self.reported = []
        started = self.pool.started()   # tasks a packing pool queued, started since
        if started:
            self.store.mark_running(started)
        if not finished:
            if self._can_hand_out():  # a remote pool asked for work
                self.store.mark_running(self._submit_waiting())
            return 0
        rows, final, values, retried, duplicates, abort = [], [], [], [], [], None
        for task, rank, outcome in finished:
            if outcome.status == Status.DUPLICATE:
                duplicates.append((task.id, rank, outcome, task.attempt))
                continue
            if task.params is None:
                task = self._adopt(task, rank, outcome)
                if task is None:
                    continue
            if task.id in self.waiting:  # a late result of a requeued task: the first wins
                del self.waiting[task.id]
            run = (task.id, task.attempt)
            curve = self.curves.pop(run, None)
            verdict = classify(outcome, task.attempt, self.policy, self.criteria, curve)
            if run in self.pausing:
                verdict = self._paused(task, verdict, curve)
            rows.append((task.id, rank, verdict.outcome, task.attempt, verdict.status))
            if verdict.action == "retry":
                attempt = task.attempt + 1
                retried.append(Task(task.id, task.params, run_id(task.id, attempt), attempt))
                self.thaws.retried(run, attempt)
                continue
            abort = abort or (verdict.reason if verdict.action == "abort" else None)
            if verdict.action == "done":
                self.pruner.completed(self.thaws.run_of(run))
            if run in self.thaws.continues:   # a thaw: the ME was told of it when it paused
                self._thawed(verdict)
                continue
            final.append((task, rank, verdict.outcome))
            self.unreported[task.id] = verdict.search_value
            self.reported.append(task.id)
            values.append(verdict.limit_value)
        self.store.record_duplicates(duplicates)
        self.store.finish(rows)
        self._wait_again(retried)
        self.limits.record(values)
        self.stop_reason = self.stop_reason or self.limits.reason(iterations=False)
        if self.stop_reason:
            self._cancel_waiting(f"cancelled: the study stopped ({self.stop_reason})")
        self.store.mark_running(self._submit_waiting())
        self._thaw()
        self.store.commit(hold=True)   # the running status of what it handed out: see Store
        if self.progress is not None:
            queued = self.pool.queued()
            self.progress.update(final, running=len(self.pool.running) - queued,
                                 queued=len(self.waiting) + queued, steps=self.limits.steps)
        if abort:
            reason = f"the failure policy aborted the study: {abort}"
            self.store.set_meta("final", {"stop_reason": reason})
            self.cancel_all("cancelled: " + reason)
            raise StudyAborted(reason)
        return len(finished)

    def _paused(self, task, verdict, curve):
        """The verdict on a run the pruner paused, whose attempt reported ``curve``: ``paused``
        (the attempt too, ``paused at step N``), its point's whole curve kept for a thaw; or
        ``verdict`` itself, when the run ended otherwise before it stopped."""
        self.pausing.discard((task.id, task.attempt))
        if verdict.action != "pruned":
            return verdict
        self.thaws.pause(task.id, task.attempt, task.params, curve or {})
        error = (verdict.outcome.error or "pruned").replace("pruned", "paused", 1)
        outcome = dataclasses.replace(verdict.outcome, status=Status.PAUSED, error=error)
        return dataclasses.replace(verdict, outcome=outcome, status=Status.PAUSED)

    def _thawed(self, verdict):
        """A thawed run's final result: its value counts for the limits' best (its point
        was counted as an evaluation when it paused)."""
        if verdict.action == "done" and not math.isnan(verdict.limit_value):
            self.limits.best = min(self.limits.best, verdict.limit_value)

    def _thaw(self):
        """Once nothing is left to propose, fill the free slots with paused runs (the drain:
        see :mod:`emews.core._thaw`), the fillers among them only while other work runs; return
        how many started. Their rows are written with the next commit."""
        if not self.thaws.paused or not (self.draining or self.stop_reason
                                         or self._allowed() <= 0) \
                or self._held_back() or self.limits.final_reason():
            return 0
        fill, tasks = self._working(), []
        for _ in range(self.pool.free_slots() - len(self.waiting)):
            thaw = self.thaws.next_thaw(self.limits.best, fill)
            if thaw is None:
                break
            i, attempt, params, step = thaw
            fill = fill or not self.thaws.filler((i, attempt), self.limits.best)
            tasks.append(Task(i, params, run_id(i, attempt), attempt))
            self.last_steps[(i, attempt)] = step
        if tasks:
            self.store.requeue([(t.id, t.attempt, t.run_id) for t in tasks])
            self.store.mark_running([(task.id, rank) for task, rank in self.pool.submit(tasks)])
        return len(tasks)

    def _answer(self, ids):
        """The answer to a message of points, or ``None`` when a limit means there is none."""
        if self.mode == "batch":
            left = {i for i in ids if i not in self.unreported}
            while left:
                if not self.pool.running and not self.waiting:
                    return None  # some points were never started: a limit was reached
                self._wait_for_results()
                left.difference_update(self.reported)
            return queues.Answer([self.unreported.pop(i) for i in ids], verdict=self.verdict())
        while not self.unreported:
            if not self.pool.running and not self.waiting:
                if self.stop_reason or self._allowed() <= 0:
                    self.stop_reason = self.stop_reason or self.limits.reason(iterations=False)
                    return None
                raise ProtocolError("the ME is waiting for results but no evaluation is "
                                    "in flight")
            self._wait_for_results()
        pairs = [(self.index.pop(i), value) for i, value in sorted(self.unreported.items())]
        self.unreported.clear()
        return queues.Answer(pairs, tagged=True, verdict=self.verdict())

    def verdict(self):
        """The limits' :class:`~emews.core._algorithm.Verdict` for the ME (the points the pool
        runs or waits for are in flight; a stop already decided, by a limit or by ``emews
        stop``, is its reason)."""
        return self.limits.verdict(self._in_flight(), self.stop_reason)

    def _wait_for_results(self):
        if not self.pool.running and not self.waiting:
            raise ProtocolError("the ME is waiting for results but no evaluation is in flight")
        if self._held_back() and not self.pool.running:  # paused with nothing running
            self.store.commit()
            time.sleep(CONTROL_POLL)
        self._turn(block=True)

    def _drain(self):
        """At the end: finish (and store) whatever is still running; cancel what never
        started."""
        self._cancel_waiting("cancelled: the study ended before it started")
        self.draining = True
        while self._thaw() or self.pool.running:
            self._turn(block=True)
        self._cancel_waiting("cancelled: the study ended before it started")  # thaws' retries
        self.unreported.clear()
        self.store.commit()

    def _adopt(self, task, rank, outcome):
        """A result for a point an earlier run left unfinished, from a pool that outlived that
        run: the point's first result. Returns the task to record it as (``None`` when it is
        recorded already: then the ME gets it when it proposes the point again)."""
        key = self.requeued_keys.pop(task.id, None)
        waiting = self.waiting.get(task.id)
        if waiting is not None:
            return Task(task.id, waiting.params, waiting.run_id, task.attempt)
        if key is None or not self.requeue.get(key):
            self.store.record_duplicates([(task.id, rank, outcome, task.attempt)])
            return None
        self.requeue[key] = collections.deque(e for e in self.requeue[key] if e[0] != task.id)
        if not self.requeue[key]:
            del self.requeue[key]
        verdict = classify(outcome, task.attempt, self.policy, self.criteria)
        final = verdict.action in ("done", "pruned", "fail")   # never run again from here
        self.store.finish([(task.id, rank, verdict.outcome, task.attempt,
                            verdict.status if final else Status.FAILED)])
        self.stored_answers[key].append((task.id, verdict.search_value if final else math.nan,
                                         None))
        self.limits.record([verdict.limit_value])   # counted here, not again
        return None

    def _cancel_waiting(self, reason):
        if self.waiting:
            self.store.cancel(list(self.waiting), reason)
            self.waiting.clear()

    def cancel_all(self, reason):
        """Call off every queued and running evaluation (their rows become ``cancelled``), then
        store whatever still comes back within a grace period."""
        self._cancel_waiting(reason)
        self.store.cancel([task.id for task in self.pool.running_tasks()], reason)
        self.store.commit()
        self.pool.cancel()
        deadline = time.monotonic() + CANCEL_GRACE
        backoff = Backoff(maximum=0.05)
        while self.pool.running and time.monotonic() < deadline:
            finished = self.pool.collect(block=False)
            if not finished:
                backoff.wait()
                continue
            verdicts = [(task, rank, classify(outcome, task.attempt, self.policy,
                                              self.criteria))
                        for task, rank, outcome in finished]
            self.store.finish([(task.id, rank, verdict.outcome, task.attempt,
                                verdict.status if verdict.action in ("done", "pruned")
                                else Status.CANCELLED)
                               for task, rank, verdict in verdicts])
            self.store.commit()


def run_id(task_id, attempt=1):
    """The run id (and run directory) of a point's attempt: ``RUN000042``, ``RUN000042-2``."""
    return f"RUN{task_id:06d}" + (f"-{attempt}" if attempt > 1 else "")
