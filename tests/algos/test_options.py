"""Every option of every built-in algorithm is checked: an unknown one, or a bad value, is a
one-line ConfigError naming ``[algorithm].NAME``, the rule and the value, raised when the
algorithm is built, never a TypeError or ValueError from the constructor or the library."""

import math
import re
from pathlib import Path

import pytest

from emews.core._algorithm import load
from emews.algorithms.mbo import MBO
from emews.algorithms.optuna_search import OptunaSearch
from emews._errors import ConfigError
from emews._space import Space
from emews.testing import SPACE

MIXED = Space.from_ga_json(SPACE)
SWEEP = {"file": str(Path(__file__).parent / "data" / "sweep_points.jsonl")}
START = {"x": 0.5, "lr": 0.01, "units": 8, "n": 2, "batch": 64}   # CMA-ES's x0: numeric ones


def build(algorithm, options):
    return load(algorithm)(MIXED, seed=1, **options)


@pytest.mark.parametrize("algorithm, options, name, rule", [
    ("random", {"step": 0.1}, "step", "is not an option of RandomSearch (it takes none)"),
    ("sweep", SWEEP | {"shuffle": True}, "shuffle",
     "is not an option of Sweep (options: file, n, params, strategy)"),
    ("ga", {"populaton_size": 8}, "populaton_size", "is not an option of GA (options: "
                                                    "crossover_indpb, crossover_prob, "),
    ("ga_async", {"mu": 3}, "mu", "is not an option of SteadyStateGA (options: "),
    ("gp", {"acq": "EI"}, "acq", "is not an option of Optimizer (options: acq_func, "),
    ("gp", {"space_constraint": "x > 0"}, "space_constraint", "is not an option of Optimizer"),
    ("optuna", {"popsize": 4}, "popsize", "is not an option of TPESampler (options: "
                                          "n_startup_trials, "),
    ("optuna", {"sampler": "cmaes", "independent_sampler": "random"}, "independent_sampler",
     "is not an option of CmaEsSampler"),
    ("optuna", {"sampler": "cmaes", "restart_strategy": "ipop"}, "restart_strategy",
     "is not an option of CmaEsSampler"),
    ("optuna", {"sampler": "random", "n_startup_trials": 3}, "n_startup_trials",
     "is not an option of RandomSampler (it takes none)"),
    ("optuna", {"sampler": "qmc", "gamma": 0.1}, "gamma", "is not an option of QMCSampler"),
    ("mbo", {"trees": 10}, "trees", "is not an option of MBO (options: cb_lambda, "),
])
def test_an_unknown_option_is_named_with_the_options_there_are(algorithm, options, name, rule):
    with pytest.raises(ConfigError, match=rf"^\[algorithm\]\.{name}: {re.escape(rule)}"):
        build(algorithm, options)


@pytest.mark.parametrize("algorithm, options, name, rule, value", [
    ("sweep", {"file": 3}, "file", "must be a non-empty string", 3),
    ("ga", {"population_size": "20"}, "population_size", "must be an integer >= 2", "20"),
    ("ga", {"population_file": 5}, "population_file", "must be a non-empty string", 5),
    ("ga", {"offspring_proportion": math.nan}, "offspring_proportion",
     "must be a number >= 0 <= 10", math.nan),
    ("ga_async", {"mutation_indpb": 1.5}, "mutation_indpb", "must be a number >= 0 <= 1", 1.5),
    ("ga_async", {"tournament_size": 2.0}, "tournament_size", "must be an integer >= 1", 2.0),
    ("gp", {"n_initial_points": "10"}, "n_initial_points", "must be an integer >= 1", "10"),
    ("gp", {"acq_func": "EIps"}, "acq_func",
     "must be one of ['gp_hedge', 'EI', 'PI', 'LCB', 'MES']", "EIps"),
    ("gp", {"base_estimator": "RF", "acq_optimizer": "lbfgs"}, "acq_optimizer",
     '"lbfgs" needs base_estimator = "GP"', "lbfgs"),
    ("gp", {"initial_point_generator": "sobel"}, "initial_point_generator", "must be one of",
     "sobel"),
    ("gp", {"acq_func_kwargs": {"kappa": -1}}, "acq_func_kwargs.kappa", "must be a number >= 0",
     -1),
    ("gp", {"acq_optimizer_kwargs": {"points": 5}}, "acq_optimizer_kwargs.points",
     "is not a key of acq_optimizer_kwargs (keys: n_points, n_restarts_optimizer, n_jobs)", 5),
    ("gp", {"acq_optimizer_kwargs": 500}, "acq_optimizer_kwargs", "must be a table with keys "
                                                                  "among n_points, ", 500),
    ("gp", {"n_jobs": 0}, "n_jobs", "must be an integer >= 1, or -1 (every core)", 0),
    ("gp", {"avoid_duplicates": "no"}, "avoid_duplicates", "must be true or false", "no"),
    ("gp", {"model_queue_size": 0}, "model_queue_size", "must be an integer >= 1", 0),
    ("optuna", {"n_startup_trials": -1}, "n_startup_trials", "must be an integer >= 0", -1),
    ("optuna", {"multivariate": "yes"}, "multivariate", "must be true or false", "yes"),
    ("optuna", {"group": True, "multivariate": False}, "group",
     "group = true needs multivariate = true", True),
    ("optuna", {"sampler": "tpe", "prior_weight": 0}, "prior_weight", "must be a number > 0", 0),
    ("optuna", {"sampler": "cmaes", "sigma0": 0}, "sigma0", "must be a number > 0", 0),
    ("optuna", {"sampler": "cmaes", "popsize": 2}, "popsize", "must be an integer >= 4", 2),
    ("optuna", {"sampler": "cmaes", "lr_adapt": True, "with_margin": True}, "with_margin",
     "at most one of lr_adapt, use_separable_cma, with_margin may be true",
     ["lr_adapt", "with_margin"]),
    ("optuna", {"sampler": "cmaes", "x0": {"x": 0.0}}, "x0",
     "must be a table with a value for each of x, lr, units, n, batch", {"x": 0.0}),
    ("optuna", {"sampler": "cmaes", "x0": START | {"batch": 17}}, "x0.batch",
     "must be a value of the parameter in the search space", 17),
    ("optuna", {"sampler": "qmc", "qmc_type": "lattice"}, "qmc_type",
     "must be one of ['sobol', 'halton']", "lattice"),
    ("optuna", {"sampler": "hyperband"}, "sampler", "must be one of", "hyperband"),
    ("mbo", {"max_features": 0}, "max_features", "must be a number > 0 <= 1", 0),
    ("mbo", {"cb_lambda": math.inf}, "cb_lambda", "must be a number >= 0", math.inf),
    ("mbo", {"focus_points": 10.5}, "focus_points", "must be an integer >= 1", 10.5),
    ("mbo", {"infill": "aei"}, "infill", "must be one of ['cb', 'ei']", "aei"),
])
def test_a_bad_value_is_named_with_the_rule_and_the_value(algorithm, options, name, rule,
                                                          value):
    with pytest.raises(ConfigError) as error:
        build(algorithm, options)
    message = str(error.value)
    assert message.startswith(f"[algorithm].{name}: {rule}") and "\n" not in message
    assert message.endswith(f", got {value!r}")


def test_cmaes_starts_at_x0_given_in_the_spaces_own_values():
    search = OptunaSearch(MIXED, seed=0, sampler="cmaes", x0=START)
    assert search.study.sampler._x0 == START | {"batch": 2}   # ordered: Optuna sees positions


def test_max_features_is_a_share_even_when_written_as_an_integer():
    assert MBO(MIXED, max_features=1).forest["max_features"] == 1.0
    assert isinstance(MBO(MIXED, max_features=1).forest["max_features"], float)
