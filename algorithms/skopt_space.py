"""The search space as scikit-optimize sees it: a dimension per parameter, and the coordinates
of values (categories as their positions). Shared by :mod:`skopt_search` and the quality
benchmark's scikit-optimize peers."""

from emews.plugin import Categorical, Logical, Ordered


def dimension(param):
    """The scikit-optimize dimension of ``param`` (categories as their positions)."""
    from skopt.space import Categorical as Choice
    from skopt.space import Integer, Real

    if isinstance(param, (Categorical, Logical)):
        count = 2 if isinstance(param, Logical) else len(param.values)
        if isinstance(param, Ordered) and count > 1:
            return Integer(0, count - 1, name=param.name)
        return Choice(list(range(count)), name=param.name)
    if param.lower == param.upper:
        return Choice([0], name=param.name)
    prior = "log-uniform" if param.log else "uniform"
    kind = Integer if param.kind == "int" else Real
    return kind(param.lower, param.upper, prior=prior, name=param.name)


def encode(param, value):
    """``value`` of ``param`` as a coordinate of :func:`dimension`."""
    if isinstance(param, Logical):
        return int(value)
    if isinstance(param, Categorical):
        return param.index(value)
    return 0 if param.lower == param.upper else value


def decode(param, x):
    """The value of ``param`` at coordinate ``x`` of :func:`dimension`."""
    if isinstance(param, Logical):
        return bool(x)
    if isinstance(param, Categorical):
        return param.values[int(x)]
    if param.lower == param.upper:
        return param.lower
    return int(x) if param.kind == "int" else float(x)
