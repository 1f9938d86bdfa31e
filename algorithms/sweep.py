"""A sweep over a JSON-lines file of parameter sets (Supervisor's "UPF").

Each non-blank line is a JSON object: one point, evaluated once, in file order. Lines starting
with ``#`` are comments. When a search space is given, every point must belong to it.
"""

import json
from pathlib import Path

from emews.core.algorithm import Algorithm, check_text, pack_state, point_key, unpack_state
from emews.errors import ConfigError


class Sweep(Algorithm):
    """Propose the points of ``file`` in order; done when all were proposed.

    Its state (JSON) is the position in the file and the points told so far.
    """

    needs_space = False
    finite = True

    def __init__(self, space, seed=None, file=None):
        super().__init__(space, seed)
        if file is None:
            raise ConfigError("[algorithm].file", "the sweep needs a JSON-lines file of points",
                              file)
        self.points = read_upf(Path(check_text("file", file)), space)
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
