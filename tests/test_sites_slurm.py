"""``emews submit`` on a real single-node Slurm (tests/support/slurm.py): a study run to the
end by the job, a chained follow-up that waits for it and resumes the finished study, a job
that drains before its walltime and the follow-up that ends its study, the jobs' states in
``emews status``, the site's GPU binding recorded by each worker, and a study served by
``emews serve`` to two sbatch pool jobs, one scancel'ed mid-study. Nothing is mocked; jobs are
polled with squeue."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

SUPPORT = Path(__file__).parent / "support"
if str(SUPPORT) not in sys.path:
    sys.path.insert(0, str(SUPPORT))

from conftest import NO_READY, wait_until  # noqa: E402
from slurm import slurm_fixture  # noqa: E402,F401  (the session fixture "slurm")

pytestmark = [pytest.mark.slow, pytest.mark.mpi]


@pytest.fixture
def submit(emews_cli, slurm):
    """Run ``emews submit ...`` against the test cluster; return the CompletedProcess."""

    def run(*args):
        return emews_cli("submit", *args, env={"SLURM_CONF": slurm.env["SLURM_CONF"],
                                               "EMEWS_TEST_SECONDS": "0.4"})

    return run


@pytest.fixture
def quadratic(study):
    return study(system={"procs": 2}, study={"budget": 6, "objective": "toy_models:quadratic",
                                             "seed": 5})


def rows(expdir):
    connection = sqlite3.connect(Path(expdir) / "results.db")
    try:
        return connection.execute("select * from evaluations order by id").fetchall()
    finally:
        connection.close()


def statuses(expdir):
    return [row[0] for row in sqlite3.connect(Path(expdir) / "results.db").execute(
        "select status from evaluations order by id")]


def record_of(expdir):
    return json.loads((Path(expdir) / "submit.json").read_text())


def job_field(slurm, job_id, name):
    """A ``Name=value`` field of ``scontrol show job``."""
    for word in slurm.command("scontrol", "show", "job", str(job_id), check=True).split():
        if word.startswith(f"{name}="):
            return word.split("=", 1)[1]
    raise AssertionError(f"no {name} in scontrol show job {job_id}")


def job_lines(emews_cli, slurm, expdir):
    """The job lines of ``emews status EXPDIR`` (asked where Slurm's commands are)."""
    shown = emews_cli("status", expdir, env={"SLURM_CONF": slurm.env["SLURM_CONF"]})
    assert shown.returncode == 0, shown.stderr
    return [line for line in shown.stdout.splitlines() if line.startswith(("job ", "jobs:"))]


def test_submit_runs_the_study_to_its_end_in_a_slurm_job(submit, quadratic, slurm, tmp_path):
    done = submit(quadratic, "--site", "slurm", "--walltime", "00:10:00")
    assert done.returncode == 0, done.stderr
    expdir = tmp_path / "experiments" / "study" / "EXP001"
    (job,) = record_of(expdir)["jobs"]
    assert done.stdout.splitlines()[0] == (f"emews: submitted job {job['id']} (slurm, site "
                                           f"slurm): {expdir / 'job-0.sh'}")
    assert job_field(slurm, job["id"], "JobName") == "emews-study"
    assert job_field(slurm, job["id"], "WorkDir") == str(expdir)
    assert job_field(slurm, job["id"], "TimeLimit") == "00:10:00"
    slurm.wait_gone(job["id"])
    assert job_field(slurm, job["id"], "JobState") == "COMPLETED"
    assert statuses(expdir) == ["done"] * 6
    assert Path(job["script"]).read_text().strip().splitlines()[-1].startswith(
        "srun -n 2 --ntasks-per-node=2 ")
    assert "evaluation budget of 6 reached" in Path(job["stdout"]).read_text()
    assert Path(job["scheduler_output"]).parent == expdir / "psij" / "slurm"
    assert Path(job["scheduler_output"]).is_file()
    assert f"/bin/bash {job['script']}" in Path(job["psij_script"]).read_text()


def test_chain_queues_a_follow_up_that_waits_and_resumes_the_finished_study(
        submit, quadratic, slurm, tmp_path):
    slurm.command("scontrol", "update", "PartitionName=debug", "State=DOWN", check=True)
    try:
        done = submit(quadratic, "--site", "slurm", "--chain", "1")
        assert done.returncode == 0, done.stderr
        expdir = tmp_path / "experiments" / "study" / "EXP001"
        first, second = record_of(expdir)["jobs"]
        assert second["after"] == first["id"]
        assert slurm.command("squeue", "-h", "-j", second["id"], "-o", "%E").strip() == \
            f"afterany:{first['id']}(unfulfilled)"
        assert f"#SBATCH --dependency=afterany:{first['id']}" in \
            Path(second["script"]).read_text()
        slurm.command("scontrol", "hold", second["id"], check=True)
    finally:
        slurm.command("scontrol", "update", "PartitionName=debug", "State=UP", check=True)
    slurm.wait_gone(first["id"])
    assert job_field(slurm, first["id"], "JobState") == "COMPLETED"
    finished = rows(expdir)
    assert statuses(expdir) == ["done"] * 6
    slurm.command("scontrol", "release", second["id"], check=True)
    slurm.wait_gone(second["id"])
    assert job_field(slurm, second["id"], "JobState") == "COMPLETED"
    assert job_field(slurm, second["id"], "ExitCode") == "0:0"
    assert rows(expdir) == finished
    assert "evaluation budget of 6 reached" in Path(second["stdout"]).read_text()


def test_each_worker_records_the_gpu_the_site_binds_it_to(submit, study, slurm, tmp_path):
    config = study(system={"procs": 2}, study={"budget": 2,
                                               "objective": "toy_models:quadratic"})
    site = tmp_path / "amd.toml"
    site.write_text('scheduler = "slurm"\nlauncher = "srun"\ngpus_per_node = 2\n'
                    'gpu_binding = "ROCR_VISIBLE_DEVICES"\n')
    done = submit(config, "--site", str(site))
    assert done.returncode == 0, done.stderr
    expdir = tmp_path / "experiments" / "study" / "EXP001"
    (job,) = record_of(expdir)["jobs"]
    slurm.wait_gone(job["id"])
    assert statuses(expdir) == ["done"] * 2
    first_line = (expdir / "out" / "out-1.txt").read_text().splitlines()[0]
    assert first_line == ("emews: rank 1 GPUs (ROCR_VISIBLE_DEVICES, 2 per node): "
                          "ROCR_VISIBLE_DEVICES=1")
    assert json.loads((expdir / "config.json").read_text())["system"]["gpus_per_node"] == 2



@pytest.fixture
def service(tmp_path):
    """Start ``emews serve CONFIG`` here (its own session); return (process, EXPDIR)."""
    started = []

    def start(config):
        env = dict(os.environ, PYTHONPATH=str(SUPPORT), EMEWS_TEST_SECONDS="0.4")
        process = subprocess.Popen([sys.executable, "-m", "emews", "serve", str(config)],
                                   cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, start_new_session=True)
        started.append(process)
        expdir = tmp_path / "experiments" / "study" / "EXP001"
        wait_until((expdir / "service.json").exists, "service.json")
        return process, expdir

    yield start
    for process in started:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()


def count_done(expdir):
    try:
        return len([s for s in statuses(expdir) if s == "done"])
    except sqlite3.OperationalError:
        return 0


def test_two_pool_jobs_serve_one_study_and_a_cancelled_one_loses_nothing(
        service, submit, study, slurm, emews_cli):
    config = study(system={"procs": 3, "progress_interval": 60},
                   study={"budget": 12, "seed": 4, "objective": "fault_me:slow_square"},
                   service={"lease": 3.0})
    server, expdir = service(config)
    done = submit("--resume", expdir, "--site", "slurm", "--pools", "2",
                  "--walltime", "00:10:00")
    assert done.returncode == 0, done.stderr
    doomed, survivor = record_of(expdir)["jobs"]
    wait_until(lambda: all(slurm.job_state(job["id"]) == "RUNNING"
                           for job in (doomed, survivor)), "both pool jobs to run")
    wait_until(lambda: count_done(expdir) >= 3, "three results")
    slurm.command("scancel", doomed["id"], check=True)
    out, err = server.communicate(timeout=180)
    assert server.returncode == 0, err
    assert "evaluation budget of 12 reached" in out
    with sqlite3.connect(expdir / "results.db") as db:  # every evaluation once, all done
        stored = db.execute("select id, status from evaluations order by id").fetchall()
    assert stored == [(i, "done") for i in range(12)]
    slurm.wait_gone(doomed["id"])
    slurm.wait_gone(survivor["id"])
    assert job_field(slurm, doomed["id"], "JobState") == "CANCELLED"
    assert job_field(slurm, survivor["id"], "JobState") == "COMPLETED"
    assert job_lines(emews_cli, slurm, expdir) == [f"job {doomed['id']} (pool): CANCELLED",
                                                   f"job {survivor['id']} (pool): COMPLETED"]
    assert "emews: pool left: the study ended" in Path(survivor["stdout"]).read_text()


def test_a_job_drains_before_its_walltime_and_its_chained_follow_up_ends_the_study(
        emews_cli, study, slurm, tmp_path):
    # 3 s each: the first job drains 30 s in (a 1-minute walltime's margin), after at most
    # 10; its follow-up finishes the rest well within its own 30 s (each starts in about 2 s)
    budget = 12
    config = study(system={"procs": 2, "progress_interval": 60},
                   study={"budget": budget, "seed": 2, "algorithm": NO_READY,
                          "objective": "slurm_models:job_square"})
    done = emews_cli("submit", config, "--site", "slurm", "--walltime", "00:01:00",
                     "--chain", "1", env={"SLURM_CONF": slurm.env["SLURM_CONF"],
                                          "EMEWS_TEST_SECONDS": "3"})
    assert done.returncode == 0, done.stderr
    expdir = tmp_path / "experiments" / "study" / "EXP001"
    first, second = record_of(expdir)["jobs"]
    assert job_field(slurm, first["id"], "TimeLimit") == "00:01:00"
    wait_until(lambda: slurm.job_state(first["id"]) == "RUNNING", "the first job to run")
    assert job_lines(emews_cli, slurm, expdir) == [f"job {first['id']} (study): RUNNING",
                                                   f"job {second['id']} (study): PENDING"]
    slurm.wait_gone(first["id"])
    assert job_field(slurm, first["id"], "JobState") == "COMPLETED"  # drained, not killed
    assert job_field(slurm, first["id"], "ExitCode") == "0:0"
    assert "stopped: the job's walltime is about to run out; the next job resumes the study" \
        in Path(first["stdout"]).read_text()
    slurm.wait_gone(second["id"])
    assert job_field(slurm, second["id"], "JobState") == "COMPLETED"
    assert job_field(slurm, second["id"], "ExitCode") == "0:0"
    assert f"evaluation budget of {budget} reached" in Path(second["stdout"]).read_text()
    with sqlite3.connect(expdir / "results.db") as db:
        stored = db.execute("select id, status, json_extract(metrics, '$.slurm_job') "
                            "from evaluations order by id").fetchall()
        attempts = db.execute("select id, attempt, status from attempts order by id").fetchall()
        resumes = json.loads(db.execute("select value from meta where key='resumes'")
                             .fetchone()[0])
    assert [(i, status) for i, status, _ in stored] == [(i, "done") for i in range(budget)]
    assert attempts == [(i, 1, "done") for i in range(budget)]  # none cut off and run again
    by_job = [str(int(job)) for _, _, job in stored]
    drained = by_job.count(first["id"])  # the first job ran ids 0..k-1, the follow-up the rest
    assert 0 < drained < budget
    assert by_job == [first["id"]] * drained + [second["id"]] * (budget - drained)
    assert resumes == 1
    assert job_lines(emews_cli, slurm, expdir) == [f"job {first['id']} (study): COMPLETED",
                                                   f"job {second['id']} (study): COMPLETED"]
