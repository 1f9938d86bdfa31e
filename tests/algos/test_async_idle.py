"""In async mode no worker waits for the ME longer than its proposals take, on a real
``mpiexec -n 4`` pool with uneven task times, read from the times the store keeps (no clock
of the test's own).

The ME is one thread: it answers results in rounds (tell what came back, ask as many points),
and each round's points are one message, stored as the ``queued`` time of its rows. From the
store, round m began when both the previous round's points were queued and the last result it
answers had finished; its proposal time is from then to its points' ``queued`` time (hops of
the result to the ME included). A worker freed while a round is under way, with no ready point
left, waits out that round and then the round that answers it: so its idle stretch is at most
two proposal times and one dispatch (``queued`` to ``started``). A driver that waits for more
results than it has, or a master that sits on queued points, breaks that bound: then the
stretch lasts a task's run time, not an ME's proposal. An algorithm that declares a
``ready_share`` (gp, mbo) must also hand freed workers points queued before they freed.
"""

import json

import numpy as np
import pytest

from emews.core._algorithm import load
from emews.core._me import ready_points
from emews.models import analytic
from emews.testing import experiment_rows

pytestmark = [pytest.mark.mpi, pytest.mark.slow]

BUDGET = 36
WORKERS = 3
SEARCHES = {
    "random": {},
    "sweep": {"file": "points.jsonl"},
    "ga_async": {"population_size": 6},
    "nsga2_async": {"population_size": 6},
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


def proposal_times(rows):
    """Each later round's proposal time: from the moment it could begin (the previous round
    queued, and the results it answers finished: as many as it proposed, in finish order) to
    the moment its points were queued."""
    finishes = np.sort([r["finished"] for r in rows])
    messages = sorted({r["queued"] for r in rows})
    sizes = [sum(r["queued"] == q for r in rows) for q in messages]
    times, answered = [], 0
    for previous, queued, size in zip(messages, messages[1:], sizes[1:]):
        answered += size
        begin = max(previous, finishes[min(answered, len(finishes)) - 1])
        times.append(float(queued - begin))
    return times


def hand_offs(rows):
    """Each worker's consecutive tasks ``(a, b)``: a finished, then b started on that rank."""
    pairs = []
    for rank in {r["rank"] for r in rows}:
        mine = sorted((r for r in rows if r["rank"] == rank), key=lambda r: r["started"])
        pairs += zip(mine, mine[1:])
    return pairs


@pytest.mark.parametrize("name", sorted(SEARCHES))
def test_no_worker_waits_longer_than_the_proposals(emews_cli, study, tmp_path, name):
    (tmp_path / "uneven_tasks.py").write_text(OBJECTIVE)
    (tmp_path / "points.jsonl").write_text("".join(
        json.dumps({"x1": -5 + 15 * i / BUDGET, "x2": 15 * (i % 5) / 5}) + "\n"
        for i in range(BUDGET)))
    path = study(space=analytic.space("branin"), system={"procs": WORKERS + 1},
                 study={"algorithm": name, "budget": BUDGET, "seed": 3, "mode": "async",
                        "objective": "uneven_tasks:uneven"},
                 algorithm=SEARCHES[name])
    done = emews_cli("run", path)
    assert done.returncode == 0, done.stderr
    rows = experiment_rows(tmp_path / "experiments")
    assert len(rows) == BUDGET and {r["status"] for r in rows} == {"done"}
    assert {r["rank"] for r in rows} == set(range(1, WORKERS + 1))

    pairs = hand_offs(rows)
    assert len(pairs) == BUDGET - WORKERS
    proposal = max(proposal_times(rows))
    free = [b for a, b in pairs if b["queued"] >= a["finished"]] + [
        min((r for r in rows if r["rank"] == rank), key=lambda r: r["started"])
        for rank in range(1, WORKERS + 1)]   # tasks queued while their worker was free
    dispatch = max(r["started"] - r["queued"] for r in free)
    idle = max((b["started"] - a["finished"], a["id"], b["id"]) for a, b in pairs)
    assert idle[0] <= 2 * proposal + dispatch, (idle, proposal, dispatch)

    ready = [b["id"] for a, b in pairs if b["queued"] < a["finished"]]
    keeps_ready = ready_points(load(name), WORKERS)
    assert bool(ready) == bool(keeps_ready), (keeps_ready, ready)
