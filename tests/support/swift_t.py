"""A real Swift/T for the tests: built once per machine by the product's ``emews swift-t build``
(:func:`emews.launch._swift_t.build`).

Its source is ``$EMEWS_SWIFT_T_SOURCE`` (``.ci/run`` sets it to the vendored tarball), else
``../shared/vendor/swift-t-e96b808.tar.gz`` beside the repository where the development machines
have it, else the pinned release downloaded from GitHub. It goes into ``~/.cache/swift-t-e96b808``
(the prefix machines built before keep serving), where later calls find it and return at once;
the build itself holds a file lock, so two test processes never build at once.

It skips only where it cannot build (not root, so no apt, and a prerequisite is missing); as root
(CI) a failed build is an error.
"""

import os
from pathlib import Path

import pytest

from emews.launch._swift_t import MissingPrerequisites, build

REPO = Path(__file__).resolve().parents[2]
VENDORED = REPO.parent / "shared" / "vendor" / "swift-t-e96b808.tar.gz"
PREFIX = Path.home() / ".cache" / "swift-t-e96b808"


def source():
    """The Swift/T source the tests build from (``None``: download the pinned release)."""
    given = os.environ.get("EMEWS_SWIFT_T_SOURCE")
    if given:
        return Path(given)
    return VENDORED if VENDORED.is_file() else None


def launcher_env():
    """Turbine launches with /usr/bin/mpiexec, which Debian's alternatives point at whichever MPI
    came last (Open MPI would break this MPICH build): name MPICH's own where it is."""
    mpich = Path("/usr/bin/mpiexec.mpich")
    return {"TURBINE_LAUNCHER": str(mpich)} if mpich.exists() else {}


def swift_t_path():
    """The PATH entries of a real swift-t (a list of directories), built if need be."""
    try:
        return [str(entry) for entry in build(source(), PREFIX)]
    except MissingPrerequisites as exc:
        if os.geteuid() == 0:
            raise
        pytest.skip(f"{exc} (as root the build installs them; or: sudo bash scripts/apt-deps.sh)")


@pytest.fixture(scope="session")
def swift_t():
    """The PATH entries of a real Swift/T (STC 1.0.8, Turbine 1.5.2, this Python embedded)."""
    return swift_t_path()

