"""Part 3, search quality: our algorithms and the peers' own loops on the same problems and seeds.

Problems: Branin, Hartmann-6, Ackley-5, Rosenbrock-4, Levy-6 (:mod:`emews.models.analytic`) and a
real ML objective, :func:`emews.models.digits.train` (an MLP on scikit-learn's digits, validation
log-loss) on ``digits_space.json``.

Ours run in-process through the ME driver's :class:`emews.core.me.Search` (``propose`` / ``tell``, one
point at a time, as the peers' sequential loops): random, GA, GP (scikit-optimize under our
plugin), Optuna TPE under our plugin and the model-based search (MBO), all with their defaults.
The peers run their own loops: Optuna ``study.optimize`` with TPE and with random sampling, and
scikit-optimize's ``gp_minimize`` and ``forest_minimize``, also with their defaults.

Simple regret at the budget is the best value found minus the global minimum (for digits, minus
the best value any run found); figures are its log10, floored at :data:`REGRET_FLOOR`. Seeds are
paired: seed ``s`` is seed ``s`` for every contender. Runs go in parallel, one per core.
"""

import concurrent.futures as cf
import json
import math
import os
import time
from pathlib import Path

import numpy as np

REGRET_FLOOR = 1e-8
ANALYTIC = {"branin": ("branin", 2), "hartmann6": ("hartmann6", 6), "ackley5": ("ackley", 5),
            "rosenbrock4": ("rosenbrock", 4), "levy6": ("levy", 6)}
MARKS = (0.25, 0.5, 1.0)


def problem(name, digits_epochs=None):
    """``(space, objective, minimum)`` of a problem (``minimum`` is None when unknown).

    ``digits_epochs`` replaces the digits space's constant number of epochs (smoke runs).
    """
    from emews.space import Constant, Space

    if name == "digits":
        import emews.models
        from emews.evaluate import Objective

        space = Space.from_file(Path(emews.models.__file__).parent / "digits_space.json")
        if digits_epochs is not None:
            space = Space(tuple(Constant(p.name, digits_epochs) if p.name == "epochs" else p
                                for p in space.params))
        model = Objective(impl="py", objective="emews.models.digits:train")
        return space, lambda point: model.evaluate(json.dumps(point), "RUN").value, None
    from emews.models import analytic

    function, dimension = ANALYTIC[name]
    space = Space.from_ga_json(analytic.space(function, dimension))
    return space, getattr(analytic, function), analytic.MINIMA[function]


# --- contenders: each returns the values of its evaluations, in order ---------------------

def ours(algorithm, space, objective, seed, budget):
    """One of our algorithms (a registered name), one point at a time through ``Search``."""
    from emews.core.algorithm import Stopper, load
    from emews.core.me import Search

    search = Search(load(algorithm)(space, seed=seed), Stopper(budget=budget))
    values = []
    while search.stop_reason() is None:
        points = search.propose(1)
        if not points:
            break
        results = [objective(point) for point in points]
        search.tell(points, results)
        values += results
    return values


def optuna_loop(sampler, space, objective, seed, budget):
    """Optuna's own loop: ``study.optimize`` with ``TPESampler`` or ``RandomSampler``."""
    import optuna
    from emews.algorithms.optuna_search import _decode, _distribution

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    distributions = {p.name: _distribution(p) for p in space.free}

    def trial_objective(trial):
        values = [_suggest(trial, name, d) for name, d in distributions.items()]
        return objective(space.point([_decode(p, v) for p, v in zip(space.free, values)]))

    samplers = {"tpe": optuna.samplers.TPESampler, "random": optuna.samplers.RandomSampler}
    study = optuna.create_study(sampler=samplers[sampler](seed=seed))
    study.optimize(trial_objective, n_trials=budget)
    return [trial.value for trial in study.trials]


def _suggest(trial, name, distribution):
    """``trial.suggest_*`` for an Optuna distribution (what a hand-written objective calls)."""
    from optuna.distributions import CategoricalDistribution, IntDistribution

    if isinstance(distribution, CategoricalDistribution):
        return trial.suggest_categorical(name, distribution.choices)
    if isinstance(distribution, IntDistribution):
        return trial.suggest_int(name, distribution.low, distribution.high,
                                 log=distribution.log)
    return trial.suggest_float(name, distribution.low, distribution.high, log=distribution.log)


def skopt_loop(minimize, space, objective, seed, budget):
    """scikit-optimize's own loop: ``gp_minimize`` or ``forest_minimize``."""
    import skopt
    from emews.algorithms.skopt_search import _decode, _dimension

    def point_objective(x):
        return objective(space.point([_decode(p, v) for p, v in zip(space.free, x)]))

    result = getattr(skopt, minimize)(point_objective, [_dimension(p) for p in space.free],
                                      n_calls=budget, random_state=seed)
    return [float(v) for v in result.func_vals]


CONTENDERS = {
    "random": lambda *a: ours("random", *a),
    "ga": lambda *a: ours("ga", *a),
    "gp": lambda *a: ours("gp", *a),
    "optuna": lambda *a: ours("optuna", *a),
    "mbo": lambda *a: ours("mbo", *a),
    "optuna TPE": lambda *a: optuna_loop("tpe", *a),
    "optuna random": lambda *a: optuna_loop("random", *a),
    "skopt gp_minimize": lambda *a: skopt_loop("gp_minimize", *a),
    "skopt forest_minimize": lambda *a: skopt_loop("forest_minimize", *a),
}
# Rough cost of one run relative to random search: the slowest start first.
COST = {"gp": 30, "skopt gp_minimize": 30, "skopt forest_minimize": 20, "mbo": 20,
        "optuna": 3, "optuna TPE": 3}


def one_run(problem_name, contender, seed, budget, digits_epochs=None):
    """One contender on one problem with one seed: the best value at each mark, the time."""
    space, objective, _ = problem(problem_name, digits_epochs)
    started = time.perf_counter()
    values = CONTENDERS[contender](space, objective, seed, budget)
    seconds = time.perf_counter() - started
    finite = [v if v is not None and math.isfinite(v) else math.inf for v in values]
    best = np.minimum.accumulate(finite) if finite else np.array([math.inf])
    marks = {str(m): float(best[min(len(best), max(int(m * budget), 1)) - 1]) for m in MARKS}
    return {"problem": problem_name, "contender": contender, "seed": seed,
            "evaluations": len(values), "best": marks, "seconds": seconds}


def run(sizes, jobs=None):
    """Every contender on every problem with every seed; medians, IQRs and mean ranks."""
    contenders = [*sizes.quality_ours, *sizes.quality_peers]
    runs = [(p, c, s) for p in sizes.quality_problems for c in contenders
            for s in range(sizes.quality_seeds)]
    runs.sort(key=lambda r: (-COST.get(r[1], 1), r[0] == "digits"))
    results = []
    started = time.perf_counter()
    environment = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    os.environ.update(environment)
    with cf.ProcessPoolExecutor(jobs or os.cpu_count()) as pool:
        futures = [pool.submit(one_run, *r, sizes.quality_budget, sizes.quality_digits_epochs)
                   for r in runs]
        for done, future in enumerate(cf.as_completed(futures), 1):
            results.append(future.result())
            if done % max(len(futures) // 20, 1) == 0:
                print(f"[quality] {done}/{len(futures)} runs, "
                      f"{time.perf_counter() - started:.0f} s", flush=True)
    return {"budget": sizes.quality_budget, "seeds": sizes.quality_seeds,
            "problems": list(sizes.quality_problems), "contenders": contenders,
            "regret_floor": REGRET_FLOOR, "summary": summarize(results),
            "seconds_by_contender": _seconds(results), "runs": results}


def summarize(results):
    """Per problem and contender: median, quartiles of log10 regret at the budget; mean ranks."""
    from scipy.stats import rankdata

    final = str(MARKS[-1])
    summary = {}
    for name in dict.fromkeys(r["problem"] for r in results):
        rows = [r for r in results if r["problem"] == name]
        minimum = problem_minimum(name, rows)
        regret = {}
        for r in rows:
            value = max(r["best"][final] - minimum, REGRET_FLOOR)
            regret.setdefault(r["contender"], {})[r["seed"]] = math.log10(value)
        contenders = list(regret)
        seeds = sorted(set.intersection(*(set(by_seed) for by_seed in regret.values())))
        ranks = np.array([rankdata([regret[c][s] for c in contenders]) for s in seeds])
        summary[name] = {
            "minimum": minimum,
            "contenders": {c: {"median": float(np.median(list(regret[c].values()))),
                               "q25": float(np.percentile(list(regret[c].values()), 25)),
                               "q75": float(np.percentile(list(regret[c].values()), 75)),
                               "mean_rank": float(ranks[:, i].mean()) if len(seeds) else None}
                           for i, c in enumerate(contenders)}}
    return summary


def problem_minimum(name, rows):
    """The global minimum of an analytic problem; for digits the best value any run found."""
    if name in ANALYTIC:
        from emews.models import analytic

        return analytic.MINIMA[ANALYTIC[name][0]]
    return min(r["best"][str(MARKS[-1])] for r in rows)


def _seconds(results):
    seconds = {}
    for r in results:
        seconds.setdefault(r["contender"], []).append(r["seconds"])
    return {c: {"total": float(np.sum(s)), "median_per_run": float(np.median(s))}
            for c, s in seconds.items()}


def mean_ranks(summary):
    """Each contender's rank averaged over the problems."""
    contenders = dict.fromkeys(c for p in summary.values() for c in p["contenders"])
    return {c: float(np.mean([p["contenders"][c]["mean_rank"] for p in summary.values()
                              if c in p["contenders"]])) for c in contenders}
