from emews import Algorithm


class BestPerturbation(Algorithm):
    """Gaussian steps of ``step`` (in unit coordinates) around the best point so far."""
    def __init__(self, space, seed=None, step=0.1):
        super().__init__(space, seed)
        self.step, self.best, self.rank = step, None, (True, float("inf"))

    def ask(self, n):
        if self.best is None:
            return self.space.sample(self.rng, n)
        unit = self.space.to_unit(self.best)
        return [self.space.from_unit(self.rng.normal(unit, self.step)) for _ in range(n)]

    def tell(self, points, values):
        for point, value in zip(points, values):  # finished runs rank first, then pruned
            rank = (value != value, getattr(value, "last", value))  # ones (NaN) by their curve
            if rank < self.rank:  # a failed run (NaN, no curve) never compares smaller
                self.best, self.rank = point, rank
