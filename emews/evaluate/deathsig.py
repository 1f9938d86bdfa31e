"""Die with the parent: ``PR_SET_PDEATHSIG = SIGKILL`` for this process, then exec a command.

Run by path, with no imports from emews, as ``python -I -S deathsig.py PARENT_PID COMMAND...``:
app and container runs start through it, so that a worker killed with SIGKILL leaves no model
shell behind (the setting survives ``exec``). :func:`set_death_signal` is also what the nanny
calls on itself. Elsewhere than Linux it does nothing.
"""

import ctypes
import ctypes.util
import os
import signal
import sys

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


def main(argv):
    """``PARENT_PID COMMAND...``: set the death signal and exec COMMAND."""
    if not set_death_signal(int(argv[0])):
        return 137
    os.execvp(argv[1], argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
