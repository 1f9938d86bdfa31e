"""A real Swift/T for the tests: built once per machine from the vendored source.

:func:`swift_t_path` runs ``../shared/vendor/build-swift-t.sh`` (``shared/`` beside the
repository, as on the development machines and in CI), which apt-installs Debian's MPICH and the
build tools, builds STC and Turbine with this Python embedded and Debian's MPICH alone (about a
minute) into ``~/.cache/swift-t-e96b808`` and prints the bin directories to put on PATH; later
calls find the build and return at once. A file lock keeps two test processes from building at
once.

It skips only where it cannot build (not root, so no apt) and finds no build; as root (CI) a
missing vendor directory or a failed build is an error.
"""

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO.parent / "shared" / "vendor" / "build-swift-t.sh"
PREFIX = Path.home() / ".cache" / "swift-t-e96b808"


def launcher_env():
    """Turbine launches with /usr/bin/mpiexec, which Debian's alternatives point at whichever MPI
    came last (Open MPI would break this MPICH build): name MPICH's own where it is."""
    mpich = Path("/usr/bin/mpiexec.mpich")
    return {"TURBINE_LAUNCHER": str(mpich)} if mpich.exists() else {}


def _path_without_the_venv():
    """PATH without this virtualenv's bin: its ``mpicc`` is the ``mpich`` wheel's, which would
    link ADLB against the wheel's MPI while Turbine links Debian's; loaded together, the wheel's
    UCX then fails against Debian's (``undefined symbol: ucs_config_doc_nop``)."""
    venv_bin = os.path.dirname(sys.executable)
    return os.pathsep.join(entry for entry in os.environ["PATH"].split(os.pathsep)
                           if entry and os.path.abspath(entry) != os.path.abspath(venv_bin))


def _bins():
    return [PREFIX / "stc" / "bin", PREFIX / "turbine" / "bin"]


def swift_t_path():
    """The PATH entries of a real swift-t (a list of directories), built if need be."""
    if (PREFIX / "stc" / "bin" / "swift-t").exists():
        return [str(p) for p in _bins()]
    if os.geteuid() != 0:
        pytest.skip("Swift/T is not built and building it needs root (apt); run as root or "
                    f"run {BUILD} once")
    if not BUILD.is_file():
        raise FileNotFoundError(f"{BUILD}: the Swift/T build script must be beside the "
                                "repository (shared/vendor/)")
    PREFIX.parent.mkdir(parents=True, exist_ok=True)
    with open(PREFIX.parent / "swift-t-e96b808.build-lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        env = dict(os.environ, PYTHON_EXE=sys.executable, PATH=_path_without_the_venv())
        done = subprocess.run(["bash", str(BUILD), str(PREFIX)], env=env, capture_output=True,
                              text=True, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"building Swift/T failed ({BUILD}):\n{done.stdout}\n{done.stderr}")
    return done.stdout.strip().splitlines()[-1].split(":")


@pytest.fixture(scope="session")
def swift_t():
    """The PATH entries of a real Swift/T (STC 1.0.8, Turbine 1.5.2, this Python embedded)."""
    return swift_t_path()
