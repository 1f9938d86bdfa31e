"""The peers part (issue 45): Bayesmark's tasks, a smoke run with every contender that installs
here, the normalized score, and SMAC3 in a virtualenv of its own (slow: it installs SMAC3)."""

import importlib.util
import json
from dataclasses import replace

import numpy as np
import pytest

from benchmarks import bayesmark_tasks, lc_tables, peer_server, peers, peers_ours, peers_runs
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


def test_the_runs_go_seed_by_seed_and_within_a_seed_the_peers_first():
    runs = [(t, c, m, s) for t in ("SVM-iris-acc", "lc-wine") for c in ("random", "HEBO")
            for m in ("batch", "async") for s in range(3)]
    order = peers.run_order(runs, ours=("random",))
    assert [r[3] for r in order] == [0] * 8 + [1] * 8 + [2] * 8
    assert [r[1] for r in order] == (["HEBO"] * 4 + ["random"] * 4) * 3
    assert order[:4] == [("SVM-iris-acc", "HEBO", "batch", 0), ("SVM-iris-acc", "HEBO", "async", 0),
                         ("lc-wine", "HEBO", "batch", 0), ("lc-wine", "HEBO", "async", 0)]
    assert sorted(order) == sorted(runs)


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


def test_the_score_is_100_at_the_best_found_and_0_at_a_typical_random_point():
    rng = np.random.default_rng(3)
    firsts = rng.uniform(4, 6, 10)
    runs = [{"mode": "sequential", "problem": "t", "contender": "random", "seed": s,
             "best_by_round": [f, 3.0]} for s, f in enumerate(firsts)]
    runs += [{"mode": "batch", "problem": "t", "contender": "random", "seed": s,
              "best_by_round": [3.5, v]} for s, v in enumerate(rng.uniform(2, 3, 10))]
    runs += [{"mode": "batch", "problem": "t", "contender": "peer", "seed": s,
              "best_by_round": [5.0, v]} for s, v in enumerate([1.0, 3.0, 9.0])]
    runs += [{"mode": "batch", "problem": "u", "contender": "peer", "seed": 0,
              "best_by_round": [1.0]}]                  # no random search there: no score
    scores = peers.normalized_scores(runs)
    clip = np.median(firsts)                           # one random evaluation, sequential
    peer = scores["batch"]["t"]["peer"]
    assert peer[0] == pytest.approx(100.0)            # the best any run found, in any mode
    assert peer[1] == pytest.approx(100 * (clip - 3) / (clip - 1))
    assert peer[2] == 0.0                              # worse than a typical point: clipped
    assert scores["sequential"]["t"]["random"][0] == pytest.approx(peer[1])
    assert "u" not in scores["batch"]


@pytest.mark.slow          # about a minute alone: 36 runs, each a fresh process, 6 on mpiexec
@pytest.mark.mpi
@pytest.mark.timeout(900)
def test_a_smoke_run_has_every_contender_that_installs_here_and_names_the_missing(tmp_path,
                                                                                   capsys):
    sizes = SMOKE
    part = peers.run(sizes, jobs=2, cache_directory=tmp_path / "runs",
                     venv_directory=tmp_path / "venvs", install=False)
    torch = importlib.util.find_spec("torch") is not None
    expected = [*sizes.peers_ours, "optuna TPE", "optuna CMA-ES", *(["optuna GP"] * torch)]
    assert sorted(part["contenders"]) == sorted(expected)
    assert all("not installed" in part["missing"][n] for n in peers_runs.VENV_PEERS)
    assert all(part["missing"][n] == why for n, why in peers_runs.UNAVAILABLE.items())
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
        if r["contender"] in sizes.peers_ours:    # async: on an mpiexec pool's worker ranks
            assert r["ranks"] == ([0] if r["mode"] != "async" else
                                  sorted(set(r["ranks"]) & set(range(1, sizes.peers_batch + 1))))
            assert r["ranks"] and (r["mode"] != "async" or 0 not in r["ranks"])
    finals = set(lc_tables.load("wine").loss[:, -1])
    assert all(r["best_by_round"][-1] in finals for r in part["runs"]
               if r["problem"] == "lc-wine")      # a table's values are its final losses
    table = peers.markdown(part)
    assert all(f"| {n} (missing) |" in table
               for n in [*peers_runs.VENV_PEERS, *peers_runs.UNAVAILABLE])
    scores = [v for by_task in peers.normalized_scores(part["runs"]).values()
              for by_name in by_task.values() for by_seed in by_name.values()
              for v in by_seed.values()]
    assert len(scores) == len(part["runs"]) and all(0 <= v <= 100 for v in scores)
    assert max(scores) == 100.0          # the best value any run found, on each task
    assert "| random (ours) |" in table and "| auto (ours) |" in table
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


def test_a_batch_only_peers_async_run_is_its_batch_run_run_once():
    runs = [(t, c, m, 0) for t in ("SVM-iris-acc", "lc-wine") for c in ("HEBO", "optuna TPE")
            for m in ("batch", "async", "sequential")] + [("DT-iris-acc", "HEBO", "async", 0)]
    stand_ins = peers.batch_stand_ins(runs)
    assert stand_ins == {(t, "HEBO", "async", 0): (t, "HEBO", "batch", 0)
                         for t in ("SVM-iris-acc", "lc-wine")}    # no batch run: runs itself
    line = {"problem": "lc-wine", "contender": "HEBO", "mode": "batch", "seed": 0,
            "ran_as": "batch", "best_by_round": [0.3, 0.2]}
    results = peers.with_stand_ins([line], stand_ins)
    assert results == [line, {**line, "mode": "async"}]


def test_without_new_runs_the_part_scores_the_cells_every_contender_finished(tmp_path):
    """An interrupted run's reading: from the cache only, of the tasks, modes and seeds that
    every contender has finished, marked partial, meeting no target."""
    sizes = replace(SMOKE, peers_tasks=("lc-wine",), peers_ours=("auto", "random"),
                    peers_peers=("optuna TPE",), peers_modes=("batch",), peers_seeds=1)
    where = {"cache_directory": tmp_path / "runs", "venv_directory": tmp_path / "venvs",
             "install": False}
    peers.run(sizes, jobs=1, **where)
    cache = next((tmp_path / "runs").glob("*.jsonl"))
    with cache.open("a") as f:    # seed 1: auto has finished it, the others have not
        f.write(json.dumps(peers_ours.one_run("lc-wine", "auto", "batch", 1, sizes.peers_rounds,
                                              sizes.peers_batch, sizes.peers_ours,
                                              str(tmp_path / "venvs"))) + "\n")
    part = peers.run(replace(sizes, peers_seeds=2), jobs=1, new_runs=False, **where)
    assert len(cache.read_text().splitlines()) == 4           # nothing new was run
    assert sorted((r["contender"], r["seed"]) for r in part["runs"]) == [
        ("auto", 0), ("optuna TPE", 0), ("random", 0)]
    assert part["not_run"] == 2
    assert "**Partial**: 2 runs not run yet; the scores are of the tasks, modes and seeds " \
        "every contender has finished (seeds 0)." in peers.markdown(part)
    found = peers.targets(part)
    assert found and all(figure.startswith("partial, 2 runs not run: ") and not met
                         for _, figure, met in found)


@pytest.mark.slow
@pytest.mark.parametrize("peer", list(peers_runs.VENV_PEERS))
def test_a_peer_runs_in_its_own_virtualenv_on_its_ask_tell_interface(peer, tmp_path):
    """Installs the peer once under the suite's cache of virtualenvs; runs it in the batch
    and async modes (a peer without an async mode in batch mode there), on a Bayesmark task
    with an integer parameter (``max_depth``, which scikit-learn takes only as an int) and on
    a table's."""
    assert peers_runs.install(peer) is None
    sizes = replace(SMOKE, peers_ours=("random",), peers_peers=(peer,),
                    peers_tasks=("DT-iris-acc", "lc-iris"), peers_modes=("batch", "async"))
    part = peers.run(sizes, jobs=1, cache_directory=tmp_path, install=False)
    assert part["contenders"] == ["random", peer] and not part["missing"]
    assert not part["failed"]
    runs = [r for r in part["runs"] if r["contender"] == peer]
    tasks = [t for t in sizes.peers_tasks if peers_runs.applicable(peer, t)]
    assert {r["problem"] for r in runs} == set(tasks) and len(runs) == 2 * len(tasks)
    budget = sizes.peers_rounds * sizes.peers_batch
    for r in runs:
        if peer in peers_runs.MULTI_FIDELITY:     # the tables only; a budget of epochs
            assert r["epochs"] >= budget * lc_tables.load("iris").epochs > r["evaluations"]
            finals = set(lc_tables.load("iris").loss[:, -1]) | {np.inf}
            assert set(r["best_by_round"]) <= finals     # only whole trainings count
        else:
            assert r["evaluations"] == budget
    assert {r["ran_as"] for r in runs} == (
        {"batch"} if peer in peers_runs.BATCH_ONLY else {"batch", "async"})
    assert part["batch_in_async"] == ([peer] if peer in peers_runs.BATCH_ONLY else [])
    lines = [json.loads(line) for line in next(tmp_path.glob("*.jsonl")).read_text().splitlines()]
    assert [line["contender"] for line in lines] == sorted(   # one job: the peer's first
        (line["contender"] for line in lines), key=lambda name: name == "random")
    code = [line["code"] for line in lines if line["contender"] == peer]
    assert all("benchmarks/peer_server.py" in c for c in code)


def test_a_peers_integer_parameters_reach_the_task_as_ints():
    """HEBO proposes an integer parameter as a float (8.0); the server sends it as an int."""
    space = bayesmark_tasks.space("DT-iris-acc").to_json()
    point = {"max_depth": 8.0, "min_samples_split": 0.5, "max_features": 1.0}
    sent = peer_server.typed(space, point)
    assert sent == point and type(sent["max_depth"]) is int
    assert type(sent["min_samples_split"]) is float and type(sent["max_features"]) is float


def test_a_peers_line_records_benchmarks_code_and_the_space_only_and_ours_every_file(tmp_path):
    """A change elsewhere in emews/ runs ours again and keeps the peers' lines (most of the
    part's hours): a peer's line names benchmarks' files, the table, and of ours only the
    space's definition and its translation for Optuna."""
    import emews   # noqa: F401  (imported, as every run of ours imports it)

    lines = {name: peers_runs.one_run("lc-wine", name, "batch", 0, 1, 2, ("random",),
                                      str(tmp_path))
             for name in ("optuna TPE", "random")}
    peer, ours = (set(lines[name]["code"]) for name in ("optuna TPE", "random"))
    assert {"benchmarks/peers_runs.py", "benchmarks/lc_tables.py",
            "benchmarks/tables/wine.json.gz", *peers_runs.PEER_INPUTS} <= peer
    assert all(n.startswith("benchmarks/") or n in peers_runs.PEER_INPUTS for n in peer)
    assert {"emews/__init__.py", "emews/core/_master.py", "algorithms/random_search.py",
            "benchmarks/peers_runs.py"} <= ours


def test_an_async_line_of_auto_records_the_searches_its_mpi_master_runs(tmp_path):
    """In the async mode ``auto`` builds its stages' searches in the MPI master, not in the
    run's process: the run imports them there first, so that its line records them, and a
    line made without them is not taken from the cache."""
    from benchmarks.quality import run_missing

    cache = tmp_path / "runs.jsonl"
    run_missing(peers_ours.one_run, [("lc-wine", "auto", "async", 0, 1, 2, ("auto",),
                                      str(tmp_path))], cache, 1, "peers")   # a fresh process
    line = json.loads(cache.read_text())
    assert line["ranks"] and 0 not in line["ranks"]     # evaluated on the mpiexec pool
    assert {"algorithms/auto.py", "algorithms/skopt_search.py",
            "algorithms/optuna_search.py"} <= peers_ours.recorded_names("auto") <= set(line["code"])
    assert peers_ours.complete(line, ("auto",))
    del line["code"]["algorithms/skopt_search.py"]
    assert not peers_ours.complete(line, ("auto",)) and peers_ours.complete(line, ("random",))


def test_the_default_search_is_compared_with_each_peer_per_group_over_tasks_and_seeds():
    seeds = range(5)
    by_task = {"SVM-iris-acc": {"random": {s: 0.0 for s in seeds},
                                "auto": {s: 80.0 + s for s in seeds},
                                "peer": {s: 20.0 + 2 * s for s in seeds},
                                "even": {s: 80.0 + s + (-1) ** s for s in seeds}},
               "lc-wine": {"random": {s: 0.0 for s in seeds},
                           "auto": {s: 10.0 for s in seeds},
                           "peer": {s: 90.0 + s for s in seeds}}}
    found = {(c["group"], c["peer"]): c
             for c in peers.comparisons({"batch": by_task}, ["random", "auto"])}
    assert set(found) == {("classifiers", "peer"), ("classifiers", "even"),
                          ("tables", "peer"), ("all", "peer"), ("all", "even")}
    assert found["classifiers", "peer"]["verdict"] == "better"
    assert -found["classifiers", "peer"]["median_difference"] == pytest.approx(58.0)
    assert found["classifiers", "even"]["verdict"] == "tie"
    assert found["tables", "peer"]["verdict"] == "worse"
    assert found["all", "peer"]["pairs"] == 10 and found["all", "even"]["pairs"] == 5


def test_the_targets_want_the_default_highest_in_each_mode_and_worse_in_no_group():
    seeds = range(6)
    ahead = {"SVM-iris-acc": {"random": {s: 0.0 for s in seeds},
                              "auto": {s: 90.0 + s for s in seeds},
                              "peer": {s: 50.0 for s in seeds}},
             "lc-wine": {"random": {s: 0.0 for s in seeds},
                         "auto": {s: 40.0 + s for s in seeds},
                         "peer": {s: 60.0 + s for s in seeds},
                         "DEHB": {s: 70.0 for s in seeds}}}   # multi-fidelity: tables only
    scores = {"batch": ahead, "async": {"SVM-iris-acc": ahead["SVM-iris-acc"]}}
    ours = ["auto", "random"]
    part = {"modes": ["batch", "async", "sequential"], "ours": ours,
            "summary": peers.summarize(scores), "comparisons": peers.comparisons(scores, ours)}
    found = {label: (figure, met) for label, figure, met in peers.targets(part)}
    assert found["auto's mean normalized score the highest of all (batch)"] == (
        "67.5 (highest: auto, 67.5)", True)    # DEHB's 70.0 is the tables' mean alone
    assert found["auto not significantly worse than the best peer of any task group "
                 "(batch)"] == ("tables (DEHB)", False)
    assert found["auto not significantly worse than the best peer of any task group "
                 "(async)"] == ("none worse", True)
    assert not any("sequential" in label for label in found)   # not run: no target


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


class Replay:
    """A searcher that proposes the points of a list in order."""

    def __init__(self, points):
        self.points, self.told = list(points), []

    def ask(self, n):
        asked, self.points = self.points[:n], self.points[n:]
        return asked

    def tell(self, points, values):
        self.told += points


@pytest.mark.parametrize("task", ["lc-wine", "SVM-iris-acc"])
def test_a_real_pools_run_is_charged_the_async_modes_simulated_clock(task):
    """Ours in the async mode run on an mpiexec pool; simulated_order gives their values the
    order in which the async mode's loop (quality_runs.evaluate) finishes the same points on
    the simulated clock: the table's seconds, or the drawn times."""
    from benchmarks.quality_runs import evaluate

    space = peers_runs.tasks_of(task).space(task)
    rng = np.random.default_rng(5)
    points = [space.point([p.from_unit(u) for p, u in zip(space.free, rng.uniform(size=9))])
              for _ in range(20)]
    seconds = lc_tables.seconds if task in lc_tables.TASKS else None
    objective = peers_runs.tasks_of(task).objective
    looped = evaluate(Replay(points), objective, len(points), "async", 4, 3, seconds)
    charged = peers_runs.simulated_order(points, [objective(p) for p in points], 4, 3, seconds)
    assert charged == looped
    assert charged != [objective(p) for p in points]       # not the order they were proposed


def test_a_multi_fidelity_run_spends_its_rounds_in_epochs_and_counts_whole_trainings():
    values = [5.0, 4.0, 3.0, 2.0, 1.0, 0.5]
    # (reached, trained) of each: a round of 2 evaluations is 2 x 9 = 18 epochs
    epochs = [(3, 3), (9, 9), (9, 6), (3, 3), (9, 9), (9, 9)]
    assert peers_runs.best_by_round(values, 3, 2, epochs, 9) == [3.0, 1.0, 0.5]
    assert peers_runs.best_by_round([5.0, 4.0], 2, 1, [(3, 3), (9, 9)], 9) == [np.inf, 4.0]
    assert peers_runs.best_by_round([3.0, 2.0, 4.0, 1.0], 2, 2) == [2.0, 1.0]


def test_multi_fidelity_peers_run_only_where_there_is_a_fidelity_and_the_table_says_so():
    assert peers_runs.applicable("DEHB", "lc-wine") and not peers_runs.applicable(
        "DEHB", "SVM-iris-acc")
    assert peers_runs.applicable("SMAC3 HPO", "SVM-iris-acc")
    part = {"tasks": ["SVM-iris-acc", "lc-wine"], "seeds": 1, "rounds": 2, "batch": 2,
            "sequential_budget": 2, "modes": ["batch"], "ours": ["random"],
            "contenders": ["random", "DEHB"], "missing": {}, "versions": {}, "alpha": 0.05,
            "comparisons": [], "summary": peers.summarize({"batch": {
                "SVM-iris-acc": {"random": {0: 0.0}},
                "lc-wine": {"random": {0: 0.0}, "DEHB": {0: 80.0}}}})}
    table = peers.markdown(part)
    assert "| DEHB (multi-fidelity: the tables only) | n/a | 80.0 | 80.0 |" in table
