"""The multi-objective part: its problems are the published ones, its verdicts follow the
paired test on hypervolumes, and a smoke run writes its record and its README section."""

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from benchmarks import multiobjective
from benchmarks.multiobjective import dtlz2, problem, zdt

REPO = Path(__file__).resolve().parents[2]


def _point(values):
    return {f"x{i}": float(v) for i, v in enumerate(values)}


@pytest.mark.parametrize("which,front", [(1, lambda f: 1 - math.sqrt(f)),
                                         (2, lambda f: 1 - f ** 2),
                                         (3, lambda f: 1 - math.sqrt(f)
                                          - f * math.sin(10 * math.pi * f))])
def test_zdt_points_with_the_other_variables_at_zero_lie_on_the_published_front(which, front):
    for first in (0.0, 0.3, 0.8, 1.0):
        f1, f2 = zdt(which, _point([first] + [0.0] * 29))
        assert f1 == first and f2 == pytest.approx(front(first))
    f1, f2 = zdt(which, _point([0.3] + [1.0] * 29))
    assert f2 > front(0.3)       # g = 10 away from the front


def test_dtlz2_points_with_the_distance_variables_at_half_lie_on_the_unit_sphere():
    rng = np.random.default_rng(0)
    for _ in range(5):
        values = dtlz2(_point(list(rng.random(2)) + [0.5] * 10))
        assert sum(v * v for v in values) == pytest.approx(1.0)
    far = dtlz2(_point([0.2, 0.7] + [1.0] * 10))
    assert sum(v * v for v in far) == pytest.approx((1 + 10 * 0.25) ** 2)


def test_each_problem_reports_as_many_objectives_as_its_reference_point_has():
    for name in ("zdt1", "zdt3", "dtlz2"):
        space, objective = problem(name)
        value = objective(space.sample(np.random.default_rng(1))[0])
        assert len(value.values) == len(multiobjective.REFERENCES[name])
        assert float(value) == value.values[0]


def _runs(volumes):
    """Runs of one mode and problem from ``{contender: [hypervolume per seed]}``."""
    return [{"problem": "zdt1", "contender": c, "mode": "sequential", "seed": s,
             "hypervolume": v} for c, values in volumes.items() for s, v in enumerate(values)]


def test_the_best_of_ours_is_paired_with_the_best_optuna_sampler_larger_is_better():
    runs = _runs({"mbo": [5.0 + 0.1 * s for s in range(10)],
                  "gp": [4.0] * 10,
                  "optuna MO TPE": [6.0 + 0.1 * s for s in range(10)],
                  "optuna NSGA-II": [1.0] * 10, "random": [9.0] * 10})
    part = {"modes": ["sequential"], "problems": ["zdt1"], "runs": runs,
            "ours": ["gp", "mbo"], "contenders": ["gp", "mbo", "optuna MO TPE",
                                                  "optuna NSGA-II", "random"]}
    part["summary"] = multiobjective.summarize(runs)
    (row,) = multiobjective.comparisons(part)
    assert (row["ours"], row["peer"], row["verdict"]) == ("mbo", "optuna MO TPE", "worse")
    assert row["median_difference"] == pytest.approx(-1.0)
    part["comparisons"] = [row]
    ((target, measured, met),) = multiobjective.targets(part)
    assert not met and "below on zdt1" in measured


@pytest.mark.slow
def test_a_smoke_run_writes_its_record_and_its_readme_section(tmp_path):
    readme = tmp_path / "README.md"
    done = subprocess.run([sys.executable, "-m", "benchmarks", "multiobjective", "--smoke",
                           "--out", str(tmp_path), "--readme", str(readme)],
                          cwd=REPO, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    (path,) = tmp_path.glob("*.json")
    part = json.loads(path.read_text())["parts"]["multiobjective"]
    from benchmarks.sizes import SMOKE

    assert len(part["runs"]) == len(SMOKE.mo_problems) * len(part["contenders"]) * \
        len(SMOKE.mo_modes) * SMOKE.mo_seeds
    assert set(part["contenders"]) == {*SMOKE.mo_ours, *SMOKE.mo_peers}
    for r in part["runs"]:
        budget = SMOKE.mo_digits_budget if r["problem"] == "digits" else SMOKE.mo_budget
        assert r["evaluations"] == budget
        assert r["hypervolume"] > 0 or r["problem"] == "dtlz2"   # 8 random points: often 0
        assert 0 <= r["hypervolume_half"] <= r["hypervolume"]
    assert {(c["mode"], c["problem"]) for c in part["comparisons"]} == {
        (m, p) for m in SMOKE.mo_modes for p in SMOKE.mo_problems}
    text = readme.read_text()
    assert "### 12. Multi-objective search" in text and "| mbo (ours) |" in text


def test_async_mode_runs_our_ga_in_its_asynchronous_form():
    from emews.core._algorithm import load

    space, _ = problem("zdt1")
    for name, form in multiobjective.ASYNC_FORMS.items():
        assert type(multiobjective.contender(name, space, 0, 2, "async").algorithm) is \
            load(form)
        assert type(multiobjective.contender(name, space, 0, 2, "sequential").algorithm) is \
            load(name)


def test_without_new_runs_the_part_reports_its_cache_and_counts_the_rest(tmp_path):
    from dataclasses import replace

    from benchmarks.sizes import SMOKE

    sizes = replace(SMOKE, mo_problems=("zdt1",), mo_ours=("nsga2",), mo_peers=("random",),
                    mo_seeds=2, mo_modes=("sequential",))
    cache = multiobjective.run_cache(sizes, tmp_path, [
        sizes.mo_budget, sizes.mo_digits_budget, sizes.mo_workers, sizes.mo_digits_epochs])
    cache.write_text(json.dumps(multiobjective.one_run("zdt1", "nsga2", "sequential", 0,
                                                       sizes.mo_budget, 3)) + "\n")
    part = multiobjective.run(sizes, cache_directory=tmp_path, new_runs=False)
    assert [(r["contender"], r["seed"]) for r in part["runs"]] == [("nsga2", 0)]
    assert part["missing"] == 3 and part["comparisons"] == []
    assert "**Partial**: 3 runs of 4 not run yet; seeds per contender (sequential): " \
        "nsga2 1; random 0." in multiobjective.markdown(part)


def test_an_interrupted_run_meets_no_target_whatever_its_seeds_say():
    from benchmarks import report

    runs = _runs({"gp": [9.0 + 0.1 * s for s in range(10)],
                  "optuna MO TPE": [8.0] * 10})
    part = {"modes": ["sequential"], "problems": ["zdt1"], "runs": runs, "ours": ["gp"],
            "contenders": ["gp", "optuna MO TPE"]}
    part["summary"] = multiobjective.summarize(runs)
    part["comparisons"] = multiobjective.comparisons(part)
    [(_, _, met)] = report.targets({"multiobjective": part})
    assert met
    [(_, measured, met)] = report.targets({"multiobjective": {**part, "missing": 3}})
    assert not met and measured.startswith("partial, 3 runs missing")


def test_a_partial_record_counts_each_contender_s_seeds_per_mode():
    # Optuna's GP sampler runs last: its sequential seeds may be done and its async ones not
    runs = [{**r, "mode": mode, "seconds": 1.0}
            for mode, volumes in (("sequential", {"gp": [9.0] * 3, "optuna MO GP": [8.0] * 3}),
                                  ("async", {"gp": [9.0] * 3, "optuna MO GP": [8.0]}))
            for r in _runs(volumes)]
    part = {"modes": ["sequential", "async"], "problems": ["zdt1"], "runs": runs,
            "ours": ["gp"], "contenders": ["gp", "optuna MO GP"], "seeds": 3, "budget": 200,
            "digits_budget": 100, "workers": 8, "references": {"zdt1": [1.1, 11.0]},
            "skipped": {}, "alpha": 0.05, "missing": 2}
    part["summary"] = multiobjective.summarize(runs)
    part["comparisons"] = multiobjective.comparisons(part)
    assert "seeds per contender (sequential, async): gp 3, 3; optuna MO GP 3, 1." in \
        multiobjective.markdown(part)
