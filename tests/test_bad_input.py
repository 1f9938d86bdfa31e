"""The mistakes users make, through the real ``emews`` command: each one is one ``emews:
error:`` line naming the file or field, the rule and the value, exit status 2, no traceback,
and nothing written where it should not be."""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import emews

from conftest import SUPPORT

ROOT = Path(emews.__file__).parent.parent
GOOD = {"study": {"objective": "toy_models:quadratic", "budget": 2}}
RULE = "must name one directory (not empty, '.' or '..', no '/', at most 255 bytes)"


def emews(*args, cwd):
    env = dict(os.environ, PYTHONPATH=str(SUPPORT))
    for name in ("PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE"):
        env.pop(name, None)
    return subprocess.run([sys.executable, "-m", "emews", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def one_error_line(done):
    """The one error line of a refused command."""
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr + done.stdout
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("emews: error: "), done.stderr
    return lines[0][len("emews: error: "):]


@pytest.mark.parametrize("argv, expected", [
    (["--name", "../escape"], f"[study].name: {RULE}, got '../escape'"),
    (["--name", ""], f"[study].name: {RULE}, got ''"),
    (["--name", "n" * 300], f"[study].name: {RULE}, got '{'n' * 40}...'"),
    (["--set", "study.expid=a/b"], f"[study].expid: {RULE}, got 'a/b'"),
    (["--data-dir", "a-file/data"], "{tmp_path}/a-file/data/study: the experiment directory "
     "must be creatable there (Not a directory)"),
    (["--budget", "ten"], "emews run: argument --budget: invalid int value: 'ten'"),
])
def test_a_study_s_mistake_is_one_line_and_makes_nothing(study, tmp_path, argv, expected):
    path = study(**GOOD)
    (tmp_path / "a-file").write_text("a file where a directory should be\n")
    before = sorted(p.name for p in tmp_path.parent.iterdir())
    line = one_error_line(emews("run", path, *argv, cwd=tmp_path))
    assert line == expected.format(tmp_path=tmp_path)
    assert not (tmp_path / "experiments").exists() and not (tmp_path / "escape").exists()
    assert sorted(p.name for p in tmp_path.parent.iterdir()) == before


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                    reason="needs root to run emews as a user who may not write there")
def test_a_data_directory_the_user_may_not_write_is_one_line(study):
    shared = Path(tempfile.mkdtemp(prefix="emews-ro-"))  # /tmp/pytest-of-root is private
    try:
        shared.chmod(0o755)
        path = study(**GOOD)
        shutil.copy(path, shared / "study.toml")
        shutil.copy(path.parent / "space.json", shared / "space.json")
        readonly = shared / "readonly"
        readonly.mkdir()
        readonly.chmod(0o555)
        done = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable,
             "-m", "emews", "run", "study.toml", "--data-dir", str(readonly)], cwd=shared,
            capture_output=True, text=True, timeout=120,
            env=dict(os.environ, HOME=str(shared), PYTHONPATH=f"{SUPPORT}:{ROOT}"))
        line = one_error_line(done)
        assert line == (f"{readonly}/study: the experiment directory must be creatable there "
                        "(Permission denied)")
        assert list(readonly.iterdir()) == []
    finally:
        shutil.rmtree(shared)
