"""Examples never rot: the README's 30-second study, the docs' plugin and every study in
examples/ are run here."""

import re
import sys
import types
from pathlib import Path

import pytest

import emews
from emews.store import SQLiteStore

REPO = Path(__file__).parent.parent


def block(page, language, marker):
    """The code block in ``language`` of ``page`` (a path in the repository) that holds
    ``marker``."""
    blocks = re.findall(rf"```{language}\n(.*?)```", (REPO / page).read_text(), re.S)
    return next(found for found in blocks if marker in found)


def test_the_docs_plugin_runs_as_an_algorithm_and_improves(tmp_path, monkeypatch):
    code = block("docs/src/algorithms.md", "python", "class CoordinateSearch")
    assert len(code.strip().splitlines()) <= 30
    module = types.ModuleType("readme_plugin")
    exec(compile(code, "algorithms.md", "exec"), module.__dict__)  # the page's own text
    monkeypatch.setitem(sys.modules, "readme_plugin", module)
    monkeypatch.syspath_prepend(str(Path(__file__).parent / "support"))
    (tmp_path / "space.json").write_text(
        '[{"name": "x", "type": "float", "lower": -2, "upper": 2},'
        ' {"name": "n", "type": "int", "lower": 0, "upper": 3},'
        ' {"name": "act", "type": "categorical", "values": ["relu", "tanh"]}]')
    result = emews.run({
        "system": {"pool": "inprocess", "procs": 2},
        "study": {"algorithm": "readme_plugin:CoordinateSearch", "impl": "py",
                  "objective": "toy_models:quadratic", "space": str(tmp_path / "space.json"),
                  "budget": 40, "seed": 0, "mode": "batch", "batch_size": 4,
                  "data_dir": str(tmp_path)},
        "algorithm": {"step": 0.05}})
    store = SQLiteStore(result.expdir / "results.db")
    rows = store.rows()
    store.close()
    first_batch = min(r["result"] for r in rows[:4])
    assert len(rows) == 40 and result.best_value < first_batch


@pytest.mark.slow
@pytest.mark.mpi
def test_the_quickstart_main_job_runs_on_a_local_mpi_pool(emews_cli, tmp_path):
    done = emews_cli("run", REPO / "examples" / "quickstart" / "study.toml", "--budget", "6",
                     "--data-dir", tmp_path / "data")
    assert done.returncode == 0, done.stderr
    (expdir,) = (tmp_path / "data" / "quickstart").iterdir()
    store = SQLiteStore(expdir / "results.db")
    rows = store.rows()
    store.close()
    assert len(rows) == 6 and all(r["status"] == "done" for r in rows)
    assert {r["rank"] for r in rows} <= {1, 2, 3}
    assert all(0 < r["result"] < 3 for r in rows)
    assert "best value" in done.stdout


@pytest.mark.slow
@pytest.mark.mpi
def test_the_readme_s_30_second_study_runs_as_written(emews_cli, tmp_path):
    """The model, space and study of the README, written where it says and run with its two
    commands, on the MPI pool the study file asks for; what status says is the store's."""
    (tmp_path / "my_model.py").write_text(block("README.md", "python", "# my_model.py"))
    (tmp_path / "space.json").write_text(block("README.md", "json", '"name": "C"'))
    (tmp_path / "study.toml").write_text(block("README.md", "toml", "# study.toml"))
    commands = [line.split("#")[0].split() for line in
                block("README.md", "bash", "emews run study.toml").splitlines()]
    assert commands == [["emews", "run", "study.toml"],
                        ["emews", "status", "experiments/study/EXP001"]]
    done = emews_cli(*commands[0][1:], timeout=600)
    assert done.returncode == 0, done.stderr
    status = emews_cli(*commands[1][1:])
    assert status.returncode == 0, status.stderr
    store = SQLiteStore(tmp_path / "experiments" / "study" / "EXP001" / "results.db")
    rows = store.rows()
    store.close()
    assert len(rows) == 24 and all(r["status"] == "done" for r in rows)
    assert {r["rank"] for r in rows} <= {1, 2, 3}
    best = min(rows, key=lambda r: r["result"])
    assert 0 < best["result"] < 0.2                     # an SVC on digits: a few % of error
    assert f"best val_loss: {best['result']:.6g} (evaluation {best['id']})" in status.stdout
