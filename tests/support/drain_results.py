"""Under mpiexec: every worker answers its tasks at once and says so through the FIFO given as
argument (not through MPI, which would move the messages along); rank 0 then prints how many
results one nonblocking ``MPIPool.collect`` returned, and how many tasks it had handed out."""

import sys

from mpi4py import MPI

from emews.evaluate import Outcome
from emews.pools._mpi import HELLO, RESULT, TASKS, MPIPool
from emews.pools._base import Task

comm = MPI.COMM_WORLD
fifo = sys.argv[1]
if comm.Get_rank() == 0:
    pool = MPIPool(comm, slots_per_worker=4)
    pool.submit([Task(i, '{"x": 1}', f"RUN{i:06d}") for i in range(pool.free_slots())])
    signals = 0
    while signals < comm.Get_size() - 1:
        with open(fifo, "rb") as sent:  # blocks until a worker opens it; read to its close
            signals += len(sent.read())
    print(len(pool.collect(block=False)), pool.slots, flush=True)
    while pool.running:
        pool.collect()
    pool.close()
else:
    comm.send(MPI.Get_processor_name(), dest=0, tag=HELLO)   # as serve() does first
    for task_id, _, _ in comm.recv(source=0, tag=TASKS):
        comm.send((comm.Get_rank(), task_id, Outcome(1.0).to_wire()), dest=0, tag=RESULT)
    with open(fifo, "wb") as sent:
        sent.write(b".")
    comm.recv(source=0, tag=TASKS)
