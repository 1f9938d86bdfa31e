"""Live progress: a rich bar on a terminal (through the spawned mpiexec too), plain lines
elsewhere."""

import io
import json
import os
import pty
import subprocess
import sys

import pytest

from emews.evaluate import Outcome
from emews.inspect._progress import Progress

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


@pytest.mark.slow
@pytest.mark.parametrize("procs", [2, 3])
def test_a_terminal_gets_a_live_bar_with_the_budget_best_failures_and_eta(study, tmp_path,
                                                                          procs):
    path = study(system={"procs": procs, "pool": "inprocess" if procs == 2 else "mpi"},
                 study={"budget": 6, "objective": "toy_models:quadratic"})
    shown = run_on_a_terminal(["run", path], tmp_path)
    assert "━" in shown and "6/6" in shown          # the bar, full at the end
    assert "best " in shown and "failed 0" in shown and "ETA " in shown
    assert "[progress]" not in shown


@pytest.mark.slow
def test_a_pipe_gets_plain_lines(study, emews_cli):
    path = study(system={"procs": 2}, study={"budget": 4, "objective": "toy_models:quadratic"})
    done = emews_cli("run", path)
    assert done.returncode == 0, done.stderr
    assert "━" not in done.stdout
    assert "[progress] evaluations 4/4 | best " in done.stdout and "failed 0" in done.stdout


def test_a_study_of_several_objectives_shows_its_front_size_not_a_best(study, emews_cli,
                                                                       tmp_path):
    path = study(system={"procs": 2, "pool": "inprocess"},
                 study={"budget": 12, "seed": 3, "objective": "mo_models:loss_and_size",
                        "objectives": ["loss", "size"], "directions": ["minimize", "maximize"],
                        "data_dir": str(tmp_path / "data")})
    done = emews_cli("run", path)
    assert done.returncode == 0, done.stderr
    last = [line for line in done.stdout.splitlines() if line.startswith("[progress]")][-1]
    (final,) = (tmp_path / "data").rglob("final.json")
    front = json.loads(final.read_text())["pareto"]
    assert f"evaluations 12/12 | front {len(front)} | failed 0" in last
    assert "best" not in last


def test_progress_keeps_the_front_in_each_objectives_direction():
    progress = Progress(budget=4, interval=3600.0, stream=io.StringIO(),
                        directions=["minimize", "maximize"], pareto=[[1.0, 1.0]])
    progress.update([(None, 0, Outcome(v[0], objectives=v, feasible=ok)) for v, ok in
                     [([0.5, 0.5], True), ([2.0, 2.0], True), ([0.1, 9.0], False),
                      ([3.0, 0.1], True)]])
    assert sorted(progress.pareto) == [[0.5, 0.5], [1.0, 1.0], [2.0, 2.0]]
    assert "front 3 | failed 0" in progress.line()
    constrained = Progress(stream=io.StringIO(), directions=["maximize"])
    constrained.update([(None, 0, Outcome(v, objectives=[v], feasible=v < 5)) for v in
                        (1.0, 3.0, 7.0)])
    assert "best 3 | " in constrained.line()


def test_a_log_gets_each_progress_line_whole_however_long(monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")   # a batch job's log: rich would wrap at its width
    stream = io.StringIO()
    progress = Progress(budget=100000, interval=3600.0, stream=stream, pruned=473, failed=12,
                        done=497)
    progress.show()
    assert len(progress.line()) > 40
    assert stream.getvalue() == progress.line() + "\n"
