"""What ``emews dashboard`` costs: opening a big study, and the running study's writes.

``python -m benchmarks.dashboard [N] [REPORTS]`` writes a study of N finished evaluations
(10,000) into a real ``results.db`` and measures, on this machine:

* ``view``: :meth:`StoreView.get_all_trials` (the store read and every row mapped to an
  Optuna trial), the median of three;
* ``open``: the dashboard's first ``GET /api/studies/0`` (what opening the study's page waits
  for), through optuna-dashboard's own WSGI app, cold (wall and CPU seconds: on a shared
  machine the CPU time is the figure to compare), then again within its cache;
* ``curves``: mapping and serializing the N trials with REPORTS intermediate values each (100),
  as the dashboard sends them once the [fidelity] reports are wired into
  :func:`emews.inspect.optuna_view.learning_curves` (the values are made up here: the
  reports table is not in this store yet);
* ``writer``: the median time of the master's commit of one finished evaluation, alone and
  while a second process reads the whole study through the view without pause; the ratio of
  the two is what serving the dashboard costs the running study (the view never takes a write
  lock: its reads are SQLite WAL readers).
"""

import io
import json
import math
import multiprocessing
import statistics
import sys
import tempfile
import time
from pathlib import Path

from emews.evaluate import Outcome
from emews.store import SQLiteStore

SPACE = [{"name": "x", "type": "float", "lower": -2.0, "upper": 2.0},
         {"name": "lr", "type": "float", "lower": 1e-4, "upper": 1.0, "log": True},
         {"name": "n", "type": "int", "lower": 0, "upper": 3},
         {"name": "act", "type": "categorical", "values": ["relu", "tanh"]}]


def make_study(expdir, n):
    """An experiment directory of ``n`` finished evaluations (a tenth of them failed)."""
    expdir.mkdir(parents=True)
    (expdir / "space.json").write_text(json.dumps(SPACE))
    (expdir / "config.json").write_text(json.dumps({"study": {"space": str(expdir /
                                                                           "space.json")}}))
    store = SQLiteStore(expdir / "results.db")
    now = time.time()
    for start in range(0, n, 1000):
        ids = range(start, min(n, start + 1000))
        store.add([(i, json.dumps(point(i)), f"RUN{i:06d}", None, i) for i in ids])
        store.finish([(i, i % 4, outcome(i, now), 1, "failed" if i % 10 == 9 else "done")
                      for i in ids])
        store.commit()
    store.close()
    return expdir


def point(i):
    return {"x": math.sin(i), "lr": 10 ** (-4 + (i % 40) / 10), "n": i % 4,
            "act": "relu" if i % 2 else "tanh"}


def outcome(i, now):
    if i % 10 == 9:
        return Outcome(math.nan, "failed", f"RuntimeError: bad point {i}", started=now,
                       finished=now + 1)
    return Outcome(math.sin(i) ** 2, started=now, finished=now + 1,
                   metrics={"loss": math.cos(i) ** 2, "accuracy": 0.5})


def median_seconds(action, repeats=3):
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def get(app, path):
    """``GET path`` through the WSGI ``app``: ``(status, body bytes)``."""
    from wsgiref.util import setup_testing_defaults

    environ = {"PATH_INFO": path, "REQUEST_METHOD": "GET", "wsgi.input": io.BytesIO()}
    setup_testing_defaults(environ)
    status = []
    body = b"".join(app(environ, lambda s, headers, exc=None: status.append(s)))
    return status[0], body


def measure_open(expdir):
    """Seconds of the view's read, and of the dashboard's first and cached study request."""
    from optuna_dashboard import wsgi

    from emews.inspect.optuna_view import StoreView

    view = StoreView([expdir])
    figures = {"view_s": median_seconds(lambda: view.get_all_trials(0))}
    app = wsgi(StoreView([expdir]))
    started, cpu = time.perf_counter(), time.process_time()
    status, body = get(app, "/api/studies/0")
    figures["open_s"] = time.perf_counter() - started
    figures["open_cpu_s"] = time.process_time() - cpu
    assert status.startswith("200"), status
    figures["trials"] = len(json.loads(body)["trials"])
    started = time.perf_counter()
    get(app, "/api/studies/0")
    figures["open_cached_s"] = time.perf_counter() - started
    figures["response_mb"] = len(body) / 1e6
    return figures


def measure_curves(expdir, reports):
    """Seconds to map the study's rows with ``reports`` intermediate values each and serialize
    them as the dashboard does."""
    from optuna_dashboard._serializer import serialize_frozen_trial

    from emews.inspect.optuna_view import distributions, frozen_trial
    from emews.inspect.source import read_rows
    from emews.space import Space

    rows = read_rows(expdir)
    dists = distributions(Space.from_file(expdir / "space.json"))
    curve = {step: 1.0 / (step + 1) for step in range(reports)}
    started, cpu = time.perf_counter(), time.process_time()
    trials = [frozen_trial(row, dists, number, number, expdir, dict(curve))
              for number, row in enumerate(rows)]
    body = json.dumps([serialize_frozen_trial(0, t, {}) for t in trials])
    return {"curves_s": time.perf_counter() - started, "curves_cpu_s": time.process_time() - cpu,
            "curves_response_mb": len(body) / 1e6}


def read_forever(expdir, stop, reads):
    from emews.inspect.optuna_view import StoreView

    view = StoreView([expdir])
    while not stop.is_set():
        view.get_all_trials(0)
        with reads.get_lock():
            reads.value += 1


def commit_times(store, first_id, count, until=lambda: True):
    """Seconds of each commit of one new finished evaluation: ``count`` of them, and more
    until ``until()``."""
    times, now, i = [], time.time(), first_id
    while len(times) < count or not until():
        i += 1
        store.add([(i, json.dumps(point(i)), f"RUN{i:06d}", 0, i)])
        store.finish([(i, 0, outcome(i, now), 1, "done")])
        started = time.perf_counter()
        store.commit()
        times.append(time.perf_counter() - started)
    return times, i


def measure_writer(expdir, n, count=200):
    """The master's median commit, alone and under a reader that never pauses (over three of
    its whole reads at least)."""
    store = SQLiteStore(expdir / "results.db", create=False)
    try:
        alone, last = commit_times(store, n, count)
        stop, reads = multiprocessing.Event(), multiprocessing.Value("i", 0)
        reader = multiprocessing.Process(target=read_forever, args=(expdir, stop, reads))
        reader.start()
        while reads.value < 1:   # the reader is at work
            time.sleep(0.05)
        first = reads.value
        read, _ = commit_times(store, last, count, lambda: reads.value >= first + 3)
        stop.set()
        reader.join()
    finally:
        store.close()
    return {"commit_alone_ms": statistics.median(alone) * 1e3,
            "commit_while_read_ms": statistics.median(read) * 1e3,
            "commit_ratio": statistics.median(read) / statistics.median(alone),
            "commits_while_read": len(read), "reads_during": reads.value - first}


def main(argv):
    n = int(argv[0]) if argv else 10_000
    reports = int(argv[1]) if len(argv) > 1 else 100
    with tempfile.TemporaryDirectory() as tmp:
        expdir = make_study(Path(tmp) / "EXP001", n)
        figures = {"evaluations": n, "reports": reports, **measure_open(expdir),
                   **measure_curves(expdir, reports), **measure_writer(expdir, n)}
    for key, value in figures.items():
        print(f"{key:22} {value:.3f}" if isinstance(value, float) else f"{key:22} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
