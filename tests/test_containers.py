"""Models in containers: each runtime's exact argument list, and a real Charliecloud container.

The argument lists of apptainer, singularity, charliecloud (directory and SquashFS images),
podman, podman-hpc and shifter are compared word for word, with and without GPUs. The real
runs use ``ch-run`` on a Debian minbase image built once per machine and cached
(tests/support/charliecloud.py), whose IMPROVE-style ``train.sh``
(tests/support/container/charliecloud/) has bash, sed and awk and no Python: every value below
is computed inside the container, which says so with the image's marker in ``model.log``.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from emews._config import CONTAINER_RUNTIMES
from emews._errors import ConfigError
from emews.evaluate import EvaluationFailed, Objective
from emews.evaluate import _container as container_module
from emews.evaluate._container import RUNTIMES, ContainerCommand
from emews.launch import _site as sites
from emews._status import Status
from emews.launch._submit import _with_site_defaults as with_site_defaults

SUPPORT = Path(__file__).parent / "support"
if str(SUPPORT) not in sys.path:
    sys.path.insert(0, str(SUPPORT))

from conftest import Judge, alive, stored_rows, wait_until  # noqa: E402
from charliecloud import charliecloud_image_fixture, squashfs_image  # noqa: E402,F401

MODEL_SH = Path(__file__).parent.parent / "models" / "model.sh"
NASTY = {"x": 0.25, "quote": "it's \"quoted\"", "semicolon": "a; touch PWNED_SEMI",
         "subst": "$(touch PWNED_SUBST) `touch PWNED_TICK`", "vars": "$HOME ${PATH}",
         "backslash": "C:\\temp\\n", "newline": "first\nsecond", "unicode": "naïve ☃ 日本語",
         "dash": "--run_id=evil"}

# --- exact argument lists -------------------------------------------------------------------

ACTION = ["/candle_data_dir", "--params_file", "/emews_run/params.json", "--experiment_id", "E1",
          "--run_id", "R7"]
A_ENV = ["--env", "CANDLE_DATA_DIR=/candle_data_dir", "--env", "EMEWS_RUN_DIR=/emews_run",
         "--env", "EMEWS_PARAMS_FILE=/emews_run/params.json", "--env", "EXP_ID=E1",
         "--env", "RUN_ID=R7"]  # apptainer's and podman's
APPTAINER = ["--bind", "/d:/candle_data_dir", "--bind", "/r:/emews_run", "--pwd", "/emews_run",
             *A_ENV, "/i/m.sif", "train.sh"]
CH_RUN = ["ch-run", "--bind=/d:/candle_data_dir", "--bind=/r:/emews_run", "--cd=/emews_run",
          "--env-no-expand", "--set-env=CANDLE_DATA_DIR=/candle_data_dir",
          "--set-env=EMEWS_RUN_DIR=/emews_run",
          "--set-env=EMEWS_PARAMS_FILE=/emews_run/params.json", "--set-env=EXP_ID=E1", "--set-env=RUN_ID=R7", "/i/m.sqfs", "--", "train.sh"]
PODMAN = ["--volume", "/d:/candle_data_dir", "--volume", "/r:/emews_run", "--workdir",
          "/emews_run", *A_ENV, "improve/m:1", "train.sh"]
SHIFTER = ["--volume=/d:/candle_data_dir", "--volume=/r:/emews_run", "--workdir=/emews_run",
           "--env=CANDLE_DATA_DIR=/candle_data_dir", "--env=EMEWS_RUN_DIR=/emews_run",
           "--env=EMEWS_PARAMS_FILE=/emews_run/params.json", "--env=EXP_ID=E1",
           "--env=RUN_ID=R7", "--", "train.sh"]
IMAGES = {"apptainer": "/i/m.sif", "singularity": "/i/m.sif", "charliecloud": "/i/m.sqfs",
          "podman": "improve/m:1", "podman-hpc": "improve/m:1", "shifter": "docker:improve/m:1"}
# the worker's environment: nvidia GPUs 2 and 3, or AMD GPU 1, or none
WORKER = {"nvidia": {"CUDA_VISIBLE_DEVICES": "2,3"}, "amd": {"ROCR_VISIBLE_DEVICES": "1"},
          "none": {}}
EXACT = {
    ("apptainer", "none"): ["apptainer", "exec", *APPTAINER, "", *ACTION],
    ("apptainer", "nvidia"): ["apptainer", "exec", "--nv", *APPTAINER, "2,3", *ACTION],
    ("apptainer", "amd"): ["apptainer", "exec", "--rocm", *APPTAINER, "1", *ACTION],
    ("singularity", "none"): ["singularity", "exec", *APPTAINER, "", *ACTION],
    ("singularity", "nvidia"): ["singularity", "exec", "--nv", *APPTAINER, "2,3", *ACTION],
    ("charliecloud", "none"): [*CH_RUN, "", *ACTION],
    ("charliecloud", "nvidia"): [*CH_RUN, "2,3", *ACTION],  # ch-fromhost prepared the image
    ("charliecloud", "amd"): [*CH_RUN, "1", *ACTION],
    ("podman", "none"): ["podman", "run", "--rm", *PODMAN, "", *ACTION],
    ("podman", "nvidia"): ["podman", "run", "--rm", "--device", "nvidia.com/gpu=2", "--device",
                           "nvidia.com/gpu=3", *PODMAN, "0,1", *ACTION],  # CDI: renumbered
    ("podman", "amd"): ["podman", "run", "--rm", "--device", "/dev/kfd", "--device", "/dev/dri",
                        *PODMAN, "1", *ACTION],
    ("podman-hpc", "none"): ["podman-hpc", "run", "--rm", *PODMAN, "", *ACTION],
    ("podman-hpc", "nvidia"): ["podman-hpc", "run", "--rm", "--gpu", *PODMAN, "2,3", *ACTION],
    ("shifter", "none"): ["shifter", "--image=docker:improve/m:1", *SHIFTER, "", *ACTION],
    ("shifter", "nvidia"): ["shifter", "--image=docker:improve/m:1", "--module=gpu", *SHIFTER,
                            "2,3", *ACTION],
}


def built(runtime, gpus, image, environ):
    container = ContainerCommand(RUNTIMES[runtime], image, "train", gpus)
    return container.command("/r", "/d", "E1", "R7", environ)


def test_every_runtime_the_setting_allows_has_an_argument_list():
    assert set(CONTAINER_RUNTIMES) == set(RUNTIMES) == {runtime for runtime, _ in EXACT}


@pytest.mark.parametrize("runtime, gpus", EXACT)
def test_exact_argument_lists(runtime, gpus, node_devices):
    node_devices()  # a node without GPU device files: "auto" follows the worker alone
    assert built(runtime, gpus, IMAGES[runtime], WORKER[gpus]) == EXACT[runtime, gpus]
    assert built(runtime, "auto", IMAGES[runtime], WORKER[gpus]) == EXACT[runtime, gpus]


def test_a_directory_image_is_podman_s_rootfs_and_ch_run_s_image(tmp_path):
    podman = built("podman", "none", str(tmp_path), {})
    action = podman.index("train.sh")
    assert podman[action - 2:action] == ["--rootfs", str(tmp_path)]
    ch_run = built("charliecloud", "none", str(tmp_path), {})
    assert ch_run[ch_run.index("--") - 1] == str(tmp_path)


@pytest.fixture
def node_devices(tmp_path, monkeypatch):
    """``make(*kinds)``: the node's GPU device files are files under tmp_path, those of
    ``kinds`` present."""
    def make(*kinds):
        paths = {kind: tmp_path / "dev" / kind for kind in ("nvidia", "amd")}
        for kind in kinds:
            paths[kind].parent.mkdir(exist_ok=True)
            paths[kind].touch()
        monkeypatch.setattr(container_module, "NODE_DEVICES",
                            {kind: str(path) for kind, path in paths.items()})

    return make


@pytest.mark.parametrize("environ, node, flags", [
    ({"CUDA_VISIBLE_DEVICES": "0"}, (), ["--nv"]),
    ({"ROCR_VISIBLE_DEVICES": "0"}, ("nvidia",), ["--rocm"]),
    ({}, ("nvidia",), ["--nv"]), ({}, ("amd",), ["--rocm"]), ({}, (), [])])
def test_auto_gpus_follow_the_worker_s_device_variable_else_the_node_s(environ, node, flags,
                                                                        node_devices):
    node_devices(*node)
    command = built("apptainer", "auto", "/images/model.sif", environ)
    assert command[2:2 + len(flags)] == flags and command[2 + len(flags)] == "--bind"


def test_shifter_has_no_amd_gpus():
    with pytest.raises(EvaluationFailed, match=r"^\[model\].container_gpus "
                       r"\(CANDLE_CONTAINER_GPUS\): shifter has no flags for amd GPUs"):
        built("shifter", "amd", "docker:m:1", {})


# --- a real Charliecloud container ----------------------------------------------------------

@pytest.fixture
def charliecloud(charliecloud_image, tmp_path, monkeypatch):
    """``make(timeout=None, **env)``: an Objective of the container implementation on the real
    image with ch-run; ``USER`` unset, as in a batch job that does not export it."""
    monkeypatch.delenv("USER", raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    data = tmp_path / "data"
    data.mkdir()

    def make(timeout=None, **env):
        env = {"CANDLE_IMAGE": str(charliecloud_image), "CANDLE_CONTAINER_RUNTIME":
               "charliecloud", "CANDLE_DATA_DIR": str(data), "MODEL_RETURN": "val_loss", **env}
        return Objective("container", model_name="improve", expdir=tmp_path / "EXP001",
                         exp_id="EXP001", timeout=timeout, model_env=env)

    return make


def marker(image):
    return f"inside image {Path(image).name} (Debian 12."


def test_a_charliecloud_run_reports_from_inside_the_image(charliecloud, charliecloud_image,
                                                          tmp_path):
    outcome = charliecloud().evaluate(json.dumps({"x": 1.5}), "RUN000001")
    assert outcome.status == "done", (outcome.error, outcome.log_tail)
    assert outcome.value == 1.0
    run_dir = tmp_path / "EXP001" / "run" / "RUN000001"
    log = (run_dir / "model.log").read_text()
    assert marker(charliecloud_image) in log
    assert "devices '', data '/candle_data_dir', CANDLE_DATA_DIR '/candle_data_dir', " \
           "cwd /emews_run, experiment EXP001, run RUN000001" in log
    assert not Path("/etc/emews-test-image").exists()  # the marker is the image's alone


def test_parameters_reach_the_container_unchanged_and_nothing_runs(charliecloud, tmp_path):
    text = json.dumps(NASTY, ensure_ascii=False)
    outcome = charliecloud().evaluate(text, "RUN2")
    assert outcome.status == "done", (outcome.error, outcome.log_tail)
    assert outcome.value == 0.0625
    run_dir = tmp_path / "EXP001" / "run" / "RUN2"
    assert (run_dir / "received.json").read_text(encoding="utf-8") == text
    assert not list(tmp_path.rglob("PWNED*"))


def test_a_timeout_kills_the_container_s_processes(charliecloud, tmp_path):
    outcome = charliecloud(timeout=3).evaluate('{"x": 1, "behaviour": "sleep"}', "RUN3")
    assert outcome.status == "failed" and outcome.error == "timeout after 3 s"
    assert "emews: timeout after 3 s: the run was killed" in outcome.log_tail
    pids = [int(pid) for pid in
            (tmp_path / "EXP001" / "run" / "RUN3" / "pids.txt").read_text().split()]
    assert len(pids) == 2  # train.sh and its sleep, signalled: gone within moments, not 300 s
    wait_until(lambda: not any(alive(pid) for pid in pids), "the container's processes to end",
               timeout=20)


def test_a_container_that_exits_non_zero_fails_with_its_output_tail(charliecloud):
    outcome = charliecloud().evaluate('{"x": 1, "behaviour": "fail"}', "RUN4")
    assert outcome.status == "failed"
    assert outcome.error == "the model exited with status 3: train.sh: the model failed on " \
                            "purpose"
    assert "inside image" in outcome.log_tail


def test_several_objectives_come_from_the_container_s_labelled_result_lines(charliecloud):
    # [multiobjective]: MODEL_RETURN="val_loss,size" reads one labelled IMPROVE_RESULT line each
    outcome = charliecloud(MODEL_RETURN="val_loss,size").evaluate(
        '{"x": 1.5, "size": 250000}', "RUN7")
    assert outcome.status == "done", (outcome.error, outcome.log_tail)
    assert (outcome.value, outcome.objectives) == (1.0, [1.0, 250000.0])
    lacking = charliecloud(MODEL_RETURN="val_loss,size").evaluate('{"x": 1.5}', "RUN8")
    assert lacking.status == "failed" and lacking.error.startswith("objective 'size': ")


def test_the_container_s_output_reaches_model_log_as_an_app_s_does(charliecloud, tmp_path):
    # what [fidelity]'s learning-curve reports read: the lines a model prints, in model.log
    outcome = charliecloud().evaluate('{"x": 0.5, "behaviour": "epochs"}', "RUN5")
    assert outcome.status == "done" and outcome.value == 0.0
    log = (tmp_path / "EXP001" / "run" / "RUN5" / "model.log").read_text()
    assert "epoch 1 val_loss 1.000000\nepoch 2 val_loss 0.500000\nepoch 3 val_loss 0.333333\n" \
           "IMPROVE_RESULT val_loss 0\n" in log


def test_learning_curve_reports_from_inside_a_container_and_its_pruning(charliecloud, tmp_path):
    # [fidelity]: EMEWS_REPORT lines printed inside the image reach the pool's judge; a stop
    # ends the container's processes (SIGTERM, then SIGKILL after the grace)
    judge = Judge(stop_at=3)
    outcome = charliecloud().evaluate('{"x": 1.5, "behaviour": "train"}', "RUN6", report=judge)
    assert outcome.status == Status.PRUNED and outcome.error == "pruned at step 3"
    assert [(r.step, r.value) for r in judge.reports] == [(1, 2.0), (2, 1.5), (3, 1 + 1 / 3)]
    assert outcome.value == pytest.approx(1 + 1 / 3)
    (pid,) = [int(p) for p in (tmp_path / "EXP001" / "run" / "RUN6" / "pids.txt").read_text()
              .split()]
    wait_until(lambda: not alive(pid), "the pruned container's train.sh to end", timeout=20)
    log = (tmp_path / "EXP001" / "run" / "RUN6" / "model.log").read_text()
    assert 3 <= log.count("EMEWS_REPORT ") < 600   # stopped long before its last epoch


def test_a_rerun_goes_on_from_the_checkpoint_it_kept_inside_the_container(charliecloud,
                                                                          tmp_path):
    # the point's checkpoint directory, the same for every attempt, is bound into the image
    failed = charliecloud().evaluate('{"x": 1.5, "behaviour": "resume"}', "RUN000009")
    assert failed.status == "failed" and failed.error == \
        "the model exited with status 9: train.sh: died after epoch 2"
    saved = tmp_path / "EXP001" / "checkpoints" / "RUN000009" / "epoch"
    assert saved.read_text() == "2\n"
    again = charliecloud().evaluate('{"x": 1.5, "behaviour": "resume"}', "RUN000009-2")
    assert again.status == "done" and again.value == 1.0, (again.error, again.log_tail)
    log = (tmp_path / "EXP001" / "run" / "RUN000009-2" / "model.log").read_text()
    assert "checkpoint directory /emews_run/checkpoints: going on after epoch 2\n" \
           "epoch 3\nepoch 4\n" in log and "epoch 1" not in log
    assert saved.read_text() == "4\n"


def test_the_checkpoint_directory_is_bound_inside_the_run_directory(tmp_path):
    # no mount point of its own in the image: ch-run's target is made in the bound run dir
    command = ContainerCommand(RUNTIMES["charliecloud"], "/i/m.sqfs").command(
        tmp_path, "/d", "E1", "R7", {}, "", checkpoint_dir="/x/checkpoints/R7")
    assert command[:4] == ["ch-run", "--bind=/d:/candle_data_dir",
                           f"--bind={tmp_path}:/emews_run",
                           "--bind=/x/checkpoints/R7:/emews_run/checkpoints"]
    assert "--set-env=EMEWS_CHECKPOINT_DIR=/emews_run/checkpoints" in command
    assert (tmp_path / "checkpoints").is_dir()
    assert not any("EMEWS_TRAIN_UNTIL" in word for word in command)


def test_a_segment_is_told_its_steps_to_train_from_and_to(tmp_path):
    # population-based training and freeze-thaw: the segment's start checkpoint is already in
    # its checkpoint directory (evaluate/_handoff.py)
    command = ContainerCommand(RUNTIMES["charliecloud"], "/i/m.sqfs").command(
        tmp_path, "/d", "E1", "R7", {}, "", checkpoint_dir="/x/checkpoints/R7",
        segment={"EMEWS_TRAIN_FROM": "20", "EMEWS_TRAIN_UNTIL": "25"})
    assert "--set-env=EMEWS_TRAIN_UNTIL=25" in command
    assert "--set-env=EMEWS_TRAIN_FROM=20" in command


def test_a_missing_image_is_one_line_naming_the_setting(tmp_path):
    missing = str(tmp_path / "nosuch.sqfs")
    with pytest.raises(ConfigError) as error:
        Objective("container", model_env={"CANDLE_IMAGE": missing,
                                          "CANDLE_CONTAINER_RUNTIME": "charliecloud"})
    assert str(error.value) == (f"[model].image (CANDLE_IMAGE): must be an existing image "
                                f"file or directory (charliecloud), got {missing!r}")


def test_a_runtime_that_is_not_installed_is_one_line_naming_the_setting(charliecloud_image):
    with pytest.raises(ConfigError) as error:
        Objective("container", model_env={"CANDLE_IMAGE": str(charliecloud_image),
                                          "CANDLE_CONTAINER_RUNTIME": "shifter"})
    assert str(error.value) == ("[model].container_runtime (CANDLE_CONTAINER_RUNTIME): must "
                                "name an installed runtime: shifter is not on PATH, got 'shifter'")


@pytest.mark.mpi
@pytest.mark.slow
def test_a_study_of_a_container_model_on_a_real_mpiexec_pool(emews_cli, study, tmp_path,
                                                            charliecloud_image, monkeypatch):
    monkeypatch.delenv("USER", raising=False)  # as in a batch job that does not export it
    path = study(system={"procs": 3, "progress_interval": 0.0},
                 study={"budget": 6, "seed": 3, "impl": "container", "model_name": "improve"},
                 model={"image": str(charliecloud_image), "container_runtime": "charliecloud"})
    done = emews_cli("run", path)
    assert done.returncode == 0, done.stderr
    (expdir,) = (tmp_path / "experiments" / "study").iterdir()
    rows = stored_rows(expdir)
    assert len(rows) == 6 and {row["status"] for row in rows} == {"done"}
    assert {row["rank"] for row in rows} <= {1, 2}
    for row in rows:
        assert row["result"] == pytest.approx((row["params"]["x"] - 0.5) ** 2, rel=1e-12)
        log = (expdir / "run" / row["run_id"] / "model.log").read_text()
        assert marker(charliecloud_image) in log and f"run {row['run_id']}" in log
        assert "IMPROVE_RESULT val_loss " in log


# --- Supervisor's forms ---------------------------------------------------------------------

def test_supervisor_s_sif_form_model_name_is_the_image(charliecloud_image, tmp_path,
                                                       monkeypatch):
    # Supervisor's README: MODEL_NAME=/path/to/model.sif, CANDLE_MODEL_TYPE=SINGULARITY; its
    # workflow.sh leaves CANDLE_IMAGE=NONE and makes CANDLE_MODEL_IMPL container
    from emews.evaluate import from_env

    for name, value in {"MODEL_NAME": str(charliecloud_image), "CANDLE_MODEL_TYPE":
                        "SINGULARITY", "CANDLE_IMAGE": "NONE", "CANDLE_CONTAINER_RUNTIME":
                        "charliecloud", "CANDLE_DATA_DIR": str(tmp_path),
                        "MODEL_RETURN": "val_loss"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("CANDLE_MODEL_IMPL", raising=False)
    objective = from_env(expdir=tmp_path / "EXP000")
    assert objective.impl == "container"
    outcome = objective.evaluate('{"x": -0.5}', "RUN1")
    assert outcome.status == "done" and outcome.value == 1.0, (outcome.error, outcome.log_tail)
    log = (tmp_path / "EXP000" / "run" / "RUN1" / "model.log").read_text()
    assert marker(charliecloud_image) in log


def seven_arguments(tmp_path, image, params, **env):
    """``bash model.sh keras PARAMS EXP000 RUN5 SINGULARITY IMAGE train``, as Supervisor's
    model_container.swift runs it, with a runtime from CANDLE_CONTAINER_RUNTIME."""
    environ = {k: v for k, v in os.environ.items() if k not in ("EMEWS_RUN_DIR", "USER")}
    environ.update(CANDLE_DATA_DIR=str(tmp_path / "data"), MODEL_RETURN="val_loss",
                   PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", **env)
    return subprocess.run(["bash", str(MODEL_SH), "keras", params, "EXP000", "RUN5",
                           "SINGULARITY", str(image), "train"], cwd=tmp_path, env=environ,
                          capture_output=True, text=True, timeout=120, check=False)


def test_the_seven_argument_model_sh_runs_a_real_container(charliecloud_image, tmp_path):
    done = seven_arguments(tmp_path, charliecloud_image, '{"x": 2.5}',
                           CANDLE_CONTAINER_RUNTIME="charliecloud", CANDLE_CUDA_OFFSET="1")
    run_dir = tmp_path / "data" / charliecloud_image.name / "Output" / "EXP000" / "RUN5"
    log = (run_dir / "model.log").read_text()
    assert done.returncode == 0, (done.stdout, log)
    assert (run_dir / "result.txt").read_text() == "4.0\n"
    assert marker(charliecloud_image) in log and "devices '1'" in log
    assert (run_dir / "run_command.txt").read_text() == " ".join([
        "ch-run", f"--bind={tmp_path / 'data'}:/candle_data_dir", f"--bind={run_dir}:/emews_run",
        "--cd=/emews_run", "--env-no-expand", "--set-env=CANDLE_DATA_DIR=/candle_data_dir",
        "--set-env=EMEWS_RUN_DIR=/emews_run", "--set-env=EMEWS_PARAMS_FILE=/emews_run/params.json",
        "--set-env=EXP_ID=EXP000", "--set-env=RUN_ID=RUN5", str(charliecloud_image), "--",
        "train.sh", "1", "/candle_data_dir", "--params_file", "/emews_run/params.json",
        "--experiment_id", "EXP000", "--run_id", "RUN5"]) + "\n"
    assert (run_dir.parent / "output.csv").read_text() == "2.5,RUN5,4.0\n"


def test_the_seven_argument_model_sh_names_a_bad_runtime(charliecloud_image, tmp_path):
    done = seven_arguments(tmp_path, charliecloud_image, '{"x": 2.5}',
                           CANDLE_CONTAINER_RUNTIME="nosuch")
    run_dir = tmp_path / "data" / charliecloud_image.name / "Output" / "EXP000" / "RUN5"
    log = (run_dir / "model.log").read_text()
    assert done.returncode == 1
    assert "emews.evaluate container-command: error: [model].container_runtime " \
           "(CANDLE_CONTAINER_RUNTIME): must be one of" in log
    assert "MODEL ERROR! no container command" in log and not (run_dir / "result.txt").exists()


# --- named sites ----------------------------------------------------------------------------

@pytest.mark.parametrize("name, runtime", [
    ("frontier", "apptainer"), ("polaris", "apptainer"), ("aurora", "apptainer"),
    ("perlmutter", "podman-hpc"), ("lambda", "singularity"), ("local", None), ("slurm", None)])
def test_named_sites_set_their_machine_s_runtime(name, runtime):
    assert sites.load(name).container_runtime == runtime


def test_the_site_s_runtime_is_the_study_s_unless_it_names_one(study, monkeypatch):
    monkeypatch.delenv("CANDLE_CONTAINER_RUNTIME", raising=False)
    frontier = sites.load("frontier")
    unset = study(study={"budget": 2, "impl": "container"})
    assert with_site_defaults(unset, frontier, {}, None)["model.container_runtime"] == \
        "apptainer"
    own = study("own.toml", study={"budget": 2}, model={"container_runtime": "charliecloud"})
    assert "model.container_runtime" not in with_site_defaults(own, frontier, {}, None)
    monkeypatch.setenv("CANDLE_CONTAINER_RUNTIME", "shifter")
    assert "model.container_runtime" not in with_site_defaults(unset, frontier, {}, None)


def test_a_site_file_with_an_unknown_runtime_is_one_line_naming_it(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text('scheduler = "local"\nlauncher = "mpiexec"\ncontainer_runtime = "docker"\n')
    with pytest.raises(ConfigError, match=rf"^{path}: container_runtime: must be one of "):
        sites.load(str(path))


@pytest.mark.slow
def test_a_charliecloud_squashfs_image(charliecloud, charliecloud_image, tmp_path):
    image = squashfs_image()  # made once per machine, beside the directory image
    outcome = charliecloud(CANDLE_IMAGE=str(image)).evaluate('{"x": 0}', "RUN1")
    assert outcome.status == "done" and outcome.value == 0.25, (outcome.error, outcome.log_tail)
    log = (tmp_path / "EXP001" / "run" / "RUN1" / "model.log").read_text()
    assert f" {image} -- train.sh " in log  # ch-run's command line, as model.sh logs it
    assert marker(charliecloud_image) in log


def test_without_gpu_flags_the_devices_are_the_worker_s_any_binding(node_devices):
    # Aurora's Intel GPUs need no flag: the worker's ZE_AFFINITY_MASK is the action's DEVICES
    node_devices()
    command = built("apptainer", "auto", "/images/model.sif", {"ZE_AFFINITY_MASK": "4"})
    assert "--nv" not in command and "--rocm" not in command
    assert command[command.index("train.sh") + 1] == "4"


def test_emews_run_names_a_missing_image_in_one_line_and_writes_nothing(emews_cli, study,
                                                                         tmp_path):
    path = study(study={"budget": 2, "impl": "container"},
                 model={"image": "nosuch.sif", "container_runtime": "charliecloud"})
    done = emews_cli("run", path)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"emews: error: [model].image (CANDLE_IMAGE): must be an existing image file or "
        f"directory (charliecloud), got '{tmp_path / 'nosuch.sif'}'"]
    assert not (tmp_path / "experiments").exists()
