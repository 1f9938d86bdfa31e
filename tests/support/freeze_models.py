"""Models for the freeze-thaw tests (tests/test_thaw.py): ``STEPS`` steps whose value at step
``s`` is ``x**2 + (1 + n) / s`` (:func:`value_at`): a larger ``n`` learns slower and ends
lower, so curves cross. Each writes every step it trains to its run directory's
``trained.txt``, and saves its checkpoint before it reports the step.

* :func:`checkpointed`: keeps the last step it trained in ``emews.checkpoint_dir()`` and goes
  on after it when run again;
* :func:`forgetful`: keeps no checkpoint: a thawed run trains from step 1 again;
* :func:`gated`: :func:`checkpointed`, waiting before each step, as
  ``fidelity_models.gated_curve`` does (a test kills the study meanwhile);
* :func:`drained`: :func:`checkpointed`, waiting on the study's store for what the drain
  tests need to have happened (its ``role``: ``long`` or ``paused``);
* ``freeze_app.py`` beside this file: :func:`checkpointed` as an ``app`` (one checkpoint per
  step, since an app trains on until its signal comes; it goes on from ``EMEWS_TRAIN_FROM``).
"""

import time

import emews
from emews.plugin import current_run
from emews._status import Status
from emews.store import SQLiteStore
from fidelity_models import wait_at_the_gate

STEPS = 27
RUNG = 9         # the rung of the tests' asha
PATIENCE = 120   # seconds a drained model waits at most: on code that never thaws, it goes on


def value_at(params, step):
    """The known curve: the value of ``params`` at ``step``."""
    return params["x"] ** 2 + (1 + params["n"]) / step


def checkpointed(params):
    saved = emews.checkpoint_dir() / "step.txt"
    return train(params, int(saved.read_text()) + 1 if saved.exists() else 1, saved)


def forgetful(params):
    return train(params, 1)


def gated(params):
    saved = emews.checkpoint_dir() / "step.txt"
    return train(params, int(saved.read_text()) + 1 if saved.exists() else 1, saved,
                 wait=lambda step: wait_at_the_gate())


def drained(params):
    """:func:`checkpointed`, each step once the store shows what must come before it: a
    ``paused`` run's first step, a report at the rung (the ``long`` run's, so that it is the
    rung's best); a ``long`` run's last step, a running thaw's first report; a thaw's steps but
    its first, no first attempt queued or running (the last real evaluation ended)."""
    context = current_run()
    saved = emews.checkpoint_dir() / "step.txt"
    first = int(saved.read_text()) + 1 if saved.exists() else 1

    def wait(step):
        if params["role"] == "paused" and step == 1:
            until(context, lambda store: any(r["step"] >= RUNG for r in store.reports()))
        elif params["role"] == "long" and step == STEPS:
            until(context, lambda store: any(
                r["attempt"] > 1 and r["status"] == Status.RUNNING and any(
                    report["attempt"] == r["attempt"] for report in store.reports(r["id"]))
                for r in store.rows()))
        elif "-" in context.run_id and step > first:
            until(context, lambda store: not any(r["attempt"] == 1 and r["status"] in (
                Status.QUEUED, Status.RUNNING) for r in store.rows()))

    return train(params, first, saved, wait)


def until(context, condition):
    """Wait until ``condition(store)`` holds on the study's store (read only), or for
    :data:`PATIENCE` seconds."""
    deadline = time.monotonic() + PATIENCE
    while time.monotonic() < deadline:
        store = SQLiteStore(context.expdir / "results.db", readonly=True)
        try:
            if condition(store):
                return
        finally:
            store.close()
        time.sleep(0.05)


def train(params, first, saved=None, wait=lambda step: None):
    """Train from step ``first`` to :data:`STEPS`, saving each step in ``saved``;
    ``wait(step)`` before each."""
    for step in range(first, STEPS + 1):
        wait(step)
        with open(current_run().run_dir / "trained.txt", "a") as log:
            log.write(f"{step}\n")
        if saved is not None:
            saved.write_text(str(step))
        emews.report(value_at(params, step), step)
    return value_at(params, STEPS)
