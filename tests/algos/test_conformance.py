"""Every built-in algorithm passes the conformance suite of :mod:`emews.testing`."""

from pathlib import Path

import pytest

from emews.testing import Conformance

SWEEP_FILE = str(Path(__file__).parent / "data" / "sweep_points.jsonl")


class TestRandomSearch(Conformance):
    algorithm = "random"
    learns = False


# values of every parameter of the conditional space, inactive ones included: the sweep keeps
# the 48 valid combinations of its 128
CONDITIONAL_TABLE = {"optimizer": ["sgd", "adam"], "lr": [1e-3, 1e-2], "dropout": [0.1, 0.3],
                     "momentum": [0.3, 0.9], "nesterov": [True, False], "depth": [2, 3],
                     "width3": [16, 64], "epochs": [3]}


class TestSweep(Conformance):
    algorithm = "sweep"
    options = {"file": SWEEP_FILE}
    conditional_options = {"params": CONDITIONAL_TABLE}
    finite_options = {}
    learns = False
    seeded = False


TABLE = {"x": [-1.5, 0.0, 1.5], "lr": [1e-3, 1e-2], "units": [4, 32], "n": [0, 5],
         "act": ["relu", "tanh"], "batch": [16, 128], "bn": [True, False], "epochs": [3]}


class TestSweepTable(Conformance):
    algorithm = "sweep"
    options = {"params": TABLE, "strategy": "random", "n": 20}
    conditional_options = {"params": CONDITIONAL_TABLE, "strategy": "random", "n": 20}
    finite_options = {}
    learns = False


class TestGA(Conformance):
    algorithm = "ga"
    options = {"population_size": 6}
    finite_options = {"generations": 3}


class TestGASimple(Conformance):
    algorithm = "ga"
    options = {"population_size": 6, "strategy": "simple", "crossover_prob": 0.5}
    finite_options = {"generations": 3}


class TestSteadyStateGA(Conformance):
    algorithm = "ga_async"
    options = {"population_size": 6}
    finite_options = {"generations": 2}


@pytest.mark.slow
class TestSkoptGP(Conformance):
    algorithm = "gp"
    options = {"n_initial_points": 4, "acq_optimizer": "sampling",
               "acq_optimizer_kwargs": {"n_points": 500}}
    budget = 9


class TestOptunaTPE(Conformance):
    algorithm = "optuna"
    options = {"sampler": "tpe", "n_startup_trials": 4}


class TestOptunaCMAES(Conformance):
    algorithm = "optuna"
    options = {"sampler": "cmaes", "popsize": 4}
    learns_from_pruned = False   # consider_pruned_trials is false by default, as Optuna's
    several_objectives = False   # refused: see test_optuna_objectives.py


class TestOptunaRandom(Conformance):
    algorithm = "optuna"
    options = {"sampler": "random"}
    learns = False


@pytest.mark.slow
class TestMBO(Conformance):
    algorithm = "mbo"
    options = {"design_size": 5, "n_trees": 20, "focus_points": 200, "focus_restarts": 2}
    finite_options = {"max_budget": 9}


class TestOptunaQMC(Conformance):
    algorithm = "optuna"
    options = {"sampler": "qmc", "scramble": True}
    learns = False


class TestNSGA2(TestGA):   # the GA's options
    algorithm = "nsga2"
    learns_from_pruned = False   # a pruned run is a failure to the NSGA searches


class TestNSGA3(TestNSGA2):
    algorithm = "nsga3"


class TestSteadyStateNSGA2(TestSteadyStateGA):   # ga_async's options
    algorithm = "nsga2_async"
    learns_from_pruned = False


class TestSteadyStateNSGA3(TestSteadyStateNSGA2):
    algorithm = "nsga3_async"


class TestOptunaNSGA2(Conformance):
    algorithm = "optuna"
    options = {"sampler": "nsga2", "population_size": 4}
    learns = False   # Optuna's NSGA samplers breed from their own generations only
    # an adam point of the conditional space has 4 free parameters: Optuna's default mutation
    # (a chance of 1/4 each) leaves a child equal to a told parent too often for the check
    # that a resumed run proposes no told point again
    conditional_options = options | {"mutation_prob": 0.5}


class TestOptunaNSGA3(TestOptunaNSGA2):
    options = {"sampler": "nsga3", "population_size": 4}
    conditional_options = options | {"mutation_prob": 0.5}


class TestBOHB(Conformance):
    algorithm = "bohb"
    # a third of BOHB's proposals are random by default: too many for the suite's check of
    # the next 4 points learning from the history
    options = {"min_points_in_model": 3, "random_fraction": 0.1}


class TestPBT(Conformance):
    algorithm = "pbt"
    options = {"population_size": 4, "perturbation_interval": 2}
    finite_options = {"max_steps": 6}


@pytest.mark.slow   # scikit-learn's GP: seconds to import on a busy machine
class TestPB2(Conformance):
    algorithm = "pbt"
    options = {"population_size": 4, "perturbation_interval": 2, "explore": "pb2"}
    finite_options = {"max_steps": 6}
