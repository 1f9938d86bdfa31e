"""The quality benchmark's machinery: peers run as their own loops would, the three modes hand
out the budget as they say, and the paired verdicts follow the Wilcoxon test (no timings)."""

import numpy as np
import pytest

from benchmarks.quality import compare
from benchmarks.quality_runs import contender, evaluate, problem


@pytest.mark.parametrize("name,minimize", [("skopt gp_minimize", "gp_minimize"),
                                           ("skopt forest_minimize", "forest_minimize")])
def test_a_sequential_skopt_peer_is_exactly_its_minimize_function(name, minimize):
    import skopt

    from emews.algorithms.skopt_space import decode, dimension

    space, objective, _ = problem("branin")
    reference = getattr(skopt, minimize)(
        lambda x: objective(space.point([decode(p, v) for p, v in zip(space.free, x)])),
        [dimension(p) for p in space.free], n_calls=13, random_state=5)
    values = evaluate(contender(name, space, 5, 13), objective, 13, "sequential", 8, 5)
    assert np.allclose(values, reference.func_vals)


class Recorder:
    """Wraps a contender: counts the points in flight at each ask."""

    def __init__(self, inner):
        self.inner, self.in_flight, self.asks = inner, 0, []

    def ask(self, n):
        points = self.inner.ask(n)
        self.asks.append((n, self.in_flight))
        self.in_flight += len(points)
        return points

    def tell(self, points, values):
        self.in_flight -= len(points)
        self.inner.tell(points, values)


@pytest.mark.parametrize("mode,sizes", [("sequential", {1}), ("batch", {4, 2}),
                                        ("async", {4, 1})])
def test_each_mode_hands_out_the_budget_as_documented(mode, sizes):
    space, objective, _ = problem("branin")
    searcher = Recorder(contender("optuna TPE", space, 0, 14))
    values = evaluate(searcher, objective, 14, mode, 4, 0)
    assert len(values) == 14 and searcher.in_flight == 0
    assert {n for n, _ in searcher.asks} == sizes
    if mode == "async":      # a freed worker is refilled while the other three still run
        assert all(flight == 3 for n, flight in searcher.asks[1:11])
    else:
        assert all(flight == 0 for _, flight in searcher.asks)


def test_async_workers_share_one_timeline_per_seed():
    space, objective, _ = problem("branin")
    first = evaluate(contender("random", space, 2, 12), objective, 12, "async", 4, 2)
    again = evaluate(contender("random", space, 2, 12), objective, 12, "async", 4, 2)
    sequential = evaluate(contender("random", space, 2, 12), objective, 12, "sequential", 4, 2)
    assert first == again and sorted(first) == sorted(sequential) and first != sequential


def test_the_paired_verdict_comes_from_the_wilcoxon_test():
    peer = {s: 0.0 for s in range(10)}
    assert compare({s: -1.0 - s for s in range(10)}, peer)["verdict"] == "better"
    assert compare({s: 1.0 + s for s in range(10)}, peer)["verdict"] == "worse"
    mixed = compare({s: (-1.0) ** s * (s + 1) for s in range(10)}, peer)
    assert mixed["verdict"] == "tie" and mixed["p_worse"] > 0.05
    assert compare(peer, peer) == {"median_difference": 0.0, "p_better": 1.0,
                                   "p_worse": 1.0, "verdict": "tie", "pairs": 10}


def test_a_variant_is_outside_its_tolerance_only_when_the_paired_test_says_so():
    from benchmarks.quality import _within, targets

    sequential = {s: 1.0 + 0.01 * s for s in range(10)}          # median 1.045: margin 0.1045
    close = _within({s: v + 0.05 for s, v in sequential.items()}, sequential)
    far = _within({s: v + 0.5 for s, v in sequential.items()}, sequential)
    # Five seeds far worse, five a little better: the median is beyond the margin, the
    # paired differences are not significantly so.
    mixed = _within({s: v + (0.6 if s % 2 else -0.1) for s, v in sequential.items()},
                    sequential)
    assert close["within"] and close["margin"] == pytest.approx(0.1045)
    assert not far["within"] and far["p_outside"] < 0.05
    assert mixed["within"] and mixed["median"] > mixed["sequential_median"] + mixed["margin"]
    part = {"problems": ["a", "b", "c"], "modes": ["sequential", "async"], "ours": ["gp"],
            "comparisons": [{"mode": "async", "problem": name, "ours": "gp",
                             "peer": "gp sequential", **row}
                            for name, row in zip("abc", (close, far, mixed))]}
    row = {target: (measured, met) for target, measured, met in targets(part)}[
        "async gp within 10% of its sequential log10 regret"]
    assert row == ("2 of 3; outside on b; median beyond the margin, not significantly, on c",
                   False)


def test_optuna_gp_is_left_out_with_the_reason_only_without_pytorch():
    import importlib.util

    from benchmarks.quality_runs import unavailable

    missing = importlib.util.find_spec("torch") is None
    assert (unavailable("optuna GP") is not None) == missing
    assert unavailable("optuna TPE") is None and unavailable("mbo") is None


def test_a_stopped_quality_run_started_again_runs_only_what_its_cache_lacks(tmp_path, capsys):
    from dataclasses import replace

    from benchmarks import quality
    from benchmarks.sizes import SMOKE

    sizes = replace(SMOKE, quality_problems=("branin",), quality_seeds=2, quality_budget=4)
    first = quality.run(sizes, jobs=1, cache_directory=tmp_path)
    cache = quality.run_cache(sizes, tmp_path)
    lines = cache.read_text().splitlines()
    assert len(lines) == len(first["runs"]) == 2 * 3 * 2      # contenders x modes x seeds
    # A run killed after four runs, one of them cut off while it was being written:
    cache.write_text("\n".join(lines[:4]) + "\n" + lines[4][:10])
    capsys.readouterr()
    again = quality.run(sizes, jobs=1, cache_directory=tmp_path)
    assert "4 of 12 runs from the cache" in capsys.readouterr().out
    assert len(cache.read_text().splitlines()) == 4 + 1 + 8     # the cut line stays, ignored

    def by_key(part):
        return {(r["problem"], r["contender"], r["mode"], r["seed"]): r["best"]
                for r in part["runs"]}

    assert by_key(again) == by_key(first)                  # seeded runs: the same outcomes
    assert again["summary"] == first["summary"]


def test_a_cached_run_is_run_again_only_when_code_it_imported_changed(tmp_path, capsys):
    import json
    from dataclasses import replace

    from benchmarks import quality
    from benchmarks.sizes import SMOKE

    sizes = replace(SMOKE, quality_problems=("branin",), quality_seeds=1, quality_budget=4,
                    quality_modes=("sequential",))
    quality.run(sizes, jobs=1, cache_directory=tmp_path)
    cache = quality.run_cache(sizes, tmp_path)
    runs = [json.loads(line) for line in cache.read_text().splitlines()]
    by_contender = {r["contender"]: r["code"] for r in runs}
    assert set(by_contender) == {"random", "optuna TPE"}
    assert "algorithms/random_search.py" in by_contender["random"]
    assert "algorithms/optuna_search.py" in by_contender["optuna TPE"]
    assert by_contender["random"]["models/digits_space.json"]
    assert not [name for name in by_contender["random"]
                if name.startswith(("emews/store/", "emews/pools/"))]
    # As if random_search.py had been edited since those runs:
    for r in runs:
        if "algorithms/random_search.py" in r["code"]:
            r["code"]["algorithms/random_search.py"] = "0" * 16
    stale = sum("algorithms/random_search.py" in r["code"] for r in runs)
    assert 1 <= stale < len(runs)
    cache.write_text("".join(json.dumps(r) + "\n" for r in runs))
    capsys.readouterr()
    again = quality.run(sizes, jobs=1, cache_directory=tmp_path)
    assert f"{len(runs) - stale} of {len(runs)} runs from the cache" in capsys.readouterr().out
    assert len(again["runs"]) == len(runs) and "code" not in again["runs"][0]
    # More seeds or fewer contenders share the cache; another budget does not.
    assert quality.run_cache(replace(sizes, quality_seeds=5, quality_peers=()), tmp_path) == cache
    assert quality.run_cache(replace(sizes, quality_budget=5), tmp_path) != cache
