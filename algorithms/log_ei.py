"""How ``gp`` plans a proposal of several objectives: the acquisition function's best point
among sampled candidates and local searches from the best told points.

Expected improvement vanishes away from the data: in 30 variables, at 200 results, nearly
every candidate's EI underflows to zero, its gradient with it, and a search on EI stops where
it starts. Its logarithm does not (Ament et al. 2023, "Unexpected improvements to expected
improvement for Bayesian optimization", the LogEI that Optuna's ``GPSampler`` maximizes):
:func:`log_expected_improvement` computes it without underflow, with its gradient.
:func:`local_search` ranks the sampled candidates by it and runs L-BFGS-B from the told points
best under the proposal's weights, each search kept within a radius of its start in every
coordinate: a trust region whose radius follows TuRBO's rule (Eriksson et al. 2019,
:func:`trust_radius`), doubled after :data:`GROW_AFTER` told points in a row that improved the
front and halved after as many that did not as the space has dimensions (at least
:data:`FEWEST_FAILURES`). A front that lies on the bounds
(ZDT's, where every variable but the first is 0) is then reached step by step, the steps
growing while they pay, which no sampled candidate ever is; searches free to roam the whole
box went to its corners instead, where the GP is least sure, and lost DTLZ2's interior front.
A fixed radius lost it too: a search that starts at a told point, where the deviation is
zero, leaves it as far as the region allows, and on DTLZ2 that far is worse; the shrinking
region keeps such searches near the front (docs/src/multiobjective-bench.md).
"""

import math
import warnings

import numpy as np
from scipy.optimize import fmin_l_bfgs_b
from scipy.special import erfcx, log_ndtr

LOCAL_STEPS = 50           # L-BFGS-B iterations from each start
SMALLEST_STD = 1e-12       # a prediction's deviation is floored here (a told point's is ~0)
RADIUS = 0.1               # the trust region's first radius, in each coordinate of [0, 1]
WIDEST = 0.4               # ... its largest
NARROWEST = RADIUS / 32    # ... and its smallest
GROW_AFTER = 3             # improvements in a row that double it
FEWEST_FAILURES = 4        # told points in a row without one that halve it, at least
CANDIDATES_KEPT = 10       # the best candidates kept beside the local searches' ends
UNUSABLE = 1e300           # -log EI where the model's prediction or its gradient is not finite
ASYMPTOTIC = 1e3           # beyond this |z| log(1 - |z| M(|z|)) is taken from its series


def log_h(z):
    """``log(phi(z) + z Phi(z))``, the log of expected improvement over a standard normal
    at ``z`` = improvement / deviation, for every ``z`` (an array) without underflow."""
    z = np.asarray(z, dtype=float)
    result = np.empty_like(z)
    near = z > -1
    result[near] = np.log(_phi(z[near]) + z[near] * np.exp(log_ndtr(z[near])))
    t = -z[~near]                      # phi(z) (1 - t M(t)), M(t) = Phi(-t) / phi(t)
    log_phi = -0.5 * t * t - 0.5 * math.log(2 * math.pi)
    far = t > ASYMPTOTIC
    tail = np.empty_like(t)
    tail[~far] = np.log1p(-t[~far] * math.sqrt(math.pi / 2) * erfcx(t[~far] / math.sqrt(2)))
    tail[far] = -2 * np.log(t[far]) + np.log1p(-3 / t[far] ** 2)
    result[~near] = log_phi + tail
    return result


def _phi(z):
    return np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)


def _improvement_ratio(z, log_improvement):
    """``Phi(z) / h(z)``, the derivative of ``log h`` at ``z``: from the logs near 0, and from
    Mills' ratio ``M(t)`` (``t = -z``) below -1, as ``M / (1 - t M)``, whose series beyond
    :data:`ASYMPTOTIC` is ``t (1 - 1/t^2) / (1 - 3/t^2)`` (the logs there are too large to
    subtract: at z = -1e10 both are about -5e19)."""
    ratio = np.empty_like(z)
    near = z > -1
    ratio[near] = np.exp(log_ndtr(z[near]) - log_improvement[near])
    t = -z[~near]
    far = t > ASYMPTOTIC
    mills = math.sqrt(math.pi / 2) * erfcx(t[~far] / math.sqrt(2))
    below = np.empty_like(t)
    below[~far] = mills / (1 - t[~far] * mills)
    below[far] = t[far] * (1 - 1 / t[far] ** 2) / (1 - 3 / t[far] ** 2)
    ratio[~near] = below
    return ratio


def log_expected_improvement(mean, std, best, xi=0.01):
    """``log EI`` of predictions ``mean``, ``std`` (arrays) below ``best`` by more than
    ``xi`` (skopt's EI, minimizing), and its derivatives by the mean and by the deviation."""
    std = np.maximum(np.asarray(std, dtype=float), SMALLEST_STD)
    z = (best - xi - np.asarray(mean, dtype=float)) / std
    log_improvement = log_h(z)
    ratio = _improvement_ratio(z, log_improvement)   # d log h / dz
    by_mean = -ratio / std
    by_std = (1 - ratio * z) / std
    return np.log(std) + log_improvement, by_mean, by_std


def negative_log_ei(x, model, best, xi):
    """``-log EI`` at one point ``x`` (transformed coordinates) and its gradient, for
    L-BFGS-B."""
    mean, std, mean_grad, std_grad = model.predict(x.reshape(1, -1), return_std=True,
                                                   return_mean_grad=True, return_std_grad=True)
    value, by_mean, by_std = log_expected_improvement(mean, std, best, xi)
    if std[0] < SMALLEST_STD:          # floored: the deviation does not move with x here
        std_grad = np.zeros_like(std_grad)
    gradient = by_mean[0] * np.asarray(mean_grad).ravel() + by_std[0] * np.asarray(std_grad).ravel()
    if not (np.isfinite(value[0]) and np.all(np.isfinite(gradient))):
        return UNUSABLE, np.zeros_like(x)   # the line search steps back from here
    return -float(value[0]), -gradient


def trust_radius(improvements, dimensions):
    """The local searches' radius after the told points whose ``improvements`` (booleans, in
    the order told: did it improve the front?) are given, in a space of ``dimensions``:
    TuRBO's rule from :data:`RADIUS`, doubled (up to :data:`WIDEST`) after
    :data:`GROW_AFTER` improvements in a row, halved (down to :data:`NARROWEST`) after
    ``dimensions`` points in a row without one (at least :data:`FEWEST_FAILURES`)."""
    shrink_after = max(FEWEST_FAILURES, dimensions)
    radius, won, lost = RADIUS, 0, 0
    for improved in improvements:
        won, lost = (won + 1, 0) if improved else (0, lost + 1)
        if won == GROW_AFTER:
            radius, won = min(2 * radius, WIDEST), 0
        if lost == shrink_after:
            radius, lost = max(radius / 2, NARROWEST), 0
    return radius


def local_search(planner, model, starts, radius=RADIUS, steps=LOCAL_STEPS, from_candidates=0,
                 xi=None):
    """The point (skopt coordinates) of ``planner``'s space that maximizes log EI under
    ``model`` (a fitted GP, or any regressor with ``predict(X, return_std=True)``) below
    ``planner.yi``'s best by more than ``xi`` (by default the planner's ``xi``, skopt's
    0.01): the best of ``planner.n_points`` candidates sampled with
    ``planner.rng``, or, when ``planner.acq_optimizer`` is ``"lbfgs"``, of the ends of
    L-BFGS-B searches from ``starts`` (transformed coordinates), each within ``radius`` of
    its start in every coordinate, and from the ``from_candidates`` best candidates. A point
    told before is the answer only when every one found is one (skopt then replaces it by a
    random one)."""
    space = planner.space
    best = float(np.min(planner.yi))
    if xi is None:
        xi = (planner.acq_func_kwargs or {}).get("xi", 0.01)
    candidates = space.transform(space.rvs(n_samples=planner.n_points,
                                           random_state=planner.rng))
    mean, std = model.predict(candidates, return_std=True)
    values = -log_expected_improvement(mean, std, best, xi)[0]
    order = np.argsort(values)
    found = [(float(values[i]), candidates[i]) for i in order[:CANDIDATES_KEPT]]
    starts = [*starts, *candidates[order[:from_candidates]]]
    if planner.acq_optimizer == "lbfgs":
        low, high = np.asarray(space.transformed_bounds, dtype=float).T
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for start in starts:
                near = list(zip(np.maximum(low, start - radius),
                                np.minimum(high, start + radius)))
                x, value, _ = fmin_l_bfgs_b(negative_log_ei, start, args=(model, best, xi),
                                            bounds=near, maxiter=steps)
                if np.all(np.isfinite(x)):
                    found.append((float(value), np.clip(x, low, high)))
    for _, x in sorted(found, key=lambda f: f[0]):   # skopt's check: the decoded point
        point = space.inverse_transform(np.asarray(x).reshape(1, -1))[0]
        if point not in planner.Xi:
            return point
    return point
