"""Random search: independent uniform (log-uniform on log scales) draws from the space."""

from emews.algorithm import Algorithm


class RandomSearch(Algorithm):
    """Draw every point independently; results do not change what comes next."""

    def ask(self, n):
        return self.space.sample(self.rng, n)
