"""What ``emews dashboard`` costs: opening a big study, and the running study's writes.

``python -m benchmarks.dashboard [N] [REPORTS]`` writes a study of N finished evaluations
(10,000), each with a learning curve of REPORTS reports (100) in the store's reports table,
into a real ``results.db`` and measures, on this machine (wall and CPU seconds: on a shared
machine the CPU time is the figure to compare):

* ``view``: one :meth:`StoreView.get_all_trials` as optuna-dashboard calls it (the store
  read, the curves read, every row mapped to an Optuna trial), with whole curves
  (``view_whole``) and with curves thinned as ``emews dashboard`` serves them (``view``,
  :data:`~emews.inspect._dashboard.CURVE_POINTS`);
* ``open``: the dashboard's first ``GET /api/studies/0`` (what opening the study's page waits
  for), through optuna-dashboard's own WSGI app over the view as ``emews dashboard`` serves
  it (it read every study once at its start, so the view keeps the trials it made), then
  again within optuna-dashboard's cache; ``open_cold``: the same with nothing read before;
  ``open_whole``: cold with whole curves (what it cost before curves were thinned);
* ``refresh``: a second :meth:`StoreView.get_all_trials` of the same view as served, after
  ten more evaluations finished with their reports (what each refresh of the open page
  costs: the view keeps its trials and reads only the new reports);
* ``writer``: the median time of the master's commit of one finished evaluation, alone and
  while a second process reads the whole study through the served view without pause; the
  ratio of the two is what serving the dashboard costs the running study (the view never
  takes a write lock: its reads are SQLite WAL readers).
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
from emews.evaluate._outcome import Report
from emews.store import SQLiteStore

SPACE = [{"name": "x", "type": "float", "lower": -2.0, "upper": 2.0},
         {"name": "lr", "type": "float", "lower": 1e-4, "upper": 1.0, "log": True},
         {"name": "n", "type": "int", "lower": 0, "upper": 3},
         {"name": "act", "type": "categorical", "values": ["relu", "tanh"]}]


def make_study(expdir, n, reports=0):
    """An experiment directory of ``n`` finished evaluations (a tenth of them failed), each
    with a learning curve of ``reports`` reports (``emews.report``) in the store."""
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
        store.add_reports([(i, 1, Report(step, curve(i, step), time=now + step / reports))
                           for i in ids for step in range(reports)])
        store.commit()
    store.close()
    return expdir


def point(i):
    return {"x": math.sin(i), "lr": 10 ** (-4 + (i % 40) / 10), "n": i % 4,
            "act": "relu" if i % 2 else "tanh"}


def curve(i, step):
    return math.sin(i) ** 2 + 1.0 / (step + 1)


def outcome(i, now):
    if i % 10 == 9:
        return Outcome(math.nan, "failed", f"RuntimeError: bad point {i}", started=now,
                       finished=now + 1)
    return Outcome(math.sin(i) ** 2, started=now, finished=now + 1,
                   metrics={"loss": math.cos(i) ** 2, "accuracy": 0.5})


def get(app, path):
    """``GET path`` through the WSGI ``app``: ``(status, body bytes)``."""
    from wsgiref.util import setup_testing_defaults

    environ = {"PATH_INFO": path, "REQUEST_METHOD": "GET", "wsgi.input": io.BytesIO()}
    setup_testing_defaults(environ)
    status = []
    body = b"".join(app(environ, lambda s, headers, exc=None: status.append(s)))
    return status[0], body


def timed(action):
    """``(result, wall seconds, CPU seconds)`` of ``action()``."""
    started, cpu = time.perf_counter(), time.process_time()
    result = action()
    return result, time.perf_counter() - started, time.process_time() - cpu


def measure_view(expdir, curve_points, suffix):
    """Seconds of one read of the study through the view."""
    from emews.inspect._optuna_view import StoreView

    view = StoreView([expdir], curve_points)
    trials, wall, cpu = timed(lambda: view.get_all_trials(0, deepcopy=False))
    return {f"view{suffix}_s": wall, f"view{suffix}_cpu_s": cpu,
            f"values{suffix}": sum(len(t.intermediate_values) for t in trials)}


def measure_open(expdir, curve_points, suffix, cached=False, started=False):
    """Seconds of the dashboard's first study request (and a cached one, with ``cached``);
    with ``started``, after the view read the study once, as ``emews dashboard`` does when
    it starts (:func:`emews.inspect._dashboard.serve`)."""
    from optuna_dashboard import wsgi

    from emews.inspect._optuna_view import StoreView

    view = StoreView([expdir], curve_points)
    if started:
        view.get_n_trials(0)
    app = wsgi(view)
    (status, body), wall, cpu = timed(lambda: get(app, "/api/studies/0"))
    assert status.startswith("200"), status
    figures = {f"open{suffix}_s": wall, f"open{suffix}_cpu_s": cpu,
               f"open{suffix}_response_mb": len(body) / 1e6,
               "trials": len(json.loads(body)["trials"])}
    if cached:
        _, figures[f"open{suffix}_cached_s"], _ = timed(lambda: get(app, "/api/studies/0"))
    return figures


def measure_refresh(expdir, n, reports, curve_points):
    """Seconds of a refresh of the served view after ten more evaluations finished."""
    from emews.inspect._optuna_view import StoreView

    view = StoreView([expdir], curve_points)
    view.get_all_trials(0, deepcopy=False)
    store = SQLiteStore(expdir / "results.db", create=False)
    now = time.time()
    ids = range(n, n + 10)
    store.add([(i, json.dumps(point(i)), f"RUN{i:06d}", None, i) for i in ids])
    store.finish([(i, 0, outcome(i, now), 1, "done") for i in ids])
    store.add_reports([(i, 1, Report(step, curve(i, step))) for i in ids
                       for step in range(reports)])
    store.commit()
    store.close()
    trials, wall, cpu = timed(lambda: view.get_all_trials(0, deepcopy=False))
    assert len(trials) == n + 10
    return {"refresh_s": wall, "refresh_cpu_s": cpu}


def read_forever(expdir, stop, reads):
    from emews.inspect._dashboard import CURVE_POINTS
    from emews.inspect._optuna_view import StoreView

    while not stop.is_set():   # a new view each time: a whole read, not a refresh
        StoreView([expdir], CURVE_POINTS).get_all_trials(0, deepcopy=False)
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
        from emews.inspect._dashboard import CURVE_POINTS

        expdir = make_study(Path(tmp) / "EXP001", n, reports)
        figures = {"evaluations": n, "reports": reports, "curve_points": CURVE_POINTS,
                   **measure_view(expdir, CURVE_POINTS, ""), **measure_view(expdir, None, "_whole"),
                   **measure_open(expdir, CURVE_POINTS, "", cached=True, started=True),
                   **measure_open(expdir, CURVE_POINTS, "_cold"),
                   **measure_open(expdir, None, "_whole"),
                   **measure_refresh(expdir, n, reports, CURVE_POINTS),
                   **measure_writer(expdir, n + 10)}
    for key, value in figures.items():
        print(f"{key:22} {value:.3f}" if isinstance(value, float) else f"{key:22} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
