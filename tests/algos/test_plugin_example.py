"""The example plugin package: its code is the README's, it conforms, and its entry point works."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from emews.testing import Conformance, experiment_rows

REPO = Path(__file__).parent.parent.parent
EXAMPLE = REPO / "examples" / "plugin_example"
sys.path.insert(0, str(EXAMPLE))


class TestExamplePlugin(Conformance):
    algorithm = "emews_plugin_example:BestPerturbation"
    options = {"step": 0.2}


def test_the_readme_shows_the_whole_plugin_in_at_most_20_lines():
    readme = (REPO / "algorithms" / "README.md").read_text()
    block = next(b for b in re.findall(r"```python\n(.*?)```", readme, re.S)
                 if "class BestPerturbation" in b)
    source = (EXAMPLE / "emews_plugin_example" / "__init__.py").read_text()
    assert block == source and len(source.splitlines()) <= 20


@pytest.mark.slow
def test_the_installed_plugin_runs_a_study_by_its_entry_point_name(tmp_path):
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                    str(target), str(EXAMPLE)], check=True, capture_output=True)
    (tmp_path / "space.json").write_text(json.dumps(
        [{"name": "x1", "type": "float", "lower": -5.0, "upper": 10.0},
         {"name": "x2", "type": "float", "lower": 0.0, "upper": 15.0}]))
    (tmp_path / "study.toml").write_text(
        '[system]\npool = "inprocess"\nprocs = 2\n'
        '[study]\nname = "plugin"\nalgorithm = "perturb"\nspace = "space.json"\nbudget = 12\n'
        'seed = 3\nobjective = "emews.models.analytic:branin"\n[algorithm]\nstep = 0.05\n')
    done = subprocess.run([sys.executable, "-m", "emews", "run", "study.toml"], cwd=tmp_path,
                          env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    assert "stopped: evaluation budget of 12 reached" in done.stdout
    rows = experiment_rows(tmp_path / "experiments")
    assert len(rows) == 12 and all(r["status"] == "done" for r in rows)
