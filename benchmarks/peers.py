"""Part 15, the field's strongest optimizers on the field's own benchmark (issue 45): ours and
the peers on Bayesmark's tasks (:mod:`benchmarks.bayesmark_tasks`) and on learning-curve
tables (:mod:`benchmarks.lc_tables`, the task group ``tables``: a point is worth its nearest
configuration's final validation loss), with Bayesmark's protocol and its normalized score.

::

    contender ──► one run (task, mode, seed) ──► a line of results/peers-runs/*.jsonl
      ours:   emews.run, the task's objective: in-process pool (sequential, batch),
              mpiexec pool, then charged the simulated clock (async)
      Optuna: its own study.ask / study.tell, in this virtualenv   ┐ the quality part's loop
      others: peer_server.py in a virtualenv of its own (JSON lines) ┘ (quality_runs.evaluate)

Protocol (Bayesmark's): ``rounds`` rounds of ``batch`` suggestions (16 x 8 at full size), each
round evaluated whole before the next is asked (``batch`` mode); ``sequential`` asks one at a
time, for a smaller budget (40: the issue's, as the costliest peers take seconds a
suggestion); ``async`` keeps ``batch`` workers busy on a simulated clock, each evaluation
taking its table's epochs' seconds (a table's task) or a drawn time (lognormal, as the
quality part's), the same for every contender; a peer without an asynchronous mode
(:data:`benchmarks.peers_runs.BATCH_ONLY`) runs in batch mode there, and the table says so
(its batch mode's run stands in, run once: :func:`batch_stand_ins`).
Ours run through the public API, ``emews.run`` with ``batch`` workers and their defaults:
``pool = "inprocess"`` in the sequential and batch modes, ``pool = "mpi"`` in the async mode,
whose points are then charged the simulated clock's time
(:func:`benchmarks.peers_runs.simulated_order`); a peer runs with the defaults its
documentation recommends (:mod:`benchmarks.peers_runs`, :mod:`benchmarks.peer_server`). A
multi-fidelity peer (:data:`benchmarks.peers_runs.MULTI_FIDELITY`) runs on the tables only
(elsewhere it is not applicable), from 1 epoch to the table's, with the same budget in
epochs; only its evaluations of all the epochs count for its best value. A peer's process
that does not answer within ``EMEWS_PEERS_TIMEOUT`` seconds is killed; the run is recorded
with the error and left out of the scores.

Score (Bayesmark's normalized mean score, docs/scoring.rst there): per task, ``100 x (clip -
best) / (clip - opt)``, ``opt`` the best value any run found on the task, ``clip`` the median
loss of one random evaluation (our random search's first, in the sequential mode), a best
value above it clipped to it: 100 is the best any method found, 0 a typical random point.
Each run's best value after each round is kept (``best_by_round``), for curves of regret
against budget.

The cache holds one JSON line per (contender, task, mode, seed), with the digests of the code
of ours that the run imported (:func:`benchmarks.quality.cached_runs`; a run of ours imports
the searches it builds, even those its MPI master runs: :mod:`benchmarks.peers_ours`); it is
kept in the repository, so a run stopped anywhere, even in a fresh clone, goes on where it
stopped.
"""

from pathlib import Path

import numpy as np

from .peers_ours import complete, one_run
from .peers_runs import (BATCH_ONLY, MULTI_FIDELITY, VENV_DIRECTORY, VENV_PEERS, applicable,
                         tasks_of, unavailable_here)
from .quality import ALPHA, available, cached_runs, compare, run_cache, run_missing

CACHE_DIRECTORY = Path(__file__).resolve().parent / "results" / "peers-runs"
REFERENCE = "random"
DEFAULT = "auto"   # the search a study gets when it names none: issue 46 compares it
PRELOAD = ("numpy", "scipy.optimize", "sklearn.model_selection", "sklearn.ensemble", "optuna")


# --- the part ------------------------------------------------------------------------------------

def run(sizes, jobs=None, cache_directory=CACHE_DIRECTORY, venv_directory=VENV_DIRECTORY,
        install=True, new_runs=True):
    """Every contender on every task in every mode with every seed, the runs in the cache
    taken from it; normalized scores per task, task group and mode. A peer of its own
    virtualenv is installed first when ``install`` (else it must be there already); one that
    cannot be is reported as missing. Without ``new_runs``, only the runs in the cache, and
    of those the tasks, modes and seeds that every contender has finished (an interrupted
    run's part so far, scored on equal terms; ``not_run`` counts the runs to go)."""
    ours = list(sizes.peers_ours)
    contenders, missing = available([*ours, *sizes.peers_peers],
                                    unavailable_here(venv_directory, install), "peers")
    runs = [(t, c, m, s) for t in sizes.peers_tasks for c in contenders if applicable(c, t)
            for m in sizes.peers_modes for s in range(sizes.peers_seeds)]
    cache = run_cache(sizes, cache_directory, [sizes.peers_rounds, sizes.peers_batch,
                                               {n: VENV_PEERS[n][1] for n in VENV_PEERS},
                                               sizes.peers_sequential_budget])
    shape = {"batch": (sizes.peers_rounds, sizes.peers_batch),     # (rounds, points a round)
             "async": (sizes.peers_rounds, sizes.peers_batch),
             "sequential": (sizes.peers_sequential_budget, 1)}
    stand_ins = batch_stand_ins(runs)
    own = [r for r in runs if r not in stand_ins]
    known = {r: line for r, line in cached_runs(cache).items() if complete(line, ours)}
    results = [{k: v for k, v in known[r].items() if k != "code"} for r in own if r in known]
    print(f"[peers] {len(results)} of {len(own)} runs from the cache {cache} (and "
          f"{len(stand_ins)} async runs of batch-only peers: their batch runs)", flush=True)
    todo = [(*r, *shape[r[2]], tuple(ours), str(venv_directory))
            for r in run_order([r for r in own if r not in known], ours)]
    if new_runs:
        results += run_missing(one_run, todo, cache, jobs, "peers", PRELOAD)
        todo = []
    results = with_stand_ins(results, stand_ins)
    if not new_runs:
        results = finished_cells(results, runs)
    failed = [r for r in results if "error" in r]
    results = [r for r in results if "error" not in r]
    scores = normalized_scores(results)
    ours_here = [c for c in ours if c in contenders]
    return {"rounds": sizes.peers_rounds, "batch": sizes.peers_batch,
            "sequential_budget": sizes.peers_sequential_budget,
            "seeds": sizes.peers_seeds, "modes": list(sizes.peers_modes),
            "tasks": list(sizes.peers_tasks), "contenders": contenders,
            "ours": ours_here, "missing": missing,
            "failed": [{k: r[k] for k in ("problem", "contender", "mode", "seed", "error")}
                       for r in failed],
            "batch_in_async": sorted({r["contender"] for r in results
                                      if r["mode"] == "async" and r.get("ran_as") == "batch"}),
            "versions": {n: VENV_PEERS[n][1] for n in VENV_PEERS}, "alpha": ALPHA,
            "not_run": len(todo),
            "summary": summarize(scores), "comparisons": comparisons(scores, ours_here),
            "runs": results}


def batch_stand_ins(runs):
    """``{async run: batch run}`` of ``runs`` (``(task, contender, mode, seed)``) for each peer
    without an asynchronous mode (:data:`benchmarks.peers_runs.BATCH_ONLY`): it runs its
    async mode in batch mode, the very run of its batch mode with the same seed (HEBO's lines
    of both were identical), so that run stands in for it instead of running twice."""
    wanted = set(runs)
    return {r: (r[0], r[1], "batch", r[3]) for r in runs if r[2] == "async"
            and r[1] in BATCH_ONLY and (r[0], r[1], "batch", r[3]) in wanted}


def with_stand_ins(results, stand_ins):
    """``results`` and, for each async run of ``stand_ins`` (:func:`batch_stand_ins`) whose
    batch run is among them, that batch run as the async one."""
    by_run = {(r["problem"], r["contender"], r["mode"], r["seed"]): r for r in results}
    return results + [{**by_run[batch], "mode": "async"} for batch in stand_ins.values()
                      if batch in by_run]


def finished_cells(results, runs):
    """Those of ``results`` whose task, mode and seed every contender of ``runs`` (``(task,
    contender, mode, seed)``) has finished: the cells an interrupted run can score."""
    done = {(r["problem"], r["contender"], r["mode"], r["seed"]) for r in results}
    unfinished = {(t, m, s) for t, c, m, s in runs if (t, c, m, s) not in done}
    return [r for r in results if (r["problem"], r["mode"], r["seed"]) not in unfinished]


def run_order(runs, ours):
    """``runs`` (``(task, contender, mode, seed)``) in the order they go: seed by seed, so
    that a run spread over days (a cache carried from clone to clone) has every task,
    contender and mode at the seeds it did, and each finished seed can be scored (a score
    needs random search's runs, which are ours); within a seed the peers' first, as ours
    depend on emews/ and algorithms/, where a change runs them again (only at the seeds
    done)."""
    return sorted(runs, key=lambda run: (run[3], run[1] in ours))


def normalized_scores(results):
    """``{mode: {task: {contender: {seed: score}}}}``, Bayesmark's normalized mean score of each
    run's best value at the budget, ``100 x (clip - min(best, clip)) / (clip - opt)``: ``opt``
    the best value any run found on the task (in any mode), ``clip`` the median loss of one
    random evaluation (random search's first evaluation in the sequential mode, else its
    first round in the run's mode). 100 is the best found; 0 a typical random point."""
    finals = [(r["mode"], r["problem"], r["contender"], r["seed"], r["best_by_round"][-1])
              for r in results]
    best, first = {}, {}
    for r in results:
        best[r["problem"]] = min(best.get(r["problem"], np.inf), r["best_by_round"][-1])
        if r["contender"] == REFERENCE:
            first.setdefault((r["mode"], r["problem"]), []).append(r["best_by_round"][0])
    scores = {}
    for mode, task, name, seed, value in finals:
        clip = first.get(("sequential", task), first.get((mode, task)))
        if clip is None:
            continue
        clip = float(np.median(clip))
        span = clip - best[task]
        scores.setdefault(mode, {}).setdefault(task, {}).setdefault(name, {})[seed] = (
            100.0 * (clip - min(value, clip)) / span if span > 0 else 0.0)
    return scores


def task_groups(tasks):
    """``{group: [task, ...]}`` of ``tasks`` by their task group, and ``all`` of them."""
    groups = {}
    for task in tasks:
        groups.setdefault(tasks_of(task).group(task), []).append(task)
    return {**groups, "all": list(tasks)}


def summarize(scores):
    """Per mode: each contender's mean normalized score per task, per task group and overall
    (over the tasks it ran on: a multi-fidelity peer's are the tables')."""
    summary = {}
    for mode, by_task in scores.items():
        table = {task: {c: float(np.mean(list(s.values()))) for c, s in by.items()}
                 for task, by in by_task.items()}
        groups = task_groups(table)
        contenders = list(dict.fromkeys(c for by in table.values() for c in by))
        summary[mode] = {"tasks": table, "groups": {
            g: {c: float(np.mean([table[t][c] for t in tasks if c in table[t]]))
                for c in contenders if any(c in table[t] for t in tasks)}
            for g, tasks in groups.items()}}
    return summary


def comparisons(scores, ours, default=DEFAULT):
    """Per mode and task group (and over all tasks): ``default``, the search a study gets when
    it names none, against each peer, paired over the (task, seed) both ran
    (:func:`benchmarks.quality.compare`, on the scores negated: lower is better there)."""
    found = []
    for mode, by_task in scores.items():
        for group, tasks in task_groups(by_task).items():
            peers = dict.fromkeys(c for t in tasks for c in by_task[t] if c not in ours)
            for peer in peers:
                pairs = [(t, s) for t in tasks if default in by_task[t] and peer in by_task[t]
                         for s in by_task[t][default] if s in by_task[t][peer]]
                if pairs:
                    verdict = compare({(t, s): -by_task[t][default][s] for t, s in pairs},
                                      {(t, s): -by_task[t][peer][s] for t, s in pairs})
                    found.append({"mode": mode, "group": group, "which": default,
                                  "peer": peer, **verdict})
    return found


def targets(part, default=DEFAULT):
    """Issue 46's point 2, each with its figure and whether it is met: in every mode,
    ``default``'s mean normalized score the highest of all contenders, and in no task group
    significantly worse than the best peer there (paired over tasks and seeds). A
    multi-fidelity peer, whose mean is the tables' alone, competes in that group, not for
    the highest mean over all the tasks. An interrupted run (``not_run`` runs) meets no
    target."""
    found, to_go = [], part.get("not_run", 0)
    partial = f"partial, {to_go} runs not run: " if to_go else ""
    for mode in part["modes"]:
        means = part["summary"].get(mode, {"groups": {}})["groups"].get("all", {})
        if default not in means:
            continue
        leader = max((c for c in means if c not in MULTI_FIDELITY), key=means.get)
        found.append((f"{default}'s mean normalized score the highest of all ({mode})",
                      f"{partial}{means[default]:.1f} (highest: {leader}, "
                      f"{means[leader]:.1f})", means[default] >= means[leader] and not to_go))
        groups = part["summary"][mode]["groups"]
        worse = []
        for group, by in groups.items():
            peers = {c: v for c, v in by.items() if c not in part["ours"]}
            if group == "all" or not peers:
                continue
            best = max(peers, key=peers.get)
            verdict = next((c["verdict"] for c in part["comparisons"] if c["mode"] == mode
                            and c["group"] == group and c["peer"] == best), None)
            if verdict == "worse":
                worse.append(f"{group} ({best})")
        found.append((f"{default} not significantly worse than the best peer of any task "
                      f"group ({mode})", partial + (", ".join(worse) or "none worse"),
                      not worse and not to_go))
    return found


def markdown(part):
    """The part's section of the README: the normalized score per mode and task group."""
    from .quality import _table, comparisons_table

    title = (f"### 15. Peers on Bayesmark's tasks and learning-curve tables: "
             f"{len(part['tasks'])} tasks, {part['seeds']} seeds; batch: {part['rounds']} "
             f"rounds of {part['batch']}, async: as many evaluations on {part['batch']} "
             f"workers, sequential: {part['sequential_budget']} evaluations; normalized score "
             f"(Bayesmark's: 0 a typical random point, 100 the best any run found; higher "
             f"is better)")
    sections = [title]
    if part.get("not_run"):
        seeds = sorted({r["seed"] for r in part["runs"]})
        sections.append(f"**Partial**: {part['not_run']} runs not run yet; the scores are of "
                        f"the tasks, modes and seeds every contender has finished (seeds "
                        f"{', '.join(map(str, seeds)) or 'none'}).")
    groups = [g for g in ("classifiers", "regressors", "tables")
              if any(tasks_of(t).group(t) == g for t in part["tasks"])] + ["all"]
    for mode in part["modes"]:
        summary = part["summary"].get(mode, {"groups": {}})
        batch = part.get("batch_in_async", []) if mode == "async" else []
        rows = [(c + (" (ours)" if c in part["ours"] else "")
                 + (" (batch mode: no async mode)" if c in batch else "")
                 + (" (multi-fidelity: the tables only)" if c in MULTI_FIDELITY else ""),
                 *(f"{summary['groups'][g][c]:.1f}" if c in summary["groups"].get(g, {})
                   else "n/a" if c in MULTI_FIDELITY and g not in ("tables", "all")
                   else "–" for g in groups)) for c in part["contenders"]]
        rows += [(f"{c} (missing)", *("–" for _ in groups)) for c in part["missing"]]
        sections.append(f"#### {mode}\n\n" + _table(("contender", *groups[:-1], "mean"), rows))
    rows = [(c["mode"], c["group"], c["which"], c["peer"],
             f"{0.0 - c['median_difference']:+.1f}", f"{c['p_better']:.3g}",
             f"{c['p_worse']:.3g}", c["verdict"]) for c in part["comparisons"]]
    sections.append(comparisons_table("Paired comparisons of the normalized score per task "
                                      "group, over its tasks and seeds: the default search "
                                      "minus the peer", part["alpha"], rows))
    missing = "; ".join(f"{c}: {why}" for c, why in part["missing"].items())
    peers = ", ".join(f"{n} ({' '.join(v)})" for n, v in part["versions"].items())
    failed = "; ".join(f"{f['contender']} on {f['problem']} ({f['mode']}, seed {f['seed']}): "
                       f"{f['error']}" for f in part.get("failed", []))
    sections.append(f"Tasks: {', '.join(part['tasks'])}. Peers of their own virtualenvs: "
                    f"{peers}." + (f" Missing: {missing}." if missing else "")
                    + (f" Failed runs, left out of the scores: {failed}." if failed else ""))
    return "\n\n".join(sections)
