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

Each seed runs every contender on each problem; the figures are the median log10 loss by
problem and contender and the paired one-sided Wilcoxon comparisons of ``pbt`` with each other
contender
(:func:`benchmarks.quality.compare`). No pool runs here: the algorithms' time is not counted,
and the real pool's utilization is not measured in this part.
"""

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import numpy as np

from .fidelity import Ours
from .quality import compare

CONTENDERS = ("pbt", "pb2", "random", "random + asha")
FLOOR = 1e-12


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
                         max_steps=steps, explore=explore)
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


def run(sizes):
    """Every contender on every problem and seed; the part's figures."""
    steps = {"toy": sizes.pbt_steps, "digits": sizes.pbt_digits_epochs}
    rows, comparisons = [], {}
    for problem_name in sizes.pbt_problems:
        problem = PROBLEMS[problem_name]()
        by_seed = {name: {seed: math.log10(max(score(problem, name, seed, sizes.pbt_population,
                                                     steps[problem_name],
                                                     sizes.pbt_interval), FLOOR))
                          for seed in range(sizes.pbt_seeds)} for name in CONTENDERS}
        rows += [{"problem": problem_name, "contender": name,
                  "log10_loss": float(np.median(list(values.values()))),
                  "q25": float(np.percentile(list(values.values()), 25)),
                  "q75": float(np.percentile(list(values.values()), 75))}
                 for name, values in by_seed.items()]
        comparisons[problem_name] = {name: compare(by_seed["pbt"], by_seed[name])
                                     for name in CONTENDERS if name != "pbt"}
    return {"runs": rows, "seeds": sizes.pbt_seeds, "population": sizes.pbt_population,
            "steps": {name: steps[name] for name in sizes.pbt_problems},
            "interval": sizes.pbt_interval, "problems": list(sizes.pbt_problems),
            "comparisons": comparisons}


def markdown(part):
    """The part's tables: median log10 loss by problem and contender, and pbt's paired
    comparisons."""
    steps = ", ".join(f"{name} {count}" for name, count in part["steps"].items())
    lines = [f"{part['seeds']} seeds, {part['population']} members (or runs) x the problem's "
             f"steps of compute ({steps}), segments of {part['interval']} steps; log10 of the "
             "final loss (lower is better).", "",
             "| problem | contender | median | q25 | q75 |", "|---|---|---|---|---|"]
    lines += [f"| {r['problem']} | {r['contender']} | {r['log10_loss']:.3f} | {r['q25']:.3f} | "
              f"{r['q75']:.3f} |" for r in part["runs"]]
    lines += ["", "| problem | pbt vs | median difference | p (pbt better) | p (pbt worse) | "
              "verdict |", "|---|---|---|---|---|---|"]
    lines += [f"| {problem} | {name} | {c['median_difference']:.3f} | {c['p_better']:.3g} | "
              f"{c['p_worse']:.3g} | {c['verdict']} |"
              for problem, compared in part["comparisons"].items()
              for name, c in compared.items()]
    return "\n".join(lines) + "\n"
