"""Objectives and ME modules that tests point studies at (found through PYTHONPATH)."""

import math
import os
import random
import threading


def quadratic(params):
    """A smooth function of the test space: minimum 0 at x = 0, n = 0."""
    return params["x"] ** 2 + params["n"]


def history_dict(params):
    """Returns a Keras-like history dict; MODEL_RETURN picks from it."""
    return {"val_loss": [9.0, params["x"] ** 2], "loss": [1.0, 2.0]}


def flaky(params):
    """Raises for negative x, returns NaN for n == 3: both are failed evaluations."""
    if params["x"] < 0:
        raise RuntimeError(f"bad x {params['x']}")
    if params["n"] == 3:
        return math.nan
    return params["x"]


def unbounded(params):
    """Returns -inf for negative x: a non-finite result is a failure, never the best value."""
    return -math.inf if params["x"] < 0 else params["x"]


def hang_when_asked(params):
    """Quick, except that points with ``hang`` block forever while EMEWS_TEST_HANG is set."""
    if params.get("hang") and os.environ.get("EMEWS_TEST_HANG"):
        threading.Event().wait()
    return float(params["x"])


def rank_and_output(params):
    """Prints a marker (to the worker's out file) and returns x."""
    print(f"evaluating x={params['x']}", flush=True)
    return float(params["x"])


def sleepy(params):
    """Simulates a long training run that uses no CPU: sleeps 3 seconds."""
    import time

    time.sleep(3.0)
    return float(params["x"])


def noisy(params):
    """``x**2 + n`` plus noise in [0, 1) drawn from the replica's seed (``rng_seed``); fails
    when the seed is odd and ``act`` is ``"tanh"`` (some replicas of a point fail)."""
    if params["act"] == "tanh" and params["rng_seed"] % 2:
        raise RuntimeError(f"odd seed {params['rng_seed']}")
    return params["x"] ** 2 + params["n"] + random.Random(params["rng_seed"]).random()


def several_metrics(params):
    """``val_loss`` per epoch (the value: ``x**2 + n`` at the last), with ``val_acc`` (NaN when
    n is 2) and ``n_params`` beside it; raises for ``tanh`` with a negative x."""
    if params["act"] == "tanh" and params["x"] < 0:
        raise RuntimeError(f"tanh with a negative x: {params['x']}")
    loss = params["x"] ** 2 + params["n"]
    return {"val_loss": [loss + 1.0, loss],
            "val_acc": math.nan if params["n"] == 2 else 1.0 / (1.0 + loss),
            "n_params": 1000 * (params["n"] + 1)}
