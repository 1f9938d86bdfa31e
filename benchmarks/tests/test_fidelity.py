"""The fidelity part (benchmarks/fidelity.py) at tiny sizes: the product's own pruners judge
the runs, every contender sees the same curves and worker timeline, and the figures hold."""

import math

from benchmarks import fidelity
from benchmarks.sizes import SMOKE
from emews.core import pruners


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
        assert all(row[2] >= problem.minimum for row in result["trajectory"])
    again = fidelity.simulate("random", problem, curves, 1, budget, 8)
    assert dict(again, seconds=0) == dict(unpruned, seconds=0)   # the same seed: the same run


def test_the_crossing_curves_mislead_early(tmp_path):
    """The parametric problems are built so that early epochs mislead: the best final
    configuration is behind a worse one at epoch 3."""
    for name in ("exp3", "pow3"):
        problem = fidelity.PROBLEMS[name]
        best = {f"x{i}": fidelity.OPTIMUM[i] for i in range(3)}
        fast = dict(best, x0=0.0)
        best_curve, fast_curve = (problem.curve(c, 0, 27) for c in (best, fast))
        assert best_curve[-1] < fast_curve[-1] and best_curve[2] > fast_curve[2]


def test_a_trained_problem_is_a_table_read_back_from_disk(tmp_path):
    problem = fidelity.PROBLEMS["digits"]
    config = {"units": 8, "lr": 1e-2, "alpha": 1e-5, "batch": 128}
    curve = fidelity.Curves(problem, 2, tmp_path)(config, 0)
    assert len(curve) == 2 and all(math.isfinite(v) for v in curve)
    again = fidelity.Curves(problem, 2, tmp_path)
    assert list(again.memo.values())[0].tolist() == curve.tolist()


def test_the_part_at_smoke_size_gives_its_figures_and_targets(tmp_path):
    part = fidelity.run(SMOKE, curves_directory=tmp_path)
    assert {r["contender"] for r in part["runs"]} == set(SMOKE.fidelity_contenders)
    assert {r["problem"] for r in part["runs"]} == set(SMOKE.fidelity_problems)
    assert all(0 < r["utilization"] <= 1 for r in part["runs"])
    assert [t[0][:4] for t in fidelity.targets(part)] == ["ASHA", "the ", "util"]
    assert "### Learning curves and pruning" in fidelity.markdown(part)
    kept = (tmp_path / "runs.jsonl").read_text()
    assert fidelity.run(SMOKE, curves_directory=tmp_path) == part   # read back, not rerun
    assert (tmp_path / "runs.jsonl").read_text() == kept
