"""Every algorithm the docs show runs as written and passes the conformance suite.

Each ```python block of ``docs/src/*.md`` and ``algorithms/README.md`` that defines a subclass
of ``Algorithm`` is executed, as the page writes it, into a module of its own, and checked by
:class:`emews.plugin.Conformance` the way the docs tell a plugin's author to: through the
page's own ``Conformance`` subclass (its options; the name it gives the algorithm resolved by
the page's ``emews.algorithms`` entry-point table) where the page has one, plainly otherwise.
"""

import re
import sys
import tomllib
import types
from pathlib import Path

from emews.plugin import Conformance

REPO = Path(__file__).parent.parent
PAGES = sorted((REPO / "docs" / "src").glob("*.md")) + [REPO / "algorithms" / "README.md"]
ALGORITHM = re.compile(r"^class (\w+)\((?:emews\.)?(?:plugin\.)?Algorithm\):", re.M)


def blocks(text, language):
    """The code blocks in ``language`` of a page's text, in order."""
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


def entry_points(text):
    """Algorithm name -> class name, from the page's ``emews.algorithms`` entry-point table."""
    names = {}
    for block in blocks(text, "toml"):
        table = tomllib.loads(block).get("project", {}).get("entry-points", {})
        names.update({name: target.split(":")[-1]
                      for name, target in table.get("emews.algorithms", {}).items()})
    return names


def suites(text):
    """The page's own subclasses of Conformance, each executed as written, by class name."""
    found = {}
    for block in blocks(text, "python"):
        if "(Conformance)" in block:
            namespace = {}
            exec(compile(block, "<docs>", "exec"), namespace)  # the page's own text
            found.update({name: value for name, value in namespace.items()
                          if isinstance(value, type) and issubclass(value, Conformance)
                          and value is not Conformance})
    return found


def documented_algorithms():
    """A test class for every algorithm a page defines: (test name, class)."""
    for page in PAGES:
        text, label = page.read_text(), re.sub(r"\W", "_", str(page.relative_to(REPO))[:-3])
        names, page_suites = entry_points(text), suites(text)
        for number, block in enumerate(b for b in blocks(text, "python") if ALGORITHM.search(b)):
            module = types.ModuleType(f"{label}_{number}")
            exec(compile(block, str(page), "exec"), module.__dict__)  # as the page writes it
            sys.modules[module.__name__] = module
            for name in ALGORITHM.findall(block):
                base = next((suite for suite in page_suites.values()
                             if names.get(suite.algorithm, suite.algorithm) == name), Conformance)
                yield f"Test{name}_{label}", type(f"Test{name}", (base,),
                                                  {"algorithm": f"{module.__name__}:{name}"})


DOCUMENTED = dict(documented_algorithms())
globals().update(DOCUMENTED)


def test_the_algorithms_of_the_docs_are_all_found():
    assert sorted(DOCUMENTED) == ["TestBestPerturbation_algorithms_README",
                                  "TestCoordinateSearch_docs_src_algorithms"]
    assert DOCUMENTED["TestBestPerturbation_algorithms_README"].options == {"step": 0.2}
