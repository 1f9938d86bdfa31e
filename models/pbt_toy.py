"""The toy problem of population-based training (Jaderberg et al., 2017, section 4.1).

Maximize ``Q(theta) = 1.2 - sum(theta_i**2)`` by gradient steps on the surrogate
``Q_hat(theta | h) = 1.2 - sum(h_i * theta_i**2)``, whose hyperparameters ``h`` (``h0``,
``h1`` in [0, 1], :data:`SPACE`) decide how fast each coordinate falls. ``theta`` starts at
``(0.9, 0.9)``; a step is ``theta_i -= LEARNING_RATE * 2 * h_i * theta_i``. No fixed ``h`` is
best for the whole training, a schedule is: the problem PBT was shown on.

:func:`train` is a ``py`` model that trains in segments as ``algorithm = "pbt"`` hands them
out: it starts from ``emews.checkpoint_dir()/theta.json`` when there is one, trains to the
step ``EMEWS_TRAIN_UNTIL`` (or :data:`STEPS` more), saves ``theta`` and its step after every
step and reports the loss ``1.2 - Q(theta) = sum(theta_i**2)`` (to minimize) at each.
:func:`replay` trains one run through a schedule (``emews show --schedule``'s ``schedule``).
"""

import json
import os
from pathlib import Path

import emews

SPACE = [{"name": "h0", "type": "float", "lower": 0.0, "upper": 1.0},
         {"name": "h1", "type": "float", "lower": 0.0, "upper": 1.0}]
START = (0.9, 0.9)
LEARNING_RATE = 0.01
STEPS = 4
CHECKPOINT = "theta.json"


def step(theta, params):
    """One gradient step on the surrogate: the new ``theta``."""
    return [t - LEARNING_RATE * 2 * params[f"h{i}"] * t for i, t in enumerate(theta)]


def loss(theta):
    """``1.2 - Q(theta)``: the distance from the true optimum's value."""
    return sum(t * t for t in theta)


def train(params):
    """Train from the run's checkpoint to ``EMEWS_TRAIN_UNTIL``; return the loss."""
    path = Path(emews.checkpoint_dir()) / CHECKPOINT
    state = json.loads(path.read_text()) if path.exists() else {"theta": START, "step": 0}
    until = emews.plugin.current_run().env.get("EMEWS_TRAIN_UNTIL")
    until = int(until) if until is not None else state["step"] + STEPS
    theta = state["theta"]
    while state["step"] < until:
        theta = step(theta, params)
        state = {"theta": theta, "step": state["step"] + 1}
        saved = path.with_name(CHECKPOINT + ".new")
        saved.write_text(json.dumps(state))
        os.replace(saved, path)
        emews.report(loss(theta), state["step"])
    return loss(theta)


def replay(schedule):
    """The curve (``{step: loss}``) of one training through ``schedule``: ``{"until": N,
    "schedule": {"0": params, "5": params, ...}}``, each params from its step on."""
    changes = sorted((int(at), params) for at, params in schedule["schedule"].items())
    theta, curve = list(START), {}
    for s in range(schedule["until"]):
        params = [p for at, p in changes if at <= s][-1]
        theta = step(theta, params)
        curve[s + 1] = loss(theta)
    return curve
