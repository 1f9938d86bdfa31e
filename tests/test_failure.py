"""The failure policy: retry, fail (NaN or a penalty) or abort; always recorded in the store."""

import json
import math
from pathlib import Path

import pytest

import emews
from emews import _config as configuration
from emews._errors import ConfigError, StudyAborted
from emews.core._algorithm import Objectives, PrunedResult
from emews.core._criteria import Criteria
from emews.core._failure import FailurePolicy, classify
from emews.evaluate import Outcome
from emews.store import SQLiteStore

SUPPORT = Path(__file__).parent / "support"
SPACE = [{"name": "x", "type": "float", "lower": -2.0, "upper": 2.0}]
FAILED = Outcome(math.nan, "failed", "RuntimeError: boom")
ONE = Criteria(("value",), ("minimize",))


@pytest.mark.parametrize("outcome", [Outcome(0.5), Outcome(-3.0)])
def test_a_good_result_is_done_with_its_value(outcome):
    decision = classify(outcome, 1, FailurePolicy(retries=2), ONE)
    assert (decision.action, decision.search_value) == ("done", outcome.value)


def test_retries_come_first_then_the_final_action():
    policy = FailurePolicy(retries=2, on_failure="abort")
    assert [policy.decide(FAILED, attempt).action for attempt in (1, 2, 3)] == \
        ["retry", "retry", "abort"]
    assert policy.decide(FAILED, 3).reason == "RuntimeError: boom"


def test_fail_tells_nan_or_the_penalty():
    assert math.isnan(FailurePolicy().decide(FAILED, 1).search_value)
    decision = FailurePolicy(penalty=1e6).decide(FAILED, 1)
    assert (decision.action, decision.search_value, decision.reason) == (
        "fail", 1e6, "RuntimeError: boom")


def test_a_nan_marked_done_is_a_failure_too():
    assert classify(Outcome(math.nan), 1, FailurePolicy(), ONE).action == "fail"


def test_classify_turns_an_outcome_into_its_status_told_value_and_count():
    policy = FailurePolicy(retries=1, penalty=9.0)
    done = classify(Outcome(0.5), 1, policy, ONE)
    assert (done.status, done.action, done.search_value, done.limit_value) == (
        "done", "done", 0.5, 0.5)
    retry = classify(FAILED, 1, policy, ONE)
    assert (retry.status, retry.action, retry.reason) == ("queued", "retry",
                                                           "RuntimeError: boom")
    failed = classify(FAILED, 2, policy, ONE)
    assert (failed.status, failed.action, failed.search_value) == ("failed", "fail", 9.0)
    assert math.isnan(failed.limit_value)
    aborted = classify(FAILED, 2, FailurePolicy(1, "abort"), ONE)
    assert (aborted.status, aborted.action) == ("failed", "abort")
    pruned = classify(Outcome(0.7, "pruned", "pruned at step 2"), 1, policy, ONE,
                      {2: 0.7, 1: 0.9})
    assert (pruned.status, pruned.action) == ("pruned", "pruned")
    assert isinstance(pruned.search_value, PrunedResult)
    assert pruned.search_value.curve == {1: 0.9, 2: 0.7}
    assert math.isnan(pruned.limit_value)
    lost = classify(Outcome(math.nan, "interrupted", "lease lost"), 5, policy, ONE)
    assert (lost.status, lost.action) == ("queued", "retry")   # whatever the attempt
    two = Criteria(("loss", "size"), ("minimize", "maximize"))
    vector = classify(Outcome(1.0, objectives=[1.0, 3.0]), 1, policy, two)
    assert isinstance(vector.search_value, Objectives)
    assert vector.search_value.values == (1.0, -3.0)
    assert vector.limit_value is vector.search_value


@pytest.mark.parametrize("kwargs, where", [({"retries": -1}, "[failure].retries"),
                                           ({"on_failure": "ignore"}, "[failure].on_failure"),
                                           ({"penalty": math.inf}, "[failure].penalty")])
def test_bad_policies_are_config_errors(kwargs, where):
    with pytest.raises(ConfigError, match=where.replace("[", r"\[").replace("]", r"\]")):
        FailurePolicy(**kwargs)


def test_the_config_validates_the_failure_table():
    with pytest.raises(ConfigError, match=r"\[failure\].on_failure: must be one of"):
        configuration.load({"failure": {"on_failure": "retry"}})


@pytest.fixture
def config(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(SUPPORT))
    (tmp_path / "space.json").write_text(json.dumps(SPACE))

    def make(failure, budget=6, procs=3, **study):
        base = {"name": "f", "space": str(tmp_path / "space.json"), "budget": budget,
                "seed": 3, "impl": "py", "data_dir": str(tmp_path / "data")}
        base.update(study)
        return {"system": {"pool": "inprocess", "procs": procs, "progress_interval": 0.0},
                "study": base, "failure": failure}

    return make


def stored(expdir):
    store = SQLiteStore(Path(expdir) / "results.db")
    try:
        return store.rows(), store.meta("final", {})
    finally:
        store.close()


def test_a_retried_point_succeeds_on_its_second_attempt(config):
    result = emews.run(config({"retries": 1}, objective="failing_models:fails_first_attempt"))
    rows, _ = stored(result.expdir)
    assert len(rows) == 6 and {r["status"] for r in rows} == {"done"}
    assert {r["attempt"] for r in rows} == {2}
    assert all(r["result"] == r["params"]["x"] for r in rows)


def test_retries_exhausted_fail_with_the_last_reason(config):
    result = emews.run(config({"retries": 2}, budget=8,
                              objective="failing_models:fails_when_negative"))
    rows, _ = stored(result.expdir)
    failed = [r for r in rows if r["status"] == "failed"]
    done = [r for r in rows if r["status"] == "done"]
    assert failed and done and len(rows) == 8
    assert all(r["attempt"] == 3 and r["params"]["x"] < 0 for r in failed)
    assert all("x must not be negative" in r["error"] for r in failed)
    assert all(r["attempt"] == 1 for r in done)


@pytest.mark.slow
def test_failed_app_runs_keep_reason_and_model_log_and_the_algorithm_gets_the_penalty(config,
                                                                                      tmp_path):
    (tmp_path / "space.json").write_text(json.dumps(
        SPACE + [{"name": "behaviour", "type": "constant", "value": "raise"}]))
    cfg = config({"penalty": 1e6}, budget=3, procs=2, impl="app", model_name="toy")
    cfg["model"] = {"python_dir": str(SUPPORT / "candle_models")}
    result = emews.run(cfg)
    rows, final = stored(result.expdir)
    assert len(rows) == 3 and {r["status"] for r in rows} == {"failed"}
    for row in rows:
        assert row["result"] is None
        assert row["error"].startswith("the model exited with status 1: RuntimeError: the toy "
                                       "model failed on purpose")
        assert "MODEL.SH: START" in row["log_tail"] and "Traceback" in row["log_tail"]
    assert final["best_value"] is None and final["best_point"] is None  # never a failed point
    assert result.best_value is None


def test_abort_ends_the_study_and_records_why(config):
    with pytest.raises(StudyAborted, match="the failure policy aborted the study: ValueError: "
                                           "x must not be negative"):
        emews.run(config({"on_failure": "abort"}, budget=40,
                         objective="failing_models:fails_when_negative"))
    (expdir,) = (Path(config({})["study"]["data_dir"]) / "f").iterdir()
    rows, final = stored(expdir)
    failed = [r for r in rows if r["status"] == "failed"]
    assert failed and all("x must not be negative" in r["error"] for r in failed)
    assert len([r for r in rows if r["status"] in ("done", "failed")]) < 40
    assert final["stop_reason"].startswith("the failure policy aborted the study")
