"""Evaluations of several ranks, started by a real launcher (mpiexec from the mpich wheel).

The worker's side is what a pool's leading rank does with ``RunContext.resources``: here the
context is built directly and the implementation runs for real (the Model Shell, mpiexec, the
k processes of the model: tests/support/launch_models.py).
"""

import json
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from emews._errors import ConfigError
from emews.evaluate import _process as process
from emews.evaluate._launcher import Launcher, default_mpiexec, devices_of, rank_environ
from emews.launch import _script as scripts
from emews.launch import _site as sites
from emews.evaluate._app import App
from emews.evaluate._py import Py
from emews.evaluate._base import Cancelled, EvaluationFailed, Resources, RunContext
from conftest import alive, stored_rows, wait_until

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


def test_a_py_model_of_two_ranks_shares_emews_comm_and_rank_0_gives_the_value(tmp_path,
                                                                             support_path):
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
    with pytest.raises(EvaluationFailed, match="signal 9"):
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


TWO_NODES = Resources(4, ("n1", "n1", "n2", "n2"), ("0", "1", "2", "3"))


@pytest.mark.parametrize("site, prefix", [
    ("local", [default_mpiexec(), "-n", "4", "-hosts", "n1:2,n2:2"]),
    ("slurm", ["srun", "-n", "4", "-N", "2", "--exact", "--overlap", "--kill-on-bad-exit=1",
               "--nodelist=n1,n2", "--gpus=4"]),
    ("perlmutter", ["srun", "-n", "4", "-N", "2", "--exact", "--overlap",
                    "--kill-on-bad-exit=1", "-c", "32",
                    "--cpu-bind=cores", "--gpus-per-task=1", "--nodelist=n1,n2", "--gpus=4"]),
    ("summit", ["jsrun", "-n", "4", "-a1", "-c7", "-g1", "-bpacked:7"]),
])
def test_each_site_launches_an_evaluation_with_its_launchers_words(site, prefix):
    launcher = sites.load(site).eval_launcher()
    words = launcher.prefix(TWO_NODES)
    assert words == prefix


def test_a_site_launch_table_replaces_the_templates_and_travels_in_the_batch_script(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text('scheduler = "flux"\nlauncher = "flux"\ngpu_binding = "ZE_AFFINITY_MASK"\n'
                    '[launch]\ncommand = ["flux", "run", "-n", "{ranks}", "--exclusive"]\n'
                    'hosts = ["--requires=host:{hosts}"]\n')
    site = sites.load(path)
    job = scripts.Job(site, tmp_path / "EXP001", "s", procs=9, ppn=4)
    assert scripts.launch_command(job)[:6] == ["flux", "run", "-n", "9", "-N", "3"]
    line = next(line for line in scripts.render(job).splitlines()
                if line.startswith("export EMEWS_LAUNCH="))
    value = shlex.split(line.split("=", 1)[1])[0]
    launcher = Launcher.from_environ({"EMEWS_LAUNCH": value})
    assert launcher.prefix(TWO_NODES) == ["flux", "run", "-n", "4", "--exclusive",
                                          "--requires=host:n1,n2", "-g", "1"]  # gpus: default
    assert launcher.environ(TWO_NODES)["MASTER_ADDR"] == "n1"
    env = dict(launcher.environ(TWO_NODES), PMI_RANK="3", MPI_LOCALRANKID="1")
    assert rank_environ(env) == {"RANK": "3", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4",
                                 "ZE_AFFINITY_MASK": "3"}


def test_a_site_launch_table_with_an_unknown_key_is_refused_in_one_line(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('scheduler = "slurm"\nlauncher = "srun"\n[launch]\nargs = ["-x"]\n')
    with pytest.raises(ConfigError) as refused:
        sites.load(path)
    assert "[launch].args" in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize("gpus, expected", [
    (("0", "1", "2", "3"), [["0", "1"], ["2", "3"]]),   # two GPUs per process
    (("7",), [["7"], ["7"]]),                           # one GPU shared by both
    ((), [[], []]),
])
def test_each_process_gets_its_share_of_the_evaluations_gpus(gpus, expected):
    assert [devices_of(rank, 2, gpus) for rank in range(2)] == expected


def only_experiment(tmp_path):
    (expdir,) = (tmp_path / "experiments" / "study").iterdir()
    return expdir


@pytest.mark.slow
@pytest.mark.mpi
def test_a_py_study_of_two_ranks_per_evaluation_on_mpiexec(emews_cli, study, tmp_path):
    path = study(space=[{"name": "x", "type": "float", "lower": -2.0, "upper": 2.0}],
                 system={"procs": 5, "progress_interval": 60},
                 study={"budget": 6, "seed": 2, "objective": "launch_models:study_group",
                        "ranks_per_eval": 2})
    done = emews_cli("run", path)
    assert done.returncode == 0, done.stderr
    rows = stored_rows(only_experiment(tmp_path))
    assert [(r["status"], r["attempt"]) for r in rows] == [("done", 1)] * 6
    for row in rows:
        assert row["result"] == pytest.approx(row["params"]["x"] ** 2)
        metrics = row["metrics"]
        assert (metrics["size"], metrics["allreduce"], metrics["ranks"], metrics["world"],
                metrics["one_master"]) == (2, 3, 11, 2, 1)
    assert len({r["run_id"] for r in rows}) == 6   # each evaluation stored once


@pytest.mark.slow
@pytest.mark.mpi
def test_a_study_of_two_objectives_and_two_ranks_per_evaluation_stores_both(emews_cli, study,
                                                                           tmp_path):
    path = study(space=[{"name": "x", "type": "float", "lower": -2.0, "upper": 2.0}],
                 system={"procs": 3, "progress_interval": 60},
                 study={"budget": 3, "seed": 2, "objective": "launch_models:study_group",
                        "ranks_per_eval": 2, "algorithm": "random",
                        "objectives": ["val_loss", "allreduce"]})
    done = emews_cli("run", path)
    assert done.returncode == 0, done.stderr
    rows = stored_rows(only_experiment(tmp_path))
    assert [r["status"] for r in rows] == ["done"] * 3
    for row in rows:   # rank 0's reply carries every objective, not only the first
        assert row["objectives"] == pytest.approx([row["params"]["x"] ** 2, 3])


@pytest.mark.slow
@pytest.mark.mpi
def test_an_app_study_of_two_ranks_per_evaluation_on_mpiexec(emews_cli, study, tmp_path):
    path = study(space=[{"name": "x", "type": "float", "lower": -2.0, "upper": 2.0}],
                 system={"procs": 3, "progress_interval": 60},
                 study={"budget": 3, "seed": 2, "impl": "app", "app": APP,
                        "ranks_per_eval": 2})
    done = emews_cli("run", path)
    assert done.returncode == 0, done.stderr
    expdir = only_experiment(tmp_path)
    rows = stored_rows(expdir)
    assert [(r["status"], r["attempt"]) for r in rows] == [("done", 1)] * 3
    for row in rows:
        assert row["result"] == pytest.approx(3 * row["params"]["x"])   # x * 1 + x * 2
        run_dir = expdir / "run" / row["run_id"]
        assert [r["environ"]["RANK"] for r in records(run_dir, 2)] == ["0", "1"]


def sbatch_nodes(emews_cli, config, *args):
    done = emews_cli("submit", config, "--dry-run", "--site", "perlmutter", *args)
    assert done.returncode == 0, done.stderr
    (nodes,) = [line.split("=", 1)[1] for line in done.stdout.splitlines()
                if line.startswith("#SBATCH --nodes=")]
    return int(nodes)


@pytest.mark.parametrize("settings, nodes", [
    ({}, 1),                                            # 3 ranks at 4 per node
    ({"ranks_per_eval": 2, "gpus_per_eval": 8}, 2),     # 8 GPUs at Perlmutter's 4 per node
    ({"ranks_per_eval": 2, "nodes_per_eval": 2}, 2),
    ({"ranks_per_eval": 2, "gpus_per_eval": "$g"}, 3),  # the parameter's top end: 12 GPUs
])
def test_submit_sizes_the_job_for_its_largest_evaluation(emews_cli, study, settings, nodes):
    space = [{"name": "x", "type": "float", "lower": -2.0, "upper": 2.0},
             {"name": "g", "type": "categorical", "values": [2, 12]}]
    config = study(space=space, system={"procs": 3, "ppn": 4},
                   study={"budget": 4, "objective": "toy_models:quadratic", **settings})
    assert sbatch_nodes(emews_cli, config) == nodes
    if "gpus_per_eval" not in settings:
        assert sbatch_nodes(emews_cli, config, "--procs", "9") == 3   # procs still count


@pytest.mark.mpi
def test_ctrl_c_of_the_worker_stops_every_process_of_its_evaluation(tmp_path):
    expdir = tmp_path / "EXP001"
    run_dir = expdir / "run" / "RUN000001"
    worker = subprocess.Popen([sys.executable, str(SUPPORT / "launch_driver.py"), "hold",
                               str(expdir)], env=dict(os.environ, PYTHONPATH=str(SUPPORT)),
                              start_new_session=True)
    try:
        wait_until(lambda: all((run_dir / f"rank-{r}.json").is_file() for r in range(2)),
                   "both processes of the evaluation to start")
        pids = [r["pid"] for r in records(run_dir, 2)]
        assert all(alive(pid) for pid in pids)
        worker.send_signal(signal.SIGINT)
        assert worker.wait(timeout=60) == 128 + signal.SIGINT
        wait_until(lambda: not any(alive(pid) for pid in pids), "no process of it left", 30)
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)


def test_without_an_mpiexec_a_study_launch_refuses_in_one_line_naming_the_setting(
        tmp_path, monkeypatch):
    """One finder serves all: the study's launch (``emews.launch._spawn``) refuses what it
    finds when it is no program, naming ``[system].mpiexec``; an evaluation's launcher falls
    back on a bare ``mpiexec``; a batch job's Python gets the one beside it, else the bare name
    (its node's PATH resolves it), never this node's PATH."""
    from emews.launch import _spawn as spawn

    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))  # nothing beside it
    monkeypatch.setenv("PATH", str(tmp_path))
    assert default_mpiexec() == "mpiexec"
    with pytest.raises(ConfigError, match=r"^\[system\]\.mpiexec: no mpiexec found.*"
                                          r"got 'mpiexec'$"):
        spawn.runnable(default_mpiexec())
    (tmp_path / "mpiexec").write_text("#!/bin/sh\n")
    (tmp_path / "mpiexec").chmod(0o755)
    assert spawn.runnable(default_mpiexec()) == default_mpiexec() == str(tmp_path / "mpiexec")
    with pytest.raises(ConfigError, match=r"^\[system\]\.mpiexec: .*got '/no/mpiexec'$"):
        spawn.runnable("/no/mpiexec")   # a configured one that is not there
    job_python = tmp_path / "job" / "bin" / "python"
    assert default_mpiexec(str(job_python)) == "mpiexec"
    job_python.parent.mkdir(parents=True)
    (job_python.parent / "mpiexec").write_text("#!/bin/sh\n")
    assert default_mpiexec(str(job_python)) == str(job_python.parent / "mpiexec")
