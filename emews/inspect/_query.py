"""``--where``: filters on parameters and metrics, parsed here (never handed to SQL or Python).

A filter is ``NAME OP VALUE`` clauses joined by ``and``: OP is one of ``< <= > >= == !=``,
NAME a parameter, a metric or ``result``, VALUE a number, ``true``/``false`` or a word (a
categorical value; quote it with ``'`` or ``"`` when it holds spaces).
"""

import operator
import re

from .._errors import ConfigError

OPERATORS = {"<=": operator.le, ">=": operator.ge, "==": operator.eq, "!=": operator.ne,
             "<": operator.lt, ">": operator.gt}
CLAUSE = re.compile(r"\s*([A-Za-z_][\w.\-]*)\s*(<=|>=|==|!=|<|>)\s*(\"[^\"]*\"|'[^']*'|[^\s]+)"
                    r"\s*$")
NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")
AND = re.compile(r"\s+and\s+", re.IGNORECASE)


def parse(text, names):
    """The clauses of ``text`` as ``[(name, op, value)]``; ``names`` are those allowed."""
    clauses = []
    for part in AND.split(text.strip()):
        match = CLAUSE.fullmatch(part)
        if not match:
            raise ConfigError("--where", "must be NAME OP VALUE clauses joined by 'and', OP one "
                              f"of {' '.join(OPERATORS)}", part)
        name, op, value = match.groups()
        if name not in names:
            raise ConfigError("--where", f"NAME must be a parameter or metric of the study "
                              f"({', '.join(names)})", name)
        clauses.append((name, op, _value(value)))
    return clauses


def _value(text):
    if text[0] in "'\"":
        return text[1:-1]
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    return float(text) if NUMBER.fullmatch(text) else text


def field(row, name):
    """The value of ``name`` in ``row``: a parameter, else a metric, else the result."""
    if name in row["params"]:
        return row["params"][name]
    if name in row["metrics"]:
        return row["metrics"][name]
    return row["result"] if name == "result" else None


def matches(row, clauses):
    """Whether ``row`` satisfies every clause (a missing value or a mismatched type never
    does)."""
    for name, op, value in clauses:
        actual = field(row, name)
        if actual is None or isinstance(actual, bool) != isinstance(value, bool):
            return False
        try:
            if not OPERATORS[op](actual, value):
                return False
        except TypeError:  # a number against a word
            return False
    return True


def select(rows, text, names):
    """The rows that satisfy the filter ``text`` (all of them when it is empty)."""
    if not text:
        return list(rows)
    clauses = parse(text, names)
    return [row for row in rows if matches(row, clauses)]
