"""What a study counts and tells while it runs and at its end: pruned runs among the
evaluations, the ETA of the limit that ends the study, evaluations running apart from those
queued, a rate without the time a study was stopped, and a study that prints nothing."""

import json
import re
import time

import pytest

import emews
from emews.inspect._summary import summary
from emews._status import FINAL, Status

from conftest import stored_rows

ASHA = {"min_resource": 1, "max_resource": 9, "reduction_factor": 3}


def nap(params):
    """A model whose runs take 50 to 200 ms, by ``n``: their results come back one by one."""
    time.sleep(0.05 * (1 + params["n"]))
    return params["x"] ** 2


def progress_lines(text):
    return [line for line in text.splitlines() if line.startswith("[progress]")]


def final_json(result):
    return json.loads((result.expdir / "final.json").read_text())


def test_pruned_runs_count_as_evaluations_in_the_result_the_summary_and_final_json(
        toy_config, capsys):
    cfg = toy_config(objective="fidelity_models:curve", pruner="asha", seed=2, step_budget=150)
    del cfg["study"]["budget"]   # the step budget alone ends the study
    cfg["pruner"] = ASHA
    result = emews.run(cfg)
    out = capsys.readouterr().out
    rows = stored_rows(result.expdir)
    statuses = [row["status"] for row in rows]
    pruned, done = statuses.count(Status.PRUNED), statuses.count(Status.DONE)
    assert result.stop_reason == "step budget of 150 reached"
    assert pruned and done and result.pruned == pruned and result.failed == 0
    assert result.evaluations == done + pruned == final_json(result)["evaluations"]
    assert f"emews: {done + pruned} evaluations (0 failed, {pruned} pruned)" in out


def test_the_eta_of_a_study_that_a_step_budget_ends_comes_from_the_steps_rate(toy_config,
                                                                               capsys):
    # an evaluation budget that would take hours at this rate: the step budget ends the study
    result = emews.run(toy_config(objective="fidelity_models:curve", budget=10_000_000,
                                  step_budget=90))
    etas = [re.search(r"\| ETA (?:(\d+)h)?(\d+)m(\d\d)s$", line)
            for line in progress_lines(capsys.readouterr().out)]
    assert result.stop_reason == "step budget of 90 reached"
    finished = [row for row in stored_rows(result.expdir) if row["status"] in FINAL]
    assert len(finished) == result.evaluations == final_json(result)["evaluations"] >= 10
    seconds = [int(m[1] or 0) * 3600 + int(m[2]) * 60 + int(m[3]) for m in etas if m]
    assert seconds and max(seconds) < 600, etas


def test_the_progress_line_shows_running_and_queued_evaluations_apart(toy_config, capsys):
    cfg = toy_config(objective="test_study_counts:nap", budget=10)   # 2 workers, 2 more ready
    result = emews.run(cfg)
    lines = progress_lines(capsys.readouterr().out)
    running = [int(re.search(r"\| running (\d+)", line)[1]) for line in lines]
    queued = [int(m[1]) for line in lines if (m := re.search(r"\| queued (\d+)", line))]
    assert max(running) <= 2 and queued and max(queued) <= 2, lines
    assert [row["status"] for row in stored_rows(result.expdir)] == [Status.DONE] * 10


def test_the_rate_after_a_resume_leaves_out_the_time_the_study_was_stopped(toy_config):
    first = emews.run(toy_config(budget=4), quiet=True)
    stopped = 2.0
    time.sleep(stopped)   # the study stays stopped for a while before its resume
    resumed = emews.run(None, {"study.budget": 8}, resume=first.expdir, quiet=True)
    info = summary(emews.load(resumed.expdir))
    assert resumed.evaluations == info["finished"] == 8
    rows = stored_rows(resumed.expdir)
    spans = [max(row["finished"] for row in part) - min(row["started"] for row in part)
             for part in (rows[:4], rows[4:])]
    # counting the stop, the rate would be at most 8 per (both runs' spans + the stop)
    assert info["rate_per_minute"] > 8 / (spans[0] + stopped + spans[1]) * 60


@pytest.mark.parametrize("how", ["argument", "setting"])
def test_a_quiet_study_prints_nothing_and_stores_everything(toy_config, capfd, how):
    cfg = toy_config(budget=6)
    if how == "setting":
        cfg["system"]["quiet"] = True
    result = emews.run(cfg, quiet=how == "argument")
    assert capfd.readouterr().out == ""
    rows = stored_rows(result.expdir)
    assert [row["status"] for row in rows] == [Status.DONE] * 6
    assert result.evaluations == final_json(result)["evaluations"] == 6
    assert result.best_value == min(row["result"] for row in rows)


def test_a_quiet_study_run_by_the_command_under_mpiexec_prints_nothing(study, emews_cli,
                                                                       tmp_path):
    path = study(system={"procs": 3, "quiet": True},
                 study={"budget": 5, "objective": "toy_models:quadratic"})
    done = emews_cli("run", path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    (expdir,) = (tmp_path / "experiments" / "study").iterdir()
    assert len(stored_rows(expdir)) == json.loads((expdir / "final.json").read_text())[
        "evaluations"] == 5
