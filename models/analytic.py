"""Analytic test functions for searches and benchmarks: cheap, with known minima.

Each function takes a point (a dict, as a model does) and returns the value to minimize.
Continuous functions read the coordinates ``x1, x2, ...`` in name order, so their dimension is
the search space's; :func:`space` writes the usual domain as a GA JSON parameter list and
``<name>_space.json`` beside this module holds it for study files (``emews.models.analytic:branin``
with ``space = ".../branin_space.json"``). ``MINIMA`` holds each global minimum.

``mixed`` is Branin plus penalties on an integer, a categorical and a logical parameter, for
searches over mixed spaces.
"""

import math

import numpy as np

# Hartmann-6 constants (Surjanovic & Bingham's Virtual Library of Simulation Experiments).
HARTMANN_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])
HARTMANN_A = np.array([[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14],
                       [3, 3.5, 1.7, 10, 17, 8], [17, 8, 0.05, 10, 0.1, 14]])
HARTMANN_P = 1e-4 * np.array([[1312, 1696, 5569, 124, 8283, 5886],
                              [2329, 4135, 8307, 3736, 1004, 9991],
                              [2348, 1451, 3522, 2883, 3047, 6650],
                              [4047, 8828, 8732, 5743, 1091, 381]])
MIXED_ACTIVATIONS = {"relu": 0.0, "tanh": 1.0, "sigmoid": 2.0}

# name: (lower, upper, default dimension, global minimum)
DOMAINS = {
    "branin": ([-5.0, 0.0], [10.0, 15.0], 2, 0.39788735772973816),
    "hartmann6": (0.0, 1.0, 6, -3.3223680114155147),
    "ackley": (-32.768, 32.768, 5, 0.0),
    "rosenbrock": (-2.048, 2.048, 4, 0.0),
    "levy": (-10.0, 10.0, 4, 0.0),
    "sphere": (-5.0, 5.0, 3, 0.0),
}
MINIMA = {name: domain[3] for name, domain in DOMAINS.items()}
MINIMA["mixed"] = MINIMA["branin"]


def coordinates(params):
    """The values of ``x1, x2, ...`` as an array, in numeric order of their names."""
    names = sorted((k for k in params if k.startswith("x") and k[1:].isdigit()),
                   key=lambda k: int(k[1:]))
    return np.array([float(params[k]) for k in names])


def branin(params):
    """Branin-Hoo on [-5, 10] x [0, 15]; three global minima of 0.397887."""
    x1, x2 = coordinates(params)[:2]
    b, c, t = 5.1 / (4 * math.pi ** 2), 5 / math.pi, 1 / (8 * math.pi)
    return float((x2 - b * x1 ** 2 + c * x1 - 6) ** 2 + 10 * (1 - t) * math.cos(x1) + 10)


def hartmann6(params):
    """Hartmann 6-D on [0, 1]^6; minimum -3.32237."""
    x = coordinates(params)
    inner = np.sum(HARTMANN_A * (x - HARTMANN_P) ** 2, axis=1)
    return float(-np.sum(HARTMANN_ALPHA * np.exp(-inner)))


def ackley(params):
    """Ackley on [-32.768, 32.768]^d; minimum 0 at the origin."""
    x = coordinates(params)
    return float(-20 * math.exp(-0.2 * math.sqrt(np.mean(x ** 2)))
                 - math.exp(np.mean(np.cos(2 * math.pi * x))) + 20 + math.e)


def rosenbrock(params):
    """Rosenbrock on [-2.048, 2.048]^d; minimum 0 at (1, ..., 1)."""
    x = coordinates(params)
    return float(np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2))


def levy(params):
    """Levy on [-10, 10]^d; minimum 0 at (1, ..., 1)."""
    w = 1 + (coordinates(params) - 1) / 4
    middle = np.sum((w[:-1] - 1) ** 2 * (1 + 10 * np.sin(math.pi * w[:-1] + 1) ** 2))
    last = (w[-1] - 1) ** 2 * (1 + np.sin(2 * math.pi * w[-1]) ** 2)
    return float(np.sin(math.pi * w[0]) ** 2 + middle + last)


def sphere(params):
    """Sum of squares; minimum 0 at the origin."""
    return float(np.sum(coordinates(params) ** 2))


def mixed(params):
    """Branin(x1, x2) + (n - 2)^2 + a penalty per activation + 0.5 unless ``bn``."""
    return (branin(params) + (params["n"] - 2) ** 2 + MIXED_ACTIVATIONS[params["act"]]
            + (0.0 if params["bn"] else 0.5))


def space(name, dimension=None):
    """The usual domain of function ``name`` as a GA JSON parameter list."""
    if name == "mixed":
        return space("branin") + [
            {"name": "n", "type": "int", "lower": 0, "upper": 4},
            {"name": "act", "type": "categorical", "element_type": "string",
             "values": list(MIXED_ACTIVATIONS)},
            {"name": "bn", "type": "logical"}]
    lower, upper, default, _ = DOMAINS[name]
    dimension = dimension or default
    lower, upper = np.broadcast_to(lower, dimension), np.broadcast_to(upper, dimension)
    return [{"name": f"x{i + 1}", "type": "float", "lower": float(lo), "upper": float(hi)}
            for i, (lo, hi) in enumerate(zip(lower, upper))]
