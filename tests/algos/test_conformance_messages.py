"""A plugin that breaks the contract learns from the conformance suite what it did wrong: each
failed check says what was expected and what the plugin did."""

import random

import numpy as np
import pytest

from emews.plugin import Algorithm, Conformance


class Wanders(Algorithm):
    """Proposes x outside its bounds."""

    def ask(self, n):
        return [dict(point, x=5.0) for point in self.space.sample(self.rng, n)]


class NumPyValues(Algorithm):
    """Proposes NumPy integers, which JSON cannot carry."""

    def ask(self, n):
        return [dict(point, n=np.int64(point["n"])) for point in self.space.sample(self.rng, n)]


class Unseeded(Algorithm):
    """Draws from a generator of its own, not from the study's seed."""

    def ask(self, n):
        return self.space.sample(np.random.default_rng(random.getrandbits(64)), n)


class Greedy(Algorithm):
    """Samples near its best point; a pruned run, NaN, is never the best (its curve unread)."""

    def __init__(self, space, seed=None):
        super().__init__(space, seed)
        self.best, self.best_value = None, float("inf")

    def ask(self, n):
        if self.best is None:
            return self.space.sample(self.rng, n)
        return [self.space.from_unit(self.rng.normal(self.space.to_unit(self.best), 0.05))
                for _ in range(n)]

    def tell(self, points, values):
        for point, value in zip(points, values):
            if value < self.best_value:
                self.best, self.best_value = point, value


class Echo(Algorithm):
    """Proposes the first point it was told, again and again."""

    def __init__(self, space, seed=None):
        super().__init__(space, seed)
        self.first = None

    def ask(self, n):
        return [self.first] * n if self.first else self.space.sample(self.rng, n)

    def tell(self, points, values):
        self.first = self.first or (points[0] if points else None)


class Flattened(Algorithm):
    """Proposes a value of every parameter, inactive ones too."""

    def ask(self, n):
        return [{p.name: p.sample(self.rng) for p in self.space.params} for _ in range(n)]


class Orphan(Algorithm):
    """Proposes momentum without the optimizer it depends on."""

    def ask(self, n):
        points = [dict(p, optimizer="sgd", momentum=0.2) for p in self.space.sample(self.rng, n)]
        return [{k: v for k, v in p.items() if k != "optimizer"} for p in points]


def suite(name):
    """An instance of the conformance suite for one of the classes above."""
    return type(f"Test{name}", (Conformance,), {"algorithm": f"{__name__}:{name}"})()


@pytest.mark.parametrize("name, check, message", [
    ("Wanders", "test_points_respect_bounds_and_types_in_batch_mode",
     r":Wanders proposed \{'x': 5.0, .*\}, where x = 5.0, not a value of "
     r"Float\(name='x', lower=-2.0, upper=2.0"),
    ("NumPyValues", "test_asked_after_done_answers_sensibly",
     r"NumPyValues proposed \{.*\}, where n = np.int64\(\d\), not a value of Int\(name='n'"),
    ("Unseeded", "test_deterministic_under_a_seed",
     r"two batch runs under seed 3 differ: the second's point #0 was \{.*\}, expected \{.*\} "
     r"\(draw every random number from self.rng"),
    ("Echo", "test_resumes_without_repeating_its_history",
     r"the resumed run proposed again points of the history it was told: \[\{'x': "),
    ("Greedy", "test_learns_from_the_curves_of_pruned_runs",
     r"told as pruned runs \(PrunedResult\).*ask\(4\) proposed \[.*\]: 0\.\d+ from \(0.85, "
     r"0.85\) on average, the told ones 0\.\d+; expected under 0\.\d+.* \(set "
     r"learns_from_pruned = False"),
    ("Flattened", "test_conditional_points_hold_exactly_their_active_parameters",
     r":Flattened proposed \{'optimizer': .*\}, which sets width3 = \d+, inactive there \(its "
     r"condition \{\"depth\": \{\">=\": 3\}\} does not hold\); expected the parameters "
     r"active there, \['optimizer', 'lr', "),
    ("Orphan", "test_conditional_points_hold_exactly_their_active_parameters",
     r":Orphan proposed \{.*\}, which lacks optimizer, active there; which sets momentum = "
     r"0\.2, inactive there \(its condition \{\"optimizer\": \[\"sgd\"\]\} does not hold\)"),
])
def test_a_failed_check_says_what_the_plugin_did(name, check, message):
    with pytest.raises(AssertionError, match=message):
        getattr(suite(name), check)()
