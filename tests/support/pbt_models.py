"""Models for the population-based training tests (tests/test_pbt.py): the PBT paper's toy
problem (``emews.models.pbt_toy``), each run leaving in its run directory what it was given.

* :func:`toy`: writes ``start.json`` (the bytes of the ``theta.json`` it found in its
  checkpoint directory; empty when there was none) and ``until.txt`` (``EMEWS_TRAIN_UNTIL``),
  then trains;
* :func:`stalled_toy`: as :func:`toy`, but the first run to reach step ``STALL_AT`` (by any
  attempt) writes ``stalled`` and its pid (``toy.pid``) beside the gate directory named by
  ``EMEWS_TEST_GATE``, and waits there for ever: a test kills the study mid-segment;
* :func:`halve_lr` and :func:`out_of_space`: a user's explore (``explore = "module:function"``),
  one that keeps to the space and one that breaks it.
"""

import os
import time
from pathlib import Path

import emews
from emews.models import pbt_toy
from emews.plugin import current_run

STALL_AT = 5


def toy(params):
    found = Path(emews.checkpoint_dir()) / pbt_toy.CHECKPOINT
    run_dir = current_run().run_dir
    (run_dir / "start.json").write_bytes(found.read_bytes() if found.exists() else b"")
    (run_dir / "until.txt").write_text(current_run().env["EMEWS_TRAIN_UNTIL"])
    return pbt_toy.train(params)


def stalled_toy(params):
    gate = Path(os.environ["EMEWS_TEST_GATE"])
    real_report = emews.report

    def report(value, step, **metrics):
        real_report(value, step, **metrics)
        if step == STALL_AT and not (gate / "stalled").exists():
            (gate.parent / "toy.pid").write_text(str(os.getpid()))
            (gate / "stalled").touch()
            while True:           # killed by the test
                time.sleep(0.05)

    pbt_toy.emews.report = report
    try:
        return toy(params)
    finally:
        pbt_toy.emews.report = real_report


def halve_lr(params, space, rng):
    """A user's explore (``explore = "pbt_models:halve_lr"``): the donor's ``lr`` halved,
    kept within its bounds."""
    return {**params, "lr": max(params["lr"] / 2, space["lr"].lower)}


def out_of_space(params, space, rng):
    """A user's explore that breaks the space."""
    return {**params, "lr": -1.0}
