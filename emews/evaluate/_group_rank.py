"""One process of a ``py`` evaluation of several ranks, started k times by the site's launcher
with the worker's task file: the docstring of :mod:`.group` draws what each does.
"""

import json
import os
import socket
import sys
import time

from . import _base as base, _channel as channel
from ._launcher import rank_environ
from ._nanny import report_sender, run

CONNECT_TIMEOUT = 60.0   # seconds rank 0 tries to reach its worker


def main(argv):
    """One process of the group: ``TASK_FILE`` (see the module); its exit status."""
    from mpi4py import MPI

    os.environ.update(rank_environ())
    with open(argv[0]) as handle:
        task = json.load(handle)
    comm = base._group_comm = MPI.COMM_WORLD
    if comm.Get_rank() != 0:
        reply = run(task, {})
        sys.stdout.flush()
        if "error" in reply:
            print(f"emews: rank {comm.Get_rank()} failed: {reply['error']}", file=sys.stderr,
                  flush=True)
            return 1
        return 0
    sock = _connect(tuple(task["address"]))
    channel.send(sock, {"token": task["token"]})
    reply = run(task, {}, report_sender(sock))
    sys.stdout.flush()
    sys.stderr.flush()
    channel.send(sock, reply)
    sock.close()
    return 0


def _connect(address):
    deadline = time.monotonic() + CONNECT_TIMEOUT
    while True:
        try:
            sock = socket.create_connection(address, timeout=CONNECT_TIMEOUT)
            sock.settimeout(None)
            return sock
        except OSError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.2)
