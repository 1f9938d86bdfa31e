"""Utilization peers: the sleeping tasks of part 2 scheduled by libEnsemble and by Optuna.

The same tasks as :mod:`benchmarks.utilization` (:mod:`benchmarks.utilization_tasks`: six
floats in [0, 1], each sleeping a lognormal time, median 1 s, drawn from a hash of its point,
and returning Hartmann-6), the same worker count, budget and time limit, asynchronous:

* ``libEnsemble``: ``libE`` with ``local`` comms, a persistent uniform generator on the manager
  with ``async_return`` (a new point for each result), one sim worker per emews worker;
* ``Optuna``: ``study.optimize(n_jobs=workers)``, one thread per worker (a sleeping thread
  holds no GIL), with TPE and with random sampling.

Each peer runs in a fresh Python process. A task is queued when its point is handed out
(libEnsemble: the generator returned it; Optuna: the objective was entered, so the sampler's
time counts as idle), started when the sleep starts and finished when it ends; utilization is
computed from these as for emews (:func:`benchmarks.common.utilization`). Optuna's proposal
latency is the time its ``suggest`` calls took, its ``tell`` the time from the objective's
return to the trial's callback; libEnsemble's generator runs on its own thread, so it has none.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from .common import REPO, summary, utilization
from .utilization_tasks import duration, value

NAMES = [f"x{i}" for i in range(1, 7)]
PEERS = ("libensemble", "optuna TPE", "optuna random")
MISSING = "{0} is not installed: pip install 'emews-hpo[bench]' brings it"


def rows(sizes):
    """Every peer with ``sizes.utilization_workers`` workers: a list of utilization rows."""
    return [_launch(peer, sizes.utilization_workers, sizes.utilization_tasks,
                    sizes.utilization_max_time) for peer in PEERS]


def _launch(peer, workers, tasks, max_time):
    print(f"[utilization] peer {peer}, {workers} workers", flush=True)
    with tempfile.TemporaryDirectory(prefix="emews-bench-") as tmp:
        out = Path(tmp) / "figures.json"
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
               "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO),
                                                           os.environ.get("PYTHONPATH")]))}
        command = [sys.executable, "-m", __name__, peer, str(workers), str(tasks),
                   str(max_time), str(out)]
        done = subprocess.run(command, cwd=tmp, env=env, capture_output=True, text=True,
                              timeout=max_time + 600)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} exited with status {done.returncode}:\n"
                               f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
        return json.loads(out.read_text())


def row(algorithm, workers, intervals, stop_reason, ask_seconds=(), tell_seconds=()):
    """A row of the utilization table, with the columns emews' rows have."""
    found = {"algorithm": algorithm, "plugin": None, "mode": "async", "workers": workers,
             "evaluations": len(intervals), "stop_reason": stop_reason,
             **utilization(intervals, workers), "ask_calls": len(ask_seconds) or None,
             "ask_total_s": float(np.sum(ask_seconds)) if len(ask_seconds) else None,
             "tell_total_s": float(np.sum(tell_seconds)) if len(tell_seconds) else None}
    for name, seconds in (("ask_ms", ask_seconds), ("tell_ms", tell_seconds)):
        found.update(summary(np.asarray(seconds) * 1e3, name) if len(seconds) else
                     {f"{name}_{s}": None for s in ("p50", "p99", "mean")})
    return found


# --- libEnsemble ---------------------------------------------------------------------------

def sleep_sim(H, persis_info, sim_specs, libE_info):
    """libEnsemble sim function: each row sleeps its point's lognormal duration."""
    out = np.zeros(len(H), dtype=sim_specs["out"])
    for i, x in enumerate(H["x"]):
        params = dict(zip(NAMES, map(float, x)))
        time.sleep(duration(params))
        out["f"][i] = value(params)
    return out, persis_info


def libensemble(workers, tasks, max_time):
    """``libE``: persistent uniform generator on the manager, async return."""
    try:
        from libensemble.alloc_funcs.start_only_persistent import only_persistent_gens
        from libensemble.gen_funcs.persistent_sampling import persistent_uniform
        from libensemble.libE import libE
        from libensemble.tools import add_unique_random_streams
    except ImportError:
        sys.exit(MISSING.format("libEnsemble"))

    sim_specs = {"sim_f": sleep_sim, "in": ["x"], "out": [("f", float)]}
    gen_specs = {"gen_f": persistent_uniform, "persis_in": ["f", "x", "sim_id"],
                 "out": [("x", float, (len(NAMES),))],
                 "user": {"initial_batch_size": workers, "lb": np.zeros(len(NAMES)),
                          "ub": np.ones(len(NAMES))}}
    alloc_specs = {"alloc_f": only_persistent_gens, "user": {"async_return": True}}
    libE_specs = {"comms": "local", "nworkers": workers, "gen_on_manager": True,
                  "disable_log_files": True}
    persis_info = add_unique_random_streams({}, workers + 1, seed=0)
    H, _, flag = libE(sim_specs, gen_specs, {"sim_max": tasks, "wallclock_max": max_time},
                      persis_info, alloc_specs, libE_specs)
    done = H[H["sim_ended"]]
    intervals = list(zip(done["gen_ended_time"], done["sim_started_time"],
                         done["sim_ended_time"]))
    return row("libEnsemble persistent_uniform", workers, intervals,
               "budget" if len(done) >= tasks else f"libE flag {flag}")


# --- Optuna --------------------------------------------------------------------------------

def optuna_threads(workers, tasks, max_time, sampler):
    """``study.optimize(n_jobs=workers)`` with ``sampler`` ("TPE" or "random"), seed 0."""
    try:
        import optuna
    except ImportError:
        sys.exit(MISSING.format("Optuna"))

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    samplers = {"TPE": optuna.samplers.TPESampler, "random": optuna.samplers.RandomSampler}
    study = optuna.create_study(sampler=samplers[sampler](seed=0))
    intervals, asks, tells, returned = [], [], [], {}
    lock = threading.Lock()

    def objective(trial):
        entered = time.perf_counter()
        params = {name: trial.suggest_float(name, 0.0, 1.0) for name in NAMES}
        started = time.perf_counter()
        time.sleep(duration(params))
        finished = time.perf_counter()
        with lock:
            intervals.append((entered, started, finished))
            asks.append(started - entered)
            returned[trial.number] = finished
        return value(params)

    def told(study, trial):
        now = time.perf_counter()
        with lock:
            tells.append(now - returned.pop(trial.number))

    study.optimize(objective, n_trials=tasks, n_jobs=workers, timeout=max_time,
                   callbacks=[told])
    return row(f"optuna {sampler} (n_jobs threads)", workers, intervals,
               "budget" if len(intervals) >= tasks else "max_time", asks, tells)


def main(argv=None):
    """Run one peer (in its own process); write its utilization row to OUT as JSON."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("peer", choices=PEERS)
    parser.add_argument("workers", type=int)
    parser.add_argument("tasks", type=int)
    parser.add_argument("max_time", type=float)
    parser.add_argument("out")
    args = parser.parse_args(argv)
    if args.peer == "libensemble":
        found = libensemble(args.workers, args.tasks, args.max_time)
    else:
        found = optuna_threads(args.workers, args.tasks, args.max_time,
                               args.peer.removeprefix("optuna "))
    Path(args.out).write_text(json.dumps(found))


if __name__ == "__main__":
    sys.exit(main())
