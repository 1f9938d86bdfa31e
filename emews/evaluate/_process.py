"""Model processes: a clean environment, their own process group, a watched wait, a sure kill.

::

    worker ── Popen(start_new_session) ──> model process group (nanny, or model.sh and children)
       │  every ~0.1 s: Watch.stop_reason()  (a timeout, or ``cancelled()`` returned True)
       └─ kill_group: SIGTERM the group, ``grace`` s, SIGKILL the group

Every live group is tracked, so that :func:`stop_on_signals` (SIGTERM/SIGINT of a worker) and
``Objective.close()`` leave no model process behind; each starts through :mod:`.deathsig`, so
that it dies with a worker killed with SIGKILL too.
"""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from ._base import CANCELLED, Cancelled, EvaluationFailed
from ._launcher import is_python

KILL_GRACE = 5.0  # seconds between SIGTERM and SIGKILL
POLL = 0.1  # seconds between checks of a running model
MPI_VARIABLES = ("PMI_", "PMIX_", "OMPI_", "HYDRA_", "HYDI_", "MPI_LOCALRANKID",
                 "MPI_LOCALNRANKS", "MPIR_", "PALS_")
DEATHSIG = str(Path(__file__).with_name("_deathsig.py"))

_LIFELINE = None  # (pid, read end, write end)
_live = set()
_live_lock = threading.RLock()  # re-entrant: the signal handler may interrupt a holder


class Watch:
    """What may end a run early: ``timeout`` seconds (None: never), ``cancelled()``, and
    ``report(Report)`` (``None``: reports go nowhere), whose True answer stops the run (the
    pruner's verdict)."""

    def __init__(self, timeout=None, grace=KILL_GRACE, cancelled=None, report=None):
        self.timeout, self.grace, self.cancelled, self.report = timeout, grace, cancelled, report
        self.deadline = time.monotonic() + timeout if timeout else None

    def stop_reason(self):
        """``'cancelled'``, ``'timeout after N s'``, or None while the run may go on."""
        if self.cancelled is not None and self.cancelled():
            return CANCELLED
        if self.deadline is not None and time.monotonic() >= self.deadline:
            return f"timeout after {self.timeout:g} s"
        return None

    def stop(self, reason, log_tail):
        """Raise what ending the run for ``reason`` means."""
        if reason == CANCELLED:
            raise Cancelled(log_tail)
        raise EvaluationFailed(reason, log_tail)


def child_environ(extra=None):
    """This process's environment without the MPI launcher's variables (a model process must
    never initialise MPI as if it were one of the study's ranks), plus ``extra``."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith(MPI_VARIABLES)},
            **(extra or {})}


def start(command, **popen):
    """Start ``command`` in a new session (its own process group) and track it; through
    :mod:`.deathsig`, so that the group dies with this process, where this process is a Python
    interpreter that can run it (not always so in Swift/T's Turbine)."""
    if is_python(sys.executable):
        fd = _lifeline()
        command = [sys.executable, "-I", "-S", DEATHSIG, str(os.getpid()), str(fd),
                   str(KILL_GRACE), *command]
        popen["pass_fds"] = (*popen.get("pass_fds", ()), fd)
    process = subprocess.Popen(command, start_new_session=True, **popen)
    with _live_lock:
        _live.add(process)
    return process


def _lifeline():
    """The read end of a pipe that only this process writes to (it never does): it reaches its
    end when this process dies, which the guards of :mod:`.deathsig` wait for."""
    global _LIFELINE
    with _live_lock:
        if _LIFELINE is None or _LIFELINE[0] != os.getpid():
            _LIFELINE = (os.getpid(), *os.pipe())  # neither end is inherited unless passed
        return _LIFELINE[1]


def forget(process):
    """Stop tracking an ended process."""
    with _live_lock:
        _live.discard(process)


def kill_group(process, grace=KILL_GRACE):
    """SIGTERM ``process``'s group, wait up to ``grace`` s for it, then SIGKILL the group."""
    kill_groups([process], grace)
    process.wait()


def _signal_group(process, sig):
    try:
        os.killpg(process.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def wait(process, watch, log):
    """Wait for ``process`` under ``watch``; its exit status. On a stop, kill its group, note
    the reason in ``log`` (a path) and raise (see :meth:`Watch.stop`). With ``watch.report``,
    the report lines of ``log`` go to it (:class:`~.reporting.LogReports`); when one stops the
    run, its group is killed and :class:`~.reporting.Pruned` raised."""
    from ._reporting import LogReports, Pruned
    from ._model_output import tail

    reports = LogReports(log, watch.report) if watch.report else None
    while True:
        try:
            code = process.wait(timeout=POLL if watch.deadline or watch.cancelled or reports
                                else None)
        except subprocess.TimeoutExpired:
            code = None
        try:
            if reports is not None:
                reports.poll()
        except Pruned:
            kill_group(process, watch.grace)
            with open(log, "a") as note:
                note.write("emews: the pruner stopped the run: it was killed\n")
            raise
        if code is not None:
            _signal_group(process, signal.SIGKILL)  # what the model left running dies with it
            forget(process)
            return code
        reason = watch.stop_reason()
        if reason is None:
            continue
        kill_group(process, watch.grace)
        with open(log, "a") as note:
            note.write(f"emews: {reason}: the run was killed\n")
        watch.stop(reason, tail(log))


def describe_exit(code):
    """``exited with status 3`` or ``was killed by signal 11 (SIGSEGV)``."""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = "unknown"
        return f"was killed by signal {-code} ({name})"
    return f"exited with status {code}"


def kill_groups(processes=None, grace=1.0):
    """Kill the groups of ``processes`` (default: every tracked model process): SIGTERM,
    ``grace`` s, SIGKILL; they are no longer tracked."""
    if processes is None:
        with _live_lock:
            processes = list(_live)
    for process in processes:
        _signal_group(process, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for process in processes:
        try:
            process.wait(timeout=max(deadline - time.monotonic(), 0))
        except subprocess.TimeoutExpired:
            pass
    for process in processes:
        _signal_group(process, signal.SIGKILL)
        forget(process)


def stop_on_signals(signals=(signal.SIGTERM, signal.SIGINT)):
    """On SIGTERM or SIGINT: kill every model process group, then exit with 128 + signal."""

    def handler(signum, frame):
        kill_groups()
        try:
            os.write(2, f"emews: {signal.Signals(signum).name}: the model processes of "
                        f"worker {os.getpid()} were killed\n".encode())
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(128 + signum)

    for sig in signals:
        signal.signal(sig, handler)
