"""The reference pages, generated from the code into the pages themselves, so that they read
the same in the repository and on the site; a test (tests/test_docs_reference.py) fails when
they drift. ``python docs/hooks/reference.py`` writes them again: each page's text after its
:data:`MARKER` line is generated.

``settings.md`` gets every configuration setting (from :data:`emews._config.SCHEMA`, with
its meaning from ``docs/settings.toml``), one heading each so that the site's search finds
it; ``cli.md`` the help of every ``emews`` command (from :func:`emews._cli.parser`);
``python.md`` the public Python API: each name in ``emews.__all__``, with its signature and
docstring. As an MkDocs hook, it makes ``{{ include PATH }}`` the Markdown file PATH of the
repository (without its title: the page has its own; its links to the repository's files
written as their paths), so that a README beside the code is the one text of its page.
"""

import argparse
import functools
import inspect
import re
import tomllib
from pathlib import Path

import emews
from emews._cli import parser
from emews._config import SCHEMA


DOCS = Path(__file__).resolve().parent.parent
REPO = DOCS.parent
MEANINGS = DOCS / "settings.toml"
NOT_RUN = "<!-- not run: "   # a code block the docs' test does not run (tests/test_docs_run.py)
MARKER = "<!-- generated from the code: `python docs/hooks/reference.py` writes what follows -->"
HELP_WIDTH = 100   # the commands' help as a terminal this wide shows it, wherever it is made


def meanings():
    """``{table: {key: meaning}}`` of ``docs/settings.toml``."""
    return tomllib.loads(MEANINGS.read_text(encoding="utf-8"))


def settings_reference():
    """Every setting under a heading of its own (``[table] key``): its meaning, then its kind,
    default, environment variable and rule, as the code has them."""
    meaning = meanings()
    sections = []
    for table, settings in SCHEMA.items():
        sections.append(f"## `[{table}]`")
        for key, setting in settings.items():
            facts = [f"**{setting.kind}**"]
            if setting.default not in (None, [], ""):
                facts.append(f"default `{setting.default}`")
            if setting.env:
                facts.append(f"environment `{setting.env}`")
            if setting.choices:
                facts.append("one of " + ", ".join(f"`{c}`" for c in setting.choices))
            if setting.minimum is not None:
                facts.append(f"at least {setting.minimum:g}")
            sections.append(f"### `{key}` {{ #{table}-{key} }}\n\n"
                            f"`[{table}] {key}` · {' · '.join(facts)}\n\n"
                            f"{meaning[table][key]}")
    return "\n\n".join(sections)


LINK = re.compile(r"\[([^\]]+)\]\((?!https?:|#)([^)]+)\)")


def include(path):
    """The Markdown file ``path`` (relative to the repository) for a page: without a leading
    comment and its title, each relative link to a file of the repository written as that
    file's path."""
    source = REPO / path
    text = source.read_text(encoding="utf-8")
    text = re.sub(r"^<!--.*?-->\n", "", text, flags=re.S)
    text = re.sub(r"^# .*\n", "", text.lstrip())

    def as_path(match):
        target = (source.parent / match.group(2)).resolve().relative_to(REPO)
        label = match.group(1).strip("`")
        return f"`{label}`" if label == str(target) else f"{match.group(1)} (`{target}`)"

    return LINK.sub(as_path, text)


def cli_reference():
    """The usage and options of each subcommand, as argparse writes them."""
    top = parser()
    commands = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    sections = []
    for name, sub in commands.choices.items():
        sub.formatter_class = functools.partial(sub.formatter_class, width=HELP_WIDTH)
        sections.append(f"## emews {name}\n\n{NOT_RUN}the command's help, kept current by "
                        f"tests/test_docs_reference.py -->\n```text\n"
                        f"{sub.format_help().strip()}\n```")
    return "\n\n".join(sections)


# The classic EQ/Py names (those of EMEWS's eqpy.py) that ``from emews import eqpy`` promises.
EQPY_NAMES = ("init", "OUT_put", "IN_get", "output_q_get", "input_q", "EQPY_ABORT")


def markdown_doc(obj):
    """``obj``'s docstring as Markdown: Sphinx roles become code, ``::`` a plain colon."""
    text = inspect.getdoc(obj) or ""
    text = re.sub(r":(?:func|class|meth|mod|data|attr|exc):`~?([^`]+)`", r"``\1``", text)
    return re.sub(r"::$", ":", text, flags=re.MULTILINE)


def signature(name, obj):
    """How ``name`` is written: an import for a module, ``class name`` for a class built
    without arguments, the call (``self``, ``cls`` and annotations left out) for a class or
    function, else ``name = value`` (a string, a tuple) or ``name: type``."""
    if inspect.ismodule(obj):
        parent, _, child = name.rpartition(".")
        return f"from {parent} import {child}"
    if callable(obj):
        if inspect.isclass(obj):   # its __init__, or its __new__ where it has no __init__
            made = obj.__init__ if inspect.isfunction(obj.__init__) else obj.__new__
            if not inspect.isfunction(made):
                return f"class {name}"
            obj = made
        call = inspect.signature(obj)
        parameters = [p.replace(annotation=p.empty) for p in call.parameters.values()
                      if p.name not in ("self", "cls")]
        return f"{name}{call.replace(parameters=parameters, return_annotation=call.empty)}"
    return f"{name} = {obj!r}" if isinstance(obj, (str, tuple)) \
        else f"{name}: {type(obj).__name__}"


def entry(heading, name, obj):
    """One documented name: a heading, its signature as code, its docstring."""
    doc = markdown_doc(obj) if callable(obj) or inspect.ismodule(obj) else ""
    return (f"{heading} `{name}`\n\n{NOT_RUN}a signature -->\n```python\n"
            f"{signature(name, obj)}\n```\n\n{doc}").rstrip()


def members(name, obj):
    """The entries under a public name: a class's constants (``UPPER_CASE``) or its public
    methods, a module's ``__all__`` (the EQ/Py names of ``eqpy``); a name of ``emews.__all__``
    among them points to its own section."""
    constants = {n: v for n, v in vars(obj).items() if n.isupper()} \
        if inspect.isclass(obj) else {}
    if constants:
        return ["| member | value |\n|---|---|\n" + "\n".join(
            f"| `{name}.{n}` | `{v!r}` |" for n, v in constants.items())]
    if inspect.ismodule(obj):
        return [f"### `{name}.{n}`\n\nThe same as `emews.{n}`."
                if getattr(emews, n, None) is getattr(obj, n) and n in emews.__all__
                else entry("###", f"{name}.{n}", getattr(obj, n))
                for n in getattr(obj, "__all__", EQPY_NAMES)]
    if inspect.isclass(obj):
        return [entry("###", f"{name}.{n}", v) for n, v in vars(obj).items()
                if inspect.isfunction(v) and not n.startswith("_")]
    return []


def api_reference():
    """Each name of ``emews.__all__``, in that order, as a ``## `emews.NAME` `` section."""
    sections = []
    for name in emews.__all__:
        obj = getattr(emews, name)
        sections.append("\n\n".join([entry("##", f"emews.{name}", obj),
                                       *members(f"emews.{name}", obj)]))
    return "\n\n".join(sections)


PAGES = {"settings.md": settings_reference, "cli.md": cli_reference, "python.md": api_reference}
"""The generated pages of ``docs/src``, each with what makes its text after :data:`MARKER`."""


def regenerated(page):
    """The text that ``docs/src/PAGE`` (one of :data:`PAGES`) should hold: its own text
    through its :data:`MARKER` line, then the reference made now."""
    text = (DOCS / "src" / page).read_text(encoding="utf-8")
    head, marker, _ = text.partition(MARKER)
    if not marker:
        raise ValueError(f"docs/src/{page}: has no line {MARKER!r} to generate after")
    return f"{head}{MARKER}\n\n{PAGES[page]()}\n"


def on_page_markdown(markdown, page, config, files):
    """Fill the ``{{ include PATH }}`` placeholders."""
    return re.sub(r"\{\{ include (\S+) \}\}", lambda m: include(m.group(1)), markdown)


if __name__ == "__main__":
    for name in PAGES:
        (DOCS / "src" / name).write_text(regenerated(name), encoding="utf-8")
        print(f"wrote docs/src/{name}")
