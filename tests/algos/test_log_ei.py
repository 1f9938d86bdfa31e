"""Log expected improvement (:mod:`emews.algorithms.log_ei`): equal to the log of skopt's EI
where that is finite, finite where EI underflows, its gradient that of the function, and a
local search that survives a model whose gradient is not finite and stays within its trust
region, whose radius follows TuRBO's rule."""

import math

import numpy as np
import pytest
from scipy.stats import norm

from emews.algorithms.log_ei import (FEWEST_FAILURES, GROW_AFTER, NARROWEST, RADIUS, UNUSABLE,
                                     WIDEST, local_search, log_expected_improvement, log_h,
                                     negative_log_ei, trust_radius)


def test_log_h_is_the_log_of_the_closed_form_where_that_is_finite():
    z = np.linspace(-30, 10, 401)
    closed = np.log(norm.pdf(z) + z * norm.cdf(z))
    assert np.allclose(log_h(z), closed, rtol=1e-9, atol=1e-12)


def test_log_h_stays_finite_and_increasing_where_ei_underflows():
    z = -np.logspace(1.5, 7, 200)[::-1]            # from -1e7 up to about -32
    values = log_h(z)
    assert np.all(np.isfinite(values)) and np.all(np.diff(values) > 0)
    with np.errstate(divide="ignore"):
        assert np.all(np.isneginf(np.log(norm.pdf(z[:50]) + z[:50] * norm.cdf(z[:50]))))


def test_the_derivatives_by_mean_and_deviation_match_finite_differences():
    mean, std, best, step = np.array([0.3, 2.0, -0.1]), np.array([0.05, 0.1, 0.4]), 0.0, 1e-7
    value, by_mean, by_std = log_expected_improvement(mean, std, best)
    moved_mean = (log_expected_improvement(mean + step, std, best)[0] - value) / step
    moved_std = (log_expected_improvement(mean, std + step, best)[0] - value) / step
    assert np.allclose(by_mean, moved_mean, rtol=1e-4)
    assert np.allclose(by_std, moved_std, rtol=1e-4)


def test_it_is_the_log_of_skopt_s_expected_improvement():
    from skopt.acquisition import gaussian_ei

    class Fixed:   # a model that predicts given means and deviations
        def predict(self, X, return_std=False):
            return MEAN, STD

    MEAN, STD = np.array([0.2, 0.0, -0.3]), np.array([0.3, 0.1, 0.2])
    ei = gaussian_ei(np.zeros((3, 1)), Fixed(), y_opt=0.1, xi=0.01)
    assert np.allclose(log_expected_improvement(MEAN, STD, 0.1, 0.01)[0], np.log(ei))


class Unsure:
    """A model whose mean has no usable gradient anywhere (NaN), as a kernel's can be at a
    told point; its predictions themselves are finite."""

    def predict(self, X, return_std=False, return_mean_grad=False, return_std_grad=False):
        if return_mean_grad:
            width = np.asarray(X).shape[1]
            return np.zeros(1), np.ones(1), np.full(width, np.nan), np.zeros(width)
        return np.zeros(len(X)), np.ones(len(X))


def test_a_gradient_that_is_not_finite_makes_a_point_the_search_steps_back_from():
    value, gradient = negative_log_ei(np.full(3, 0.5), Unsure(), best=0.0, xi=0.01)
    assert value == UNUSABLE and not gradient.any()


def test_the_local_search_answers_a_point_of_the_space_when_gradients_fail():
    from skopt import Optimizer

    planner = Optimizer([(0.0, 1.0)] * 3, base_estimator="GP", n_initial_points=2,
                        acq_optimizer="lbfgs", acq_optimizer_kwargs={"n_points": 50},
                        random_state=1)
    planner.tell([[0.2, 0.3, 0.4], [0.6, 0.1, 0.9]], [1.0, 2.0])
    point = local_search(planner, Unsure(), planner.space.transform(planner.Xi))
    assert all(math.isfinite(v) and 0.0 <= v <= 1.0 for v in point)


def test_the_derivatives_stay_finite_at_a_told_point_where_the_deviation_is_zero():
    value, by_mean, by_std = log_expected_improvement(np.array([0.003, 0.5]), np.zeros(2), 0.0)
    assert np.all(np.isfinite(value)) and np.all(np.isfinite(by_mean))
    assert np.all(np.isfinite(by_std)) and np.all(by_mean < 0)


def test_the_ratio_joins_its_series_where_the_series_takes_over():
    z = np.array([-999.9, -1000.1])   # either side of ASYMPTOTIC: the mean -z, deviation 1
    _, by_mean, _ = log_expected_improvement(-z, np.ones(2), 0.0, xi=0.0)
    assert by_mean == pytest.approx(z, rel=1e-5)   # d log EI / d mean = -Phi/h, about z


def test_the_trust_region_doubles_after_improvements_in_a_row_and_halves_after_failures():
    assert trust_radius([], 12) == RADIUS
    assert trust_radius([True] * GROW_AFTER, 12) == 2 * RADIUS
    assert trust_radius([True] * (GROW_AFTER - 1) + [False] + [True] * (GROW_AFTER - 1), 12) \
        == RADIUS
    assert trust_radius([True] * GROW_AFTER * 10, 12) == WIDEST
    assert trust_radius([False] * 12, 12) == RADIUS / 2
    assert trust_radius([False] * 11 + [True] + [False] * 11, 12) == RADIUS
    assert trust_radius([False] * 120, 12) == NARROWEST
    assert trust_radius([False] * 120 + [True] * GROW_AFTER, 12) == 2 * NARROWEST


def test_the_failures_that_halve_it_are_as_many_as_the_dimensions_and_at_least_four():
    assert trust_radius([False] * 29, 30) == RADIUS
    assert trust_radius([False] * 30, 30) == RADIUS / 2
    assert trust_radius([False] * FEWEST_FAILURES, 2) == RADIUS / 2
    assert trust_radius([False] * (FEWEST_FAILURES - 1), 2) == RADIUS


def fitted_planner():
    """skopt's planner with a GP fitted to 12 points of a bowl in 4 variables, one sampled
    candidate beside its local searches."""
    from skopt import Optimizer

    planner = Optimizer([(0.0, 1.0)] * 4, base_estimator="GP", n_initial_points=12,
                        acq_optimizer="lbfgs", acq_optimizer_kwargs={"n_points": 1},
                        random_state=3)
    xs = np.random.default_rng(3).uniform(size=(12, 4))
    planner.tell(xs.tolist(), [float(((x - 0.3) ** 2).sum()) for x in xs])
    return planner


@pytest.mark.parametrize("radius", [0.05, 0.2])
def test_the_local_search_answers_within_its_radius_of_a_start(radius):
    planner = fitted_planner()
    starts = planner.space.transform(planner.Xi)[np.argsort(planner.yi)[:3]]   # the best
    point = np.asarray(local_search(planner, planner.models[-1], starts, radius))
    distance = np.abs(starts - point).max(axis=1).min()   # to the nearest start
    assert radius / 2 < distance <= radius + 1e-12
