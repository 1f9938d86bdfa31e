"""Random search: independent uniform (log-uniform on log scales) draws from the space."""

from emews.core.algorithm import Algorithm, pack_state, unpack_state


class RandomSearch(Algorithm):
    """Draw every point independently; results do not change what comes next.

    Its state is the random generator's (JSON).
    """

    def ask(self, n):
        return self.space.sample(self.rng, n)

    def state(self):
        return pack_state(self, {"rng": self.rng.bit_generator.state})

    def restore(self, state):
        self.rng.bit_generator.state = unpack_state(self, state)["rng"]
