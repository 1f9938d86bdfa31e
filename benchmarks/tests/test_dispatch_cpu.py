"""Rank 0's share of a core while workers run long tasks: a measured figure, so it is checked
here, in the benchmarks' smoke run, and not in the product's tests."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import SUPPORT, query_store, wait_until

pytestmark = pytest.mark.mpi
MPIEXEC = str(Path(sys.executable).parent / "mpiexec")


def cpu_seconds(pid):
    """CPU time of every thread of process ``pid`` so far (``schedstat``: nanoseconds)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        total += int((task / "schedstat").read_text().split()[0])
    return total / 1e9


def test_rank_0_uses_under_2_percent_of_a_core_while_4_workers_run_long_tasks(study, tmp_path):
    """The master's waits for results and for the ME are sleeps and blocking gets: while four
    workers sleep through 3 s runs, rank 0 (master and ME threads) stays below 2% of a core."""
    path = study(system={"procs": 5, "progress_interval": 60},
                 study={"budget": 12, "objective": "toy_models:sleepy", "mode": "async",
                        "seed": 1})
    env = dict(os.environ, PYTHONPATH=str(SUPPORT))
    job = subprocess.Popen([MPIEXEC, "-n", "5", sys.executable, "-m", "emews", "run", str(path)],
                           cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: list((tmp_path / "experiments").glob("*/EXP*/results.db")),
                   "the store")
        (db_path,) = (tmp_path / "experiments").glob("*/EXP*/results.db")
        count = "SELECT COUNT(*) FROM evaluations WHERE status = '{}'"
        wait_until(lambda: query_store(db_path, count.format("running")) == [(4,)],
                   "four evaluations running")
        (master,) = query_store(db_path, "SELECT value FROM meta WHERE key = 'master'")
        pid = json.loads(master[0])["pid"]
        began, cpu_began = time.monotonic(), cpu_seconds(pid)
        wait_until(lambda: query_store(db_path, count.format("done"))[0][0] >= 8,
                   "two rounds of runs")
        share = (cpu_seconds(pid) - cpu_began) / (time.monotonic() - began)
        _, stderr = job.communicate(timeout=120)
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
    assert job.returncode == 0, stderr
    assert query_store(db_path, count.format("done")) == [(12,)]
    assert share < 0.02, f"rank 0 used {share:.1%} of a core while it waited"
