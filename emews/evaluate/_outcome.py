"""What became of one evaluation, what a model reported on its way, and the one form in
which each travels.

::

    Objective.evaluate --> Outcome --to_wire()--> [0.5, started, finished]
                                                     |  in-process, MPI (pickled), zmq, PostgreSQL
    the master's store <-- Outcome <--from_wire()----+  (json_in), Swift/T: all in this form

An outcome's wire form is a JSON-able list of its fields in :attr:`Outcome.ORDER`: ``value``,
``started`` and ``finished``, then the others up to the last one off its default (a plain
``done`` outcome, one per task, is ``[value, started, finished]``, which both ends handle
without going field by field), NaN and the infinities as ``null``. A transport's own fields
(``attempt``, ``rank``) travel beside it; an older reader skips the fields a newer writer adds
at the end.

A model's report between its steps (``emews.report(value, step, **metrics)``) travels as a
:class:`Report` by its names (``{"step": 3, "value": 0.7, "time": t}``): a model may write one
itself, on a line of its output. :meth:`Wire.from_wire` checks every field and ignores names it
does not know. A message that breaks a rule raises :class:`BadOutcome`, naming the field, the
rule and the value; :meth:`Outcome.received` turns it into a failed outcome instead, so that a
malformed message fails its evaluation and never the master.

A new field is one line in its class: ``on_wire(KIND, default=...)`` says how it is written and
checked (:data:`NUMBER`, :data:`TEXT`, :data:`STATUS`, :data:`METRICS`, :data:`STEP`,
:data:`NUMBERS` or :data:`MAYBE_FLAG`); a new field of :class:`Outcome` goes last in its
``ORDER`` too.
"""

import dataclasses
import functools
import math
from typing import Callable, NamedTuple

from ..core._vector import finite_or_none
from .._status import POOL_OUTCOMES, Status


class BadOutcome(ValueError):
    """An outcome's wire form that breaks a rule of :class:`Outcome`'s fields."""


class Kind(NamedTuple):
    """How one field travels: ``encode`` makes it JSON-able; ``decode`` checks and rebuilds
    it, raising ``TypeError`` or ``ValueError`` when the value breaks ``rule``."""

    rule: str
    encode: Callable
    decode: Callable


def _number_out(value):
    return finite_or_none(float(value))


def _number_in(value):
    if type(value) is float:
        return value
    if value is None:
        return math.nan
    if type(value) is int:
        return float(value)
    raise TypeError(value)


def _text_in(value):
    if value is None or type(value) is str:
        return value
    raise TypeError(value)


def _status_in(value):
    if value in POOL_OUTCOMES:
        return value
    raise ValueError(value)


def _step_in(value):
    if type(value) is int and value >= 0:
        return value
    raise ValueError(value)


def _metrics_out(metrics):
    return {str(name): _number_out(value) for name, value in metrics.items()}


def _metrics_in(value):
    if type(value) is not dict or not all(type(name) is str for name in value):
        raise TypeError(value)
    return {name: _number_in(number) for name, number in value.items()}


def _numbers_out(values):
    return [_number_out(value) for value in values]


def _numbers_in(value):
    if type(value) is not list:
        raise TypeError(value)
    return [_number_in(number) for number in value]


def _maybe_flag_in(value):
    if value is None or type(value) is bool:
        return value
    raise TypeError(value)


NUMBER = Kind("a number, or null for NaN", _number_out, _number_in)
TEXT = Kind("text or null", lambda text: text, _text_in)
STATUS = Kind(f"one of {', '.join(sorted(POOL_OUTCOMES))}", str, _status_in)
METRICS = Kind("an object of names to numbers (or null)", _metrics_out, _metrics_in)
STEP = Kind("a whole number, 0 or more", int, _step_in)
NUMBERS = Kind("a list of numbers (null for NaN)", _numbers_out, _numbers_in)
MAYBE_FLAG = Kind("true, false or null", lambda flag: flag, _maybe_flag_in)


def on_wire(kind, **default):
    """A field of a :class:`Wire` message that travels as ``kind`` (``default=`` or
    ``default_factory=``, as for :func:`dataclasses.field`)."""
    return dataclasses.field(metadata={"wire": kind}, **default)


class Wire:
    """A message that travels in its wire form (by its names): a dataclass whose fields are
    each made with :func:`on_wire` (see the module docstring). ``what`` names it in errors."""

    what = "message"

    def to_wire(self):
        """This message as a JSON-able dict, fields at their default left out (see the module
        docstring)."""
        return {name: kind.encode(value) for name, kind, default in _fields(type(self))
                if (value := getattr(self, name)) != default}

    @classmethod
    def from_wire(cls, data):
        """The message that :meth:`to_wire` made ``data`` from; raises :class:`BadOutcome`
        when ``data`` is not a dict, lacks a field without a default or holds a field that
        breaks its rule."""
        kinds = _kinds(cls)
        try:
            return cls(**{name: kinds[name].decode(value) for name, value in data.items()
                          if name in kinds})
        except (TypeError, ValueError, ArithmeticError, AttributeError):
            raise BadOutcome(_fault(cls, data, data if isinstance(data, dict) else None,
                                    "a JSON object")) from None


@dataclasses.dataclass
class Outcome(Wire):
    """What became of one evaluation: its ``value`` (NaN when there is none), its ``status``
    (``done``, ``failed``, ``cancelled`` or ``pruned`` from an evaluator; the master also makes
    ``interrupted`` and ``duplicate`` ones), the reason of a failure (``error``), the end of the
    model's output (``log_tail``), when it ``started`` and ``finished`` (seconds since the
    epoch) and the model's final ``metrics`` (name -> number). A ``pruned`` outcome holds the
    last reported value, and says at which step in ``error``.

    In a study of several objectives (``[study] objectives``), ``objectives`` holds each one's
    raw value in that order (as the model reported it, whatever its direction) and ``value``
    is the first; ``feasible`` is whether the point meets the study's ``constraints`` (``None``
    without constraints), which the master decides before it stores the outcome."""

    what = "outcome"
    value: float = on_wire(NUMBER)
    status: str = on_wire(STATUS, default=Status.DONE)
    error: str | None = on_wire(TEXT, default=None)
    log_tail: str | None = on_wire(TEXT, default=None)
    started: float = on_wire(NUMBER, default=0.0)
    finished: float = on_wire(NUMBER, default=0.0)
    metrics: dict = on_wire(METRICS, default_factory=dict)
    objectives: list = on_wire(NUMBERS, default_factory=list)
    feasible: bool | None = on_wire(MAYBE_FLAG, default=None)

    ORDER = ("value", "started", "finished", "status", "error", "log_tail", "metrics",
             "objectives", "feasible")   # on the wire: the fields a done outcome sets first
    ALWAYS = 3                           # the first three are always on the wire

    def to_wire(self):
        """This outcome as a JSON-able list of its fields in :attr:`ORDER` (see the module
        docstring)."""
        value, started, finished = self.value, self.started, self.finished
        if (self.status, self.error, self.log_tail, self.metrics, self.objectives,
                self.feasible) == _REST_AT_DEFAULT and type(value) is type(started) \
                is type(finished) is float and math.isfinite(value + started + finished):
            return [value, started, finished]   # a plain done one
        fields, values = _ordered(type(self)), self.__dict__
        end = len(fields)
        while end > self.ALWAYS and values[fields[end - 1][0]] == fields[end - 1][2]:
            end -= 1
        return [kind.encode(values[name]) for name, kind, _ in fields[:end]]

    @classmethod
    def from_wire(cls, data):
        """The outcome that :meth:`to_wire` made ``data`` from; raises :class:`BadOutcome`
        when ``data`` is not a list, is empty or holds a field that breaks its rule."""
        if type(data) is list and len(data) == 3 and \
                type(data[0]) is type(data[1]) is type(data[2]) is float:   # a plain done one
            return cls(data[0], Status.DONE, None, None, data[1], data[2], {}, [])
        fields = _ordered(cls)
        try:
            if type(data) is not list and type(data) is not tuple:
                raise TypeError(data)
            return cls(**{name: kind.decode(value)
                          for (name, kind, _), value in zip(fields, data)})
        except (TypeError, ValueError, ArithmeticError, AttributeError):
            named = (dict(zip([name for name, _, _ in fields], data))
                     if isinstance(data, (list, tuple)) else None)
            raise BadOutcome(_fault(cls, data, named, "a JSON list")) from None

    @classmethod
    def received(cls, data):
        """:meth:`from_wire`, with a malformed ``data`` made a failed outcome that says why."""
        try:
            return cls.from_wire(data)
        except BadOutcome as exc:
            return cls(math.nan, Status.FAILED, f"a malformed result came back: {exc}")


@dataclasses.dataclass
class Report(Wire):
    """One report of a model between its steps (``emews.report``): the ``step`` reached, the
    ``value`` to minimize there (NaN allowed), other ``metrics`` and when (``time``, seconds
    since the epoch)."""

    what = "report"
    step: int = on_wire(STEP)
    value: float = on_wire(NUMBER)
    metrics: dict = on_wire(METRICS, default_factory=dict)
    time: float = on_wire(NUMBER, default=0.0)


REQUIRED = object()   # the default of a field that has none: equal to no value, always written


def _default(field):
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return REQUIRED


@functools.cache
def _fields(cls):
    """``(name, kind, default)`` of each field of the :class:`Wire` class ``cls``."""
    return tuple((f.name, f.metadata["wire"], _default(f)) for f in dataclasses.fields(cls))


@functools.cache
def _ordered(cls):
    """``(name, kind, default)`` of each field of ``cls``, in its ``ORDER`` on the wire."""
    return tuple(sorted(_fields(cls), key=lambda field: cls.ORDER.index(field[0])))


@functools.cache
def _kinds(cls):
    return {name: kind for name, kind, _ in _fields(cls)}


def _fault(cls, data, named, form):
    """What breaks the rules in ``data``, which ``cls.from_wire`` refused: ``named`` is it as a
    dict of its fields (``None`` when ``data`` is not of the ``form`` it must have)."""
    what, article = cls.what, "an" if cls.what[0] in "aeiou" else "a"
    if named is None:
        return f"{article} {what} must be {form}, got {data!r:.80}"
    for name, _, default in _fields(cls):
        if default is REQUIRED and name not in named:
            return f"{article} {what} must have a {name!r}, got {data!r:.80}"
    for name, value in named.items():
        kind = _kinds(cls).get(name)
        try:
            if kind is not None:
                kind.decode(value)
        except (TypeError, ValueError, ArithmeticError):
            return f"{what} field {name!r} must be {kind.rule}, got {value!r:.80}"
    return f"{article} {what} that breaks the rules: {data!r:.80}"


# the defaults of the fields after value, started and finished, in ORDER
_REST_AT_DEFAULT = tuple(default for _, _, default in _ordered(Outcome)[Outcome.ALWAYS:])
