"""A project moved or copied to another directory resumes there, through the real ``emews``
command: ``config.json`` keeps the paths inside the project relative to the experiment
directory, and ``--resume`` takes a search-space file that moved on its own (``--space``)."""

import json
import os
import shutil
import sqlite3
import subprocess
import sys

import pytest

MODEL = "def loss(params):\n    return (params['x'] - 0.5) ** 2\n"
SPACE = [{"name": "x", "type": "float", "lower": -2.0, "upper": 2.0}]
STUDY = """[system]
procs = 2
pool = "inprocess"
[study]
space = "space.json"
objective = "moved_model:loss"
budget = 3
seed = 5
"""


def emews(*args, cwd):
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-m", "emews", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def rows(expdir):
    db = sqlite3.connect(expdir / "results.db")
    try:
        return db.execute("SELECT id, status, params, result FROM evaluations ORDER BY id")\
            .fetchall()
    finally:
        db.close()


@pytest.fixture
def project(tmp_path):
    """A project that ran a study of 3 evaluations: ``(directory, its rows)``."""
    home = tmp_path / "proj1"
    home.mkdir()
    (home / "moved_model.py").write_text(MODEL)
    (home / "space.json").write_text(json.dumps(SPACE))
    (home / "study.toml").write_text(STUDY)
    done = emews("run", "study.toml", cwd=home)
    assert done.returncode == 0, done.stderr
    first = rows(home / "experiments/study/EXP001")
    assert [row[1] for row in first] == ["done"] * 3
    return home, first


@pytest.mark.parametrize("move", [shutil.move, shutil.copytree])
def test_a_moved_or_copied_project_resumes_where_it_is_now(project, tmp_path, move):
    home, first = project
    moved = tmp_path / "proj2"
    move(home, moved)
    expdir = moved / "experiments/study/EXP001"
    assert str(home) not in (expdir / "config.json").read_text()
    done = emews("run", "--resume", "experiments/study/EXP001", "--budget", 5, cwd=moved)
    assert done.returncode == 0, done.stderr
    resumed = rows(expdir)
    assert resumed[:3] == first
    assert [row[1] for row in resumed] == ["done"] * 5
    if home.exists():   # the copy's original is left as it was
        assert rows(home / "experiments/study/EXP001") == first


def test_a_resume_takes_a_space_file_that_moved_on_its_own(project, tmp_path):
    home, first = project
    elsewhere = tmp_path / "spaces"
    elsewhere.mkdir()
    (home / "space.json").rename(elsewhere / "space.json")
    done = emews("run", "--resume", "experiments/study/EXP001", "--budget", 4, cwd=home)
    assert done.returncode == 2 and "space.json: the search-space file must be readable" \
        in done.stderr, done.stderr
    done = emews("run", "--resume", "experiments/study/EXP001", "--budget", 4,
                 "--space", elsewhere / "space.json", cwd=home)
    assert done.returncode == 0, done.stderr
    assert len(rows(home / "experiments/study/EXP001")) == 4
    (elsewhere / "other.json").write_text(json.dumps([dict(SPACE[0], upper=3.0)]))
    done = emews("run", "--resume", "experiments/study/EXP001", "--budget", 5,
                 "--space", elsewhere / "other.json", cwd=home)
    assert done.returncode == 2, done.stderr
    assert "the search space's content: must be the same as in the stored study" in done.stderr
    assert rows(home / "experiments/study/EXP001")[:3] == first
