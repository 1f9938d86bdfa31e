"""Under mpiexec: master turns that find several results ready at once.

Rank 0 runs the real master and ME thread (``emews.core._me``, async mode, one slot per worker)
on an MPI pool whose ``collect`` returns only once every running task is back, so that each
turn holds one result per worker. The algorithm (:class:`TellRecorder`) writes each ``tell``
it gets as one JSON line to ``told.jsonl``; every SQL statement the store runs goes to
``trace.sql``, one per line. The workers run the real worker loop on the ``echo`` model.

usage: ``mpiexec -n N python burst_turn.py DIR BUDGET`` (``DIR`` holds ``space.json``; the
store is ``DIR/results.db``; ``burst_turn`` must be importable, as from ``tests/support``)
"""

import json
import sys
from pathlib import Path

from emews.algorithms.random_search import RandomSearch


class TellRecorder(RandomSearch):
    """Random search that appends each tell (its points and values) to ``record``; it keeps
    no points ready, so that the ME proposes one point per result it is told."""

    ready_share = 0.0

    def __init__(self, space, seed=None, record=None):
        super().__init__(space, seed)
        self.record = record

    def tell(self, points, values):
        with open(self.record, "a") as handle:
            handle.write(json.dumps({"points": points, "values": values}) + "\n")


def main(directory, budget):
    from mpi4py import MPI

    from emews import eqpy
    from emews.core._algorithm import Stopper
    from emews.core._master import Master
    from emews.core._plan import MasterPlan
    from emews.evaluate import Objective
    from emews.pools._mpi import MPIPool, serve
    from emews.store import SQLiteStore

    class BurstPool(MPIPool):
        """An MPI pool that hands back results in bursts: all running tasks at once."""

        def collect(self, block=True):
            finished = []
            while self.running:
                finished += super().collect(block=True)
            return finished

    comm = MPI.COMM_WORLD
    if comm.Get_rank() > 0:
        serve(comm, Objective(impl="echo", expdir=directory))
        return
    pool = BurstPool(comm)
    store = SQLiteStore(directory / "results.db")
    trace = open(directory / "trace.sql", "w")
    store.db.set_trace_callback(lambda sql: trace.write(" ".join(sql.split()) + "\n"))
    settings = directory / "settings.json"
    settings.write_text(json.dumps({
        "algorithm": "burst_turn:TellRecorder", "space": str(directory / "space.json"),
        "options": {"record": str(directory / "told.jsonl")}, "seed": 1, "mode": "async",
        "slots": pool.slots, "stop": {"budget": budget}}))
    master = Master(pool, store, MasterPlan("async", limits=Stopper(budget=budget)))
    eqpy.init("emews.core._me")
    try:
        master.run(str(settings))
    finally:
        pool.close()
        store.close()
        trace.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]))
