"""The peers part (issue 45): Bayesmark's tasks, a smoke run with every contender that installs
here, the normalized score, and SMAC3 in a virtualenv of its own (slow: it installs SMAC3)."""

import importlib.util
import json
from dataclasses import replace

import numpy as np
import pytest

from benchmarks import bayesmark_tasks, lc_tables, peers, peers_runs
from benchmarks.sizes import SMOKE


def test_the_tasks_cover_bayesmarks_models_datasets_and_metrics():
    parsed = [bayesmark_tasks.parse(t) for t in bayesmark_tasks.TASKS]
    assert len(parsed) >= 12 and len({d for _, d, _ in parsed}) >= 4
    assert {bayesmark_tasks.group(t) for t in bayesmark_tasks.TASKS} == {"classifiers",
                                                                         "regressors"}
    assert {m for _, _, m in parsed} == {"acc", "nll", "mse", "mae"}
    svm = {p.name: p for p in bayesmark_tasks.space("SVM-wine-nll").free}
    assert (svm["C"].lower, svm["C"].upper, svm["C"].log) == (1.0, 1e3, True)
    assert (svm["gamma"].lower, svm["gamma"].upper) == (1e-4, 1e-3)
    with pytest.raises(ValueError, match="'SVM-boston-mse' is not a Bayesmark task"):
        bayesmark_tasks.parse("SVM-boston-mse")


def test_a_tasks_loss_is_its_cross_validated_metric_on_bayesmarks_split():
    from sklearn.datasets import load_iris
    from sklearn.model_selection import cross_val_score, train_test_split
    from sklearn.neighbors import KNeighborsClassifier

    x, y = load_iris(return_X_y=True)
    x, _, y, _ = train_test_split(x, y, test_size=0.2, random_state=0, shuffle=True)
    accuracy = cross_val_score(KNeighborsClassifier(n_neighbors=7, p=2), x, y, cv=5).mean()
    point = {"n_neighbors": 7, "p": 2, "task": "kNN-iris-acc"}
    assert bayesmark_tasks.objective(point) == pytest.approx(1.0 - accuracy)
    assert bayesmark_tasks.objective({**point, "task": "kNN-iris-nll"}) > 0


def test_random_search_scores_0_on_average_and_the_best_value_100():
    rng = np.random.default_rng(3)
    runs = [{"mode": "batch", "problem": "t", "contender": "random", "seed": s,
             "best_by_round": [5.0, v]} for s, v in enumerate(rng.uniform(2, 4, 10))]
    runs += [{"mode": "batch", "problem": "t", "contender": "peer", "seed": s,
              "best_by_round": [5.0, v]} for s, v in enumerate([1.0, 3.0, 6.0])]
    scores = peers.normalized_scores(runs)["batch"]["t"]
    random_mean = np.mean([r["best_by_round"][-1] for r in runs[:10]])
    assert np.mean(list(scores["random"].values())) == pytest.approx(0.0, abs=1e-9)
    assert scores["peer"][0] == pytest.approx(100.0)                 # the best any run found
    assert scores["peer"][1] == pytest.approx(100 * (random_mean - 3) / (random_mean - 1))
    assert scores["peer"][2] < 0                                     # worse than random's mean


@pytest.mark.slow          # about 25 s alone: 28 runs, each a fresh process
def test_a_smoke_run_has_every_contender_that_installs_here_and_names_the_missing(tmp_path,
                                                                                   capsys):
    sizes = SMOKE
    part = peers.run(sizes, jobs=2, cache_directory=tmp_path / "runs",
                     venv_directory=tmp_path / "venvs", install=False)
    torch = importlib.util.find_spec("torch") is not None
    expected = [*sizes.peers_ours, "optuna TPE", "optuna CMA-ES", *(["optuna GP"] * torch)]
    assert sorted(part["contenders"]) == sorted(expected)
    assert all("not installed" in part["missing"][n] for n in peers_runs.VENV_PEERS)
    assert ("optuna GP" in part["missing"]) != torch
    assert sizes.peers_modes == ("batch", "sequential", "async")
    assert {peers_runs.tasks_of(t).group(t) for t in sizes.peers_tasks} == {
        "classifiers", "regressors", "tables"}
    assert len(part["runs"]) == len(sizes.peers_tasks) * len(expected) * 3 * sizes.peers_seeds
    rounds = {"batch": (sizes.peers_rounds, sizes.peers_rounds * sizes.peers_batch),
              "async": (sizes.peers_rounds, sizes.peers_rounds * sizes.peers_batch),
              "sequential": (sizes.peers_sequential_budget, sizes.peers_sequential_budget)}
    for r in part["runs"]:
        assert (len(r["best_by_round"]), r["evaluations"]) == rounds[r["mode"]]
        assert r["best_by_round"] == sorted(r["best_by_round"], reverse=True)
        assert r["ran_as"] == r["mode"]          # every contender here has an async mode
    finals = set(lc_tables.load("wine").loss[:, -1])
    assert all(r["best_by_round"][-1] in finals for r in part["runs"]
               if r["problem"] == "lc-wine")      # a table's values are its final losses
    table = peers.markdown(part)
    assert all(f"| {n} (missing) |" in table for n in peers_runs.VENV_PEERS)
    assert "| random (ours) | 0.0 | 0.0 | 0.0 | 0.0 |" in table
    assert "#### sequential" in table and "#### batch" in table and "#### async" in table
    # Run again: everything comes from the cache, one line per run.
    cache = next((tmp_path / "runs").glob("*.jsonl"))
    assert len(cache.read_text().splitlines()) == len(part["runs"])
    capsys.readouterr()
    again = peers.run(sizes, jobs=2, cache_directory=tmp_path / "runs",
                      venv_directory=tmp_path / "venvs", install=False)
    n = len(part["runs"])
    assert f"{n} of {n} runs from the cache" in capsys.readouterr().out
    assert again["summary"] == part["summary"]


@pytest.mark.slow
@pytest.mark.parametrize("peer", list(peers_runs.VENV_PEERS))
def test_a_peer_runs_in_its_own_virtualenv_on_its_ask_tell_interface(peer, tmp_path):
    """Installs the peer once under the suite's cache of virtualenvs; runs it in the batch
    and async modes (a peer without an async mode in batch mode there), on a Bayesmark task
    and a table's."""
    why = peers_runs.install(peer)
    if why and peer in peers_runs.PIP_OPTIONS:   # HEBO: no wheel of its pins for Python 3.11
        pytest.skip(f"{peer} cannot be installed here (reported as missing): {why}")
    assert why is None
    sizes = replace(SMOKE, peers_ours=("random",), peers_peers=(peer,),
                    peers_tasks=("SVM-iris-acc", "lc-iris"), peers_modes=("batch", "async"))
    part = peers.run(sizes, jobs=1, cache_directory=tmp_path, install=False)
    assert part["contenders"] == ["random", peer] and not part["missing"]
    assert not part["failed"]
    runs = [r for r in part["runs"] if r["contender"] == peer]
    assert len(runs) == 4
    assert all(r["evaluations"] == sizes.peers_rounds * sizes.peers_batch for r in runs)
    assert {r["ran_as"] for r in runs} == (
        {"batch"} if peer in peers_runs.BATCH_ONLY else {"batch", "async"})
    assert part["batch_in_async"] == ([peer] if peer in peers_runs.BATCH_ONLY else [])
    lines = [json.loads(line) for line in next(tmp_path.glob("*.jsonl")).read_text().splitlines()]
    code = [line["code"] for line in lines if line["contender"] == peer]
    assert all("benchmarks/peer_server.py" in c for c in code)


def test_the_best_of_ours_is_compared_with_each_peer_paired_by_seed():
    scores = {"batch": {"t": {"random": {s: 0.0 for s in range(10)},
                              "gp": {s: 80.0 + s for s in range(10)},
                              "peer": {s: 20.0 + 2 * s for s in range(10)},
                              "even": {s: 80.0 + s + (-1) ** s for s in range(10)}}}}
    found = {c["peer"]: c for c in peers.comparisons(scores, ["random", "gp"])}
    assert set(found) == {"peer", "even"} and found["peer"]["which"] == "gp"
    assert found["peer"]["verdict"] == "better" and found["even"]["verdict"] == "tie"
    assert -found["peer"]["median_difference"] == pytest.approx(55.5)


def test_a_peer_that_hangs_times_out_naming_the_peer(tmp_path):
    """A peer's process that never answers (here one that only sleeps) is killed."""
    python = peers_runs.venv_python("SMAC3 HPO", tmp_path)
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\nexec sleep 600\n")
    python.chmod(0o755)
    space = bayesmark_tasks.space("SVM-iris-acc")
    with pytest.raises(peers_runs.PeerTimeout) as caught:
        peers_runs.VenvPeer("SMAC3 HPO", space, 0, 8, tmp_path, timeout=0.5)
    assert str(caught.value) == ("SMAC3 HPO did not answer 'space' within 0.5 s "
                                 "(EMEWS_PEERS_TIMEOUT)")
