"""Part 13, population-based training (issue 48): our ``pbt`` and its ``pb2`` against random
search and ASHA at equal compute, on two problems (:data:`PROBLEMS`):

* ``toy``, the toy problem of the PBT paper (:mod:`emews.models.pbt_toy`): maximize
  ``Q(theta) = 1.2 - sum(theta_i**2)`` by gradient steps on ``Q_hat(theta | h) = 1.2 -
  sum(h_i * theta_i**2)``, ``h`` in ``[0, 1]^2``; the score is the loss ``1.2 - Q(theta)`` at
  the end (smaller is better, 0 the optimum); ``pbt_steps`` steps;
* ``digits``, a real training whose schedule matters: a network (64 inputs, 32 tanh units,
  10 softmax outputs; numpy, the same initial weights for every run) trained on 75 % of
  scikit-learn's digits by plain minibatch SGD (32 images a batch), an epoch a step, its
  learning rate ``lr`` (log scale, 0.001 to 1) the one hyperparameter; the score is the
  validation log-loss after ``pbt_digits_epochs`` epochs (a large rate learns fast and then
  stalls, a small one is slow: a schedule beats any one rate).

Compute is counted in steps: every contender trains ``population * steps`` of them.

* ``pbt``, ``pb2``: the product's class (``algorithm = "pbt"``, ``explore`` ``perturb`` or
  ``pb2``), ``population`` members of ``steps`` steps each, ``interval`` steps a segment,
  asked and told in rounds of the whole population as a batch study runs it; a segment
  starts from a copy of the checkpoint (``theta``) its record names, as the handoff gives it;
  the score is the best member's loss at ``steps``;
* ``random``: ``population`` runs of ``steps`` steps at random ``h``, the best final loss;
* ``random + asha``: random ``h``, our ASHA pruner (``min_resource`` 1, ``reduction_factor`` 3,
  ``max_resource`` ``steps``) judging every step's report, runs started until the steps are
  spent; the best finished run's loss.
* ``ray pbt``, ``ray pb2`` (those in ``pbt_ray``): Ray Tune's ``PopulationBasedTraining``
  and ``PB2`` through its own ``Tuner``, in a virtualenv of its own
  (:mod:`benchmarks.pbt_ray`): the same population, steps, perturbation interval and
  quantile (:data:`QUANTILE`), Ray Tune's defaults for the rest (asynchronous); the best final
  loss of the trials that reached the steps. Where Ray Tune cannot be installed (or, with
  ``install`` off, is not), its contenders are reported as missing.

Each seed runs every contender on each problem; the figures are the median log10 loss by
problem and contender and the paired one-sided Wilcoxon comparisons of ``pbt`` with each other
contender (:func:`benchmarks.quality.compare`). No pool runs there: the algorithms' time is
not counted.

The pool's utilization (:func:`pool_utilization`) is measured apart: ``emews.run`` of an async
``pbt`` study of the toy under ``mpiexec -n WORKERS+1``, ``pbt_pool_workers`` workers and
:data:`MEMBERS_PER_WORKER` times as many members (queued for the workers, the member furthest
behind first), ``pbt_steps`` steps in segments of ``pbt_interval``, each segment a ``py`` run of
:func:`sleeping_toy` (the utilization part's sleep, then the toy's steps from the checkpoint
the handoff gave it); the utilization counted from the store as the utilization part counts it
(:func:`benchmarks.common.utilization`).
"""

import argparse
import json
import math
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from functools import lru_cache
from typing import Callable

import numpy as np

from . import pbt_ray, utilization_tasks
from .common import mpiexec_python, summary, utilization
from .fidelity import Ours
from .peers_runs import VENV_DIRECTORY
from .quality import compare

CONTENDERS = ("pbt", "pb2", "random", "random + asha")   # ours, in this process
FLOOR = 1e-12
QUANTILE = 0.2   # every population's: ours' default, Supervisor's
# the pool's members per worker: with as many members as workers, the members that reached
# max_steps leave their workers idle until the slowest one finishes (71 % utilization at 8
# workers); twice as many keep the workers busy to the end (94 to 97 %, the rest the drain of
# the last segments' lognormal times); 3 and 4 times measured lower (92 %, 87 %: one run each)
MEMBERS_PER_WORKER = 2


@dataclass(frozen=True)
class Problem:
    """A problem of this part: its space (GA JSON), a run's first state (``start()``), one step
    of training (``step(state, params)``: a new state, the old one left as it was, a
    checkpoint that others may copy) and the score of a state (``loss(state)``)."""

    space: list
    start: Callable
    step: Callable
    loss: Callable


def _toy():
    from emews.models import pbt_toy

    return Problem(pbt_toy.SPACE, lambda: list(pbt_toy.START), pbt_toy.step, pbt_toy.loss)


DIGITS_SPACE = [{"name": "lr", "type": "float", "lower": 0.001, "upper": 1.0, "log": True}]
DIGITS_HIDDEN, DIGITS_BATCH = 32, 32


@lru_cache(maxsize=1)
def _digits_data():
    """scikit-learn's digits, scaled to [0, 1], split 75/25 (seed 0): train and validation."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    return tuple(train_test_split(x / 16.0, y, test_size=0.25, random_state=0, stratify=y))


def _digits_start():
    """``(epoch, w1, b1, w2, b2)``: epoch 0 and the weights every run starts from (seed 0)."""
    rng = np.random.default_rng(0)
    return (0, rng.normal(0.0, 1.0 / 8.0, (64, DIGITS_HIDDEN)), np.zeros(DIGITS_HIDDEN),
            rng.normal(0.0, 1.0 / math.sqrt(DIGITS_HIDDEN), (DIGITS_HIDDEN, 10)), np.zeros(10))


def _digits_forward(state, x):
    _, w1, b1, w2, b2 = state
    hidden = np.tanh(x @ w1 + b1)
    logits = hidden @ w2 + b2
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    return hidden, p / p.sum(axis=1, keepdims=True)


def _digits_step(state, params):
    """One epoch of minibatch SGD at learning rate ``params["lr"]`` (the batches' order drawn
    from the epoch's number: the same for every run)."""
    x, _, y, _ = _digits_data()
    epoch, w1, b1, w2, b2 = state
    lr = float(params["lr"])
    order = np.random.default_rng(epoch).permutation(len(y))
    for first in range(0, len(y), DIGITS_BATCH):
        rows = order[first:first + DIGITS_BATCH]
        hidden, p = _digits_forward((epoch, w1, b1, w2, b2), x[rows])
        p[np.arange(len(rows)), y[rows]] -= 1.0
        p /= len(rows)
        back = (p @ w2.T) * (1.0 - hidden ** 2)
        w1, b1 = w1 - lr * x[rows].T @ back, b1 - lr * back.sum(axis=0)
        w2, b2 = w2 - lr * hidden.T @ p, b2 - lr * p.sum(axis=0)
    return (epoch + 1, w1, b1, w2, b2)


def _digits_loss(state):
    """The validation log-loss of ``state``."""
    _, x_val, _, y_val = _digits_data()
    _, p = _digits_forward(state, x_val)
    return float(-np.log(np.maximum(p[np.arange(len(y_val)), y_val], 1e-15)).mean())


def _digits():
    return Problem(DIGITS_SPACE, _digits_start, _digits_step, _digits_loss)


PROBLEMS = {"toy": _toy, "digits": _digits}


def population_run(problem, explore, seed, population, steps, interval):
    """The best member's final loss of a ``pbt`` search with ``explore`` on ``problem``."""
    from emews.core.algorithm import load
    from emews.core.segments import split
    from emews.space import Space

    search = load("pbt")(Space.from_ga_json(problem.space), seed=seed,
                         population_size=population, perturbation_interval=interval,
                         max_steps=steps, explore=explore, quantile=QUANTILE)
    checkpoints, final = {}, math.inf
    while not search.done():
        points, values = search.ask(population), []
        for point in points:
            params, record = split(point)
            start = record["donor"] or record["parent"]
            state = checkpoints[start] if start else problem.start()
            for _ in range(record["start"], record["until"]):
                state = problem.step(state, params)
            checkpoints[record["name"]] = state
            values.append(problem.loss(state))
            if record["until"] == steps:
                final = min(final, values[-1])
        search.tell(points, values)
    return final


def random_run(problem, pruner, seed, population, steps):
    """The best finished run's loss of random search on ``problem``, with ``pruner``
    (``none``, ``asha``), on ``population * steps`` steps."""
    search = Ours("random", pruner, problem.space, seed, steps)
    budget, best = population * steps, math.inf
    while budget > 0:
        run, params = search.new()
        state = problem.start()
        for step in range(1, steps + 1):
            if budget == 0:
                return best
            state, budget = problem.step(state, params), budget - 1
            value = problem.loss(state)
            stop = search.report(run, step, value)
            if step == steps:
                search.finish(run, value)
                best = min(best, value)
            elif stop:
                search.prune(run)
                break
    return best


def score(problem, name, seed, population, steps, interval):
    """Contender ``name``'s final loss on ``problem`` and one seed."""
    if name in ("pbt", "pb2"):
        return population_run(problem, "perturb" if name == "pbt" else "pb2", seed, population,
                              steps, interval)
    return random_run(problem, "asha" if name.endswith("asha") else "none", seed, population,
                      steps)


def sleeping_toy(params):
    """A segment of the toy at a pool's pace (a ``py`` model): sleep the utilization part's
    lognormal time (:func:`benchmarks.utilization_tasks.duration`), drawn for the segment's run
    (a member's speed does not depend on its hyperparameters), then train the toy's steps from
    the segment's checkpoint (:func:`emews.models.pbt_toy.train`)."""
    from emews.models import pbt_toy
    from emews.plugin import current_run

    time.sleep(utilization_tasks.duration({"run": current_run().run_id.split("-")[0]}))
    return pbt_toy.train(params)


def pool_utilization(sizes):
    """An async ``pbt`` study on a real mpiexec pool of ``sizes.pbt_pool_workers`` workers
    (see the module docstring): its figures."""
    with tempfile.TemporaryDirectory(prefix="emews-bench-") as tmp:
        out = Path(tmp) / "figures.json"
        mpiexec_python(sizes.pbt_pool_workers + 1, [
            "-m", __name__, str(out), "--dir", tmp, "--steps", str(sizes.pbt_steps),
            "--interval", str(sizes.pbt_interval)])
        return json.loads(out.read_text())


def _pool_study(directory, steps, interval):
    """Runs under mpiexec: the study, then (rank 0) its figures from the store."""
    from mpi4py import MPI

    import emews
    from emews.models import pbt_toy
    from emews.plugin import SEGMENT
    from emews.store import SQLiteStore

    workers = MPI.COMM_WORLD.Get_size() - 1
    population = MEMBERS_PER_WORKER * workers
    space = Path(directory) / "space.json"
    space.write_text(json.dumps(pbt_toy.SPACE))
    result = emews.run({
        "system": {"progress_interval": 3600.0},
        "study": {"algorithm": "pbt", "space": str(space), "mode": "async", "seed": 0,
                  "budget": 4 * population * steps, "impl": "py",
                  "objective": "benchmarks.pbt:sleeping_toy", "data_dir": str(directory),
                  "name": "pbt-pool"},
        "algorithm": {"population_size": population, "perturbation_interval": interval,
                      "max_steps": steps, "quantile": QUANTILE}})
    if result is None:   # a worker rank
        return None
    store = SQLiteStore(result.expdir / "results.db")
    rows = store.rows("done", "failed")
    store.close()
    members = {}
    for r in rows:
        members.setdefault(r["params"][SEGMENT]["member"], []).append(r)
    waits = [b["started"] - a["finished"] for segments in members.values()
             for a, b in zip(segments, segments[1:])]
    first_done = min(segments[-1]["finished"] for segments in members.values())
    training = utilization([(r["queued"], min(r["started"], first_done),
                             min(r["finished"], first_done)) for r in rows], workers)
    return {"workers": workers, "population": population, "segments": len(rows),
            "member_wait_s": float(np.sum(waits)), **summary(np.asarray(waits), "wait_s"),
            "finished_from_s": float(first_done - min(r["queued"] for r in rows)),
            "every_member_training_utilization": training["steady_utilization"],
            "failed": sum(r["status"] != "done" for r in rows),
            "exploits": sum(r["params"][SEGMENT]["donor"] is not None for r in rows),
            "stop_reason": result.stop_reason,
            "duration": f"lognormal, median {utilization_tasks.MEDIAN_S} s, sigma "
                        f"{utilization_tasks.SIGMA}",
            **utilization([(r["queued"], r["started"], r["finished"]) for r in rows], workers)}


def main(argv=None):
    """Run the pool's study (under mpiexec); write its figures."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("out")
    parser.add_argument("--dir", default=".")
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--interval", type=int, required=True)
    args = parser.parse_args(argv)
    figures = _pool_study(args.dir, args.steps, args.interval)
    if figures is not None:   # rank 0
        Path(args.out).write_text(json.dumps(figures))


def run(sizes, install=True, venv_directory=VENV_DIRECTORY):
    """Every contender on every problem and seed; the part's figures. Ray Tune's virtualenv is
    installed first when ``install`` (else it must be there already); where it cannot be, its
    contenders are reported as missing."""
    steps = {"toy": sizes.pbt_steps, "digits": sizes.pbt_digits_epochs}
    why = pbt_ray.unavailable(venv_directory, install)
    missing = {name: why for name in sizes.pbt_ray} if why else {}
    contenders = [*CONTENDERS, *(name for name in sizes.pbt_ray if name not in missing)]
    seeds = range(sizes.pbt_seeds)
    rows, comparisons = [], {}
    for problem_name in sizes.pbt_problems:
        problem = PROBLEMS[problem_name]()
        shape = (sizes.pbt_population, steps[problem_name], sizes.pbt_interval)
        losses = {name: {seed: score(problem, name, seed, *shape) for seed in seeds}
                  for name in CONTENDERS}
        losses.update((name, pbt_ray.scores(problem_name, name, seeds, *shape, QUANTILE,
                                            venv_directory))
                      for name in contenders if name in pbt_ray.SCHEDULERS)
        by_seed = {name: {seed: math.log10(max(loss, FLOOR)) for seed, loss in found.items()}
                   for name, found in losses.items()}
        rows += [{"problem": problem_name, "contender": name,
                  "log10_loss": float(np.median(list(values.values()))),
                  "q25": float(np.percentile(list(values.values()), 25)),
                  "q75": float(np.percentile(list(values.values()), 75))}
                 for name, values in by_seed.items()]
        comparisons[problem_name] = {name: compare(by_seed["pbt"], by_seed[name])
                                     for name in contenders if name != "pbt"}
    return {"runs": rows, "seeds": sizes.pbt_seeds, "population": sizes.pbt_population,
            "steps": {name: steps[name] for name in sizes.pbt_problems},
            "interval": sizes.pbt_interval, "quantile": QUANTILE,
            "problems": list(sizes.pbt_problems), "contenders": contenders,
            "missing": missing, "versions": {"Ray Tune": pbt_ray.RAY["Ray Tune"][1][:3]},
            "comparisons": comparisons,
            "pool": pool_utilization(sizes) if sizes.pbt_pool_workers else None}


def targets(part):
    """The issue's target: our ``pbt`` at or above Ray Tune's PBT in final loss, paired over
    the seeds (at least 10), on every problem."""
    against = {problem: compared["ray pbt"] for problem, compared in part["comparisons"].items()
               if "ray pbt" in compared}
    figure = ", ".join(f"{problem} {c['verdict']} (median difference "
                       f"{c['median_difference']:+.3f}, p worse {c['p_worse']:.3g}, "
                       f"{c['pairs']} seeds)" for problem, c in against.items())
    return [("pbt at or above Ray Tune's PBT in final loss on every problem (≥ 10 seeds)",
             figure or "not measured: " + part.get("missing", {}).get("ray pbt", "not run"),
             bool(against) and part["seeds"] >= 10
             and all(c["verdict"] != "worse" for c in against.values()))] + [
        (f"pbt: utilization of a real mpiexec pool of {pool['workers']} workers ≥ 95%",
         f"{pool['utilization']:.1%} (steady {pool['steady_utilization']:.1%}; "
         f"{pool['every_member_training_utilization']:.1%} while every member trains)",
         pool["utilization"] >= 0.95) for pool in [part.get("pool")] if pool]


def markdown(part):
    """The part's tables: median log10 loss by problem and contender, and pbt's paired
    comparisons."""
    steps = ", ".join(f"{name} {count}" for name, count in part["steps"].items())
    missing = "; ".join(f"{name}: {why}" for name, why in part.get("missing", {}).items())
    lines = [f"### 13. Population-based training: log10 final loss at equal compute, median "
             f"[IQR] over {part['seeds']} paired seeds", "",
             f"{part['seeds']} seeds, {part['population']} members (or runs) x the problem's "
             f"steps of compute ({steps}), segments of {part['interval']} steps; log10 of the "
             "final loss (lower is better)." + (f" Missing: {missing}." if missing else ""),
             "",
             "| problem | contender | median | q25 | q75 |", "|---|---|---|---|---|"]
    lines += [f"| {r['problem']} | {r['contender']} | {r['log10_loss']:.3f} | {r['q25']:.3f} | "
              f"{r['q75']:.3f} |" for r in part["runs"]]
    lines += ["", "| problem | pbt vs | median difference | p (pbt better) | p (pbt worse) | "
              "verdict |", "|---|---|---|---|---|---|"]
    lines += [f"| {problem} | {name} | {c['median_difference']:.3f} | {c['p_better']:.3g} | "
              f"{c['p_worse']:.3g} | {c['verdict']} |"
              for problem, compared in part["comparisons"].items()
              for name, c in compared.items()]
    pool = part.get("pool")
    if pool:
        lines += ["", f"A real mpiexec pool of {pool['workers']} workers, an async population of "
                  f"{pool['population']} on the toy (segments: {pool['duration']}, a draw a "
                  f"segment): {pool['segments']} segments, {pool['exploits']} exploits; "
                  f"utilization {pool['utilization']:.1%}, steady "
                  f"{pool['steady_utilization']:.1%}, "
                  f"{pool['every_member_training_utilization']:.1%} until the first member "
                  f"finished its training ({pool['finished_from_s']:.1f} s of "
                  f"{pool['makespan_s']:.1f} s); a member waited {pool['wait_s_p50'] * 1e3:.1f} "
                  f"ms between its segments (median; {pool['member_wait_s']:.2f} s in all)."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
