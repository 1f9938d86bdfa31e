"""Random search: independent uniform (log-uniform on log scales) draws from the space."""

from emews.plugin import Algorithm, pack_state, unpack_state


class RandomSearch(Algorithm):
    """Draw every point independently; results do not change what comes next.

    Its state is the random generator's (JSON). It searches any number of ``objectives``
    alike (it never looks at results).
    """

    multiobjective = True

    # Results never change the next points, so keeping one ready per slot costs no quality
    # and hides the ME's round trip (commit, two thread wake-ups) from every freed worker.
    ready_share = 1.0

    def __init__(self, space, seed=None, objectives=1):
        super().__init__(space, seed)
        self.objectives = objectives

    def ask(self, n):
        return self.space.sample(self.rng, n)

    def state(self):
        return pack_state(self, {"rng": self.rng.bit_generator.state})

    def restore(self, state):
        self.rng.bit_generator.state = unpack_state(self, state)["rng"]
