"""The SQLite store of evaluations."""

from emews.store import Store


def test_add_records_handed_out_points_as_running_and_the_rest_as_queued(tmp_path):
    store = Store(tmp_path / "results.db")
    store.add([(0, '{"x": 1}', "RUN000000", 2), (1, '{"x": 2}', "RUN000001", None)])
    store.commit()
    rows = store.rows()
    assert [(r["status"], r["rank"], r["run_id"]) for r in rows] == [
        ("running", 2, "RUN000000"), ("queued", None, "RUN000001")]
    assert rows[0]["started"] >= rows[0]["queued"] and rows[1]["started"] is None
    assert store.forget_unfinished() == [{"x": 1}, {"x": 2}]
    store.close()
