"""Faults of a whole study on a real mpiexec: kills, interrupts, double and changed resumes,
limits on a classic ME, precedence in spawned jobs, errors on rank 0.

The fixtures in ``support/fault_me.py`` hold a study at a known moment (an ME stuck in its
``tell``, models waiting) by waiting on files in a gate directory; the tests poll the store or
the gate for the state they need, then kill or interrupt, then assert the rows of the store.
"""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import NO_READY, SUPPORT, wait_until
from emews._errors import Interrupted
from emews.store import SQLiteStore


pytestmark = pytest.mark.mpi


def rows_of(expdir, sql="SELECT * FROM evaluations ORDER BY id"):
    if not (Path(expdir) / "results.db").exists():
        return []
    db = sqlite3.connect(Path(expdir) / "results.db", timeout=30)
    db.row_factory = sqlite3.Row
    try:
        return [dict(row) for row in db.execute(sql)]
    except sqlite3.OperationalError:  # not created yet
        return []
    finally:
        db.close()


def only_expdir(tmp_path):
    found = list((tmp_path / "experiments").glob("*/EXP*"))
    return found[0] if len(found) == 1 else None


@pytest.fixture
def gate(tmp_path):
    path = tmp_path / "gate"
    path.mkdir()
    return path


@pytest.fixture
def start(tmp_path, gate):
    """Start ``python -m emews ARGS`` in the background, in its own session."""
    started = []

    def run(*args, env=None):
        env = dict(os.environ, PYTHONPATH=str(SUPPORT), EMEWS_TEST_GATE=str(gate), **(env or {}))
        process = subprocess.Popen([sys.executable, "-m", "emews", *map(str, args)],
                                   cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, start_new_session=True)
        started.append(process)
        return process

    yield run
    for process in started:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def gated_env(gate):
    return {"EMEWS_TEST_GATE": str(gate)}


@pytest.mark.slow
def test_results_are_stored_while_the_me_thinks_and_survive_a_kill_of_the_master(
        study, start, gate, tmp_path, emews_cli):
    path = study(system={"procs": 3, "progress_interval": 60},
                 study={"algorithm": "fault_me:ThinkingSearch", "budget": 8, "seed": 3,
                        "objective": "toy_models:quadratic"})
    job = start("run", path)
    wait_until(lambda: (gate / "told-1").exists(), "the ME's first tell")
    expdir = only_expdir(tmp_path)
    # The ME is stuck in its first tell; the other worker's result must reach the store anyway.
    wait_until(lambda: len(rows_of(expdir, "SELECT id FROM evaluations WHERE status='done'")) == 2,
               "the second result in the store while the ME thinks")
    assert not (gate / "told-2").exists()

    second = emews_cli("run", "--resume", expdir, env=gated_env(gate))
    assert second.returncode == 2
    assert "is in use by a live run (pid " in second.stderr and len(
        second.stderr.strip().splitlines()) == 1

    master = json.loads(rows_of(expdir, "SELECT value FROM meta WHERE key='master'")[0]["value"])
    os.kill(master["pid"], signal.SIGKILL)
    _, stderr = job.communicate(timeout=120)
    assert job.returncode not in (0, 2)
    assert f"evaluations are stored; resume with: emews run --resume {expdir}" in stderr
    before = {row["id"]: row for row in rows_of(expdir) if row["status"] == "done"}
    assert len(before) == 2

    (gate / "go").touch()
    resumed = emews_cli("run", "--resume", expdir, env=gated_env(gate))
    assert resumed.returncode == 0, resumed.stderr
    rows = rows_of(expdir)
    assert [row["status"] for row in rows] == ["done"] * 8  # exactly the budget, nothing lost
    assert len({row["params"] for row in rows}) == 8
    for i, row in before.items():
        assert (rows[i]["params"], rows[i]["result"]) == (row["params"], row["result"])


def start_two_gated_runs(study, start, gate, tmp_path):
    """A study of 4 gated points on 2 workers, started; returns ``(job, expdir)`` once both
    workers are in their runs and the store has their rows ``running``."""
    path = study(system={"procs": 3, "progress_interval": 60},
                 study={"budget": 4, "seed": 1, "objective": "fault_me:gated",
                        "algorithm": NO_READY})
    job = start("run", path)
    wait_until(lambda: len(list(gate.glob("pid-*"))) == 2, "both workers in their runs")
    expdir = only_expdir(tmp_path)
    wait_until(lambda: len(rows_of(expdir, "SELECT id FROM evaluations WHERE "
                                           "status='running'")) == 2, "both rows running")
    return job, expdir


def assert_interrupted_with_both_runs_cancelled(job, sig, expdir):
    _, stderr = job.communicate(timeout=120)
    assert job.returncode == 128 + sig
    assert "Traceback" not in stderr
    assert f"emews: interrupted; 0 evaluations stored; resume with: emews run --resume " \
           f"{expdir}" in stderr.splitlines()
    rows = rows_of(expdir)
    assert [(row["status"], row["error"]) for row in rows] == [
        ("cancelled", Interrupted.REASON)] * 2


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_cancels_what_runs_prints_one_line_and_resume_completes(
        study, start, gate, tmp_path, emews_cli, sig):
    job, expdir = start_two_gated_runs(study, start, gate, tmp_path)
    job.send_signal(sig)
    assert_interrupted_with_both_runs_cancelled(job, sig, expdir)

    (gate / "go").touch()
    resumed = emews_cli("run", "--resume", expdir, env=gated_env(gate))
    assert resumed.returncode == 0, resumed.stderr
    rows = rows_of(expdir)
    assert [row["status"] for row in rows] == ["done"] * 4
    assert [row["attempt"] for row in rows[:2]] == [2, 2]  # the cancelled points, run again
    attempts = rows_of(expdir, "SELECT id, attempt, status FROM attempts ORDER BY id, attempt")
    assert [(a["id"], a["attempt"], a["status"]) for a in attempts[:4]] == [
        (0, 1, "cancelled"), (0, 2, "done"), (1, 1, "cancelled"), (1, 2, "done")]


@pytest.mark.slow
def test_an_interrupt_cancels_what_runs_when_mpiexec_kills_rank_0_before_it_could(
        study, start, gate, tmp_path):
    """mpiexec passes the Ctrl-C to every rank: the workers kill their runs and exit at once,
    and mpiexec then kills rank 0, here stopped so that it records nothing. The launcher
    cancels the rows it left running."""
    job, expdir = start_two_gated_runs(study, start, gate, tmp_path)
    master = json.loads(rows_of(expdir, "SELECT value FROM meta WHERE key='master'")[0]["value"])
    os.kill(master["pid"], signal.SIGSTOP)
    job.send_signal(signal.SIGINT)
    assert_interrupted_with_both_runs_cancelled(job, signal.SIGINT, expdir)


@pytest.mark.slow
def test_an_interrupt_shows_emews_s_line_and_none_of_mpich_s(study, start, gate, tmp_path):
    """mpiexec kills rank 0 (stopped here, so that it must) and MPICH prints its banner, "YOUR
    APPLICATION TERMINATED ... Killed (signal 9)", and its Ctrl-C notes: none of them reach
    the user, and emews's own line is the last the command prints, before it exits."""
    job, expdir = start_two_gated_runs(study, start, gate, tmp_path)
    master = json.loads(rows_of(expdir, "SELECT value FROM meta WHERE key='master'")[0]["value"])
    os.kill(master["pid"], signal.SIGSTOP)
    job.send_signal(signal.SIGINT)
    stdout, stderr = job.communicate(timeout=120)
    assert job.returncode == 128 + signal.SIGINT
    assert stderr.splitlines() == [f"emews: interrupted; 0 evaluations stored; resume with: "
                                   f"emews run --resume {expdir}"], stderr
    for noise in ("YOUR APPLICATION TERMINATED", "BAD TERMINATION", "[mpiexec@"):
        assert noise not in stdout, stdout


@pytest.mark.slow
def test_a_resume_that_changes_the_study_is_refused_and_keeps_every_row(study, emews_cli,
                                                                       tmp_path):
    path = study(system={"procs": 2}, study={"budget": 3, "objective": "toy_models:quadratic"})
    assert emews_cli("run", path).returncode == 0
    expdir = only_expdir(tmp_path)
    before = rows_of(expdir)
    (tmp_path / "space.json").write_text(json.dumps(
        [{"name": "x", "type": "float", "lower": -9.0, "upper": 9.0}]))
    changed = emews_cli("run", "--resume", expdir, "--budget", "6")
    assert changed.returncode == 2
    assert changed.stderr.startswith("emews: error: --resume: the search space's content: "
                                     "must be the same as in the stored study (stored '")
    assert len(changed.stderr.strip().splitlines()) == 1
    other = emews_cli("run", "--resume", expdir, "--set", 'study.algorithm="ga"')
    assert other.returncode == 2 and "--resume: [study].algorithm: must be the same" in \
        other.stderr
    assert rows_of(expdir) == before
    (expdir / "results.db").unlink()
    missing = emews_cli("run", "--resume", expdir)
    assert missing.returncode == 2 and "results.db: the experiment has no store" in \
        missing.stderr


@pytest.mark.slow
def test_a_resume_may_extend_the_budget_and_records_the_change(study, emews_cli, tmp_path):
    path = study(system={"procs": 2}, study={"budget": 3, "objective": "toy_models:quadratic"})
    assert emews_cli("run", path).returncode == 0
    expdir = only_expdir(tmp_path)
    extended = emews_cli("run", "--resume", expdir, "--budget", "5")
    assert extended.returncode == 0, extended.stderr
    assert [row["status"] for row in rows_of(expdir)] == ["done"] * 5
    (changes,) = json.loads(rows_of(expdir, "SELECT value FROM meta WHERE key='changes'")[0][
        "value"])
    assert changes["changes"]["study.budget"] == [3, 5]


@pytest.mark.slow
def test_the_master_enforces_the_budget_on_a_classic_me(study, emews_cli, tmp_path):
    path = study(system={"procs": 3}, study={"algorithm": "classic_me", "budget": 5,
                                             "objective": "toy_models:quadratic"})
    done = emews_cli("run", path)
    assert done.returncode == 0, done.stderr
    expdir = only_expdir(tmp_path)
    assert [row["status"] for row in rows_of(expdir)] == ["done"] * 5
    final = json.loads((expdir / "final.json").read_text())
    assert final["stop_reason"] == "evaluation budget of 5 reached"


@pytest.mark.slow
def test_the_command_line_beats_the_environment_in_the_spawned_job(study, emews_cli, tmp_path):
    path = study(system={"procs": 2}, study={"budget": 9, "objective": "toy_models:quadratic"})
    done = emews_cli("run", path, "--procs", "4", env={"PROCS": "2"})
    assert done.returncode == 0, done.stderr
    assert {row["rank"] for row in rows_of(only_expdir(tmp_path))} == {1, 2, 3}


@pytest.mark.slow
def test_an_error_of_any_kind_on_rank_0_ends_every_rank(study, tmp_path):
    path = study(study={"budget": 3, "objective": "toy_models:quadratic"})
    (tmp_path / "space.json").write_text("[{]")  # unreadable JSON
    mpiexec = Path(sys.executable).parent / "mpiexec"
    env = dict(os.environ, PYTHONPATH=str(SUPPORT))
    done = subprocess.run([str(mpiexec), "-n", "3", sys.executable, "-m", "emews", "run",
                           str(path)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2
    assert done.stderr.count("emews: error:") == 1 and "space.json" in done.stderr


@pytest.mark.slow
def test_a_study_needs_a_stopping_rule_unless_no_limit(study, emews_cli, tmp_path):
    path = study(system={"procs": 2}, study={"objective": "toy_models:quadratic"})
    refused = emews_cli("run", path)
    assert refused.returncode == 2
    assert refused.stderr.strip() == ("emews: error: [study]: needs a stopping rule (one of "
                                      "budget, max_iterations, patience, target, max_time, "
                                      "step_budget), or --no-limit to run until stopped")
    assert not (tmp_path / "experiments").exists()
    allowed = emews_cli("run", path, "--no-limit", "--set", "study.algorithm='classic_me'")
    assert allowed.returncode == 0, allowed.stderr
    assert len(rows_of(only_expdir(tmp_path))) == 12  # the classic ME's own three generations


@pytest.mark.slow
def test_a_study_whose_every_evaluation_failed_exits_1_with_the_reason(study, emews_cli,
                                                                       tmp_path):
    path = study(system={"procs": 2}, study={"budget": 3, "objective": "fault_me:always_fails"})
    done = emews_cli("run", path)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "emews: error: every evaluation failed (3); the most common reasons: FileNotFoundError: "
        f"no training data at /nonexistent/train.csv (3x); tracebacks: "
        f"{only_expdir(tmp_path)}/out/out-R.txt (R: the rank that ran the evaluation)")
    final = json.loads((only_expdir(tmp_path) / "final.json").read_text())
    assert final["best_point"] is None and final["best_value"] is None


@pytest.mark.slow
def test_the_master_enforces_an_iteration_limit_on_a_classic_me(study, emews_cli, tmp_path):
    path = study(system={"procs": 3}, study={"algorithm": "classic_me", "max_iterations": 2,
                                             "objective": "toy_models:quadratic"})
    done = emews_cli("run", path)
    assert done.returncode == 0, done.stderr
    expdir = only_expdir(tmp_path)
    assert [row["status"] for row in rows_of(expdir)] == ["done"] * 8  # two generations of 4
    assert json.loads((expdir / "final.json").read_text())["stop_reason"] == \
        "iteration limit of 2 reached"


def test_a_full_disk_ends_the_study_with_one_line_and_keeps_what_was_stored(study, tmp_path):
    path = study(system={"pool": "inprocess", "procs": 2},
                 study={"budget": 400, "objective": "toy_models:quadratic"})
    script = ("import resource, runpy, sys\n"
              "resource.setrlimit(resource.RLIMIT_FSIZE, (160_000, 160_000))\n"
              "sys.argv = ['emews', 'run', sys.argv[1]]\n"
              "runpy.run_module('emews', run_name='__main__')\n")
    env = dict(os.environ, PYTHONPATH=str(SUPPORT))
    done = subprocess.run([sys.executable, "-c", script, str(path)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("emews: error:")]
    assert "results.db: cannot" in line and "full" in line
    assert "Traceback" not in done.stderr
    rows = rows_of(only_expdir(tmp_path))
    assert 0 < sum(row["status"] == "done" for row in rows) < 400


@pytest.mark.slow
def test_a_dead_worker_rank_ends_the_job_with_one_line_and_resume_completes(
        study, start, gate, tmp_path, emews_cli):
    path = study(system={"procs": 4, "progress_interval": 60},
                 study={"budget": 5, "seed": 2, "objective": "fault_me:gated"})
    job = start("run", path)
    wait_until(lambda: len(list(gate.glob("pid-*"))) == 3, "three workers in their runs")
    expdir = only_expdir(tmp_path)
    model = int(next(gate.glob("pid-*")).name.split("-")[1])
    worker = int(Path(f"/proc/{model}/stat").read_text().rsplit(")", 1)[1].split()[1])
    os.kill(worker, signal.SIGKILL)
    _, stderr = job.communicate(timeout=120)
    assert job.returncode not in (0, 2)
    (line,) = [line for line in stderr.splitlines() if line.startswith("emews: error:")]
    assert line == ("emews: error: the MPI job ended with status "
                    f"{line.split('status ')[1].split()[0]} before the study did (a rank died "
                    "or was killed); 0 evaluations are stored; resume with: emews run --resume "
                    f"{expdir}")
    wait_until(lambda: not Path(f"/proc/{model}").exists(), "the dead worker's model to end")

    (gate / "go").touch()
    resumed = emews_cli("run", "--resume", expdir, env=gated_env(gate))
    assert resumed.returncode == 0, resumed.stderr
    assert [row["status"] for row in rows_of(expdir)] == ["done"] * 5


def test_seed_in_the_algorithm_table_is_one_clear_line(study, emews_cli, tmp_path):
    path = study(study={"budget": 3}, algorithm={"seed": 3})
    done = emews_cli("run", path)
    assert done.returncode == 2
    assert done.stderr.strip().endswith("[algorithm].seed: is a setting of [study], not of "
                                        "[algorithm], got 3")


@pytest.mark.slow
def test_a_job_near_its_walltime_drains_stores_every_result_and_the_next_job_resumes(
        study, start, gate, tmp_path, emews_cli):
    path = study(system={"procs": 3, "progress_interval": 60},
                 study={"budget": 6, "seed": 5, "objective": "fault_me:gated",
                        "algorithm": NO_READY})
    drain_at = time.time() + 8.0    # after both workers have started, even on a loaded machine
    job = start("run", path, env={"EMEWS_DRAIN_AT": str(drain_at)})
    wait_until(lambda: len(list(gate.glob("pid-*"))) == 2, "both workers in their runs")
    wait_until(lambda: time.time() > drain_at + 0.2, "the drain time")
    (gate / "go").touch()  # the runs in flight finish after the drain time
    out, err = job.communicate(timeout=120)
    assert job.returncode == 0, err
    assert "stopped: the job's walltime is about to run out; the next job resumes the study" \
        in out
    expdir = only_expdir(tmp_path)
    assert [row["status"] for row in rows_of(expdir)] == ["done", "done"]  # nothing new started
    resumed = emews_cli("run", "--resume", expdir, env=gated_env(gate))
    assert resumed.returncode == 0, resumed.stderr
    assert [row["status"] for row in rows_of(expdir)] == ["done"] * 6


def test_a_batch_script_drains_a_margin_before_its_walltime(study, emews_cli):
    path = study(study={"budget": 3, "objective": "toy_models:quadratic"})
    shown = emews_cli("submit", path, "--site", "slurm", "--dry-run", "--walltime", "00:10:00")
    assert shown.returncode == 0, shown.stderr
    assert "export EMEWS_DRAIN_AT=$(( $(date +%s) + 540 ))" in shown.stdout.splitlines()


def test_a_study_sets_its_own_drain_margin_shorter_than_its_walltime(study, emews_cli):
    path = study(system={"drain_margin": "00:02:30"},
                 study={"budget": 3, "objective": "toy_models:quadratic"})
    shown = emews_cli("submit", path, "--site", "slurm", "--dry-run", "--walltime", "00:10:00")
    assert shown.returncode == 0, shown.stderr
    assert "export EMEWS_DRAIN_AT=$(( $(date +%s) + 450 ))" in shown.stdout.splitlines()
    refused = emews_cli("submit", path, "--site", "slurm", "--dry-run", "--walltime", "2")
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines()[-1].endswith(
        "[system].drain_margin: must be shorter than the walltime, got '00:02:30'")


@pytest.mark.slow
def test_pool_jobs_are_submitted_for_a_served_study_only(study, emews_cli, tmp_path):
    path = study(study={"budget": 3, "objective": "toy_models:quadratic"})
    assert emews_cli("run", path, "--set", "system.pool='inprocess'").returncode == 0
    expdir = only_expdir(tmp_path)
    refused = emews_cli("submit", "--resume", expdir, "--site", "slurm", "--pools", "2",
                        "--dry-run")
    assert refused.returncode == 2 and "--pools: needs --resume EXPDIR of a study that emews " \
        "serve runs" in refused.stderr
    store = SQLiteStore(expdir / "results.db", create=False)   # as emews serve records it
    store.set_meta("service", {"address": "tcp://127.0.0.1:1"})
    store.close()
    shown = emews_cli("submit", "--resume", expdir, "--site", "slurm", "--pools", "2",
                      "--walltime", "00:10:00", "--dry-run")
    assert shown.returncode == 0, shown.stderr
    launches = [line for line in shown.stdout.splitlines() if " -m emews " in line]
    assert len(launches) == 2 and all(line.endswith(f"-m emews pool {expdir} --walltime 540")
                                      for line in launches)
    assert "--dependency" not in shown.stdout and "EMEWS_DRAIN_AT" not in shown.stdout
