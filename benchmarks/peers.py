"""Part 13, the field's strongest optimizers on the field's own benchmark (issue 45): ours and
the peers on Bayesmark's tasks (:mod:`benchmarks.bayesmark_tasks`), with Bayesmark's protocol
and its normalized score.

::

    contender ──► one run (task, mode, seed) ──► cache line (results/peers-runs/*.jsonl)
      ours:   emews.run, in-process pool, the task's objective
      Optuna: its own study.ask / study.tell, in this virtualenv   ┐ the quality part's loop
      others: peer_server.py in a virtualenv of its own (JSON lines) ┘ (quality_runs.evaluate)

Protocol (Bayesmark's): ``rounds`` rounds of ``batch`` suggestions (16 x 8 at full size), each
round evaluated whole before the next is asked (``batch`` mode); ``sequential`` asks one at a
time for the same budget. Ours run through the public API, ``emews.run`` with
``pool = "inprocess"`` and ``batch`` workers, their defaults; a peer runs with the defaults
its documentation recommends (:data:`VENV_PEERS`, :mod:`benchmarks.peer_server`).

Score (Bayesmark's normalized score): per task and mode, ``100 x (random's mean - best) /
(random's mean - the best value any run found)``, ``random`` being our random search: 0 is
random search on average, 100 the best value any method found. Each run's best value after
each round is kept (``best_by_round``), for curves of regret against budget.

The cache holds one JSON line per (contender, task, mode, seed), with the digests of the code
of ours that the run imported (:func:`benchmarks.quality.cached_runs`); it is kept in the
repository, so a run stopped anywhere, even in a fresh clone, goes on where it stopped.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from . import bayesmark_tasks
from .quality import available, cached_runs, run_cache, run_missing

HERE = Path(__file__).resolve().parent
CACHE_DIRECTORY = HERE / "results" / "peers-runs"
VENV_DIRECTORY = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / \
    "emews-benchmarks" / "peers"
OPTUNA = {"optuna TPE": "tpe", "optuna GP": "gp", "optuna CMA-ES": "cmaes"}
# A peer in a virtualenv of its own: (peer_server's name for it, what pip installs).
VENV_PEERS = {"SMAC3 HPO": ("smac", ("smac==2.4.1",))}
REFERENCE = "random"
PRELOAD = ("numpy", "scipy.optimize", "sklearn.model_selection", "sklearn.ensemble", "optuna")


# --- peers in virtualenvs of their own -----------------------------------------------------------

def venv_python(name, directory=VENV_DIRECTORY):
    """The Python of peer ``name``'s virtualenv under ``directory``."""
    return Path(directory) / VENV_PEERS[name][0] / "bin" / "python"


def install(name, directory=VENV_DIRECTORY):
    """Create peer ``name``'s virtualenv and install it (once: a finished install leaves
    ``installed.json`` with what it installed); return why it failed, or None."""
    server, requirements = VENV_PEERS[name]
    root = Path(directory) / server
    marker = root / "installed.json"
    if marker.is_file() and json.loads(marker.read_text()) == list(requirements):
        return None
    print(f"[peers] installing {name} ({' '.join(requirements)}) in {root}", flush=True)
    for command in ([sys.executable, "-m", "venv", "--clear", str(root)],
                    [str(root / "bin" / "python"), "-m", "pip", "install", "-q",
                     *requirements]):
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            return f"`{' '.join(command[-len(requirements) - 3:])}` failed: {last}"
    marker.write_text(json.dumps(list(requirements)))
    return None


def unavailable_here(venv_directory, may_install):
    """``unavailable(contender)`` for :func:`benchmarks.quality.available`: a peer of its own
    virtualenv is installed there first when ``may_install``."""
    from .quality_runs import unavailable

    def why(name):
        if name not in VENV_PEERS:
            return unavailable(name)
        if may_install:
            return install(name, venv_directory)
        if not (Path(venv_directory) / VENV_PEERS[name][0] / "installed.json").is_file():
            return f"not installed in {venv_directory} (python -m benchmarks peers installs it)"
        return None

    return why


class VenvPeer:
    """A peer in its own virtualenv, driven over :mod:`benchmarks.peer_server`'s JSON lines."""

    def __init__(self, name, space, seed, budget, venv_directory):
        from . import peer_server

        self.space, self.name = space, name
        self.log = tempfile.TemporaryFile("w+")      # what the peer prints
        self.process = subprocess.Popen(
            [str(venv_python(name, venv_directory)), peer_server.__file__, VENV_PEERS[name][0],
             str(seed), str(budget)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.log, text=True)
        self._call({"space": [p for p in space.to_json() if p["type"] != "constant"]})

    def _call(self, request):
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            self.log.seek(0)
            raise RuntimeError(f"{self.name}'s process exited with status "
                               f"{self.process.wait()}:\n{self.log.read()[-4000:]}")
        return json.loads(line)

    def ask(self, n):
        return [self.space.point([p[q.name] for q in self.space.free])
                for p in self._call({"ask": n})["points"]]

    def tell(self, points, values):
        free = [q.name for q in self.space.free]
        self._call({"tell": [[{k: p[k] for k in free}, v if np.isfinite(v) else None]
                             for p, v in zip(points, values)]})

    def close(self):
        self.process.stdin.close()
        self.process.wait()
        self.log.close()


# --- one run -------------------------------------------------------------------------------------

def run_ours(algorithm, task, mode, seed, budget, batch):
    """Our ``algorithm`` on ``task`` through ``emews.run`` (in-process pool, ``batch``
    workers): the values in the order the points were proposed (failures as inf)."""
    import emews

    with tempfile.TemporaryDirectory(prefix="emews-peers-") as work:
        space = Path(work) / "space.json"
        space.write_text(json.dumps(bayesmark_tasks.space(task).to_json()))
        config = {"system": {"pool": "inprocess", "procs": batch + 1, "progress_interval": 0.0},
                  "study": {"name": "peers", "space": str(space), "budget": budget,
                            "seed": seed, "algorithm": algorithm, "mode": mode, "impl": "py",
                            "objective": "benchmarks.bayesmark_tasks:objective",
                            "isolate": False, "data_dir": work}}
        result = emews.run(config, quiet=True)
        study = emews.load(result.expdir)
        values = {row["id"]: row["result"] for row in study.done}
        ids = sorted([*values, *study.failed])
    return [values.get(i, float("inf")) for i in ids]


def run_peer(name, task, mode, seed, budget, batch, venv_directory):
    """A peer on ``task`` on its own ask/tell interface, driven by the quality part's loop."""
    from .quality_runs import OptunaPeer, evaluate

    space = bayesmark_tasks.space(task)
    searcher = (OptunaPeer(OPTUNA[name], space, seed, budget) if name in OPTUNA
                else VenvPeer(name, space, seed, budget, venv_directory))
    try:
        return evaluate(searcher, bayesmark_tasks.objective, budget, mode, batch, seed)
    finally:
        if isinstance(searcher, VenvPeer):
            searcher.close()


def one_run(task, name, mode, seed, rounds, batch, ours, venv_directory):
    """One contender on one task in one mode with one seed: the best value after each round
    (``best_by_round``) and the digests of the code it ran (``code``)."""
    from .quality_runs import code_digests

    started, budget = time.perf_counter(), rounds * batch
    if name in ours:
        values = run_ours(name, task, mode, seed, budget, batch)
    else:
        values = run_peer(name, task, mode, seed, budget, batch, venv_directory)
    finite = [v if v is not None and np.isfinite(v) else np.inf for v in values]
    best = np.minimum.accumulate(finite) if finite else np.array([np.inf])
    by_round = [float(best[min(len(best), (r + 1) * batch) - 1]) for r in range(rounds)]
    return {"problem": task, "contender": name, "mode": mode, "seed": seed,
            "evaluations": len(values), "best_by_round": by_round,
            "seconds": time.perf_counter() - started, "code": code_digests()}


# --- the part ------------------------------------------------------------------------------------

def run(sizes, jobs=None, cache_directory=CACHE_DIRECTORY, venv_directory=VENV_DIRECTORY,
        install=True):
    """Every contender on every task in every mode with every seed, the runs in the cache
    taken from it; normalized scores per task, task group and mode. A peer of its own
    virtualenv is installed first when ``install`` (else it must be there already); one that
    cannot be is reported as missing."""
    ours = list(sizes.peers_ours)
    contenders, missing = available([*ours, *sizes.peers_peers],
                                    unavailable_here(venv_directory, install), "peers")
    runs = [(t, c, m, s) for t in sizes.peers_tasks for c in contenders
            for m in sizes.peers_modes for s in range(sizes.peers_seeds)]
    cache = run_cache(sizes, cache_directory, [sizes.peers_rounds, sizes.peers_batch,
                                               {n: VENV_PEERS[n][1] for n in VENV_PEERS}])
    known = cached_runs(cache)
    results = [{k: v for k, v in known[r].items() if k != "code"} for r in runs if r in known]
    print(f"[peers] {len(results)} of {len(runs)} runs from the cache {cache}", flush=True)
    todo = [(*r, sizes.peers_rounds, sizes.peers_batch, tuple(ours), str(venv_directory))
            for r in runs if r not in known]
    results += run_missing(one_run, todo, cache, jobs, "peers", PRELOAD)
    scores = normalized_scores(results)
    return {"rounds": sizes.peers_rounds, "batch": sizes.peers_batch,
            "seeds": sizes.peers_seeds, "modes": list(sizes.peers_modes),
            "tasks": list(sizes.peers_tasks), "contenders": contenders,
            "ours": [c for c in ours if c in contenders], "missing": missing,
            "versions": {n: VENV_PEERS[n][1] for n in VENV_PEERS},
            "summary": summarize(scores), "runs": results}


def normalized_scores(results):
    """``{mode: {task: {contender: {seed: score}}}}``, Bayesmark's normalized score of each
    run's best value at the budget: random search's mean (in that mode) scores 0, the best
    value any run of the task found 100."""
    finals = [(r["mode"], r["problem"], r["contender"], r["seed"], r["best_by_round"][-1])
              for r in results]
    best = {}
    for _, task, _, _, value in finals:
        best[task] = min(best.get(task, np.inf), value)
    reference = {}
    for mode, task, name, _, value in finals:
        if name == REFERENCE:
            reference.setdefault((mode, task), []).append(value)
    scores = {}
    for mode, task, name, seed, value in finals:
        if (mode, task) not in reference:
            continue
        mean = float(np.mean(reference[mode, task]))
        span = mean - best[task]
        scores.setdefault(mode, {}).setdefault(task, {}).setdefault(name, {})[seed] = (
            100.0 * (mean - value) / span if span > 0 else 0.0)
    return scores


def summarize(scores):
    """Per mode: each contender's mean normalized score per task, per task group and overall."""
    summary = {}
    for mode, by_task in scores.items():
        table = {task: {c: float(np.mean(list(s.values()))) for c, s in by.items()}
                 for task, by in by_task.items()}
        groups = {}
        for task in table:
            groups.setdefault(bayesmark_tasks.group(task), []).append(task)
        groups["all"] = list(table)
        contenders = list(dict.fromkeys(c for by in table.values() for c in by))
        summary[mode] = {"tasks": table, "groups": {
            g: {c: float(np.mean([table[t][c] for t in tasks if c in table[t]]))
                for c in contenders} for g, tasks in groups.items()}}
    return summary


def markdown(part):
    """The part's section of the README: the normalized score per mode and task group."""
    from .quality import _table

    title = (f"### 13. Peers on Bayesmark's tasks: {len(part['tasks'])} tasks, "
             f"{part['rounds']} rounds of {part['batch']}, {part['seeds']} seeds; normalized "
             f"score (0: random search's mean, 100: the best any run found; higher is better)")
    sections = [title]
    groups = ("classifiers", "regressors", "all")
    for mode in part["modes"]:
        summary = part["summary"].get(mode, {"groups": {}})
        rows = [(c + (" (ours)" if c in part["ours"] else ""),
                 *(f"{summary['groups'][g][c]:.1f}" if c in summary["groups"].get(g, {})
                   else "–" for g in groups)) for c in part["contenders"]]
        rows += [(f"{c} (missing)", *("–" for _ in groups)) for c in part["missing"]]
        sections.append(f"#### {mode}\n\n" + _table(("contender", *groups[:-1], "mean"), rows))
    missing = "; ".join(f"{c}: {why}" for c, why in part["missing"].items())
    peers = ", ".join(f"{n} ({' '.join(v)})" for n, v in part["versions"].items())
    sections.append(f"Tasks: {', '.join(part['tasks'])}. Peers of their own virtualenvs: "
                    f"{peers}." + (f" Missing: {missing}." if missing else ""))
    return "\n\n".join(sections)
