"""The floors of part 1: bare mpi4py master/worker loops, and the MPI round trip itself.

Run under ``mpiexec`` (``python -m benchmarks.floors KIND N OUT VARIANT...``); rank 0 writes the
figures of every variant, one after the other in one launch, as JSON to OUT. A variant is
``STYLE:IN_FLIGHT`` (tasks in flight per worker), the style one of:

* ``spin``: blocking ``send``/``recv`` on both sides. MPICH busy-polls inside a blocking call,
  so this is the physical reference, fair only where every rank owns an idle core;
* ``wait``: the same loop, but every rank waits as emews waits, without spinning: a
  nonblocking ``improbe`` and :class:`emews.pools._base.Backoff`'s sleeps;
* ``ioc``: emews' inversion-of-control shape with nothing on top: an ME thread and two queues
  on rank 0, every ready result handed to the ME in one message, its answer (one new point per
  result) sent to the workers as one message per worker, waits as in ``wait``. No store, no
  algorithm, no failure policy.

``pingpong`` (2 ranks) times a short string sent to rank 1 and back, with blocking calls
(``spin``) and with ``improbe`` and backoff (``wait``): the MPI round trip of this machine.

Every figure carries rank 0's CPU time per task (``time.process_time``, every thread of the
process), which a busy shared machine disturbs far less than a rate.
"""

import argparse
import json
import queue
import sys
import threading
import time
from pathlib import Path

import numpy as np

from emews.pools._base import Backoff
from emews.pools._mpi import DRAIN_MISSES

from .common import summary
from .objectives import echo

STYLES = {"spin": "bare mpi4py, spinning", "wait": "bare mpi4py, waiting without spinning",
          "ioc": "bare IoC loop (ME thread, queues, batches)"}
TASK, RESULT, STOP = 1, 2, 3


def name(variant):
    """The contender's name of ``STYLE:IN_FLIGHT``."""
    style, in_flight = variant.split(":")
    return f"{STYLES[style]}, {in_flight} in flight per worker"


def params(n, seed=0):
    """``n`` task strings, as the emews contender's points are: JSON of one float."""
    rng = np.random.default_rng(seed)
    return [json.dumps({"x": float(x)}) for x in rng.uniform(-1, 1, n)]


def figures(n, seconds, cpu_seconds, round_trips=None, **extra):
    """Throughput, rank 0's CPU per task and the round trips' summary (µs)."""
    found = {"tasks": n, "seconds": seconds, "tasks_per_s": n / seconds,
             "rank0_cpu_us_per_task": cpu_seconds / n * 1e6, **extra}
    if round_trips is not None and len(round_trips):
        found.update(summary(np.asarray(round_trips) * 1e6, "round_trip_us"))
    return found


def receive(comm, source, tag, spin):
    """The next message from ``source`` with ``tag``: a blocking ``recv``, or probes and
    backoff sleeps; returns ``(data, source rank)``."""
    from mpi4py import MPI

    if spin:
        status = MPI.Status()
        data = comm.recv(source=source, tag=tag, status=status)
        return data, status.Get_source()
    backoff = Backoff()
    while (message := comm.improbe(source=source, tag=tag)) is None:
        backoff.wait()
    status = MPI.Status()
    data = message.recv(status=status)
    return data, status.Get_source()


def worker(comm, spin):
    """Answer each task (a list of ``(index, text)``) with one result message per task."""
    from mpi4py import MPI

    while True:
        tasks, _ = receive(comm, 0, MPI.ANY_TAG, spin)
        if tasks is None:
            return
        for index, text in tasks:
            comm.send((index, echo(text)), dest=0, tag=RESULT)


def master_loop(comm, n, in_flight, spin):
    """``spin`` and ``wait``: one task per message, the next sent as each result comes back."""
    from mpi4py import MPI

    texts = params(n)
    sent_at, round_trips = np.zeros(n), np.zeros(n)
    next_task = 0
    started, cpu = time.perf_counter(), time.process_time()

    def send(rank):
        nonlocal next_task
        sent_at[next_task] = time.perf_counter()
        comm.send([(next_task, texts[next_task])], dest=rank, tag=TASK)
        next_task += 1

    for _ in range(in_flight):
        for rank in range(1, comm.Get_size()):
            if next_task < n:
                send(rank)
    for _ in range(n):
        (index, _value), rank = receive(comm, MPI.ANY_SOURCE, RESULT, spin)
        round_trips[index] = time.perf_counter() - sent_at[index]
        if next_task < n:
            send(rank)
    return figures(n, time.perf_counter() - started, time.process_time() - cpu, round_trips,
                   in_flight_per_worker=in_flight)


def master_ioc(comm, n, in_flight):
    """``ioc``: the ME thread proposes one point per result it is handed, all in one message."""
    from mpi4py import MPI

    texts = iter(params(n))
    to_me, from_me = queue.Queue(), queue.Queue()

    def me():
        while (results := to_me.get()) is not None:
            from_me.put([text for _, text in zip(range(len(results)), texts)])

    thread = threading.Thread(target=me, daemon=True)
    workers = list(range(1, comm.Get_size()))
    sent_at, round_trips = {}, []
    next_index, done = 0, 0
    started, cpu = time.perf_counter(), time.process_time()
    thread.start()

    def hand_out(points, ranks):
        nonlocal next_index
        batches = {}
        for rank, text in zip(ranks, points):
            batches.setdefault(rank, []).append((next_index, text))
            sent_at[next_index] = time.perf_counter()
            next_index += 1
        for rank, batch in batches.items():
            comm.send(batch, dest=rank, tag=TASK)

    to_me.put([None] * (in_flight * len(workers)))
    hand_out(from_me.get(), [rank for _ in range(in_flight) for rank in workers])
    backoff = Backoff()
    while done < n:
        ready, misses = [], 0
        while misses < DRAIN_MISSES:   # MPICH's probe misses once between queued messages
            message = comm.improbe(source=MPI.ANY_SOURCE, tag=RESULT)
            if message is None:
                misses += 1
                continue
            misses = 0
            status = MPI.Status()
            index, _value = message.recv(status=status)
            ready.append(status.Get_source())
            round_trips.append(time.perf_counter() - sent_at.pop(index))
        if not ready:
            backoff.wait()
            continue
        backoff.reset()
        done += len(ready)
        to_me.put(ready)
        hand_out(from_me.get(), ready)
    to_me.put(None)
    thread.join()
    return figures(n, time.perf_counter() - started, time.process_time() - cpu, round_trips,
                   in_flight_per_worker=in_flight)


def loops(n, variants):
    """Every ``STYLE:IN_FLIGHT`` variant in turn on this job's ranks; rank 0's figures."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    found = {}
    for variant in variants:
        style, in_flight = variant.split(":")
        comm.Barrier()
        if comm.Get_rank() > 0:
            worker(comm, spin=style == "spin")
            continue
        found[name(variant)] = (master_ioc(comm, n, int(in_flight)) if style == "ioc" else
                                master_loop(comm, n, int(in_flight), spin=style == "spin"))
        for rank in range(1, comm.Get_size()):
            comm.send(None, dest=rank, tag=STOP)
    return found if comm.Get_rank() == 0 else None


def pingpong(n, styles):
    """Round trips of a short string between ranks 0 and 1, per style (µs, median)."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    found = {}
    for style in styles:
        comm.Barrier()
        spin = style == "spin"
        if comm.Get_rank() == 1:
            for _ in range(n + 1):
                text, _ = receive(comm, 0, TASK, spin)
                comm.send(text, dest=0, tag=RESULT)
            continue
        trips = []
        for i in range(n + 1):      # the first one warms the path up and is left out
            began = time.perf_counter()
            comm.send('{"x": 0.5}', dest=1, tag=TASK)
            receive(comm, 1, RESULT, spin)
            if i:
                trips.append(time.perf_counter() - began)
        found[style] = summary(np.asarray(trips) * 1e6, "round_trip_us")
    return found if comm.Get_rank() == 0 else None


def main(argv=None):
    """Run the floors' variants, or the ping-pong, under mpiexec; write rank 0's JSON to OUT."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("kind", choices=("loops", "pingpong"))
    parser.add_argument("n", type=int)
    parser.add_argument("out")
    parser.add_argument("variants", nargs="+", help="loops: STYLE:IN_FLIGHT (STYLE one of "
                        f"{', '.join(STYLES)}); pingpong: spin and/or wait")
    args = parser.parse_args(argv)
    found = (loops if args.kind == "loops" else pingpong)(args.n, args.variants)
    if found is not None:
        Path(args.out).write_text(json.dumps(found))


if __name__ == "__main__":
    sys.exit(main())
