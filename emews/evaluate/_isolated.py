"""The worker's handle on its nanny (:mod:`.nanny`), the child that runs ``py`` objectives.

::

    worker: Nanny.run(task, watch)                  child: python, emews.evaluate._nanny.main
      start (once, and after each death): Popen in a new session, MPI variables removed,
            a socketpair (pass_fds) and a pipe for fds 1 and 2
      --task {objective, params, context}-->        imports the objective (once), calls it
      <--{report} ... -->{prune}------------       each emews.report: watch.report(Report)
      <--reply {value, metrics, objectives}         (after flushing its output)
          | {error}
          | {pruned: {value, step}}
      <--stdout + stderr (the pipe)----------       copied to the worker's fds 1 and 2' file,
                                                    the last 64 KiB kept as this run's tail
      every ~0.1 s: has the child died? watch.stop_reason()? -> kill the group, fail the run

A dead child fails its run (docs/src/faults.md gives the reasons); the next run starts a fresh one.
"""

import os
import select
import socket
import subprocess
import sys
import time
import weakref

from . import _channel as channel, _process as process
from ._base import EvaluationFailed
from ._reporting import Pruned, answered
from ._model_output import TAIL_BYTES, Value, decode_tail

BOOT = "import sys; sys.path.append(sys.argv[1]); from {} import main; sys.exit(main(sys.argv[2:]))"


class Nanny:
    """One child interpreter, started on first use; ``run`` one task at a time."""

    def __init__(self, grace):
        self.grace, self.child, self.pid, self.tail = grace, None, None, bytearray()

    def run(self, task, watch):
        """The value the child computed for ``task``; raises like an implementation's run."""
        # an idle child that died, or whose end of the channel is closed (it is dying: a
        # process with threads is reaped only once they have all ended): start afresh
        if self.child is not None and (self.child.poll() is not None
                                       or select.select([self.sock], [], [], 0)[0]):
            process.kill_group(self.child, 0)
            self._pump()
            self._end()
        if self.child is None:
            self._start()
        sys.stdout.flush()
        sys.stderr.flush()
        self._pump()
        self.tail = bytearray()
        try:
            channel.send(self.sock, dict(task, sys_path=list(sys.path)))
        except OSError:
            pass  # the child is gone: the wait below finds out how
        try:
            reply = self._wait(watch)
        except (KeyboardInterrupt, SystemExit):  # this process is interrupted: drop the run
            self.close()
            raise
        if "value" in reply:
            return Value(reply["value"], reply.get("metrics"), reply.get("objectives", ()))
        if "pruned" in reply:
            raise Pruned(reply["pruned"]["value"], reply["pruned"]["step"])
        raise EvaluationFailed(reply["error"], decode_tail(self.tail) or reply.get("tail"))

    def close(self):
        """Stop the child and its process group; safe to call twice."""
        if self.child is not None:
            process.kill_group(self.child, self.grace)
            self._end()

    def _start(self):
        ours, theirs = socket.socketpair()
        read_fd, write_fd = os.pipe()
        try:
            self.child = process.start(
                [*boot(sys.executable, "emews.evaluate._nanny"), str(theirs.fileno()),
                 str(os.getpid())],
                stdin=subprocess.DEVNULL, stdout=write_fd, stderr=write_fd,
                pass_fds=(theirs.fileno(),), env=process.child_environ())
        finally:
            theirs.close()
            os.close(write_fd)
        os.set_blocking(read_fd, False)
        self.pid, self.sock, self.output, self.reader = self.child.pid, ours, read_fd, \
            channel.Reader()
        self.finalizer = weakref.finalize(self, _reap, self.child, ours, read_fd)

    def _wait(self, watch):
        """The child's reply; on its death or a stop, kill its group and raise."""
        next_check = time.monotonic() + process.POLL
        while True:
            watched = [self.sock] + ([self.output] if self.output is not None else [])
            ready, _, _ = select.select(watched, [], [], process.POLL)
            if self.output in ready:
                self._pump()
            if self.sock in ready:
                messages = self.reader.read(self.sock)
                if messages is None:   # it died (with our task unread, maybe)
                    self._died()
                reply = answered(self.sock, messages, watch)
                if reply is not None:
                    self._pump()
                    return reply
            if self.child.poll() is not None:
                self._died()
            if time.monotonic() >= next_check:
                next_check = time.monotonic() + process.POLL
                reason = watch.stop_reason()
                if reason is not None:
                    process.kill_group(self.child, watch.grace)
                    self._pump()
                    self._note(f"emews: {reason}: the run was killed\n".encode())
                    self._end()
                    watch.stop(reason, decode_tail(self.tail))

    def _died(self):
        try:
            code = self.child.wait(timeout=self.grace)
        except subprocess.TimeoutExpired:  # the channel closed, yet the child lives on
            process.kill_group(self.child, self.grace)
            code = self.child.returncode
        process.kill_group(self.child, 0)  # what the model started dies with it
        self._pump()
        self._end()
        raise EvaluationFailed(f"the model {process.describe_exit(code)}",
                               decode_tail(self.tail))

    def _pump(self):
        """Copy what the child wrote to this process's stdout and to the tail, without blocking."""
        while self.output is not None:
            try:
                chunk = os.read(self.output, 65536)
            except BlockingIOError:
                return
            if not chunk:  # every writer has closed the pipe
                os.close(self.output)
                self.output = None
                return
            self._note(chunk)

    def _note(self, chunk):
        try:
            rest = chunk
            while rest:
                rest = rest[os.write(1, rest):]
        except OSError:
            pass  # this process's own output is gone; the tail still has it
        self.tail += chunk
        if len(self.tail) > 2 * TAIL_BYTES:
            del self.tail[:-TAIL_BYTES]

    def _end(self):
        self.finalizer.detach()
        self.sock.close()
        if self.output is not None:
            os.close(self.output)
        self.child = self.output = None


def _reap(child, sock, output):
    """Kill a nanny whose handle was dropped without ``close()`` (or at interpreter exit)."""
    process.kill_group(child, 0)
    sock.close()
    try:
        os.close(output)
    except OSError:
        pass


def boot(python, module):
    """The command that runs ``module.main(ARGS)`` in a fresh ``python`` (ARGS: the words that
    follow), with the directory that holds this emews appended to its ``sys.path`` (emews may be
    importable here only through this process's own ``sys.path``)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return [python, "-c", BOOT.format(module), root]
