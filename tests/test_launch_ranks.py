"""Evaluations of several ranks, started by a real launcher (mpiexec from the mpich wheel).

The worker's side is what a pool's leading rank does with ``RunContext.resources``: here the
context is built directly and the implementation runs for real (the Model Shell, mpiexec, the
k processes of the model: tests/support/launch_models.py).
"""

import json
import sys
from pathlib import Path

import pytest

from emews.evaluate import process
from emews.evaluate.app import App
from emews.evaluate.py import Py
from emews.evaluate.base import Cancelled, EvaluationFailed, Resources, RunContext
from conftest import alive

SUPPORT = Path(__file__).parent / "support"
APP = [sys.executable, str(SUPPORT / "launch_models.py"), "app"]


def context(tmp_path, ranks=2, gpus=(), run_id="RUN000001"):
    return RunContext("EXP001", run_id, "launch", tmp_path / "EXP001", {},
                      Resources(ranks, ("localhost",) * ranks, tuple(gpus)))


@pytest.fixture
def support_path(monkeypatch):
    monkeypatch.syspath_prepend(str(SUPPORT))   # launch_models, as a study's objective


def records(run_dir, ranks):
    return [json.loads((Path(run_dir) / f"rank-{r}.json").read_text()) for r in range(ranks)]


def test_an_app_model_of_two_ranks_starts_under_mpiexec_with_each_ranks_variables(tmp_path):
    ctx = context(tmp_path, 2, gpus=("3", "5"))
    value = App(APP, {}).run({"x": 1.5}, json.dumps({"x": 1.5}), ctx, process.Watch(60))
    assert float(value) == 1.5 * 1 + 1.5 * 2   # rank 0's allreduce over both processes
    ranks = records(ctx.run_dir, 2)
    assert [r["size"] for r in ranks] == [2, 2] and [r["rank"] for r in ranks] == [0, 1]
    assert len({r["pid"] for r in ranks}) == 2
    for rank, record in enumerate(ranks):
        env = record["environ"]
        assert (env["WORLD_SIZE"], env["RANK"], env["LOCAL_RANK"]) == ("2", str(rank), str(rank))
        assert env["CUDA_VISIBLE_DEVICES"] == ("3", "5")[rank]
        assert env["MASTER_ADDR"] == "127.0.0.1" and int(env["MASTER_PORT"]) > 0
    assert ranks[0]["environ"]["MASTER_PORT"] == ranks[1]["environ"]["MASTER_PORT"]
    command = (ctx.run_dir / "run_command.txt").read_text()
    assert "mpiexec -n 2" in command


def test_an_app_rank_killed_fails_the_evaluation_and_leaves_no_process(tmp_path):
    ctx = context(tmp_path, 2)
    point = {"x": 1.0, "die_rank": 1}
    with pytest.raises(EvaluationFailed) as failed:
        App(APP, {}).run(point, json.dumps(point), ctx, process.Watch(120))
    assert "the model" in str(failed.value)
    pids = [r["pid"] for r in records(ctx.run_dir, 2)]
    assert not any(alive(pid) for pid in pids)


def test_a_cancel_stops_every_process_of_the_evaluation(tmp_path):
    ctx = context(tmp_path, 2)
    point = {"x": 1.0, "sleep": 600}

    def all_started():   # cancelled once every process has written its record
        return all((ctx.run_dir / f"rank-{r}.json").is_file() for r in range(2))

    with pytest.raises(Cancelled):
        App(APP, {}).run(point, json.dumps(point), ctx,
                         process.Watch(120, grace=2, cancelled=all_started))
    pids = [r["pid"] for r in records(ctx.run_dir, 2)]
    assert not any(alive(pid) for pid in pids)


def test_a_py_model_of_two_ranks_shares_emews_comm_and_rank_0_gives_the_value(tmp_path, support_path):
    ctx = context(tmp_path, 2, gpus=("1",))   # one GPU shared by both processes
    value = Py("launch_models:check_group").run({"x": 2.0}, json.dumps({"x": 2.0}), ctx,
                                                process.Watch(120))
    assert float(value) == 2.0 * 1 + 2.0 * 2
    ranks = records(ctx.run_dir, 2)
    assert [(r["rank"], r["size"], r["allreduce"]) for r in ranks] == [(0, 2, 6.0), (1, 2, 6.0)]
    for rank, record in enumerate(ranks):
        env = record["environ"]
        assert (env["WORLD_SIZE"], env["RANK"], env["LOCAL_RANK"]) == ("2", str(rank), str(rank))
        assert env["CUDA_VISIBLE_DEVICES"] == "1" and env["MASTER_ADDR"] == "127.0.0.1"
    assert not (ctx.run_dir / "group-task.json").exists()


def test_a_py_rank_killed_fails_the_evaluation_and_leaves_no_process(tmp_path, support_path):
    ctx = context(tmp_path, 2)
    point = {"x": 1.0, "die_rank": 1}
    with pytest.raises(EvaluationFailed, match="killed by signal|exited with status"):
        Py("launch_models:check_group").run(point, json.dumps(point), ctx, process.Watch(120))
    assert not any(alive(r["pid"]) for r in records(ctx.run_dir, 2))


def test_a_py_group_cancelled_leaves_no_process(tmp_path, support_path):
    ctx = context(tmp_path, 2)
    point = {"x": 1.0, "sleep": 600}

    def all_started():
        return all((ctx.run_dir / f"rank-{r}.json").is_file() for r in range(2))

    with pytest.raises(Cancelled):
        Py("launch_models:check_group").run(point, json.dumps(point), ctx,
                                            process.Watch(120, grace=2, cancelled=all_started))
    assert not any(alive(r["pid"]) for r in records(ctx.run_dir, 2))
