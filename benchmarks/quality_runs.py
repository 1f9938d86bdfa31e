"""One run of the quality part (:mod:`benchmarks.quality`): the problems, the contenders on
their own ask/tell interfaces, the loop that drives them in each mode, and the digests of the
code a run imported (what its cached outcome depends on).

A run happens in a fresh process that imports only what it needs, so that
:func:`code_digests` names exactly the files of ours that the run used.
"""

import hashlib
import heapq
import importlib.util
import json
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np

# What a run's outcome depends on besides its arguments and the code it imports: the data
# files the problems read (and the peers' versions: see benchmarks.quality.run_cache).
DATA_FILES = ("models/digits_space.json",)
ANALYTIC = {"branin": ("branin", 2), "hartmann6": ("hartmann6", 6), "ackley5": ("ackley", 5),
            "rosenbrock4": ("rosenbrock", 4), "levy6": ("levy", 6)}
MARKS = (0.25, 0.5, 1.0)
SKOPT = {"skopt gp_minimize": "gp_minimize", "skopt forest_minimize": "forest_minimize"}
OPTUNA = {"optuna TPE": "tpe", "optuna GP": "gp"}


def problem(name, digits_epochs=None):
    """``(space, objective, minimum)`` of a problem (``minimum`` is None when unknown).

    ``digits_epochs`` replaces the digits space's constant number of epochs (smoke runs).
    """
    from emews._space import Constant, Space

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
        from emews.core._algorithm import Stopper, load
        from emews.core._me import Limits, Search

        self.search = Search(load(name)(space, seed=seed), Limits(stopper=Stopper(budget=budget)))

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
                    "gp": lambda: optuna.samplers.GPSampler(seed=seed),
                    "cmaes": lambda: optuna.samplers.CmaEsSampler(
                        seed=seed, warn_independent_sampling=False)}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")      # Optuna 4: constant_liar is experimental
            self.study = optuna.create_study(sampler=samplers[sampler]())
        self.space = space
        self.distributions = distributions(space)
        self.running = {}                        # point key -> trials

    def ask(self, n):
        from emews.algorithms.optuna_search import decode
        from emews.core._algorithm import point_key

        points = []
        for _ in range(n):
            trial = self.study.ask(self.distributions)
            point = self.space.point([decode(p, trial.params[p.name]) for p in self.space.free])
            self.running.setdefault(point_key(point), []).append(trial)
            points.append(point)
        return points

    def tell(self, points, values):
        from optuna.trial import TrialState

        from emews.core._algorithm import point_key

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

        from emews.algorithms.skopt_space import dimension

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
        from emews.algorithms.skopt_space import decode

        xs = [self.optimizer.ask()] if n == 1 else self.optimizer.ask(n_points=n)
        return [self.space.point([decode(p, v) for p, v in zip(self.space.free, x)])
                for x in xs]

    def tell(self, points, values):
        from emews.algorithms.skopt_space import encode

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

def evaluate(searcher, objective, budget, mode, workers, seed, seconds=None):
    """Run ``searcher`` on ``objective`` for ``budget`` evaluations in ``mode``; return the values
    in the order they were told. In ``async`` mode an evaluation takes ``seconds(point)`` on
    the simulated clock, or a drawn time when ``seconds`` is None."""
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
            took = durations[issued] if seconds is None else seconds(point)
            heapq.heappush(running, (now + took, issued, point, objective(point)))
            issued += 1
        if not running:
            return values
        now, _, point, value = heapq.heappop(running)
        searcher.tell([point], [value])
        values.append(value)


def one_run(problem_name, name, mode, seed, budget, workers, digits_epochs=None):
    """One contender on one problem in one mode with one seed: the best value at each mark,
    and the digests of the code it ran (``code``)."""
    space, objective, _ = problem(problem_name, digits_epochs)
    started = time.perf_counter()
    searcher = contender(name, space, seed, budget)
    code_digests()          # hash the code imported so far now, not after a long run
    values = evaluate(searcher, objective, budget, mode, workers, seed)
    seconds = time.perf_counter() - started
    finite = [v if v is not None and math.isfinite(v) else math.inf for v in values]
    best = np.minimum.accumulate(finite) if finite else np.array([math.inf])
    marks = {str(m): float(best[min(len(best), max(int(m * budget), 1)) - 1]) for m in MARKS}
    return {"problem": problem_name, "contender": name, "mode": mode, "seed": seed,
            "evaluations": len(values), "best": marks, "seconds": seconds,
            "code": code_digests()}


def _source_roots():
    """``{name: directory}`` of our code: the framework, the algorithms, the models, this part."""
    import emews
    import emews.algorithms
    import emews.models

    roots = [Path(emews.__file__).parent, Path(emews.algorithms.__path__[0]),
             Path(emews.models.__path__[0]), Path(__file__).parent]
    return {root.name: root.resolve() for root in roots}


_DIGESTS = {}     # name -> digest of one of our files, taken when this process first saw it


def _digest(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def _our_name(path, roots):
    """``root/relative path`` of a file of ours (``emews/core/_me.py``), else None."""
    path = Path(path).resolve()
    for name, root in roots.items():
        if path.is_relative_to(root):
            return f"{name}/{path.relative_to(root).as_posix()}"
    return None


def current_digest(name):
    """The digest of a file of ours, named as in :func:`code_digests`, as it is now (None once
    it is gone)."""
    root, _, rest = name.partition("/")
    path = _source_roots().get(root, Path("/nonexistent")) / rest
    return _digest(path) if path.is_file() else None


def code_digests():
    """``{name: digest}`` of the data files and of every file of ours that this process has
    imported, each hashed when first seen: the code a run's outcome depends on."""
    roots = _source_roots()
    files = [getattr(m, "__file__", None) for m in list(sys.modules.values())]
    for name in [*DATA_FILES, *(_our_name(f, roots) for f in files if f)]:
        if name and name not in _DIGESTS:
            _DIGESTS[name] = current_digest(name)
    return dict(sorted(_DIGESTS.items()))
