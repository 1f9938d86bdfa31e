"""The problems of part 13 (:mod:`benchmarks.pbt`), apart from the part so that Ray Tune's
contenders (:mod:`benchmarks.pbt_ray`, whose virtualenv imports this module) depend on them
and not on the rest of the part: a cached run's code digests name what it ran.

* ``toy``, the toy problem of the PBT paper (:mod:`emews.models.pbt_toy`);
* ``digits``, a network trained on scikit-learn's digits, its learning rate the one
  hyperparameter (see :mod:`benchmarks.pbt`).
"""

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class Problem:
    """A problem of this part: its space (GA JSON), a run's first state (``start()``), one step
    of training (``step(state, params)``: a new state, the old one left as it was, a
    checkpoint that others may copy) and the score of a state (``loss(state)``)."""

    space: list
    start: Callable
    step: Callable
    loss: Callable


def _toy():
    from emews.models import pbt_toy

    return Problem(pbt_toy.SPACE, lambda: list(pbt_toy.START), pbt_toy.step, pbt_toy.loss)


DIGITS_SPACE = [{"name": "lr", "type": "float", "lower": 0.001, "upper": 1.0, "log": True}]
DIGITS_HIDDEN, DIGITS_BATCH = 32, 32


@lru_cache(maxsize=1)
def _digits_data():
    """scikit-learn's digits, scaled to [0, 1], split 75/25 (seed 0): train and validation."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    return tuple(train_test_split(x / 16.0, y, test_size=0.25, random_state=0, stratify=y))


def _digits_start():
    """``(epoch, w1, b1, w2, b2)``: epoch 0 and the weights every run starts from (seed 0)."""
    rng = np.random.default_rng(0)
    return (0, rng.normal(0.0, 1.0 / 8.0, (64, DIGITS_HIDDEN)), np.zeros(DIGITS_HIDDEN),
            rng.normal(0.0, 1.0 / math.sqrt(DIGITS_HIDDEN), (DIGITS_HIDDEN, 10)), np.zeros(10))


def _digits_forward(state, x):
    _, w1, b1, w2, b2 = state
    hidden = np.tanh(x @ w1 + b1)
    logits = hidden @ w2 + b2
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    return hidden, p / p.sum(axis=1, keepdims=True)


def _digits_step(state, params):
    """One epoch of minibatch SGD at learning rate ``params["lr"]`` (the batches' order drawn
    from the epoch's number: the same for every run)."""
    x, _, y, _ = _digits_data()
    epoch, w1, b1, w2, b2 = state
    lr = float(params["lr"])
    order = np.random.default_rng(epoch).permutation(len(y))
    for first in range(0, len(y), DIGITS_BATCH):
        rows = order[first:first + DIGITS_BATCH]
        hidden, p = _digits_forward((epoch, w1, b1, w2, b2), x[rows])
        p[np.arange(len(rows)), y[rows]] -= 1.0
        p /= len(rows)
        back = (p @ w2.T) * (1.0 - hidden ** 2)
        w1, b1 = w1 - lr * x[rows].T @ back, b1 - lr * back.sum(axis=0)
        w2, b2 = w2 - lr * hidden.T @ p, b2 - lr * p.sum(axis=0)
    return (epoch + 1, w1, b1, w2, b2)


def _digits_loss(state):
    """The validation log-loss of ``state``."""
    _, x_val, _, y_val = _digits_data()
    _, p = _digits_forward(state, x_val)
    return float(-np.log(np.maximum(p[np.arange(len(y_val)), y_val], 1e-15)).mean())


def _digits():
    return Problem(DIGITS_SPACE, _digits_start, _digits_step, _digits_loss)


PROBLEMS = {"toy": _toy, "digits": _digits}


def run_line(problem, contender, mode, seed, loss, seconds):
    """A run's line of the part's cache (:func:`benchmarks.quality.run_missing`): its final
    ``loss`` and the digests of the code of ours this process imported."""
    from .quality_runs import code_digests

    return {"problem": problem, "contender": contender, "mode": mode, "seed": seed,
            "loss": loss, "seconds": seconds, "code": code_digests()}
