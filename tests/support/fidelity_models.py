"""Models that report learning curves (``emews.report``), for the fidelity tests.

``curve``: a run of ``STEPS`` epochs whose value at epoch ``s`` is ``x**2 + 1/s``: every curve
falls, and the configurations keep their order at every step, so the best final one is also
the best at every rung. It writes each epoch it trained to its run directory.
"""

import math
import os
import time
import uuid
from pathlib import Path

import emews
from emews.evaluate._base import current_run

STEPS = 9


def value_at(params, step):
    """The known curve: the value of ``params`` at ``step``."""
    return params["x"] ** 2 + 1.0 / step


def curve(params):
    trained = current_run().run_dir / "trained.txt"
    for step in range(1, STEPS + 1):
        with open(trained, "a") as log:
            log.write(f"{step}\n")
        emews.report(value_at(params, step), step, accuracy=1.0 / (1 + step))
    return value_at(params, STEPS)


def nan_curve(params):
    """Reports NaN at every step when ``x`` is negative, the known curve otherwise."""
    for step in range(1, STEPS + 1):
        emews.report(math.nan if params["x"] < 0 else value_at(params, step), step)
    return value_at(params, STEPS)


def stubborn(params):
    """Catches emews.Pruned and trains on regardless; its later reports raise again."""
    stops = 0
    for step in range(1, STEPS + 1):
        try:
            emews.report(value_at(params, step), step)
        except emews.Pruned:
            stops += 1
    with open(current_run().run_dir / "stops.txt", "w") as log:
        log.write(str(stops))
    return value_at(params, STEPS)


def backwards(params):
    """Reports step 2, then step 1: the second is refused."""
    emews.report(1.0, 2)
    emews.report(0.5, 1)
    return 0.5


def gated_curve(params):
    """``curve``, but once ``EMEWS_TEST_STALL_AFTER`` reports were made (over all runs), each
    report waits until the file ``go`` is in ``EMEWS_TEST_GATE`` (a test kills the study then)."""
    for step in range(1, STEPS + 1):
        wait_at_the_gate()
        emews.report(value_at(params, step), step)
    return value_at(params, STEPS)


def wait_at_the_gate():
    """Count a report in ``EMEWS_TEST_GATE``; past ``EMEWS_TEST_STALL_AFTER`` of them, wait
    for the file ``go`` there."""
    gate = Path(os.environ["EMEWS_TEST_GATE"])
    (gate / f"report-{uuid.uuid4().hex}").touch()
    while len(list(gate.glob("report-*"))) > int(os.environ["EMEWS_TEST_STALL_AFTER"]) \
            and not (gate / "go").exists():
        time.sleep(0.05)


def checkpointed(params):
    """``curve``, saving the last step it trained in ``emews.checkpoint_dir()`` and going on
    after it when run again; waits like ``gated_curve`` (a test kills the study meanwhile)."""
    saved = emews.checkpoint_dir() / "last_step.txt"
    first = int(saved.read_text()) + 1 if saved.exists() else 1
    for step in range(first, STEPS + 1):
        wait_at_the_gate()
        emews.report(value_at(params, step), step)
        saved.write_text(str(step))
    return value_at(params, STEPS)
