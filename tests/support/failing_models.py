"""Objectives for the failure-policy and worker tests (found through PYTHONPATH)."""

import os

from emews.evaluate import current_run


def fails_first_attempt(params):
    """Fails on the first attempt at a point, succeeds on the retry (run id ``RUNnnnnnn-2``)."""
    run_id = current_run().run_id
    if not run_id.endswith("-2"):
        raise RuntimeError(f"first attempt {run_id} fails")
    return float(params["x"])


def fails_when_negative(params):
    """x, or a failure when x < 0."""
    if params["x"] < 0:
        raise ValueError(f"x must not be negative, got {params['x']}")
    return float(params["x"])


def visible_device(params):
    """The GPU this worker was given (its CUDA_VISIBLE_DEVICES), as the value."""
    return float(os.environ["CUDA_VISIBLE_DEVICES"])
