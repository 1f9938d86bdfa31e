"""The service part's figures: each contender's median run counts, and every run is listed."""

from benchmarks import service


def test_a_contender_counts_its_median_run_and_lists_every_run_in_order():
    runs = [{"contender": "zmq, 1 pool", "us_per_task": us, "tasks_per_s": 1e6 / us}
            for us in (300.0, 100.0, 200.0)]
    row = service._median(runs)
    assert (row["us_per_task"], row["tasks_per_s"]) == (200.0, 5000.0)
    assert row["us_per_task_runs"] == [300.0, 100.0, 200.0]
    assert service._median(runs[:1])["us_per_task"] == 300.0
