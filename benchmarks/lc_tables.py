"""Learning-curve tables (issue 45, point 3), as LCBench is for the field: the real training
curves of real networks on real data, made once by this script and shipped in ``tables/``.

::

    python -m benchmarks.lc_tables make      # train what is missing (resumable), then compress
    python -m benchmarks.lc_tables show      # each table's size and best final loss

Each table is one of scikit-learn's bundled datasets (:data:`DATASETS`: wine, iris and breast
cancer, classified; diabetes, regressed; digits would take hours of the shared reference
machine) and the same :data:`CONFIGURATIONS` configurations of a scikit-learn MLP
(``MLPClassifier`` or ``MLPRegressor``, Adam), sampled once from :data:`SPACE` with
:data:`SEED`, as LCBench samples its 2,000. A configuration is trained for
:data:`EPOCHS` epochs (one ``partial_fit`` pass over the training split an epoch, its weights
seeded by its index) on a stratified 75/25 split (``random_state = SEED``) of the standardized
data (the diabetes target standardized too); after each epoch the table keeps the validation
loss (log-loss for the classifiers, mean squared error for diabetes) and the epoch's wall time
(the ``partial_fit`` call, on one thread). An epoch whose loss is not finite (a diverged
network) gets the loss of the constant prediction from the training split (class frequencies,
or the mean), the value of a model that learned nothing; the table counts them.

A table is ``tables/<name>.json.gz``: its settings (this script's, with the versions), its
space (GA JSON), its configurations, and per configuration the losses and the seconds per
epoch (5 significant digits).

A table is replayed by the **nearest configuration** (:meth:`Table.nearest`): a point is given
the curve of the table's configuration nearest it (Euclidean, in the unit cube of the space, log
parameters on a log scale), so that every optimizer searches the space it would search for the
network itself. LCBench and HPOBench's tabular benchmarks instead offer their sampled
configurations only. Its epochs cost the table's seconds on a simulated clock: the peers
part's ``lc-*`` tasks (:func:`objective`, :func:`seconds`) and the fidelity part's ``lc-*``
problems.
"""

import argparse
import functools
import gzip
import json
import math
import os
import platform
import sys
import time
import warnings
from functools import cached_property
from pathlib import Path

import numpy as np

TABLES = Path(__file__).resolve().parent / "tables"
WORK = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "emews-benchmarks" / \
    "lc-tables"
SEED = 0
CONFIGURATIONS = 1000
EPOCHS = 27
DATASETS = {"wine": "load_wine", "iris": "load_iris", "breast": "load_breast_cancer",
            "diabetes": "load_diabetes"}
REGRESSION = ("diabetes",)
SPACE = [
    {"name": "layers", "type": "int", "lower": 1, "upper": 2},
    {"name": "units", "type": "int", "lower": 16, "upper": 128, "log": True},
    {"name": "batch_size", "type": "int", "lower": 32, "upper": 512, "log": True},
    {"name": "learning_rate_init", "type": "float", "lower": 1e-4, "upper": 1e-1, "log": True},
    {"name": "alpha", "type": "float", "lower": 1e-6, "upper": 1e-1, "log": True},
]


# --- making a table ------------------------------------------------------------------------

def configurations(count=CONFIGURATIONS, seed=SEED):
    """``count`` configurations drawn uniformly from :data:`SPACE` (log parameters on a log
    scale), the same for every table."""
    rng = np.random.default_rng(seed)
    drawn = []
    for _ in range(count):
        config = {}
        for p in SPACE:
            low, high = p["lower"], p["upper"]
            if p.get("log"):
                value = math.exp(rng.uniform(math.log(low), math.log(high + (p["type"] == "int"))))
            else:
                value = rng.uniform(low, high + (p["type"] == "int"))
            config[p["name"]] = min(int(value), high) if p["type"] == "int" else float(value)
        drawn.append(config)
    return drawn


@functools.cache
def split(dataset, seed=SEED):
    """``(x, x_val, y, y_val)``: the dataset standardized on its training 75% (the diabetes
    target too), the split stratified for the classifiers."""
    import sklearn.datasets
    from sklearn.model_selection import train_test_split

    x, y = getattr(sklearn.datasets, DATASETS[dataset])(return_X_y=True)
    regression = dataset in REGRESSION
    x, x_val, y, y_val = train_test_split(x, y.astype(float) if regression else y,
                                          test_size=0.25, random_state=seed,
                                          stratify=None if regression else y)
    mean, sd = x.mean(axis=0), x.std(axis=0)
    sd[sd == 0] = 1.0
    x, x_val = (x - mean) / sd, (x_val - mean) / sd
    if regression:
        y_mean, y_sd = y.mean(), y.std()
        y, y_val = (y - y_mean) / y_sd, (y_val - y_mean) / y_sd
    return x, x_val, y, y_val


def curve(dataset, config, index, epochs=EPOCHS):
    """The validation loss and the wall time of each of ``epochs`` epochs of ``config`` (its
    weights seeded by ``index``) on ``dataset``, and how many epochs diverged."""
    from sklearn.neural_network import MLPClassifier, MLPRegressor

    x, x_val, y, y_val = split(dataset)
    regression = dataset in REGRESSION
    settings = dict(hidden_layer_sizes=(config["units"],) * config["layers"],
                    batch_size=config["batch_size"], alpha=config["alpha"],
                    learning_rate_init=config["learning_rate_init"], random_state=index)
    model = (MLPRegressor if regression else MLPClassifier)(**settings)
    classes = np.unique(y)
    if regression:
        constant = float(np.mean((y_val - y.mean()) ** 2))
    else:
        prior = np.array([np.mean(y == c) for c in classes])
        constant = _log_loss(y_val, np.tile(prior, (len(y_val), 1)), classes)
    losses, seconds, diverged = [], [], 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(epochs):
            started = time.perf_counter()
            try:
                model.partial_fit(x, y, **({} if regression else {"classes": classes}))
                failed = False
            except ValueError as error:     # diverged: "non-finite parameter weights"
                if "non-finite" not in str(error):
                    raise
                failed = True
            seconds.append(time.perf_counter() - started)
            if not failed:
                loss = (np.mean((y_val - model.predict(x_val)) ** 2) if regression
                        else _log_loss(y_val, model.predict_proba(x_val), classes))
            if failed or not np.isfinite(loss):
                loss, diverged = constant, diverged + 1
            losses.append(float(loss))
    return losses, seconds, diverged


def _log_loss(y, probabilities, classes):
    """scikit-learn's ``log_loss`` (probabilities clipped to the float epsilon), without its
    checks, which cost more than the epoch of a small network."""
    eps = np.finfo(probabilities.dtype).eps
    picked = probabilities[np.arange(len(y)), np.searchsorted(classes, y)]
    return float(-np.mean(np.log(np.clip(picked, eps, 1 - eps))))


def settings():
    """What a table is made with (kept in the table)."""
    import sklearn

    return {"seed": SEED, "configurations": CONFIGURATIONS, "epochs": EPOCHS,
            "split": "75/25, stratified for classifiers, random_state = seed; standardized",
            "model": "scikit-learn MLPClassifier / MLPRegressor, Adam, partial_fit per epoch, "
                     "random_state = the configuration's index",
            "loss": "validation log-loss (classifiers), mean squared error of the "
                    "standardized target (regressors)",
            "seconds": "wall time of each epoch's partial_fit, one thread",
            "versions": {"python": platform.python_version(), "numpy": np.__version__,
                         "scikit-learn": sklearn.__version__},
            "machine": platform.processor() or platform.machine()}


def make(names=tuple(DATASETS), work=WORK, out=TABLES):
    """Train every configuration of each table not yet made, one JSON line a configuration in
    ``work`` (so an interrupted make goes on where it stopped), then write the table."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    drawn = configurations()
    for name in names:
        target = Path(out) / f"{name}.json.gz"
        if target.exists():
            continue
        partial = Path(work) / f"{name}.jsonl"
        partial.parent.mkdir(parents=True, exist_ok=True)
        rows = _finished(partial)
        with open(partial, "w") as keep:
            keep.writelines(json.dumps(row) + "\n" for row in rows)
            for index in range(len(rows), len(drawn)):
                losses, seconds, diverged = curve(name, drawn[index], index)
                row = {"loss": losses, "seconds": seconds, "diverged": diverged}
                keep.write(json.dumps(row) + "\n")
                keep.flush()
                rows.append(row)
                if index % 100 == 99:
                    print(f"[lc_tables] {name}: {index + 1} of {len(drawn)}", flush=True)
        write(target, name, drawn, rows)
        print(f"[lc_tables] wrote {target} ({target.stat().st_size // 1024} KiB)", flush=True)


def _finished(partial):
    """The rows of a partial table, without a last line cut short by an interruption."""
    rows = []
    for line in partial.read_text().splitlines() if partial.exists() else []:
        try:
            rows.append(json.loads(line))
        except ValueError:
            break
    return rows


def _round(values):
    return [float(f"{v:.5g}") for v in values]


def write(path, name, drawn, rows):
    """The table ``name`` as compressed JSON at ``path``."""
    table = {"name": name, "task": "regression" if name in REGRESSION else "classification",
             "settings": settings(), "space": SPACE,
             "configurations": [{k: (float(f"{v:.6g}") if isinstance(v, float) else v)
                                 for k, v in c.items()} for c in drawn],
             "loss": [_round(r["loss"]) for r in rows],
             "seconds": [_round(r["seconds"]) for r in rows],
             "diverged": sum(r["diverged"] > 0 for r in rows)}
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", compresslevel=9) as out:
        json.dump(table, out, separators=(",", ":"))


# --- replaying a table ---------------------------------------------------------------------

class Table:
    """A learning-curve table as :func:`load` reads it: ``configurations`` (dicts), ``loss``
    and ``seconds`` (arrays of configurations x epochs), its ``space`` (GA JSON), ``settings``
    and how many configurations ``diverged``."""

    def __init__(self, data):
        self.name, self.space, self.settings = data["name"], data["space"], data["settings"]
        self.configurations = data["configurations"]
        self.loss = np.array(data["loss"], dtype=float)
        self.seconds = np.array(data["seconds"], dtype=float)
        self.diverged = data["diverged"]

    @property
    def epochs(self):
        """The epochs of every curve."""
        return self.loss.shape[1]

    @cached_property
    def _params(self):
        from emews._space import Space

        return Space.from_ga_json(self.space).params

    def _unit(self, config):
        return np.array([p.to_unit(config[p.name]) for p in self._params])

    @cached_property
    def _units(self):
        return np.array([self._unit(c) for c in self.configurations])

    def nearest(self, config):
        """The index of the table's configuration nearest ``config`` (Euclidean in the unit
        cube of the space, log parameters on a log scale; the first of equals)."""
        return int(np.argmin(((self._units - self._unit(config)) ** 2).sum(axis=1)))

    def curve(self, config, epochs=None):
        """The validation losses of the first ``epochs`` (all) epochs of ``config``'s curve."""
        return self.loss[self.nearest(config), :epochs]

    def epoch_seconds(self, config, epochs=None):
        """The wall time of each of the first ``epochs`` (all) epochs of ``config``."""
        return self.seconds[self.nearest(config), :epochs]

    def minimum(self, epochs=None):
        """The smallest loss any configuration has after ``epochs`` (all) epochs."""
        return float(self.loss[:, (epochs or self.epochs) - 1].min())


@functools.cache
def load(name, directory=TABLES):
    """The table ``name`` (one of :data:`DATASETS`) from ``directory``."""
    path = Path(directory) / f"{name}.json.gz"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no learning-curve table {name!r} (python -m "
                                f"benchmarks.lc_tables make --tables {name})")
    with gzip.open(path, "rt") as table:
        return Table(json.load(table))


# --- the peers part's tasks on the tables (as benchmarks.bayesmark_tasks' on Bayesmark's) ----

TASKS = tuple(f"lc-{name}" for name in DATASETS)


def group(task):
    """The task group of a table's task: ``tables``."""
    return "tables"


def space(task):
    """The space of the task ``lc-NAME`` on table NAME (an :class:`emews._space.Space`, with
    the constant ``task``)."""
    from emews._space import Constant, Space

    table = load(task.removeprefix("lc-"))
    return Space((*Space.from_ga_json(table.space).params, Constant("task", task)))


def fidelity(task):
    """The fidelity of the task ``lc-NAME`` for a multi-fidelity peer: ``(1, the table's
    epochs)``, in epochs."""
    return 1, load(task.removeprefix("lc-")).epochs


def objective(point):
    """A study's objective: the validation loss of the point's nearest configuration in the
    table of its ``task`` after its ``epochs`` (a multi-fidelity peer's; else all)."""
    return float(load(point["task"].removeprefix("lc-")).curve(point, point.get("epochs"))[-1])


def seconds(point):
    """What evaluating the point takes on a simulated clock: its configuration's epochs (up to
    its ``epochs``, when it has them, from its ``resume``, when it continues a training)."""
    return float(load(point["task"].removeprefix("lc-")).epoch_seconds(
        point, point.get("epochs"))[point.get("resume", 0):].sum())


# --- the command line ----------------------------------------------------------------------

def main(argv=None):
    """``make`` the missing tables, or ``show`` the tables there are."""
    top = argparse.ArgumentParser(prog="python -m benchmarks.lc_tables",
                                  description=__doc__.splitlines()[0])
    top.add_argument("command", choices=("make", "show"))
    top.add_argument("--tables", default=",".join(DATASETS),
                     help=f"comma-separated, from {', '.join(DATASETS)} (default: all)")
    args = top.parse_args(argv)
    names = [n.strip() for n in args.tables.split(",") if n.strip()]
    unknown = [n for n in names if n not in DATASETS]
    if unknown:
        top.error(f"--tables: {unknown[0]!r} is not one of {', '.join(DATASETS)}")
    if args.command == "make":
        make(names)
    for name in names:
        path = TABLES / f"{name}.json.gz"
        if path.exists():
            table = load(name)
            print(f"{name}: {len(table.configurations)} configurations x {table.epochs} "
                  f"epochs, {path.stat().st_size // 1024} KiB, best final loss "
                  f"{table.loss[:, -1].min():.4g}, {table.diverged} diverged")
        else:
            print(f"{name}: not made (python -m benchmarks.lc_tables make)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
