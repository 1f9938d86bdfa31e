"""Part 1, dispatch overhead: no-op tasks through emews and through its peers, in one run.

Every contender runs the same no-op (:func:`benchmarks.objectives.echo`) on the same number of
tasks with 3 workers:

* ``emews``: the whole path, ME thread -> queue -> MPI master -> worker -> back, as
  ``emews.run`` under ``mpiexec -n 4`` with ``impl = "echo"``, the random algorithm (timed by
  :class:`benchmarks.timed.Timed`) and async mode; once with the default one slot per worker
  and once with ``[system].slots_per_worker`` prefetch;
* ``bare mpi4py``: a send/recv master-worker loop (blocking calls), the floor, with one task in
  flight per worker and with as many as emews' prefetch;
* ``mpi4py.futures`` and ``concurrent.futures.ProcessPoolExecutor``: one ``submit`` per task
  with as many tasks in flight as workers, and ``map`` with chunks of 100.

Round trip: from the moment a task is handed out (for emews, returned by the algorithm's ``ask``)
to the moment its result is back where it was asked for. ``map`` has no per-task round trip.

Each MPI contender is this module run under ``mpiexec`` (``python -m benchmarks.dispatch KIND``),
its variants one after the other in one launch; it writes their figures as JSON to the path it
is given. The whole set runs ``dispatch_repeats`` times and each contender reports its run with
the median throughput (the bare loop's blocking calls spin, so on oversubscribed cores its speed
varies from run to run).
"""

import argparse
import concurrent.futures as cf
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from . import dispatch_peers
from .common import mpiexec_python, summary
from .objectives import echo

WORKERS = 3
CHUNKSIZE = 100
PREFETCH = 32
FLOOR = "bare mpi4py, 1 in flight per worker"
SPACE = [{"name": "x", "type": "float", "lower": -1.0, "upper": 1.0}]


def run(sizes):
    """Every contender on ``sizes.dispatch_tasks`` tasks, ``sizes.dispatch_repeats`` times.

    Each contender's figures are those of its run with the median throughput.
    """
    n = sizes.dispatch_tasks
    launches = (
        lambda: _mpi("bare", n, ["1", str(PREFETCH)]),
        lambda: _mpi("emews", n, ["1", str(PREFETCH)]),
        lambda: _mpi("futures", n, ["submit", "map"]),
        lambda: {_name("pool", v): process_pool(n, v) for v in ("submit", "map")},
        lambda: dispatch_peers.contenders(n, WORKERS),  # libEnsemble and Dask distributed
    )
    runs = {}
    for repeat in range(sizes.dispatch_repeats):
        for launch in launches:
            for name, figures in launch().items():
                print(f"[dispatch] {name}: {figures['tasks_per_s']:,.0f} tasks/s", flush=True)
                runs.setdefault(name, []).append(figures)
    contenders = {name: median_run(figures) for name, figures in runs.items()}
    for entry in contenders.values():
        entry["ratio_to_bare"] = entry["tasks_per_s"] / contenders[FLOOR]["tasks_per_s"]
    return {"tasks": n, "workers": WORKERS, "repeats": sizes.dispatch_repeats,
            "contenders": contenders}


def median_run(runs):
    """The run with the median throughput, with every run's throughput beside it."""
    ordered = sorted(runs, key=lambda r: r["tasks_per_s"])
    return {**ordered[len(ordered) // 2], "tasks_per_s_all": [r["tasks_per_s"] for r in runs]}


def _name(kind, variant):
    return {"bare": f"bare mpi4py, {variant} in flight per worker",
            "emews": f"emews whole path, slots_per_worker={variant}",
            "futures": f"mpi4py.futures, {_method(variant)}",
            "pool": f"ProcessPoolExecutor, {_method(variant)}"}[kind]


def _method(variant):
    return "submit" if variant == "submit" else f"map chunksize={CHUNKSIZE}"


def _mpi(kind, n, variants):
    """Run ``kind``'s variants, one after the other, in one ``mpiexec -n 4`` launch."""
    with tempfile.TemporaryDirectory(prefix="emews-bench-") as tmp:
        out = Path(tmp) / "figures.json"
        (Path(tmp) / "space.json").write_text(json.dumps(SPACE))
        module = ["-m", "mpi4py.futures"] if kind == "futures" else []
        mpiexec_python(WORKERS + 1, [*module, "-m", __name__, kind, str(n), str(out),
                                     *variants, "--dir", tmp])
        return {_name(kind, v): figures for v, figures in json.loads(out.read_text()).items()}


def _figures(n, seconds, round_trips=None, **extra):
    figures = {"tasks": n, "seconds": seconds, "tasks_per_s": n / seconds, **extra}
    if round_trips is not None and len(round_trips):
        figures.update(summary(np.asarray(round_trips) * 1e6, "round_trip_us"))
    return figures


# --- contenders ----------------------------------------------------------------------------

def _params(n, seed=0):
    rng = np.random.default_rng(seed)
    return [json.dumps({"x": float(x)}) for x in rng.uniform(-1, 1, n)]


def process_pool(n, method):
    """``concurrent.futures.ProcessPoolExecutor`` with 3 worker processes."""
    with cf.ProcessPoolExecutor(WORKERS) as executor:
        return _executor(executor, n, method)


def _executor(executor, n, method):
    """``submit`` (as many in flight as workers) or ``map`` in chunks, on a started executor."""
    params = _params(n)
    list(executor.map(echo, params[:WORKERS]))  # start the workers before timing
    if method == "map":
        started = time.perf_counter()
        list(executor.map(echo, params, chunksize=CHUNKSIZE))
        return _figures(n, time.perf_counter() - started)
    return _submit_window(executor, params)


def _submit_window(executor, params):
    """One ``submit`` per task, as many in flight as workers; per-task round trips."""
    round_trips = []
    pending = {}
    tasks = iter(params)
    started = time.perf_counter()
    for task in tasks:
        pending[executor.submit(echo, task)] = time.perf_counter()
        if len(pending) < WORKERS:
            continue
        done, _ = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
        now = time.perf_counter()
        for future in done:
            future.result()
            round_trips.append(now - pending.pop(future))
    for future in cf.as_completed(list(pending)):
        future.result()
        round_trips.append(time.perf_counter() - pending.pop(future))
    return _figures(len(params), time.perf_counter() - started, round_trips)


def _bare(n, in_flight):
    """The floor: rank 0 sends tasks with ``send``, ranks 1..3 answer; blocking ``recv``."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    if rank > 0:
        while (task := comm.recv(source=0)) is not None:
            comm.send((task[0], echo(task[1])), dest=0)
        return None
    params = _params(n)
    sent_at = np.zeros(n)
    round_trips = np.zeros(n)
    next_task = 0
    started = time.perf_counter()
    for _ in range(in_flight):
        for worker in range(1, comm.Get_size()):
            if next_task < n:
                sent_at[next_task] = time.perf_counter()
                comm.send((next_task, params[next_task]), dest=worker)
                next_task += 1
    status = MPI.Status()
    for _ in range(n):
        index, _value = comm.recv(source=MPI.ANY_SOURCE, status=status)
        round_trips[index] = time.perf_counter() - sent_at[index]
        if next_task < n:
            sent_at[next_task] = time.perf_counter()
            comm.send((next_task, params[next_task]), dest=status.Get_source())
            next_task += 1
    seconds = time.perf_counter() - started
    for worker in range(1, comm.Get_size()):
        comm.send(None, dest=worker)
    return _figures(n, seconds, round_trips, in_flight_per_worker=in_flight)


def _futures(n, methods):
    """``mpi4py.futures.MPIPoolExecutor`` on the ranks ``python -m mpi4py.futures`` gave it."""
    from mpi4py.futures import MPIPoolExecutor

    with MPIPoolExecutor() as executor:
        return {method: _executor(executor, n, method) for method in methods}


def _emews(n, slots_per_worker, directory):
    """The whole path: ``emews.run`` under mpiexec, echo tasks, random search, async mode."""
    import emews

    from .timed import Timed

    space = Path(directory) / "space.json"
    result = emews.run({
        "system": {"procs": WORKERS + 1, "slots_per_worker": slots_per_worker,
                   "progress_interval": 3600.0},
        "study": {"algorithm": "benchmarks.timed:Timed", "space": str(space), "budget": n,
                  "impl": "echo", "mode": "async", "seed": 0, "data_dir": str(directory),
                  "name": "dispatch"},
        "algorithm": {"inner": "random"},
    })
    if result is None:  # a worker rank
        return None
    timed = Timed.latest
    return _figures(result.evaluations, timed.last_tell - timed.first_ask, timed.round_trips,
                    slots_per_worker=slots_per_worker,
                    rank0_cpu_us_per_task=(timed.cpu_last_tell - timed.cpu_first_ask)
                    / result.evaluations * 1e6,
                    ask_calls=len(timed.ask_seconds),
                    points_per_message=result.evaluations / len(timed.ask_seconds))


def main(argv=None):
    """Run one MPI contender's variants (under mpiexec); write their figures to OUT as JSON."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("kind", choices=("bare", "futures", "emews"))
    parser.add_argument("n", type=int)
    parser.add_argument("out")
    parser.add_argument("variants", nargs="+", help="bare: tasks in flight per worker; "
                        "emews: slots_per_worker; futures: submit or map")
    parser.add_argument("--dir", default=".")
    args = parser.parse_args(argv)
    if args.kind == "futures":
        figures = _futures(args.n, args.variants)
    elif args.kind == "bare":
        figures = {v: _bare(args.n, int(v)) for v in args.variants}
    else:
        figures = {v: _emews(args.n, int(v), args.dir) for v in args.variants}
    if None not in figures.values():  # rank 0
        Path(args.out).write_text(json.dumps(figures))


if __name__ == "__main__":
    sys.exit(main())
