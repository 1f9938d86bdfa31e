"""Site files and batch scripts: every shipped site renders, each scheduler's directives, the
validation of a site file, quoting, precedence, GPU binding, and a study submitted to the
``local`` site (no scheduler). Submissions to a real Slurm are in test_sites_slurm.py."""

import json
import os
import re
import shlex
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from emews.evaluate._launcher import BINDING_VARIABLE
from emews.launch import _gpus as gpus
from emews._experiment import read_store
from emews.launch import _site as sites
from emews.store import SQLiteStore

SITES = sites.shipped_sites()


@pytest.fixture
def quadratic(study):
    """A small study of toy_models:quadratic; returns its path."""
    return study(system={"procs": 2}, study={"budget": 6, "objective": "toy_models:quadratic",
                                             "seed": 3})


def dry_run(emews_cli, config, *args, env=None):
    done = emews_cli("submit", config, "--dry-run", *args, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def directive_lines(text, prefix):
    return [line[len(prefix):].strip() for line in text.splitlines() if line.startswith(prefix)]


def test_the_named_sites_ship():
    assert {"local", "slurm", "pbs", "lsf", "flux", "frontier", "polaris", "perlmutter", "summit",
            "aurora", "lambda"} <= set(SITES)


@pytest.mark.parametrize("name", SITES)
def test_every_shipped_site_renders_a_script_that_bash_can_parse(name, emews_cli, quadratic,
                                                                 tmp_path):
    text = dry_run(emews_cli, quadratic, "--site", name, "--procs", "9", "--project", "P1")
    site = sites.load(name)
    assert text.startswith("#!/bin/bash\n")
    launch = shlex.split(text.strip().splitlines()[-1])
    expdir = str(tmp_path / "experiments" / "study" / "EXPnnn")
    assert launch[-5:] == ["-m", "emews", "run", "--resume", expdir]
    assert launch[-6] == sys.executable
    assert launch[launch.index("-n") + 1] == "9"
    assert site.launcher in Path(launch[0]).name or launch[0] == site.launcher_command
    assert f"export EMEWS_GPU_BINDING={site.gpu_binding}" in text
    for module in site.environment.get("modules", []):
        assert module in text
    assert not (tmp_path / "experiments").exists()  # a dry run makes nothing
    script = tmp_path / "job.sh"
    script.write_text(text)
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    if site.scheduler != "local":
        assert "P1" in "".join(directive_lines(text, {"slurm": "#SBATCH", "pbs": "#PBS",
                                                      "lsf": "#BSUB", "flux": "# flux:"}
                                                     [site.scheduler]))


BATCH = ("--procs", "10", "--ppn", "4", "--walltime", "01:30:00", "--queue", "q1",
         "--project", "ACC1")


def test_slurm_directives_and_launch_line(emews_cli, quadratic):
    text = dry_run(emews_cli, quadratic, "--site", "slurm", *BATCH)
    lines = directive_lines(text, "#SBATCH")
    for expected in ("--nodes=3", "--ntasks-per-node=4", "--time=01:30:00", "--partition=q1",
                     "--account=ACC1", "--job-name=emews-study"):
        assert expected in lines
    assert any(re.fullmatch(r"--output=.*/EXPnnn/job-0\.out", line) for line in lines)
    assert text.strip().splitlines()[-1].startswith("srun -n 10 --ntasks-per-node=4 ")


def test_pbs_directives_and_launch_line(emews_cli, quadratic):
    text = dry_run(emews_cli, quadratic, "--site", "polaris", *BATCH)
    lines = directive_lines(text, "#PBS")
    for expected in ("-l select=3:ncpus=4:mpiprocs=4", "-l walltime=01:30:00", "-q q1",
                     "-A ACC1", "-l place=scatter", "-l filesystems=home:grand:eagle"):
        assert expected in lines
    assert text.strip().splitlines()[-1].startswith(
        "mpiexec -n 10 --ppn 4 --depth=8 --cpu-bind depth ")
    assert "module use /soft/modulefiles\nmodule load conda\nconda activate base\n" in text


def test_lsf_directives_and_launch_line(emews_cli, quadratic):
    text = dry_run(emews_cli, quadratic, "--site", "summit", *BATCH)
    lines = directive_lines(text, "#BSUB")
    for expected in ("-nnodes 3", "-W 90", "-q q1", "-P ACC1",
                     '-alloc_flags "NVME maximizegpfs"'):
        assert expected in lines
    assert text.strip().splitlines()[-1].startswith("jsrun -n 10 -a1 -c7 -g1 -bpacked:7 ")
    assert "module unload darshan-runtime\nmodule load spectrum-mpi open-ce\n" in text


def test_the_site_fills_what_the_study_leaves_unset_and_the_study_and_command_line_win(
        emews_cli, study):
    config = study(system={"procs": 16}, study={"budget": 6,
                                                "objective": "toy_models:quadratic"})
    lines = directive_lines(dry_run(emews_cli, config, "--site", "frontier"), "#SBATCH")
    assert {"--nodes=2", "--ntasks-per-node=8", "--time=01:00:00", "--partition=batch",
            "--constraint=nvme"} <= set(lines)
    config = study(system={"procs": 16, "walltime": "00:05:00", "queue": "debug"},
                   study={"budget": 6, "objective": "toy_models:quadratic"})
    text = dry_run(emews_cli, config, "--site", "frontier", "--queue", "extended",
                   env={"PROJECT": "FROMENV"})
    lines = directive_lines(text, "#SBATCH")
    assert {"--time=00:05:00", "--partition=extended", "--account=FROMENV"} <= set(lines)


def test_chain_renders_follow_ups_that_depend_on_the_job_before(emews_cli, quadratic):
    text = dry_run(emews_cli, quadratic, "--site", "slurm", "--chain", "2")
    assert text.count("#!/bin/bash") == 3
    assert directive_lines(text, "#SBATCH --dependency=") == ['"afterany:<job 0>"',
                                                             '"afterany:<job 1>"']


def write_site(path, text):
    path.write_text(text)
    return path


def test_a_user_site_is_found_by_path_and_in_the_config_directory(emews_cli, quadratic,
                                                                  tmp_path):
    own = write_site(tmp_path / "mine.toml", 'scheduler = "pbs"\nlauncher = "aprun"\n'
                     'ppn = 2\n[batch]\nqueue = "workq"\n')
    text = dry_run(emews_cli, quadratic, "--site", str(own))
    assert "#PBS -q workq" in text
    assert shlex.split(text.strip().splitlines()[-1])[:5] == ["aprun", "-n", "2", "-N", "2"]
    home = tmp_path / "home"
    (home / ".config" / "emews" / "sites").mkdir(parents=True)
    write_site(home / ".config" / "emews" / "sites" / "cluster9.toml",
               'scheduler = "lsf"\nlauncher = "jsrun"\n')
    text = dry_run(emews_cli, quadratic, "--site", "cluster9", env={"HOME": str(home)})
    assert "#BSUB -nnodes 1" in text


@pytest.mark.parametrize("text, where, rule", [
    ('scheduler = "sge"\nlauncher = "srun"\n', "scheduler", "must be one of"),
    ('scheduler = "slurm"\nlauncher = "srun"\ncolour = "red"\n', "colour",
     "is not a site setting"),
    ('scheduler = "slurm"\nlauncher = "srun"\nppn = 0\n', "ppn", "must be positive"),
    ('scheduler = "slurm"\nlauncher = "srun"\n[batch]\nwalltime = "2h"\n', "[batch].walltime",
     "must be HH:MM:SS"),
    ('scheduler = "slurm"\nlauncher = "srun"\n[batch]\nqueue = "a;b"\n', "[batch].queue",
     "must be one word"),
    ('scheduler = "slurm"\nlauncher = "srun"\n[environment]\nvariables = { "A-B" = "1" }\n',
     "[environment].variables", "each key must be a variable name"),
    ('scheduler = "slurm"\nlauncher = "srun"\n[environment]\nmodules = ["a b"]\n',
     "[environment].modules", "must be one word"),
    ('scheduler = "slurm"\nlauncher = "srun"\n[batch]\ndirectives = { C = "x\\"y" }\n',
     "[batch].directives", "without '\"'"),
    ('launcher = "srun"\n', "scheduler", "is required"),
    ('scheduler = "pbs"\nlauncher = "srun"\n', "launcher", "srun needs scheduler"),
    ('scheduler = "slurm"\nlauncher = "srun"\nppn = \n', "", "must be valid TOML"),
])
def test_a_bad_site_file_is_one_line_naming_the_file_key_rule_and_value(
        text, where, rule, emews_cli, quadratic, tmp_path):
    path = write_site(tmp_path / "bad.toml", text)
    done = emews_cli("submit", quadratic, "--site", str(path), "--dry-run")
    assert done.returncode == 2
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"emews: error: {path}: {where}")
    assert rule in line


def test_a_bad_walltime_or_an_unknown_site_is_one_line(emews_cli, quadratic):
    done = emews_cli("submit", quadratic, "--site", "slurm", "--walltime", "90min",
                     "--dry-run")
    assert done.returncode == 2
    assert done.stderr.splitlines() == ["emews: error: command line: system.walltime: must be "
                                        "HH:MM:SS, D-HH:MM:SS or whole minutes, got '90min'"]
    done = emews_cli("submit", quadratic, "--site", "nosuchmachine", "--dry-run")
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert "--site: must name a site" in done.stderr and "'nosuchmachine'" in done.stderr


def test_values_reach_the_script_quoted_never_as_shell(emews_cli, quadratic, tmp_path):
    record = tmp_path / "record.py"
    record.write_text("import json, os, sys\n"
                      "print(json.dumps({'argv': sys.argv[1:], 'EVIL': os.environ['EVIL'], "
                      "'PATH': os.environ['PATH']}))\n")
    marker = tmp_path / "pwned"
    own = write_site(tmp_path / "q.toml", 'scheduler = "local"\nlauncher = "mpiexec"\n'
                     f'launcher_command = "{tmp_path}/launch"\n'
                     f'launcher_args = ["--x=$(touch {marker})", "a b"]\n'
                     f'[environment]\nvariables = {{ EVIL = "$(touch {marker}); \'q\'" }}\n'
                     'prepend = { PATH = ["/opt/with space/bin"] }\n')
    launcher = tmp_path / "launch"
    launcher.write_text(f"#!/bin/sh\nexec {sys.executable} {record} \"$@\"\n")
    launcher.chmod(0o755)
    text = dry_run(emews_cli, quadratic, "--site", str(own), "--name", "it's $(x)")
    script = tmp_path / "job.sh"
    script.write_text(text.replace(str(tmp_path / "experiments"), str(tmp_path)))
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["EVIL"] == f"$(touch {marker}); 'q'"
    assert seen["argv"][:4] == ["-n", "2", f"--x=$(touch {marker})", "a b"]
    assert seen["PATH"].startswith("/opt/with space/bin:")
    assert not marker.exists()
    assert "--job-name=" not in text  # no scheduler, no directives


def test_missing_scheduler_command_is_one_line_and_makes_nothing(emews_cli, quadratic,
                                                                 tmp_path):
    path = str(Path(sys.executable).parent)  # the venv's bin: no sbatch there
    done = emews_cli("submit", quadratic, "--site", "slurm", env={"PATH": path})
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "emews: error: site slurm: submits with sbatch, which is not on PATH (run emews submit "
        "where slurm jobs are submitted)"]
    assert not (tmp_path / "experiments").exists()


def test_chain_needs_a_scheduler_with_dependencies(emews_cli, quadratic):
    done = emews_cli("submit", quadratic, "--site", "local", "--chain", "1")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "emews: error: --chain: needs a scheduler with job dependencies ['lsf', 'pbs', "
        "'slurm']; site local has 'local'"]


@pytest.mark.parametrize("binding, expected", [
    ("CUDA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES=1"),
    ("ROCR_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES=1"),
    ("ZE_AFFINITY_MASK", "ZE_AFFINITY_MASK=1"),
])
def test_gpu_binding_sets_the_site_s_variable_and_says_so(binding, expected, capsys):
    environ = {"SLURM_LOCALID": "3", BINDING_VARIABLE: binding}
    assert gpus.assign(7, 2, environ=environ) == "1"
    assert environ[binding] == "1"
    out = capsys.readouterr().out
    assert out == f"emews: rank 7 GPUs ({binding}, 2 per node): {expected}\n"


def test_a_launcher_binding_sets_nothing_and_records_what_the_launcher_gave(capsys):
    environ = {"SLURM_LOCALID": "1", "ROCR_VISIBLE_DEVICES": "5"}
    assert gpus.assign(2, 8, environ=environ, binding="launcher") is None
    assert environ == {"SLURM_LOCALID": "1", "ROCR_VISIBLE_DEVICES": "5"}
    assert capsys.readouterr().out == ("emews: rank 2 GPUs (launcher, 8 per node): "
                                       "ROCR_VISIBLE_DEVICES=5\n")


def _gone(pid):
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("Z", "X")


def wait_until(predicate, timeout, what):
    deadline, delay = time.monotonic() + timeout, 0.05
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(delay)
        delay = min(delay * 2, 0.5)


@pytest.mark.slow
@pytest.mark.mpi
def test_submit_to_the_local_site_runs_the_study_detached(emews_cli, study, tmp_path):
    config = study(system={"procs": 3}, study={"budget": 6, "objective": "toy_models:quadratic",
                                               "seed": 1})
    site = write_site(tmp_path / "gpu-box.toml", 'scheduler = "local"\nlauncher = "mpiexec"\n'
                      'gpus_per_node = 2\ngpu_binding = "CUDA_VISIBLE_DEVICES"\n'
                      '[langs_app]\nvariables = { TF_NUM_INTRAOP_THREADS = "1" }\n')
    done = emews_cli("submit", config, "--site", str(site))
    assert done.returncode == 0, done.stderr
    expdir = tmp_path / "experiments" / "study" / "EXP001"
    record = json.loads((expdir / "submit.json").read_text())   # the export of the store's row
    assert read_store(expdir, lambda store: store.meta("submit")) == record
    (job,) = record["jobs"]
    assert f"emews: submitted job {job['id']} (local, site gpu-box)" in done.stdout
    wait_until(lambda: _gone(int(job["id"])), 120, "the local job to end")
    assert job_lines(emews_cli("status", expdir)) == [f"job {job['id']} (study): ENDED"]
    rows = sqlite3.connect(expdir / "results.db").execute(
        "select status from evaluations").fetchall()
    assert rows == [("done",)] * 6
    assert "evaluation budget of 6 reached" in Path(job["stdout"]).read_text()
    devices = {(expdir / "out" / f"out-{rank}.txt").read_text().splitlines()[0]
               for rank in (1, 2)}
    langs_app = (expdir / "langs-app.sh").read_text()
    assert "\nexport TF_NUM_INTRAOP_THREADS=1\n" in langs_app
    assert f"export EMEWS_LANGS_APP=${{EMEWS_LANGS_APP:-{expdir}/langs-app.sh}}" in \
        Path(job["script"]).read_text()
    again = emews_cli("submit", "--resume", expdir, "--site", "slurm", "--dry-run")
    assert again.returncode == 0, again.stderr
    assert f"#SBATCH --output={expdir}/job-1.out" in again.stdout
    assert devices == {"emews: rank 1 GPUs (CUDA_VISIBLE_DEVICES, 2 per node): "
                       "CUDA_VISIBLE_DEVICES=1",
                       "emews: rank 2 GPUs (CUDA_VISIBLE_DEVICES, 2 per node): "
                       "CUDA_VISIBLE_DEVICES=0"}


def test_without_psij_submit_names_the_extra_to_install(quadratic, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text("#!/bin/sh\nexit 1\n")
    (bin_dir / "sbatch").chmod(0o755)
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "psij.py").write_text("raise ImportError('No module named psij')\n")
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}",
               PYTHONPATH=f"{blocker}:{Path(__file__).parent / 'support'}")
    done = subprocess.run([sys.executable, "-m", "emews", "submit", str(quadratic), "--site",
                           "slurm"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "emews: error: emews submit: needs psij-python (No module named psij): pip install "
        "'emews-hpo[submit]'"]
    assert not (tmp_path / "experiments").exists()


def test_a_bad_walltime_stops_a_real_submission_before_anything_is_made(emews_cli, quadratic,
                                                                        tmp_path):
    done = emews_cli("submit", quadratic, "--site", "local", "--walltime", "1:2")
    assert done.returncode == 2
    assert done.stderr.splitlines() == ["emews: error: command line: system.walltime: must be "
                                        "HH:MM:SS, D-HH:MM:SS or whole minutes, got '1:2'"]
    assert not (tmp_path / "experiments").exists()


def test_the_docs_site_example_is_a_valid_site(tmp_path):
    readme = (Path(__file__).parent.parent / "docs" / "src" / "sites.md").read_text()
    start = readme.index("# ~/.config/emews/sites/mycluster.toml")
    example = readme[start:readme.index("```", start)]
    path = write_site(tmp_path / "mycluster.toml", example)
    site = sites.load(path)
    assert (site.scheduler, site.launcher, site.gpu_binding) == ("slurm", "srun", "launcher")
    assert site.langs_app_file == str(tmp_path / "langs-app-mycluster.sh")


@pytest.mark.parametrize("name, expected", [
    ("frontier", ["#SBATCH --nodes=3", "#SBATCH --ntasks-per-node=4", "#SBATCH --time=1:30:0",
                  '#SBATCH --partition="q1"', '#SBATCH --account="ACC1"',
                  '#SBATCH --constraint="nvme"', '#SBATCH --dependency="afterany:77"',
                  '#SBATCH --job-name="emews-study"']),
    ("polaris", ["#PBS -l select=3:ncpus=4:mpiprocs=4", "#PBS -l walltime=1:30:0",
                 "#PBS -A ACC1", "#PBS -q q1", '#PBS -l "filesystems=home:grand:eagle"',
                 '#PBS -W "depend=afterany:77"', '#PBS -N "emews-study"']),
    ("summit", ["#BSUB -nnodes 3", "#BSUB -W 1:30", '#BSUB -q "q1"', '#BSUB -P "ACC1"',
                '#BSUB -J "emews-study"']),
])
def test_psij_submits_the_same_resources_and_runs_the_rendered_script(name, expected,
                                                                      tmp_path):
    """What psij would hand to sbatch, qsub or bsub (its script generator, as submit() calls
    it), for the schedulers this machine has no daemon for."""
    import io

    psij = pytest.importorskip("psij")
    from emews.launch import _script as scripts
    from emews.launch import _submit as submit

    job = scripts.Job(sites.load(name), tmp_path, "study", 10, 4, "01:30:00", "q1", "ACC1",
                      index=1, after="77")
    executor, handle = submit.psij_job(psij, job, tmp_path)
    text = io.StringIO()
    executor.generate_submit_script(handle, executor._create_script_context(handle), text)
    lines = text.getvalue().splitlines()
    for line in expected:
        assert line in lines
    assert [line for line in lines if "place=" in line] in ([], ["#PBS -l place=scatter:shared"])
    assert f"/bin/bash {job.script}" in text.getvalue()


@pytest.fixture
def submitted(emews_cli, quadratic, tmp_path):
    """``record(scheduler, ids)``: a finished study (run here, in-process) whose store
    records jobs ``ids`` as ``emews submit`` does on ``scheduler``."""

    def record(scheduler, ids):
        done = emews_cli("run", quadratic, "--set", "system.pool='inprocess'")
        assert done.returncode == 0, done.stderr
        (expdir,) = (tmp_path / "experiments").glob("*/EXP*")
        store = SQLiteStore(expdir / "results.db", create=False)
        store.set_meta("submit", {
            "expdir": str(expdir), "site": {"name": scheduler, "scheduler": scheduler},
            "jobs": [{"index": k, "kind": kind, "id": i} for k, (i, kind) in enumerate(ids)]})
        store.close()
        return expdir

    return record


def job_lines(done):
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return [line for line in done.stdout.splitlines() if line.startswith(("job ", "jobs:"))]


def test_status_without_the_scheduler_s_command_is_one_line(emews_cli, submitted):
    expdir = submitted("slurm", [("4242", "study"), ("4243", "pool")])
    path = str(Path(sys.executable).parent)  # the venv's bin: no squeue there
    assert job_lines(emews_cli("status", expdir, env={"PATH": path})) == [
        "job 4242 (study): UNKNOWN", "job 4243 (pool): UNKNOWN",
        "jobs: cannot ask slurm for the states of the jobs: squeue is not on PATH (run emews "
        "status where the jobs were submitted)"]


# What PBS Pro's ``qstat -x -f ID...`` and LSF's ``bjobs -a -noheader -o "jobid stat" ID...``
# print (their formats, cut to the lines read), for the schedulers this machine has no daemon
# for; a stand-in answers only the command line emews status must use.
QSTAT = """Job Id: 8101.polaris-pbs-01.hsn.cm.polaris.alcf.anl.gov
    Job_Name = emews-study
    job_state = F
    queue = debug
    Exit_status = 0

Job Id: 8102.polaris-pbs-01.hsn.cm.polaris.alcf.anl.gov
    Job_Name = emews-study
    job_state = H
    queue = debug
"""
BJOBS = "5101 DONE\n5102 PEND\n"


@pytest.mark.parametrize("scheduler, command, output, error, lines", [
    ("pbs", "qstat -x -f 8101.polaris-pbs-01 8102.polaris-pbs-01 8103.polaris-pbs-01", QSTAT,
     "qstat: Unknown Job Id 8103.polaris-pbs-01",
     ["job 8101.polaris-pbs-01 (study): FINISHED", "job 8102.polaris-pbs-01 (study): HELD",
      "job 8103.polaris-pbs-01 (study): UNKNOWN"]),
    ("lsf", "bjobs -a -noheader -o jobid stat 5101 5102 5103", BJOBS,
     "Job <5103> is not found",
     ["job 5101 (study): DONE", "job 5102 (study): PEND", "job 5103 (study): UNKNOWN"]),
])
def test_status_names_each_job_s_state_as_the_scheduler_does(scheduler, command, output, error,
                                                            lines, emews_cli, submitted,
                                                            tmp_path):
    ids = [line.split()[1] for line in lines]
    expdir = submitted(scheduler, [(i, "study") for i in ids])
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    name, arguments = command.split(" ", 1)
    stand_in = bin_dir / name
    stand_in.write_text(f'#!/bin/bash\n[ "$*" = {shlex.quote(arguments)} ] || exit 2\n'
                        f"printf %s {shlex.quote(output)}\n"
                        f"echo {shlex.quote(error)} >&2; exit 1\n")
    stand_in.chmod(0o755)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}"}
    assert job_lines(emews_cli("status", expdir, env=env)) == lines
