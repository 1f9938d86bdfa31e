"""Reads ConfigSpace's JSON files (what ``ConfigurationSpace.to_json`` writes) into a space.

``emews space import --from configspace FILE`` prints the result in emews' JSON space format;
docs/src/spaces.md says what it reads (a categorical's ``weights``, which change how
ConfigSpace samples and not the space, are dropped). Conditions and forbidden clauses keep
ConfigSpace's logic, which is that of :mod:`emews._conditions`. Nothing of ConfigSpace is
imported: the file is turned into emews' JSON form and read by
:meth:`~emews._space.Space.from_ga_json`, which checks it as any space file.
"""

from . import _conditions as conditions
from ._errors import ConfigError
from ._space import Space
from ._validation import parse_json, read_text


def read(path):
    """The :class:`~emews._space.Space` of the ConfigSpace JSON file at ``path``."""
    return space(parse_json(read_text(path, "the ConfigSpace file"), path), str(path))


def space(data, where):
    """The space of parsed ConfigSpace JSON ``data``; ``where`` names the file in errors."""
    if not isinstance(data, dict) or not isinstance(data.get("hyperparameters"), list):
        raise ConfigError(where, "must be ConfigSpace's JSON: an object with a list of "
                          "hyperparameters", type(data).__name__)
    entries = {}
    for i, entry in enumerate(data["hyperparameters"]):
        param = _hyperparameter(entry, f"{where}: hyperparameters[{i}]")
        entries[param["name"]] = param
    for i, entry in enumerate(_list(data, "conditions", where)):
        at = f"{where}: conditions[{i}]"
        child = _field(entry, "child", at)
        if child not in entries:
            raise ConfigError(f"{at}.child", "must name a hyperparameter", child)
        if "condition" in entries[child]:
            raise ConfigError(f"{at}.child", "must have one condition (ConfigSpace joins "
                              "several with AND or OR)", child)
        entries[child]["condition"] = _condition(entry, at).to_json()
    forbidden = [_forbidden(entry, f"{where}: forbiddens[{i}]").to_json()
                 for i, entry in enumerate(_list(data, "forbiddens", where))]
    return Space.from_ga_json({"parameters": list(entries.values()), "forbidden": forbidden},
                              where)


def _list(data, key, where):
    value = data.get(key) or []
    if not isinstance(value, list):
        raise ConfigError(f"{where}: {key}", "must be a JSON list", value)
    return value


def _field(entry, key, where):
    if not isinstance(entry, dict) or key not in entry:
        raise ConfigError(where, f"must be a JSON object with {key!r}", entry)
    return entry[key]


def _hyperparameter(entry, where):
    kind, name = _field(entry, "type", where), _field(entry, "name", where)
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{where}.name", "must be a non-empty string", name)
    where = f"{where} ({name})"
    if kind in ("uniform_float", "uniform_int"):
        if entry.get("q") is not None:
            raise ConfigError(f"{where}.q", "quantized ranges are not supported (ConfigSpace "
                              "1.0 dropped them)", entry["q"])
        return {"name": name, "type": "int" if kind == "uniform_int" else "float",
                "lower": _field(entry, "lower", where), "upper": _field(entry, "upper", where),
                "log": bool(entry.get("log", False))}
    if kind == "categorical":
        return {"name": name, "type": "categorical", "values": _field(entry, "choices", where)}
    if kind == "ordinal":
        return {"name": name, "type": "ordered", "values": _field(entry, "sequence", where)}
    if kind == "constant":
        return {"name": name, "type": "constant", "value": _field(entry, "value", where)}
    raise ConfigError(f"{where}.type", "must be one of uniform_float, uniform_int, "
                      "categorical, ordinal, constant", kind)


CONDITIONS = ("EQ", "NEQ", "IN", "GT", "LT", "AND", "OR")


def _condition(entry, where):
    kind = _field(entry, "type", where)
    if kind in ("AND", "OR"):
        terms = tuple(_condition(term, f"{where}.conditions[{i}]")
                      for i, term in enumerate(_field(entry, "conditions", where)))
        return conditions.AllOf(terms) if kind == "AND" else conditions.AnyOf(terms)
    if kind not in CONDITIONS:
        raise ConfigError(f"{where}.type", f"must be one of {', '.join(CONDITIONS)}", kind)
    parent = _field(entry, "parent", where)
    if kind == "IN":
        return conditions.In(parent, tuple(_field(entry, "values", where)))
    value = _field(entry, "value", where)
    if kind in ("GT", "LT"):
        return conditions.Compare(parent, ">" if kind == "GT" else "<", value)
    test = conditions.In(parent, (value,))
    return test if kind == "EQ" else conditions.Not(test)


FORBIDDENS = ("EQUALS", "IN", "AND")


def _forbidden(entry, where):
    kind = _field(entry, "type", where)
    if kind == "AND":
        return conditions.AllOf(tuple(_forbidden(clause, f"{where}.clauses[{i}]")
                                      for i, clause in enumerate(_field(entry, "clauses",
                                                                        where))))
    if kind not in FORBIDDENS:
        raise ConfigError(f"{where}.type", f"must be one of {', '.join(FORBIDDENS)}", kind)
    name = _field(entry, "name", where)
    if kind == "IN":
        return conditions.In(name, tuple(_field(entry, "values", where)))
    return conditions.In(name, (_field(entry, "value", where),))
