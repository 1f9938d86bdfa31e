"""The documentation site builds with ``mkdocs build --strict`` (so CI builds it), and the
commands it shows exist."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from emews._cli import parser
from emews._config import SCHEMA

DOCS = Path(__file__).parent.parent / "docs"


@pytest.mark.slow
def test_the_docs_build_strictly(tmp_path):
    pytest.importorskip("material", reason="pip install 'emews-hpo[docs]'")
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f",
                            DOCS / "mkdocs.yml", "--site-dir", tmp_path / "site"],
                           capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, NO_MKDOCS_2_WARNING="1"))
    assert built.returncode == 0, built.stderr
    assert "WARNING" not in built.stderr
    page = (tmp_path / "site" / "inspecting" / "index.html").read_text()
    for command in ("emews status", "emews show", "emews plot", "emews report", "emews export"):
        assert command in page
    settings = (tmp_path / "site" / "settings" / "index.html").read_text()
    assert "{{ settings }}" not in settings and "no_limit" in settings and "SH_TIMEOUT" in settings
    for table, keys in SCHEMA.items():   # each setting under its own heading: the search finds it
        for key in keys:
            assert f'id="{table}-{key}"' in settings
    index = json.loads((tmp_path / "site" / "search" / "search_index.json").read_text())
    assert "settings/#system-drain_margin" in {entry["location"] for entry in index["docs"]}
    for page in ("algorithms", "models", "benchmarks"):   # the READMEs beside the code, included
        text = (tmp_path / "site" / page / "index.html").read_text()
        assert "{{ include" not in text
    assert "Writing your own" in (tmp_path / "site" / "algorithms" / "index.html").read_text()
    for page in (DOCS / "src").glob("*.md"):   # every page built (a page left out of the nav
        # fails the build: validation.nav.omitted_files is a warning, and --strict)
        assert (tmp_path / "site" / ("" if page.stem == "index" else page.stem)
                / "index.html").is_file()
    cli = (tmp_path / "site" / "cli" / "index.html").read_text()
    for name in ("run", "serve", "pool", "submit", "status", "export"):
        assert f"emews {name}" in cli  # generated from the parser: every command has its help


def test_every_command_in_the_docs_exists():
    commands = parser()._subparsers._group_actions[0].choices
    shown = set()
    for page in (DOCS / "src").glob("*.md"):
        shown.update(re.findall(r"^emews (\w+)", page.read_text(), re.MULTILINE))
    assert shown and shown <= set(commands)
