"""Child processes that never outlive the process that started them (Linux)."""

import ctypes
import ctypes.util
import signal

PR_SET_PDEATHSIG = 1


def die_with_parent(sig=signal.SIGKILL):
    """Ask the kernel to send ``sig`` to this process when its parent dies.

    Meant as a ``preexec_fn``: it runs in the child between fork and exec, and the setting
    survives the exec.
    """
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
