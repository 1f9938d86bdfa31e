"""One run of the peers part (:mod:`benchmarks.peers`): ours through ``emews.run``, Optuna's
samplers on their ask/tell interface, a peer of its own virtualenv over
:mod:`benchmarks.peer_server`; and those virtualenvs, made on first use.

A run happens in a fresh process that imports only this module and what it needs, so that its
cached outcome depends on exactly this code (:func:`benchmarks.quality_runs.code_digests`): the
part's statistics and tables can change without running anything again.
"""

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
# A peer in a virtualenv of its own: (peer_server's name for it, what pip installs).
VENV_PEERS = {"SMAC3 HPO": ("smac", ("smac==2.4.1",)),
              "HEBO": ("hebo", ("hebo==0.3.6",)),
              "DeepHyper CBO": ("deephyper", ("deephyper==0.13.2",))}
# Peers without an asynchronous mode (HEBO proposes a batch, knowing nothing of pending
# points): they run in batch mode there.
BATCH_ONLY = frozenset({"HEBO"})
# How long a peer's process may take to answer one request (EMEWS_PEERS_TIMEOUT, seconds).
TIMEOUT = float(os.environ.get("EMEWS_PEERS_TIMEOUT", 900))
INSTALL_TIMEOUT = 3600.0     # seconds for a virtualenv's install; longer, and it is missing
# pip's options for a peer's install: HEBO 0.3.6 pins pymoo 0.6.0, which has no wheel for
# Python 3.11; from source, pip backtracks through matplotlib's releases for tens of minutes
# before it fails. Wheels only, it fails in seconds, and HEBO is reported missing.
PIP_OPTIONS = {"HEBO": ("--only-binary=:all:",)}


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
                     *PIP_OPTIONS.get(name, ()), *requirements]):
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

    def __init__(self, name, space, seed, budget, venv_directory, timeout=TIMEOUT):
        from . import peer_server

        self.space, self.name, self.timeout = space, name, timeout
        self.log = tempfile.TemporaryFile("w+")      # what the peer prints
        self.process = subprocess.Popen(
            [str(venv_python(name, venv_directory)), peer_server.__file__, VENV_PEERS[name][0],
             str(seed), str(budget)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.log, text=True)
        self._call({"space": [p for p in space.to_json() if p["type"] != "constant"]})

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
        return [self.space.point([p[q.name] for q in self.space.free])
                for p in self._call({"ask": n})["points"]]

    def tell(self, points, values):
        free = [q.name for q in self.space.free]
        self._call({"tell": [[{k: p[k] for k in free}, v if np.isfinite(v) else None]
                             for p, v in zip(points, values)]})

    def close(self):
        if self.process.poll() is None:
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
        space.write_text(json.dumps(tasks_of(task).space(task).to_json()))
        config = {"system": {"pool": "inprocess", "procs": batch + 1, "progress_interval": 0.0},
                  "study": {"name": "peers", "space": str(space), "budget": budget,
                            "seed": seed, "algorithm": algorithm, "mode": mode, "impl": "py",
                            "objective": f"{tasks_of(task).__name__}:objective",
                            "isolate": False, "data_dir": work}}
        result = emews.run(config, quiet=True)
        study = emews.load(result.expdir)
        values = {row["id"]: row["result"] for row in study.done}
        ids = sorted([*values, *study.failed])
    return [values.get(i, float("inf")) for i in ids]


def run_peer(name, task, mode, seed, budget, batch, venv_directory, ours=()):
    """A peer on ``task`` on its own ask/tell interface (one of ``ours`` on the ME driver's),
    driven by the quality part's loop; in ``async`` mode an evaluation of a table's task takes
    its epochs' seconds on the simulated clock, another a drawn time."""
    from .quality_runs import OptunaPeer, Ours, evaluate

    space = tasks_of(task).space(task)
    if name in ours:
        searcher = Ours(name, space, seed, budget)
    elif name in OPTUNA:
        searcher = OptunaPeer(OPTUNA[name], space, seed, budget)
    else:
        searcher = VenvPeer(name, space, seed, budget, venv_directory)
    seconds = lc_tables.seconds if task in lc_tables.TASKS else None
    try:
        return evaluate(searcher, tasks_of(task).objective, budget, mode, batch, seed, seconds)
    finally:
        if isinstance(searcher, VenvPeer):
            searcher.close()


def one_run(task, name, mode, seed, rounds, batch, ours, venv_directory):
    """One contender on one task in one mode with one seed: the best value after each round
    (``best_by_round``, a round being ``batch`` evaluations), the mode it ran in (``ran_as``:
    a peer of :data:`BATCH_ONLY` runs the ``async`` mode in batch mode), the digests of the
    code it ran and of its table (``code``); a peer that timed out gives ``error`` instead.

    Ours run through ``emews.run`` in the sequential and batch modes, and on the ME driver's
    ``Search`` in the async mode (simulated clock, as every contender there)."""
    from .quality_runs import code_digests, current_digest

    started, budget = time.perf_counter(), rounds * batch
    ran_as = "batch" if mode == "async" and name in BATCH_ONLY else mode
    try:
        if name in ours and mode != "async":
            values = run_ours(name, task, mode, seed, budget, batch)
        else:
            values = run_peer(name, task, ran_as, seed, budget, batch, venv_directory, ours)
    except PeerTimeout as error:
        print(f"[peers] {task} {mode} seed {seed}: {error}", flush=True)
        return {"problem": task, "contender": name, "mode": mode, "seed": seed,
                "error": str(error), "seconds": time.perf_counter() - started,
                "code": code_digests()}
    code = code_digests()
    if task in lc_tables.TASKS:
        table = f"benchmarks/tables/{task.removeprefix('lc-')}.json.gz"
        code[table] = current_digest(table)
    finite = [v if v is not None and np.isfinite(v) else np.inf for v in values]
    best = np.minimum.accumulate(finite) if finite else np.array([np.inf])
    by_round = [float(best[min(len(best), (r + 1) * batch) - 1]) for r in range(rounds)]
    return {"problem": task, "contender": name, "mode": mode, "seed": seed,
            "ran_as": ran_as, "evaluations": len(values), "best_by_round": by_round,
            "seconds": time.perf_counter() - started, "code": code}
