"""Every code block of the README and of ``docs/src`` runs as written, or says why it does not.

Each fenced block is classified by its language: ``bash`` (``sh``, ``console``) commands,
``toml`` study or site files, ``python`` snippets and ``json`` search spaces are run; a block
of any other language (an output sample, a diagram), and one of these that cannot run here,
is marked on the line before it: ``<!-- not run: REASON -->``, the reason naming the test that
covers it where one does. A block neither run nor marked fails
:func:`test_every_block_runs_or_says_why_not`, so a new page is covered by default.

A page's blocks run in order in a project directory of the page's own, so a later block uses
the files earlier ones wrote (a study file, then the command that runs it). The directory
starts with a ``my_model.py`` whose ``train`` gives metrics for any point (the pages' "your
model"; a page's own ``# my_model.py`` block replaces it), and ``HOME`` is in it. A page that
reads a study it does not make (:data:`GIVEN`: the running example of the page) finds it there,
made first, small and in process, with the parameters and metrics its commands name.

* ``toml``: written to the file its first line names (``# study.toml``; ``~/`` is the
  project's home), else ``study.toml``, and read as emews reads it (a study file with
  :func:`emews._config.load`, a site file with :func:`emews.launch._site.load`). A study's
  ``budget`` is cut to :data:`BUDGET` and its ``procs`` to :data:`PROCS`, so that the page's
  runs stay small; nothing else is changed.
* ``json``: written to ``space.json`` and loaded as a search space.
* ``python``: a block whose first line names a file (``# my_model.py``) is written there and
  imported; any other runs as a script.
* ``bash``: runs under ``bash -e`` with the ``emews`` command on ``PATH``; of a ``console``
  block, the lines after a ``$`` prompt do (the others are their output).

Every command must exit with status 0, and after the page every experiment it made holds
only finished evaluations, done.
"""

import os
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from emews._config import load as load_config
from emews.launch._site import load as load_site
from emews._space import Space
from emews.store import SQLiteStore

REPO = Path(__file__).parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs" / "src").glob("*.md"))]
RUN = {"bash": "bash", "sh": "bash", "console": "console", "toml": "toml", "python": "python",
       "json": "json"}
FENCE = re.compile(r"^(\s*)(```+)\s*([\w+-]*)")
NOT_RUN = re.compile(r"^<!-- not run: (\S.*) -->$")
NAMED = re.compile(r"^# (~/)?([\w./-]+\.(?:toml|py))\b")
BUDGET, PROCS = 4, 2
MY_MODEL = '''"""Your model, as the pages mean it: metrics for any point."""


def train(params):
    x = sum(float(v) for v in params.values() if isinstance(v, (int, float)))
    return {"val_loss": x, "loss": x, "accuracy": 1 / (1 + abs(x))}
'''
GIVEN = {"inspecting.md": "EXP003", "dashboard.md": "EXP003", "fidelity.md": "EXP001"}
GIVEN_STUDY = """[system]
pool = "inprocess"
procs = 2
[study]
name = "study"
expid = "{expid}"
space = "given_space.json"
objective = "my_model:train"
budget = 4
seed = 1
"""
GIVEN_SPACE = """[{"name": "lr", "type": "float", "lower": 0.0001, "upper": 0.1, "log": true},
 {"name": "units", "type": "int", "lower": 16, "upper": 128},
 {"name": "act", "type": "categorical", "values": ["relu", "tanh"]}]
"""


@dataclass
class Block:
    """A fenced code block: where it is, its language, its text and why it is not run."""

    page: Path
    line: int
    language: str
    text: str
    not_run: str | None

    def __str__(self):
        return f"{self.page.relative_to(REPO)}:{self.line} ({self.language or 'no language'})"


def blocks(page):
    """The fenced code blocks of ``page``, in order, each with its ``not run`` reason."""
    lines, found, i = page.read_text().splitlines(), [], 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        indent, ticks, language = fence.groups()
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == ticks)
        before = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        marked = NOT_RUN.match(before)
        text = "\n".join(line[len(indent):] for line in lines[i + 1:end]) + "\n"
        found.append(Block(page, i + 1, language, text, marked and marked.group(1)))
        i = end + 1
    return found


def runnable(page):
    """The blocks of ``page`` that run."""
    return [b for b in blocks(page) if b.not_run is None and b.language in RUN]


def test_every_block_runs_or_says_why_not():
    unmarked = [str(b) for page in PAGES for b in blocks(page)
                if b.not_run is None and b.language not in RUN]
    assert not unmarked, "blocks neither run nor marked <!-- not run: REASON -->: " + \
        ", ".join(unmarked)


def test_a_block_is_run_unless_marked_and_only_some_languages_run(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("Output:\n\n```text\nok\n```\n\n<!-- not run: a cluster's -->\n"
                    "```bash\nsbatch job.sh\n```\n\n  ```bash\n  emews --version\n  ```\n")
    found = blocks(page)
    assert [(b.language, b.not_run, b.text) for b in found] == [
        ("text", None, "ok\n"), ("bash", "a cluster's", "sbatch job.sh\n"),
        ("bash", None, "emews --version\n")]
    assert runnable(page) == found[2:]


def test_every_not_run_mark_is_on_a_block():
    for page in PAGES:
        marks = len(re.findall(r"^<!-- not run: ", page.read_text(), re.MULTILINE))
        assert marks == sum(b.not_run is not None for b in blocks(page)), page


def project(tmp_path, page):
    """The page's project directory, with its home, the default model and the study the page
    reads (:data:`GIVEN`)."""
    (tmp_path / "home").mkdir()
    (tmp_path / "my_model.py").write_text(MY_MODEL)
    if page.name in GIVEN:
        (tmp_path / "given_space.json").write_text(GIVEN_SPACE)
        (tmp_path / "given.toml").write_text(GIVEN_STUDY.format(expid=GIVEN[page.name]))
        run_command([sys.executable, "-m", "emews", "run", "given.toml"], tmp_path,
                    "the study the page reads")
    return tmp_path


def environment(where):
    env = dict(os.environ, HOME=str(where / "home"), PYTHONPATH=str(where),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    for name in ("PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE"):
        env.pop(name, None)
    return env


def small(text):
    """A study file's text with its budget and procs cut to :data:`BUDGET` and :data:`PROCS`."""
    text = re.sub(r"^(budget\s*=\s*)(\d+)", lambda m: f"{m[1]}{min(int(m[2]), BUDGET)}",
                  text, flags=re.MULTILINE)
    return re.sub(r"^(procs\s*=\s*)(\d+)", lambda m: f"{m[1]}{min(int(m[2]), PROCS)}", text,
                  flags=re.MULTILINE)


def run_toml(block, where):
    named = NAMED.match(block.text)
    path = (where / "home" if named and named[1] else where) / \
        (named[2] if named else "study.toml")
    path.parent.mkdir(parents=True, exist_ok=True)
    if "scheduler" in tomllib.loads(block.text):
        path.write_text(block.text)
        load_site(str(path))
    else:
        path.write_text(small(block.text))
        load_config(path, environ={})


def run_json(block, where):
    (where / "space.json").write_text(block.text)
    Space.from_file(str(where / "space.json"))


def run_python(block, where):
    named = NAMED.match(block.text)
    if named:
        (where / named[2]).write_text(block.text)
        code = f"import {Path(named[2]).stem}"
    else:
        code = block.text
    run_command([sys.executable, "-c", code], where, block)


def run_bash(block, where):
    run_command(["bash", "-e", "-c", block.text], where, block)


def run_console(block, where):
    commands = [line[2:] for line in block.text.splitlines() if line.startswith("$ ")]
    run_command(["bash", "-e", "-c", "\n".join(commands)], where, block)


def run_command(argv, where, what):
    """Run ``argv`` in the project ``where``; it must succeed (``what`` names it if not)."""
    done = subprocess.run(argv, cwd=where, env=environment(where), capture_output=True,
                          text=True, timeout=600)
    shown = f"{what}:\n{what.text}" if isinstance(what, Block) else what
    assert done.returncode == 0, f"{shown}\n{done.stdout}\n{done.stderr}"


RUNNERS = {"toml": run_toml, "json": run_json, "python": run_python, "bash": run_bash,
           "console": run_console}


def assert_experiments_finished(where):
    """Every experiment the page made holds only done evaluations (and at least one)."""
    for db in (where / "experiments").glob("*/*/results.db"):
        store = SQLiteStore(db, create=False)
        try:
            rows = store.rows()
        finally:
            store.close()
        assert rows and {row["status"] for row in rows} == {"done"}, (db, rows)


@pytest.mark.slow
@pytest.mark.mpi
@pytest.mark.parametrize("page", [p for p in PAGES if runnable(p)],
                         ids=lambda p: str(p.relative_to(REPO)))
def test_the_page_s_blocks_run_in_order(page, tmp_path):
    where = project(tmp_path, page)
    for block in runnable(page):
        RUNNERS[RUN[block.language]](block, where)
    assert_experiments_finished(where)
