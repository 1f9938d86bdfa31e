"""Search spaces: a :class:`Param` class per type of docs/src/spaces.md, and the readers of the
file formats it lists (:meth:`Space.from_file`).

A point is a plain dict ``{name: native value}`` (what a model receives as JSON) that maps to
coordinates in [0, 1] (:meth:`Space.to_unit`).
"""

import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import _conditions as conditions
from .supervisor import _asproblem as asproblem, _randomsettings as randomsettings, _rparamset as rparamset
from ._errors import ConfigError
from ._validation import parse_json, read_text


def _logical(value):
    """A boolean from JSON true/false or the strings "true"/"false" (any case)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ValueError(f"not a logical value: {value!r}")


def _number(value, convert):
    """``convert`` (int or float) of a number or numeric string, as Supervisor's ga_utils reads
    GA JSON; ``ValueError`` for anything else, for what is not finite and for a float that is
    not whole where an int is needed (``int()`` would truncate it)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"not a number: {value!r}")
    if convert is int and isinstance(value, float) and not value.is_integer():
        raise ValueError(f"not a whole number: {value!r}")
    try:
        number = convert(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise ValueError(f"not a finite number: {value!r}")
    return number


ELEMENT_TYPES = {"string": str, "str": str, "int": lambda v: _number(v, int),
                 "float": lambda v: _number(v, float), "logical": _logical, "bool": _logical}


@dataclass(frozen=True)
class Param:
    """One dimension of a search space; with a ``condition`` (:mod:`emews._conditions`) it
    exists in a point only when the condition holds on the point's other values."""

    name: str
    condition: conditions.Condition | None = field(default=None, kw_only=True, repr=False)
    kind = "param"

    def sample(self, rng):
        """Draw one value uniformly (log-uniformly for log scales) with ``rng``."""
        raise NotImplementedError

    def contains(self, value):
        """True when ``value`` is a legal value of this dimension."""
        raise NotImplementedError

    def to_unit(self, value):
        """Map a value to [0, 1] (categorical values map to their index spread over [0, 1])."""
        raise NotImplementedError

    def from_unit(self, u):
        """Inverse of :meth:`to_unit`, rounding to the nearest legal value."""
        raise NotImplementedError

    def parse(self, text):
        """The legal value written as ``text`` (a CSV cell); ``ValueError`` when there is none."""
        raise NotImplementedError


@dataclass(frozen=True)
class Float(Param):
    """A real number in ``[lower, upper]``."""

    lower: float = 0.0
    upper: float = 1.0
    sigma: float | None = None
    log: bool = False
    kind = "float"
    margin = 0.0   # how far each end's bin reaches past it (an Int's values fill equal bins)

    def _scale(self):
        lo, hi = self.lower - self.margin, self.upper + self.margin
        return (math.log(lo), math.log(hi)) if self.log else (float(lo), float(hi))

    def sample(self, rng):
        return self.from_unit(rng.random())

    def contains(self, value):
        return (isinstance(value, (int, float)) and not isinstance(value, bool)
                and self.lower <= value <= self.upper)

    def to_unit(self, value):
        lo, hi = self._scale()
        x = math.log(value) if self.log else float(value)
        return 0.0 if hi == lo else (x - lo) / (hi - lo)

    def from_unit(self, u):
        lo, hi = self._scale()
        x = lo + min(max(float(u), 0.0), 1.0) * (hi - lo)
        value = math.exp(x) if self.log else x
        return min(max(value, self.lower), self.upper)

    def parse(self, text):
        return self._checked(float(text), text)

    def _checked(self, value, text):
        if not self.contains(value):
            raise ValueError(f"{text!r} is outside [{self.lower}, {self.upper}]")
        return value


@dataclass(frozen=True)
class Int(Float):
    """An integer in ``[lower, upper]``, both ends included."""

    kind = "int"
    margin = 0.5

    def contains(self, value):
        return (isinstance(value, int) and not isinstance(value, bool)
                and self.lower <= value <= self.upper)

    def from_unit(self, u):
        return int(round(super().from_unit(u)))

    def parse(self, text):
        value = float(text)
        if not value.is_integer():
            raise ValueError(f"{text!r} is not a whole number")
        return self._checked(int(value), text)


@dataclass(frozen=True)
class Categorical(Param):
    """One of ``values``, with no order among them."""

    values: tuple = ()
    kind = "categorical"

    def sample(self, rng):
        return self.values[int(rng.integers(len(self.values)))]

    def contains(self, value):
        return any(value == v and type(value) is type(v) for v in self.values)

    def index(self, value):
        """Position of ``value`` in ``values``."""
        return next(i for i, v in enumerate(self.values) if value == v and type(value) is type(v))

    def to_unit(self, value):
        return (self.index(value) + 0.5) / len(self.values)

    def from_unit(self, u):
        n = len(self.values)
        return self.values[min(max(int(float(u) * n), 0), n - 1)]

    def parse(self, text):
        try:
            decoded = json.loads(text.lower() if text.lower() in ("true", "false") else text)
        except ValueError:
            decoded = text
        for value in self.values:
            if str(value) == text or conditions.same_value(value, decoded):
                return value
        raise ValueError(f"{text!r} is not one of {list(self.values)}")


@dataclass(frozen=True)
class Ordered(Categorical):
    """One of ``values``, which are ordered; ``sigma`` is a mutation step in positions."""

    sigma: float | None = None
    kind = "ordered"


@dataclass(frozen=True)
class TransformedInt(Ordered):
    """An mlrMBO integer parameter with a trafo: ``x`` in ``[lower, upper]``, value ``trafo(x)``;
    ``values[i]`` is ``trafo(lower + i)``, so searching positions is searching ``x``."""

    trafo: rparamset.Trafo | None = None
    lower: int = 0
    upper: int = 0


@dataclass(frozen=True)
class TransformedFloat(Float):
    """An mlrMBO numeric parameter whose trafo is linear or exponential in ``x``; ``lower`` and
    ``upper`` are the transformed bounds, on a linear scale for a linear trafo and a log one for
    an exponential one, which makes uniform draws of values uniform draws of ``x``."""

    trafo: rparamset.Trafo | None = None


@dataclass(frozen=True)
class Logical(Param):
    """``True`` or ``False``."""

    kind = "logical"

    def sample(self, rng):
        return bool(rng.integers(2))

    def contains(self, value):
        return isinstance(value, bool)

    def to_unit(self, value):
        return 1.0 if value else 0.0

    def from_unit(self, u):
        return float(u) >= 0.5

    def parse(self, text):
        return _logical(text)


@dataclass(frozen=True)
class Constant(Param):
    """A fixed value, passed to every run."""

    value: object = None
    kind = "constant"

    def sample(self, rng):
        return self.value

    def contains(self, value):
        return value == self.value

    def to_unit(self, value):
        return 0.5

    def from_unit(self, u):
        return self.value

    def parse(self, text):
        return self.value


@dataclass(frozen=True)
class Space:
    """An ordered collection of parameters; ``where`` (the file) names it in errors.

    Points hold only the active parameters (see :mod:`emews._conditions`): :meth:`sample`,
    :meth:`from_unit` and :meth:`point` leave inactive ones out, and :meth:`contains` refuses a
    point that sets one or lacks an active one. ``forbidden`` holds conditions (ConfigSpace's
    forbidden clauses): a point where one holds is outside the space, and :meth:`sample` draws
    again.
    """

    params: tuple = field(default_factory=tuple)
    where: str = field(default="search space", compare=False, repr=False)
    forbidden: tuple = field(default=(), kw_only=True)

    def __post_init__(self):
        names = [p.name for p in self.params]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ConfigError(self.where, "parameter names must be unique", duplicates)
        for param in self.params:
            if param.condition is not None:
                self._check_condition(param.condition, f"{self.where}: {param.name}.condition",
                                      param)
        for i, clause in enumerate(self.forbidden):
            self._check_condition(clause, f"{self.where}: forbidden[{i}]")
        object.__setattr__(self, "_order", self._parents_first())
        object.__setattr__(self, "_unconditional", not self.conditional)

    def _check_condition(self, condition, where, param=None):
        """Refuse a condition (of ``param``, else a forbidden clause) on what is not there."""
        by_name = {p.name: p for p in self.params}
        for leaf in conditions.leaves(condition):
            parent = by_name.get(leaf.parent)
            if parent is None:
                raise ConfigError(where, "must test parameters of the space", leaf.parent)
            if parent is param:
                raise ConfigError(where, "a parameter cannot depend on itself", leaf.parent)
            if isinstance(leaf, conditions.Compare):
                if not isinstance(parent, Float):
                    raise ConfigError(where, f"{leaf.op} compares numbers, and "
                                      f"{parent.name} is {parent.kind}", leaf.value)
                continue
            outside = [v for v in leaf.values if not parent.contains(v)]
            if outside:
                raise ConfigError(where, f"must use values that {parent.name} takes",
                                  outside[0])

    def _parents_first(self):
        """The parameters ordered so that each comes after those its condition tests."""
        order, placed, pending = [], set(), list(self.params)
        while pending:
            ready = [p for p in pending if p.condition is None
                     or p.condition.parents() <= placed]
            if not ready:
                raise ConfigError(self.where, "conditions must not form a cycle",
                                  sorted(p.name for p in pending))
            order += ready
            placed |= {p.name for p in ready}
            pending = [p for p in pending if p.name not in placed]
        return tuple(order)

    @property
    def names(self):
        """The parameter names, in order."""
        return [p.name for p in self.params]

    @property
    def free(self):
        """The parameters that are not constants."""
        return [p for p in self.params if not isinstance(p, Constant)]

    @property
    def conditional(self):
        """True when some parameter has a condition."""
        return any(p.condition is not None for p in self.params)

    def __getitem__(self, name):
        return next(p for p in self.params if p.name == name)

    def __len__(self):
        return len(self.params)

    def active(self, values):
        """The names active in a point whose values are ``values`` (which may hold inactive
        values, and may lack active ones), in the space's order."""
        if self._unconditional:
            return self.names
        present, active = {}, set()
        for param in self._order:
            if param.condition is None or param.condition.holds(present):
                active.add(param.name)
                if param.name in values:
                    present[param.name] = values[param.name]
        return [name for name in self.names if name in active]

    def restrict(self, values):
        """The point of ``values``'s active parameters (inactive values left out)."""
        return {name: values[name] for name in self.active(values) if name in values}

    def complete(self, values, draw):
        """The point of ``values`` with each active free parameter they lack given
        ``draw(param)``, parents before their children (constants filled in, inactive values
        left out): how a search fills in what a conditional point newly needs."""
        values = {p.name: p.value for p in self.params if isinstance(p, Constant)} | values
        while True:
            active = self.active(values)
            lacking = [p for p in self.free if p.name in active and p.name not in values]
            if not lacking:
                return self.restrict(values)
            values.update((p.name, draw(p)) for p in lacking)

    def sample(self, rng, n=1):
        """Draw ``n`` points uniformly at random (each parameter's value, then the active),
        drawing again where a forbidden clause holds."""
        if self._unconditional and not self.forbidden:   # every draw is a point
            return [{p.name: p.sample(rng) for p in self.params} for _ in range(n)]
        return [self._allowed_draw(rng) for _ in range(n)]

    def _allowed_draw(self, rng):
        for _ in range(MAX_DRAWS):
            point = self.restrict({p.name: p.sample(rng) for p in self.params})
            if not self.is_forbidden(point):
                return point
        raise ConfigError(f"{self.where}: forbidden", f"must leave points to draw (none of "
                          f"{MAX_DRAWS} random points was allowed)",
                          [clause.to_json() for clause in self.forbidden])

    def is_forbidden(self, point):
        """True when one of the forbidden clauses holds on ``point``."""
        return any(clause.holds(point) for clause in self.forbidden)

    def contains(self, point):
        """True when ``point`` has exactly the names active in it, each with a legal value,
        and no forbidden clause holds on it."""
        return (set(point) == set(self.active(point))
                and all(self[name].contains(value) for name, value in point.items())
                and not self.is_forbidden(point))

    def parse(self, cells):
        """The point written as CSV ``cells`` (``{name: text}``, as ``emews export --to csv``
        writes a row): an empty or missing cell is a parameter the point leaves out (inactive;
        a constant's is its value). ``ValueError`` names the column of an illegal cell, or
        says why the point is outside the space."""
        point = {}
        for param in self.params:
            text = (cells.get(param.name) or "").strip()
            if text:
                try:
                    point[param.name] = param.parse(text)
                except ValueError as exc:
                    raise ValueError(f"column {param.name}: {exc}") from None
            elif isinstance(param, Constant):
                point[param.name] = param.value
        active = self.active(point)   # an inactive constant's filled-in value goes again
        point = {name: value for name, value in point.items()
                 if name in active or not isinstance(self[name], Constant)}
        if set(point) != set(active):
            raise ValueError(f"the point must set exactly its active parameters "
                             f"({', '.join(active)}), and sets {', '.join(point)}")
        if self.is_forbidden(point):
            raise ValueError("a forbidden clause holds on the point")
        return point

    def to_unit(self, point, inactive=0.5):
        """The point's free parameters as a list of floats in [0, 1]; a parameter the point
        leaves out (inactive) gets ``inactive``."""
        return [p.to_unit(point[p.name]) if p.name in point else inactive for p in self.free]

    def from_unit(self, unit):
        """A point from free-parameter coordinates in [0, 1] (constants filled in);
        ``ValueError`` where a forbidden clause holds on it (as :meth:`point`)."""
        return self.point([p.from_unit(u) for p, u in zip(self.free, unit)])

    def point(self, values):
        """The point whose free parameters take ``values``, in order (constants filled in,
        inactive parameters left out). ``ValueError`` where a forbidden clause holds on it:
        it is outside the space, and a search must not propose it."""
        point = {p.name: p.value for p in self.params if isinstance(p, Constant)}
        point.update({p.name: value for p, value in zip(self.free, values)})
        point = self.restrict(point)
        if self.is_forbidden(point):
            raise ValueError(f"a forbidden clause holds on the point {point}")
        return point

    @classmethod
    def from_file(cls, path):
        """Read a search-space file: GA JSON (or Supervisor's random ``settings.json``), mlrMBO R
        (``.R``, or text with makeParamSet), or Supervisor's async-search ``as_problem.py``
        (``.py``, read, never run)."""
        path = Path(path)
        text = read_text(path, "the search-space file")
        if path.suffix == ".py":
            return cls.from_ga_json(asproblem.parse(text, str(path)), where=str(path))
        if path.suffix in (".R", ".r") or (path.suffix.lower() != ".json"
                                           and not text.lstrip().startswith(("[", "{"))
                                           and "makeParamSet" in text):
            return cls.from_r(text, where=str(path))
        data = parse_json(text, path)
        if randomsettings.is_random_settings(data):
            data = randomsettings.entries(data, str(path))
        return cls.from_ga_json(data, where=str(path))

    @classmethod
    def from_r(cls, text, where="search space"):
        """Build a space from mlrMBO R source holding one ``makeParamSet(...)`` expression."""
        specs = rparamset.parse(text, where)
        return cls(tuple(_r_param(spec) for spec in specs), where)

    @classmethod
    def from_ga_json(cls, data, where="search space"):
        """Build a space from Supervisor's GA parameter-set list (already parsed JSON), or from
        the object ``{"parameters": [that list], "forbidden": [conditions]}``."""
        forbidden = ()
        if isinstance(data, dict) and "parameters" in data:
            unknown = sorted(set(data) - {"parameters", "forbidden"})
            if unknown:
                raise ConfigError(where, "a space object has the keys parameters and "
                                  "forbidden", unknown[0])
            clauses = data.get("forbidden", [])
            if not isinstance(clauses, list):
                raise ConfigError(f"{where}: forbidden", "must be a JSON list of conditions",
                                  clauses)
            forbidden = tuple(conditions.parse(clause, f"{where}: forbidden[{i}]")
                              for i, clause in enumerate(clauses))
            data = data["parameters"]
        if not isinstance(data, list) or not data:
            raise ConfigError(where, "must be a non-empty JSON list of parameters",
                              type(data).__name__)
        params = [_ga_param(entry, f"{where}: parameter #{i}") for i, entry in enumerate(data)]
        params = [replace(param, condition=conditions.parse(
                      entry["condition"], f"{where}: parameter #{i} ({param.name}).condition"))
                  if "condition" in entry else param
                  for i, (param, entry) in enumerate(zip(params, data))]
        return cls(tuple(params), where, forbidden=forbidden)

    def to_json(self):
        """The JSON form that :meth:`from_ga_json` reads back into an equal space: the list of
        parameters, or ``{"parameters": [...], "forbidden": [...]}`` when some are forbidden."""
        params = [_ga_entry(param) for param in self.params]
        if not self.forbidden:
            return params
        return {"parameters": params,
                "forbidden": [clause.to_json() for clause in self.forbidden]}


MAX_DRAWS = 1000


def _ga_entry(param):
    """``param``'s entry in the JSON form (see :meth:`Space.to_json`)."""
    entry = {"name": param.name, "type": param.kind}
    if isinstance(param, Float):
        entry.update(lower=param.lower, upper=param.upper)
        if param.log:
            entry["log"] = True
    elif isinstance(param, Categorical):
        entry["values"] = list(param.values)
    elif isinstance(param, Constant):
        entry["value"] = param.value
    if getattr(param, "sigma", None) is not None:
        entry["sigma"] = param.sigma
    if param.condition is not None:
        entry["condition"] = param.condition.to_json()
    return entry


def _ga_param(entry, where):
    if not isinstance(entry, dict):
        raise ConfigError(where, "must be a JSON object", entry)
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{where}.name", "must be a non-empty string", name)
    where = f"{where} ({name})"
    kind = entry.get("type")
    makers = {"int": _numeric, "float": _numeric, "categorical": _choice, "ordered": _choice,
              "logical": lambda e, n, w: Logical(n), "constant": _constant}
    if kind not in makers:
        raise ConfigError(f"{where}.type", f"must be one of {sorted(makers)}", kind)
    return makers[kind](entry, name, where)


def _ga_number(entry, key, where, convert=float):
    """``entry[key]`` read as Supervisor's ga_utils reads it (see :func:`_number`)."""
    try:
        return _number(entry.get(key), convert)
    except ValueError:
        rule = "an integer" if convert is int else "a finite number"
        raise ConfigError(f"{where}.{key}", f"must be {rule} (or a string holding one, read "
                          f"with Python's {convert.__name__}() as Supervisor's ga_utils.py "
                          "does)", entry.get(key)) from None


def _numeric(entry, name, where):
    kind = entry["type"]
    convert = int if kind == "int" else float
    lower, upper = (_ga_number(entry, key, where, convert) for key in ("lower", "upper"))
    if not lower <= upper:
        raise ConfigError(f"{where}", "lower <= upper must hold", (lower, upper))
    log = bool(entry.get("log", entry.get("use_log_scale", False)))
    if log and lower <= 0:
        raise ConfigError(f"{where}.lower", "must be > 0 on a log scale", lower)
    return (Int if kind == "int" else Float)(name, lower, upper, _ga_sigma(entry, where), log)


def _ga_sigma(entry, where):
    if entry.get("sigma") is None:
        return None
    sigma = _ga_number(entry, "sigma", where)
    if sigma < 0:
        raise ConfigError(f"{where}.sigma", "must not be negative", entry["sigma"])
    return sigma


def _choice(entry, name, where):
    values = entry.get("values")
    if not isinstance(values, list) or not values:
        raise ConfigError(f"{where}.values", "must be a non-empty list", values)
    element_type = entry.get("element_type")
    if element_type is not None:
        if element_type not in ELEMENT_TYPES:
            raise ConfigError(f"{where}.element_type", f"must be one of {sorted(ELEMENT_TYPES)}",
                              element_type)
        convert = ELEMENT_TYPES[element_type]
        converted = []
        for i, value in enumerate(values):
            try:
                converted.append(convert(value))
            except ValueError:
                raise ConfigError(f"{where}.values[{i}]", f"must be of element_type "
                                  f"{element_type}", value) from None
        values = converted
    if entry["type"] == "ordered":
        return Ordered(name, tuple(values), _ga_sigma(entry, where))
    return Categorical(name, tuple(values))


def _constant(entry, name, where):
    if "value" not in entry:
        raise ConfigError(f"{where}.value", "a constant needs a value", None)
    return Constant(name, entry["value"])


def _r_param(spec):
    """A parameter from one parsed ``make*Param`` call (see :mod:`emews.supervisor._rparamset`),
    with its ``requires`` as its condition."""
    param = _r_values_param(spec)
    if "requires" in spec.args:
        param = replace(param, condition=spec.args["requires"][0])
    return param


def _r_values_param(spec):
    where = f"{spec.where}: {spec.name}"
    if spec.kind == "logical":
        return Logical(spec.name)
    if spec.kind == "categorical":
        return Categorical(spec.name, _r_values(spec, where))
    bounds = []
    for key in ("lower", "upper"):
        if key not in spec.args:
            raise ConfigError(f"{where}.{key}", "is required (bounds must be finite)", None)
        value, at = spec.args[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isinf(value):
            raise ConfigError(f"{at}: {spec.name}.{key}", "must be a finite number", value)
        if spec.kind == "int" and not float(value).is_integer():
            raise ConfigError(f"{at}: {spec.name}.{key}", "must be a whole number", value)
        bounds.append(value)
    lower, upper = bounds
    if not lower <= upper:
        raise ConfigError(where, "lower <= upper must hold", (lower, upper))
    if "trafo" in spec.args:
        trafo, at = spec.args["trafo"]
        where = f"{at}: {spec.name}.trafo"
        if spec.kind == "int":
            return _transformed_int(spec.name, int(lower), int(upper), trafo, where)
        return _transformed_float(spec.name, float(lower), float(upper), trafo, where)
    if spec.kind == "int":
        return Int(spec.name, int(lower), int(upper))
    return Float(spec.name, float(lower), float(upper))


MAX_TRANSFORMED_VALUES = 100_000


def _apply(trafo, x, where):
    try:
        return trafo(x)
    except ValueError as exc:
        raise ConfigError(where, f"{trafo.text} must give a finite real number for every x in "
                          f"[lower, upper]: {exc}", x) from None


def _transformed_int(name, lower, upper, trafo, where):
    if upper - lower >= MAX_TRANSFORMED_VALUES:
        raise ConfigError(where, f"an integer parameter with a trafo may span at most "
                          f"{MAX_TRANSFORMED_VALUES} values", (lower, upper))
    values = tuple(_apply(trafo, x, where) for x in range(lower, upper + 1))
    return TransformedInt(name, values, None, trafo, lower, upper)


def _transformed_float(name, lower, upper, trafo, where):
    xs = [lower + (upper - lower) * i / 16 for i in range(17)]
    ys = [_apply(trafo, x, where) for x in xs]
    rule = ("on a numeric parameter the trafo must be linear (x * k + c) or exponential "
            "(k * 2^x, 10^x, exp(x), k > 0) in x, so that the search runs on x's scale")
    if any(isinstance(y, int) for y in ys):
        raise ConfigError(where, rule + "; round() and as.integer() need makeIntegerParam",
                          trafo.text)
    if _affine(xs, ys):
        log = False
    elif all(y > 0 for y in ys) and _affine(xs, [math.log(y) for y in ys]):
        log = True
    else:
        raise ConfigError(where, rule, trafo.text)
    return TransformedFloat(name, min(ys[0], ys[-1]), max(ys[0], ys[-1]), None, log, trafo)


def _affine(xs, ys):
    """True when the points ``(xs, ys)`` lie on one straight line (to rounding error)."""
    if xs[0] == xs[-1]:
        return True
    slope = (ys[-1] - ys[0]) / (xs[-1] - xs[0])
    tolerance = 1e-9 * max(abs(y) for y in ys)
    return all(abs(y - ys[0] - slope * (x - xs[0])) <= tolerance for x, y in zip(xs, ys))


def _r_values(spec, where):
    if "values" not in spec.args:
        raise ConfigError(f"{where}.values", "is required", None)
    values, at = spec.args["values"]
    where = f"{at}: {spec.name}.values"
    values = values if isinstance(values, list) else [values]
    kinds = {bool if isinstance(v, bool) else float if isinstance(v, (int, float)) else type(v)
             for v in values}
    if not values or len(kinds) != 1:
        raise ConfigError(where, "must be a non-empty c(...) of numbers, of strings or of "
                          "logicals", values)
    if kinds == {float} and not all(float(v).is_integer() for v in values):
        values = [float(v) for v in values]
    if len(set(values)) != len(values):
        raise ConfigError(where, "must be distinct", values)
    return tuple(values)
