"""Every built-in algorithm passes the conformance suite of :mod:`emews.testing`."""

from pathlib import Path

import pytest

from emews.testing import Conformance

SWEEP_FILE = str(Path(__file__).parent / "data" / "sweep_points.jsonl")


class TestRandomSearch(Conformance):
    algorithm = "random"
    learns = False


class TestSweep(Conformance):
    algorithm = "sweep"
    options = {"file": SWEEP_FILE}
    finite_options = {}
    learns = False
    seeded = False


TABLE = {"x": [-1.5, 0.0, 1.5], "lr": [1e-3, 1e-2], "units": [4, 32], "n": [0, 5],
         "act": ["relu", "tanh"], "batch": [16, 128], "bn": [True, False], "epochs": [3]}


class TestSweepTable(Conformance):
    algorithm = "sweep"
    options = {"params": TABLE, "strategy": "random", "n": 20}
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


class TestNSGA2(Conformance):
    algorithm = "nsga2"
    options = {"population_size": 6}
    finite_options = {"generations": 3}


class TestNSGA3(Conformance):
    algorithm = "nsga3"
    options = {"population_size": 6}
    finite_options = {"generations": 3}


class TestOptunaNSGA2(Conformance):
    algorithm = "optuna"
    options = {"sampler": "nsga2", "population_size": 4}
    learns = False   # Optuna's NSGA samplers breed from their own generations only


class TestOptunaNSGA3(Conformance):
    algorithm = "optuna"
    options = {"sampler": "nsga3", "population_size": 4}
    learns = False   # Optuna's NSGA samplers breed from their own generations only
