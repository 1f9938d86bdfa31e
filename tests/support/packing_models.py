"""Models of the multi-rank tests (tests/test_packing_mpi.py): each says what its pool gave it."""

import os
import signal
import time
from pathlib import Path

from emews.evaluate import current_run


def held(params):
    """Sleep a while, then return the ranks, hosts and GPUs the run was given as metrics."""
    resources = current_run().resources
    time.sleep(float(params.get("seconds", 0.3)))
    return {"val_loss": float(params.get("x", 0.0)), "ranks": resources.ranks,
            "hosts": len(resources.hosts), "gpus": len(resources.gpus)}


def dies_when_large(params):
    """The run of an evaluation of more than one rank kills itself (SIGKILL); others are
    :func:`held`."""
    if current_run().resources.ranks > 1:
        os.kill(os.getpid(), signal.SIGKILL)
    return held(params)


def gated(params):
    """:func:`held`, once the file ``go`` exists in the directory ``EMEWS_TEST_GATE`` names
    (the test opens the gate when it has looked at the running study)."""
    gate = Path(os.environ["EMEWS_TEST_GATE"]) / "go"
    while not gate.exists():
        time.sleep(0.05)
    return held(params)
