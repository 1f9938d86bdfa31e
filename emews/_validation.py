"""One validation layer: the rules a value must follow, for every input emews reads.

The study configuration (:mod:`emews._config`), the site files (:mod:`emews.launch._site`), the
algorithm options (:mod:`emews.core._algorithm`) and the messages between the study service and
its pools (:data:`MESSAGES`) are checked with the rules here. A rule returns the value it accepts,
or raises :class:`Invalid`, whose text is the rule ("must be an integer >= 1"); :func:`check`
makes that a one-line ConfigError "where: rule, got value". A rule inside a :class:`Table`,
:class:`Fields`, :class:`Items` or :class:`Each` adds where it is (``.key``, ``[2]``) to the
name the error gives. Rules take values as TOML and JSON give them; ``from_text`` reads one from
an environment variable first (:func:`env_flag` for booleans). Standard library only, and cheap
to import (0.4 ms): ``emews --help`` loads the site rules; pydantic v2 would cost about 70 ms
there, and its messages would need rewriting rule by rule to keep the one-line "where: rule, got
value" form.
"""
import itertools
import json
import math
import os
import reprlib
from pathlib import Path

from ._errors import ConfigError

MISSING = object()   # a key or field that is not there


class Invalid(ValueError):
    """A value that breaks a rule: ``rule`` says what must hold, ``value`` is what came
    (:data:`MISSING`: nothing), ``field`` where it is in the checked value (``.key``, ``[2]``)."""

    def __init__(self, rule, value, field=""):
        self.rule, self.value, self.field = rule, value, field
        got = "" if value is MISSING else f", got {reprlib.repr(value)}"
        super().__init__(f"{field.lstrip('.') + ': ' if field else ''}{rule}{got}")

    def inside(self, step):
        """The same problem, seen from one level up (``step`` is ``.key`` or ``[i]``)."""
        return Invalid(self.rule, self.value, step + self.field)


def check(where, rule, value):
    """``rule(value)``; a broken rule is a ConfigError naming ``where``, the rule and value."""
    try:
        return rule(value)
    except Invalid as invalid:
        raise ConfigError(where + invalid.field, invalid.rule, invalid.value,
                          show_value=invalid.value is not MISSING) from None


def problem(rule, value):
    """What is wrong with ``value`` under ``rule`` (the rule's text), or ``None``."""
    try:
        rule(value)
    except Invalid as invalid:
        return invalid.rule
    return None


def read_toml(path, what):
    """The table in the TOML file ``path``; else a one-line ConfigError naming it (``what``)."""
    import tomllib

    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(str(path), f"{what} must be readable", exc.strerror,
                          show_value=False) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(path), f"must be valid TOML ({exc})", None,
                          show_value=False) from None


def read_text(path, what):
    """The text of the UTF-8 file ``path``; else a one-line ConfigError naming it and why."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(str(path), f"{what} must be readable",
                          getattr(exc, "strerror", None) or str(exc)) from None


def parse_json(text, path):
    """The JSON ``text`` of the file ``path``; else a ConfigError naming the file and line."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}", f"must be valid JSON ({exc.msg})",
                          show_value=False) from None


def check_keys(table, rules, where, unknown, required=()):
    """Every value of the dict ``table`` checked by its rule in ``rules``; return the checked
    values. ``where(key)`` names a key in errors, ``unknown`` is the rule that a key without a
    rule breaks, ``required`` the keys that must be there."""
    for key in required:
        if key not in table:
            check(where(key), Required(rules[key]), MISSING)
    for key, value in table.items():
        if key not in rules:
            raise ConfigError(where(key), unknown, value)
    return {key: check(where(key), rules[key], value) for key, value in table.items()}


class Rule:
    """A rule: ``rule(value)`` returns the value it accepts or raises :class:`Invalid`;
    ``from_text`` reads a value from an environment variable's text."""

    def __call__(self, value):
        raise NotImplementedError

    def from_text(self, text):
        """The value ``text`` stands for (this rule then checks it)."""
        return text


def _at(step, rule, value):
    """``rule(value)`` for a part of a value; an error names the part (``step``)."""
    try:
        return rule(value)
    except Invalid as invalid:
        raise invalid.inside(step) from None


class Required(Rule):
    """A value that ``rule`` accepts, which must be there (not :data:`MISSING`)."""

    def __init__(self, rule):
        self.rule = rule

    def __call__(self, value):
        if value is MISSING:
            wanted = problem(self.rule, None)   # what the rule asks for, if it refuses None
            raise Invalid(f"is required ({wanted})" if wanted else "is required", MISSING)
        return self.rule(value)


def _each(rules, items):
    """Each item checked by its rule (``rules`` and ``items`` in pairs); an error names the
    item's index."""
    try:
        return [rule(item) for rule, item in zip(rules, items)]
    except Invalid as invalid:   # which item: the first that its rule refuses
        index = next(i for i, (rule, item) in enumerate(zip(rules, items)) if problem(rule, item))
        raise invalid.inside(f"[{index}]") from None


FLOAT_LIMIT = 2 ** 1024   # an int this large (or larger) does not fit in a float


class Number(Rule):
    """A number (``integer``: an int; never a bool, never an int too large for a float),
    within the bounds: ``minimum`` and ``maximum`` inclusive, ``above`` exclusive; ``finite``
    refuses NaN and infinities.

    The rule reads as one text with its bounds ("must be an integer >= 1"); with ``words``
    (the configuration and site files) the kind comes first ("must be an integer"), then the
    bound in words ("must be positive", "must not be negative", "must be at least -1").
    """

    def __init__(self, integer=False, minimum=None, maximum=None, above=None, finite=True,
                 words=False):
        self.integer, self.minimum, self.maximum, self.above = integer, minimum, maximum, above
        self.finite, self.words = finite, words
        self.bounded = (minimum, maximum, above) != (None, None, None)

    def __call__(self, value):
        if isinstance(value, int) and not isinstance(value, bool):
            usable = -FLOAT_LIMIT < value < FLOAT_LIMIT
        else:
            usable = not self.integer and isinstance(value, float) and \
                (not self.finite or math.isfinite(value))
        if not usable:
            raise Invalid(self._kind() + ("" if self.words else self._bounds()), value)
        if self.bounded and ((self.minimum is not None and value < self.minimum) or
                             (self.above is not None and value <= self.above) or
                             (self.maximum is not None and value > self.maximum)):
            raise Invalid(self._bound_words() if self.words else self._kind() + self._bounds(),
                          value)
        return value

    def _kind(self):
        return "must be an integer" if self.integer else "must be a number"

    def _bounds(self):
        return "".join(f" {sign} {bound}" for sign, bound in (
            (">=", self.minimum), (">", self.above), ("<=", self.maximum)) if bound is not None)

    def _bound_words(self):
        if self.minimum is not None and self.maximum is not None and self.above is None:
            return f"must be from {self.minimum:g} to {self.maximum:g}"
        if self.minimum is not None and self.above is None and self.maximum is None:
            return {1: "must be positive", 0: "must not be negative"}.get(
                self.minimum, f"must be at least {self.minimum:g}")
        return f"must be{self._bounds()}"

    def from_text(self, text):
        """The number ``text`` holds (else the text, which this rule then refuses)."""
        try:
            return int(text) if self.integer else float(text)
        except ValueError:
            return text


FLAG_TEXTS = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}


class Flag(Rule):
    """``true`` or ``false``."""

    def __call__(self, value):
        if not isinstance(value, bool):
            raise Invalid("must be true or false", value)
        return value

    def from_text(self, text):
        """``1``, ``true``, ``yes`` / ``0``, ``false``, ``no`` (any case): a bool; else the text."""
        return FLAG_TEXTS.get(text.strip().lower(), text) if isinstance(text, str) else text


FLAG = Flag()


def env_flag(name, default, environ=None):
    """The boolean environment variable ``name`` (see :meth:`Flag.from_text`); ``default``
    when it is unset or empty; anything else is a ConfigError naming the variable."""
    text = (os.environ if environ is None else environ).get(name, "")
    return default if not text.strip() else check(name, FLAG, FLAG.from_text(text))


class Choice(Rule):
    """One of ``choices`` (a tuple or a list)."""

    def __init__(self, choices):
        self.choices = choices

    def __call__(self, value):
        if value not in self.choices:
            raise Invalid(f"must be one of {list(self.choices)}", value)
        return value


def _one_line(text):
    return not any(c in text for c in "\n\r\0")


class Text(Rule):
    """A string: ``nonempty``; matching ``pattern`` (else ``rule`` says what must hold);
    ``one_line`` (no newline, carriage return or NUL)."""

    def __init__(self, pattern=None, rule=None, one_line=False, nonempty=False):
        self.pattern, self.rule, self.one_line, self.nonempty = pattern, rule, one_line, nonempty

    def __call__(self, value):
        if not isinstance(value, str) or (self.nonempty and not value):
            raise Invalid(f"must be a {'non-empty ' if self.nonempty else ''}string", value)
        if self.pattern is not None and not self.pattern.match(value):
            raise Invalid(self.rule, value)
        if self.one_line and not _one_line(value):
            raise Invalid("must be one line", value)
        return value


class Strings(Rule):
    """A list of strings (``one_line`` each), each matching ``pattern`` (else ``rule``)."""

    def __init__(self, pattern=None, rule=None, one_line=False):
        self.pattern, self.rule, self.one_line = pattern, rule, one_line

    def __call__(self, value):
        if not isinstance(value, list) or not all(
                isinstance(v, str) and (not self.one_line or _one_line(v)) for v in value):
            raise Invalid(f"must be a list of {'one-line ' if self.one_line else ''}strings",
                          value)
        if self.pattern is not None and not all(self.pattern.match(v) for v in value):
            raise Invalid(self.rule, value)
        return value


class Mapping(Rule):
    """A table of one-line strings without ``"`` (with ``lists``, or lists of them) under
    keys that match ``key_pattern`` (else ``key_rule``)."""

    def __init__(self, key_pattern, key_rule, lists=False):
        self.key_pattern, self.key_rule, self.lists = key_pattern, key_rule, lists

    def __call__(self, value):
        if not isinstance(value, dict):
            raise Invalid("must be a table", value)
        for key, item in value.items():
            if not self.key_pattern.match(key):
                raise Invalid(f"{self.key_rule} (key {key!r})", value)
            items = item if self.lists and isinstance(item, list) else [item]
            if not all(isinstance(v, str) and _one_line(v) and '"' not in v for v in items):
                what = "a string or a list of strings" if self.lists else "a string"
                raise Invalid(f"must map each key to {what} of one line without '\"' "
                              f"(key {key!r})", value)
        return value


class Maybe(Rule):
    """``None``, or a value that ``rule`` accepts."""

    def __init__(self, rule):
        self.rule = rule

    def __call__(self, value):
        return None if value is None else self.rule(value)

    def from_text(self, text):
        """What ``rule`` reads from ``text``."""
        return self.rule.from_text(text)


class Table(Rule):
    """A table (dict) whose keys all have a rule in ``rules``; ``name`` names it in the rule
    an unknown key breaks. An error names the key: ``.key`` after the table's name."""

    def __init__(self, rules, name):
        self.rules, self.name = rules, name

    def __call__(self, value):
        keys = ", ".join(self.rules)
        if not isinstance(value, dict):
            raise Invalid(f"must be a table with keys among {keys}", value)
        for key, item in value.items():
            if key not in self.rules:
                raise Invalid(f"is not a key of {self.name} (keys: {keys})", item, f".{key}")
        return {key: _at(f".{key}", self.rules[key], item) for key, item in value.items()}


class Items(Rule):
    """A list of exactly one item per rule of ``rules``, each accepted by its rule;
    ``shape`` says what it must look like."""

    def __init__(self, rules, shape):
        self.rules, self.shape = rules, shape

    def __call__(self, value):
        if not isinstance(value, list) or len(value) != len(self.rules):
            raise Invalid(f"must be {self.shape}", value)
        return _each(self.rules, value)


class Fields(Rule):
    """A JSON object (dict) with each field of ``rules``, accepted by its rule; other fields
    are kept as they are (a newer peer may send more)."""

    def __init__(self, rules):
        self.rules = {name: Required(rule) for name, rule in rules.items()}

    def __call__(self, value):
        if not isinstance(value, dict):
            raise Invalid("must be a JSON object", value)
        return {**value, **{name: _at(f".{name}", rule, value.get(name, MISSING))
                            for name, rule in self.rules.items()}}


class Each(Rule):
    """A list whose every item ``rule`` accepts (no ``rule``: any list)."""

    def __init__(self, rule=None):
        self.rule = rule

    def __call__(self, value):
        if not isinstance(value, list):
            raise Invalid("must be a list", value)
        return value if self.rule is None else _each(itertools.repeat(self.rule), value)


# --- the messages between the study service and its pools (emews.service._protocol) ---------

class Anything(Rule):
    """Any value, as it came: a part of a message that its own decoder checks (an outcome:
    :meth:`emews.evaluate.Outcome.from_wire`)."""

    def __call__(self, value):
        return value


COUNT, SECONDS = Number(integer=True), Number()
TASK = Items((COUNT, Text(), Text(), COUNT), "[id, params, run_id, attempt]")
RESULT = Items((COUNT, COUNT, COUNT, Anything()), "[id, attempt, rank, outcome]")
REPORT = Items((COUNT, COUNT, COUNT, Anything()), "[id, attempt, rank, report]")
VERDICT = Items((COUNT, Flag()), "[id, stop]")


MESSAGES = {
    "hello": Fields({"pool": Text(), "workers": COUNT, "host": Text(), "pid": COUNT,
                     "received": COUNT}),
    "want": Fields({"free": COUNT, "received": COUNT}),
    "results": Fields({"results": Each(),       # each entry: RESULT, one at a time
                       "free": COUNT, "received": COUNT}),
    "reports": Fields({"reports": Each(REPORT)}),   # each report: Report.from_wire's
    "verdicts": Fields({"verdicts": Each(VERDICT)}),
    "heartbeat": Fields({}),
    "bye": Fields({}),
    "tasks": Fields({"tasks": Each(TASK)}),
    "ack": Fields({"ids": Each(COUNT)}),
    "stop": Fields({"reason": Text()}),
    "cancel": Fields({}),
    "who": Fields({}),
    "study": Fields({"config": Fields({}), "expdir": Text(), "lease": SECONDS}),
}


def result(entry):
    """One entry of a ``results`` message, checked by :data:`RESULT` (an entry that breaks it
    is dropped alone: the others in its message still count); raises :class:`Invalid`. Its
    outcome is left to :meth:`emews.evaluate.Outcome.from_wire`, the one outcome decoder."""
    return _at("result", RESULT, entry)


def message(data):
    """``data`` (a decoded JSON message) when it is an object with a known ``op`` whose fields
    follow :data:`MESSAGES`; else :class:`Invalid`, whose text is one line
    (``hello.workers: must be an integer, got 'x'``)."""
    if not isinstance(data, dict) or data.get("op") not in MESSAGES:
        raise Invalid(f"must be a JSON object whose op is one of {sorted(MESSAGES)}", data)
    try:
        return MESSAGES[data["op"]](data)
    except Invalid as invalid:
        raise invalid.inside(data["op"]) from None
