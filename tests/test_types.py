"""The contracts and the public API carry type annotations, and mypy checks them (the CI
check of their types: ``[tool.mypy]`` in pyproject.toml says how strictly); every pool keeps
the signatures of the pool contract (unannotated, so mypy does not look at them)."""

import inspect
import subprocess
import sys
from pathlib import Path

import pytest

from emews.pools._base import InProcessPool, Pool
from emews.pools._mpi import MPIPool
from emews.pools._packed import PackedPool
from emews.service._core import RemotePool

ROOT = Path(__file__).resolve().parents[1]

TYPED_MODULES = (
    "emews",                     # the public API: run, load, and what it exports
    "emews.plugin",              # what a plugin needs: the Algorithm contract, spaces, options
    "emews.core._algorithm",      # the Algorithm contract, its stopping rules and helpers
    "emews.core._vector",         # Objectives, told in a study of several objectives
    "emews.pools._base",          # the Pool contract, Task, InProcessPool
    "emews.store._base",          # the Store contract
    "emews.service._transport",   # the Transport contract: ServiceLink, PoolLink
    "emews.core._plan",           # MasterPlan: what the master is given
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


def shape(function):
    """A function's parameters without their annotations: ``(name, kind, default)``."""
    return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]


@pytest.mark.parametrize("pool", [InProcessPool, MPIPool, PackedPool, RemotePool],
                         ids=lambda pool: pool.__name__)
def test_every_pool_keeps_the_signatures_of_the_pool_contract(pool):
    methods = {name: method for name, method in vars(Pool).items()
               if inspect.isfunction(method) and not name.startswith("_")}
    assert {"submit", "collect", "free_slots", "bind_judge"} <= methods.keys()
    for name, method in methods.items():
        assert shape(getattr(pool, name)) == shape(method), f"{pool.__name__}.{name}"
