"""The model of the same-study test (tests/test_same_study.py), one study run under
``emews run`` and under Swift/T: it fails, fails once, is pruned or blocks, by its point.

* ``x < -1.2``: fails on every attempt (stored ``failed``, the search told the penalty);
* ``-1.2 <= x < -0.4``: fails on its first attempt only (``done`` on its second);
* ``0.4 <= x < 1.2``: reports NaN at step 1, then 2 and 3 (the pruner stops it at step 1: at
  once under ``emews run``, when its outcome comes back under Swift/T);
* the first attempts of the fifth and sixth points (``RUN000004``, ``RUN000005``) write
  ``blocked`` into their run directories and block until the test kills the job;
* else: ``x**2``.
"""

import math
import threading

import emews
from emews.evaluate import current_run


def model(params):
    run = current_run()
    if run.run_id in ("RUN000004", "RUN000005"):
        (run.run_dir / "blocked").write_text(run.run_id)
        threading.Event().wait()
    x = params["x"]
    if x < -1.2 or (x < -0.4 and "-" not in run.run_id):
        raise RuntimeError(f"x = {x} fails")
    if 0.4 <= x < 1.2:
        for step in (1, 2, 3):
            emews.report(math.nan, step)
    return x ** 2
