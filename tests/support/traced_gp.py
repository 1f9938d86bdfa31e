"""``gp`` that writes down each ``ask``: for tests that check when the driver asks it."""

import json

from emews.algorithms.skopt_search import SkoptSearch


class TracedGP(SkoptSearch):
    """``gp``; each ``ask`` appends to the file ``trace`` (JSON lines) how many points it gave
    (``asked``), how many it had given before (``before``) and how many results it had been
    told by then (``told``)."""

    def __init__(self, space, seed=None, trace=None, **options):
        super().__init__(space, seed, **options)
        self.trace, self.proposed, self.told = trace, 0, 0

    def ask(self, n):
        points = super().ask(n)
        with open(self.trace, "a") as handle:
            handle.write(json.dumps({"asked": len(points), "before": self.proposed,
                                     "told": self.told}) + "\n")
        self.proposed += len(points)
        return points

    def tell(self, points, values):
        super().tell(points, values)
        self.told += len(points)
