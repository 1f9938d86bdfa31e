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
``pbt_pool_members_per_worker`` times as many members (queued for the workers, the member
furthest behind first), ``pbt_steps`` steps in segments of ``pbt_interval``, each segment a
``py`` run of :func:`sleeping_toy` (the utilization part's sleep, then the toy's steps from the
checkpoint the handoff gave it); the utilization counted from the store as the utilization part
counts it (:func:`benchmarks.common.utilization`). ``pbt_pool_repeats`` such studies, each its
own draw of the segments' times; the figures are the median one's, with every utilization.

Why so many members a worker: a member's segments run one after the other, so the run ends
with a drain, the segments in flight when none is left to start; with times as variable as
the utilization part's (lognormal, sigma 1) it costs a few of the longest segments' time on
every worker, whatever the population. Only a run long against it hides it: the exact
simulation of this study (:func:`simulated_utilization`, 40 draws) puts the median
utilization at 0.84, 0.95, 0.97 and 0.98 with 2, 8, 16 and 32 members a worker, and 0.95 or
more in 3, 53, 70 and 82 % of the draws (docs/src/pbt.md has the table).
"""

import argparse
import heapq
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from emews.plugin import SEGMENT

from . import pbt_ray, utilization_tasks
from .common import mpiexec_python, summary, utilization
from .fidelity import Ours
from .pbt_problems import PROBLEMS, run_line
from .peers_runs import VENV_DIRECTORY
from .quality import cached_runs, compare, run_cache, run_missing

CONTENDERS = ("pbt", "pb2", "random", "random + asha")   # ours, in this process
CACHE_DIRECTORY = Path(__file__).resolve().parent / "results" / "pbt-runs"
FLOOR = 1e-12
QUANTILE = 0.2   # every population's: ours' default, Supervisor's




def population_run(problem, explore, seed, population, steps, interval):
    """The best member's final loss of a ``pbt`` search with ``explore`` on ``problem``."""
    from emews.core._algorithm import load
    from emews._space import Space

    search = load("pbt")(Space.from_ga_json(problem.space), seed=seed,
                         population_size=population, perturbation_interval=interval,
                         max_steps=steps, explore=explore, quantile=QUANTILE)
    checkpoints, final = {}, math.inf
    while not search.done():
        points, values = search.ask(population), []
        for point in points:
            values.append(_segment(problem, point, checkpoints))
            if point[SEGMENT]["until"] == steps:
                final = min(final, values[-1])
        search.tell(points, values)
    return final


def _segment(problem, point, checkpoints):
    """Train the segment ``point`` of ``problem`` from the checkpoint its record names (in
    ``checkpoints``, by segment name), keep its own there; its loss."""
    from emews.core._segments import split

    params, record = split(point)
    start = record["donor"] or record["parent"]
    state = checkpoints[start] if start else problem.start()
    for _ in range(record["start"], record["until"]):
        state = problem.step(state, params)
    checkpoints[record["name"]] = state
    return problem.loss(state)


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


def one_run(problem, name, seed, population, steps, interval):
    """One of our contenders on ``problem`` and one seed: its line of the part's cache."""
    started = time.perf_counter()
    loss = score(PROBLEMS[problem](), name, seed, population, steps, interval)
    return run_line(problem, name, "batch", seed, loss, time.perf_counter() - started)


def sleeping_toy(params):
    """A segment of the toy at a pool's pace (a ``py`` model): sleep the utilization part's
    lognormal time (:func:`benchmarks.utilization_tasks.duration`), drawn for the segment's run
    in its study (a member's speed does not depend on its hyperparameters), then train the
    toy's steps from the segment's checkpoint (:func:`emews.models.pbt_toy.train`)."""
    from emews.models import pbt_toy
    from emews.plugin import current_run

    run = current_run()
    time.sleep(utilization_tasks.duration({"run": run.run_id.split("-")[0],
                                           "study": Path(run.expdir).parent.name}))
    return pbt_toy.train(params)


def simulated_utilization(members_per_worker, sigma, draw, workers=8, steps=40, interval=4):
    """The utilization of the pool's study (see the module docstring) simulated exactly, with no
    overhead: the ``pbt`` class itself asked for a segment as a worker frees, the toy trained,
    each segment taking a lognormal time (median 1, log-sd ``sigma``) from generator ``draw``."""
    from emews.core._algorithm import load
    from emews._space import Space

    problem, rng = PROBLEMS["toy"](), np.random.default_rng(draw)
    search = load("pbt")(Space.from_ga_json(problem.space), seed=draw,
                         population_size=members_per_worker * workers,
                         perturbation_interval=interval, max_steps=steps, quantile=QUANTILE)
    checkpoints, running, now, busy = {}, [], 0.0, 0.0
    while True:
        for point in search.ask(workers - len(running)) if not search.done() else []:
            loss = _segment(problem, point, checkpoints)
            took = float(rng.lognormal(0.0, sigma))
            busy += took
            heapq.heappush(running, (now + took, point[SEGMENT]["name"], point, loss))
        if not running:
            return busy / (workers * now)
        now, _, point, value = heapq.heappop(running)
        search.tell([point], [value])


def pool_utilization(sizes):
    """``sizes.pbt_pool_repeats`` async ``pbt`` studies on a real mpiexec pool of
    ``sizes.pbt_pool_workers`` workers (see the module docstring): the median one's figures,
    with every study's utilization (``utilizations``)."""
    from emews.models import pbt_toy

    found = []
    with tempfile.TemporaryDirectory(prefix="emews-bench-") as tmp:
        (Path(tmp) / "space.json").write_text(json.dumps(pbt_toy.SPACE))
        for repeat in range(sizes.pbt_pool_repeats):
            out = Path(tmp) / f"figures-{repeat}.json"
            mpiexec_python(sizes.pbt_pool_workers + 1, [
                "-m", __name__, str(out), "--dir", tmp, "--steps", str(sizes.pbt_steps),
                "--interval", str(sizes.pbt_interval), "--members-per-worker",
                str(sizes.pbt_pool_members_per_worker), "--repeat", str(repeat)])
            found.append(json.loads(out.read_text()))
    found.sort(key=lambda figures: figures["utilization"])
    return {**found[len(found) // 2], "utilizations": [f["utilization"] for f in found]}


def _pool_study(directory, steps, interval, members_per_worker, repeat):
    """Runs under mpiexec: the study, then (rank 0) its figures from the store."""
    from mpi4py import MPI

    import emews
    from emews.store import SQLiteStore

    workers = MPI.COMM_WORLD.Get_size() - 1
    population = members_per_worker * workers
    space = Path(directory) / "space.json"   # written before mpiexec: no rank races a reader
    result = emews.run({
        "system": {"progress_interval": 3600.0},
        "study": {"algorithm": "pbt", "space": str(space), "mode": "async", "seed": repeat,
                  "budget": 4 * population * steps, "impl": "py",
                  "objective": "benchmarks.pbt:sleeping_toy", "data_dir": str(directory),
                  "name": f"pbt-pool-{repeat}"},
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
    parser.add_argument("--members-per-worker", type=int, required=True)
    parser.add_argument("--repeat", type=int, default=0)
    args = parser.parse_args(argv)
    figures = _pool_study(args.dir, args.steps, args.interval, args.members_per_worker,
                          args.repeat)
    if figures is not None:   # rank 0
        Path(args.out).write_text(json.dumps(figures))


def run(sizes, install=True, venv_directory=VENV_DIRECTORY, jobs=None,
        cache_directory=CACHE_DIRECTORY):
    """Every contender on every problem and seed, the runs in the cache taken from it; the
    part's figures. Ray Tune's virtualenv is installed first when ``install`` (else it must
    be there already); where it cannot be, its contenders are reported as missing."""
    steps = {"toy": sizes.pbt_steps, "digits": sizes.pbt_digits_epochs}
    why = pbt_ray.unavailable(venv_directory, install)
    missing = {name: why for name in sizes.pbt_ray} if why else {}
    ray = [name for name in sizes.pbt_ray if name not in missing]
    contenders = [*CONTENDERS, *ray]
    seeds = range(sizes.pbt_seeds)
    cache = run_cache(sizes, cache_directory, [sizes.pbt_population, steps, sizes.pbt_interval,
                                               QUANTILE, pbt_ray.RAY["Ray Tune"][1][:3]])
    known = cached_runs(cache)
    # Ray Tune's: a seed of each problem in turn, PBT's before PB2's (the target's first)
    runs = [(problem, name, "batch", seed) for problem in sizes.pbt_problems
            for name in CONTENDERS for seed in seeds] + [
        (problem, name, "async", seed) for name in ray for seed in seeds
        for problem in sizes.pbt_problems]
    results = [known[r] for r in runs if r in known]
    print(f"[pbt] {len(results)} of {len(runs)} runs from the cache {cache}", flush=True)
    todo = [r for r in runs if r not in known]
    shape = {problem: (sizes.pbt_population, steps[problem], sizes.pbt_interval)
             for problem in sizes.pbt_problems}
    results += run_missing(one_run, [(p, c, s, *shape[p]) for p, c, m, s in todo
                                     if m == "batch"], cache, jobs, "pbt")
    results += run_missing(pbt_ray.one_run, [(p, c, s, *shape[p], QUANTILE, str(venv_directory))
                                             for p, c, m, s in todo if m == "async"],
                           cache, jobs, "pbt")
    losses = {}
    for r in results:
        losses.setdefault(r["problem"], {}).setdefault(r["contender"], {})[r["seed"]] = \
            math.log10(max(r["loss"], FLOOR))
    rows, comparisons = [], {}
    for problem in sizes.pbt_problems:
        by_seed = {name: losses[problem][name] for name in contenders}
        rows += [{"problem": problem, "contender": name,
                  "log10_loss": float(np.median(list(values.values()))),
                  "q25": float(np.percentile(list(values.values()), 25)),
                  "q75": float(np.percentile(list(values.values()), 75))}
                 for name, values in by_seed.items()]
        comparisons[problem] = {name: compare(by_seed["pbt"], by_seed[name])
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
         f"{pool['utilization']:.1%}{_studies(pool)} (steady "
         f"{pool['steady_utilization']:.1%}; {pool['every_member_training_utilization']:.1%} "
         "while every member trains)",
         pool["utilization"] >= 0.95) for pool in [part.get("pool")] if pool]


def _studies(pool):
    """``, the median of N studies' A, B, C`` (nothing for a record of one study)."""
    found = pool.get("utilizations", [pool["utilization"]])
    return (f", the median of {len(found)} studies' "
            f"{', '.join(f'{u:.1%}' for u in found)}") if len(found) > 1 else ""


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
                  f"utilization {pool['utilization']:.1%}{_studies(pool)}, steady "
                  f"{pool['steady_utilization']:.1%}, "
                  f"{pool['every_member_training_utilization']:.1%} until the first member "
                  f"finished its training ({pool['finished_from_s']:.1f} s of "
                  f"{pool['makespan_s']:.1f} s); a member waited {pool['wait_s_p50'] * 1e3:.1f} "
                  f"ms between its segments (median; {pool['member_wait_s']:.2f} s in all)."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
