"""The zmq transport: the service's ROUTER socket and a pool's DEALER (messages: :mod:`.protocol`).

::

    ZmqService (ROUTER, tcp://HOST:PORT)  <--want/results/heartbeat--  ZmqPool (DEALER), rank 0
                                          --tasks/ack/stop/cancel-->   of each pool job

The service keeps each task's lease in memory: the holder and a deadline that every heartbeat
of the holder pushes on by a lease. It acknowledges results once the master has taken them;
a pool re-sends what is unacknowledged when a restarted service asks it to say hello again
(``who``). Off loopback the socket demands CURVE (see :mod:`.keys`).
"""

import collections
import logging
import math
import os
import socket
import time
from pathlib import Path

from .._errors import EmewsError, missing_extra
from ..pools._base import Task
from . import _protocol as protocol
from ._keys import POOLS, SERVICE, is_loopback, make_keys, record_service
from ._transport import CANCEL, STOP, PoolLink, Received, ServiceLink

try:
    import zmq
except ImportError:
    raise missing_extra("emews serve / emews pool", "pyzmq", "service") from None

log = logging.getLogger("emews.service")
DESCRIBE_EVERY = 2.0   # seconds between descriptions of the pools in the store


class AttachedPool:
    """What the service knows of one attached pool."""

    def __init__(self, identity, hello):
        self.identity = identity
        self.name, self.workers, self.host = hello["pool"], hello["workers"], hello["host"]
        self.free = 0
        self.sent = self.received = hello["received"]  # tasks it got from earlier services
        self.last_seen = time.monotonic()
        self.leases = set()

    @property
    def demand(self):
        """How many more tasks this pool has asked for and not yet been sent."""
        return max(self.free - (self.sent - self.received), 0)

    def describe(self):
        """A summary for ``emews status``."""
        return {"pool": self.name, "host": self.host, "workers": self.workers,
                "tasks": len(self.leases),
                "last_heard": time.time() - (time.monotonic() - self.last_seen)}


def bind(store, expdir, settings):
    """A ROUTER socket bound as ``settings`` (:class:`~emews._config.Service`) say, with CURVE
    off loopback, recorded in the study's ``store`` (:func:`._keys.record_service`): ``(socket,
    authenticator or None, address)``."""
    from zmq.auth import load_certificate
    from zmq.auth.thread import ThreadAuthenticator

    context = zmq.Context.instance()
    sock = context.socket(zmq.ROUTER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.MAXMSGSIZE, protocol.MAX_MESSAGE)
    authenticator, keys = None, None
    try:
        if not is_loopback(settings.bind):
            keys = make_keys(expdir)
            authenticator = ThreadAuthenticator(context)
            authenticator.start()
            authenticator.configure_curve(domain="*", location=str(keys))
            public, secret = load_certificate(str(keys / "service.key_secret"))
            sock.curve_publickey, sock.curve_secretkey, sock.curve_server = public, secret, True
        port = settings.port or _previous_port(store)
        if port:
            sock.bind(f"tcp://{settings.bind}:{port}")
        else:
            port = sock.bind_to_random_port(f"tcp://{settings.bind}")
        host = settings.bind if settings.bind not in ("0.0.0.0", "*") else \
            socket.gethostname()
        address = f"tcp://{host}:{port}"
        record_service(store, expdir, address, keys)
    except BaseException:
        sock.close(0)
        if authenticator is not None:
            authenticator.stop()
        raise
    return sock, authenticator, address


def _previous_port(store):
    """The port an earlier service of this study listened on (its pools reconnect there), as
    its ``store`` recorded it; 0 when none did."""
    try:
        return int(store.meta(SERVICE)["address"].rsplit(":", 1)[1])
    except (TypeError, KeyError, ValueError):
        return 0


class ZmqService(ServiceLink):
    """The service's side on a bound ROUTER ``socket`` (see :func:`bind`) with leases of
    ``lease`` seconds; the attached pools are described in the study's ``store`` for ``emews
    status`` (meta ``pools``, every few seconds, committed with the master's next turn);
    ``study`` (``config``, ``expdir``) is what a pool is told when it says hello;
    ``authenticator`` (or ``None``) is stopped on :meth:`close`."""

    def __init__(self, socket, lease, store, study, authenticator):
        self.socket, self.lease, self.authenticator = socket, float(lease), authenticator
        self.study = dict(study, lease=self.lease)
        self.store, self.described = store, 0.0
        self.pools = {}
        self.holder = {}                   # task id -> (identity, lease deadline)
        self.earliest = math.inf           # no lease in holder ends before this
        self.to_ack = {}                   # identity -> ids returned by the last receive
        self.incoming = []                 # reports of the last receive
        self.reporter = {}                 # task id -> the identity waiting for its verdict

    def demand(self, running):
        return sum(p.demand for p in self.pools.values())

    def send(self, tasks):
        queue = list(tasks)
        for pool in sorted(self.pools.values(), key=lambda p: -p.demand):
            batch, queue = queue[:pool.demand], queue[pool.demand:]
            if not batch:
                continue
            deadline = time.monotonic() + self.lease
            self.earliest = min(self.earliest, deadline)
            for task in batch:
                self.holder[task.id] = (pool.identity, deadline)
                pool.leases.add(task.id)
            pool.sent += len(batch)
            self._send(pool.identity, "tasks",
                       tasks=[[t.id, t.params, t.run_id, t.attempt] for t in batch])
        if queue:
            raise RuntimeError("ZmqService.send: more tasks than the pools asked for")

    def receive(self):
        self._acknowledge()
        self._describe()
        self.incoming = []
        results, heard = [], False
        while True:
            try:
                frames = self.socket.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return results, heard
            heard = True
            results += self._receive(frames)

    def wait(self, timeout):
        return bool(self.socket.poll(int(timeout * 1000) + 1))

    def _acknowledge(self):
        for identity, ids in self.to_ack.items():
            self._send(identity, "ack", ids=ids)
        self.to_ack = {}

    def _receive(self, frames):
        if len(frames) != 2:
            log.warning("service: dropped a message of %d frames", len(frames))
            return []
        identity, frame = frames
        try:
            message = protocol.decode(frame)
        except protocol.BadMessage as exc:
            log.warning("service: dropped %s", exc)
            return []
        pool = self.pools.get(identity)
        if message["op"] == "hello":
            self.pools[identity] = AttachedPool(identity, message)
            log.info("service: pool %s attached (%d workers on %s)", message["pool"],
                     message["workers"], message["host"])
            self._describe(every=0)
            self._send(identity, "study", **self.study)
            return []
        if pool is None:  # a pool of an earlier service of this study, reconnected
            self._send(identity, "who")
            return []
        pool.last_seen = time.monotonic()
        op = message["op"]
        if op == "want":
            pool.free, pool.received = message["free"], message["received"]
        elif op == "heartbeat":
            deadline = time.monotonic() + self.lease
            for task_id in pool.leases:
                self.holder[task_id] = (identity, deadline)
            self._send(identity, "ack", ids=[])  # so that the pool knows the service lives
        elif op == "bye":
            del self.pools[identity]
            self._describe(every=0)
        elif op == "results":   # with the pool's request for work, after them
            pool.free, pool.received = message["free"], message["received"]
            return self._results(pool, message["results"])
        elif op == "reports":
            self._reports(pool, message["reports"])
        return []

    def _reports(self, pool, entries):
        for entry in entries:
            try:
                task_id, attempt, rank, report = protocol.report(entry)
            except protocol.BadMessage as exc:
                log.warning("service: dropped %s (from pool %s)", exc, pool.name)
                self._send(pool.identity, "verdicts", verdicts=[[entry[0], False]])
                continue
            self.reporter[task_id] = pool.identity
            self.incoming.append((task_id, attempt, rank, report))

    def answer(self, verdicts):
        by_pool = collections.defaultdict(list)
        for task_id, stop in verdicts:
            identity = self.reporter.pop(task_id, None)
            if identity is not None:
                by_pool[identity].append([task_id, bool(stop)])
        for identity, entries in by_pool.items():
            self._send(identity, "verdicts", verdicts=entries)

    def _results(self, pool, entries):
        results, acknowledged = [], self.to_ack.setdefault(pool.identity, [])
        for entry in entries:
            try:
                task_id, attempt, rank, outcome = protocol.result(entry)
            except protocol.BadMessage as exc:
                log.warning("service: dropped %s (from pool %s)", exc, pool.name)
                continue
            acknowledged.append(task_id)
            pool.leases.discard(task_id)
            self.holder.pop(task_id, None)
            results.append(Received(task_id, attempt, rank, outcome))
        return results

    def expired(self):
        now, expired = time.monotonic(), []
        if now < self.earliest:
            return expired
        self.earliest = math.inf
        for task_id, (identity, deadline) in list(self.holder.items()):
            if deadline >= now:
                self.earliest = min(self.earliest, deadline)
                continue
            del self.holder[task_id]
            pool = self.pools.get(identity)
            if pool is not None:
                pool.leases.discard(task_id)
            expired.append((task_id, pool.name if pool else "a pool that left"))
        return expired

    def withdraw(self, ids):
        return []   # a task sent to a pool is its to run

    def cancel(self):
        for identity in self.pools:
            self._send(identity, "cancel")

    def close(self):
        if self.socket.closed:
            return
        self._acknowledge()
        for identity in list(self.pools):
            self._send(identity, "stop", reason="the study ended")
        self.pools.clear()
        self.socket.close(0)
        if self.authenticator is not None:
            self.authenticator.stop()

    def _send(self, identity, op, **fields):
        self.socket.send_multipart([identity, protocol.encode(op, **fields)])

    def _describe(self, every=DESCRIBE_EVERY):
        """Describe the pools in the store when ``every`` seconds have passed since the last
        time."""
        if time.monotonic() - self.described < every:
            return
        self.described = time.monotonic()
        self.store.set_meta(POOLS, {"time": time.time(), "lease": self.lease,
                                    "pools": [p.describe() for p in self.pools.values()]})


class ZmqPool(PoolLink):
    """A pool job's side: a DEALER connected to ``address`` (with the CURVE key pair in
    ``keys`` off loopback) for ``workers`` workers. It gives up when the service has been silent
    for ``give_up`` seconds."""

    def __init__(self, workers, address, keys, give_up):
        self.workers = workers
        self.name = f"{socket.gethostname()}:{os.getpid()}"
        self.socket = zmq.Context.instance().socket(zmq.DEALER)
        self.socket.setsockopt(zmq.LINGER, 0)
        if keys:   # this pool's key pair, and the service's public key
            from zmq.auth import load_certificate

            public, secret = load_certificate(str(Path(keys, "pool.key_secret")))
            self.socket.curve_publickey, self.socket.curve_secretkey = public, secret
            self.socket.curve_serverkey = load_certificate(str(Path(keys, "service.key")))[0]
        self.socket.connect(address)
        self.give_up = give_up
        self.received, self.asked = 0, None
        self.unacked = {}                          # task id -> result entry
        self.backlog = collections.deque()         # tasks received, not yet handed out
        self.said = None
        self.heard = time.monotonic()
        self.study = None
        self.answers = []                          # (task id, stop) not yet taken

    carries_reports = True

    def report(self, entries):
        self._send("reports", reports=[[task.id, task.attempt, rank, one.to_wire()]
                                       for task, rank, one in entries])

    def verdicts(self):
        answers, self.answers = self.answers, []
        return answers

    def learn_study(self):
        self._hello()
        while self.study is None:
            self._check_alive()
            self._listen(0.05)
        return self.study

    def report_and_take(self, finished, free, ask, renew):
        """Results go with the pool's request for work in one message: a service that reads
        a result knows at once that its worker is free (a thaw waits for that slot)."""
        self._listen(0)
        resend = self.asked is None   # after a hello: every result not yet acknowledged
        for task, rank, outcome in finished:
            self.unacked[task.id] = [task.id, task.attempt, rank, outcome.to_wire()]
        taken = [self.backlog.popleft() for _ in range(min(free, len(self.backlog)))]
        wanted = max(free - len(taken) - len(self.backlog), 0) if ask else 0
        results = list(self.unacked.values()) if resend else \
            [self.unacked[t.id] for t, _, _ in finished]
        if results:
            self._send("results", results=results, **self._request(wanted))
        else:
            self._ask(wanted)
        if renew:
            self._send("heartbeat")
        self._check_alive()
        return taken

    def wait(self, timeout):
        return self._listen(timeout)

    def instruction(self):
        return self.said

    def owed(self):
        return len(self.unacked) + len(self.backlog)

    def close(self):
        if not self.socket.closed:
            self._send("bye")
            self.socket.close(0)

    def _hello(self):
        """Introduce this pool (again, to a restarted service: with every unacknowledged
        result and what it asks for)."""
        self._send("hello", pool=self.name, workers=self.workers, host=socket.gethostname(),
                   pid=os.getpid(), received=self.received)
        self.asked = None   # the next exchange asks again, with every unacknowledged result

    def _ask(self, free):
        """Tell the service how many tasks this pool wants, unless it knows already: what it
        sent for the last request is counted off that request's ``free`` on its side."""
        if self.asked is not None and free == self.asked[0] - (self.received - self.asked[1]):
            return
        self._send("want", **self._request(free))

    def _request(self, free):
        """The fields of a request for ``free`` tasks (of a ``want`` or ``results`` message)."""
        self.asked = (free, self.received)
        return {"free": free, "received": self.received}

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
            self.received += len(message["tasks"])
            held = {task.id for task in self.backlog}
            self.backlog.extend(Task(i, params, run_id, attempt) for i, params, run_id, attempt
                                in message["tasks"] if i not in held)
        elif op == "ack":
            for task_id in message["ids"]:
                self.unacked.pop(task_id, None)
        elif op == "verdicts":
            self.answers.extend((task_id, stop) for task_id, stop in message["verdicts"])
        elif op == "cancel":
            self.said = (CANCEL, "the study was cancelled")
        elif op == "stop":
            self.said = (STOP, message["reason"])
        elif op == "who":
            self._hello()
        elif op == "study":
            self.study = {"config": message["config"], "expdir": message["expdir"],
                          "lease": float(message["lease"])}

    def _check_alive(self):
        if time.monotonic() - self.heard > self.give_up:
            raise EmewsError(f"the service has not answered for {self.give_up:g} s; giving up")

    def _send(self, op, **fields):
        self.socket.send(protocol.encode(op, **fields))
