"""Part 1, dispatch overhead: no-op tasks through emews and through its peers, in one run.

Every contender runs the same no-op (:func:`benchmarks.objectives.echo`) on the same number of
tasks with 3 workers:

* ``emews``: the whole path, ME thread -> queue -> MPI master -> worker -> back, as
  ``emews.run`` under ``mpiexec -n 4`` with ``impl = "echo"``, the random algorithm (timed by
  :class:`benchmarks.timed.Timed`) and async mode; once with the default one slot per worker
  and once with ``[system].slots_per_worker`` prefetch;
* the floors (:mod:`benchmarks.floors`), at the same rank count and tasks in flight per
  worker as emews (1, and emews' prefetch): the spinning bare mpi4py loop (the physical
  reference), the bare loop that waits as emews waits, without spinning, and the bare loop of
  emews' inversion-of-control shape (ME thread, queues, batches). The targets count against the
  last two; the ping-pong of :mod:`benchmarks.floors` gives the MPI round trip itself;
* ``mpi4py.futures`` and ``concurrent.futures.ProcessPoolExecutor``: one ``submit`` per task
  with as many tasks in flight as workers, and ``map`` with chunks of 100.

Round trip: from the moment a task is handed out (for emews, returned by the algorithm's ``ask``)
to the moment its result is back where it was asked for. ``map`` has no per-task round trip.

Each MPI contender is a module run under ``mpiexec`` (``python -m benchmarks.dispatch KIND``,
``python -m benchmarks.floors``), its variants one after the other in one launch; it writes
their figures as JSON to the path it is given. The whole set runs ``dispatch_repeats`` times,
the contenders interleaved within each repeat so that the machine's noise hits all alike. Each
contender reports its run with the median throughput, with the min and max of its throughput
and of rank 0's CPU time per task over the repeats; a ratio to a floor comes with its range
(worst: our slowest run against the floor's fastest; best: the other way round).
"""

import argparse
import concurrent.futures as cf
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from . import dispatch_peers, floors
from .common import mpiexec_python, summary
from .objectives import echo

WORKERS = 3
CHUNKSIZE = 100
PREFETCH = 32
FLOOR = "bare mpi4py, spinning, 1 in flight per worker"
SPACE = [{"name": "x", "type": "float", "lower": -1.0, "upper": 1.0}]


def run(sizes):
    """Every contender on ``sizes.dispatch_tasks`` tasks, ``sizes.dispatch_repeats`` times,
    interleaved; the ratios of emews to the floors; the MPI round trip."""
    n = sizes.dispatch_tasks
    in_flight = ("1", str(PREFETCH))
    launches = (
        lambda: _floors("loops", n, [f"{style}:{k}" for k in in_flight
                                     for style in floors.STYLES]),
        lambda: _mpi("emews", n, list(in_flight)),
        lambda: _mpi("futures", n, ["submit", "map"]),
        lambda: {_name("pool", v): process_pool(n, v) for v in ("submit", "map")},
        lambda: dispatch_peers.contenders(n, WORKERS),  # libEnsemble and Dask distributed
    )
    runs, trips = {}, []
    for repeat in range(sizes.dispatch_repeats):
        for launch in launches:
            for name, figures in launch().items():
                print(f"[dispatch] {name}: {figures['tasks_per_s']:,.0f} tasks/s", flush=True)
                runs.setdefault(name, []).append(figures)
        trips.append(_floors("pingpong", sizes.dispatch_pingpongs, ["spin", "wait"], ranks=2))
    contenders = {name: median_run(figures) for name, figures in runs.items()}
    for entry in contenders.values():
        entry["ratio_to_bare"] = entry["tasks_per_s"] / contenders[FLOOR]["tasks_per_s"]
    for k in in_flight:
        ours = f"emews whole path, slots_per_worker={k}"
        contenders[ours]["floors"] = {
            style: ratio(runs[ours], runs[floors.name(f"{style}:{k}")])
            for style in ("wait", "ioc")}
    pingpong = {style: float(np.median([t[style]["round_trip_us_p50"] for t in trips]))
                for style in ("spin", "wait")}
    return {"tasks": n, "workers": WORKERS, "repeats": sizes.dispatch_repeats,
            "contenders": contenders, "pingpong_us": pingpong}


def median_run(runs):
    """The run with the median throughput, with every run's throughput and rank 0's CPU per
    task beside it, and their min and max."""
    ordered = sorted(runs, key=lambda r: r["tasks_per_s"])
    found = {**ordered[len(ordered) // 2], "tasks_per_s_all": [r["tasks_per_s"] for r in runs]}
    for key in ("tasks_per_s", "rank0_cpu_us_per_task"):
        values = [r[key] for r in runs if r.get(key) is not None]
        if values:
            found.update({f"{key}_min": min(values), f"{key}_max": max(values)})
    return found


def ratio(ours, floor):
    """Our throughput over the floor's: the ratio of the medians, and its range."""
    a = sorted(r["tasks_per_s"] for r in ours)
    b = sorted(r["tasks_per_s"] for r in floor)
    return {"ratio": float(np.median(a) / np.median(b)), "min": a[0] / b[-1],
            "max": a[-1] / b[0], "repeats": len(a)}


def _name(kind, variant):
    return {"emews": f"emews whole path, slots_per_worker={variant}",
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


def _floors(kind, n, variants, ranks=WORKERS + 1):
    """:mod:`benchmarks.floors`' ``kind`` (``loops`` or ``pingpong``) in one launch."""
    with tempfile.TemporaryDirectory(prefix="emews-bench-") as tmp:
        out = Path(tmp) / "figures.json"
        mpiexec_python(ranks, ["-m", "benchmarks.floors", kind, str(n), str(out), *variants])
        return json.loads(out.read_text())


def _figures(n, seconds, round_trips=None, **extra):
    figures = {"tasks": n, "seconds": seconds, "tasks_per_s": n / seconds, **extra}
    if round_trips is not None and len(round_trips):
        figures.update(summary(np.asarray(round_trips) * 1e6, "round_trip_us"))
    return figures


# --- contenders ----------------------------------------------------------------------------

def process_pool(n, method):
    """``concurrent.futures.ProcessPoolExecutor`` with 3 worker processes."""
    with cf.ProcessPoolExecutor(WORKERS) as executor:
        return _executor(executor, n, method)


def _executor(executor, n, method):
    """``submit`` (as many in flight as workers) or ``map`` in chunks, on a started executor."""
    params = floors.params(n)
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
    parser.add_argument("kind", choices=("futures", "emews"))
    parser.add_argument("n", type=int)
    parser.add_argument("out")
    parser.add_argument("variants", nargs="+", help="emews: slots_per_worker; futures: submit "
                        "or map")
    parser.add_argument("--dir", default=".")
    args = parser.parse_args(argv)
    if args.kind == "futures":
        figures = _futures(args.n, args.variants)
    else:
        figures = {v: _emews(args.n, int(v), args.dir) for v in args.variants}
    if None not in figures.values():  # rank 0
        Path(args.out).write_text(json.dumps(figures))


if __name__ == "__main__":
    sys.exit(main())
