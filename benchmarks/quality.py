"""Part 3, search quality as users run it: ours and the peers on the same problems, seeds and
worker timelines, in three modes, judged by paired Wilcoxon tests.

Problems: Branin, Hartmann-6, Ackley-5, Rosenbrock-4, Levy-6 (:mod:`emews.models.analytic`) and a
real ML objective, :func:`emews.models.digits.train` (an MLP on scikit-learn's digits, validation
log-loss) on ``digits_space.json``.

Contenders, each driven through its own ask/tell interface by one loop (:func:`evaluate`):

* ours (registered names; :data:`benchmarks.sizes.OURS`), through the ME driver's
  :class:`emews.core._me.Search` (``propose`` / ``tell``, as the driver calls them), defaults;
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
JSON line per run) kept for these sizes and these package versions. Each line also records a
digest of every file of ours that the run imported (:func:`benchmarks.quality_runs.code_digests`): a run is taken from
the cache only while those files are unchanged, so a change to the store or to one algorithm
reruns only the runs that used it. A run that is stopped and started again does only the runs
still missing.
"""

import concurrent.futures as cf
import functools
import hashlib
import json
import math
import multiprocessing
import os
import time
from pathlib import Path

import numpy as np

from .quality_runs import ANALYTIC, MARKS, current_digest, one_run, unavailable

CACHE_DIRECTORY = Path(__file__).resolve().parent / "results" / "quality-runs"
# What a cached run's outcome depends on besides its arguments and its code: the peers.
PRELOAD = ("numpy", "scipy.optimize", "sklearn.ensemble", "sklearn.gaussian_process", "skopt",
           "optuna")
PEER_PACKAGES = ("numpy", "scipy", "scikit-learn", "scikit-optimize", "optuna")
REGRET_FLOOR = 1e-8
MODES = ("sequential", "batch", "async")
ALPHA = 0.05
ASYNC_TOLERANCE = 0.10     # async log10 regret within 10% of the sequential one (paired test)
# Rough cost of one run relative to random search: the slowest start first.
COST = {"gp": 30, "skopt gp_minimize": 30, "skopt forest_minimize": 20, "mbo": 20,
        "optuna GP": 20, "optuna": 3, "optuna TPE": 3}



def run_cache(sizes, directory=CACHE_DIRECTORY, run_sizes=None):
    """The cache file of finished runs at ``sizes`` with the installed peers (only the sizes a
    run depends on count, ``run_sizes``, by default the quality part's: more seeds, problems
    or contenders add to the same cache)."""
    from importlib import metadata

    if run_sizes is None:
        run_sizes = [sizes.quality_budget, sizes.quality_workers, sizes.quality_digits_epochs]
    key = json.dumps([run_sizes, [metadata.version(p) for p in PEER_PACKAGES]])
    return Path(directory) / f"{sizes.name}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.jsonl"


def cached_runs(cache):
    """``{(problem, contender, mode, seed): run}`` of the runs in ``cache`` whose code is
    unchanged (their recorded digests match the files now)."""
    try:
        lines = Path(cache).read_text().splitlines()
    except FileNotFoundError:
        return {}
    current, found = functools.cache(current_digest), {}     # each file read once
    for line in lines:
        try:
            r = json.loads(line)
        except ValueError:          # a line cut short when a run was killed while writing
            continue
        if all(current(name) == digest for name, digest in r["code"].items()):
            found[(r["problem"], r["contender"], r["mode"], r["seed"])] = r
    return found


def available(wanted, unavailable, part):
    """The contenders of ``wanted`` that can run here, and ``{contender: why}`` of the others
    (``unavailable(contender)`` says why not, or None), each printed as the ``part`` leaves
    it out."""
    skipped = {c: why for c in wanted if (why := unavailable(c))}
    for name, why in skipped.items():
        print(f"[{part}] {name} left out: {why}", flush=True)
    return [c for c in wanted if c not in skipped], skipped


def run_missing(call, calls, cache, jobs, part, preload=PRELOAD):
    """``call(*arguments)`` for each ``arguments`` of ``calls``, in parallel (``jobs``
    processes, default one per core), each finished line appended to ``cache`` as it comes;
    the lines without their code digests.

    Each call runs in a fresh process forked from a server that imported ``preload`` (the
    peers' packages) but none of ours: a run's recorded code is exactly what it imported."""
    cache.parent.mkdir(parents=True, exist_ok=True)
    with open(cache, "a+b") as f:     # end a line cut short, so the next one stands alone
        if f.tell() and (f.seek(-1, os.SEEK_END), f.read(1))[1] != b"\n":
            f.write(b"\n")
    started, results = time.perf_counter(), []
    os.environ.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(preload))
    with cf.ProcessPoolExecutor(jobs or os.cpu_count(), mp_context=context,
                                max_tasks_per_child=1) as pool:
        futures = [pool.submit(call, *arguments) for arguments in calls]
        for done, future in enumerate(cf.as_completed(futures), 1):
            line = future.result()
            with open(cache, "a") as f:
                f.write(json.dumps(line) + "\n")
            results.append({k: v for k, v in line.items() if k != "code"})
            if done % max(len(futures) // 20, 1) == 0:
                print(f"[{part}] {done}/{len(futures)} runs, "
                      f"{time.perf_counter() - started:.0f} s", flush=True)
    return results


def run(sizes, jobs=None, cache_directory=CACHE_DIRECTORY):
    """Every contender on every problem in every mode with every seed; summaries, paired
    comparisons and the issue's targets. Runs found in the cache are not run again."""
    contenders, skipped = available([*sizes.quality_ours, *sizes.quality_peers], unavailable,
                                    "quality")
    runs = [(p, c, m, s) for p in sizes.quality_problems for c in contenders
            for m in sizes.quality_modes for s in range(sizes.quality_seeds)]
    cache = run_cache(sizes, cache_directory)
    known = cached_runs(cache)
    results = [{k: v for k, v in known[r].items() if k != "code"} for r in runs if r in known]
    missing = sorted((r for r in runs if r not in known),
                     key=lambda r: (-COST.get(r[1], 1), r[2] == "batch", r[0] == "digits"))
    print(f"[quality] {len(results)} of {len(runs)} runs from the cache {cache}", flush=True)
    results += run_missing(one_run, [(*r, sizes.quality_budget, sizes.quality_workers,
                                      sizes.quality_digits_epochs) for r in missing],
                           cache, jobs, "quality")
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
    """Whether the variant is within :data:`ASYNC_TOLERANCE` of its sequential log10 regret,
    judged as the peer targets are, by the paired test: the margin is the tolerance times the
    sequential median, and the variant is outside only when its per-seed differences from the
    sequential runs exceed the margin significantly (one-sided Wilcoxon, :data:`ALPHA`)."""
    from scipy.stats import wilcoxon

    mine, base = np.median(list(variant.values())), np.median(list(sequential.values()))
    margin = ASYNC_TOLERANCE * abs(base)
    seeds = sorted(set(variant) & set(sequential))
    beyond = np.array([variant[s] - sequential[s] - margin for s in seeds])
    p_outside = (float(wilcoxon(beyond, alternative="greater").pvalue)
                 if len(beyond) and np.any(beyond) else 1.0)
    return {"median": float(mine), "sequential_median": float(base), "margin": float(margin),
            "p_outside": p_outside, "within": p_outside >= ALPHA}


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
                beyond = [c["problem"] for c in rows if c["within"] and
                          c["median"] > c["sequential_median"] + c["margin"]]
                found.append((f"{mode} {ours} within {ASYNC_TOLERANCE:.0%} of its sequential "
                              f"log10 regret", f"{len(rows) - len(out)} of {len(rows)}; "
                              f"outside on {', '.join(out) or 'none'}; median beyond the "
                              f"margin, not significantly, on {', '.join(beyond) or 'none'}",
                              not out))
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
    sections.append(comparisons_table("Paired comparisons", part["alpha"], rows))
    rows = [(c["mode"], c["problem"], c["ours"], f"{c['median']:.2f}",
             f"{c['sequential_median']:.2f}", f"{c['margin']:.3f}", f"{c['p_outside']:.3g}",
             "yes" if c["within"] else "no")
            for c in part["comparisons"] if "margin" in c]
    if rows:
        sections.append(f"#### Batch and async against sequential: within "
                        f"{ASYNC_TOLERANCE:.0%} (margin = {ASYNC_TOLERANCE:.0%} of the "
                        f"sequential median; outside when the paired differences exceed it, "
                        f"one-sided Wilcoxon, α = {part['alpha']})\n\n"
                        + _table(("mode", "problem", "ours", "median", "sequential median",
                                  "margin", "p (beyond the margin)", "within"), rows))
    seconds = ", ".join(f"{c} {s['median_per_run']:.2g}"
                        for c, s in part["seconds_by_contender"].items())
    left_out = "; ".join(f"{c}: {why}" for c, why in part["skipped"].items())
    sections.append(f"Regret is floored at {part['regret_floor']:g}; digits' minimum is the "
                    f"best validation log-loss any run found. Ranks: 1 is best, per problem "
                    f"and seed, averaged. Median seconds per run: {seconds}."
                    + (f" Left out: {left_out}." if left_out else ""))
    return "\n\n".join(sections)


def comparisons_table(title, alpha, rows, better="better", worse="worse"):
    """A section of paired comparisons: ``rows`` of (mode, problem, ours, against, median
    difference, p ours ``better``, p ours ``worse``, verdict)."""
    return (f"#### {title} (Wilcoxon signed-rank, one-sided each way, α = {alpha})\n\n"
            + _table(("mode", "problem", "ours", "against", "median difference",
                      f"p (ours {better})", f"p (ours {worse})", "verdict"), rows))


def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)
