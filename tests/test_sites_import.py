"""``emews site import``: Supervisor's env-, sched- and langs-app-NAME.sh, read by bash, become a
valid site file; what cannot be mapped is a comment in the file and one line on the terminal.
The Supervisor files are small copies in tests/support/supervisor_sites/."""

import tomllib
from pathlib import Path

import pytest

from emews.launch import _site as sites

SUPERVISOR = Path(__file__).parent / "support" / "supervisor_sites"


@pytest.fixture
def import_site(emews_cli, tmp_path):
    """Run ``emews site import SUPERVISOR NAME -o OUT``; return (CompletedProcess, file, TOML)."""

    def run(name, *args, directory=SUPERVISOR, env=None):
        output = tmp_path / f"{name}.toml"
        done = emews_cli("site", "import", directory, name, "-o", output, *args,
                         env=dict({"HOME": str(tmp_path / "home")}, **(env or {})))
        data = tomllib.loads(output.read_text()) if output.exists() else None
        return done, output, data

    return run


def unmapped_line(done):
    (line,) = [line for line in done.stderr.splitlines() if "not mapped" in line]
    return line


def test_local_site_files_become_a_local_site(import_site, tmp_path):
    done, output, data = import_site("local")
    assert done.returncode == 0, done.stderr
    home = tmp_path / "home"
    assert data["scheduler"] == "local" and data["launcher"] == "mpiexec"
    assert "batch" not in data  # PROJECT=NONE is Supervisor's "no project"
    environment = data["environment"]
    assert environment["prepend"]["PATH"] == [f"{home}/install/swift-t/stc/bin"]
    assert environment["prepend"]["LD_LIBRARY_PATH"] == [f"{home}/install/swift-t/turbine/lib",
                                                         f"{home}/install/swift-t/lb/lib"]
    workflows = SUPERVISOR.resolve().parent.parent
    assert environment["prepend"]["PYTHONPATH"] == [f"{workflows}/common/python"]
    assert environment["variables"] == {"SWIFT_T": f"{home}/install/swift-t",
                                        "TURBINE_RESIDENT_WORK_WORKERS": "1", "LOCAL": "1",
                                        "CRAY": "0"}
    langs = data["langs_app"]
    assert langs["prepend"]["PATH"] == [f"{home}/anaconda3/bin"]
    assert langs["variables"]["PYTHONHOME"] == f"{home}/anaconda3"
    text = output.read_text()
    assert "#   CANDLE_MODEL_IMPL = 'py'" in text
    assert f"#   EQR = '{workflows}/common/ext/EQ-R'" in text
    line = unmapped_line(done)
    assert line.startswith("emews: not mapped (listed as comments in local.toml): "
                           "CANDLE_MODEL_IMPL=py, EQR=")
    assert sites.load(output).scheduler == "local"


def test_a_slurm_site_maps_modules_conda_directives_and_launch_options(import_site):
    done, output, data = import_site("frontier", "--ppn", "8")
    assert done.returncode == 0, done.stderr
    assert (data["scheduler"], data["launcher"]) == ("slurm", "srun")
    assert data["launcher_args"] == ["--gpus-per-task=1", "--gpus-per-node=8"]
    assert data["gpu_binding"] == "launcher"
    assert data["batch"] == {"project": "MED106", "directives": {"constraint": "nvme"}}
    environment = data["environment"]
    assert environment["modules"] == ["DefApps", "cray-mpich"]
    assert environment["conda"] == "/lustre/orion/proj/world-shared/conda543"
    assert environment["prepend"]["PATH"] == [
        "/lustre/orion/proj/world-shared/conda543/bin",
        "/lustre/orion/proj/world-shared/sfw/swift-t/2023-08-13/stc/bin"]
    assert environment["variables"] == {
        "TURBINE_HOME": "/lustre/orion/proj/world-shared/sfw/swift-t/2023-08-13/turbine"}
    assert data["langs_app"]["variables"]["PYTHONHOME"] == "/gpfs/proj/candle_tf_2.10"
    assert data["langs_app"]["prepend"]["PATH"] == ["/gpfs/proj/candle_tf_2.10/bin"]
    assert "MODS=DefApps cray-mpich" in unmapped_line(done)


def test_a_file_that_exits_early_still_gives_its_scheduler_and_a_note(import_site):
    done, output, data = import_site("polaris")
    assert done.returncode == 0, done.stderr
    assert (data["scheduler"], data["launcher"]) == ("pbs", "mpiexec")
    assert data["batch"] == {"project": "CSC249ADOA01", "queue": "debug",
                             "walltime": "00:10:00",
                             "directives": {"l": "filesystems=home:grand:eagle"}}
    assert "modules" not in data.get("environment", {})  # after the exit: never reached
    assert data["langs_app"]["modules"] == ["singularity"]
    assert data["langs_app"]["prepend"]["PATH"] == ["/eagle/Candle_ECP/conda/2024-03-13-LGBM/bin"]
    assert data["langs_app"]["variables"] == {"HTTP_PROXY": "http://proxy.alcf.anl.gov:3128",
                                              "https_proxy": "http://proxy.alcf.anl.gov:3128"}
    text = output.read_text()
    assert ("# Note: env-polaris.sh exited (status 1) before its end; sched-polaris.sh was read "
            "on its own") in text
    assert "#   TURBINE_POLARIS" not in text  # exported: kept as a variable
    assert data["environment"]["variables"] == {"TURBINE_POLARIS": "1"}


def test_the_files_run_in_bash_not_in_emews(import_site, tmp_path):
    directory = tmp_path / "sh"
    directory.mkdir()
    marker = tmp_path / "ran"
    (directory / "sched-odd.sh").write_text(f'MACHINE="-m cobalt"\ntouch {marker}\n'
                                            'export QUEUE="not one word"\n'
                                            'module() { echo replaced; }\nmodule load foo\n')
    done, output, data = import_site("odd", directory=directory)
    assert done.returncode == 0, done.stderr
    assert marker.exists()  # bash ran the file
    assert data["scheduler"] == "local"
    assert data["environment"]["modules"] == ["foo"]  # the recorder cannot be replaced
    assert unmapped_line(done) == ("emews: not mapped (listed as comments in odd.toml): "
                                   "MACHINE=-m cobalt, QUEUE=not one word")


def test_a_directory_without_the_site_s_files_is_one_line(import_site, tmp_path):
    done, output, data = import_site("nosuch")
    assert done.returncode == 2 and data is None
    assert done.stderr.splitlines() == [
        f"emews: error: {SUPERVISOR}: must hold Supervisor's env-nosuch.sh, sched-nosuch.sh "
        "or langs-app-nosuch.sh"]


def test_an_imported_site_is_found_by_name_and_renders(emews_cli, study, tmp_path):
    home = tmp_path / "home"
    env = {"HOME": str(home)}
    done = emews_cli("site", "import", SUPERVISOR, "frontier", env=env)
    assert done.returncode == 0, done.stderr
    assert (home / ".config" / "emews" / "sites" / "frontier.toml").is_file()
    again = emews_cli("site", "import", SUPERVISOR, "frontier", env=env)
    assert again.returncode == 2 and "give --force to overwrite it" in again.stderr
    config = study(system={"procs": 4}, study={"budget": 2,
                                               "objective": "toy_models:quadratic"})
    shown = emews_cli("submit", config, "--site", "frontier", "--dry-run", env=env)
    assert shown.returncode == 0, shown.stderr
    assert "#SBATCH --account=MED106" in shown.stdout
    assert "module load DefApps cray-mpich\nconda activate " in shown.stdout
    listed = emews_cli("site", "list", env=env)
    assert f"{home}/.config/emews/sites/frontier.toml" in listed.stdout
