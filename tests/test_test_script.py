"""``scripts/test.sh`` (the README's test command) run without root, on a copy of its scripts:
it installs no Debian packages, runs pytest, and ends by naming the packages it skipped and the
one command that installs them."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# Mirrors scripts/venv.sh once its virtualenv is made: ROOT, and the virtualenv first on PATH.
VENV_SH = f"""ROOT=$(cd "$(dirname "${{BASH_SOURCE[0]}}")/.." && pwd)
export PATH="{Path(sys.executable).parent}:$PATH"
"""
# Mirrors .ci/apt-packages: a comment, a package every Debian has, and one that no machine has.
APT_PACKAGES = """# Debian packages the test suite starts for real
bash
emews-test-absent-package
"""


# An unprivileged user (nobody's uid and gid) that may still read every file, as the Python of
# this virtualenv may live in root's home.
UNPRIVILEGED = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                "--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search", "--"]


@pytest.fixture
def copy(tmp_path):
    """The scripts under test beside the fixtures above."""
    (tmp_path / "scripts").mkdir()
    (tmp_path / ".ci").mkdir()
    for script in ("test.sh", "apt-deps.sh"):
        shutil.copy(REPO / "scripts" / script, tmp_path / "scripts" / script)
    (tmp_path / "scripts" / "venv.sh").write_text(VENV_SH)
    (tmp_path / ".ci" / "apt-packages").write_text(APT_PACKAGES)
    (tmp_path / "test_one.py").write_text("def test_one():\n    assert True\n")
    return tmp_path


def test_test_sh_without_root_ends_with_the_packages_it_skipped_and_their_install_command(copy):
    if os.geteuid() != 0 or not shutil.which("dpkg-query"):
        pytest.skip("runs scripts/test.sh as an unprivileged user (root switches to it), on "
                    "Debian")
    done = subprocess.run([*UNPRIVILEGED, "bash", "scripts/test.sh", "test_one.py", "-q"],
                          cwd=copy, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert "1 passed" in lines[-3]
    assert lines[-2:] == [
        "emews: not root, so these Debian packages were not installed (the tests that start "
        "them skipped or failed): emews-test-absent-package",
        "emews: to install them: sudo bash scripts/apt-deps.sh"]
