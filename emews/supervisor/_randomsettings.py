"""The search space of Supervisor's random workflow: its ``data/settings.json``.

``{"parameters": {"epochs": [4, 8], "learning_rate": [0.00001, 0.1]}, "samples": {"num":
[120]}}``: each value is drawn between its two bounds, with ``randint`` for an ``int`` pair and
``uniform`` for any other. :func:`entries` returns those ranges as GA JSON entries.
"""

from .._errors import ConfigError


def is_random_settings(data):
    """True when ``data`` (parsed JSON) has the random workflow's settings' shape."""
    return isinstance(data, dict) and "parameters" in data and "samples" in data


def entries(data, where="settings.json"):
    """The GA JSON entries (``int`` or ``float`` ranges) of the ``parameters`` of ``data``."""
    table = data.get("parameters")
    if not isinstance(table, dict) or not table:
        raise ConfigError(f"{where}: parameters", "must be an object of [low, high] pairs, one "
                          "per parameter", table)
    found = []
    for name, bounds in table.items():
        entry = range_entry(name, bounds) if isinstance(bounds, list) else None
        if entry is None:
            raise ConfigError(f"{where}: parameters.{name}", "must be a [low, high] pair of "
                              "numbers, low <= high", bounds)
        found.append(entry)
    return found


def range_entry(name, pair):
    """The GA JSON entry of parameter ``name`` from ``pair``'s lower and upper bound: ``int``
    when both are integers, else ``float``; ``None`` unless ``pair`` holds two numbers, the
    lower first (Supervisor's random workflow and async-search both draw between them)."""
    if len(pair) != 2 or not all(isinstance(b, (int, float)) and not isinstance(b, bool)
                                 for b in pair) or pair[0] > pair[1]:
        return None
    kind = "int" if all(isinstance(b, int) for b in pair) else "float"
    return {"name": name, "type": kind, "lower": pair[0], "upper": pair[1]}
