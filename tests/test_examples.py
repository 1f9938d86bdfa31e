"""Examples never rot: the README's plugin and every study in examples/ are run here."""

import re
import sys
import types
from pathlib import Path

import pytest

import emews
from emews.store import SQLiteStore

REPO = Path(__file__).parent.parent


def readme_block(marker):
    blocks = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), re.S)
    return next(block for block in blocks if marker in block)


def test_the_readme_plugin_runs_as_an_algorithm_and_improves(tmp_path, monkeypatch):
    code = readme_block("class CoordinateSearch")
    assert len(code.strip().splitlines()) <= 30
    module = types.ModuleType("readme_plugin")
    exec(compile(code, "README.md", "exec"), module.__dict__)  # the README's own text
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
