"""The worker side of cancelling: a CANCEL message kills the run under way (real mpiexec)."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import SUPPORT, alive

pytestmark = pytest.mark.mpi
MPIEXEC = str(Path(sys.executable).parent / "mpiexec")


@pytest.mark.slow
def test_a_cancel_message_kills_the_running_model_and_a_late_one_touches_no_later_run(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(SUPPORT))
    done = subprocess.run([MPIEXEC, "-n", "2", sys.executable, str(SUPPORT / "cancel_worker.py"),
                           str(tmp_path)], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()  # rank 0's lines, among the model's own output
    assert [line for line in lines if line.startswith("result: ")] == [
        "result: cancelled|cancelled|nan", "result: done|None|2.0", "result: done|None|3.0"]
    (pids,) = [line.removeprefix("pids: ") for line in lines if line.startswith("pids: ")]
    deadline = time.monotonic() + 10
    while any(alive(int(pid)) for pid in pids.split()):
        assert time.monotonic() < deadline, "the cancelled model lives on"
        time.sleep(0.05)
