"""Conditions on search-space parameters: when a parameter exists in a point.

A parameter with a condition is *active* only when its condition holds on the values of the
point's other active parameters. A point leaves inactive parameters out, so a model never
receives them. The logic has three values, as R's ``NA`` in mlrMBO's ``requires`` and as
ConfigSpace: a test on a parent that is itself inactive is unknown (``None``), the negation of
unknown is unknown, and a parameter is active only when its condition is true.

A condition's JSON form (a parameter's ``"condition"``), which :func:`parse` reads, is
docs/src/spaces.md's "Conditional parameters".
"""

import math
import operator
from abc import ABC, abstractmethod
from dataclasses import dataclass

from ._errors import ConfigError

COMPARISONS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
COMBINERS = ("$all", "$any", "$not")


def same_value(a, b):
    """True when ``a`` and ``b`` are the same parameter value (``True`` is not ``1``)."""
    return a == b and isinstance(a, bool) == isinstance(b, bool)


class Condition(ABC):
    """A test on a point's parameter values; see the module's docstring for its logic."""

    @abstractmethod
    def truth(self, point):
        """``True``, ``False``, or ``None`` when a parent it tests is absent from ``point``."""

    @abstractmethod
    def parents(self):
        """The names of the parameters it tests."""

    @abstractmethod
    def to_json(self):
        """The JSON form that :func:`parse` reads back into an equal condition."""

    def holds(self, point):
        """True when the condition is true (not false, not unknown) on ``point``."""
        return self.truth(point) is True


@dataclass(frozen=True)
class In(Condition):
    """The parent takes one of ``values``."""

    parent: str
    values: tuple

    def truth(self, point):
        if self.parent not in point:
            return None
        return any(same_value(point[self.parent], v) for v in self.values)

    def parents(self):
        return frozenset([self.parent])

    def to_json(self):
        return {self.parent: list(self.values)}


@dataclass(frozen=True)
class Compare(Condition):
    """The parent's number stands in ``op`` (``<``, ``<=``, ``>``, ``>=``) to ``value``."""

    parent: str
    op: str
    value: float

    def truth(self, point):
        if self.parent not in point:
            return None
        return COMPARISONS[self.op](point[self.parent], self.value)

    def parents(self):
        return frozenset([self.parent])

    def to_json(self):
        return {self.parent: {self.op: self.value}}


@dataclass(frozen=True)
class Not(Condition):
    """The term is false (unknown stays unknown)."""

    term: Condition

    def truth(self, point):
        value = self.term.truth(point)
        return None if value is None else not value

    def parents(self):
        return self.term.parents()

    def to_json(self):
        return {"$not": self.term.to_json()}


@dataclass(frozen=True)
class _Terms(Condition):
    """A combination of ``terms``: ``DECIDES`` (a term's value that decides it) wins, else
    unknown when a term is unknown, else the other value; ``KEY`` names it in JSON."""

    terms: tuple
    DECIDES = None
    KEY = None

    def truth(self, point):
        values = [term.truth(point) for term in self.terms]
        return self.DECIDES if self.DECIDES in values else None if None in values \
            else not self.DECIDES

    def parents(self):
        return frozenset().union(*(term.parents() for term in self.terms))

    def to_json(self):
        return {self.KEY: [term.to_json() for term in self.terms]}


class AllOf(_Terms):
    """Every term is true: false when one is false, else unknown when one is unknown."""

    DECIDES, KEY = False, "$all"


class AnyOf(_Terms):
    """Some term is true: true when one is true, else unknown when one is unknown."""

    DECIDES, KEY = True, "$any"


def every(terms):
    """``AllOf(terms)``, or the one term itself."""
    terms = tuple(terms)
    return terms[0] if len(terms) == 1 else AllOf(terms)


def parse(data, where):
    """The condition written as ``data`` (parsed JSON; see the module's docstring); ``where``
    names the field in errors (``space.json: parameter #3 (momentum).condition``)."""
    if not isinstance(data, dict) or not data:
        raise ConfigError(where, "a condition must be a non-empty JSON object of parent "
                          "parameter: [values] (or $all, $any, $not)", data)
    return every(_parse_key(key, value, f"{where}.{key}") for key, value in data.items())


def _parse_key(key, value, where):
    if key in ("$all", "$any"):
        if not isinstance(value, list) or not value:
            raise ConfigError(where, "must be a non-empty list of conditions", value)
        terms = tuple(parse(term, f"{where}[{i}]") for i, term in enumerate(value))
        return AllOf(terms) if key == "$all" else AnyOf(terms)
    if key == "$not":
        return Not(parse(value, where))
    if key.startswith("$"):
        raise ConfigError(where, f"a combining key must be one of {list(COMBINERS)}", key)
    if isinstance(value, list):
        if not value:
            raise ConfigError(where, "must list at least one value of the parent", value)
        return In(key, tuple(value))
    if isinstance(value, dict) and value:
        return every(_comparison(key, op, operand, f"{where}.{op}")
                     for op, operand in value.items())
    raise ConfigError(where, "must be a list of the parent's values or an object of "
                      "comparisons such as {\">=\": 3}", value)


def _comparison(parent, op, operand, where):
    if op == "==":
        return In(parent, (operand,))
    if op == "!=":
        return Not(In(parent, (operand,)))
    if op not in COMPARISONS:
        raise ConfigError(where, f"a comparison must be one of {['==', '!=', *COMPARISONS]}", op)
    if (isinstance(operand, bool) or not isinstance(operand, (int, float))
            or not math.isfinite(operand)):
        raise ConfigError(where, "must compare with a finite number", operand)
    return Compare(parent, op, operand)


def leaves(condition):
    """The :class:`In` and :class:`Compare` tests inside ``condition``."""
    if isinstance(condition, (In, Compare)):
        return [condition]
    terms = (condition.term,) if isinstance(condition, Not) else condition.terms
    return [leaf for term in terms for leaf in leaves(term)]
