"""The search space of Supervisor's async-search workflow: its ``python/as_problem.py``, read
with :mod:`ast` and never imported or run.

Supervisor's ``workflows/async-search/python/as_problem.py`` builds an ``OrderedDict`` in
``Problem.__init__`` and hands it to scikit-optimize as the dimensions::

    space["drop"] = (0, 0.9)            # a range: skopt's Integer if both bounds are
    space["epochs"] = (2, 3)            #   integers, else Real (uniform)
    space["optimizer"] = ["adam", ...]  # a list: skopt's Categorical

:func:`parse` returns those dimensions as entries of Supervisor's GA JSON format (``int``,
``float`` or ``categorical``), in the order the file assigns them. The values must be literals;
anything else assigned to ``space[...]`` is one error naming the file, the line and the rule.
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
        raise ConfigError(f"{where} ({name})", "must be a (lower, upper) range of numbers or a "
                          "non-empty [values] list", value)
    return entry
