"""Part 14, conditional search spaces (issue 49): each of our searches on a conditional space
against the same search on its flattened space, and against peers given the same conditions.

Problems (:func:`problem`):

* ``branches``: a choice of branch, then its own parameters: branch ``a`` is Branin on
  ``(a_x1, a_x2)`` (minimum 0.398), branch ``b`` Hartmann-3 on ``(b_x1, b_x2, b_x3)``
  shifted to a minimum of 0.1, the problem's minimum;
* ``models``: Bayesmark-style model choice on scikit-learn's bundled breast-cancer data
  (standardized): an SVM (log C, log gamma), k nearest neighbours (k, weights) or a decision
  tree (depth, minimum split, criterion), then that model's parameters; the value is the
  3-fold cross-validated error (the folds fixed), its minimum the best any run found.

Contenders, each on :func:`benchmarks.quality_runs.evaluate`'s sequential loop at the same
budget and paired seeds:

* ours (registered names), through the ME driver's ``Search`` as the quality part drives them,
  on the conditional space, and each again as ``<name> flat`` on the flattened space: the
  same parameters without conditions, all always active (the objective ignores those of
  the branch or model not chosen, as a user's model does with a flattened space);
* Optuna TPE define-by-run (``optuna TPE define-by-run``): Optuna's own ``study.ask``, the
  parameters suggested in order, each only when its condition holds on those suggested
  before it (as an Optuna user writes the objective);
* SMAC3 (``SMAC3``, the ``bench`` extra): its hyperparameter optimization facade (a random
  forest, as Bayesmark runs it) on its own ``ask`` / ``tell``, given the conditions as
  ConfigSpace ``InCondition`` clauses; where ``smac`` is not installed the part reports it as
  missing and why.

A run that raises (a search that cannot handle the space) is recorded with its error and
reported, not dropped. Figures: log10 simple regret at the budget, floored at
:data:`benchmarks.quality.REGRET_FLOOR`, median and IQR over the seeds; each of ours against
its flattened self and against the peers by the quality part's paired one-sided Wilcoxon
test (:func:`benchmarks.quality.compare`). The target: every one of ours at or above its
flattened space on every problem (not significantly worse). Runs are cached as the quality
part's are, one JSON line per run with the digests of our code it imported.
"""

import functools
import importlib.util
import math
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from . import quality
from .quality_runs import Ours, code_digests, evaluate

PROBLEMS = ("branches", "models")
FLAT = " flat"
DEFINE_BY_RUN = "optuna TPE define-by-run"
SMAC = "SMAC3"
PRELOAD = quality.PRELOAD + ("sklearn.svm", "sklearn.neighbors", "sklearn.tree")
HARTMANN3_A = np.array([[3.0, 10, 30], [0.1, 10, 35], [3.0, 10, 30], [0.1, 10, 35]])
HARTMANN3_P = 1e-4 * np.array([[3689, 1170, 2673], [4699, 4387, 7470], [1091, 8732, 5547],
                               [381, 5743, 8828]])
HARTMANN3_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])
HARTMANN3_MINIMUM = -3.86278214782076
B_MINIMUM = 0.1    # branch b's minimum: below Branin's 0.397887, so b is the better branch


def _on(parent, value):
    return {parent: [value]}


BRANCHES = [
    {"name": "branch", "type": "categorical", "values": ["a", "b"]},
    {"name": "a_x1", "type": "float", "lower": -5, "upper": 10, "condition": _on("branch", "a")},
    {"name": "a_x2", "type": "float", "lower": 0, "upper": 15, "condition": _on("branch", "a")},
    *({"name": f"b_x{i}", "type": "float", "lower": 0, "upper": 1,
       "condition": _on("branch", "b")} for i in (1, 2, 3)),
]
MODELS = [
    {"name": "model", "type": "categorical", "values": ["svm", "knn", "tree"]},
    {"name": "svm_C", "type": "float", "lower": 1e-2, "upper": 1e3, "log": True,
     "condition": _on("model", "svm")},
    {"name": "svm_gamma", "type": "float", "lower": 1e-5, "upper": 1.0, "log": True,
     "condition": _on("model", "svm")},
    {"name": "knn_k", "type": "int", "lower": 1, "upper": 40, "condition": _on("model", "knn")},
    {"name": "knn_weights", "type": "categorical", "values": ["uniform", "distance"],
     "condition": _on("model", "knn")},
    {"name": "tree_depth", "type": "int", "lower": 1, "upper": 20,
     "condition": _on("model", "tree")},
    {"name": "tree_min_split", "type": "int", "lower": 2, "upper": 40,
     "condition": _on("model", "tree")},
    {"name": "tree_criterion", "type": "categorical", "values": ["gini", "entropy"],
     "condition": _on("model", "tree")},
]


def branches(point):
    """Branin on branch ``a``, Hartmann-3 shifted to a minimum of :data:`B_MINIMUM` on ``b``."""
    from emews.models import analytic

    if point["branch"] == "a":
        return analytic.branin({"x1": point["a_x1"], "x2": point["a_x2"]})
    x = np.array([point[f"b_x{i}"] for i in (1, 2, 3)])
    inner = np.sum(HARTMANN3_A * (x - HARTMANN3_P) ** 2, axis=1)
    return float(-np.sum(HARTMANN3_ALPHA * np.exp(-inner)) - HARTMANN3_MINIMUM + B_MINIMUM)


@functools.cache
def _data():
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import StratifiedKFold
    from sklearn.preprocessing import StandardScaler

    X, y = load_breast_cancer(return_X_y=True)
    folds = list(StratifiedKFold(3, shuffle=True, random_state=0).split(X, y))
    return StandardScaler().fit_transform(X), y, folds


def models(point):
    """The 3-fold cross-validated error of the model ``point`` chooses, with its parameters."""
    from sklearn.model_selection import cross_val_score
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.svm import SVC
    from sklearn.tree import DecisionTreeClassifier

    X, y, folds = _data()
    if point["model"] == "svm":
        model = SVC(C=point["svm_C"], gamma=point["svm_gamma"])
    elif point["model"] == "knn":
        model = KNeighborsClassifier(point["knn_k"], weights=point["knn_weights"])
    else:
        model = DecisionTreeClassifier(max_depth=point["tree_depth"],
                                       min_samples_split=point["tree_min_split"],
                                       criterion=point["tree_criterion"], random_state=0)
    return float(1 - np.mean(cross_val_score(model, X, y, cv=folds)))


def problem(name, flat=False):
    """``(space, objective, minimum)`` of a problem (``minimum`` None when unknown); ``flat``:
    the same parameters without their conditions."""
    from emews._space import Space

    entries, objective, minimum = {"branches": (BRANCHES, branches, B_MINIMUM),
                                   "models": (MODELS, models, None)}[name]
    space = Space.from_ga_json(entries, f"{name} space")
    if flat:
        space = Space(tuple(replace(p, condition=None) for p in space.params), space.where)
    return space, objective, minimum


def unavailable(contender):
    """Why a contender cannot run here (``None`` when it can)."""
    if contender == SMAC and importlib.util.find_spec("smac") is None:
        return "SMAC3 is not installed (pip install 'emews-hpo[bench]' brings it)"
    return None


class SMACPeer:
    """SMAC3's hyperparameter optimization facade (a random forest, as Bayesmark runs SMAC)
    on its own ``ask`` / ``tell``, the space as a ConfigSpace with its conditions."""

    def __init__(self, space, seed, budget):
        import tempfile

        from smac import HyperparameterOptimizationFacade, Scenario

        self.space = space
        self.output = tempfile.TemporaryDirectory(prefix="emews-smac-")
        scenario = Scenario(configspace(space), deterministic=True, n_trials=budget,
                            seed=seed, output_directory=Path(self.output.name))
        self.smac = HyperparameterOptimizationFacade(scenario, target_function=_never,
                                                     logging_level=40, overwrite=True)
        self.running = []

    def ask(self, n):
        points = []
        for _ in range(n):
            info = self.smac.ask()
            values = dict(info.config)
            point = {p.name: _value(p, values[p.name]) for p in self.space.params
                     if p.name in values}
            self.running.append((info, point))
            points.append(point)
        return points

    def tell(self, points, values):
        from smac.runhistory.dataclasses import TrialValue

        for point, value in zip(points, values):
            info = next(i for i, p in self.running if p == point)
            self.running = [(i, p) for i, p in self.running if i is not info]
            self.smac.tell(info, TrialValue(cost=value if math.isfinite(value) else math.inf))


def _never(config, seed=0):
    raise RuntimeError("SMACPeer is driven by ask and tell")


def configspace(space):
    """The ConfigSpace of ``space``: its free parameters, each condition (one parent's values,
    the form of this part's problems) an ``InCondition``."""
    from ConfigSpace import (Categorical, ConfigurationSpace, Float, InCondition, Integer)

    from emews._conditions import In

    cs = ConfigurationSpace()
    for param in space.free:
        if param.kind == "int":
            cs.add(Integer(param.name, (param.lower, param.upper), log=param.log))
        elif param.kind == "float":
            cs.add(Float(param.name, (param.lower, param.upper), log=param.log))
        else:
            cs.add(Categorical(param.name, list(param.values)))
    for param in space.free:
        if param.condition is not None:
            if not isinstance(param.condition, In):
                raise NotImplementedError(f"{param.name}: only a test of one parent's values")
            cs.add(InCondition(cs[param.name], cs[param.condition.parent],
                               list(param.condition.values)))
    return cs


def _value(param, value):
    """A ConfigSpace value as the space's own (numpy numbers and strings to Python's)."""
    if param.kind in ("int", "float"):
        return int(value) if param.kind == "int" else float(value)
    return next(v for v in param.values if v == value)


class DefineByRun:
    """Optuna's TPE on Optuna's own ``study.ask`` / ``study.tell``, each parameter suggested
    in the space's order only when its condition holds on the values suggested before it."""

    def __init__(self, space, seed, budget):
        import optuna

        from emews.algorithms.optuna_search import distributions

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=seed))
        self.space, self.distributions = space, distributions(space)
        self.running = []

    def ask(self, n):
        from emews.algorithms.optuna_search import decode, suggest

        points = []
        for _ in range(n):
            trial, point = self.study.ask(), {}
            for param in self.space.params:
                if param.condition is not None and not param.condition.holds(point):
                    continue
                if param.name in self.distributions:
                    point[param.name] = decode(param, suggest(
                        trial, param.name, self.distributions[param.name]))
                else:
                    point[param.name] = param.value
            self.running.append((trial, point))
            points.append(point)
        return points

    def tell(self, points, values):
        from optuna.trial import TrialState

        for point, value in zip(points, values):
            trial = next(t for t, p in self.running if p is point or p == point)
            self.running = [(t, p) for t, p in self.running if t is not trial]
            if math.isfinite(value):
                self.study.tell(trial, value)
            else:
                self.study.tell(trial, state=TrialState.FAIL)


def contender(name, space, seed, budget):
    """The ask/tell object of contender ``name`` (its space already flattened for ``flat``)."""
    if name == DEFINE_BY_RUN:
        return DefineByRun(space, seed, budget)
    if name == SMAC:
        return SMACPeer(space, seed, budget)
    return Ours(name.removesuffix(FLAT), space, seed, budget)


def one_run(problem_name, name, seed, budget):
    """One contender on one problem with one seed, sequentially: the best value at the budget
    (or the error that stopped the run) and the digests of the code it ran."""
    space, objective, _ = problem(problem_name, flat=name.endswith(FLAT))
    started = time.perf_counter()
    line = {"problem": problem_name, "contender": name, "mode": "sequential", "seed": seed}
    try:
        values = evaluate(contender(name, space, seed, budget), objective, budget,
                          "sequential", 1, seed)
    except Exception as error:   # reported as this contender's failure on the problem
        line["error"] = f"{type(error).__name__}: {error}"
        values = []
    finite = [v for v in values if math.isfinite(v)]
    return {**line, "evaluations": len(values), "best": min(finite) if finite else None,
            "seconds": time.perf_counter() - started, "code": code_digests()}


def contenders_of(sizes):
    """Every contender name of the part at ``sizes``, ours then their flattened selves then
    the peers."""
    return [*sizes.conditional_ours, *(f"{c}{FLAT}" for c in sizes.conditional_ours),
            *sizes.conditional_peers]


def run(sizes, jobs=None, cache_directory=quality.CACHE_DIRECTORY.parent / "conditional-runs"):
    """Every contender on every problem with every seed; regrets, paired comparisons and the
    target. Runs found in the cache are not run again."""
    contenders, skipped = quality.available(contenders_of(sizes), unavailable, "conditional")
    runs = [(p, c, s) for p in sizes.conditional_problems for c in contenders
            for s in range(sizes.conditional_seeds)]
    cache = quality.run_cache(sizes, cache_directory, run_sizes=[sizes.conditional_budget])
    known = {key[:2] + key[3:]: r for key, r in quality.cached_runs(cache).items()
             if key[2] == "sequential"}
    results = [{k: v for k, v in known[r].items() if k != "code"} for r in runs if r in known]
    print(f"[conditional] {len(results)} of {len(runs)} runs from the cache {cache}", flush=True)
    results += quality.run_missing(one_run, [(*r, sizes.conditional_budget) for r in runs
                                             if r not in known], cache, jobs, "conditional",
                                   PRELOAD)
    regret, failed = log_regrets(results)
    ours = [c for c in sizes.conditional_ours if c in contenders]
    part = {"budget": sizes.conditional_budget, "seeds": sizes.conditional_seeds,
            "problems": list(sizes.conditional_problems), "contenders": contenders,
            "ours": ours, "skipped": skipped, "failed": failed,
            "regret_floor": quality.REGRET_FLOOR, "alpha": quality.ALPHA,
            "summary": quality.summarize(regret), "runs": results}
    part["comparisons"] = comparisons(part, regret)
    part["targets"] = targets(part)
    return part


def log_regrets(results):
    """``{problem: {contender: {seed: log10 regret}}}`` of the runs that finished, and
    ``{problem: {contender: error}}`` of those that raised."""
    regret, failed = {}, {}
    for name in dict.fromkeys(r["problem"] for r in results):
        rows = [r for r in results if r["problem"] == name]
        for r in rows:
            if r.get("error"):
                failed.setdefault(name, {})[r["contender"]] = r["error"]
        done = [r for r in rows if r["best"] is not None and not r.get("error")]
        minimum = problem(name)[2]
        if minimum is None:
            minimum = min((r["best"] for r in done), default=0.0)
        for r in done:
            regret.setdefault(name, {}).setdefault(r["contender"], {})[r["seed"]] = \
                math.log10(max(r["best"] - minimum, quality.REGRET_FLOOR))
    return regret, failed


def comparisons(part, regret):
    """Each of ours against its flattened self and against each peer, per problem."""
    found = []
    for name in part["problems"]:
        by_contender = regret.get(name, {})
        for ours in part["ours"]:
            for peer in [f"{ours}{FLAT}", *(c for c in part["contenders"]
                                            if c not in part["ours"] and FLAT not in c)]:
                if ours in by_contender and peer in by_contender:
                    found.append({"problem": name, "ours": ours, "peer": peer,
                                  **quality.compare(by_contender[ours], by_contender[peer])})
    return found


def targets(part):
    """The issue's target: each of ours at or above its flattened space on every problem (a
    search that failed on a problem misses it)."""
    found = []
    for ours in part["ours"]:
        against = [c for c in part["comparisons"] if c["ours"] == ours
                   and c["peer"] == f"{ours}{FLAT}"]
        worse = [c["problem"] for c in against if c["verdict"] == "worse"]
        failed = [p for p in part["problems"] if ours in part["failed"].get(p, {})]
        figure = ", ".join(f"{c['problem']} {c['verdict']} (p worse {c['p_worse']:.3g})"
                           for c in against)
        if failed:
            figure += (", " if figure else "") + "failed on " + ", ".join(failed)
        found.append((f"conditional {ours} at or above its flattened space on every problem",
                      figure or "not measured", not worse and not failed and bool(against)))
    return found


def markdown(part):
    """The part's tables: log10 regret per problem and contender, the paired comparisons, what
    failed and what was left out."""
    sections = [f"### 14. Conditional spaces: log10 simple regret at {part['budget']} "
                f"evaluations (sequential), median [IQR] over {part['seeds']} paired seeds"]
    rows = []
    for name in part["contenders"]:
        cells = []
        for problem_name in part["problems"]:
            c = part["summary"].get(problem_name, {}).get("contenders", {}).get(name)
            error = part["failed"].get(problem_name, {}).get(name)
            cells.append("failed" if error and c is None else "–" if c is None else
                         f"{c['median']:.2f} [{c['q25']:.2f}, {c['q75']:.2f}]")
        rows.append((name, *cells))
    sections.append(quality._table(("contender", *part["problems"]), rows))
    rows = [("sequential", c["problem"], c["ours"], c["peer"],
             f"{c['median_difference']:+.2f}", f"{c['p_better']:.3g}", f"{c['p_worse']:.3g}",
             c["verdict"]) for c in part["comparisons"]]
    sections.append(quality.comparisons_table("Paired comparisons", part["alpha"], rows))
    notes = [f"Regret is floored at {part['regret_floor']:g}; the models problem's minimum is "
             f"the best cross-validated error any run found."]
    failures = "; ".join(f"{c} on {p}: {error}" for p, errors in part["failed"].items()
                         for c, error in errors.items())
    if failures:
        notes.append(f"Failed: {failures}.")
    if part["skipped"]:
        notes.append("Missing: " + "; ".join(f"{c}: {why}" for c, why in
                                             part["skipped"].items()) + ".")
    sections.append(" ".join(notes))
    return "\n\n".join(sections)
