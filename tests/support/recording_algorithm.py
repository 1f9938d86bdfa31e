"""Algorithms that write down what happens to them: random search plus a JSON-lines record of
every ``tell`` (point and value), or of every time it is built, for tests that check what the
driver hands an algorithm."""

import json
import math
import os

from emews.algorithms.random_search import RandomSearch


class RecordingRandom(RandomSearch):
    """Random search; each told point and value is appended to the file ``record``."""

    def __init__(self, space, seed=None, record=None):
        super().__init__(space, seed)
        self.record = record

    def tell(self, points, values):
        with open(self.record, "a") as handle:
            for point, value in zip(points, values):
                told = None if math.isnan(value) else value
                handle.write(json.dumps({"point": point, "value": told}) + "\n")


class RandomNoReady(RandomSearch):
    """Random search that keeps no points ready beyond the busy workers, as random search did
    before it kept one per slot: a study of it has a row only for each point that started."""

    ready_share = 0.0


class CountingRandom(RandomSearch):
    """Random search that appends one line to the file ``builds`` each time it is built: the
    process id and the seed it was built with."""

    def __init__(self, space, seed=None, builds=None):
        super().__init__(space, seed)
        with open(builds, "a") as handle:
            handle.write(json.dumps({"pid": os.getpid(), "seed": seed}) + "\n")


class RecordingObjectives(RandomSearch):
    """Random search of several objectives; each told point and value is appended to the file
    ``record``, a vector as ``{"values": [...], "violations": [...]}``."""

    def __init__(self, space, seed=None, record=None, objectives=1):
        super().__init__(space, seed, objectives)
        self.record = record

    def tell(self, points, values):
        with open(self.record, "a") as handle:
            for point, value in zip(points, values):
                told = getattr(value, "values", None)
                handle.write(json.dumps({"point": point, "values": told, "violations": getattr(
                    value, "violations", None), "nan": math.isnan(value)}) + "\n")
