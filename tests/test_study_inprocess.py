"""Whole studies in one process (the notebook pool): modes, failures, plugins, the store."""

import json
import math
import sqlite3

import pytest

import emews
from emews._errors import ConfigError, MEAborted

from conftest import stored_rows


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["async", "batch", "sequential"])
def test_a_study_evaluates_its_budget_and_reports_the_best(toy_config, mode, capsys):
    result = emews.run(toy_config(mode=mode))
    evaluations = stored_rows(result.expdir)
    assert len(evaluations) == 12 and {r["status"] for r in evaluations} == {"done"}
    best = min(evaluations, key=lambda r: r["result"])
    assert result.best_value == best["result"] == best["params"]["x"] ** 2 + best["params"]["n"]
    assert result.best_point == best["params"]
    assert result.stop_reason == "evaluation budget of 12 reached"
    out = capsys.readouterr().out
    assert "[progress] evaluations 12/12" in out and "best value" in out
    assert all(r["started"] <= r["finished"] for r in evaluations)


def test_failures_are_recorded_and_the_study_goes_on(toy_config):
    result = emews.run(toy_config(objective="toy_models:flaky", budget=30))
    evaluations = stored_rows(result.expdir)
    failed = [r for r in evaluations if r["status"] == "failed"]
    assert len(evaluations) == 30 and failed and result.failed == len(failed)
    assert all(r["result"] is None and r["error"] for r in failed)
    assert any("RuntimeError: bad x" in r["error"] for r in failed)
    assert all(r["params"]["x"] < 0 or r["params"]["n"] == 3 for r in failed)
    assert result.best_value == min(r["result"] for r in evaluations if r["status"] == "done")


def test_an_infinite_result_is_a_failure_not_the_best(toy_config):
    result = emews.run(toy_config(objective="toy_models:unbounded", budget=16))
    evaluations = stored_rows(result.expdir)
    infinite = [r for r in evaluations if r["params"]["x"] < 0]
    assert infinite and all(r["status"] == "failed" and "-inf" in r["error"] for r in infinite)
    assert result.best_value >= 0


def test_model_return_picks_the_last_epoch_of_a_history(toy_config):
    result = emews.run(toy_config(objective="toy_models:history_dict", budget=4))
    assert all(r["result"] == pytest.approx(r["params"]["x"] ** 2) for r in stored_rows(result.expdir))


def test_a_classic_eqpy_module_runs_unchanged(toy_config):
    result = emews.run(toy_config(algorithm="classic_me", mode="async"))
    evaluations = stored_rows(result.expdir)
    assert len(evaluations) == 12
    assert result.stop_reason == "classic ME finished"
    assert json.loads((result.expdir / "final.json").read_text())["best_value"] == \
        result.best_value


def test_a_dying_me_is_reported_with_its_traceback_and_nothing_is_lost(toy_config, tmp_path):
    with pytest.raises(MEAborted) as error:
        emews.run(toy_config(algorithm="raising_me"))
    assert "the ME broke on purpose" in error.value.traceback
    (evaluation,) = stored_rows(tmp_path / "t" / "EXP001")
    assert evaluation["status"] == "done" and evaluation["result"] == 1.0


def test_a_sweep_evaluates_each_line_once_in_order(toy_config, tmp_path):
    upf = tmp_path / "points.jsonl"
    points = [{"x": i / 10, "n": i % 4, "act": "relu"} for i in range(7)]
    upf.write_text("# a comment\n" + "\n".join(json.dumps(p) for p in points) + "\n\n")
    config = toy_config(algorithm="sweep", budget=None, mode="batch")
    config["algorithm"] = {"file": str(upf)}
    result = emews.run(config)
    assert [r["params"] for r in stored_rows(result.expdir)] == points
    assert result.stop_reason == "the algorithm has no more points to propose"


def test_echo_runs_nothing_and_is_deterministic(toy_config):
    result = emews.run(toy_config(impl="echo", objective=None, budget=5))
    for row in stored_rows(result.expdir):
        p = row["params"]
        assert row["result"] == pytest.approx(p["x"] ** 2 + p["n"] ** 2)
    assert not (result.expdir / "run").exists()


def test_an_unknown_algorithm_is_a_config_error_and_writes_nothing(toy_config, tmp_path):
    with pytest.raises(ConfigError, match=r"\[study\].algorithm: must be one of .*random"):
        emews.run(toy_config(algorithm="simulated_annealing"))
    assert not (tmp_path / "t").exists()


def test_the_store_is_plain_sqlite_with_the_documented_columns(toy_config):
    result = emews.run(toy_config(budget=3))
    db = sqlite3.connect(result.expdir / "results.db")
    columns = {row[1] for row in db.execute("PRAGMA table_info(evaluations)")}
    assert {"id", "params", "result", "status", "error", "rank", "started",
            "finished"} <= columns
    assert db.execute("SELECT COUNT(*) FROM evaluations WHERE status='done'").fetchone()[0] == 3
    assert not math.isnan(result.best_value)
