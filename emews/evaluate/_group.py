"""A ``py`` evaluation of several ranks: k processes that share an MPI communicator.

::

    worker (leading rank): run_group(task, context, watch)
      listens (127.0.0.1, or every interface when the hosts are other nodes: the peer must
      send the task file's token), writes RUN_DIR/group-task.json (mode 0600), starts
        LAUNCHER -n k ... python -c _isolated.BOOT ROOT RUN_DIR/group-task.json -> model.log
      each process (emews.evaluate._group_rank): its variables (launcher.rank_environ),
        emews.comm() = MPI.COMM_WORLD (size k), calls the objective as the nanny does
        rank 0: connects, sends the token, its reports (emews.report) and its reply
        others: their return values are ignored; an exception exits 1
      <--{report} -->{prune} ... <--reply {value} | {error} | {pruned}
      the launcher's exit: 0 after a value -> the value; else the evaluation fails

docs/src/parallel-evals.md ("Faults") says how a process's death, a timeout, a cancel, a prune
or an error reply ends the evaluation.
"""

import json
import os
import re
import secrets
import select
import socket
import subprocess
import sys

from . import _channel as channel, _process as process
from ._base import EvaluationFailed
from ._isolated import boot
from ._launcher import Launcher, python, remote_hosts
from ._reporting import Pruned, answered
from ._model_output import Value, tail

TASK_FILE = "group-task.json"
TELLING = re.compile(r"signal|killed|exit (code|string|status)|error", re.IGNORECASE)


def run_group(task, context, watch):
    """The value of ``task`` (the nanny's task) computed by ``context.resources.ranks``
    processes; raises like an implementation's ``run``."""
    resources = context.resources
    launcher = Launcher.from_environ()
    remote = bool(remote_hosts(resources.hosts))
    listener = socket.create_server(("" if remote else "127.0.0.1", 0))
    run_dir = context.run_dir
    token = secrets.token_hex(16)
    task_file = run_dir / TASK_FILE
    address = socket.gethostname() if remote else "127.0.0.1"
    fd = os.open(task_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(dict(task, sys_path=list(sys.path), token=token,
                       address=[address, listener.getsockname()[1]]), out)
    log = run_dir / "model.log"
    env = process.child_environ(launcher.environ(resources))
    command = [*launcher.prefix(resources), *boot(python(), "emews.evaluate._group_rank"),
               str(task_file)]
    with open(log, "ab") as out:
        child = process.start(command, cwd=run_dir, env=env, stdout=out,
                              stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        return _Exchange(child, listener, token, watch, log).result()
    finally:
        listener.close()
        task_file.unlink(missing_ok=True)


class _Exchange:
    """The worker's side of one group run: rank 0's connection, its frames, the launcher."""

    def __init__(self, child, listener, token, watch, log):
        self.child, self.listener, self.token = child, listener, token
        self.watch, self.log = watch, log
        self.sock, self.reader = None, channel.Reader(token)

    def result(self):
        reply = self._reply()
        if reply is None:
            self._fail(f"the model's launcher {process.describe_exit(self.child.returncode)} "
                       f"before rank 0 replied: {self._launcher_says()}")
        if "value" not in reply:   # an error or a prune: the other ranks are not waited for
            process.kill_group(self.child, self.watch.grace)
            if "pruned" in reply:
                raise Pruned(reply["pruned"]["value"], reply["pruned"]["step"])
            self._fail(reply["error"])
        code = self._wait_exit()
        if code != 0:
            self._fail(f"the model's launcher {process.describe_exit(code)} after rank 0 "
                       f"replied: {self._launcher_says()}")
        return Value(reply["value"], reply.get("metrics"), reply.get("objectives", ()))

    def _launcher_says(self):
        """The log's last line about how a process ended (mpiexec: ``... EXIT STRING: Killed
        (signal 9)``; srun: ``srun: error: NODE: task 1: Killed``), else its last line."""
        lines = [line.strip() for line in tail(self.log).splitlines() if line.strip()]
        telling = [line for line in lines if TELLING.search(line)]
        return (telling or lines or ["no output"])[-1]

    def _fail(self, reason):
        self._close()
        raise EvaluationFailed(reason, tail(self.log))

    def _close(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def _check(self):
        """Kill the group and raise when the watch says stop."""
        reason = self.watch.stop_reason()
        if reason is not None:
            process.kill_group(self.child, self.watch.grace)
            with open(self.log, "a") as note:
                note.write(f"emews: {reason}: the run was killed\n")
            self._close()
            self.watch.stop(reason, tail(self.log))

    def _reply(self):
        """Rank 0's reply, answering its reports meanwhile; None when the launcher ended first."""
        while True:
            sources = [self.sock if self.sock is not None else self.listener]
            ready, _, _ = select.select(sources, [], [], process.POLL)
            if self.listener in ready and self.sock is None:
                self.sock, _ = self.listener.accept()
                ready = []
            if self.sock is not None and self.sock in ready:
                messages = self.reader.read(self.sock)
                if messages is None:   # closed, or not our rank 0 (no token): drop it
                    self._close()
                    self.reader = channel.Reader(self.token)
                elif (reply := answered(self.sock, messages, self.watch)) is not None:
                    return reply
            if self._launcher_gone():
                process.forget(self.child)
                return None
            self._check()

    def _launcher_gone(self):
        """True when the launcher has ended and rank 0 has no connection open or waiting to be
        accepted (it may connect, reply and exit between one look at the listener and the
        next)."""
        if self.sock is not None or self.child.poll() is None:
            return False
        waiting, _, _ = select.select([self.listener], [], [], 0)
        return not waiting

    def _wait_exit(self):
        while True:
            try:
                code = self.child.wait(timeout=process.POLL)
            except subprocess.TimeoutExpired:
                self._check()
                continue
            process.forget(self.child)
            self._close()
            return code
