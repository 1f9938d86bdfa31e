"""A model for tests/test_dashboard.py: evaluations that hold until the test lets them go, so
that the study is still running while the test looks at it."""

import os
import time
from pathlib import Path


def gated(params):
    """Returns ``x``: at once where ``x <= 0``; where ``x > 0``, once the file named by
    ``$DASHBOARD_GATE`` exists (the test creates it when it has seen the running study)."""
    gate = Path(os.environ["DASHBOARD_GATE"])
    while params["x"] > 0 and not gate.exists():
        time.sleep(0.05)
    return float(params["x"])
