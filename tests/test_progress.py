"""Live progress: a rich bar on a terminal (through the spawned mpiexec too), plain lines
elsewhere."""

import os
import pty
import subprocess
import sys

import pytest

from conftest import SUPPORT

pytestmark = pytest.mark.mpi


def run_on_a_terminal(args, cwd):
    """Run ``python -m emews ARGS`` with a pseudo-terminal as stdout; return what it printed."""
    leader, follower = pty.openpty()
    env = dict(os.environ, PYTHONPATH=str(SUPPORT), COLUMNS="120")
    for name in ("PMI_RANK", "PMI_SIZE", "PMIX_RANK"):
        env.pop(name, None)
    process = subprocess.Popen([sys.executable, "-m", "emews", *map(str, args)], cwd=cwd,
                               env=env, stdout=follower, stderr=subprocess.PIPE)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed: every writer has gone
            break
        if not chunk:
            break
        chunks.append(chunk)
    process.wait(timeout=120)
    os.close(leader)
    assert process.returncode == 0, process.stderr.read().decode()
    return b"".join(chunks).decode(errors="replace")


@pytest.mark.parametrize("procs", [2, 3])
def test_a_terminal_gets_a_live_bar_with_the_budget_best_failures_and_eta(study, tmp_path,
                                                                          procs):
    path = study(system={"procs": procs, "pool": "inprocess" if procs == 2 else "mpi"},
                 study={"budget": 6, "objective": "toy_models:quadratic"})
    shown = run_on_a_terminal(["run", path], tmp_path)
    assert "━" in shown and "6/6" in shown          # the bar, full at the end
    assert "best " in shown and "failed 0" in shown and "ETA " in shown
    assert "[progress]" not in shown


def test_a_pipe_gets_plain_lines(study, emews_cli):
    path = study(system={"procs": 2}, study={"budget": 4, "objective": "toy_models:quadratic"})
    done = emews_cli("run", path)
    assert done.returncode == 0, done.stderr
    assert "━" not in done.stdout
    assert "[progress] evaluations 4/4 | best " in done.stdout and "failed 0" in done.stdout
