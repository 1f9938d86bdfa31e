"""The ``emews`` command on a real mpiexec: spawned pools, explicit launches, bad input, resume."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import SUPPORT, query_store, stored_rows

pytestmark = pytest.mark.mpi
MPIEXEC = str(Path(sys.executable).parent / "mpiexec")


def only_expdir(tmp_path, name="study"):
    (expdir,) = (tmp_path / "experiments" / name).iterdir()
    return expdir


@pytest.mark.slow
def test_run_alone_spawns_a_local_pool_of_procs_ranks(emews_cli, study, tmp_path):
    path = study(system={"procs": 4, "progress_interval": 0.0},
                 study={"budget": 16, "objective": "toy_models:rank_and_output", "seed": 2})
    done = emews_cli("run", path)
    assert done.returncode == 0, done.stderr
    expdir = only_expdir(tmp_path)
    rows = stored_rows(expdir)
    assert len(rows) == 16 and {r["status"] for r in rows} == {"done"}
    assert {r["rank"] for r in rows} <= {1, 2, 3} and len({r["rank"] for r in rows}) > 1
    for rank in {r["rank"] for r in rows}:
        out = (expdir / "out" / f"out-{rank}.txt").read_text()
        assert "evaluating x=" in out
    assert "[progress] evaluations 16/16" in done.stdout
    best = min(rows, key=lambda r: r["result"])
    assert f"best value {best['result']:.6g}" in done.stdout
    assert "stopped: evaluation budget of 16 reached" in done.stdout
    assert json.loads((expdir / "config.json").read_text())["system"]["procs"] == 4


@pytest.mark.slow
@pytest.mark.parametrize("ranks", [1, 3])
def test_run_under_an_explicit_mpiexec(study, tmp_path, ranks):
    path = study(study={"budget": 6, "objective": "toy_models:quadratic", "mode": "batch"})
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parent / "support"))
    done = subprocess.run([MPIEXEC, "-n", str(ranks), sys.executable, "-m", "emews", "run",
                           str(path)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, done.stderr
    rows = stored_rows(only_expdir(tmp_path))
    assert len(rows) == 6 and all(r["status"] == "done" for r in rows)
    assert {r["rank"] for r in rows} == ({0} if ranks == 1 else {1, 2})


@pytest.mark.slow
def test_model_failures_do_not_end_the_study(emews_cli, study, tmp_path):
    path = study(system={"procs": 3},
                 study={"budget": 20, "objective": "toy_models:flaky", "seed": 5})
    done = emews_cli("run", path)
    assert done.returncode == 0, done.stderr
    rows = stored_rows(only_expdir(tmp_path))
    assert len(rows) == 20
    failed = [r for r in rows if r["status"] == "failed"]
    assert failed and all(r["error"] for r in failed)


@pytest.mark.slow
def test_a_dying_me_ends_every_rank_with_its_traceback(emews_cli, study, tmp_path):
    path = study(system={"procs": 3}, study={"algorithm": "raising_me", "budget": 10,
                                             "objective": "toy_models:quadratic"})
    done = emews_cli("run", path)
    assert done.returncode == 1
    assert "ValueError: the ME broke on purpose" in done.stderr
    assert [r["status"] for r in stored_rows(only_expdir(tmp_path))] == ["done"]


@pytest.mark.parametrize("change, fragment", [
    ({"study": {"algorithm": "annealing"}}, "[study].algorithm: must be one of"),
    ({"study": {"objective": "no_such_module:train"}}, "[study].objective: must be an importable "
     "'module:attribute' path (no module 'no_such_module' in {tmp_path}, {support}), got "
     "'no_such_module:train'"),
    ({"study": {"objective": "toy_models:no_such_function"}}, "[study].objective: must be an "
     "importable 'module:attribute' path (module 'toy_models' ({support}/toy_models.py) has no "
     "attribute 'no_such_function'), got 'toy_models:no_such_function'"),
    ({"study": {"budget": 0}}, "[study].budget: must be positive, got 0"),
    ({"study": {"space": "missing.json"}}, "missing.json: the search-space file must be readable"),
    ({"system": {"pool": "cloud"}}, "[system].pool: must be one of ['mpi', 'inprocess']"),
])
@pytest.mark.slow
def test_bad_input_is_one_line_exit_2_and_nothing_written(emews_cli, study, tmp_path, change,
                                                          fragment):
    tables = {"study": {"objective": "toy_models:quadratic", "budget": 4}, "system": {}}
    for table, values in change.items():
        tables[table].update(values)
    done = emews_cli("run", study(**tables))
    assert done.returncode == 2
    assert fragment.format(tmp_path=tmp_path, support=SUPPORT) in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and done.stderr.startswith("emews: error:")
    assert not (tmp_path / "experiments").exists()


@pytest.mark.slow
def test_malformed_files_are_named(emews_cli, tmp_path):
    (tmp_path / "bad.toml").write_text("[study\nbudget = 3\n")
    done = emews_cli("run", "bad.toml")
    assert done.returncode == 2 and "bad.toml: must be valid TOML" in done.stderr
    done = emews_cli("run", "absent.toml")
    assert done.returncode == 2 and "absent.toml: the configuration file must be readable" \
        in done.stderr


def wait_for(predicate, timeout=120):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.1)


@pytest.mark.slow
def test_a_killed_run_keeps_its_results_and_resumes_without_repeating_them(emews_cli, study,
                                                                            tmp_path):
    points = [{"x": float(i), "hang": i >= 5} for i in range(10)]
    (tmp_path / "points.jsonl").write_text("\n".join(json.dumps(p) for p in points))
    path = study(system={"procs": 3},
                 study={"algorithm": "sweep", "objective": "toy_models:hang_when_asked",
                        "space": None},
                 algorithm={"file": "points.jsonl"})
    path.write_text(path.read_text().replace('space = null\n', ""))
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parent / "support"),
               EMEWS_TEST_HANG="1")
    run = subprocess.Popen([sys.executable, "-m", "emews", "run", str(path)], cwd=tmp_path,
                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           start_new_session=True)
    try:
        db = tmp_path / "experiments" / "study" / "EXP001" / "results.db"
        def counts():
            return dict(query_store(db, "SELECT status, COUNT(*) FROM evaluations "
                                        "GROUP BY status"))

        wait_for(lambda: counts().get("done") == 5 and counts().get("running") == 2)
    finally:
        os.killpg(run.pid, signal.SIGKILL)
        run.wait()
    before = stored_rows(db.parent)
    finished = {r["id"]: (r["params"]["x"], r["result"]) for r in before if r["status"] == "done"}
    assert sorted(x for x, _ in finished.values()) == [0.0, 1.0, 2.0, 3.0, 4.0]

    done = emews_cli("run", "--resume", db.parent)
    assert done.returncode == 0, done.stderr
    after = stored_rows(db.parent)
    assert {r["id"]: (r["params"]["x"], r["result"]) for r in after if r["id"] in finished} \
        == finished
    assert sorted(r["params"]["x"] for r in after) == [float(i) for i in range(10)]
    assert all(r["status"] == "done" for r in after)


@pytest.mark.slow
def test_show_prints_the_best_evaluations(emews_cli, study, tmp_path):
    path = study(system={"pool": "inprocess"},
                 study={"budget": 5, "objective": "toy_models:quadratic"})
    assert emews_cli("run", path).returncode == 0
    expdir = only_expdir(tmp_path)
    shown = emews_cli("show", expdir)
    best = min(stored_rows(expdir), key=lambda r: r["result"])
    assert shown.returncode == 0 and f"{best['result']:.6g}" in shown.stdout
    assert "evaluation budget of 5 reached" in shown.stdout


def test_the_console_script_is_installed():
    script = Path(sys.executable).parent / "emews"
    done = subprocess.run([str(script), "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "run" in done.stdout


def _cpu_seconds_of_a_run(study, tmp_path, name, objective):
    path = study(name=f"{name}.toml", system={"procs": 4},
                 study={"budget": 2, "objective": objective, "mode": "batch", "name": name})
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parent / "support"))
    process = subprocess.Popen([MPIEXEC, "-n", "4", sys.executable, "-m", "emews", "run",
                                str(path)], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert len(stored_rows(only_expdir(tmp_path, name))) == 2
    return usage.ru_utime + usage.ru_stime


@pytest.mark.slow
def test_waiting_ranks_do_not_spin_the_cpu(study, tmp_path):
    """While workers sleep through 3 s runs, the master, the ME and idle ranks stay idle."""
    quick = _cpu_seconds_of_a_run(study, tmp_path, "quick", "toy_models:quadratic")
    slow = _cpu_seconds_of_a_run(study, tmp_path, "slow", "toy_models:sleepy")
    # The same study, 3 s longer: one spinning rank alone would add about 3 s of CPU.
    assert slow - quick < 1.5


@pytest.mark.slow
def test_plot_draws_a_png_of_a_study(emews_cli, study, tmp_path):
    path = study(system={"pool": "inprocess"},
                 study={"budget": 8, "objective": "toy_models:flaky", "seed": 2})
    assert emews_cli("run", path).returncode == 0
    expdir = only_expdir(tmp_path)
    done = emews_cli("plot", expdir, "-o", tmp_path / "c.png")
    assert done.returncode == 0, done.stderr
    png = (tmp_path / "c.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 10_000


def test_plot_without_matplotlib_names_the_extra(tmp_path, monkeypatch):
    from emews.inspect import _plot as plot

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(Exception, match=r"pip install 'emews-hpo\[plot\]'"):
        plot.pyplot()
