"""Models for the tests of cancelling on a database pool (files in ``EMEWS_TEST_GATE``).

:func:`fails_while_another_runs`: the first call waits until another call has started, then
fails (a study with ``on_failure = "abort"`` then aborts); every other call writes
``pid-<pid>`` and runs until it is cancelled.
"""

import os
import time
from pathlib import Path


def fails_while_another_runs(params):
    """Fail once another evaluation runs (the first call); run until cancelled (the others)."""
    gate = Path(os.environ["EMEWS_TEST_GATE"])
    try:
        os.close(os.open(gate / "failer", os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        (gate / f"pid-{os.getpid()}").touch()
        while True:
            time.sleep(0.05)
    while not list(gate.glob("pid-*")):
        time.sleep(0.05)
    raise RuntimeError("failed on purpose while another evaluation runs")
