"""Part 13 (population-based training) at smoke size, both problems: the toy of the PBT paper
and the digits network whose learning-rate schedule matters."""

import json
import math
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from benchmarks import pbt, pbt_ray
from benchmarks.sizes import SMOKE
from emews.models import pbt_toy

from .test_smoke import REPO


def test_a_digits_epoch_leaves_the_checkpoint_it_started_from_as_it_was():
    digits = pbt.PROBLEMS["digits"]()
    start = digits.start()
    copy = [np.copy(a) for a in start[1:]]
    after = digits.step(start, {"lr": 0.3})
    assert after[0] == 1 and all(np.array_equal(a, b) for a, b in zip(start[1:], copy))
    assert digits.loss(after) < digits.loss(start)   # it learns
    assert digits.step(start, {"lr": 0.3})[1].tolist() == after[1].tolist()   # the same epoch


def test_the_simulated_pool_is_busier_with_more_members_a_worker():
    """docs/src/pbt.md's table: the drain at the end, a share of a longer run with more
    members a worker; the same draw, the same figure."""
    few = [pbt.simulated_utilization(1, 0.25, draw) for draw in range(3)]
    many = [pbt.simulated_utilization(4, 0.25, draw) for draw in range(3)]
    assert all(0 < u < 1 for u in few + many)
    assert min(many) > max(few)
    assert pbt.simulated_utilization(1, 0.25, 2) == few[2]


@pytest.mark.slow   # both problems, every contender: a minute on a busy machine
def test_the_smoke_run_scores_every_contender_on_both_problems(tmp_path, capsys):
    args = ["pbt", "--smoke", "--out", str(tmp_path), "--readme", str(tmp_path / "README.md")]
    done = subprocess.run([sys.executable, "-m", "benchmarks", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    (path,) = tmp_path.glob("*.json")
    part = json.loads(path.read_text())["parts"]["pbt"]
    assert part["problems"] == ["toy", "digits"]
    assert part["steps"] == {"toy": SMOKE.pbt_steps, "digits": SMOKE.pbt_digits_epochs}
    assert part["contenders"] == list(pbt.CONTENDERS)   # Ray Tune's: the test below
    assert sorted((r["problem"], r["contender"]) for r in part["runs"]) == sorted(
        (problem, name) for problem in ("toy", "digits") for name in part["contenders"])
    assert all(math.isfinite(r["log10_loss"]) and r["q25"] <= r["log10_loss"] <= r["q75"]
               for r in part["runs"])
    assert {problem: sorted(compared) for problem, compared in part["comparisons"].items()} \
        == {problem: sorted(set(part["contenders"]) - {"pbt"}) for problem in ("toy", "digits")}
    readme = (tmp_path / "README.md").read_text()
    assert "| digits | pbt |" in readme and "| digits | random + asha |" in readme
    # a real mpiexec pool: an async population of pbt_pool_members_per_worker members a
    # worker, to max_steps
    pool = part["pool"]
    assert (pool["workers"], pool["population"], pool["failed"], pool["stop_reason"]) == (
        SMOKE.pbt_pool_workers, SMOKE.pbt_pool_members_per_worker * SMOKE.pbt_pool_workers, 0,
        "the algorithm has no more points to propose")
    assert pool["utilizations"] == [pool["utilization"]]   # one study at smoke size
    assert pool["segments"] >= SMOKE.pbt_steps // SMOKE.pbt_interval
    assert 0 < pool["utilization"] <= 1 and 0 < pool["every_member_training_utilization"] <= 1
    assert pool["member_wait_s"] >= 0
    assert f"A real mpiexec pool of {SMOKE.pbt_pool_workers} workers" in readme
    # resumable: a line a (problem, contender, seed) in the cache; run again, all come from it
    (cache,) = (tmp_path / "pbt-runs").glob("*.jsonl")
    lines = [json.loads(line) for line in cache.read_text().splitlines()]
    n = 2 * len(pbt.CONTENDERS) * SMOKE.pbt_seeds
    assert sorted((r["problem"], r["contender"], r["seed"]) for r in lines) == sorted(
        (problem, name, seed) for problem in ("toy", "digits") for name in pbt.CONTENDERS
        for seed in range(SMOKE.pbt_seeds))
    assert all("benchmarks/pbt_problems.py" in r["code"] for r in lines)
    capsys.readouterr()
    again = pbt.run(replace(SMOKE, pbt_pool_workers=0), install=False,
                    cache_directory=tmp_path / "pbt-runs")
    assert f"{n} of {n} runs from the cache" in capsys.readouterr().out
    assert (again["runs"], again["comparisons"]) == (part["runs"], part["comparisons"])


@pytest.mark.slow   # installs Ray Tune in a virtualenv of its own once (minutes), starts Ray
@pytest.mark.timeout(1800)   # Ray Tune: minutes a fit on a busy machine
def test_ray_tunes_pbt_and_pb2_train_the_same_problem_in_their_own_virtualenv():
    why = pbt_ray.unavailable()
    if why is not None:
        pytest.skip(f"Ray Tune cannot be installed here (reported as missing): {why}")
    start = pbt_toy.loss(pbt_toy.START)
    for name in pbt_ray.SCHEDULERS:
        found = pbt_ray.scores("toy", name, [3], SMOKE.pbt_population, SMOKE.pbt_steps,
                               SMOKE.pbt_interval, pbt.QUANTILE)
        assert list(found) == [3]
        # a member that reached the steps, trained: the best final loss is below the start's
        assert all(0.0 <= loss < start for loss in found.values()), (name, found)


@pytest.mark.parametrize("problem", sorted(pbt.PROBLEMS))
def test_a_ray_run_depends_on_its_problem_and_not_on_the_framework(problem):
    """A Ray Tune line of the cache stays valid while ``emews/`` changes: the process that
    records it imports the problem's code and the part's, not the framework (only
    ``emews/__init__.py``, which imports nothing of it)."""
    probe = ("import json; from benchmarks import pbt_ray; "
             "from benchmarks.pbt_problems import PROBLEMS; "
             "from benchmarks.quality_runs import code_digests; "
             f"PROBLEMS[{problem!r}](); print(json.dumps(sorted(code_digests())))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True,
                          text=True, check=True)
    names = json.loads(done.stdout)
    assert {"benchmarks/pbt_problems.py", "benchmarks/pbt_ray.py"} <= set(names)
    assert [n for n in names if n.startswith("emews/")] == ["emews/__init__.py"], names
