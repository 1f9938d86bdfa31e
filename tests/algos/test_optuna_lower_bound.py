"""The Optuna plugin on the oldest Optuna that ``setup.cfg`` allows (issue [search], item 6).

The suite runs on the newest Optuna; this test installs the lower bound beside it (no
dependencies: Optuna 4 and 5 need the same ones) and runs the plugin's own tests on it, so a
use of something only Optuna 5 has fails here rather than in a user's study.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.version import Version

REPO = Path(__file__).resolve().parents[2]
PLUGIN_TESTS = ["tests/algos/test_bayes.py", "tests/algos/test_resume.py",
                "tests/algos/test_conformance.py", "tests/algos/test_options.py",
                "tests/algos/test_optuna_objectives.py",
                "tests/algos/test_optuna_conditional.py"]


def optuna_lower_bound():
    """The one ``optuna>=X`` bound that every extra in setup.cfg declares."""
    bounds = set(re.findall(r"^\s*optuna>=([\d.]+)\s*$", (REPO / "setup.cfg").read_text(),
                            re.MULTILINE))
    assert len(bounds) == 1, f"setup.cfg: extras disagree on optuna's lower bound: {bounds}"
    return bounds.pop()


@pytest.mark.slow
def test_the_optuna_plugin_passes_its_tests_on_the_lowest_optuna_allowed(tmp_path):
    # the uv that scripts/venv.sh installed beside this python, else one on PATH
    uv = shutil.which("uv", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    if uv is None:
        pytest.skip("uv is not installed (scripts/venv.sh installs it)")
    version = optuna_lower_bound()
    target = tmp_path / "site"
    subprocess.run([uv, "pip", "install", "-q", "--no-deps", "--python", sys.executable,
                    "--target", str(target), f"optuna=={version}"], check=True, timeout=300)
    env = dict(os.environ, PYTHONPATH=str(target))
    installed = subprocess.run([sys.executable, "-c", "import optuna; print(optuna.__version__)"],
                               env=env, capture_output=True, text=True, check=True)
    assert Version(installed.stdout.strip()) == Version(version)

    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "-m", "not slow", "-k", "optuna or tpe", *PLUGIN_TESTS],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    passed = re.search(r"(\d+) passed", run.stdout)
    assert passed and int(passed.group(1)) >= 20, run.stdout[-2000:]
