"""In async mode no worker waits for the ME: on a real ``mpiexec -n 4`` pool with uneven task
times, a worker's idle stretch between two tasks is never longer than one proposal of the ME
(the longest seen), both read from the times the store keeps."""

import json

import pytest

from emews.models import analytic
from emews.testing import experiment_rows

pytestmark = [pytest.mark.mpi, pytest.mark.slow]

BUDGET = 36
SLACK_S = 0.05   # a freed worker's hand-off: the master's poll (2 ms at most) and the MPI hop
SEARCHES = {
    "random": {},
    "sweep": {"file": "points.jsonl"},
    "ga_async": {"population_size": 6},
    "gp": {"n_initial_points": 6},
    "optuna": {"sampler": "tpe", "n_startup_trials": 6},
    "mbo": {"design_size": 6},
}
# uneven task times: a lognormal sleep (median 0.15 s, sigma 0.8) drawn from the point
OBJECTIVE = '''
import hashlib, math, statistics, time
from emews.models import analytic

def uneven(params):
    digest = hashlib.sha256(repr(sorted(params.items())).encode()).digest()
    u = (int.from_bytes(digest[:8], "big") + 0.5) / 2 ** 64
    time.sleep(0.15 * math.exp(0.8 * statistics.NormalDist().inv_cdf(u)))
    return analytic.branin(params)
'''


def longest_proposal(rows):
    """The longest the ME took to answer results with new points: from the last result that
    finished before a message of points to the moment the master queued that message."""
    finishes = sorted(r["finished"] for r in rows)
    longest = 0.0
    for queued in {r["queued"] for r in rows}:
        before = [f for f in finishes if f <= queued]
        if before:
            longest = max(longest, queued - before[-1])
    return longest


def idle_stretches(rows):
    """Every gap between a worker's task finishing and its next task starting."""
    gaps = []
    for rank in {r["rank"] for r in rows}:
        mine = sorted((r for r in rows if r["rank"] == rank), key=lambda r: r["started"])
        gaps += [b["started"] - a["finished"] for a, b in zip(mine, mine[1:])]
    return gaps


@pytest.mark.parametrize("name", sorted(SEARCHES))
def test_no_worker_waits_longer_than_one_proposal(emews_cli, study, tmp_path, name):
    (tmp_path / "uneven_tasks.py").write_text(OBJECTIVE)
    (tmp_path / "points.jsonl").write_text("".join(
        json.dumps({"x1": -5 + 15 * i / BUDGET, "x2": 15 * (i % 5) / 5}) + "\n"
        for i in range(BUDGET)))
    path = study(space=analytic.space("branin"), system={"procs": 4},
                 study={"algorithm": name, "budget": BUDGET, "seed": 3, "mode": "async",
                        "objective": "uneven_tasks:uneven"},
                 algorithm=SEARCHES[name])
    done = emews_cli("run", path)
    assert done.returncode == 0, done.stderr
    rows = experiment_rows(tmp_path / "experiments")
    assert len(rows) == BUDGET and {r["status"] for r in rows} == {"done"}
    assert {r["rank"] for r in rows} == {1, 2, 3}
    proposal, gaps = longest_proposal(rows), idle_stretches(rows)
    assert len(gaps) == BUDGET - 3
    assert max(gaps) <= proposal + SLACK_S, (max(gaps), proposal)
