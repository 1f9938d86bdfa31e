"""Models for the freeze-thaw tests (tests/test_thaw.py): ``STEPS`` steps whose value at step
``s`` is ``x**2 + (1 + n) / s`` (:func:`value_at`): a larger ``n`` learns slower and ends
lower, so curves cross. Each writes every step it trains to its run directory's
``trained.txt``, and saves its checkpoint before it reports the step.

* :func:`checkpointed`: keeps the last step it trained in ``emews.checkpoint_dir()`` and goes
  on after it when run again;
* :func:`forgetful`: keeps no checkpoint: a thawed run trains from step 1 again;
* :func:`gated`: :func:`checkpointed`, waiting before each step, as
  ``fidelity_models.gated_curve`` does (a test kills the study meanwhile);
* ``freeze_app.py`` beside this file: :func:`checkpointed` as an ``app`` (one checkpoint per
  step, since an app trains on until its signal comes; it goes on from ``EMEWS_TRAIN_FROM``).
"""

import emews
from emews.plugin import current_run
from fidelity_models import wait_at_the_gate

STEPS = 27


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
                 wait=wait_at_the_gate)


def train(params, first, saved=None, wait=lambda: None):
    """Train from step ``first`` to :data:`STEPS`, saving each step in ``saved``; ``wait()``
    before each."""
    for step in range(first, STEPS + 1):
        wait()
        with open(current_run().run_dir / "trained.txt", "a") as log:
            log.write(f"{step}\n")
        if saved is not None:
            saved.write_text(str(step))
        emews.report(value_at(params, step), step)
    return value_at(params, STEPS)
