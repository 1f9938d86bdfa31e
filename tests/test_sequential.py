"""One point at a time (docs/src/running.md): a study whose pool has one slot, in the default
``async`` mode, and a study in ``mode = "sequential"`` on several workers propose each point
only after every earlier result is told, so each proposal uses every result. Read from the
store (each point's ``queued`` time against the ``finished`` times of the points proposed
before it) and from the algorithm's own record of its asks (``tests/support/traced_gp.py``),
on ``gp``, which keeps points ready beyond the busy workers in ``async`` mode."""

import json

import pytest

from emews.testing import experiment_rows

from conftest import peak_slots

pytestmark = [pytest.mark.mpi, pytest.mark.slow]

BUDGET = 7


def run_traced(emews_cli, study, tmp_path, procs, **settings):
    """Run ``gp`` (traced) on ``procs`` MPI ranks; the rows by ``seq`` and the trace."""
    trace = tmp_path / "trace.jsonl"
    path = study(system={"procs": procs},
                 study={"algorithm": "traced_gp:TracedGP", "budget": BUDGET, "seed": 3,
                        "objective": "toy_models:quadratic", **settings},
                 algorithm={"n_initial_points": 3, "trace": str(trace)})
    done = emews_cli("run", path)
    assert done.returncode == 0, done.stderr
    rows = sorted(experiment_rows(tmp_path / "experiments"), key=lambda r: r["seq"])
    assert [r["status"] for r in rows] == ["done"] * BUDGET
    return rows, [json.loads(line) for line in trace.read_text().splitlines()]


def assert_sequential(rows, asks):
    """Each point was proposed after every earlier one finished, and each ask gave one point
    with every earlier point told."""
    for i, row in enumerate(rows[1:], 1):
        assert row["queued"] >= max(r["finished"] for r in rows[:i]), (i, rows[:i + 1])
    assert asks == [{"asked": 1, "before": i, "told": i} for i in range(BUDGET)]
    assert peak_slots(rows, slots=lambda row: 1) == 1


def test_one_worker_is_sequential_in_the_default_mode(emews_cli, study, tmp_path):
    assert_sequential(*run_traced(emews_cli, study, tmp_path, procs=2))


def test_sequential_mode_keeps_one_point_in_flight_on_several_workers(emews_cli, study,
                                                                       tmp_path):
    assert_sequential(*run_traced(emews_cli, study, tmp_path, procs=4, mode="sequential"))
