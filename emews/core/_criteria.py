"""What a study optimizes: its objectives, their directions and its constraints.

``[study] objectives`` (or ``MODEL_RETURN``), ``directions`` and ``constraints`` (each ``NAME
OP NUMBER``, parsed, never evaluated) make the :class:`Criteria` (docs/src/multiobjective.md);
the master judges each outcome (:meth:`Criteria.judge`) and tells the algorithm its
:meth:`Criteria.search_value`.
"""

import functools
import math
import re
from dataclasses import dataclass

from .._errors import ConfigError
from .._status import Status
from ._algorithm import Objectives
from ._pareto import minimized
from ._vector import finite_or_none, json_numbers, nan_for_none

OBJECTIVE = "val_loss"   # the value a study optimizes by default ([study] model_return)
DIRECTIONS = ("minimize", "maximize")
CONSTRAINT = re.compile(r"\s*([A-Za-z_][\w.\-]*)\s*(<=|>=|<|>)\s*(\S+)\s*")
CONSTRAINT_RULE = ("must be NAME OP NUMBER with OP one of <=, >=, <, > (e.g. "
                   "'params <= 2e6')")


@dataclass(frozen=True)
class Constraint:
    """``name op bound``: a reported metric (or objective) and its bound."""

    name: str
    op: str
    bound: float

    @classmethod
    def parse(cls, text, where):
        """The constraint ``text`` states; a ConfigError naming ``where`` otherwise."""
        match = CONSTRAINT.fullmatch(text) if isinstance(text, str) else None
        if match is None:
            raise ConfigError(where, CONSTRAINT_RULE, text)
        name, op, number = match.groups()
        try:
            bound = float(number)
        except ValueError:
            bound = math.nan
        if not math.isfinite(bound):
            raise ConfigError(where, f"{CONSTRAINT_RULE}; its bound must be a finite number",
                              text)
        return cls(name, op, bound)

    def violation(self, value):
        """How far ``value`` is past the bound (0.0 when the constraint holds; a strict bound
        met exactly: the smallest positive float)."""
        past = value - self.bound if self.op in ("<=", "<") else self.bound - value
        if past == 0.0 and self.op in ("<", ">"):
            return math.ulp(0.0)
        return max(past, 0.0)

    def __str__(self):
        return f"{self.name} {self.op} {self.bound:g}"


def objective_names(model_return):
    """The objectives ``MODEL_RETURN`` names: one, or a comma-separated list of them."""
    return [name.strip() for name in str(model_return).split(",")]


@dataclass(frozen=True)
class Criteria:
    """A study's objectives (``names``, in order), their ``directions``, its ``constraints``."""

    names: tuple
    directions: tuple
    constraints: tuple = ()

    @classmethod
    def from_study(cls, study, where=lambda key: f"[study].{key}"):
        """The criteria of a resolved :class:`~emews._config.Study`; a ConfigError naming
        ``where(key)``, the rule and the value for a bad one."""
        names = study.objectives or objective_names(study.model_return)
        if len(set(names)) < len(names) or not all(n.strip() and "," not in n for n in names):
            raise ConfigError(where("objectives"), "must name each objective once (names "
                              "without commas)", names)
        directions = ["minimize"] * len(names) if study.directions is None else study.directions
        if len(directions) != len(names):
            raise ConfigError(where("directions"), f"must give one direction per objective "
                              f"({len(names)}: {', '.join(names)})", directions)
        for direction in directions:
            if direction not in DIRECTIONS:
                raise ConfigError(where("directions"), f"must each be one of "
                                  f"{', '.join(DIRECTIONS)}", direction)
        constraints = tuple(Constraint.parse(text, where("constraints"))
                            for text in study.constraints or ())
        return cls(tuple(names), tuple(directions), constraints)

    @functools.cached_property
    def vector(self):
        """True for a study of several objectives, or with constraints."""
        return len(self.names) > 1 or bool(self.constraints)

    def judge(self, outcome):
        """A ``done`` outcome of a vector study, checked: it fails unless its objectives (and
        the metrics its constraints name) are all there as numbers; ``feasible`` is then set
        when there are constraints. Any other outcome as it is, without feasibility."""
        outcome.feasible = None
        if not self.vector or outcome.status != Status.DONE:
            return outcome
        if len(self.names) == 1 and not outcome.objectives:
            outcome.objectives = [outcome.value]
        if len(outcome.objectives) != len(self.names):
            return _failed(outcome, f"the run reported {len(outcome.objectives)} objective "
                           f"values; the study has {len(self.names)}: {', '.join(self.names)}")
        for name, value in zip(self.names, outcome.objectives):
            if not math.isfinite(value):
                return _failed(outcome, f"objective {name!r} is {value} (not a finite number)")
        if self.constraints:
            known = self.known(outcome.objectives, outcome.metrics)
            missing = [c for c in self.constraints if not math.isfinite(known.get(c.name,
                                                                                  math.nan))]
            if missing:
                return _failed(outcome, f"constraint '{missing[0]}': the run reported no "
                               f"number for {missing[0].name!r}")
            outcome.feasible = all(c.violation(known[c.name]) <= 0.0 for c in self.constraints)
        return outcome

    def known(self, objectives, metrics):
        """The numbers a run reported, by name (what a constraint names): its ``metrics`` and
        its ``objectives`` (which win over a metric of the same name)."""
        return {**metrics, **dict(zip(self.names, objectives))}

    def search_value(self, objectives, metrics):
        """What the algorithm is told of a judged ``done`` run's raw ``objectives`` and
        ``metrics``: an :class:`~emews.core._algorithm.Objectives`."""
        known = self.known(objectives, metrics)
        return Objectives(minimized(objectives, self.directions),
                          [c.violation(known[c.name]) for c in self.constraints])


def as_json(value):
    """A told value as JSON: ``None`` for NaN, a number, or ``{"values": [...],
    "violations": [...]}`` for an :class:`~emews.core._algorithm.Objectives`
    (:func:`from_json` reads it back)."""
    if isinstance(value, Objectives):
        return json_numbers({"values": value.values, "violations": value.violations})
    return finite_or_none(value)


def from_json(value):
    """The told value that :func:`as_json` wrote."""
    if isinstance(value, dict):
        return Objectives(nan_for_none(value["values"]),
                          nan_for_none(value.get("violations", ())))
    return math.nan if value is None else float(value)


def _failed(outcome, reason):
    outcome.status, outcome.error, outcome.value = Status.FAILED, reason, math.nan
    return outcome
