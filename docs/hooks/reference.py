"""MkDocs hook: the reference pages are generated from the code, so they cannot drift.

``{{ settings }}`` becomes the table of every configuration setting (from
:data:`emews.config.SCHEMA`) and ``{{ cli }}`` the help of every ``emews`` command (from
:func:`emews.cli.parser`).
"""

import argparse

from emews.cli import parser
from emews.config import SCHEMA


def settings_table():
    """Every setting: table, key, kind, default, environment variable and rule."""
    rows = ["| table | setting | kind | default | environment | rule |", "|---|---|---|---|---|---|"]
    for table, settings in SCHEMA.items():
        for key, setting in settings.items():
            rules = []
            if setting.choices:
                rules.append("one of " + ", ".join(f"`{c}`" for c in setting.choices))
            if setting.minimum is not None:
                rules.append(f"at least {setting.minimum:g}")
            default = "" if setting.default in (None, [], "") else f"`{setting.default}`"
            rows.append(f"| `[{table}]` | `{key}` | {setting.kind} | {default} | "
                        f"{'`' + setting.env + '`' if setting.env else ''} | "
                        f"{'; '.join(rules)} |")
    return "\n".join(rows)


def cli_reference():
    """The usage and options of each subcommand, as argparse writes them."""
    top = parser()
    commands = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    sections = []
    for name, sub in commands.choices.items():
        sections.append(f"## emews {name}\n\n```text\n{sub.format_help().strip()}\n```")
    return "\n\n".join(sections)


def on_page_markdown(markdown, page, config, files):
    """Fill the placeholders of the reference pages."""
    if "{{ settings }}" in markdown:
        markdown = markdown.replace("{{ settings }}", settings_table())
    if "{{ cli }}" in markdown:
        markdown = markdown.replace("{{ cli }}", cli_reference())
    return markdown
