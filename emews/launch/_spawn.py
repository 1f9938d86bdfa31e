"""The launcher: run a prepared experiment under ``mpiexec -n PROCS`` and pass signals on.

::

    emews run CONFIG (procs > 1) --spawn()--> mpiexec -n PROCS python -m emews run --execute EXP
        SIGINT / SIGTERM here    -----------> one SIGINT to the job (its clean Ctrl-C)
        the job's exit status    <----------- 0: its Result; else Interrupted / EmewsError
"""

import functools
import os
import re
import shutil
import signal
import subprocess
import sys
import threading

from .._errors import ConfigError, EmewsError, FailureAlreadyReported, Interrupted
from ..evaluate._deathsig import set_death_signal
from ..evaluate._launcher import default_mpiexec
from .._experiment import read_store
from ..inspect._progress import TERMINAL_VARIABLE
from .._result import interrupted, result_of, stored_count
from .._status import Status
from ..store import study_store
from ..store._lock import TOKEN_VARIABLE

# what an MPI library's launcher sets (Hydra, PMIx, Open MPI's), not a scheduler's rank variables
# (SLURM_PROCID: set in a batch script's own shell too, where ``emews run`` starts its own job)
MPI_ENVIRONMENT = ("PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE")
SPAWNED_VARIABLE = "EMEWS_SPAWNED"   # set for a job that ``emews run`` started: it reports
# MPICH's (Hydra's) lines about an interrupted job: not shown under emews's own line
MPI_NOISE = re.compile(rb"\s*$|\[mpiexec@[^]]*\] |=+$|=   |YOUR APPLICATION TERMINATED WITH "
                       rb"|This typically refers to a problem with your application|Please see "
                       rb"the FAQ page for debugging suggestions")
RELAY_GRACE = 10   # seconds the job's output may go on after it ended (a process it left)


def under_mpiexec():
    """True when this process was started by an MPI launcher."""
    return any(name in os.environ for name in MPI_ENVIRONMENT)


def spawn(expdir, cfg, lock):
    """Run the prepared experiment under ``mpiexec -n procs``, holding its lock meanwhile.
    SIGINT and SIGTERM reach the job (in its own session) once, as one SIGINT; then what it
    left unfinished is cancelled and :class:`~emews._errors.Interrupted` raised. A job that
    ends before its study did (a rank died) raises an :class:`~emews._errors.EmewsError`."""
    mpiexec = cfg.system.mpiexec or default_mpiexec()
    command = [runnable(mpiexec), *cfg.system.mpiexec_args, "-n", str(cfg.system.procs),
               sys.executable, "-m", "emews", "run", "--execute", str(expdir)]
    env = dict(os.environ, **{TOKEN_VARIABLE: lock.token, SPAWNED_VARIABLE: "1"})
    if sys.stdout.isatty():
        env[TERMINAL_VARIABLE] = "1"
    process = subprocess.Popen(command, env=env, start_new_session=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               preexec_fn=functools.partial(set_death_signal, os.getpid(),
                                                            signal.SIGINT))
    received = []
    relays = [threading.Thread(target=relay, args=(pipe, fd, received), daemon=True)
              for pipe, fd in ((process.stdout, 1), (process.stderr, 2))]
    for thread in relays:
        thread.start()

    def pass_on(signum, frame):
        if not received:
            process.send_signal(signal.SIGINT)
        received.append(signum)

    previous = {sig: signal.signal(sig, pass_on) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        code = process.wait()
        for thread in relays:   # the job's last lines, before this reports on it
            thread.join(RELAY_GRACE)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if received or code in (128 + signal.SIGINT, 128 + signal.SIGTERM):
        cancel_unfinished(expdir, cfg.system.storage)
        raise interrupted(expdir, received[0] if received else code - 128,
                          stored_count(expdir, cfg))
    if code == 0:
        return result_of(expdir, cfg)
    if read_store(expdir, lambda store: store.meta("final"), cfg) is not None:   # it ended
        result = result_of(expdir, cfg)
        if result.all_failed:
            return result  # the caller reports it
        raise FailureAlreadyReported(code)
    raise EmewsError(f"the MPI job ended with status {code} before the study did (a rank died "
                     f"or was killed); {stored_count(expdir, cfg)} evaluations are stored; resume "
                     f"with: emews run --resume {expdir}")


def relay(pipe, fd, received):
    """Copy the job's output from ``pipe`` to this process's ``fd`` as it comes; once an
    interrupt was ``received``, leave out :data:`MPI_NOISE` lines. Output that ``fd`` no longer
    takes (a closed pipe) is dropped: the job is never blocked on it."""
    pending = b""

    def write(data):
        nonlocal fd
        try:
            if fd is not None and data:
                os.write(fd, data)
        except OSError:
            fd = None

    while chunk := os.read(pipe.fileno(), 65536):
        pending += chunk
        *lines, pending = pending.split(b"\n")
        write(b"".join(line + b"\n" for line in lines
                       if not (received and MPI_NOISE.match(line))))
        if not received:   # a progress line drawn with \r, as it comes
            write(pending)
            pending = b""
    if not MPI_NOISE.match(pending):
        write(pending)
    pipe.close()


def cancel_unfinished(expdir, storage):
    """Cancel what an interrupted job left ``queued`` or ``running`` (mpiexec may have killed
    rank 0 before it recorded its cancellations), with the interrupt's reason."""
    store = study_store(expdir, storage, create=False)
    try:
        store.cancel([row["id"] for row in store.rows(Status.QUEUED, Status.RUNNING)],
                     Interrupted.REASON)
        store.commit()
    finally:
        store.close()


def runnable(mpiexec):
    """``mpiexec`` when it names a program (a path, or a name on PATH); else a ConfigError
    naming ``[system].mpiexec``."""
    if shutil.which(mpiexec) is None:
        raise ConfigError("[system].mpiexec", "no mpiexec found beside the Python interpreter or "
                          "on PATH (install the 'mpich' wheel, or set it to one)", mpiexec)
    return mpiexec
