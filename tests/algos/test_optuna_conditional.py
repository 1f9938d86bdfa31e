"""Optuna on a conditional space: define-by-run trials that hold only the active parameters."""

import numpy as np
import pytest

from emews.algorithms.optuna_search import OptunaSearch
from emews._space import Space
from emews.testing import CONDITIONAL, branches

SPACE = Space.from_ga_json(CONDITIONAL)


def free_names(point):
    """The names of ``point``'s free parameters (those Optuna samples)."""
    return {p.name for p in SPACE.free if p.name in point}


@pytest.mark.parametrize("options", [{"sampler": "tpe", "n_startup_trials": 4},
                                     {"sampler": "tpe", "n_startup_trials": 4, "group": True},
                                     {"sampler": "random"}, {"sampler": "nsga2"}])
def test_trials_hold_only_the_active_parameters_and_their_distributions(options):
    search = OptunaSearch(SPACE, seed=3, **options)
    history = SPACE.sample(np.random.default_rng(0), 6)   # told, never asked: added as trials
    search.tell(history, [branches(p) for p in history])
    asked = []
    for _ in range(6):
        points = search.ask(3)
        search.tell(points, [branches(p) for p in points])
        asked += points
    assert all(SPACE.contains(p) for p in asked)
    trials = search.study.get_trials()
    assert len(trials) == 24
    for point, trial in zip(history + asked, trials):
        assert set(trial.params) == set(trial.distributions) == free_names(point), trial
    assert {p["optimizer"] for p in asked} == {"sgd", "adam"}
    assert any("width3" in p for p in asked) and any("nesterov" in p for p in asked)


@pytest.mark.parametrize("told", [4, 12])   # CMA-ES's x0, then its source_trials
def test_cmaes_warm_starts_from_a_conditional_history(told):
    history = SPACE.sample(np.random.default_rng(1), told)
    search = OptunaSearch(SPACE, seed=2, sampler="cmaes")
    search.tell(history, [branches(p) for p in history])
    points = search.ask(4)
    assert len(points) == 4 and all(SPACE.contains(p) for p in points)
