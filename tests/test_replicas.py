"""Replicas: each point evaluated R times with distinct seeds, every replica a row of the store,
the algorithm told one value per point (mean or worst); ``final.json``, ``emews status``,
``show``, ``report``, ``export`` and the dashboard's view all judge the study by its points."""

import collections
import json
import math
import re
import statistics

import numpy as np
import pytest

import emews
from emews.algorithms.random_search import RandomSearch
from emews._config import Study
from emews.core._algorithm import point_key
from emews.core._replicas import Replicas, wrap
from emews._errors import ConfigError
from emews.inspect import load
from emews._result import result_of
from emews._space import Space

from conftest import TOY_SPACE, stored_rows

SPACE = TOY_SPACE


@pytest.fixture
def make_config(toy_config):
    def make(record, **study):
        config = toy_config(**{"budget": 24, "seed": 3, "objective": "toy_models:noisy",
                               "algorithm": "recording_algorithm:RecordingRandom",
                               "replicas": 3, **study})
        return {**config, "algorithm": {"record": str(record)}}

    return make


def by_point(rows, seed_param="rng_seed"):
    """Store rows grouped by their point without the seed: key -> [row, ...]."""
    groups = collections.defaultdict(list)
    for row in rows:
        groups[point_key({k: v for k, v in row["params"].items() if k != seed_param})].append(row)
    return groups


def told(record):
    return [json.loads(line) for line in record.read_text().splitlines()]


@pytest.mark.parametrize("mode,objective", [("async", "mean"), ("batch", "worst")])
def test_every_replica_is_stored_and_the_algorithm_is_told_one_value_per_point(
        make_config, tmp_path, mode, objective):
    record = tmp_path / "told.jsonl"
    result = emews.run(make_config(record, mode=mode, replica_objective=objective))
    rows = stored_rows(result.expdir)
    assert len(rows) == 24
    groups = by_point(rows)
    assert len(groups) == 8 and all(len(g) == 3 for g in groups.values())
    for group in groups.values():
        seeds = [row["params"]["rng_seed"] for row in group]
        assert len(set(seeds)) == 3 and all(isinstance(s, int) for s in seeds)
        assert all(row["status"] == "failed" for row in group
                   if row["params"]["act"] == "tanh" and row["params"]["rng_seed"] % 2)
    assert any(row["status"] == "failed" for row in rows)   # the seed reached the model
    everything = told(record)
    assert len(everything) == 8
    for entry in everything:
        assert "rng_seed" not in entry["point"]
        values = [row["result"] for row in groups[point_key(entry["point"])]
                  if row["status"] == "done"]
        if not values:
            assert entry["value"] is None            # every replica failed: a failure
        elif objective == "mean":
            assert entry["value"] == pytest.approx(statistics.mean(values))
        else:
            assert entry["value"] == max(values)


def test_emews_show_summarizes_each_point_over_its_replicas(make_config, tmp_path,
                                                            emews_cli, capsys):
    record = tmp_path / "told.jsonl"
    result = emews.run(make_config(record, replica_seed_param="rng_seed", budget=12))
    progress = [line for line in capsys.readouterr().out.splitlines()
                if line.startswith("[progress]")]
    summary = load(result.expdir).points
    groups = by_point(stored_rows(result.expdir))
    assert len(summary) == 4
    for entry in summary:
        values = [r["result"] for r in groups[point_key(entry["point"])] if r["status"] == "done"]
        assert entry["count"] == len(values) and entry["failed"] == 3 - len(values)
        if values:
            assert entry["mean"] == pytest.approx(statistics.mean(values))
            assert entry["value"] == pytest.approx(statistics.mean(values))
        if len(values) > 1:
            assert entry["std"] == pytest.approx(statistics.stdev(values))
    ranked = [e["value"] for e in summary if e["value"] is not None]
    assert ranked == sorted(ranked)
    # the study's best is the best point by its replicas' mean, not the luckiest replica
    final = json.loads((result.expdir / "final.json").read_text())
    assert (final["best_point"], final["best_value"]) == (summary[0]["point"], ranked[0])
    assert (result.best_point, result.best_value) == (summary[0]["point"], ranked[0])
    assert result_of(result.expdir).best_value == ranked[0]
    assert f"| best {ranked[0]:.6g} |" in progress[-1]   # the live best is a point's too
    done = emews_cli("show", result.expdir)
    assert done.returncode == 0, done.stderr
    shown = " ".join(done.stdout.split())               # rich wraps the title
    with_value = sum(entry["count"] > 0 for entry in summary)
    assert f"best {with_value} points by the mean of 3 replicas (4 points)" in shown
    assert f"{summary[0]['value']:.6g}" in shown
    assert " ".join(map(str, summary[0]["ids"])) in shown   # its replicas, grouped


@pytest.mark.slow
def test_status_show_report_and_export_agree_with_final_json(make_config, tmp_path,
                                                              emews_cli):
    """The study's best is its best point by ``replica_objective`` everywhere, never its
    luckiest replica; ``show`` groups each point's replicas with their mean, std and count."""
    optuna = pytest.importorskip("optuna")
    result = emews.run(make_config(tmp_path / "told.jsonl", replica_objective="worst"))
    final = json.loads((result.expdir / "final.json").read_text())
    rows = stored_rows(result.expdir)
    groups = by_point(rows)
    lucky = min((r for r in rows if r["status"] == "done"), key=lambda r: r["result"])
    assert lucky["result"] < final["best_value"]   # the luckiest replica is not the best

    status = emews_cli("status", result.expdir, "--json")
    assert status.returncode == 0, status.stderr
    best = json.loads(status.stdout)["best"]
    assert (best["params"], best["value"]) == (final["best_point"], final["best_value"])
    replicas = groups[point_key(final["best_point"])]
    assert sorted(best["ids"]) == sorted(r["id"] for r in replicas)
    values = [r["result"] for r in replicas if r["status"] == "done"]
    assert best["value"] == max(values) and best["count"] == len(values)
    assert best["mean"] == pytest.approx(statistics.mean(values))
    study = load(result.expdir)                      # the Python API says the same
    assert (study.best["params"], study.best["result"]) == (final["best_point"],
                                                            final["best_value"])
    text = emews_cli("status", result.expdir)
    assert f"{final['best_value']:.6g} (worst of 3 replicas" in text.stdout

    show = emews_cli("show", result.expdir, "--json")
    assert show.returncode == 0, show.stderr
    points = json.loads(show.stdout)
    assert (points[0]["params"], points[0]["value"]) == (final["best_point"],
                                                         final["best_value"])
    assert len(points) == len([g for g in groups.values()
                               if any(r["status"] == "done" for r in g)])
    for point in points:
        replicas = groups[point_key(point["params"])]
        assert sorted(point["ids"]) == sorted(r["id"] for r in replicas)
        values = [r["result"] for r in replicas if r["status"] == "done"]
        assert point["count"] == len(values) and point["failed"] == 3 - len(values)
        assert point["mean"] == pytest.approx(statistics.mean(values))
        if len(values) > 1:
            assert point["std"] == pytest.approx(statistics.stdev(values))
    csv_lines = emews_cli("show", result.expdir, "--csv").stdout.splitlines()
    assert csv_lines[0].startswith("value,mean,std,count,failed,evaluations,x,n,act")
    assert len(csv_lines) == len(points) + 1

    report = emews_cli("report", result.expdir)
    assert report.returncode == 0, report.stderr
    page = (result.expdir / "report.html").read_text()
    assert "<h2>Best points</h2>" in page
    assert f"<td>{final['best_value']:.6g}</td>" in page.split("<h2>Best points</h2>")[1]

    storage = f"sqlite:///{tmp_path / 'optuna.db'}"
    export = emews_cli("export", result.expdir, "--to", "optuna", storage)
    assert export.returncode == 0, export.stderr
    exported = optuna.load_study(study_name=result.expdir.name, storage=storage)
    assert len(exported.trials) == len(groups)
    assert exported.best_trial.params == final["best_point"]
    assert exported.best_value == final["best_value"]
    assert sorted(exported.best_trial.user_attrs["emews_ids"]) == sorted(best["ids"])

    view = load(result.expdir).to_optuna()       # what emews dashboard serves, live
    assert len(view.trials) == len(groups)
    assert (view.best_trial.params, view.best_value) == (final["best_point"],
                                                         final["best_value"])
    assert [t.number for t in view.trials] == list(range(len(groups)))


def test_a_seed_parameter_that_the_space_has_is_refused_in_one_line(make_config, tmp_path):
    config = make_config(tmp_path / "told.jsonl", replica_seed_param="n")
    with pytest.raises(ConfigError, match=r"^config: \[study\]\.replica_seed_param: must not be a "
                                          r"parameter of the search space \(x, n, act\), got 'n'$"):
        emews.run(config)
    assert not (tmp_path / "t").exists()


@pytest.mark.parametrize("key,value,rule", [
    ("replicas", 0, "must be positive"),
    ("replica_objective", "median", "must be one of ['mean', 'worst']"),
])
def test_bad_replica_settings_are_named(make_config, tmp_path, key, value, rule):
    with pytest.raises(ConfigError, match=re.escape(f"[study].{key}: {rule}")):
        emews.run(make_config(tmp_path / "told.jsonl", **{key: value}))


def test_replicas_of_a_classic_eqpy_module_are_refused(make_config, tmp_path):
    with pytest.raises(ConfigError, match=r"\[study\]\.replicas: needs an ask/tell algorithm"):
        emews.run(make_config(tmp_path / "told.jsonl", algorithm="classic_me"))


def test_one_replica_leaves_the_algorithm_as_it_is():
    algorithm = RandomSearch(Space.from_ga_json(SPACE), seed=0)
    assert wrap(algorithm, {"replicas": 1}) is algorithm and wrap(algorithm, None) is algorithm


def test_a_resumed_history_is_grouped_and_told_once_per_point():
    space = Space.from_ga_json(SPACE)
    inner = RandomSearch(space, seed=0)
    told_inner = []
    inner.tell = lambda points, values: told_inner.extend(zip(points, values))
    replicas = Replicas(space, seed=0, algorithm=inner, replicas=2, objective="worst")
    point = {"x": 0.5, "n": 1, "act": "relu"}
    replicas.tell([{**point, "rng_seed": 7}], [2.0])
    assert told_inner == []                                  # one of two replicas so far
    replicas.tell([{**point, "rng_seed": 9}], [3.0])
    assert told_inner == [(point, 3.0)]
    replicas.tell([{**point, "rng_seed": 1}, {**point, "rng_seed": 2}], [math.nan, math.nan])
    assert math.isnan(told_inner[-1][1])


def test_the_state_restores_the_replicas_still_to_propose():
    space = Space.from_ga_json(SPACE)

    def build():
        return Replicas(space, seed=5, algorithm=RandomSearch(space, seed=5), replicas=3)

    first = build()
    first.ask(4)                                  # two points: one whole, one with 2 left
    again = build()
    again.restore(first.state())
    assert again.ask(5) == first.ask(5)
    seeds = [p["rng_seed"] for p in build().ask(3)]
    assert len(set(seeds)) == 3 and np.all(np.array(seeds) >= 0)


def test_a_budget_that_would_cut_a_point_s_replicas_short_is_refused(make_config, tmp_path):
    with pytest.raises(ConfigError, match=re.escape(
            "[study].budget: must be a multiple of [study].replicas (3), so that the budget "
            "cuts no point's replicas short, got 10")):
        emews.run(make_config(tmp_path / "told.jsonl", budget=10))
    assert not (tmp_path / "t").exists()


def test_a_point_whose_replicas_a_limit_cut_short_has_no_value_and_is_never_the_best(tmp_path):
    """A time limit or ``emews stop`` can end a study between a point's replicas: that point
    was never told to its search, so it gets no value and cannot be the study's best, however
    lucky its finished replicas were."""
    from emews.core._replicas import summarize
    from emews.evaluate import Outcome
    from emews._result import final_record
    from emews.store import SQLiteStore

    store = SQLiteStore(tmp_path / "results.db")
    rows = [({"x": 1.0}, 1, 0.50), ({"x": 1.0}, 2, 0.70), ({"x": 1.0}, 3, 0.60),   # complete
            ({"x": 2.0}, 4, 0.01), ({"x": 2.0}, 5, 0.02)]           # 2 of 3: cut short
    store.add([(i, json.dumps({**point, "rng_seed": seed}), f"RUN{i:06d}", 1, i)
               for i, (point, seed, _) in enumerate(rows)])
    store.finish([(i, 1, Outcome(value, "done", None, "", 0.0, 1.0, {}), 1, "done")
                  for i, (_, _, value) in enumerate(rows)])
    summary = summarize(store.rows(), "rng_seed", "mean", 3)
    assert [(s["point"], s["complete"], s["count"]) for s in summary] == [
        ({"x": 1.0}, True, 3), ({"x": 2.0}, False, 2)]
    assert summary[0]["value"] == pytest.approx(0.6) and summary[1]["value"] is None
    assert summary[1]["mean"] == pytest.approx(0.015)          # what did finish, for the record
    study = Study(replicas=3, replica_seed_param="rng_seed", replica_objective="mean")
    final = final_record('{"stop_reason": "time limit of 60.0 s reached"}', store, study)
    store.close()
    assert (final["best_point"], final["best_value"]) == ({"x": 1.0}, pytest.approx(0.6))


def test_a_point_with_a_pruned_replica_was_told_so_the_record_and_inspect_name_it_the_best(
        tmp_path):
    """A pruned replica is told to its search (NaN, as a failed one is), so its point is
    complete: its value is its other replicas' mean, and the final record and
    ``emews.inspect`` name the same best point (one function judges it for both)."""
    from emews.evaluate import Outcome
    from emews._result import final_record
    from emews.store import SQLiteStore

    store = SQLiteStore(tmp_path / "results.db")
    rows = [({"x": 1.0}, 1, 0.50, "done"), ({"x": 1.0}, 2, 0.05, "pruned"),
            ({"x": 1.0}, 3, 0.60, "done"),
            ({"x": 2.0}, 4, 0.90, "done"), ({"x": 2.0}, 5, 0.80, "done"),
            ({"x": 2.0}, 6, 1.00, "done")]
    store.add([(i, json.dumps({**point, "rng_seed": seed}), f"RUN{i:06d}", 1, i)
               for i, (point, seed, _, _) in enumerate(rows)])
    store.finish([(i, 1, Outcome(value, status, None, "", 0.0, 1.0, {}), 1, status)
                  for i, (_, _, value, status) in enumerate(rows)])
    store.commit()
    settings = {"replicas": 3, "replica_seed_param": "rng_seed", "replica_objective": "mean"}
    final = final_record("{}", store, Study(**settings))
    store.close()
    assert (final["best_point"], final["best_value"]) == ({"x": 1.0}, pytest.approx(0.55))
    (tmp_path / "config.json").write_text(json.dumps({"study": settings}))
    best = load(tmp_path).best
    assert (best["params"], best["result"], best["failed"]) == ({"x": 1.0}, pytest.approx(0.55),
                                                                1)
