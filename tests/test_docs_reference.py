"""The reference pages (the settings, the ``emews`` command, the Python API) are generated
from the code into ``docs/src`` and committed, so that they read the same in the repository as
on the site; here, that they are current."""

import difflib
import importlib.util
from pathlib import Path

import pytest

HOOK = Path(__file__).parent.parent / "docs" / "hooks" / "reference.py"


def reference_module():
    """``docs/hooks/reference.py`` (not a package: loaded from its file)."""
    spec = importlib.util.spec_from_file_location("docs_reference", HOOK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REFERENCE = reference_module()


@pytest.mark.parametrize("page", sorted(REFERENCE.PAGES))
def test_each_generated_reference_page_is_current(page):
    committed = (REFERENCE.DOCS / "src" / page).read_text(encoding="utf-8")
    assert "{{" not in committed, f"docs/src/{page}: a placeholder is left"
    fresh = REFERENCE.regenerated(page)   # made in memory: nothing is written
    if committed != fresh:
        diff = "\n".join(list(difflib.unified_diff(committed.splitlines(), fresh.splitlines(),
                                                   "committed", "from the code", lineterm=""))[:20])
        pytest.fail(f"docs/src/{page} is not what the code makes: run "
                    f"`python docs/hooks/reference.py` and commit the pages\n{diff}")


def test_a_page_without_its_marker_is_refused(tmp_path, monkeypatch):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "cli.md").write_text("# Reference: the emews command\n\n{{ cli }}\n")
    monkeypatch.setattr(REFERENCE, "DOCS", tmp_path)
    with pytest.raises(ValueError, match="docs/src/cli.md: has no line"):
        REFERENCE.regenerated("cli.md")
