"""Part 3, search quality as users run it: ours and the peers on the same problems, seeds and
worker timelines, in three modes, judged by paired Wilcoxon tests.

Problems: Branin, Hartmann-6, Ackley-5, Rosenbrock-4, Levy-6 (:mod:`emews.models.analytic`) and a
real ML objective, :func:`emews.models.digits.train` (an MLP on scikit-learn's digits, validation
log-loss) on ``digits_space.json``.

Contenders, each driven through its own ask/tell interface by one loop (:func:`evaluate`):

* ours (registered names; :data:`benchmarks.sizes.OURS`), through the ME driver's
  :class:`emews.core.me.Search` (``propose`` / ``tell``, as the driver calls them), defaults;
* Optuna TPE (``TPESampler(constant_liar=True)``) and Optuna GP (``GPSampler``, which needs
  PyTorch: without it the part says so and leaves it out), on Optuna's ``study.ask`` /
  ``study.tell``: points in flight are running trials;
* scikit-optimize's ``gp_minimize`` and ``forest_minimize``: their ``Optimizer``, built exactly
  as those functions build it (same estimator, acquisition, options and random state), driven
  as their loop drives it (``ask()``, ``tell``): sequentially this *is* ``gp_minimize``. A
  batch is ``ask(n_points)`` (constant liar, ``cl_min``); in async mode a freed worker gets
  ``ask()`` after the result is told (skopt keeps no record of points in flight).

Modes (``workers`` = :attr:`Sizes.quality_workers`, 8 at full size):

* ``sequential``: ask one, evaluate, tell;
* ``batch``: ask ``workers``, evaluate them all, tell them all;
* ``async``: ``workers`` simulated workers; task ``i`` (in the order handed out) takes the
  ``i``-th draw of a lognormal duration (median 1, sigma 1) from the seed's own generator, so
  every contender sees the same worker timeline. Time is simulated (an event queue, nothing
  sleeps) and thinking costs no simulated time: each finished task is told, then its worker
  is given a new point. What async costs in quality is therefore only the staleness of the
  model (up to ``workers - 1`` points in flight), not the speed of this machine.

Simple regret at the budget is the best value found minus the global minimum (for digits,
minus the best value any run found); figures are its log10, floored at
:data:`REGRET_FLOOR`. Seeds are paired: seed ``s`` is seed ``s`` for every contender and mode.
Comparisons are paired by seed: a one-sided Wilcoxon signed-rank test each way
(:func:`compare`); ours is *at or below* a peer on a problem unless the test finds it worse at
:data:`ALPHA`. Runs go in parallel, one per core, the costliest first.

A full run takes hours, so each finished run is appended to a cache (:func:`run_cache`, one
JSON line per run) kept for exactly this code, these sizes and these package versions: a run
that is stopped and started again does only the runs still missing.
"""

import concurrent.futures as cf
import hashlib
import heapq
import importlib.util
import json
import math
import os
import time
import warnings
from pathlib import Path

import numpy as np

CACHE_DIRECTORY = Path(__file__).resolve().parent / "results" / "quality-runs"
# What a run's outcome depends on besides its arguments: our code, this part, the peers.
CODE_PATHS = ("algorithms", "emews", "benchmarks/quality.py")
PEER_PACKAGES = ("numpy", "scipy", "scikit-learn", "scikit-optimize", "optuna")
REGRET_FLOOR = 1e-8
ANALYTIC = {"branin": ("branin", 2), "hartmann6": ("hartmann6", 6), "ackley5": ("ackley", 5),
            "rosenbrock4": ("rosenbrock", 4), "levy6": ("levy", 6)}
MARKS = (0.25, 0.5, 1.0)
MODES = ("sequential", "batch", "async")
ALPHA = 0.05
ASYNC_TOLERANCE = 0.10     # async median log10 regret within 10% of the sequential one
SKOPT = {"skopt gp_minimize": "gp_minimize", "skopt forest_minimize": "forest_minimize"}
OPTUNA = {"optuna TPE": "tpe", "optuna GP": "gp"}
# Rough cost of one run relative to random search: the slowest start first.
COST = {"gp": 30, "skopt gp_minimize": 30, "skopt forest_minimize": 20, "mbo": 20,
        "optuna GP": 20, "optuna": 3, "optuna TPE": 3}


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


def unavailable(contender):
    """Why a contender cannot run here (``None`` when it can)."""
    if contender == "optuna GP" and importlib.util.find_spec("torch") is None:
        return "Optuna's GPSampler needs PyTorch, which is not installed (pip install torch)"
    return None


# --- contenders: ask(n) -> points, tell(points, values) ---------------------------------------

class Ours:
    """One of our algorithms (a registered name) through the ME driver's ``Search``."""

    def __init__(self, name, space, seed, budget):
        from emews.core.algorithm import Stopper, load
        from emews.core.me import Search

        self.search = Search(load(name)(space, seed=seed), Stopper(budget=budget))

    def ask(self, n):
        return self.search.propose(n)

    def tell(self, points, values):
        self.search.tell(points, values)


class OptunaPeer:
    """An Optuna sampler on Optuna's own ``study.ask`` / ``study.tell``."""

    def __init__(self, sampler, space, seed, budget):
        import optuna

        from emews.algorithms.optuna_search import distributions

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        samplers = {"tpe": lambda: optuna.samplers.TPESampler(seed=seed, constant_liar=True),
                    "gp": lambda: optuna.samplers.GPSampler(seed=seed)}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")      # Optuna 4: constant_liar is experimental
            self.study = optuna.create_study(sampler=samplers[sampler]())
        self.space = space
        self.distributions = distributions(space)
        self.running = {}                        # point key -> trials

    def ask(self, n):
        from emews.algorithms.optuna_search import decode
        from emews.core.algorithm import point_key

        points = []
        for _ in range(n):
            trial = self.study.ask(self.distributions)
            point = self.space.point([decode(p, trial.params[p.name]) for p in self.space.free])
            self.running.setdefault(point_key(point), []).append(trial)
            points.append(point)
        return points

    def tell(self, points, values):
        from optuna.trial import TrialState

        from emews.core.algorithm import point_key

        for point, value in zip(points, values):
            trial = self.running[point_key(point)].pop(0)
            if math.isfinite(value):
                self.study.tell(trial, value)
            else:
                self.study.tell(trial, state=TrialState.FAIL)


class SkoptPeer:
    """scikit-optimize's ``Optimizer`` as ``gp_minimize`` or ``forest_minimize`` builds it."""

    def __init__(self, minimize, space, seed, budget):
        import skopt
        from sklearn.utils import check_random_state
        from skopt.utils import cook_estimator, normalize_dimensions

        from emews.algorithms.skopt_search import dimension

        defaults = _defaults(getattr(skopt, minimize))
        rng = check_random_state(seed)
        dimensions = normalize_dimensions([dimension(p) for p in space.free])
        if minimize == "gp_minimize":   # what gp_minimize does before base_minimize
            estimator = cook_estimator("GP", space=dimensions, noise=defaults["noise"],
                                       random_state=rng.randint(0, np.iinfo(np.int32).max))
            acq_optimizer, restarts = defaults["acq_optimizer"], defaults["n_restarts_optimizer"]
        else:                           # forest_minimize hands base_minimize these
            estimator, acq_optimizer, restarts = defaults["base_estimator"], "sampling", 5
        self.optimizer = skopt.Optimizer(   # what base_minimize builds from them
            dimensions, estimator, n_initial_points=defaults["n_initial_points"],
            initial_point_generator=defaults["initial_point_generator"],
            n_jobs=defaults["n_jobs"], acq_func=defaults["acq_func"],
            acq_optimizer=acq_optimizer, random_state=rng,
            model_queue_size=defaults["model_queue_size"],
            acq_optimizer_kwargs={"n_points": defaults["n_points"],
                                  "n_restarts_optimizer": restarts, "n_jobs": defaults["n_jobs"]},
            acq_func_kwargs={"xi": defaults["xi"], "kappa": defaults["kappa"]})
        self.space = space

    def ask(self, n):
        from emews.algorithms.skopt_search import decode

        xs = [self.optimizer.ask()] if n == 1 else self.optimizer.ask(n_points=n)
        return [self.space.point([decode(p, v) for p, v in zip(self.space.free, x)])
                for x in xs]

    def tell(self, points, values):
        from emews.algorithms.skopt_search import encode

        told = [(p, v) for p, v in zip(points, values) if math.isfinite(v)]
        if told:
            self.optimizer.tell([[encode(q, p[q.name]) for q in self.space.free]
                                 for p, _ in told], [float(v) for _, v in told])


def _defaults(function):
    import inspect

    return {name: p.default for name, p in inspect.signature(function).parameters.items()}


def contender(name, space, seed, budget):
    """The ask/tell object of contender ``name``."""
    if name in OPTUNA:
        return OptunaPeer(OPTUNA[name], space, seed, budget)
    if name in SKOPT:
        return SkoptPeer(SKOPT[name], space, seed, budget)
    return Ours(name, space, seed, budget)


# --- the loop ----------------------------------------------------------------------------------

def evaluate(searcher, objective, budget, mode, workers, seed):
    """Run ``searcher`` on ``objective`` for ``budget`` evaluations in ``mode``; return the values
    in the order they were told."""
    values = []
    if mode in ("sequential", "batch"):
        size = 1 if mode == "sequential" else workers
        while len(values) < budget:
            points = searcher.ask(min(size, budget - len(values)))
            if not points:
                break
            results = [objective(p) for p in points]
            searcher.tell(points, results)
            values += results
        return values
    durations = np.random.default_rng([seed, 1]).lognormal(0.0, 1.0, budget)
    running, issued, now = [], 0, 0.0           # heap of (finish, order, point, value)
    while True:
        free = min(workers - len(running), budget - issued)
        for point in searcher.ask(free) if free > 0 else []:
            heapq.heappush(running, (now + durations[issued], issued, point, objective(point)))
            issued += 1
        if not running:
            return values
        now, _, point, value = heapq.heappop(running)
        searcher.tell([point], [value])
        values.append(value)


def one_run(problem_name, name, mode, seed, budget, workers, digits_epochs=None):
    """One contender on one problem in one mode with one seed: the best value at each mark."""
    space, objective, _ = problem(problem_name, digits_epochs)
    started = time.perf_counter()
    values = evaluate(contender(name, space, seed, budget), objective, budget, mode, workers,
                      seed)
    seconds = time.perf_counter() - started
    finite = [v if v is not None and math.isfinite(v) else math.inf for v in values]
    best = np.minimum.accumulate(finite) if finite else np.array([math.inf])
    marks = {str(m): float(best[min(len(best), max(int(m * budget), 1)) - 1]) for m in MARKS}
    return {"problem": problem_name, "contender": name, "mode": mode, "seed": seed,
            "evaluations": len(values), "best": marks, "seconds": seconds}


def run_cache(sizes, directory=CACHE_DIRECTORY):
    """The cache file of finished runs at ``sizes`` for this code (the commit's trees and any
    local changes to them) and the installed peers; None outside a git checkout."""
    from importlib import metadata

    from . import report        # report imports this module

    trees = [report.git("rev-parse", f"HEAD:{path}") for path in CODE_PATHS]
    if None in trees:
        return None
    changes = [report.git("diff", "HEAD", "--", *CODE_PATHS),
               report.git("ls-files", "--others", "--exclude-standard", "--", *CODE_PATHS)]
    quality_sizes = {k: v for k, v in vars(sizes).items() if k.startswith("quality_")}
    key = json.dumps([trees, changes, quality_sizes,
                      [metadata.version(p) for p in PEER_PACKAGES]], sort_keys=True, default=list)
    return Path(directory) / f"{sizes.name}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.jsonl"


def cached_runs(cache):
    """``{(problem, contender, mode, seed): run}`` of the runs in ``cache`` (a path or None)."""
    try:
        lines = Path(cache).read_text().splitlines() if cache else []
    except FileNotFoundError:
        return {}
    found = {}
    for line in lines:
        try:
            r = json.loads(line)
        except ValueError:          # a line cut short when a run was killed while writing
            continue
        found[(r["problem"], r["contender"], r["mode"], r["seed"])] = r
    return found


def run(sizes, jobs=None, cache_directory=CACHE_DIRECTORY):
    """Every contender on every problem in every mode with every seed; summaries, paired
    comparisons and the issue's targets. Runs found in the cache are not run again."""
    wanted = [*sizes.quality_ours, *sizes.quality_peers]
    skipped = {c: why for c in wanted if (why := unavailable(c))}
    for name, why in skipped.items():
        print(f"[quality] {name} left out: {why}", flush=True)
    contenders = [c for c in wanted if c not in skipped]
    runs = [(p, c, m, s) for p in sizes.quality_problems for c in contenders
            for m in sizes.quality_modes for s in range(sizes.quality_seeds)]
    cache = run_cache(sizes, cache_directory)
    known = cached_runs(cache)
    results = [known[r] for r in runs if r in known]
    missing = sorted((r for r in runs if r not in known),
                     key=lambda r: (-COST.get(r[1], 1), r[2] == "batch", r[0] == "digits"))
    print(f"[quality] {len(results)} of {len(runs)} runs from the cache {cache}", flush=True)
    if cache:
        cache.parent.mkdir(parents=True, exist_ok=True)
        with open(cache, "a+b") as f:     # end a line cut short, so the next one stands alone
            if f.tell() and (f.seek(-1, os.SEEK_END), f.read(1))[1] != b"\n":
                f.write(b"\n")
    started = time.perf_counter()
    os.environ.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    with cf.ProcessPoolExecutor(jobs or os.cpu_count()) as pool:
        futures = [pool.submit(one_run, *r, sizes.quality_budget, sizes.quality_workers,
                               sizes.quality_digits_epochs) for r in missing]
        for done, future in enumerate(cf.as_completed(futures), 1):
            results.append(future.result())
            if cache:
                with open(cache, "a") as f:
                    f.write(json.dumps(results[-1]) + "\n")
            if done % max(len(futures) // 20, 1) == 0:
                print(f"[quality] {done}/{len(futures)} runs, "
                      f"{time.perf_counter() - started:.0f} s", flush=True)
    regret = log_regrets(results)
    summary = {mode: summarize(regret[mode]) for mode in regret}
    part = {"budget": sizes.quality_budget, "seeds": sizes.quality_seeds,
            "workers": sizes.quality_workers, "modes": list(sizes.quality_modes),
            "problems": list(sizes.quality_problems), "contenders": contenders,
            "ours": [c for c in sizes.quality_ours if c in contenders], "skipped": skipped,
            "regret_floor": REGRET_FLOOR, "alpha": ALPHA, "summary": summary,
            "seconds_by_contender": _seconds(results), "runs": results}
    part["comparisons"] = comparisons(part, regret)
    part["targets"] = targets(part)
    return part


# --- statistics ---------------------------------------------------------------------------------

def log_regrets(results):
    """``{mode: {problem: {contender: {seed: log10 regret at the budget}}}}``."""
    final = str(MARKS[-1])
    regret = {}
    for name in dict.fromkeys(r["problem"] for r in results):
        rows = [r for r in results if r["problem"] == name]
        minimum = problem_minimum(name, rows)
        for r in rows:
            value = max(r["best"][final] - minimum, REGRET_FLOOR)
            regret.setdefault(r["mode"], {}).setdefault(name, {}).setdefault(
                r["contender"], {})[r["seed"]] = math.log10(value)
    return regret


def summarize(by_problem):
    """Per problem and contender: median and quartiles of log10 regret; mean ranks by seed."""
    from scipy.stats import rankdata

    summary = {}
    for name, regret in by_problem.items():
        contenders = list(regret)
        seeds = sorted(set.intersection(*(set(by_seed) for by_seed in regret.values())))
        ranks = np.array([rankdata([regret[c][s] for c in contenders]) for s in seeds])
        summary[name] = {"contenders": {
            c: {"median": float(np.median(list(regret[c].values()))),
                "q25": float(np.percentile(list(regret[c].values()), 25)),
                "q75": float(np.percentile(list(regret[c].values()), 75)),
                "mean_rank": float(ranks[:, i].mean()) if len(seeds) else None}
            for i, c in enumerate(contenders)}}
    return summary


def compare(ours, peer):
    """Paired comparison of two ``{seed: log10 regret}``: the median difference (ours - peer),
    one-sided Wilcoxon p-values each way, and the verdict ``better``, ``worse`` or ``tie``."""
    from scipy.stats import wilcoxon

    seeds = sorted(set(ours) & set(peer))
    differences = np.array([ours[s] - peer[s] for s in seeds])
    if not len(differences) or not np.any(differences):
        p_less = p_greater = 1.0
    else:
        p_less = float(wilcoxon(differences, alternative="less").pvalue)
        p_greater = float(wilcoxon(differences, alternative="greater").pvalue)
    verdict = "better" if p_less < ALPHA else "worse" if p_greater < ALPHA else "tie"
    return {"median_difference": float(np.median(differences)) if len(differences) else None,
            "p_better": p_less, "p_worse": p_greater, "verdict": verdict, "pairs": len(seeds)}


def best_of_ours(part, mode, name):
    """Our contender with the lowest median log10 regret on problem ``name`` in ``mode``."""
    medians = part["summary"][mode][name]["contenders"]
    present = [c for c in part["ours"] if c in medians]
    return min(present, key=lambda c: medians[c]["median"]) if present else None


def comparisons(part, regret):
    """Every paired comparison the targets rest on, one dict per mode, problem and pair."""
    pairs = [("mbo", "skopt forest_minimize"), ("gp", "skopt gp_minimize"),
             ("best of ours", "optuna TPE")]
    found = []
    for mode in part["modes"]:
        for name in part["problems"]:
            by_contender = regret.get(mode, {}).get(name, {})
            for ours, peer in pairs:
                which = best_of_ours(part, mode, name) if ours == "best of ours" else ours
                if which in by_contender and peer in by_contender:
                    found.append({"mode": mode, "problem": name, "ours": ours, "which": which,
                                  "peer": peer, **compare(by_contender[which],
                                                          by_contender[peer])})
            if mode == "sequential":
                continue
            for ours in part["ours"]:
                sequential = regret.get("sequential", {}).get(name, {}).get(ours)
                if ours in by_contender and sequential:
                    found.append({"mode": mode, "problem": name, "ours": ours, "which": ours,
                                  "peer": f"{ours} sequential",
                                  **compare(by_contender[ours], sequential),
                                  **_within(by_contender[ours], sequential)})
    return found


def _within(variant, sequential):
    """Whether the variant's median log10 regret is within :data:`ASYNC_TOLERANCE` of the
    sequential one (or better)."""
    mine, base = np.median(list(variant.values())), np.median(list(sequential.values()))
    return {"median": float(mine), "sequential_median": float(base),
            "within": bool(mine <= base + ASYNC_TOLERANCE * abs(base))}


def in_modes(part):
    """``part`` in the current shape; a record of the one-mode format (before batch and async
    were measured) has sequential runs and no paired comparisons."""
    if "modes" in part:
        return part
    return dict(part, modes=["sequential"], summary={"sequential": part["summary"]},
                comparisons=[], ours=[], alpha=ALPHA, skipped=part.get("skipped", {}))


def targets(part):
    """The issue's targets, each ``(target, measured, met)``, per mode."""
    part = in_modes(part)
    found = []
    goals = (("mbo", "skopt forest_minimize"), ("gp", "skopt gp_minimize"),
             ("best of ours", "optuna TPE"))
    problems = len(part["problems"])
    need = problems - 1 if problems > 1 else 1       # 5 of 6
    for mode in part["modes"]:
        for ours, peer in goals:
            rows = [c for c in part["comparisons"]
                    if c["mode"] == mode and c["ours"] == ours and c["peer"] == peer]
            if not rows:
                continue
            ok = [c["problem"] for c in rows if c["verdict"] != "worse"]
            lost = [c["problem"] for c in rows if c["verdict"] == "worse"]
            behind = [c["problem"] for c in rows
                      if c["verdict"] == "tie" and c["median_difference"] > 0]
            found.append((f"{mode}: {ours} at or below {peer} on ≥ {need} of {problems}",
                          f"{len(ok)} of {len(rows)}; worse on {', '.join(lost) or 'none'}"
                          f"; behind, not significantly, on {', '.join(behind) or 'none'}",
                          len(ok) >= need))
        if mode == "sequential":
            continue
        for ours in part["ours"]:
            rows = [c for c in part["comparisons"] if c["mode"] == mode and c["ours"] == ours
                    and c["peer"] == f"{ours} sequential"]
            if rows:
                out = [c["problem"] for c in rows if not c["within"]]
                found.append((f"{mode} {ours} within {ASYNC_TOLERANCE:.0%} of its sequential "
                              f"log10 regret", f"{len(rows) - len(out)} of {len(rows)}; "
                              f"outside on {', '.join(out) or 'none'}", not out))
    return found


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
    """Each contender's rank averaged over the problems (``summary`` of one mode)."""
    contenders = dict.fromkeys(c for p in summary.values() for c in p["contenders"])
    return {c: float(np.mean([p["contenders"][c]["mean_rank"] for p in summary.values()
                              if c in p["contenders"]])) for c in contenders}


# --- Markdown -------------------------------------------------------------------------------------

def markdown(part):
    """The part's tables: log10 regret per mode, the paired comparisons, what was left out."""
    part = in_modes(part)
    title = (f"### 3. Search quality: log10 simple regret at {part['budget']} evaluations, "
             f"median [IQR] over {part['seeds']} paired seeds")
    if "workers" in part:
        title += (f"; batch = {part['workers']} points, async = {part['workers']} simulated "
                  f"workers (lognormal times, median 1, sigma 1)")
    sections = [title]
    for mode in part["modes"]:
        summary = part["summary"].get(mode, {})
        ranks = mean_ranks(summary)
        rows = []
        for name in part["contenders"]:
            cells = []
            for problem_name in part["problems"]:
                c = summary.get(problem_name, {}).get("contenders", {}).get(name)
                cells.append("–" if c is None else
                             f"{c['median']:.2f} [{c['q25']:.2f}, {c['q75']:.2f}]")
            rank = ranks.get(name)
            rows.append((name, *cells, "–" if rank is None else f"{rank:.2f}"))
        sections.append(f"#### {mode}\n\n" + _table(("contender", *part["problems"],
                                                      "mean rank"), rows))
    rows = [(c["mode"], c["problem"], c["which"] if c["ours"] == c["which"]
             else f"{c['ours']} ({c['which']})", c["peer"], f"{c['median_difference']:+.2f}",
             f"{c['p_better']:.3g}", f"{c['p_worse']:.3g}", c["verdict"])
            for c in part["comparisons"]]
    sections.append("#### Paired comparisons (Wilcoxon signed-rank, one-sided each way, "
                    f"α = {part['alpha']})\n\n"
                    + _table(("mode", "problem", "ours", "against", "median difference",
                              "p (ours better)", "p (ours worse)", "verdict"), rows))
    seconds = ", ".join(f"{c} {s['median_per_run']:.2g}"
                        for c, s in part["seconds_by_contender"].items())
    left_out = "; ".join(f"{c}: {why}" for c, why in part["skipped"].items())
    sections.append(f"Regret is floored at {part['regret_floor']:g}; digits' minimum is the "
                    f"best validation log-loss any run found. Ranks: 1 is best, per problem "
                    f"and seed, averaged. Median seconds per run: {seconds}."
                    + (f" Left out: {left_out}." if left_out else ""))
    return "\n\n".join(sections)


def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)
