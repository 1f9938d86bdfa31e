"""The documentation site holds the reference that the README points to: every page of
``docs/src`` is in the navigation, every setting of the code has its meaning, and the README
stays an invitation (at most 200 lines, its links to the site's pages alive)."""

import re
import tomllib
from pathlib import Path

from emews._config import SCHEMA

REPO = Path(__file__).parent.parent
DOCS = REPO / "docs"


def nav_pages():
    """The pages the navigation of ``docs/mkdocs.yml`` names, in order."""
    text = (DOCS / "mkdocs.yml").read_text()
    return re.findall(r"^\s+- .*?:\s*(\S+\.md)\s*$", text.split("\nnav:\n", 1)[1], re.M)


def test_every_page_is_in_the_navigation_once_and_every_entry_is_a_page():
    pages = sorted(p.relative_to(DOCS / "src").as_posix() for p in (DOCS / "src").rglob("*.md"))
    listed = nav_pages()
    assert len(listed) == len(set(listed))
    assert sorted(listed) == pages, ("pages missing from the nav of docs/mkdocs.yml: "
                                     f"{sorted(set(pages) - set(listed))}; nav entries with no "
                                     f"page: {sorted(set(listed) - set(pages))}")


def test_every_setting_has_its_meaning_and_every_meaning_a_setting():
    meanings = tomllib.loads((DOCS / "settings.toml").read_text())
    assert {t: sorted(s) for t, s in meanings.items()} == \
        {t: sorted(s) for t, s in SCHEMA.items()}
    assert all(text.strip() for table in meanings.values() for text in table.values())


def test_the_readme_is_short_and_its_links_are_alive():
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    links = re.findall(r"\]\(((?!https?:)[^)#]+)", readme)
    assert any(link.startswith("docs/src/") for link in links)
    assert [link for link in links if not (REPO / link).exists()] == []
