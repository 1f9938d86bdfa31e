# Mirrors Supervisor's workflows/async-search/python/as_problem.py, written for the tests with
# the toy model's parameters (tests/support/supervisor_models/sup_baseline_keras2.py).
from collections import OrderedDict


class Problem:

    def __init__(self):
        space = OrderedDict()
        # problem specific parameters
        space["x"] = (0.0, 4.0)
        space["epochs"] = (1, 3)
        space["dense"] = ["8 4", "16 8"]
        # space['p3'] = [2 , 4, 8, 16, 32, 64, 128]
        self.space = space
        self.params = self.space.keys()
        self.starting_point = [0.1, 16]


if __name__ == "__main__":
    instance = Problem()
    print(instance.space)
