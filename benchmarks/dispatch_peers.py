"""Dispatch peers: the no-op tasks of part 1 through libEnsemble and Dask distributed.

The tools a user would pick instead of emews, each at the worker count of the emews path and
with its defaults for one node:

* ``libEnsemble``: ``libE`` with its ``local`` comms (worker processes; its default on one
  node), a persistent generator on the manager (``gen_on_manager``:
  ``persistent_uniform``, results returned as they come, ``async_return``) that keeps one
  point in flight per worker, and a sim function that does the no-op;
* ``Dask distributed``: a ``LocalCluster`` of single-threaded worker processes, one ``submit``
  per task with as many in flight as workers, and ``Client.map`` over every task at once.

Each peer runs in a fresh Python process (``python -m benchmarks.dispatch_peers KIND ...``),
from a temporary directory (libEnsemble writes its logs there), and reports the figures of the
other contenders: throughput, per-task round trip (libEnsemble: from the generator handing a
point out to its result reaching the generator; Dask: ``submit`` to result) and the CPU time of
the process that dispatches (libEnsemble's manager with its generator thread, Dask's client
with the scheduler) per task, start-up included.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from .common import REPO, summary
from .objectives import echo

MISSING = "{0} is not installed: pip install 'emews-hpo[bench]' brings it (and Dask)"


def contenders(n, workers):
    """Every peer on ``n`` no-op tasks with ``workers`` workers: ``{contender: figures}``."""
    figures = {}
    for kind in ("libensemble", "dask"):
        figures.update(_launch(kind, n, workers))
    return figures


def _launch(kind, n, workers):
    with tempfile.TemporaryDirectory(prefix="emews-bench-") as tmp:
        out = Path(tmp) / "figures.json"
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
               "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO),
                                                           os.environ.get("PYTHONPATH")]))}
        command = [sys.executable, "-m", __name__, kind, str(n), str(workers), str(out)]
        done = subprocess.run(command, cwd=tmp, env=env, capture_output=True, text=True,
                              timeout=1800)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} exited with status {done.returncode}:\n"
                               f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
        return json.loads(out.read_text())


def figures(n, seconds, cpu_seconds, round_trips=()):
    """Throughput, rank 0's CPU per task and (when given) round-trip percentiles in µs."""
    found = {"tasks": n, "seconds": seconds, "tasks_per_s": n / seconds,
             "rank0_cpu_us_per_task": cpu_seconds / n * 1e6}
    if len(round_trips):
        found.update(summary(np.asarray(round_trips) * 1e6, "round_trip_us"))
    return found


# --- libEnsemble ---------------------------------------------------------------------------

def noop_sim(H, persis_info, sim_specs, libE_info):
    """libEnsemble sim function: the no-op task (:func:`benchmarks.objectives.echo`) per row."""
    out = np.zeros(len(H), dtype=sim_specs["out"])
    out["f"] = [echo(json.dumps({"x": float(x[0])})) for x in H["x"]]
    return out, persis_info


def libensemble(n, workers):
    """``libE``: persistent uniform generator on the manager, async return, ``workers`` sims."""
    try:
        from libensemble.alloc_funcs.start_only_persistent import only_persistent_gens
        from libensemble.gen_funcs.persistent_sampling import persistent_uniform
        from libensemble.libE import libE
        from libensemble.tools import add_unique_random_streams
    except ImportError:
        sys.exit(MISSING.format("libEnsemble"))

    sim_specs = {"sim_f": noop_sim, "in": ["x"], "out": [("f", float)]}
    gen_specs = {"gen_f": persistent_uniform, "persis_in": ["f", "x", "sim_id"],
                 "out": [("x", float, (1,))],
                 "user": {"initial_batch_size": workers, "lb": np.array([-1.0]),
                          "ub": np.array([1.0])}}
    alloc_specs = {"alloc_f": only_persistent_gens, "user": {"async_return": True}}
    libE_specs = {"comms": "local", "nworkers": workers, "gen_on_manager": True,
                  "disable_log_files": True}
    persis_info = add_unique_random_streams({}, workers + 1, seed=0)
    cpu = time.process_time()
    H, _, flag = libE(sim_specs, gen_specs, {"sim_max": n}, persis_info, alloc_specs,
                      libE_specs)
    cpu = time.process_time() - cpu
    if flag != 0:
        sys.exit(f"libEnsemble: libE returned flag {flag}")
    done = H[H["sim_ended"]]
    begin, end = done["gen_ended_time"].min(), done["sim_ended_time"].max()
    informed = done["gen_informed_time"]
    told = np.isfinite(informed) & (informed > 0)
    return {"libEnsemble, persistent generator, async return": figures(
        len(done), end - begin, cpu, informed[told] - done["gen_ended_time"][told])}


# --- Dask distributed ----------------------------------------------------------------------

def dask(n, workers):
    """A ``LocalCluster`` of ``workers`` single-threaded processes: ``submit``, then ``map``."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        sys.exit(MISSING.format("Dask distributed"))

    params = [json.dumps({"x": float(x)}) for x in np.random.default_rng(0).uniform(-1, 1, n)]
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        client.gather(client.map(echo, params[:workers], pure=False))  # start the workers
        found = {"Dask distributed, submit": _dask_submit(client, params, workers)}
        cpu, started = time.process_time(), time.perf_counter()
        client.gather(client.map(echo, params))
        found["Dask distributed, map"] = figures(n, time.perf_counter() - started,
                                                 time.process_time() - cpu)
    return found


def _dask_submit(client, params, workers):
    """One ``submit`` per task, ``workers`` in flight; round trips from submit to result."""
    from distributed import as_completed

    tasks = iter(params)
    submitted, round_trips = {}, []
    cpu, started = time.process_time(), time.perf_counter()
    window = as_completed()
    for task in tasks:
        future = client.submit(echo, task, pure=False)
        submitted[future.key] = time.perf_counter()
        window.add(future)
        if window.count() < workers:
            continue
        done = next(window)
        done.result()
        round_trips.append(time.perf_counter() - submitted.pop(done.key))
    for done in window:
        done.result()
        round_trips.append(time.perf_counter() - submitted.pop(done.key))
    return figures(len(params), time.perf_counter() - started, time.process_time() - cpu,
                   round_trips)


def main(argv=None):
    """Run one peer (in its own process); write its figures to OUT as JSON."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("kind", choices=("libensemble", "dask"))
    parser.add_argument("n", type=int)
    parser.add_argument("workers", type=int)
    parser.add_argument("out")
    args = parser.parse_args(argv)
    peer = {"libensemble": libensemble, "dask": dask}[args.kind]
    Path(args.out).write_text(json.dumps(peer(args.n, args.workers)))


if __name__ == "__main__":
    sys.exit(main())
