"""One run of the peers part (:mod:`benchmarks.peers`): ours through ``emews.run``, Optuna's
samplers on their ask/tell interface, a peer of its own virtualenv over
:mod:`benchmarks.peer_server`; and those virtualenvs, made on first use.

A run happens in a fresh process that imports only this module and what it needs, so that its
cached outcome depends on exactly this code (:func:`benchmarks.quality_runs.code_digests`): the
part's statistics and tables can change without running anything again.
"""

import heapq
import json
import os
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from . import bayesmark_tasks, lc_tables

VENV_DIRECTORY = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / \
    "emews-benchmarks" / "peers"
OPTUNA = {"optuna TPE": "tpe", "optuna GP": "gp", "optuna CMA-ES": "cmaes"}
# HEBO 0.3.6 pins numpy < 1.25 and pymoo == 0.6.0 (no wheel for Python 3.11: pip builds it);
# unpinned, pip backtracks for an hour through old releases of scikit-learn, paramz and
# matplotlib, building each from source. These are releases of its dependencies with wheels
# for Python 3.11 and numpy 1.24 (torch 2.13.0 is its CPU build where that is on disk).
HEBO_PINS = ("numpy==1.24.4", "scipy==1.11.4", "scikit-learn==1.3.2", "pandas==2.0.3",
             "matplotlib==3.7.5", "torch==2.13.0", "GPy==1.13.2", "paramz==0.9.6",
             "catboost==1.2.7", "autograd==1.7.0")
# A peer in a virtualenv of its own (peer_server.py's name for it is the contender's): (its
# virtualenv, what pip installs there). DEHB pins numpy < 2 (ours: 2.x).
VENV_PEERS = {"SMAC3 HPO": ("smac", ("smac==2.4.1",)),
              "SMAC3 MF": ("smac", ("smac==2.4.1",)),
              "DEHB": ("dehb", ("dehb==0.1.2",)),
              "HEBO": ("hebo", ("hebo==0.3.6", *HEBO_PINS)),
              "DeepHyper CBO": ("deephyper", ("deephyper==0.13.2",)),
              "syne-tune ASHA": ("synetune", ("syne-tune==0.16.0",))}
# Peers the issue names that cannot run here, and why (reported as missing).
UNAVAILABLE = {
    **{f"syne-tune {name}": "not in syne-tune 0.16.0, its current release (its schedulers on "
                            "Gaussian processes were removed)"
       for name in ("MOBSTER", "Hyper-Tune", "DyHPO")},
    "syne-tune BO": "syne-tune 0.16.0's BO is BoTorch's (baselines.BOTorch), which needs "
                    "PyTorch; PyPI has no CPU build of torch for Linux: its torch 2.14 pulls "
                    "CUDA 13's NVIDIA libraries and triton, several GB, not installed here"}
# Peers without an asynchronous mode (HEBO proposes a batch, knowing nothing of pending
# points): they run in batch mode there.
BATCH_ONLY = frozenset({"HEBO"})
# Multi-fidelity peers: they run on the tasks with a fidelity only, the tables' (epochs:
# lc_tables.fidelity), and are not applicable to the others.
MULTI_FIDELITY = frozenset({"SMAC3 MF", "DEHB", "syne-tune ASHA"})
# What a multi-fidelity peer's point carries besides its parameters: the epochs to train it
# for, and those it trained before (a continued training: peer_server.SyneTuneAsha).
FIDELITY_KEYS = ("epochs", "resume")
# What a peer's run depends on outside benchmarks/: the space's definition and, for Optuna's
# samplers, its translation into Optuna's distributions. The other files of ours that a peer's
# run imports (emews' package, on the way to those) are not recorded with it, so that a change
# there does not run the peers again: theirs are most of the part's hours.
PEER_INPUTS = ("emews/_space.py", "algorithms/optuna_search.py")
# How long a peer's process may take to answer one request (EMEWS_PEERS_TIMEOUT, seconds).
TIMEOUT = float(os.environ.get("EMEWS_PEERS_TIMEOUT", 900))
INSTALL_TIMEOUT = 3600.0     # seconds for a virtualenv's install; longer, and it is missing


def applicable(contender, task):
    """Whether ``contender`` runs on ``task``: a multi-fidelity peer needs a fidelity."""
    return contender not in MULTI_FIDELITY or task in lc_tables.TASKS


def tasks_of(task):
    """The module of a task's ``space(task)``, ``objective(point)`` and ``group(task)``:
    :mod:`benchmarks.lc_tables` for a learning-curve table's (``lc-NAME``), else
    :mod:`benchmarks.bayesmark_tasks`."""
    return lc_tables if task in lc_tables.TASKS else bayesmark_tasks


# --- peers in virtualenvs of their own -----------------------------------------------------------

def venv_python(name, directory=VENV_DIRECTORY, peers=VENV_PEERS):
    """The Python of peer ``name``'s virtualenv under ``directory`` (``peers``: shaped as
    :data:`VENV_PEERS`)."""
    return Path(directory) / peers[name][0] / "bin" / "python"


def install(name, directory=VENV_DIRECTORY, peers=VENV_PEERS):
    """Create peer ``name``'s virtualenv and install it (once: a finished install leaves
    ``installed.json`` with what it installed); return why it failed (or took longer than
    :data:`INSTALL_TIMEOUT`), or None. ``peers`` (shaped as :data:`VENV_PEERS`) says what it
    installs."""
    server, requirements = peers[name]
    root = Path(directory) / server
    marker = root / "installed.json"
    if marker.is_file() and json.loads(marker.read_text()) == list(requirements):
        return None
    print(f"[peers] installing {name} ({' '.join(requirements)}) in {root}", flush=True)
    for command in ([sys.executable, "-m", "venv", "--clear", str(root)],
                    [str(root / "bin" / "python"), "-m", "pip", "install", "-q",
                     *requirements]):
        shown = " ".join(command[-len(requirements) - 3:])
        try:
            done = subprocess.run(command, capture_output=True, text=True,
                                  timeout=INSTALL_TIMEOUT)
        except subprocess.TimeoutExpired:
            return f"`{shown}` did not finish within {INSTALL_TIMEOUT:g} s"
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            return f"`{shown}` failed: {last}"
    marker.write_text(json.dumps(list(requirements)))
    return None


def unavailable_here(venv_directory, may_install):
    """``unavailable(contender)`` for :func:`benchmarks.quality.available`: a peer of its own
    virtualenv is installed there first when ``may_install``."""
    from .quality_runs import unavailable

    def why(name):
        if name in UNAVAILABLE:
            return UNAVAILABLE[name]
        if name not in VENV_PEERS:
            return unavailable(name)
        if may_install:
            return install(name, venv_directory)
        if not (Path(venv_directory) / VENV_PEERS[name][0] / "installed.json").is_file():
            return f"not installed in {venv_directory} (python -m benchmarks peers installs it)"
        return None

    return why


class PeerTimeout(RuntimeError):
    """A peer's process did not answer a request within :data:`TIMEOUT`."""


class VenvPeer:
    """A peer in its own virtualenv, driven over :mod:`benchmarks.peer_server`'s JSON lines;
    a request not answered within ``timeout`` seconds kills the process and raises
    :class:`PeerTimeout`."""

    def __init__(self, name, space, seed, budget, venv_directory, timeout=TIMEOUT,
                 fidelity=None):
        from . import peer_server

        self.space, self.name, self.timeout = space, name, timeout
        self.log = tempfile.TemporaryFile("w+")      # what the peer prints
        self.process = subprocess.Popen(
            [str(venv_python(name, venv_directory)), peer_server.__file__, name,
             str(seed), str(budget)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.log, text=True)
        self._call({"space": [p for p in space.to_json() if p["type"] != "constant"],
                    **({"fidelity": list(fidelity)} if fidelity else {})})

    def _call(self, request):
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        if not select.select([self.process.stdout], [], [], self.timeout)[0]:
            self.process.kill()
            self.process.wait()
            raise PeerTimeout(f"{self.name} did not answer {next(iter(request))!r} within "
                              f"{self.timeout:g} s (EMEWS_PEERS_TIMEOUT)")
        line = self.process.stdout.readline()
        if not line:
            self.log.seek(0)
            raise RuntimeError(f"{self.name}'s process exited with status "
                               f"{self.process.wait()}:\n{self.log.read()[-4000:]}")
        return json.loads(line)

    def ask(self, n):
        return [{**self.space.point([p[q.name] for q in self.space.free]),
                 **{k: p[k] for k in FIDELITY_KEYS if k in p}}
                for p in self._call({"ask": n})["points"]]

    def tell(self, points, values):
        sent = [q.name for q in self.space.free] + list(FIDELITY_KEYS)
        self._call({"tell": [[{k: p[k] for k in sent if k in p}, v if np.isfinite(v) else None]
                             for p, v in zip(points, values)]})

    def close(self):
        if self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait()
        self.log.close()


# --- one run -------------------------------------------------------------------------------------

def recorded_code(task, ours):
    """The digests a run's line records (:func:`benchmarks.quality_runs.code_digests`): every
    file of ours that this process imported for a run of ``ours``, those of benchmarks/ and
    :data:`PEER_INPUTS` for a peer's; and the table of a table's task."""
    from .quality_runs import code_digests, current_digest

    code = {name: digest for name, digest in code_digests().items()
            if ours or name.startswith("benchmarks/") or name in PEER_INPUTS}
    if task in lc_tables.TASKS:
        table = f"benchmarks/tables/{task.removeprefix('lc-')}.json.gz"
        code[table] = current_digest(table)
    return code


def run_ours(algorithm, task, mode, seed, budget, batch):
    """Our ``algorithm`` on ``task`` through ``emews.run`` with ``batch`` workers: the points
    and their values in the order they were proposed (failures as inf), and the ranks that
    evaluated them (the store's: 0 in-process, the worker ranks on MPI). The sequential and
    batch modes run on the in-process pool, the async mode on a real ``mpiexec`` pool of
    ``batch`` worker ranks (:func:`simulated_order` then charges each evaluation its time on
    the simulated clock)."""
    import emews

    with tempfile.TemporaryDirectory(prefix="emews-peers-") as work:
        space = Path(work) / "space.json"
        space.write_text(json.dumps(tasks_of(task).space(task).to_json()))
        config = {"system": {"pool": "mpi" if mode == "async" else "inprocess",
                             "procs": batch + 1, "progress_interval": 0.0,
                             "python_path": [str(Path(__file__).resolve().parent.parent)]},
                  "study": {"name": "peers", "space": str(space), "budget": budget,
                            "seed": seed, "algorithm": algorithm, "mode": mode, "impl": "py",
                            "objective": f"{tasks_of(task).__name__}:objective",
                            "isolate": False, "data_dir": work}}
        study = emews.load(emews.run(config, quiet=True).expdir)
        done = {row["id"]: row["result"] for row in study.done}
        rows = sorted(study.rows, key=lambda row: row["id"])
    return ([{**row["params"], "task": task} for row in rows],
            [done.get(row["id"], float("inf")) for row in rows],
            sorted({row["rank"] for row in rows if row["rank"] is not None}))


def simulated_order(points, values, workers, seed, seconds=None):
    """``values`` in the order they finish on a simulated clock when ``workers`` workers take
    ``points`` in the order given, each as soon as one is free, an evaluation taking
    ``seconds(point)`` or, when that is None, the time :func:`benchmarks.quality_runs.evaluate`
    draws for it: the async mode's clock, for a run whose points a real pool evaluated."""
    took = (np.random.default_rng([seed, 1]).lognormal(0.0, 1.0, len(points))
            if seconds is None else [seconds(point) for point in points])
    free, finished = [0.0] * workers, []
    for order, duration in enumerate(took):
        start = heapq.heappop(free)
        heapq.heappush(free, start + duration)
        finished.append((start + duration, order))
    return [values[order] for _, order in sorted(finished)]


class EpochBudget:
    """A multi-fidelity searcher (each point carries its ``epochs``, and its ``resume``
    where it continues a training) under a budget of ``epochs`` trained: it is asked for no
    more points once the epochs of those asked reach the budget (the last ask may pass it;
    :func:`best_by_round` counts no evaluation past it). ``told`` keeps, of each evaluation
    told in order, ``(the epochs it reached, the epochs it trained)``."""

    def __init__(self, searcher, epochs):
        self.searcher, self.left, self.told = searcher, epochs, []

    def ask(self, n):
        points = self.searcher.ask(n) if self.left > 0 else []
        self.left -= sum(_trained(point)[1] for point in points)
        return points

    def tell(self, points, values):
        self.told += [_trained(point) for point in points]
        self.searcher.tell(points, values)


def _trained(point):
    return point["epochs"], point["epochs"] - point.get("resume", 0)


def run_peer(name, task, mode, seed, budget, batch, venv_directory):
    """A peer on ``task`` on its own ask/tell interface, driven by the quality part's loop; in
    ``async`` mode an evaluation of a table's task takes its epochs' seconds on the simulated
    clock, another a drawn time. The values in the order they were told, and the epochs of
    each (:attr:`EpochBudget.told`; None but for a multi-fidelity peer, whose budget is
    ``budget`` times the table's epochs)."""
    from .quality_runs import OptunaPeer, evaluate

    space = tasks_of(task).space(task)
    fidelity = lc_tables.fidelity(task) if name in MULTI_FIDELITY else None
    if name in OPTUNA:
        searcher = OptunaPeer(OPTUNA[name], space, seed, budget)
    else:
        searcher = VenvPeer(name, space, seed, budget, venv_directory, fidelity=fidelity)
    seconds = lc_tables.seconds if task in lc_tables.TASKS else None
    driven = EpochBudget(searcher, budget * fidelity[1]) if fidelity else searcher
    try:
        values = evaluate(driven, tasks_of(task).objective,
                          budget * (fidelity[1] if fidelity else 1), mode, batch, seed, seconds)
    finally:
        if isinstance(searcher, VenvPeer):
            searcher.close()
    return values, (driven.told if fidelity else None)


def best_by_round(values, rounds, batch, epochs=None, full=None):
    """The best value after each of ``rounds`` rounds of ``batch`` evaluations, of ``values``
    in the order they were told. A multi-fidelity run's evaluations (``epochs``: ``(reached,
    trained)`` each, :attr:`EpochBudget.told`) cost the share of a whole evaluation (``full``
    epochs) that they trained, and only those that reached ``full`` count for the best (the
    value of a configuration trained whole)."""
    finite = [v if v is not None and np.isfinite(v) else np.inf for v in values]
    cost = np.ones(len(finite)) if epochs is None else np.array(
        [trained for _, trained in epochs]) / full
    if epochs is not None:
        finite = [v if reached == full else np.inf for v, (reached, _) in zip(finite, epochs)]
    spent = np.cumsum(cost)
    best = np.minimum.accumulate([np.inf, *finite])
    return [float(best[np.searchsorted(spent, (r + 1) * batch + 1e-9)]) for r in range(rounds)]


def one_run(task, name, mode, seed, rounds, batch, ours, venv_directory):
    """One contender on one task in one mode with one seed: the best value after each round
    (``best_by_round``, a round being ``batch`` evaluations, or their epochs for a
    multi-fidelity peer: :func:`best_by_round`), the mode it ran in (``ran_as``: a peer of
    :data:`BATCH_ONLY` runs the ``async`` mode in batch mode), the evaluations (and, for a
    multi-fidelity peer, the epochs they trained), the digests of the code it ran and of its
    table (``code``), and for ours the ranks that evaluated (``ranks``); a peer that timed out
    gives ``error`` instead.

    Ours run through ``emews.run``: on the in-process pool in the sequential and batch modes,
    on an ``mpiexec`` pool in the async mode, whose points are then charged their time on the
    simulated clock (:func:`simulated_order`)."""
    started, budget = time.perf_counter(), rounds * batch
    ran_as = "batch" if mode == "async" and name in BATCH_ONLY else mode
    epochs = ranks = None
    try:
        if name in ours:
            points, values, ranks = run_ours(name, task, mode, seed, budget, batch)
            if mode == "async":
                values = simulated_order(points, values, batch, seed,
                                         lc_tables.seconds if task in lc_tables.TASKS else None)
        else:
            values, epochs = run_peer(name, task, ran_as, seed, budget, batch, venv_directory)
    except PeerTimeout as error:
        print(f"[peers] {task} {mode} seed {seed}: {error}", flush=True)
        return {"problem": task, "contender": name, "mode": mode, "seed": seed,
                "error": str(error), "seconds": time.perf_counter() - started,
                "code": recorded_code(task, name in ours)}
    code = recorded_code(task, name in ours)
    full = lc_tables.fidelity(task)[1] if epochs is not None else None
    return {"problem": task, "contender": name, "mode": mode, "seed": seed,
            "ran_as": ran_as, "evaluations": len(values),
            **({"epochs": sum(trained for _, trained in epochs)} if epochs is not None else {}),
            **({"ranks": ranks} if ranks is not None else {}),
            "best_by_round": best_by_round(values, rounds, batch, epochs, full),
            "seconds": time.perf_counter() - started, "code": code}
