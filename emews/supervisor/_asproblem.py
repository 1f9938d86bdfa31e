"""The search space of Supervisor's async-search workflow: its ``python/as_problem.py``, read
with :mod:`ast` and never imported or run.

Its ``Problem.__init__`` assigns scikit-optimize's dimensions: ``space["drop"] = (0, 0.9)``, a
range (``int`` if both bounds are integers, else ``float``), or ``space["optimizer"] = ["adam",
...]``, a ``categorical``. :func:`parse` returns them as entries of Supervisor's GA JSON format,
in the order the file assigns them; anything but a literal is one error naming the line.
"""

import ast

from .._errors import ConfigError
from ._randomsettings import range_entry


def parse(text, where="as_problem.py"):
    """The GA JSON entries of the ``space[NAME] = ...`` assignments in ``text``."""
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        raise ConfigError(f"{where}:{exc.lineno}", "must be Python source", exc.msg) from None
    entries = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target = node.targets[0]
        if not (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
                and target.value.id == "space"):
            continue
        line = f"{where}:{node.lineno}"
        try:
            name, value = ast.literal_eval(target.slice), ast.literal_eval(node.value)
        except ValueError:
            raise ConfigError(line, "space[NAME] must be assigned a literal (lower, upper) "
                              "range or [values] list", ast.unparse(node)) from None
        entries[name] = _entry(name, value, line)
    if not entries:
        raise ConfigError(where, "must assign the dimensions as space[NAME] = (lower, upper) "
                          "or [values], as Supervisor's as_problem.py does", None,
                          show_value=False)
    return list(entries.values())


def _entry(name, value, where):
    if not isinstance(name, str):
        raise ConfigError(where, "a dimension's name must be a string", name)
    if isinstance(value, list) and value:
        return {"name": name, "type": "categorical", "values": value}
    entry = range_entry(name, value) if isinstance(value, tuple) else None
    if entry is None:
        raise ConfigError(f"{where} ({name})", "must be a (lower, upper) range of numbers, "
                          "lower <= upper, or a non-empty [values] list", value)
    return entry
