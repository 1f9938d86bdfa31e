"""The store contract (:class:`emews.store.Store`), one suite on both backends: SQLite
(``results.db``) and a real PostgreSQL server started by the fixture. Each test names one rule
of the contract: what a method writes or reads, and when another reader sees a write."""

import math

import pytest

from emews._errors import ConfigError, StoreError
from emews.evaluate import Outcome
from emews.evaluate._outcome import Report
from emews._status import Status
from emews.store import Snapshot, SQLiteStore, Store, _base as base, open_store
from support.postgres import postgres_server, postgres_url  # noqa: F401 - fixtures


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request, tmp_path):
    """Where a fresh store lives: a results.db path, or ``URL#EXP_ID`` on a real server."""
    if request.param == "sqlite":
        return str(tmp_path / "results.db")
    return f"{request.getfixturevalue('postgres_url')}#{tmp_path}"


@pytest.fixture
def opened(location):
    """``opened(**kwargs)``: a store at ``location`` (closed at the end of the test)."""
    stores = []

    def make(**kwargs):
        stores.append(open_store(location, **kwargs))
        return stores[-1]

    yield make
    for store in reversed(stores):
        store.close()


@pytest.fixture
def store(opened):
    """The study's writer, with the study recorded (as every study records its settings), so
    that readers can open it."""
    writer = opened()
    writer.set_meta("space_digest", "d")
    writer.commit()
    return writer


@pytest.fixture
def reader(store, opened):
    """A second, read-only store on the same study (another process's view)."""
    return opened(readonly=True)


def points(n, rank=None, first=0):
    return [(i, f'{{"x": {i}}}', f"RUN{i:06d}", rank, 100 + i) for i in range(first, first + n)]


def done(value, **kwargs):
    return Outcome(value, Status.DONE, **kwargs)


def failed(error):
    return Outcome(math.nan, Status.FAILED, error)


def test_both_backends_are_stores(store):
    assert isinstance(store, Store)
    with pytest.raises(TypeError):
        Store("results.db")  # the contract itself stores nothing


def test_add_queues_a_point_or_hands_it_out_at_once(store):
    store.add([(0, '{"x": 1}', "RUN000000", 2, 7), (1, '{"x": 2}', "RUN000001", None, 8)])
    rows = store.rows()
    assert [(r["id"], r["params"], r["status"], r["rank"], r["run_id"], r["seq"], r["attempt"])
            for r in rows] == [(0, {"x": 1}, "running", 2, "RUN000000", 7, 1),
                               (1, {"x": 2}, "queued", None, "RUN000001", 8, 1)]
    assert rows[0]["started"] >= rows[0]["queued"] and rows[1]["started"] is None
    assert [r["id"] for r in store.rows(Status.QUEUED)] == [1]
    assert store.next_id() == 2 and store.next_seq() == 9


def test_a_write_is_seen_by_other_readers_only_after_commit(store, reader):
    store.add(points(2))
    store.finish([(0, 1, done(0.5), 1, Status.DONE)])
    store.set_meta("note", "turn 1")
    assert store.pending
    assert reader.rows() == [] and reader.meta("note") is None
    store.commit()
    assert not store.pending
    assert [(r["id"], r["status"]) for r in reader.rows()] == [(0, "done"), (1, "queued")]
    assert reader.meta("note") == "turn 1"


def test_a_read_through_the_writer_sees_its_own_writes_and_commits_them(store, reader):
    store.add(points(1))
    assert [r["id"] for r in store.rows()] == [0]       # read-after-write
    assert not store.pending
    assert [r["id"] for r in reader.rows()] == [0]      # committed by that read


def test_a_failed_commit_stores_nothing_of_its_turn_names_the_write_and_is_dropped(store):
    store.add(points(1))
    store.commit()
    store.add([(1, '{"x": 1}', "RUN000001", None, 1)])
    store.set_meta("note", "in the failed turn")
    store.add([(0, '{"x": 0}', "RUN000000", None, 2)])  # the same id again: refused
    with pytest.raises(StoreError, match="cannot record evaluations"):
        store.commit()
    assert not store.pending
    assert [r["id"] for r in store.rows()] == [0] and store.meta("note") is None
    store.add([(1, '{"x": 1}', "RUN000001", None, 1)])  # the store goes on
    assert [r["id"] for r in store.rows()] == [0, 1]


def test_running_is_written_with_the_next_commit_and_a_result_brings_its_own_times(store,
                                                                                 reader):
    store.add(points(2))
    store.commit()
    store.mark_running([(0, 1), (1, 2)])
    assert [r["status"] for r in reader.rows()] == ["queued", "queued"]
    store.commit()
    rows = reader.rows()
    assert [(r["status"], r["rank"]) for r in rows] == [("running", 1), ("running", 2)]
    assert rows[0]["started"] >= rows[0]["queued"]
    store.finish([(0, 3, done(0.5, started=5.0, finished=6.0), 1, Status.DONE)])
    store.commit()
    assert [(r["status"], r["rank"], r["started"], r["finished"]) for r in reader.rows()][0] == (
        "done", 3, 5.0, 6.0)


def test_a_turns_commit_holds_running_back_until_the_next_unless_a_result_comes(store,
                                                                               reader):
    store.add(points(4))
    store.commit()
    store.mark_running([(0, 1), (1, 2), (2, 3)])
    store.commit(hold=True)
    assert [r["status"] for r in reader.rows()] == ["queued"] * 4
    store.finish([(0, 1, done(0.5, started=5.0, finished=6.0), 1, Status.DONE)])
    store.requeue([(1, 2, "RUN000001-2")])       # handed back unstarted: queued again
    store.mark_running([(3, 4)])
    store.commit(hold=True)                       # the next turn's: writes the one held
    assert [(r["status"], r["rank"], r["started"]) for r in reader.rows()][:2] == [
        ("done", 1, 5.0), ("queued", None, None)]
    assert [(r["status"], r["rank"]) for r in reader.rows()][2:] == [("running", 3),
                                                                     ("queued", None)]
    store.cancel([3], "stopped")                  # its attempt keeps its rank
    store.commit()
    assert [(a["status"], a["rank"]) for a in store.attempts(3)] == [("cancelled", 4)]
    store.mark_running([(1, 2)])
    store.commit()                                # any other commit writes them all
    assert [(r["status"], r["rank"]) for r in reader.rows()] == [
        ("done", 1), ("running", 2), ("running", 3), ("cancelled", 4)]


def test_two_writes_of_one_point_in_one_turn_keep_the_last_as_one_by_one_would(store):
    store.add(points(2))
    store.commit()
    store.mark_running([(0, 1), (1, 2), (0, 3)])
    store.finish([(1, 2, failed("first"), 1, Status.FAILED),
                  (1, 4, done(0.5, started=5.0, finished=6.0), 1, Status.DONE)])
    store.commit()
    assert [(r["status"], r["rank"], r["result"]) for r in store.rows()] == [
        ("running", 3, None), ("done", 4, 0.5)]
    assert [(a["id"], a["attempt"], a["status"], a["rank"]) for a in store.attempts()] == [
        (1, 1, "done", 4)]


def test_attempts_hold_every_finished_attempt_the_done_one_from_its_point(store):
    store.add(points(2, rank=1))
    store.finish([(0, 1, failed("boom"), 1, Status.QUEUED),     # retried
                  (1, 2, failed("bad"), 1, Status.FAILED)])
    store.requeue([(0, 2, "RUN000000-2")])
    assert (store.rows()[0]["status"], store.rows()[0]["attempt"], store.rows()[0]["rank"]) == (
        "queued", 2, None)
    store.mark_running([(0, 3)])
    store.finish([(0, 3, done(0.25, started=1.0, finished=2.0,
                               metrics={"acc": 0.9, "odd": math.inf}), 2,
                   Status.DONE)])
    store.record_duplicates([(0, 4, done(0.75), 2)])    # a late result of the same attempt
    store.commit()
    assert [(a["id"], a["attempt"], a["status"], a["result"], a["error"], a["run_id"])
            for a in store.attempts()] == [
        (0, 1, "failed", None, "boom", "RUN000000"),
        (0, 2, "done", 0.25, None, "RUN000000-2"),
        (0, 2, "duplicate", 0.75, None, "RUN000000-2"),
        (1, 1, "failed", None, "bad", "RUN000001")]
    assert {a["status"]: a["metrics"] for a in store.attempts(0)}["done"] == {
        "acc": 0.9, "odd": None}
    assert [a["attempt"] for a in store.attempts(1)] == [1]
    point = store.rows()[0]
    assert (point["status"], point["result"], point["rank"], point["attempt"],
            point["metrics"]) == ("done", 0.25, 3, 2, {"acc": 0.9, "odd": None})


def test_objective_vectors_and_feasibility_are_kept_per_point_and_attempt(store, reader):
    """Schema 7: the raw objectives (a JSON list, in the order of [study] objectives) and
    whether the point met the constraints (None without constraints), in rows, attempts and
    snapshots alike."""
    store.add(points(3, rank=1))
    store.finish([(0, 1, failed("no 'size'"), 1, Status.QUEUED),
                  (1, 1, done(0.5, objectives=[0.5, 2e6], feasible=False), 1, Status.DONE),
                  (2, 1, done(0.25), 1, Status.DONE)])
    store.requeue([(0, 2, "RUN000000-2")])
    store.finish([(0, 1, done(0.75, objectives=[0.75, math.inf], feasible=True), 2,
                   Status.DONE)])
    store.record_duplicates([(0, 2, done(0.7, objectives=[0.7, 1.0], feasible=True), 2)])
    store.commit()
    expected = [(0, [0.75, None], True), (1, [0.5, 2e6], False), (2, None, None)]
    assert [(r["id"], r["objectives"], r["feasible"]) for r in store.rows()] == expected
    assert [(r["id"], r["objectives"], r["feasible"]) for r in reader.snapshot().rows] == \
        expected
    assert [(a["id"], a["attempt"], a["status"], a["objectives"], a["feasible"])
            for a in store.attempts()] == [
        (0, 1, "failed", None, None), (0, 2, "done", [0.75, None], True),
        (0, 2, "duplicate", [0.7, 1.0], True), (1, 1, "done", [0.5, 2e6], False),
        (2, 1, "done", None, None)]
    assert [a["feasible"] for a in reader.snapshot().attempts] == [None, True, True, False,
                                                                  None]


def test_a_point_run_again_drops_the_vectors_of_its_earlier_attempt(store, reader):
    """A result without objectives (a turn of such results leaves the columns alone) after an
    attempt that had them: the point holds the latest attempt's, none."""
    store.add(points(2, rank=1))
    store.finish([(0, 1, Outcome(math.nan, Status.FAILED, "boom", objectives=[1.0, 2.0],
                                 feasible=False), 1, Status.QUEUED),
                  (1, 1, done(0.5, objectives=[0.5, 3.0], feasible=True), 1, Status.DONE)])
    store.requeue([(0, 2, "RUN000000-2")])
    store.commit()
    store.finish([(0, 1, done(0.25), 2, Status.DONE)])
    store.commit()
    assert [(r["id"], r["status"], r["result"], r["objectives"], r["feasible"])
            for r in reader.snapshot().rows] == [(0, "done", 0.25, None, None),
                                                 (1, "done", 0.5, [0.5, 3.0], True)]
    assert [(a["id"], a["attempt"], a["objectives"], a["feasible"]) for a in store.attempts()
            if a["id"] == 0] == [(0, 1, [1.0, 2.0], False), (0, 2, None, None)]


def test_log_tails_and_errors_are_bounded_and_always_storable(store):
    store.add(points(1, rank=1))
    huge = "x" * 200_000 + "\udcff end"
    store.finish([(0, 1, Outcome(math.nan, Status.FAILED, "bad \udc80 byte", huge), 1,
                   Status.FAILED)])
    (row,) = store.rows()
    assert len(row["log_tail"].encode()) <= base.LOG_TAIL_BYTES
    assert row["log_tail"].endswith("? end") and row["error"] == "bad ? byte"


def test_cancel_calls_off_unfinished_points_only_and_keeps_their_attempt(store):
    store.add(points(3))
    store.mark_running([(1, 2)])                        # not yet written: cancel keeps it
    store.finish([(0, 1, done(1.0), 1, Status.DONE)])
    store.cancel([0, 1, 2], "cancelled: test")
    store.cancel([], "nothing")
    assert [(r["status"], r["error"]) for r in store.rows()] == [
        ("done", None), ("cancelled", "cancelled: test"), ("cancelled", "cancelled: test")]
    assert [(a["id"], a["status"], a["rank"]) for a in store.attempts()] == [
        (0, "done", 1), (1, "cancelled", 2), (2, "cancelled", None)]


def test_interrupt_unfinished_marks_them_commits_and_counts_interruptions(store, reader):
    store.add(points(4))
    store.mark_running([(0, 1), (1, 2)])
    store.finish([(1, 2, done(0.5), 1, Status.DONE)])
    store.cancel([3], "cancelled: stop")
    rows = store.interrupt_unfinished()
    assert [(r["id"], r["status"], r["interruptions"]) for r in rows] == [
        (0, "interrupted", 1), (2, "interrupted", 0), (3, "interrupted", 0)]
    assert [r["status"] for r in reader.rows()] == [
        "interrupted", "done", "interrupted", "interrupted"]          # committed at once
    assert [(a["id"], a["status"]) for a in reader.attempts(0)] == [(0, "interrupted")]
    store.requeue([(0, 2, "RUN000000-2")])
    store.mark_running([(0, 1)])
    assert [r["interruptions"] for r in store.interrupt_unfinished()] == [2, 0, 0]


def test_counts_best_failure_reasons_and_finished_count(store):
    store.add(points(7, rank=1))
    store.finish([(0, 1, done(0.5), 1, Status.DONE), (1, 1, done(0.25), 1, Status.DONE),
                  (2, 1, done(0.25), 1, Status.DONE), (3, 1, failed("b"), 1, Status.FAILED),
                  (4, 1, failed("a"), 1, Status.FAILED), (5, 1, failed(None), 1, Status.FAILED),
                  (6, 1, failed("b"), 1, Status.FAILED)])
    assert store.counts() == {"done": 3, "failed": 4}
    assert store.finished_count() == 7
    assert store.best()["id"] == 1                      # the lowest result, then the lowest id
    assert store.failure_reasons() == [("b", 2), ("a", 1), ("no reason recorded", 1)]
    assert store.failure_reasons(limit=1) == [("b", 2)]
    store.add(points(3, rank=1, first=7))   # alike errors, but for their numbers, are one
    store.finish([(7, 1, failed("bad x -1.5 at epoch 3"), 1, Status.FAILED),
                  (8, 1, failed("bad x 2.5e-05 at epoch 12"), 1, Status.FAILED),
                  (9, 1, failed("bad x -1.5 at epoch 3"), 1, Status.FAILED)])
    assert store.failure_reasons() == [("bad x -1.5 at epoch 3", 3), ("b", 2), ("a", 1)]


def test_reports_are_kept_per_point_and_attempt_in_order_seen_after_commit(store, reader):
    store.add(points(2, rank=1))
    store.add_reports([(1, 1, Report(3, 0.5, {"acc": 0.9}, 10.0)),
                       (0, 1, Report(1, math.nan, {"acc": math.inf}, 11.0)),
                       (1, 1, Report(2, 0.25, time=12.0))])   # the order received, not by step
    assert reader.reports() == []                               # buffered until the commit
    store.commit()
    curve = [{"id": 1, "attempt": 1, "step": 3, "value": 0.5, "metrics": {"acc": 0.9},
              "time": 10.0},
             {"id": 0, "attempt": 1, "step": 1, "value": None, "metrics": {"acc": None},
              "time": 11.0},
             {"id": 1, "attempt": 1, "step": 2, "value": 0.25, "metrics": {}, "time": 12.0}]
    assert reader.reports() == curve
    assert reader.reports(1) == [curve[0], curve[2]]
    assert reader.reports(eval_id=7) == []


def test_curves_are_each_points_latest_attempt_by_step(store, reader):
    store.add(points(3, rank=1))
    store.add_reports([(0, 1, Report(1, 0.9)), (1, 1, Report(1, math.inf)),
                       (0, 1, Report(2, 0.8))])
    store.requeue([(0, 2, "RUN000000b")])                  # point 0 runs again: a new curve
    store.add_reports([(0, 2, Report(1, 0.7)), (1, 1, Report(2, 0.5))])
    assert reader.curves() == {}                               # buffered until the commit
    store.commit()
    curves = reader.curves()
    assert curves.keys() == {0, 1}                             # point 2 reported nothing
    assert curves[0] == {1: 0.7}                               # attempt 1's reports left out
    assert list(curves[1]) == [1, 2] and math.isnan(curves[1][1]) and curves[1][2] == 0.5


def test_report_values_read_only_the_reports_after_a_number_in_order(store, reader):
    store.add(points(2, rank=1))
    assert reader.report_values() == []
    store.add_reports([(1, 1, Report(3, 0.5, {"acc": 0.9})), (0, 1, Report(1, math.nan))])
    store.commit()
    seen = reader.report_values()
    assert [row[1:] for row in seen] == [(1, 1, 3, 0.5), (0, 1, 1, None)]
    assert seen[0][0] < seen[1][0]                            # numbered as received
    store.add_reports([(1, 2, Report(4, 0.25))])
    store.commit()
    assert [row[1:] for row in reader.report_values(seen[-1][0])] == [(1, 2, 4, 0.25)]
    assert reader.report_values(reader.report_values()[-1][0]) == []


def test_a_pruned_point_is_final_counted_and_never_the_best(store):
    store.add(points(2, rank=1))
    store.finish([(0, 1, Outcome(0.1, Status.PRUNED, "pruned at step 3"), 1, Status.PRUNED),
                  (1, 1, done(0.5), 1, Status.DONE)])
    assert store.counts() == {"pruned": 1, "done": 1} and store.finished_count() == 2
    assert store.best()["id"] == 1
    pruned = store.rows(Status.PRUNED)
    assert [(r["id"], r["result"], r["error"]) for r in pruned] == [(0, 0.1, "pruned at step 3")]
    assert [(a["id"], a["status"]) for a in store.attempts()] == [(0, "pruned"), (1, "done")]


def test_an_empty_store_has_nothing_to_count(store):
    assert store.counts() == {} and store.best() is None and store.failure_reasons() == []
    assert store.next_id() == 0 and store.next_seq() == 0 and store.attempts() == []


def test_meta_values_are_replaced_and_read_back(store, reader):
    store.set_meta("final", {"stop_reason": "one"})
    store.set_meta("final", {"stop_reason": "two"})
    store.commit()
    assert reader.meta("final") == {"stop_reason": "two"}
    assert reader.meta("missing", 3) == 3
    assert reader.all_meta() == {"space_digest": "d", "final": {"stop_reason": "two"}}


def test_a_checkpoint_is_replaced_and_committed_at_once(store, reader):
    store.add(points(1))                                # committed with it
    store.save_checkpoint("me", b"\x00state", {"told": 3})
    store.save_checkpoint("me", b"\x01state", {"told": 5})
    assert reader.checkpoint("me") == (b"\x01state", {"told": 5})
    assert reader.checkpoint("other") is None
    assert [r["id"] for r in reader.rows()] == [0]


def test_a_snapshot_reads_rows_attempts_and_meta_without_log_tails(store, reader):
    store.add(points(2, rank=1))
    store.finish([(0, 1, done(0.5, log_tail="tail", metrics={"acc": 1.0}), 1,
                   Status.DONE),
                  (1, 1, Outcome(math.nan, Status.FAILED, "boom", "tail"), 1, Status.FAILED)])
    store.set_meta("final", {"stop_reason": "test"})
    store.commit()
    snapshot = reader.snapshot()
    assert isinstance(snapshot, Snapshot)
    assert [(r["id"], r["status"], r["params"], r["metrics"]) for r in snapshot.rows] == [
        (0, "done", {"x": 0}, {"acc": 1.0}), (1, "failed", {"x": 1}, {})]
    assert all("log_tail" not in r for r in snapshot.rows + snapshot.attempts)
    assert [(a["id"], a["status"], a["metrics"]) for a in snapshot.attempts] == [
        (0, "done", {"acc": 1.0}), (1, "failed", {})]
    assert snapshot.meta == {"space_digest": "d", "final": {"stop_reason": "test"}}
    assert {k for k in snapshot.rows[0]} == {k for k in store.rows()[0]} - {"log_tail"}


def test_a_store_that_must_exist_is_refused_when_it_does_not(location):
    for kwargs in ({"create": False}, {"readonly": True}):
        with pytest.raises(ConfigError):
            open_store(location, **kwargs)


def test_closing_commits_what_waits_and_is_safe_twice(location):
    store = open_store(location)
    store.add(points(1))
    store.set_meta("note", 1)
    store.close()
    store.close()
    again = open_store(location, create=False)
    assert [r["id"] for r in again.rows()] == [0]
    again.close()


def test_the_sqlite_reader_opens_the_file_read_only(tmp_path):
    writer = SQLiteStore(tmp_path / "results.db")
    writer.add(points(1))
    writer.close()
    reader = SQLiteStore(tmp_path / "results.db", readonly=True)
    reader.add([(1, "{}", "RUN000001", None, 1)])
    with pytest.raises(StoreError, match="readonly database"):
        reader.commit()
    reader.close()
