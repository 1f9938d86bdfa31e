"""Part 11, learning curves and pruning (issue 33, point 7): our pruners and our BOHB-like
search against Optuna's pruners, on problems whose learning curves cross, on the same budget
of epochs, async with uneven epoch times.

Problems (:data:`PROBLEMS`): every one gives, for a configuration and a seed, its whole
learning curve (a validation loss per epoch), and a run reads it epoch by epoch:

* ``exp3``, ``pow3``, ``pow6``: parametric curves of the LCBench kind on ``[0, 1]^d``,
  ``a(c) + exp(-(t - 1) / tau(c))`` and ``a(c) + t ** -alpha(c)``, ``a`` a quadratic
  (smallest, 0.1, at ``OPTIMUM``), with Gaussian noise (sd 0.01) per epoch. The speed
  (``tau`` from 1 to 7 epochs, ``alpha`` from 1.5 to 0.3) follows the first coordinate,
  whose optimum is high: the good configurations learn slowly, and their curves cross those
  of faster, worse ones (the first epochs rank by ``a``, the middle ones favour speed, the
  last ones ``a`` again). Regret is the noise-free last value of the chosen configuration
  minus the smallest there is.
* ``digits``: scikit-learn's MLP on its digits data, trained epoch by epoch (``partial_fit``,
  one pass a call), validation log-loss; a grid of 48 configurations, 9 epochs.
* ``keras``: a Keras network (one hidden layer) on the same digits data (the package's
  own), validation loss per epoch; a grid of 48 configurations, 9 epochs.

  The two trained problems are tables, as LCBench is: a configuration's curve is trained
  once, when first asked for, and kept (``results/fidelity-curves/``), so every contender
  reads the same curves. The digits MLP's are trained per seed (its split and its weights
  follow the seed); the Keras network's once for all seeds, with seed 0, as LCBench's one
  curve per configuration (a Keras curve costs seconds: 48, not 480), so that its seeds
  differ in the searches and the worker timelines only. Their regret is against the best
  final value any contender found on that seed.
* ``lc-wine``, ``lc-iris``, ``lc-breast``, ``lc-diabetes``: the learning-curve tables of
  :mod:`benchmarks.lc_tables` (1,000 configurations of a scikit-learn MLP, 27 epochs), read
  from the repository: a configuration replays its nearest one's curve, and its epochs take
  the table's seconds instead of the drawn durations below. Their regret is against the
  table's best final value.

Contenders (:data:`CONTENDERS`), each a sampler and a pruner, driven by one loop
(:func:`simulate`):

* ours: the product's own classes, an algorithm (``random``, ``optuna`` (TPE, our plugin),
  ``bohb``) asked for points and told results as the ME driver tells them (a pruned run as a
  :class:`~emews.core._algorithm.PrunedResult` with its curve), and a pruner of
  :mod:`emews.core._pruners` judging every report as the master does;
* Optuna's TPE (``constant_liar``, ``multivariate``) with its ``MedianPruner``,
  ``SuccessiveHalvingPruner`` and ``HyperbandPruner``, through ``study.ask``,
  ``trial.report``, ``trial.should_prune`` and ``study.tell``.

ASHA, Hyperband and Optuna's successive-halving and Hyperband pruners all get
``min_resource = 1``, ``reduction_factor = 3`` and the problem's epochs as the largest
resource; the median pruners their defaults.

The simulation (time is simulated; nothing sleeps): ``workers`` (8) workers, each given a new
configuration as soon as it is free. Run ``i`` (in the order handed out) trains each epoch in
the ``i``-th draw of a lognormal duration (median 1, sigma 0.5) from the seed's own generator,
so every contender sees the same worker timeline. A run reports after each epoch; a pruned run
frees its worker at once. The budget is a number of epochs: once it has been handed out, no
epoch starts (runs still under way are cut there, neither finished nor told). Utilization is
the epochs' time over ``workers`` times the time to the last epoch's end. A freed worker takes
its next configuration at once here (the samplers' time is not simulated), so this figure's
only idle time is the drain after the budget has been handed out, which every contender has,
pruned or not, and which shrinks as the budget grows; what pruning costs a pool is measured on
a real one (:mod:`benchmarks.fidelity_pool`), and that is the utilization target's figure.

``pow3`` is run once more on 1 worker (:data:`SEQUENTIAL`): the setting of the issue's
measured fact (27 epochs, 60 runs' epochs, 10 seeds, sequential). For each pruned contender,
:func:`epochs_to_reach` gives the epochs it trained until its chosen configuration was as good
as the same sampler's unpruned final one, seed by seed, as that fact counts.

Figures, per problem, contender and seed: the regret after each finished run, against the
epochs trained so far; summarized as the median over seeds of log10 regret (floored at
:data:`REGRET_FLOOR`) at a third of the budget and at the whole budget. Targets (issue 33):
a pruned contender reaches the final regret of the same sampler unpruned with at most a third
of the epochs (its regret at a third of the budget at or below the unpruned one's at the whole
budget: a median paired difference of 0 or less, and not worse by a paired one-sided Wilcoxon
test at :data:`ALPHA`); the best of ours at or
below Optuna's best pruner (not worse at the whole budget, paired); utilization at least 0.9
with pruning on (the drain at the end left out). And (issue 47) ``bohb`` with ``hyperband`` at
or below Optuna's TPE with its ``HyperbandPruner`` (:data:`BOHB_PAIR`, paired the same way, on
every problem, the sequential one too); utilization at least 0.95 counting the drain, with
``pause = true`` (its drain filled with thawed paused runs); and (issue 47, point 1) a search of
our own reaching unpruned TPE's final regret in at most half the epochs of Optuna's fastest
pair (:func:`own_search_target`). Beside that target the part gives how soon a search that
knew the best configuration would have it (:func:`fewest_epochs`, :data:`BEST`): the epochs
trained when the best configuration, proposed on every worker from the start, first finishes.
With 8 workers every one of them trains while the first run goes to its end, so on a replayed
table, whose epochs take the same time on every worker, that is 8 x 27 - 7 = 209 epochs. (It
is not a strict bound: the runs a pruning search starts later draw other epoch times, and one
may draw shorter ones.)
"""

import functools
import hashlib
import heapq
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import fidelity_pool, lc_tables
from .quality import compare

CURVES = Path(__file__).resolve().parent / "results" / "fidelity-curves"
REGRET_FLOOR = 1e-6
ALPHA = 0.05
EPOCHS = 27
SEQUENTIAL = " sequential"   # the label of a problem run on 1 worker


# --- problems ------------------------------------------------------------------------------

def _noise(config, seed, epochs, scale=0.01):
    """Gaussian noise per epoch, the same for a configuration and seed in every contender."""
    digest = hashlib.sha256(f"{json.dumps(config, sort_keys=True)}/{seed}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little")).normal(0, scale, epochs)


OPTIMUM = (0.8, 0.3, 0.6, 0.4, 0.7, 0.2)


def _asymptote(config):
    """Where a parametric configuration's curve goes: smallest (0.1) at OPTIMUM."""
    return 0.1 + sum((config[f"x{i}"] - OPTIMUM[i]) ** 2 for i in range(len(config)))


def _exp_curve(config, seed, epochs):
    """``asymptote + exp(-(t - 1) / tau)``, ``tau`` from 1 to 7 epochs with ``x0``: the good
    configurations (``x0`` near 0.8) learn slowly. With noise unless ``seed`` is None."""
    tau = 1.0 + 6.0 * config["x0"]
    t = np.arange(1, epochs + 1)
    curve = _asymptote(config) + np.exp(-(t - 1) / tau)
    return curve if seed is None else curve + _noise(config, seed, epochs)


def _pow_curve(config, seed, epochs):
    """``asymptote + t ** -alpha``, ``alpha`` from 1.5 down to 0.3 with ``x0``: the good
    configurations learn slowly. With noise unless ``seed`` is None."""
    alpha = 0.3 + 1.2 * (1.0 - config["x0"])
    t = np.arange(1, epochs + 1)
    curve = _asymptote(config) + t ** -alpha
    return curve if seed is None else curve + _noise(config, seed, epochs)


def _unit_space(d):
    return [{"name": f"x{i}", "type": "float", "lower": 0.0, "upper": 1.0} for i in range(d)]


DIGITS_SPACE = [
    {"name": "units", "type": "ordered", "values": [8, 32, 128]},
    {"name": "lr", "type": "ordered", "values": [1e-4, 1e-3, 1e-2, 1e-1]},
    {"name": "alpha", "type": "ordered", "values": [1e-4, 1e-1]},
    {"name": "batch", "type": "ordered", "values": [32, 256]},
]
KERAS_SPACE = [
    {"name": "units", "type": "ordered", "values": [8, 32, 128]},
    {"name": "lr", "type": "ordered", "values": [1e-4, 1e-3, 1e-2, 1e-1]},
    {"name": "act", "type": "categorical", "values": ["relu", "tanh"]},
    {"name": "batch", "type": "ordered", "values": [64, 256]},
]


@functools.cache
def _digits(seed):
    """scikit-learn's digits, scaled, split 75/25 by ``seed``."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    X, y = load_digits(return_X_y=True)
    return train_test_split(X / 16.0, y, test_size=0.25, random_state=seed, stratify=y)


def _digits_curve(config, seed, epochs):
    import warnings

    from sklearn.metrics import log_loss
    from sklearn.neural_network import MLPClassifier

    X, X_val, y, y_val = _digits(seed)
    model = MLPClassifier((config["units"],), learning_rate_init=config["lr"],
                          alpha=config["alpha"], batch_size=config["batch"], random_state=seed)
    curve = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(epochs):
            model.partial_fit(X, y, classes=np.arange(10))
            curve.append(log_loss(y_val, model.predict_proba(X_val), labels=np.arange(10)))
    return np.array(curve)


def _keras_curve(config, seed, epochs):
    import os

    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import keras

    keras.utils.set_random_seed(seed)
    X, X_val, y, y_val = _digits(seed)
    model = keras.Sequential([keras.Input((64,)),
                              keras.layers.Dense(config["units"], activation=config["act"]),
                              keras.layers.Dense(10, activation="softmax")])
    model.compile(keras.optimizers.Adam(config["lr"]), "sparse_categorical_crossentropy")
    history = model.fit(X, y, batch_size=config["batch"], epochs=epochs, verbose=0,
                        validation_data=(X_val, y_val))
    keras.backend.clear_session()
    return np.array(history.history["val_loss"])


def _replayed_curve(config, seed, epochs, name):
    return lc_tables.load(name).curve(config, epochs)


@dataclass(frozen=True)
class Problem:
    """A problem: its space (GA JSON), its epochs, ``curve(config, seed, epochs)``, and
    whether it is a table of trained curves (kept on disk, trained once per configuration and
    seed, or once per configuration, with seed 0, unless ``seeded``) or parametric (its
    noise-free curve known: ``curve(config, None, epochs)``). A problem that ``replays`` a
    learning-curve table of :mod:`benchmarks.lc_tables` reads its curves from it and charges
    its epochs the table's seconds, instead of the drawn durations."""

    name: str
    space: list
    curve: object
    epochs: int = 27
    table: bool = False
    seeded: bool = True
    replays: str | None = None

    def truth(self, config, epochs, observed):
        """What a finished run of ``config`` is worth: the noise-free last value of a
        parametric curve, else the ``observed`` one."""
        return observed if self.table else float(self.curve(config, None, epochs)[-1])

    def minimum(self, epochs):
        """The smallest noise-free last value of a parametric problem (``None`` for a table,
        the table's smallest for a replayed one): that of :meth:`best`."""
        if self.replays:
            return lc_tables.load(self.replays).minimum(epochs)
        if self.table:
            return None
        return float(self.curve(self.best(epochs), None, epochs)[-1])

    def best(self, epochs, curves=None, seed=None):
        """The configuration that ends lowest after ``epochs``: of a parametric problem, the
        coordinates past ``x0`` at OPTIMUM, ``x0`` the best of a fine grid (it alone sets the
        speed); of a replayed table, its best; of a trained table, the best of the
        configurations ``curves`` has trained for ``seed`` (so far: what the contenders found,
        as its regret counts)."""
        if self.replays:
            table = lc_tables.load(self.replays)
            return table.configurations[int(np.argmin(table.loss[:, epochs - 1]))]
        if self.table:
            return curves.best_trained(seed)
        others = {f"x{i}": OPTIMUM[i] for i in range(1, len(self.space))}
        return min((dict(others, x0=float(x0)) for x0 in np.linspace(0.0, 1.0, 2001)),
                   key=lambda config: self.curve(config, None, epochs)[-1])


PROBLEMS = {
    "exp3": Problem("exp3", _unit_space(3), _exp_curve, 27),
    "pow3": Problem("pow3", _unit_space(3), _pow_curve, 27),
    "pow6": Problem("pow6", _unit_space(6), _pow_curve, 27),
    "digits": Problem("digits", DIGITS_SPACE, _digits_curve, 9, table=True),
    "keras": Problem("keras", KERAS_SPACE, _keras_curve, 9, table=True, seeded=False),
    **{f"lc-{name}": Problem(f"lc-{name}", lc_tables.SPACE,
                             functools.partial(_replayed_curve, name=name), lc_tables.EPOCHS,
                             table=True, seeded=False, replays=name)
       for name in lc_tables.DATASETS},
}


class Curves:
    """The learning curves of a problem, computed once per configuration and seed (a trained
    problem's kept in a JSON-lines file under ``directory``)."""

    def __init__(self, problem, epochs, directory=CURVES):
        self.problem, self.epochs, self.memo = problem, epochs, {}
        self.path = Path(directory) / f"{problem.name}-{epochs}.jsonl" \
            if problem.table and not problem.replays else None
        if self.path is not None and self.path.exists():
            for line in self.path.read_text().splitlines():
                row = json.loads(line)
                self.memo[(row["key"], row["seed"])] = np.array(row["curve"])

    def __call__(self, config, seed):
        key, seed = json.dumps(config, sort_keys=True), seed if self.problem.seeded else 0
        if (key, seed) not in self.memo:
            curve = np.asarray(self.problem.curve(config, seed, self.epochs), dtype=float)
            self.memo[(key, seed)] = curve
            if self.path is not None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with open(self.path, "a") as out:
                    out.write(json.dumps({"key": key, "seed": seed,
                                          "curve": curve.tolist()}) + "\n")
        return self.memo[(key, seed)]

    def best_trained(self, seed):
        """The configuration with the lowest last value of those trained for ``seed``."""
        seed = seed if self.problem.seeded else 0
        key = min((k for k, s in self.memo if s == seed), key=lambda k: self.memo[(k, seed)][-1])
        return json.loads(key)


# --- contenders ----------------------------------------------------------------------------

class Ours:
    """One of our algorithms with one of our pruners, as the ME driver and the master use
    them."""

    def __init__(self, algorithm, pruner, space, seed, epochs, options=None):
        from emews.core import _pruners as pruners
        from emews.core._algorithm import load
        from emews._space import Space

        self.search = load(algorithm)(Space.from_ga_json(space), seed=seed, **(options or {}))
        settings = {} if pruner in ("none", "median") else \
            {"min_resource": 1, "max_resource": epochs, "reduction_factor": 3}
        self.pruner = pruners.make(pruner, settings)
        self.points, self.curves = {}, {}

    def new(self):
        points = self.search.ask(1)
        if not points:      # nothing left to propose (a small grid, every point told)
            return None
        (point,) = points
        run = len(self.points)
        self.points[run], self.curves[run] = point, {}
        return run, point

    def report(self, run, step, value):
        self.curves[run][step] = value
        return self.pruner.report((run, 1), step, value)

    def finish(self, run, value):
        self.pruner.completed((run, 1))
        self.search.tell([self.points[run]], [value])

    def prune(self, run):
        from emews.core._algorithm import PrunedResult

        self.search.tell([self.points[run]], [PrunedResult(self.curves[run])])


class OptunaPeer:
    """Optuna's TPE with one of Optuna's pruners, on its ask/tell interface."""

    def __init__(self, pruner, space, seed, epochs):
        import optuna

        optuna.logging.set_verbosity(optuna.logging.ERROR)
        pruner = {"median": lambda: optuna.pruners.MedianPruner(),
                  "sha": lambda: optuna.pruners.SuccessiveHalvingPruner(
                      min_resource=1, reduction_factor=3),
                  "hyperband": lambda: optuna.pruners.HyperbandPruner(
                      min_resource=1, max_resource=epochs, reduction_factor=3)}[pruner]()
        sampler = optuna.samplers.TPESampler(seed=seed, constant_liar=True, multivariate=True)
        # a fixed name: HyperbandPruner puts a trial in a bracket by a hash of the study's
        # name, which is random by default, and the same seed must make the same run
        self.study = optuna.create_study(study_name=f"fidelity-{seed}", sampler=sampler,
                                         pruner=pruner)
        self.space, self.trials = space, {}

    def new(self):
        trial = self.study.ask()
        suggest = {"float": trial.suggest_float, "int": trial.suggest_int}
        point = {p["name"]: suggest[p["type"]](p["name"], p["lower"], p["upper"],
                                               log=p.get("log", False))
                 if p["type"] in suggest else trial.suggest_categorical(p["name"], p["values"])
                 for p in self.space}
        self.trials[trial.number] = trial
        return trial.number, point

    def report(self, run, step, value):
        trial = self.trials[run]
        trial.report(value, step)
        return trial.should_prune()

    def finish(self, run, value):
        self.study.tell(self.trials.pop(run), value)

    def prune(self, run):
        import optuna

        self.study.tell(self.trials.pop(run), state=optuna.trial.TrialState.PRUNED)


# name -> (family, sampler, pruner): ours, or Optuna's pruners on Optuna's TPE
CONTENDERS = {
    "random": ("ours", "random", "none"),
    "random + asha": ("ours", "random", "asha"),
    "random + hyperband": ("ours", "random", "hyperband"),
    "tpe": ("ours", "optuna", "none"),
    "tpe + median": ("ours", "optuna", "median"),
    "tpe + asha": ("ours", "optuna", "asha"),
    "tpe + hyperband": ("ours", "optuna", "hyperband"),
    "bohb + hyperband": ("ours", "bohb", "hyperband"),
    "optuna TPE + MedianPruner": ("optuna", "tpe", "median"),
    "optuna TPE + SuccessiveHalvingPruner": ("optuna", "tpe", "sha"),
    "optuna TPE + HyperbandPruner": ("optuna", "tpe", "hyperband"),
}
BOHB_PAIR = ("bohb + hyperband", "optuna TPE + HyperbandPruner")   # ours, its peer
BEST = "the best configuration from the start"   # not a contender: a search that knew it
UNPRUNED = {"random + asha": "random", "random + hyperband": "random",
            "tpe + asha": "tpe", "tpe + hyperband": "tpe"}   # the target's pairs


class Fixed:
    """One configuration on every worker, never pruned (:data:`BEST`)."""

    def __init__(self, config):
        self.config, self.runs = config, 0

    def new(self):
        self.runs += 1
        return self.runs, dict(self.config)

    def report(self, run, step, value):
        return False

    def finish(self, run, value):
        pass

    def prune(self, run):
        pass


def contender(name, space, seed, epochs):
    """A fresh contender ``name`` for one run."""
    family, sampler, pruner = CONTENDERS[name]
    if family == "optuna":
        return OptunaPeer(pruner, space, seed, epochs)
    options = {"sampler": "tpe"} if sampler == "optuna" else {}
    return Ours(sampler, pruner, space, seed, epochs, options)


# --- the simulation ------------------------------------------------------------------------

def simulate(name, problem, curves, seed, budget, workers):
    """One run of contender ``name`` on ``problem`` (see the module docstring): its finished
    runs as ``[epochs trained, final value of the best so far, its noise-free value]``, its
    counts and its utilization."""
    epochs = curves.epochs
    search = Fixed(problem.best(epochs, curves, seed)) if name == BEST \
        else contender(name, problem.space, seed, epochs)
    durations = np.random.default_rng(seed).lognormal(0.0, 0.5, size=budget + workers)
    events, handed, trained, busy, runs = [], 0, 0, 0.0, 0
    best, best_true, trajectory, pruned = math.inf, None, [], 0
    started = time.perf_counter()
    live = {}

    def start(now, worker):
        nonlocal handed, runs
        if handed >= budget:
            return
        proposed = search.new()
        if proposed is None:   # the search is done: the worker stays idle
            return
        run, point = proposed
        seconds = lc_tables.load(problem.replays).epoch_seconds(point, epochs) \
            if problem.replays else np.full(epochs, durations[runs])
        live[run] = (point, curves(point, seed), seconds)
        runs += 1
        handed += 1
        heapq.heappush(events, (now + seconds[0], worker, run, 1))

    for worker in range(workers):
        start(0.0, worker)
    end = 0.0
    while events:
        now, worker, run, epoch = heapq.heappop(events)
        point, curve, seconds = live[run]
        trained, busy, end = trained + 1, busy + seconds[epoch - 1], now
        value = float(curve[epoch - 1])
        stop = bool(search.report(run, epoch, value))
        if epoch == epochs:
            search.finish(run, value)
            true = problem.truth(point, epochs, value)
            if value < best:
                best, best_true = value, true
            trajectory.append([trained, best, best_true])
        elif stop:
            search.prune(run)
            pruned += 1
        elif handed < budget:
            handed += 1
            heapq.heappush(events, (now + seconds[epoch], worker, run, epoch + 1))
            continue
        else:
            continue      # cut by the budget: the worker stays idle
        del live[run]
        start(now, worker)
    return {"trajectory": trajectory, "runs": runs, "pruned": pruned, "epochs": trained,
            "utilization": float(busy / (workers * end)) if end else None,
            "seconds": time.perf_counter() - started}


def fewest_epochs(problem, curves, seed, budget, workers):
    """The epochs trained when a search that proposed the best configuration from the start
    would have finished it (:data:`BEST`, on the seed's worker timeline)."""
    return simulate(BEST, problem, curves, seed, budget, workers)["trajectory"][0][0]


def regret_at(result, epochs, minimum):
    """log10 regret of the best finished run after ``epochs`` trained (``None``: none yet)."""
    reached = [row for row in result["trajectory"] if row[0] <= epochs]
    if not reached:
        return None
    return math.log10(max(reached[-1][2] - minimum, REGRET_FLOOR))


def baseline(name):
    """The unpruned contender of ``name``'s sampler: random search's for random search, else
    TPE's (our plugin's TPE, which proposes as Optuna's own with the same seed)."""
    return "random" if CONTENDERS[name][1] == "random" else "tpe"


def epochs_to_reach(result, unpruned):
    """The epochs ``result`` had trained when its chosen configuration was first at least as
    good (noise-free, or observed for a table) as ``unpruned``'s final one: ``None`` if never
    (the issue's measured fact counts so)."""
    if not unpruned["trajectory"]:
        return None
    final = unpruned["trajectory"][-1][2]
    return next((row[0] for row in result["trajectory"] if row[2] <= final), None)


# --- the part ------------------------------------------------------------------------------

def run(sizes, curves_directory=CURVES):
    """Every contender on every problem and seed (async with ``sizes.fidelity_workers``, and
    the :data:`SEQUENTIAL` problems also on 1 worker), then the real pool's utilization; the
    figures of the part. Each finished simulation is appended to ``runs.jsonl`` beside the
    curves, and one found there (same problem, contender, seed, budget, epochs and workers)
    is not run again, so a run that is stopped and started again does only what is missing."""
    results, budgets, fewest = {}, {}, {}
    done_path = Path(curves_directory) / "runs.jsonl"
    done = {}
    if done_path.exists():
        for line in done_path.read_text().splitlines():
            row = json.loads(line)
            done[tuple(row["key"])] = row["result"]

    def keep(key, result):
        done[key] = result
        done_path.parent.mkdir(parents=True, exist_ok=True)
        with open(done_path, "a") as out:
            out.write(json.dumps({"key": key, "result": result}) + "\n")

    settings = [(name, name, sizes.fidelity_workers) for name in sizes.fidelity_problems]
    settings += [(f"{name}{SEQUENTIAL}", name, 1) for name in sizes.fidelity_sequential]
    for label, problem_name, workers in settings:
        problem = PROBLEMS[problem_name]
        epochs = min(problem.epochs, sizes.fidelity_epochs or problem.epochs)
        budget = budgets[label] = sizes.fidelity_budget * epochs
        curves = Curves(problem, epochs, curves_directory)
        for name in sizes.fidelity_contenders:
            for seed in range(sizes.fidelity_seeds):
                key = (problem_name, name, seed, budget, epochs, workers)
                if key not in done:
                    keep(key, simulate(name, problem, curves, seed, budget, workers))
                    print(f"fidelity: {label} {name} seed {seed}: "
                          f"{done[key]['runs']} runs, {done[key]['pruned']} pruned, "
                          f"{done[key]['seconds']:.1f} s", flush=True)
                results.setdefault(label, {}).setdefault(name, {})[seed] = done[key]
        fewest[label] = _median({seed: fewest_epochs(problem, curves, seed, budget, workers)
                                 for seed in range(sizes.fidelity_seeds)})
    part = summarize(results, sizes, budgets)
    part["fewest_epochs"] = fewest
    key = ("pool", sizes.fidelity_workers, sizes.fidelity_pool_points, sizes.fidelity_epochs,
           len(fidelity_pool.STUDIES))
    if sizes.fidelity_pool_points and key not in done:
        print(f"fidelity: a real pool, {sizes.fidelity_workers} workers", flush=True)
        keep(key, fidelity_pool.run(sizes.fidelity_workers, sizes.fidelity_pool_points,
                                    min(EPOCHS, sizes.fidelity_epochs or EPOCHS)))
    part["pool"] = done.get(key, [])
    return part


def summarize(results, sizes, budgets):
    """The part's figures from every run's result."""
    problems, comparisons = {}, {}
    for problem_name, by_contender in results.items():
        problem = PROBLEMS[problem_name.removesuffix(SEQUENTIAL)]
        budget = budgets[problem_name]
        minimum = problem.minimum(budget // sizes.fidelity_budget)
        per_seed_min = {}
        for by_seed in by_contender.values():
            for seed, result in by_seed.items():
                found = [row[2] for row in result["trajectory"]]
                per_seed_min[seed] = min(found + [per_seed_min.get(seed, math.inf)])
        table = {}
        for name, by_seed in by_contender.items():
            def log_regret(epochs):
                return {s: regret_at(r, epochs, minimum if minimum is not None
                                     else per_seed_min[s]) for s, r in by_seed.items()}

            full, third = log_regret(budget), log_regret(budget // 3)
            base = by_contender.get(baseline(name))
            reach = None if base is None or base is by_seed else {
                s: epochs_to_reach(r, base[s]) for s, r in by_seed.items() if s in base}
            table[name] = {
                "log10_regret": _median(full), "log10_regret_third": _median(third),
                "by_seed": full, "by_seed_third": third,
                "epochs_to_unpruned": None if reach is None else _median(
                    {s: math.inf if e is None else e for s, e in reach.items()}),
                "reached_unpruned": None if reach is None else sum(
                    e is not None for e in reach.values()),
                "runs": _median({s: r["runs"] for s, r in by_seed.items()}),
                "pruned": _median({s: r["pruned"] for s, r in by_seed.items()}),
                "utilization": min(r["utilization"] for r in by_seed.values()),
                "seconds": sum(r["seconds"] for r in by_seed.values())}
        problems[problem_name] = table
        comparisons[problem_name] = _comparisons(table)
    rows = [{"problem": problem, "contender": name,
             **{key: row[key] for key in ("log10_regret", "log10_regret_third",
                                          "epochs_to_unpruned", "runs", "pruned",
                                          "utilization", "seconds")}}
            for problem, table in problems.items() for name, row in table.items()]
    return {"runs": rows, "problems": problems, "comparisons": comparisons,
            "seeds": sizes.fidelity_seeds,
            "budget_epochs": budgets, "budget_runs": sizes.fidelity_budget,
            "workers": sizes.fidelity_workers, "regret_floor": REGRET_FLOOR,
            "contenders": list(sizes.fidelity_contenders)}


def _median(by_seed):
    values = [v for v in by_seed.values() if v is not None]
    return float(np.median(values)) if values else None


def _paired(a, b):
    """:func:`benchmarks.quality.compare` of two ``{seed: log10 regret}``, a missing regret
    (nothing finished yet) counting as the worst."""
    seeds = set(a) | set(b)
    worst = max([v for v in list(a.values()) + list(b.values()) if v is not None], default=0)
    return compare({s: worst + 1 if a.get(s) is None else a[s] for s in seeds},
                   {s: worst + 1 if b.get(s) is None else b[s] for s in seeds})


def _comparisons(table):
    """The targets' paired comparisons on one problem."""
    found = {"third": {}, "ours_vs_optuna": None, "bohb": None}
    for pruned, unpruned in UNPRUNED.items():
        if pruned in table and unpruned in table:
            found["third"][pruned] = _paired(table[pruned]["by_seed_third"],
                                             table[unpruned]["by_seed"])
    ours = [n for n in table if CONTENDERS[n][0] == "ours" and CONTENDERS[n][2] != "none"]
    peers = [n for n in table if CONTENDERS[n][0] == "optuna"]
    if ours and peers:
        key = lambda n: math.inf if table[n]["log10_regret"] is None \
            else table[n]["log10_regret"]
        best, peer = min(ours, key=key), min(peers, key=key)
        found["ours_vs_optuna"] = dict(_paired(table[best]["by_seed"], table[peer]["by_seed"]),
                                       ours=best, peer=peer)
    ours, peer = BOHB_PAIR
    if ours in table and peer in table:     # issue 47: bohb must be at or above this pair
        found["bohb"] = dict(_paired(table[ours]["by_seed"], table[peer]["by_seed"]),
                             ours=ours, peer=peer)
    return found


def targets(part):
    """The issues' targets, each with its figure and whether it is met: the first two on
    the async problems, utilization on the real pool (:mod:`benchmarks.fidelity_pool`)."""
    comparisons = {p: c for p, c in part["comparisons"].items() if not p.endswith(SEQUENTIAL)}
    count = len(comparisons)
    third = [p for p, c in comparisons.items()
             if any(v["verdict"] != "worse" and v["median_difference"] is not None
                    and v["median_difference"] <= 0 for v in c["third"].values())]
    ours = [p for p, c in comparisons.items()
            if c["ours_vs_optuna"] and c["ours_vs_optuna"]["verdict"] != "worse"]
    pool = [row["steady_utilization"] for row in part.get("pool", [])]
    utilization = min(pool, default=None)
    paused = min((row["utilization"] for row in part.get("pool", []) if row.get("pause")),
                 default=None)
    need = math.ceil(0.8 * count)
    return [
        ("ASHA or Hyperband reaches the unpruned final regret with ≤ 1/3 of the epochs, on "
         f"≥ {need} of {count} problems", f"{len(third)} of {count} ({', '.join(third)})",
         len(third) >= need),
        (f"the best of ours at or below Optuna's best pruner, on ≥ {need} of {count} problems",
         f"{len(ours)} of {count} ({', '.join(ours)})", len(ours) >= need),
        ("utilization ≥ 0.9 with pruning on (ours, a real pool, the drain at the end left out)",
         "–" if utilization is None else f"{utilization:.3f}",
         utilization is not None and utilization >= 0.9),
        ("utilization ≥ 0.95 counting the drain, pause = true (ours, a real pool, issue 47)",
         "–" if paused is None else f"{paused:.3f}", paused is not None and paused >= 0.95),
        own_search_target(part["problems"]),
        bohb_target(part["comparisons"]),
    ]


def bohb_target(comparisons):
    """Issue 47, point 3: ``bohb`` with ``hyperband`` at or above Optuna's TPE with its
    ``HyperbandPruner`` (not worse, paired over seeds) on every problem both ran, the
    sequential setting's included."""
    paired = {p: c["bohb"] for p, c in comparisons.items() if c.get("bohb")}
    worse = [p for p, c in paired.items() if c["verdict"] == "worse"]
    behind = [p for p, c in paired.items() if c["verdict"] != "worse"
              and c["median_difference"] is not None and c["median_difference"] > 0]
    figure = f"{len(paired) - len(worse)} of {len(paired)}" + \
        (f"; worse on {', '.join(worse)}" if worse else "") + \
        (f"; behind, not significantly, on {', '.join(behind)}" if behind else "")
    return (f"{BOHB_PAIR[0]} at or above {BOHB_PAIR[1]} on every problem (issue 47)", figure,
            bool(paired) and not worse)


def own_search_target(problems):
    """Issue 47, point 1: on every async problem, a search of our own (not Optuna's TPE in our
    plugin, not random search) with a pruner reaches unpruned TPE's final regret in at most
    half the epochs of Optuna's fastest pair (and does reach it), its final regret not worse
    (paired) than Optuna's best pair's."""
    met = []
    tables = {p: t for p, t in problems.items() if not p.endswith(SEQUENTIAL)}
    for problem, table in tables.items():
        own = [n for n in table if CONTENDERS[n][0] == "ours"
               and CONTENDERS[n][1] not in ("optuna", "random") and CONTENDERS[n][2] != "none"]
        peers = [n for n in table if CONTENDERS[n][0] == "optuna"]
        if not own or not peers:
            continue
        reach = lambda n: table[n]["epochs_to_unpruned"] or math.inf
        final = lambda n: math.inf if table[n]["log10_regret"] is None \
            else table[n]["log10_regret"]
        fastest, best = min(peers, key=reach), min(peers, key=final)
        if any(reach(n) < math.inf and reach(n) <= reach(fastest) / 2
               and _paired(table[n]["by_seed"], table[best]["by_seed"])["verdict"] != "worse"
               for n in own):
            met.append(problem)
    return ("a search of ours (not TPE, not random) with a pruner reaches unpruned TPE's final "
            "regret in ≤ 1/2 the epochs of Optuna's fastest pair, its final regret not worse "
            f"than Optuna's best pair's, on every problem (issue 47)",
            f"{len(met)} of {len(tables)}" + (f" ({', '.join(met)})" if met else ""),
            bool(tables) and len(met) == len(tables))


def markdown(part):
    """The part's tables: median log10 regret by problem and contender, the targets'
    comparisons, the epochs to reach the unpruned final regret, and the real pool."""
    names = part["contenders"]
    problems = [p for p in part["problems"] if not p.endswith(SEQUENTIAL)]
    header = ("contender", *problems)

    def cell(row, key, form="{:.2f}"):
        return "–" if row is None or row.get(key) is None else form.format(row[key])

    rows = [(name, *(f"{cell(part['problems'][p].get(name), 'log10_regret')} "
                     f"({cell(part['problems'][p].get(name), 'log10_regret_third')})"
                     for p in problems)) for name in names]
    lines = [f"### 11. Learning curves and pruning (`fidelity.py`)\n\n"
             f"Median log10 regret over {part['seeds']} seeds at a budget of "
             f"{part['budget_runs']} whole runs' epochs ("
             + ", ".join(f"{p} {e}" for p, e in part["budget_epochs"].items()
                         if p in problems)
             + f"), {part['workers']} workers, async; in brackets at a third of the "
             f"budget:\n", _table(header, rows), ""]
    comparison_rows = []
    for problem, c in part["comparisons"].items():
        for pruned, v in c["third"].items():
            comparison_rows.append((problem, f"{pruned} at 1/3 vs {UNPRUNED[pruned]} at all",
                                    _p(v), v["verdict"]))
        for v in (c["ours_vs_optuna"], c.get("bohb")):
            if v:
                comparison_rows.append((problem, f"{v['ours']} vs {v['peer']}", _p(v),
                                        v["verdict"]))
    lines += ["Paired one-sided Wilcoxon tests (first named against second):\n",
              _table(("problem", "comparison", "median difference; p better / worse",
                      "verdict"), comparison_rows), ""]
    every = list(part["problems"])
    reach = [(name, *(cell(part["problems"][p].get(name), "epochs_to_unpruned", "{:.0f}")
                      for p in every)) for name in names if CONTENDERS[name][2] != "none"]
    best = ""
    if part.get("fewest_epochs"):   # records before 2026-12-07 have no such figure
        reach.append((f"*{BEST}*", *(cell(part["fewest_epochs"], p, "{:.0f}") for p in every)))
        reach.append(("*half of Optuna's fastest pair (issue 47)*",
                      *(_half_of_fastest(part["problems"][p]) for p in every)))
        best = (f". *{BEST}*: the epochs trained when a search that proposed the best "
                "configuration on every worker from the start would have finished it (the "
                "seed's worker timeline; on a trained table, the best any contender found)")
    lines += [f"Median epochs (of {part['budget_runs']} whole runs') until the chosen "
              "configuration is as good as the same sampler's unpruned final one (random "
              "search's for random search, TPE's for the others), paired by seed, never "
              "counting as infinite; `sequential`: 1 worker, the issue's measured fact's "
              f"setting{best}:\n", _table(("contender", *every), reach)]
    if part.get("pool"):
        pool = [(f"{r['algorithm']} + {r['pruner']}{', pause' * bool(r.get('pause'))}",
                 r["workers"], r["points"], r["pruned"], r.get("thaws", 0),
                 f"{r['utilization']:.3f}", f"{r['steady_utilization']:.3f}")
                for r in part["pool"]]
        lines += ["", f"A real pool (`fidelity_pool.py`: the master on `mpiexec`, a `py` "
                  f"model reporting pow3's curve, epochs of a median "
                  f"{part['pool'][0]['epoch_s']} s):\n",
                  _table(("study", "workers", "points", "pruned or paused", "thaws",
                          "utilization", "without the drain"), pool)]
    return "\n".join(lines)


def _half_of_fastest(table):
    """Half the epochs of Optuna's fastest pair to reach unpruned TPE's final regret (issue
    47's target), as a cell."""
    reach = [row["epochs_to_unpruned"] for name, row in table.items()
             if CONTENDERS[name][0] == "optuna" and row["epochs_to_unpruned"] is not None]
    fastest = min(reach, default=math.inf)
    return "–" if not reach else "never" if fastest == math.inf else f"{fastest / 2:.0f}"


def _p(v):
    median = "–" if v["median_difference"] is None else f"{v['median_difference']:+.2f}"
    return f"{median}; {v['p_better']:.3f} / {v['p_worse']:.3f}"


def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in rows]
    return "\n".join(lines)
