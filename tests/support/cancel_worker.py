"""Under ``mpiexec -n 2``: rank 0 hands rank 1 a hanging point, cancels it with a CANCEL
message once the model runs (its child's pid file exists), then hands it a quick point. Then
a late CANCEL, naming that quick run after it finished, and a point that sleeps 0.5 s: the late
call must not touch it. Rank 0 prints ``result: status|error|value`` of the three results and
the hanging model's pids. Argument: a directory for the pid files."""

import json
import os
import sys
import time

from mpi4py import MPI

from emews.evaluate import Objective, Outcome
from emews.pools._mpi import CANCEL, RESULT, TASKS, serve

comm = MPI.COMM_WORLD
directory = sys.argv[1]
pidfile = os.path.join(directory, "hang.pid")
if comm.Get_rank() == 0:
    comm.send([(1, json.dumps({"mode": "hang", "pidfile": pidfile}), "RUN1")], dest=1, tag=TASKS)
    while not os.path.exists(pidfile + ".child"):
        time.sleep(0.05)
    comm.send(["RUN1"], dest=1, tag=CANCEL)
    _, _, first = comm.recv(source=1, tag=RESULT)
    comm.send([(2, '{"x": 2.0}', "RUN2")], dest=1, tag=TASKS)
    _, _, second = comm.recv(source=1, tag=RESULT)
    comm.send(["RUN2"], dest=1, tag=CANCEL)        # too late: RUN2 has finished
    comm.send([(3, '{"mode": "sleep", "seconds": 0.5, "x": 3.0}', "RUN3")], dest=1, tag=TASKS)
    _, _, third = comm.recv(source=1, tag=RESULT)
    comm.send(None, dest=1, tag=TASKS)
    for outcome in map(Outcome.from_wire, (first, second, third)):
        print(f"result: {outcome.status}|{outcome.error}|{outcome.value}")
    print("pids:", open(pidfile).read(), open(pidfile + ".child").read(), flush=True)
else:
    serve(comm, Objective("py", objective="faulty:run", expdir=directory, grace=0.5))
