"""The contracts and the public API carry type annotations, and mypy checks them (the CI
check of their types: ``[tool.mypy]`` in pyproject.toml says how strictly)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TYPED_MODULES = (
    "emews.pools.base",          # the Pool contract, Task, InProcessPool
    "emews.store.base",          # the Store contract
    "emews.service.transport",   # the Transport contract: ServiceLink, PoolLink
    "emews.core.plan",           # MasterPlan: what the master is given
)


def mypy(*args, cache):
    """mypy of this virtualenv on ``args``, with the project's settings: (status, output)."""
    done = subprocess.run([sys.executable, "-m", "mypy", "--config-file",
                           str(ROOT / "pyproject.toml"), "--cache-dir", str(cache), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    return done.returncode, done.stdout + done.stderr


def test_typed_modules_pass_mypy(tmp_path):
    args = [arg for module in TYPED_MODULES for arg in ("-m", module)]
    status, output = mypy(*args, cache=tmp_path)
    assert status == 0, output
    assert f"no issues found in {len(TYPED_MODULES)} source files" in output


def test_the_settings_refuse_an_unannotated_or_mistyped_function(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("def untyped(x):\n    return x\n\n\n"
                     "def mistyped() -> int:\n    return 'one'\n")
    status, output = mypy(str(probe), cache=tmp_path / "cache")
    assert status == 1, output
    assert "probe.py:1: error: Function is missing a type annotation" in output
    assert "probe.py:6: error: Incompatible return value type" in output
