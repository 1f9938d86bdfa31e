"""Part 9 (issue 34): multi-objective search quality, ours against Optuna's samplers, judged by
the hypervolume each search's evaluations dominate.

Problems (each objective to minimize):

* ZDT1, ZDT2 and ZDT3 (Zitzler, Deb and Thiele, 2000) on 30 variables in [0, 1], reference
  point (1.1, 11);
* DTLZ2 (Deb, Thiele, Laumanns and Zitzler, 2002) with 3 objectives on 12 variables
  (``k`` = 10), reference point (1.1, 1.1, 1.1);
* digits: scikit-learn's MLP on its digits data (:func:`emews.models.digits.train`, the space
  ``digits_space.json``), the validation error (1 - accuracy) against the number of the
  network's weights and biases in units of 10,000 (64 inputs, one hidden layer, 10 outputs:
  ``75 h + 10``), reference point (1, 1): every trained network counts. The full size
  trains 10 epochs (``Sizes.mo_digits_epochs``) where the space says 30: a third of the CPU
  (0.05 s a fit on one core instead of 0.15 s), the same trade of error against size.

Contenders, each on its own ask/tell interface, driven by the quality part's loop
(:func:`benchmarks.quality_runs.evaluate`: ``sequential``, and ``async`` with simulated
workers whose lognormal durations are the seed's own, so every contender sees the same
timeline):

* ours: ``nsga2``, ``nsga3``, ``gp`` and ``mbo`` (registered names), built with
  ``objectives=k`` and their defaults, told an :class:`emews.core._algorithm.Objectives`; in
  ``async`` mode the GA in its asynchronous form (``nsga2_async``, ``nsga3_async``), as our
  GA is asynchronous;
* Optuna's ``NSGAIISampler``, multi-objective TPE (``TPESampler(multivariate=True,
  constant_liar=True)``) and ``GPSampler`` (needs PyTorch: without it the part says so and
  leaves it out), on ``study.ask`` / ``study.tell`` of a study with one direction per
  objective; points in flight are running trials;
* ``random`` (ours; the issue's random peer).

A contender not installed here (``nsga2`` before its branch is merged) is left out, and the
part says so. The score is the hypervolume of a run's evaluations against the problem's fixed
reference point (:func:`emews.core._pareto.hypervolume`, on moocore), at the budget and at half
of it. Seeds are paired. Per mode and problem, the best of ours (the highest median) is
compared with the best Optuna sampler by a one-sided Wilcoxon signed-rank test each way
(:func:`benchmarks.quality.compare` on negated volumes); ours is *at or above* unless the test
finds it below at :data:`benchmarks.quality.ALPHA`. Runs go in parallel, one per core, seed
by seed (within a seed the costliest first), so that a run cut short has its first seeds
complete for every contender. Each finished run is appended to a cache kept as the quality
part keeps its own (:func:`benchmarks.quality.run_cache`, ``results/multiobjective-runs/``):
a run whose code is unchanged is not run again, so running the part again continues an
interrupted run where it stopped.
"""

import math
import time
import warnings
from pathlib import Path

import numpy as np

from .quality import (ALPHA, _table, available, cached_runs, compare, comparisons_table,
                      run_cache, run_missing)
from .quality_runs import OptunaPeer, code_digests, evaluate

CACHE_DIRECTORY = Path(__file__).resolve().parent / "results" / "multiobjective-runs"

ZDT_VARIABLES, DTLZ_K = 30, 10
REFERENCES = {"zdt1": (1.1, 11.0), "zdt2": (1.1, 11.0), "zdt3": (1.1, 11.0),
              "dtlz2": (1.1, 1.1, 1.1), "digits": (1.0, 1.0)}
OPTUNA = {"optuna NSGA-II": "nsga2", "optuna MO TPE": "tpe", "optuna MO GP": "gp"}
COST = {"gp": 30, "mbo": 20}   # within a seed, the slowest start first
# Run after every other contender's runs, all seeds: minutes a run (Optuna's GP in 30
# variables), so that a run cut short has the others complete.
LAST = ("optuna MO GP",)
# In async mode our GA runs in its asynchronous (steady-state) form, as a study's would.
ASYNC_FORMS = {"nsga2": "nsga2_async", "nsga3": "nsga3_async"}
PRELOAD = ("numpy", "scipy.optimize", "sklearn.ensemble", "sklearn.gaussian_process", "skopt",
           "optuna", "moocore")


# --- problems ------------------------------------------------------------------------------------

def zdt(which, point):
    """ZDT1, ZDT2 or ZDT3 (``which`` 1, 2, 3) at ``point`` (variables ``x0`` ... in [0, 1])."""
    x = np.array([point[f"x{i}"] for i in range(len(point))])
    f1, g = x[0], 1.0 + 9.0 * x[1:].mean()
    ratio = f1 / g
    h = {1: 1.0 - math.sqrt(ratio), 2: 1.0 - ratio ** 2,
         3: 1.0 - math.sqrt(ratio) - ratio * math.sin(10.0 * math.pi * f1)}[which]
    return [float(f1), float(g * h)]


def dtlz2(point, objectives=3):
    """DTLZ2 with ``objectives`` objectives at ``point`` (variables ``x0`` ... in [0, 1])."""
    x = np.array([point[f"x{i}"] for i in range(len(point))])
    g = float(np.sum((x[objectives - 1:] - 0.5) ** 2))
    angles = x[:objectives - 1] * math.pi / 2
    values = []
    for m in range(objectives):
        value = (1.0 + g) * np.prod(np.cos(angles[:objectives - 1 - m]))
        if m:
            value *= math.sin(angles[objectives - 1 - m])
        values.append(float(value))
    return values


def digits(point):
    """The digits MLP: validation error and parameter count (in units of 10,000)."""
    from emews.models.digits import train

    units = int(point["hidden_units"])
    return [1.0 - train(point)["val_accuracy"], (75 * units + 10) / 1e4]


def problem(name, digits_epochs=None):
    """``(space, objective)`` of a problem; the objective returns an
    :class:`~emews.core._algorithm.Objectives`."""
    from emews.core._algorithm import Objectives
    from emews._space import Space

    if name == "digits":
        from .quality_runs import problem as quality_problem

        space = quality_problem("digits", digits_epochs)[0]
        function = digits
    else:
        count = ZDT_VARIABLES if name.startswith("zdt") else len(REFERENCES[name]) - 1 + DTLZ_K
        space = Space.from_ga_json([{"name": f"x{i}", "type": "float", "lower": 0.0,
                                     "upper": 1.0} for i in range(count)])
        function = dtlz2 if name == "dtlz2" else (lambda p, which=int(name[-1]): zdt(which, p))
    return space, lambda point: Objectives(function(point))


# --- contenders ----------------------------------------------------------------------------------

class OptunaMultiPeer(OptunaPeer):
    """An Optuna multi-objective sampler on a study with one direction per objective."""

    def __init__(self, sampler, space, seed, objectives):
        import optuna

        from emews.algorithms.optuna_search import distributions

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        samplers = {"nsga2": lambda: optuna.samplers.NSGAIISampler(seed=seed),
                    "tpe": lambda: optuna.samplers.TPESampler(seed=seed, multivariate=True,
                                                              constant_liar=True),
                    "gp": lambda: optuna.samplers.GPSampler(seed=seed)}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")      # multivariate and constant_liar: experimental
            self.study = optuna.create_study(sampler=samplers[sampler](),
                                             directions=["minimize"] * objectives)
        self.space, self.distributions = space, distributions(space)
        self.running = {}

    def tell(self, points, values):
        from optuna.trial import TrialState

        from emews.core._algorithm import point_key

        for point, value in zip(points, values):
            trial = self.running[point_key(point)].pop(0)
            if math.isfinite(value):
                self.study.tell(trial, list(value.values))
            else:
                self.study.tell(trial, state=TrialState.FAIL)


class OursMulti:
    """One of our algorithms, built with ``objectives=k`` when it searches several at once
    (in ``async`` mode its asynchronous form, :data:`ASYNC_FORMS`, where it has one)."""

    def __init__(self, name, space, seed, objectives, mode="sequential"):
        from emews.core._algorithm import load

        cls = load(ASYNC_FORMS.get(name, name) if mode == "async" else name)
        options = {"objectives": objectives} if cls.multiobjective else {}
        self.algorithm = cls(space, seed=seed, **options)

    def ask(self, n):
        return self.algorithm.ask(n)

    def tell(self, points, values):
        self.algorithm.tell(points, values)


def contender(name, space, seed, objectives, mode="sequential"):
    """The ask/tell object of contender ``name`` in ``mode``."""
    if name in OPTUNA:
        return OptunaMultiPeer(OPTUNA[name], space, seed, objectives)
    return OursMulti(name, space, seed, objectives, mode)


def unavailable(name):
    """Why a contender cannot run here (``None`` when it can)."""
    import importlib.util

    if name == "optuna MO GP" and importlib.util.find_spec("torch") is None:
        return ("Optuna's GPSampler needs PyTorch, which is not installed "
                "(pip install 'emews-hpo[bench-gp]')")
    if name in OPTUNA:
        return None
    from emews.core._algorithm import load
    from emews._errors import ConfigError, PluginError

    try:
        cls = load(name)
    except (ConfigError, PluginError) as error:
        return f"not installed here ({error})"
    if name != "random" and not getattr(cls, "multiobjective", False):
        return "searches one objective only"
    return None


# --- runs ----------------------------------------------------------------------------------------

def one_run(problem_name, name, mode, seed, budget, workers, digits_epochs=None):
    """One contender on one problem in one mode with one seed: the hypervolume at half the
    budget and at the budget."""
    from emews.core import _pareto as pareto

    space, objective = problem(problem_name, digits_epochs)
    reference = REFERENCES[problem_name]
    started = time.perf_counter()
    searcher = contender(name, space, seed, len(reference), mode)
    code_digests()          # hash the code imported so far now, not after a long run
    values = evaluate(searcher, objective, budget, mode, workers, seed)
    vectors = [v.values if math.isfinite(v) else (math.nan,) * len(reference) for v in values]
    half = max(len(vectors) // 2, 1)
    return {"problem": problem_name, "contender": name, "mode": mode, "seed": seed,
            "evaluations": len(values), "seconds": time.perf_counter() - started,
            "hypervolume": pareto.hypervolume(vectors, reference),
            "hypervolume_half": pareto.hypervolume(vectors[:half], reference),
            "code": code_digests()}


def run(sizes, jobs=None, cache_directory=CACHE_DIRECTORY, new_runs=True):
    """Every contender on every problem in every mode with every seed; summaries, the paired
    comparisons of the best of ours with the best Optuna sampler, and the issue's target.
    Without ``new_runs``, only the runs already in the cache (an interrupted run's part so
    far; ``missing`` counts the others)."""
    contenders, skipped = available([*sizes.mo_ours, *sizes.mo_peers], unavailable,
                                    "multiobjective")
    runs = [(p, c, m, s) for p in sizes.mo_problems for c in contenders
            for m in sizes.mo_modes for s in range(sizes.mo_seeds)]
    cache = run_cache(sizes, cache_directory, [sizes.mo_budget, sizes.mo_digits_budget,
                                               sizes.mo_workers, sizes.mo_digits_epochs])
    known = cached_runs(cache)
    results = [{k: v for k, v in known[r].items() if k != "code"} for r in runs if r in known]
    runs = sorted((r for r in runs if r not in known),   # seed by seed: see the module's notes
                  key=lambda r: (r[1] in LAST, r[3], -COST.get(r[1], 1), r[0] != "digits"))
    print(f"[multiobjective] {len(results)} runs from the cache {cache}", flush=True)
    if new_runs:
        results += run_missing(one_run, [
            (p, c, m, s, sizes.mo_digits_budget if p == "digits" else sizes.mo_budget,
             sizes.mo_workers, sizes.mo_digits_epochs) for p, c, m, s in runs],
            cache, jobs, "multiobjective", PRELOAD)
        runs = []
    results.sort(key=lambda r: (r["problem"], r["contender"], r["mode"], r["seed"]))
    part = {"budget": sizes.mo_budget, "digits_budget": sizes.mo_digits_budget,
            "seeds": sizes.mo_seeds, "workers": sizes.mo_workers, "modes": list(sizes.mo_modes),
            "problems": list(sizes.mo_problems), "contenders": contenders,
            "ours": [c for c in sizes.mo_ours if c in contenders],
            "async_forms": {c: f for c, f in ASYNC_FORMS.items() if c in contenders},
            "digits_epochs": sizes.mo_digits_epochs,
            "references": {p: list(REFERENCES[p]) for p in sizes.mo_problems},
            "skipped": skipped, "alpha": ALPHA, "missing": len(runs), "runs": results}
    part["summary"] = summarize(results)
    part["comparisons"] = comparisons(part)
    part["targets"] = targets(part)
    return part


# --- statistics ----------------------------------------------------------------------------------

def volumes(runs):
    """``{mode: {problem: {contender: {seed: hypervolume at the budget}}}}``."""
    found = {}
    for r in runs:
        found.setdefault(r["mode"], {}).setdefault(r["problem"], {}).setdefault(
            r["contender"], {})[r["seed"]] = r["hypervolume"]
    return found


def summarize(runs):
    """Per mode, problem and contender: median and quartiles of the hypervolume."""
    return {mode: {name: {c: {"median": float(np.median(list(v.values()))),
                              "q25": float(np.percentile(list(v.values()), 25)),
                              "q75": float(np.percentile(list(v.values()), 75))}
                          for c, v in by_contender.items()}
                   for name, by_contender in by_problem.items()}
            for mode, by_problem in volumes(runs).items()}


def _best(medians, names):
    present = [c for c in names if c in medians]
    return max(present, key=lambda c: medians[c]["median"]) if present else None


def comparisons(part):
    """Per mode and problem: the best of ours against the best Optuna sampler (by median
    hypervolume), paired by seed; ``better`` means a larger volume."""
    found, by_mode = [], volumes(part["runs"])
    for mode in part["modes"]:
        for name in part["problems"]:
            medians = part["summary"].get(mode, {}).get(name, {})
            ours = _best(medians, part["ours"])
            peer = _best(medians, [c for c in part["contenders"] if c in OPTUNA])
            if ours is None or peer is None:
                continue
            mine, theirs = by_mode[mode][name][ours], by_mode[mode][name][peer]
            found.append({"mode": mode, "problem": name, "ours": ours, "peer": peer,
                          **compare({s: -v for s, v in mine.items()},
                                    {s: -v for s, v in theirs.items()})})
            found[-1]["median_difference"] = -found[-1]["median_difference"]
    return found


def targets(part):
    """The issue's target per mode: the best of ours at or above the best Optuna sampler on at
    least all problems but one, each ``(target, measured, met)``. An interrupted run
    (``missing`` runs) meets no target."""
    found, problems = [], len(part["problems"])
    missing = part.get("missing", 0)
    need = problems - 1 if problems > 1 else 1
    for mode in part["modes"]:
        rows = [c for c in part["comparisons"] if c["mode"] == mode]
        if not rows:
            continue
        lost = [c["problem"] for c in rows if c["verdict"] == "worse"]
        behind = [c["problem"] for c in rows
                  if c["verdict"] == "tie" and c["median_difference"] < 0]
        measured = (f"{len(rows) - len(lost)} of {len(rows)}; below on "
                    f"{', '.join(lost) or 'none'}; behind, not significantly, on "
                    f"{', '.join(behind) or 'none'}")
        found.append((f"{mode}: best of ours at or above the best Optuna sampler in hypervolume "
                      f"on ≥ {need} of {problems}",
                      f"partial, {missing} runs missing: {measured}" if missing else measured,
                      len(rows) - len(lost) >= need and not missing))
    return found


# --- Markdown ------------------------------------------------------------------------------------

def markdown(part):
    """The part's tables: hypervolume per mode, and the paired comparisons."""
    seeds = len({run["seed"] for run in part["runs"]})
    planned = f" (of {part['seeds']} planned)" if seeds < part["seeds"] else ""
    sections = [f"### 12. Multi-objective search: hypervolume at {part['budget']} evaluations "
                f"({part['digits_budget']} for digits), median [IQR] over {seeds} paired "
                f"seeds{planned}; async = {part['workers']} simulated workers (lognormal times)"]
    references = ", ".join(f"{p} ({', '.join(f'{x:g}' for x in r)})"
                           for p, r in part["references"].items())
    for mode in part["modes"]:
        summary = part["summary"].get(mode, {})
        rows = []
        for name in part["contenders"]:
            cells = [("–" if (c := summary.get(p, {}).get(name)) is None else
                      f"{c['median']:.4g} [{c['q25']:.4g}, {c['q75']:.4g}]")
                     for p in part["problems"]]
            rows.append((name + (" (ours)" if name in part["ours"] else ""), *cells))
        sections.append(f"#### {mode}\n\n" + _table(("contender", *part["problems"]), rows))
    rows = [(c["mode"], c["problem"], c["ours"], c["peer"],
             f"{c['median_difference'] + 0.0:+.4g}",
             f"{c['p_better']:.3g}", f"{c['p_worse']:.3g}", c["verdict"])
            for c in part["comparisons"]]
    sections.append(comparisons_table("Best of ours against the best Optuna sampler",
                                      part["alpha"], rows, better="larger", worse="smaller"))
    seconds = {}
    for r in part["runs"]:
        seconds.setdefault(r["contender"], []).append(r["seconds"])
    left_out = "; ".join(f"{c}: {why}" for c, why in part["skipped"].items())
    forms = ", ".join(f"{c} as {f}" for c, f in part.get("async_forms", {}).items())
    epochs = part.get("digits_epochs")
    missing = part.get("missing", 0)
    seeds_run = {}
    for r in part["runs"]:
        seeds_run.setdefault((r["contender"], r["mode"]), set()).add(r["seed"])
    counts = "; ".join(f"{c} " + ", ".join(str(len(seeds_run.get((c, m), ())))
                                           for m in part["modes"]) for c in part["contenders"])
    sections.append((f"**Partial**: {missing} runs of {missing + len(part['runs'])} not "
                     f"run yet; seeds per contender ({', '.join(part['modes'])}): {counts}. "
                     if missing else "")
                    + f"Reference points: {references}."
                    + (f" Async mode runs {forms}." if forms else "")
                    + (f" The digits MLP trains {epochs} epochs." if epochs else "")
                    + " Median seconds per run: "
                    + ", ".join(f"{c} {np.median(s):.2g}" for c, s in seconds.items()) + "."
                    + (f" Left out: {left_out}." if left_out else ""))
    return "\n\n".join(sections)

