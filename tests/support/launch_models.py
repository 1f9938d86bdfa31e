"""Models of evaluations that run as several processes (tests/test_launch_ranks.py).

``python launch_models.py app``: one process of an ``app`` evaluation started by the site's
launcher (mirrors a data-parallel training script: Horovod / PyTorch DDP read the same
variables). Each process writes ``rank-R.json`` (its variables, its pid, an allreduce over the
evaluation's MPI world) in the run directory; rank 0 writes ``result.txt``: the allreduce of
``x * (RANK + 1)``. With ``"die_rank": R`` in the point, that process kills itself (SIGKILL)
and the others sleep; with ``"sleep": S``, every process sleeps S seconds first.

``check_group``: the same, as a ``py`` objective (``launch_models:check_group``): it uses
``emews.comm()`` and returns the allreduce from every rank (rank 0's is the value).
"""

import json
import os
import signal
import sys
import time
from pathlib import Path

VARIABLES = ("WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
             "MASTER_PORT", "CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "ZE_AFFINITY_MASK",
             "SLURM_STEP_ID")


def one_process(params, comm, run_dir):
    """What every process does: record itself, allreduce, maybe die or sleep."""
    rank = comm.Get_rank()
    total = comm.allreduce(float(params["x"]) * (rank + 1))
    record = {"pid": os.getpid(), "size": comm.Get_size(), "rank": rank, "allreduce": total,
              "environ": {name: os.environ.get(name) for name in VARIABLES}}
    (Path(run_dir) / f"rank-{rank}.json").write_text(json.dumps(record))
    comm.Barrier()   # every record is written before any process dies
    if params.get("die_rank") == rank:
        os.kill(os.getpid(), signal.SIGKILL)
    if params.get("die_rank") is not None or params.get("sleep"):
        time.sleep(float(params.get("sleep") or 600))
    return total


def check_group(params):
    """A ``py`` objective of several ranks: its value is the allreduce (rank 0's)."""
    import emews

    from emews.evaluate._base import current_run

    return {"val_loss": one_process(params, emews.comm(), current_run().run_dir)}


def app():
    """One process of an ``app`` evaluation (the Model Shell's command)."""
    from mpi4py import MPI

    run_dir = os.environ["EMEWS_RUN_DIR"]
    params = json.loads(Path(os.environ["EMEWS_PARAMS_FILE"]).read_text())
    total = one_process(params, MPI.COMM_WORLD, run_dir)
    if MPI.COMM_WORLD.Get_rank() == 0:
        Path(run_dir, "result.txt").write_text(f"{total}\n")


if __name__ == "__main__" and sys.argv[1:] == ["app"]:
    app()


def study_group(params):
    """A study's ``py`` objective of two ranks: x squared, and as metrics what its processes
    saw: the size of ``emews.comm()``, an allreduce, and each process's variables gathered."""
    import emews

    comm = emews.comm()
    seen = comm.allgather((int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]),
                           os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"]))
    return {"val_loss": float(params["x"]) ** 2, "size": comm.Get_size(),
            "allreduce": comm.allreduce(comm.Get_rank() + 1),
            "ranks": sum(10 ** rank for rank, _, _, _ in seen),      # 11: ranks 0 and 1
            "world": min(world for _, world, _, _ in seen),
            "one_master": int(len({(addr, port) for _, _, addr, port in seen}) == 1)}
