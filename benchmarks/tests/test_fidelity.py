"""The fidelity part (benchmarks/fidelity.py) at tiny sizes: the product's own pruners judge
the runs, every contender sees the same curves and worker timeline, and the figures hold."""

import math

from benchmarks import fidelity, fidelity_pool
from benchmarks.sizes import SMOKE
from emews.core import _pruners as pruners


def test_ours_are_the_products_own_pruners_and_algorithms():
    space = fidelity.PROBLEMS["pow3"].space
    assert isinstance(fidelity.contender("random + asha", space, 0, 9).pruner, pruners.Asha)
    bohb = fidelity.contender("bohb + hyperband", space, 0, 9)
    assert isinstance(bohb.pruner, pruners.Hyperband)
    assert type(bohb.search).__module__ == "emews.algorithms.bohb"
    assert type(fidelity.contender("tpe + median", space, 0, 9).pruner) is pruners.Percentile


def test_a_simulated_run_prunes_within_its_epoch_budget(tmp_path):
    problem = fidelity.PROBLEMS["pow3"]
    curves = fidelity.Curves(problem, 9, tmp_path)
    budget = 20 * 9
    unpruned = fidelity.simulate("random", problem, curves, 1, budget, 8)
    pruned = fidelity.simulate("random + asha", problem, curves, 1, budget, 8)
    assert unpruned["pruned"] == 0 and pruned["pruned"] > 0
    assert pruned["runs"] > unpruned["runs"]          # stopped runs free their workers
    for result in (unpruned, pruned):
        assert result["epochs"] <= budget and 0 < result["utilization"] <= 1
        trained = [row[0] for row in result["trajectory"]]
        assert trained == sorted(trained) and trained[-1] <= budget
        best = [row[1] for row in result["trajectory"]]
        assert best == sorted(best, reverse=True)     # the best so far only improves
        assert all(row[2] >= problem.minimum(9) for row in result["trajectory"])
    again = fidelity.simulate("random", problem, curves, 1, budget, 8)
    assert dict(again, seconds=0) == dict(unpruned, seconds=0)   # the same seed: the same run


def test_a_search_that_has_nothing_left_to_propose_leaves_its_workers_idle(tmp_path,
                                                                          monkeypatch):
    """``mbo`` proposes none once every point of a 3-point grid is told: the run ends there."""
    space = [{"name": "x0", "type": "categorical", "values": [0.2, 0.5, 0.8]}]
    problem = fidelity.Problem("grid", space, lambda config, seed, epochs: fidelity._pow_curve(
        dict(config, x1=0.5, x2=0.5), seed, epochs), 9)
    monkeypatch.setitem(fidelity.CONTENDERS, "mbo", ("ours", "mbo", "none"))
    result = fidelity.simulate("mbo", problem, fidelity.Curves(problem, 9, tmp_path), 0,
                               20 * 9, 2)
    assert result["runs"] == 3 and result["epochs"] == 3 * 9
    assert len(result["trajectory"]) == 3


def test_optunas_hyperband_pruner_makes_the_same_run_for_the_same_seed(tmp_path):
    """Its brackets come from a hash of the study's name: the name must not be random."""
    problem = fidelity.PROBLEMS["pow3"]
    curves = fidelity.Curves(problem, 9, tmp_path)
    name = "optuna TPE + HyperbandPruner"
    first, again = (fidelity.simulate(name, problem, curves, 2, 20 * 9, 4) for _ in range(2))
    assert first["pruned"] > 0
    assert dict(again, seconds=0) == dict(first, seconds=0)


def test_epochs_to_reach_the_unpruned_final_regret_count_the_first_good_enough_run():
    unpruned = {"trajectory": [[27, 0.9, 0.5], [54, 0.8, 0.3]]}
    pruned = {"trajectory": [[10, 0.9, 0.6], [20, 0.85, 0.3], [30, 0.7, 0.2]]}
    assert fidelity.epochs_to_reach(pruned, unpruned) == 20
    assert fidelity.epochs_to_reach({"trajectory": [[10, 0.9, 0.4]]}, unpruned) is None
    assert fidelity.epochs_to_reach(pruned, {"trajectory": []}) is None


def test_the_parametric_curves_cross():
    """The good configurations learn slowly: of two random configurations, the one that ends
    ahead is behind the other at some epoch in between often (a fifth of the pairs for the
    exponential curves, a tenth for the power laws here)."""
    import numpy as np

    rng = np.random.default_rng(0)
    for name, share in (("exp3", 0.15), ("pow3", 0.05)):
        problem = fidelity.PROBLEMS[name]
        configs = [{f"x{i}": float(v) for i, v in enumerate(rng.random(3))} for _ in range(60)]
        curves = np.array([problem.curve(c, None, 27) for c in configs])
        ahead = [(i, j) for i in range(60) for j in range(60) if curves[i, -1] < curves[j, -1]]
        crossed = sum(bool((curves[i, :-1] > curves[j, :-1]).any()) for i, j in ahead)
        assert crossed > share * len(ahead)
        assert problem.minimum(27) <= curves[:, -1].min()


def test_a_trained_problem_is_a_table_read_back_from_disk(tmp_path):
    problem = fidelity.PROBLEMS["digits"]
    config = {"units": 8, "lr": 1e-2, "alpha": 1e-5, "batch": 128}
    curve = fidelity.Curves(problem, 2, tmp_path)(config, 0)
    assert len(curve) == 2 and all(math.isfinite(v) for v in curve)
    again = fidelity.Curves(problem, 2, tmp_path)
    assert list(again.memo.values())[0].tolist() == curve.tolist()


def test_an_unseeded_table_trains_a_configuration_once_for_every_seed(tmp_path):
    calls = []

    def curve(config, seed, epochs):
        calls.append(seed)
        return [config["x0"] + seed] * epochs

    problem = fidelity.Problem("toy", fidelity._unit_space(1), curve, 2, table=True,
                               seeded=False)
    curves = fidelity.Curves(problem, 2, tmp_path)
    assert [curves({"x0": 0.5}, seed).tolist() for seed in (0, 3, 7)] == [[0.5, 0.5]] * 3
    assert calls == [0]                                # seed 0's curve, trained once


def test_the_part_at_smoke_size_gives_its_figures_and_targets(tmp_path):
    part = fidelity.run(SMOKE, curves_directory=tmp_path)
    assert {r["contender"] for r in part["runs"]} == set(SMOKE.fidelity_contenders)
    assert {r["problem"] for r in part["runs"]} == set(SMOKE.fidelity_problems) | {
        f"{p}{fidelity.SEQUENTIAL}" for p in SMOKE.fidelity_sequential}
    assert all(0 < r["utilization"] <= 1 for r in part["runs"])
    assert [(r["algorithm"], r["pruner"], r["pause"]) for r in part["pool"]] == list(
        fidelity_pool.STUDIES)                       # the real pool's studies, all of them
    assert all(r["points"] == SMOKE.fidelity_pool_points and r["workers"] == 3
               and 0 < r["utilization"] <= 1 and 0 < r["steady_utilization"] <= 1
               for r in part["pool"])
    assert [t[0][:4] for t in fidelity.targets(part)] == ["ASHA", "the ", "util", "util",
                                                             "a se", "bohb"]
    bohb = part["comparisons"]["pow3 sequential"]["bohb"]   # issue 47's pair, on every problem
    assert (bohb["ours"], bohb["peer"]) == fidelity.BOHB_PAIR and bohb["verdict"]
    assert "bohb + hyperband vs optuna TPE + HyperbandPruner" in fidelity.markdown(part)
    assert "### 11. Learning curves and pruning" in fidelity.markdown(part)
    workers, epochs = SMOKE.fidelity_workers, SMOKE.fidelity_epochs   # a table's: in step
    assert part["fewest_epochs"]["lc-wine"] == workers * (epochs - 1) + 1
    assert part["fewest_epochs"][f"pow3{fidelity.SEQUENTIAL}"] == epochs   # one worker
    assert f"| *{fidelity.BEST}* |" in fidelity.markdown(part)
    kept = (tmp_path / "runs.jsonl").read_text()
    assert fidelity.run(SMOKE, curves_directory=tmp_path) == part   # read back, not rerun
    assert (tmp_path / "runs.jsonl").read_text() == kept


def test_our_own_search_must_reach_tpes_final_regret_in_half_the_epochs_of_optunas_pair():
    def row(reach, regrets):
        return {"epochs_to_unpruned": reach, "log10_regret": sorted(regrets)[len(regrets) // 2],
                "by_seed": dict(enumerate(regrets))}

    peer = [-2.0 - 0.01 * s for s in range(10)]
    problems = {
        "fast": {"bohb + hyperband": row(200.0, peer), "tpe + asha": row(50.0, peer),
                 "optuna TPE + SuccessiveHalvingPruner": row(450.0, peer)},
        "slow": {"bohb + hyperband": row(300.0, peer),
                 "optuna TPE + SuccessiveHalvingPruner": row(450.0, peer)},
        "worse": {"bohb + hyperband": row(100.0, [r + 1 for r in peer]),
                  "optuna TPE + MedianPruner": row(None, peer)},
        "pow3 sequential": {"bohb + hyperband": row(None, peer),
                            "optuna TPE + MedianPruner": row(400.0, peer)}}
    label, figure, met = fidelity.own_search_target(problems)
    assert figure == "1 of 3 (fast)" and not met    # TPE's own pair does not count
    del problems["slow"], problems["worse"]
    assert fidelity.own_search_target(problems)[1:] == ("1 of 1 (fast)", True)


def test_bohb_must_be_not_worse_than_tpe_with_hyperband_on_every_problem():
    def pair(verdict, difference):
        return {"bohb": {"verdict": verdict, "median_difference": difference,
                         "ours": fidelity.BOHB_PAIR[0], "peer": fidelity.BOHB_PAIR[1]}}

    comparisons = {"exp3": pair("tie", 0.09), "pow3": pair("better", -0.3),
                   "pow3 sequential": pair("tie", -0.2), "digits": {"bohb": None}}
    label, figure, met = fidelity.bohb_target(comparisons)
    assert label.startswith("bohb + hyperband at or above optuna TPE + HyperbandPruner")
    assert (figure, met) == ("3 of 3; behind, not significantly, on exp3", True)
    comparisons["pow6"] = pair("worse", 0.4)
    assert fidelity.bohb_target(comparisons)[1:] == (
        "3 of 4; worse on pow6; behind, not significantly, on exp3", False)
    assert fidelity.bohb_target({})[2] is False        # nothing measured: not met


def test_the_fewest_epochs_are_those_of_the_best_configuration_run_from_the_start(tmp_path):
    """On a replayed table every worker trains in step, so the first run of the table's best
    configuration ends when every worker has trained all but the last epoch; on a parametric
    problem the best configuration ends lowest, and no contender's chosen one is better."""
    table = fidelity.PROBLEMS["lc-wine"]
    curves = fidelity.Curves(table, 27, tmp_path)
    best = fidelity.simulate(fidelity.BEST, table, curves, 0, 60 * 27, 8)
    assert best["pruned"] == 0 and best["trajectory"][0][2] == table.minimum(27)
    assert fidelity.fewest_epochs(table, curves, 0, 60 * 27, 8) == 8 * 26 + 1

    problem = fidelity.PROBLEMS["pow3"]
    curves = fidelity.Curves(problem, 9, tmp_path)
    first = fidelity.simulate(fidelity.BEST, problem, curves, 1, 20 * 9, 8)["trajectory"][0]
    assert first[2] == problem.minimum(9)
    found = fidelity.simulate("random + asha", problem, curves, 1, 20 * 9, 8)["trajectory"]
    assert min(row[2] for row in found) > first[2]
    assert first[0] == fidelity.fewest_epochs(problem, curves, 1, 20 * 9, 8)


def test_a_trained_tables_best_is_the_best_its_curves_have_found(tmp_path):
    problem = fidelity.PROBLEMS["digits"]
    curves = fidelity.Curves(problem, 2, tmp_path)
    configs = [{"units": 8, "lr": lr, "alpha": 1e-4, "batch": 256} for lr in (1e-4, 1e-1)]
    ends = [curves(config, 3)[-1] for config in configs]
    assert problem.best(2, curves, 3) == configs[int(ends[1] < ends[0])]
