"""Log expected improvement (:mod:`emews.algorithms.log_ei`): equal to the log of skopt's EI
where that is finite, finite where EI underflows, and its gradient that of the function."""

import numpy as np
from scipy.stats import norm

from emews.algorithms.log_ei import log_expected_improvement, log_h


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
