"""A sweep: a fixed list of points, each evaluated once, in order.

The points come from one of three sources:

* ``file``: a JSON-lines file of parameter sets (Supervisor's "UPF"). Each non-blank line is a
  JSON object: one point, in file order. Lines starting with ``#`` are comments.
* ``params``: a table of values per parameter (``{lr = [0.1, 0.01], units = [16, 32]}``),
  expanded by SmartSim's permutation strategies (``strategy``):

  - ``all_perm`` (the default): the Cartesian product, the last parameter varying fastest;
  - ``step``: the lists zipped (the first values together, then the second...); every list
    must have the same length;
  - ``random``: ``n`` distinct combinations of the product drawn with the study's seed, in the
    order drawn.

* neither: the grid of the search space, whose parameters must each have a finite list of values
  (categorical, ordered, logical or constant), in ``all_perm`` order (the space's last parameter
  varying fastest; a logical one takes ``true`` then ``false``, as ParamHelpers lists it).

When a search space is given, every point must belong to it. On a conditional space
(:mod:`emews._conditions`) the ``params`` table and the grid give only valid combinations: each
point holds only the parameters active in it, and combinations that differ only in inactive
values are one point (the first); ``random`` draws ``n`` of those. A ``file``'s points must
already hold only their active parameters.
"""

import itertools
import json
import math
from pathlib import Path

from emews.plugin import (Algorithm, Categorical, ConfigError, Constant, Logical, check_choice,
                          check_number, check_text, pack_state, point_key, unpack_state)

STRATEGIES = ("all_perm", "step", "random")


class Sweep(Algorithm):
    """Propose the points of ``file``, of the ``params`` table or of the space's grid in order;
    done when all were proposed.

    Its state (JSON) is the position in the list and the points told so far. It sweeps any
    number of ``objectives`` alike (it never looks at values).
    """

    multiobjective = True

    needs_space = False
    finite = True
    ready_share = 1.0   # the list does not depend on results: one point ready per slot is free

    def __init__(self, space, seed=None, file=None, params=None, strategy="all_perm", n=None,
                 objectives=1):
        super().__init__(space, seed)
        self.objectives = objectives
        if file is not None and params is not None:
            raise ConfigError("[algorithm]", "the sweep takes at most one of file (a JSON-lines "
                              "file of points) and params (a table of values per parameter)",
                              ["file", "params"])
        if file is None and params is None:
            params = space_grid(space)
        if file is not None:
            for name, value in (("strategy", strategy != "all_perm"), ("n", n is not None)):
                if value:
                    raise ConfigError(f"[algorithm].{name}", "applies to params, not to file",
                                      strategy if name == "strategy" else n)
            self.points = read_upf(Path(check_text("file", file)), space)
        else:
            self.points = permutations(params, strategy, n, self.rng, space)
            for number, point in enumerate(self.points):
                if space is not None and not space.contains(point):
                    raise ConfigError("[algorithm].params", f"point {number} must be a point of "
                                      f"the search space ({', '.join(space.names)})", point)
        self.position = 0
        self.evaluated = set()

    def ask(self, n):
        points = []
        while len(points) < n and self.position < len(self.points):
            point = self.points[self.position]
            self.position += 1
            if point_key(point) not in self.evaluated:
                points.append(point)
        return points

    def tell(self, points, values):
        """Remember told points (a resumed run's history), so they are not proposed again."""
        self.evaluated.update(point_key(p) for p in points)

    def done(self):
        return self.position >= len(self.points)

    def state(self):
        return pack_state(self, {"position": self.position, "evaluated": sorted(self.evaluated)})

    def restore(self, state):
        data = unpack_state(self, state)
        self.position, self.evaluated = data["position"], set(data["evaluated"])


def permutations(params, strategy="all_perm", n=None, rng=None, space=None):
    """The points of a table of values per parameter, by a SmartSim permutation strategy
    (``all_perm``, ``step`` or ``random``, which draws ``n`` with ``rng``).

    On a conditional ``space`` (:mod:`emews._conditions`) only the valid combinations count:
    each point holds its active parameters only, and of points that differ only in inactive
    values the first is kept (``random`` draws ``n`` of these distinct points).
    """
    check_choice("strategy", strategy, STRATEGIES)
    if not isinstance(params, dict) or not params:
        raise ConfigError("[algorithm].params", "must be a table of lists of values, one list "
                          "per parameter", params)
    for name, values in params.items():
        if not isinstance(values, list) or not values:
            raise ConfigError(f"[algorithm].params.{name}", "must be a non-empty list of values",
                              values)
    names, lists = list(params), list(params.values())
    if (strategy == "random") != (n is not None):
        raise ConfigError("[algorithm].n", "is required by strategy = \"random\" (the number of "
                          "points to draw) and applies to no other strategy", n)
    if strategy == "step":
        lengths = sorted({len(v) for v in lists})
        if len(lengths) > 1:
            raise ConfigError("[algorithm].params", "strategy = \"step\" needs lists of the same "
                              "length", {k: len(v) for k, v in params.items()})
        return valid([dict(zip(names, values)) for values in zip(*lists)], space)
    if strategy == "all_perm" or (space is not None and space.conditional):
        points = valid([dict(zip(names, values)) for values in itertools.product(*lists)],
                       space)
        if strategy == "all_perm":
            return points
        check_number("n", n, minimum=1, maximum=len(points), integer=True)
        return [points[index] for index in rng.choice(len(points), size=n, replace=False)]
    total = math.prod(len(v) for v in lists)
    check_number("n", n, minimum=1, maximum=total, integer=True)
    return [dict(zip(names, _combination(lists, index)))
            for index in rng.choice(total, size=n, replace=False)]


def valid(points, space):
    """``points`` with only the values active in each on ``space`` (when it is given and
    conditional), the first of those that are then equal kept, in order."""
    if space is None or not space.conditional:
        return points
    kept = {}
    for point in points:
        point = space.restrict(point)
        kept.setdefault(point_key(point), point)
    return list(kept.values())


def _combination(lists, index):
    """The ``index``-th combination of the Cartesian product of ``lists`` (last one fastest)."""
    values = []
    for values_of in reversed(lists):
        index, position = divmod(int(index), len(values_of))
        values.append(values_of[position])
    return values[::-1]


def read_upf(path, space=None):
    """Read a JSON-lines file of points, checking each against ``space`` when given."""
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise ConfigError(str(path), "the file of points must be readable", exc.strerror) from None
    points = []
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            point = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}:{number}", f"must be a JSON object ({exc.msg})",
                              line) from None
        if not isinstance(point, dict):
            raise ConfigError(f"{path}:{number}", "must be a JSON object", point)
        if space is not None and not space.contains(point):
            raise ConfigError(f"{path}:{number}", f"must be a point of the search space "
                              f"({', '.join(space.names)})", point)
        points.append(point)
    if not points:
        raise ConfigError(str(path), "the file of points must hold at least one point", 0)
    return points


def space_grid(space):
    """The ``params`` table of a space's grid: each parameter's list of values (a logical one's
    ``[True, False]``, a constant's ``[value]``); a parameter with no finite list is refused."""
    if space is None:
        raise ConfigError("[algorithm]", "the sweep needs file (a JSON-lines file of points), "
                          "params (a table of values per parameter) or a search space of "
                          "categorical, ordered, logical or constant parameters to sweep", None,
                          show_value=False)
    grid = {}
    for param in space.params:
        if isinstance(param, Categorical):
            grid[param.name] = list(param.values)
        elif isinstance(param, Logical):
            grid[param.name] = [True, False]
        elif isinstance(param, Constant):
            grid[param.name] = [param.value]
        else:
            raise ConfigError(f"{space.where}: {param.name}", "the sweep of a space needs each "
                              "parameter to have a finite list of values (categorical, ordered, "
                              f"logical or constant); a {param.kind} range has none: give "
                              "[algorithm].params its values to sweep", param.kind)
    return grid
