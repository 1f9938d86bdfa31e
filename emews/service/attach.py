"""A pool job that serves a study run by ``emews serve``: ``mpiexec -n N emews pool EXPDIR``.

::

    service <--want/results/heartbeat-- rank 0 (this module) --TASKS--> ranks 1..N-1
            --tasks/ack/stop/drain-->          (an MPIPool)  <-RESULT--  (emews.pools.mpi.serve)

Rank 0 asks the service for as many tasks as its workers have free slots (each worker holds
the study's ``slots_per_worker``), hands them to its workers, and sends the results back in
one message per turn until the service acknowledges them (a result is re-sent after a
reconnect until then). It heartbeats every quarter lease. It leaves when the service
says stop, or drains (stops asking, finishes what it holds) when told to, when its walltime is
about to run out, or when the service has been silent for ``give_up`` seconds.
"""

import collections
import os
import socket
import time
from pathlib import Path

import zmq

from ..errors import EmewsError
from ..pools.base import Backoff, Task
from . import protocol

POLL_MS = 50
RUNNING_POLL_S = Backoff().maximum   # 2 ms, as the MPI master waits for its workers


class Attachment:
    """Rank 0 of a pool job: the link between the service and this job's MPI workers."""

    def __init__(self, workers, address, keys=None, name=None, walltime=None, give_up=600.0):
        self.workers, self.pool = workers, None
        self.name = name or f"{socket.gethostname()}:{os.getpid()}"
        self.context = zmq.Context.instance()
        self.socket = self.context.socket(zmq.DEALER)
        self.socket.setsockopt(zmq.LINGER, 0)
        if keys:
            _use_curve(self.socket, Path(keys))
        self.socket.connect(address)
        self.deadline = None if walltime is None else time.monotonic() + walltime
        self.give_up = give_up
        self.lease = None
        self.received, self.asked = 0, None
        self.unacked = {}                          # task id -> result entry
        self.backlog = collections.deque()         # tasks received, not yet handed to a worker
        self.draining = self.stopped = False
        self.reason = None
        self.heard = time.monotonic()
        self.last_beat = 0.0
        self.study = None

    def introduce(self):
        """Say hello and wait for the service to describe the study (``config``, ``expdir``)."""
        self._hello()
        deadline = time.monotonic() + self.give_up
        while self.study is None:
            if time.monotonic() > deadline:
                raise EmewsError(f"the service has not answered for {self.give_up:g} s; "
                                 "giving up")
            self._listen(POLL_MS / 1000)
        return self.study

    def run(self, pool):
        """Serve with ``pool`` (this job's workers) until the service stops us or we drain;
        return why we left."""
        self.pool = pool
        backoff = Backoff(maximum=POLL_MS / 1000)
        while not self.stopped:
            # while workers run, the service's socket is polled no longer than the MPI pool's
            # own longest wait, so that a finished task is reported at once
            wait = min(backoff.delay, RUNNING_POLL_S) if self.pool.running else backoff.delay
            progress = self._listen(wait)
            progress |= self._report(self.pool.collect(block=False))
            self._hand_out()
            self._ask()
            self._heartbeat()
            if self._should_leave():
                break
            if progress:
                backoff.reset()
            else:
                backoff.wait(lambda delay: None)  # the next _listen polls that long
        self._send("bye")
        return self.reason or "the service stopped the study"

    def _hello(self):
        """Introduce this pool (again, to a restarted service: with every unacknowledged
        result and what it asks for)."""
        self._send("hello", pool=self.name, workers=self.workers, host=socket.gethostname(),
                   pid=os.getpid(), received=self.received)
        if self.unacked:
            self._send("results", results=list(self.unacked.values()))
        self.asked = None

    def _listen(self, timeout):
        """Handle every message from the service, waiting up to ``timeout`` s for the first
        (a wait under a millisecond, finer than zmq's poll, is none)."""
        wait = int(timeout * 1000)
        if wait and not self.socket.poll(wait):
            return False
        heard = False
        while True:
            try:
                frame = self.socket.recv(zmq.NOBLOCK)
            except zmq.Again:
                return heard
            heard, self.heard = True, time.monotonic()
            self._handle(protocol.decode(frame))

    def _handle(self, message):
        op = message["op"]
        if op == "tasks":
            self.lease = float(message["lease"])
            tasks = [Task(i, params, run_id, attempt) for i, params, run_id, attempt in
                     message["tasks"]]
            self.received += len(tasks)
            held = set(self.pool.running) | {t.id for t in self.backlog}
            # a task this pool still runs for an earlier service of the study: its first
            # result answers for the new attempt too
            self.backlog.extend(t for t in tasks if t.id not in held)
        elif op == "ack":
            for task_id in message["ids"]:
                self.unacked.pop(task_id, None)
        elif op == "drain":
            self.draining, self.reason = True, "the service asked the pool to drain"
        elif op == "stop":
            self.stopped, self.reason = True, message["reason"]
        elif op == "who":
            self._hello()
        elif op == "study":
            self.study = {"config": message["config"], "expdir": message["expdir"]}

    def _hand_out(self):
        free = self.pool.free_slots()
        if free and self.backlog:
            self.pool.submit([self.backlog.popleft() for _ in range(min(free, len(self.backlog)))])

    def _report(self, finished):
        for task, rank, outcome in finished:
            self.unacked[task.id] = [task.id, task.attempt, rank, outcome.to_wire()]
        if finished:
            self._send("results", results=[self.unacked[t.id] for t, _, _ in finished])
        return bool(finished)

    def _ask(self):
        """Tell the service how many tasks this pool wants, unless it knows already: what it
        sent for the last request is counted off that request's ``free`` on its side."""
        free = 0 if self.draining else max(self.pool.free_slots() - len(self.backlog), 0)
        if self.asked is not None and free == self.asked[0] - (self.received - self.asked[1]):
            return
        self.asked = (free, self.received)
        self._send("want", free=free, received=self.received)

    def _heartbeat(self):
        interval = (self.lease or 60.0) / 4
        if time.monotonic() - self.last_beat >= interval:
            self.last_beat = time.monotonic()
            self._send("heartbeat")

    def _should_leave(self):
        if self.deadline is not None and not self.draining and \
                time.monotonic() >= self.deadline:
            self.draining, self.reason = True, "the pool's walltime is about to run out"
        if time.monotonic() - self.heard > self.give_up:
            raise EmewsError(f"the service has not answered for {self.give_up:g} s; giving up")
        return self.draining and not self.pool.running and not self.unacked and not self.backlog

    def _send(self, op, **fields):
        self.socket.send(protocol.encode(op, **fields))

    def close(self):
        """Close the socket."""
        self.socket.close(0)


def _use_curve(sock, keys):
    import zmq.auth

    public, secret = zmq.auth.load_certificate(str(keys / "pool.key_secret"))
    server_public, _ = zmq.auth.load_certificate(str(keys / "service.key"))
    sock.curve_publickey, sock.curve_secretkey = public, secret
    sock.curve_serverkey = server_public
