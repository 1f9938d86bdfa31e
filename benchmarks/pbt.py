"""Part 13, population-based training (issue 48): our ``pbt`` and its ``pb2`` against random
search and ASHA at equal compute, on the toy problem of the PBT paper.

The problem (:mod:`emews.models.pbt_toy`): maximize ``Q(theta) = 1.2 - sum(theta_i**2)`` by
gradient steps on ``Q_hat(theta | h) = 1.2 - sum(h_i * theta_i**2)``, ``h`` in ``[0, 1]^2``;
the score is the loss ``1.2 - Q(theta)`` at the end (smaller is better, 0 the optimum).

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

Each seed runs every contender; the figures are the median log10 loss by contender and the
paired one-sided Wilcoxon comparisons of ``pbt`` with each other contender
(:func:`benchmarks.quality.compare`). No pool runs here: the algorithms' time is not counted,
and the real pool's utilization is not measured in this part.
"""

import math

import numpy as np

from .fidelity import Ours
from .quality import compare

CONTENDERS = ("pbt", "pb2", "random", "random + asha")
FLOOR = 1e-12


def _toy():
    from emews.models import pbt_toy

    return pbt_toy


def population_run(explore, seed, population, steps, interval):
    """The best member's final loss of a ``pbt`` search with ``explore``."""
    from emews.core.algorithm import load
    from emews.core.segments import split
    from emews.space import Space

    toy = _toy()
    search = load("pbt")(Space.from_ga_json(toy.SPACE), seed=seed, population_size=population,
                         perturbation_interval=interval, max_steps=steps, explore=explore)
    checkpoints, final = {}, math.inf
    while not search.done():
        points, values = search.ask(population), []
        for point in points:
            params, record = split(point)
            start = record["donor"] or record["parent"]
            theta = checkpoints[start] if start else list(toy.START)
            for _ in range(record["start"], record["until"]):
                theta = toy.step(theta, params)
            checkpoints[record["name"]] = theta
            values.append(toy.loss(theta))
            if record["until"] == steps:
                final = min(final, values[-1])
        search.tell(points, values)
    return final


def random_run(pruner, seed, population, steps):
    """The best finished run's loss of random search, with ``pruner`` (``none``, ``asha``),
    on ``population * steps`` steps."""
    toy = _toy()
    search = Ours("random", pruner, toy.SPACE, seed, steps)
    budget, best = population * steps, math.inf
    while budget > 0:
        run, params = search.new()
        theta = list(toy.START)
        for step in range(1, steps + 1):
            if budget == 0:
                return best
            theta, budget = toy.step(theta, params), budget - 1
            value = toy.loss(theta)
            stop = search.report(run, step, value)
            if step == steps:
                search.finish(run, value)
                best = min(best, value)
            elif stop:
                search.prune(run)
                break
    return best


def score(name, seed, sizes):
    """Contender ``name``'s final loss on one seed."""
    population, steps, interval = sizes.pbt_population, sizes.pbt_steps, sizes.pbt_interval
    if name in ("pbt", "pb2"):
        return population_run("perturb" if name == "pbt" else "pb2", seed, population, steps,
                              interval)
    return random_run("asha" if name.endswith("asha") else "none", seed, population, steps)


def run(sizes):
    """Every contender on every seed; the part's figures."""
    by_seed = {name: {seed: math.log10(max(score(name, seed, sizes), FLOOR))
                      for seed in range(sizes.pbt_seeds)} for name in CONTENDERS}
    rows = [{"contender": name, "log10_loss": float(np.median(list(values.values()))),
             "q25": float(np.percentile(list(values.values()), 25)),
             "q75": float(np.percentile(list(values.values()), 75))}
            for name, values in by_seed.items()]
    return {"runs": rows, "seeds": sizes.pbt_seeds, "population": sizes.pbt_population,
            "steps": sizes.pbt_steps, "interval": sizes.pbt_interval,
            "comparisons": {name: compare(by_seed["pbt"], by_seed[name])
                            for name in CONTENDERS if name != "pbt"}}


def markdown(part):
    """The part's tables: median log10 loss by contender, and pbt's paired comparisons."""
    lines = [f"Toy problem of the PBT paper, {part['seeds']} seeds, {part['population']} "
             f"members (or runs) x {part['steps']} steps of compute, segments of "
             f"{part['interval']} steps; log10 of the final loss (lower is better).", "",
             "| contender | median | q25 | q75 |", "|---|---|---|---|"]
    lines += [f"| {r['contender']} | {r['log10_loss']:.3f} | {r['q25']:.3f} | {r['q75']:.3f} |"
              for r in part["runs"]]
    lines += ["", "| pbt vs | median difference | p (pbt better) | p (pbt worse) | verdict |",
              "|---|---|---|---|---|"]
    lines += [f"| {name} | {c['median_difference']:.3f} | {c['p_better']:.3g} | "
              f"{c['p_worse']:.3g} | {c['verdict']} |" for name, c in part["comparisons"].items()]
    return "\n".join(lines) + "\n"
