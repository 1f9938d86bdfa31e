"""Die with the worker: the shim every model process group starts through (docs/src/faults.md).

Run by path, with no imports from emews, as ``python -I -S _deathsig.py WORKER_PID LIFELINE_FD
GRACE COMMAND...``, in the new session that the worker made for the run. It asks for
``PR_SET_PDEATHSIG = SIGKILL`` (kept across ``exec``), forks a guard that stops the whole group
once LIFELINE_FD, a pipe whose only writer is the worker, reaches its end (SIGTERM first, which a
launcher such as ``srun`` passes on to what runs outside the group, then SIGKILL after GRACE
seconds), then execs COMMAND (the nanny, or ``bash model.sh ...``) in its own place.
"""

import ctypes
import ctypes.util
import os
import signal
import sys
import time

PR_SET_PDEATHSIG = 1


def set_death_signal(parent_pid, sig=signal.SIGKILL):
    """Ask the kernel for ``sig`` when the parent dies; False when the parent is gone already."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        except (OSError, AttributeError):
            pass
    return os.getppid() == parent_pid


def guard(lifeline, grace):
    """Fork a process that stops this process group once ``lifeline`` reaches its end: SIGTERM,
    then SIGKILL ``grace`` seconds later."""
    if os.fork():
        os.close(lifeline)
        return
    try:
        os.closerange(0, lifeline)
        os.closerange(lifeline + 1, 1 << 16)
        while os.read(lifeline, 4096):
            pass
        signal.signal(signal.SIGTERM, signal.SIG_IGN)   # the guard itself waits out the grace
        os.killpg(0, signal.SIGTERM)
        time.sleep(grace)
        os.killpg(0, signal.SIGKILL)
    finally:
        os._exit(0)


def main(argv):
    """``WORKER_PID LIFELINE_FD GRACE COMMAND...``: see the module docstring."""
    if not set_death_signal(int(argv[0])):
        return 137
    guard(int(argv[1]), float(argv[2]))
    os.execvp(argv[3], argv[3:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
