"""One run of the peers part (:mod:`benchmarks.peers`): ours through ``emews.run``, Optuna's
samplers on their ask/tell interface, a peer of its own virtualenv over
:mod:`benchmarks.peer_server`; and those virtualenvs, made on first use.

A run happens in a fresh process that imports only this module and what it needs, so that its
cached outcome depends on exactly this code (:func:`benchmarks.quality_runs.code_digests`): the
part's statistics and tables can change without running anything again.
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

VENV_DIRECTORY = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / \
    "emews-benchmarks" / "peers"
OPTUNA = {"optuna TPE": "tpe", "optuna GP": "gp", "optuna CMA-ES": "cmaes"}
# A peer in a virtualenv of its own: (peer_server's name for it, what pip installs).
VENV_PEERS = {"SMAC3 HPO": ("smac", ("smac==2.4.1",))}


# --- peers in virtualenvs of their own -----------------------------------------------------------

def venv_python(name, directory=VENV_DIRECTORY, peers=VENV_PEERS):
    """The Python of peer ``name``'s virtualenv under ``directory`` (``peers``: shaped as
    :data:`VENV_PEERS`)."""
    return Path(directory) / peers[name][0] / "bin" / "python"


def install(name, directory=VENV_DIRECTORY, peers=VENV_PEERS):
    """Create peer ``name``'s virtualenv and install it (once: a finished install leaves
    ``installed.json`` with what it installed); return why it failed, or None. ``peers``
    (shaped as :data:`VENV_PEERS`) says what it installs."""
    server, requirements = peers[name]
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
