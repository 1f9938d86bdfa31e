"""Evaluations of two ranks started as ``srun`` steps inside one ``sbatch`` allocation of the
real single-node Slurm (tests/support/slurm.py): an ``app`` and a ``py`` model, and a ``py``
model one of whose ranks is killed (the evaluation fails; no process of it is left)."""

import json
import shlex
import sys
from pathlib import Path

import pytest

SUPPORT = Path(__file__).parent / "support"
if str(SUPPORT) not in sys.path:
    sys.path.insert(0, str(SUPPORT))

from conftest import alive  # noqa: E402
from slurm import slurm_fixture, wait_for  # noqa: E402,F401  (the session fixture "slurm")

from emews.launch import site as sites  # noqa: E402

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
