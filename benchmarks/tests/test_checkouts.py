"""The before/after comparison of two checkouts (issue 44's dispatch rate): real runs of the
dispatch part's whole path under mpiexec, alternated, and the paired statistics over them."""

import io
import json

import pytest

from benchmarks import checkouts
from benchmarks.common import REPO


@pytest.mark.mpi
def test_two_checkouts_are_run_in_turns_and_paired_by_round():
    out = io.StringIO()
    runs = checkouts.alternate({"before": REPO, "after": REPO}, rounds=2, tasks=300, out=out)
    assert [(r["round"], r["checkout"]) for r in runs] == [
        (0, "before"), (0, "after"), (1, "after"), (1, "before")]
    assert [json.loads(line) for line in out.getvalue().splitlines()] == runs
    assert all(r["tasks_per_s"] > 0 and r["rank0_cpu_us_per_task"] > 0 for r in runs)
    summary = checkouts.compare(runs, "before", "after")
    assert summary["pairs"] == 2
    before = [r["tasks_per_s"] for r in runs if r["checkout"] == "before"]
    assert summary["tasks_per_s"]["before"] == pytest.approx(sum(before) / 2)   # the median
    assert "p_less" not in summary["tasks_per_s"]   # two pairs cannot show a difference


def test_the_comparison_reports_the_median_ratio_and_which_way_it_goes():
    runs = [{"round": i, "checkout": name, "tasks_per_s": rate * (2 if name == "after" else 1),
             "rank0_cpu_us_per_task": 10.0 / (2 if name == "after" else 1)}
            for i, rate in enumerate([100.0, 90.0, 110.0, 95.0, 105.0, 98.0, 102.0])
            for name in ("before", "after")]
    summary = checkouts.compare(runs, "before", "after")
    assert summary["pairs"] == 7
    assert summary["tasks_per_s"]["median_ratio"] == 2.0
    assert summary["tasks_per_s"]["after"] == 2 * summary["tasks_per_s"]["before"] == 200.0
    assert summary["tasks_per_s"]["p_greater"] < 0.05 < summary["tasks_per_s"]["p_less"]
    assert summary["rank0_cpu_us_per_task"]["median_ratio"] == 0.5
    assert summary["rank0_cpu_us_per_task"]["p_less"] < 0.05
