"""Evaluations of two ranks started as ``srun`` steps inside one ``sbatch`` allocation of the
real single-node Slurm (tests/support/slurm.py): an ``app`` and a ``py`` model, and a ``py``
model one of whose ranks is killed (the evaluation fails; no process of it is left); and a
worker killed with SIGKILL while its evaluation's step runs (the step is stopped with it)."""

import json
import os
import shlex
import signal
import sys
from pathlib import Path

import pytest

SUPPORT = Path(__file__).parent / "support"
if str(SUPPORT) not in sys.path:
    sys.path.insert(0, str(SUPPORT))

from conftest import alive  # noqa: E402
from slurm import slurm_fixture, wait_for  # noqa: E402,F401  (the session fixture "slurm")

from emews.launch import _site as sites  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.mpi]


def test_evaluations_of_two_ranks_run_as_srun_steps_in_one_allocation(slurm, tmp_path):
    launcher = sites.load("slurm").eval_launcher()
    out, expdir = tmp_path / "out.json", tmp_path / "EXP001"
    job = tmp_path / "job.sh"
    job.write_text("\n".join([
        "#!/bin/bash", f"export EMEWS_LAUNCH={shlex.quote(launcher.as_json())}",
        f"export PYTHONPATH={shlex.quote(str(SUPPORT))}",
        # the study's step: one rank (the leading worker) that starts the evaluations' steps
        shlex.join(["srun", "-n", "1", sys.executable, str(SUPPORT / "launch_driver.py"),
                    str(out), str(expdir)]), ""]))
    submitted = slurm.command("sbatch", "--parsable", "-n", "4", "-o", str(tmp_path / "job.out"),
                              str(job), check=True)
    job_id = submitted.strip().split(";")[0]
    slurm.wait_gone(job_id, timeout=240)
    assert out.is_file(), (tmp_path / "job.out").read_text() + slurm.logs()
    results = json.loads(out.read_text())
    assert results["app"] == {"value": 1.5 + 3.0}
    assert results["py"] == {"value": 2.0 + 4.0}
    assert "before rank 0 replied" in results["killed"]["error"]   # not a timeout
    for run_id, env_of_rank in (("RUN000001", "app"), ("RUN000002", "py")):
        run_dir = expdir / "run" / run_id
        records = [json.loads((run_dir / f"rank-{r}.json").read_text()) for r in range(2)]
        assert [(r["rank"], r["size"]) for r in records] == [(0, 2), (1, 2)], env_of_rank
        assert [r["environ"]["RANK"] for r in records] == ["0", "1"]
        assert all(r["environ"]["WORLD_SIZE"] == "2" for r in records)
        steps = {r["environ"]["SLURM_STEP_ID"] for r in records}
        assert len(steps) == 1 and steps != {"0"}   # a step of its own, not the study's
    command = (expdir / "run" / "RUN000001" / "run_command.txt").read_text()
    assert "srun -n 2 -N 1 --exact --overlap --kill-on-bad-exit=1" in command
    killed = expdir / "run" / "RUN000003"
    pids = [json.loads((killed / f"rank-{r}.json").read_text())["pid"] for r in range(2)]
    assert not any(alive(pid) for pid in pids)


def test_a_worker_killed_with_sigkill_takes_its_evaluation_s_srun_step_with_it(slurm, tmp_path):
    # srun killed outright leaves its step running: the group's guard sends SIGTERM first,
    # which srun passes on to its step, whose processes are not in the worker's group
    launcher = sites.load("slurm").eval_launcher()
    expdir = tmp_path / "EXP001"
    job = tmp_path / "job.sh"
    job.write_text("\n".join([
        "#!/bin/bash", f"export EMEWS_LAUNCH={shlex.quote(launcher.as_json())}",
        f"export PYTHONPATH={shlex.quote(str(SUPPORT))}",
        shlex.join(["srun", "-n", "1", sys.executable, str(SUPPORT / "launch_driver.py"),
                    "hold", str(expdir)]),
        "sleep 600", ""]))   # the allocation outlives its worker: its end would stop every step
    submitted = slurm.command("sbatch", "--parsable", "-n", "4", "-o", str(tmp_path / "job.out"),
                              str(job), check=True)
    job_id = submitted.strip().split(";")[0]
    try:
        run_dir = expdir / "run" / "RUN000001"
        wait_for(lambda: all((run_dir / f"rank-{r}.json").exists() for r in range(2)), 120,
                 "both ranks of the evaluation")
        pids = [json.loads((run_dir / f"rank-{r}.json").read_text())["pid"] for r in range(2)]
        steps = slurm.command("squeue", "-h", "-s", "-j", job_id, "-o", "%i", check=True).split()
        assert f"{job_id}.1" in steps, steps    # the evaluation's own step
        os.kill(int((expdir / "worker.pid").read_text()), signal.SIGKILL)
        wait_for(lambda: not any(alive(pid) for pid in pids), 30,
                 "the evaluation's processes to end with their worker")
        wait_for(lambda: f"{job_id}.1" not in slurm.command(
            "squeue", "-h", "-s", "-j", job_id, "-o", "%i", check=True).split(), 60,
            "the evaluation's step to end")
        assert slurm.job_state(job_id) == "RUNNING"   # the allocation did not stop it
    finally:
        slurm.command("scancel", job_id)
        slurm.wait_gone(job_id, timeout=120)
