"""The Bayesian adapters: scikit-optimize's Optimizer and Optuna's samplers."""

import importlib.util
import math
import threading

import numpy as np
import pytest

from emews.algorithms.optuna_search import OptunaSearch
from emews.algorithms.skopt_search import SkoptSearch
from emews._errors import ConfigError
from emews._space import Space
from emews.testing import PLANE, SPACE, bowl, distance_to_corner

MIXED = Space.from_ga_json(SPACE)
SQUARE = Space.from_ga_json(PLANE)
QUICK_GP = {"n_initial_points": 3, "acq_optimizer": "sampling",
            "acq_optimizer_kwargs": {"n_points": 300}}


def told(algorithm, count, seed=0):
    points = SQUARE.sample(np.random.default_rng(seed), count)
    algorithm.tell(points, [distance_to_corner(p) for p in points])


def test_gp_plans_around_points_still_in_flight():
    gp = SkoptSearch(SQUARE, seed=1, **QUICK_GP)
    told(gp, 5)
    first, second = gp.ask(1), gp.ask(1)
    assert first != second               # the optimizer alone would answer the same point twice
    gp.tell(first + second, [0.5, 0.6])
    assert len(gp.optimizer.yi) == 7 and not gp.in_flight


@pytest.mark.parametrize("strategy", ["kb", "cl_min"])
def test_gp_tells_its_planner_the_model_s_mean_at_points_in_flight(strategy):
    """The kriging believer (``kb``, the default) tells the copy that plans the next point the
    model's own mean at each point in flight; the constant liar (``cl_min``) tells it the best
    value so far, which drew async proposals to the points that merely ran."""
    from emews.algorithms.skopt_search import _refit

    gp = SkoptSearch(SQUARE, seed=1, strategy=strategy, **QUICK_GP)
    told(gp, 6)
    running = gp.ask(3)
    coordinates = [x for xs in gp.in_flight.values() for x in xs]
    planner = gp._planner(coordinates)
    told_there = planner.yi[-3:]
    if strategy == "kb":
        means = _refit(gp.optimizer).predict(gp.optimizer.space.transform(coordinates))
        assert told_there == pytest.approx(list(means))
        assert len(set(told_there)) == 3          # a value of each point's own
    else:
        assert told_there == [min(gp.optimizer.yi)] * 3
    assert len(running) == 3 and planner.Xi[-3:] == coordinates


def test_gp_failures_count_as_the_worst_value_once_there_is_one():
    gp = SkoptSearch(SQUARE, seed=1, **QUICK_GP)
    failed = gp.ask(2)
    gp.tell(failed, [math.nan, math.inf])
    assert gp.optimizer.yi == [] and len(gp.held_back) == 2
    more = gp.ask(2)
    gp.tell(more, [1.0, 3.0])
    assert sorted(gp.optimizer.yi) == [1.0, 3.0, 3.2, 3.2]


def test_gp_options_reach_skopt_and_bad_ones_are_named():
    gp = SkoptSearch(MIXED, seed=0, base_estimator="RF", n_initial_points=2, strategy="cl_max")
    assert gp.optimizer.n_initial_points_ == 2
    assert type(gp.optimizer.base_estimator_).__name__ == "RandomForestRegressor"
    with pytest.raises(ConfigError, match=r"\[algorithm\]\.acq: is not an option of "
                                          r"Optimizer \(options: .*acq_func"):
        SkoptSearch(MIXED, acq="EI")
    with pytest.raises(ConfigError, match=r"\[algorithm\]\.base_estimator: must be one of"):
        SkoptSearch(MIXED, base_estimator="GBRT")
    with pytest.raises(ConfigError, match=r"\[algorithm\]\.strategy: must be one of"):
        SkoptSearch(MIXED, strategy="cl_median")


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None, reason="torch is installed")
def test_optuna_gp_without_torch_says_what_to_install():
    with pytest.raises(ConfigError, match=r"\[algorithm\]\.sampler: Optuna's GPSampler needs "
                                          r"PyTorch.*pip install torch"):
        OptunaSearch(MIXED, sampler="gp")


def test_optuna_sampler_options_reach_the_sampler():
    search = OptunaSearch(MIXED, seed=0, sampler="tpe", n_startup_trials=3, multivariate=True)
    assert search.study.sampler._n_startup_trials == 3 and search.study.sampler._multivariate
    with pytest.raises(ConfigError, match=r"\[algorithm\]\.popsize: is not an option of "
                                          r"TPESampler \(options: .*n_startup_trials"):
        OptunaSearch(MIXED, sampler="tpe", popsize=4)
    with pytest.raises(ConfigError, match=r"\[algorithm\]\.sampler: must be one of"):
        OptunaSearch(MIXED, sampler="hyperband")


def test_optuna_tpe_runs_with_optuna_5s_defaults_on_any_optuna():
    # Optuna 4's TPESampler defaults to constant_liar = multivariate = False, Optuna 5's to
    # True: the plugin sets them, so a study searches the same way on both.
    default = OptunaSearch(MIXED, seed=0).study.sampler
    assert default._constant_liar is True and default._multivariate is True
    chosen = OptunaSearch(MIXED, seed=0, constant_liar=False, multivariate=False).study.sampler
    assert chosen._constant_liar is False and chosen._multivariate is False


def test_an_option_the_installed_optuna_lacks_is_refused_with_its_version():
    import optuna

    from emews.algorithms.optuna_search import _check_sampler_options

    # RandomSampler stands for a sampler of an Optuna that predates the option
    with pytest.raises(ConfigError, match=r"\[algorithm\]\.n_startup_trials: is not an option "
                                          r"of TPESampler \(it takes none\) in Optuna \d"):
        _check_sampler_options("tpe", {"n_startup_trials": 3}, MIXED,
                               optuna.samplers.RandomSampler)


def test_optuna_trials_record_failures_and_history():
    from optuna.trial import TrialState

    search = OptunaSearch(MIXED, seed=0)
    asked = search.ask(2)
    search.tell(asked, [math.nan, bowl(asked[1])])
    history = MIXED.sample(np.random.default_rng(1), 2)
    search.tell(history, [-math.inf, 4.0])
    states = [t.state for t in search.study.get_trials()]
    assert states == [TrialState.FAIL, TrialState.COMPLETE, TrialState.FAIL, TrialState.COMPLETE]
    assert search.study.best_value == min(bowl(asked[1]), 4.0)


@pytest.mark.parametrize("count, warm", [(12, "_source_trials"), (3, "_x0")])
def test_cmaes_starts_from_the_told_history(count, warm):
    search = OptunaSearch(MIXED, seed=0, sampler="cmaes")
    history = MIXED.sample(np.random.default_rng(2), count)
    search.tell(history, [bowl(p) for p in history])
    assert MIXED.contains(search.ask(1)[0])
    assert getattr(search.study.sampler, warm) is not None


def test_a_restored_gp_refits_the_model_its_state_leaves_out():
    gp = SkoptSearch(SQUARE, seed=1, **QUICK_GP)
    told(gp, 6)
    restored = SkoptSearch(SQUARE, seed=1, **QUICK_GP)
    restored.restore(gp.state())
    grid = np.random.default_rng(3).random((20, 2))
    assert len(restored.optimizer.models) == 1
    assert np.array_equal(restored.optimizer.models[-1].predict(grid),
                          gp.optimizer.models[-1].predict(grid))
    assert gp.optimizer.models      # taking the state left the original's model alone


def test_gp_kernel_is_estimated_beside_the_search_and_taken_over_at_a_fixed_size():
    def gp():
        return SkoptSearch(SQUARE, seed=1, refit_growth=0.5, refit_all_below=0, **QUICK_GP)

    points = SQUARE.sample(np.random.default_rng(0), 24)
    values = [distance_to_corner(p) for p in points]
    search = gp()
    search.tell(points[:10], values[:10])     # past the initial points: estimated at once
    first = search.optimizer.base_estimator_.kernel
    assert search.estimate is None and search.estimated_at == 10
    search.tell(points[10:15], values[10:15])     # grown by half: the next, on its thread
    assert search.estimate is not None and search.estimate.due == 15 + 8
    assert search.optimizer.base_estimator_.kernel is first

    restored = gp()
    restored.restore(search.state())     # taken with the estimate under way: started again
    for algorithm in (search, restored):
        algorithm.tell(points[15:22], values[15:22])
        assert algorithm.optimizer.base_estimator_.kernel == first     # 22 < 23: not yet
        algorithm.tell(points[22:], values[22:])     # 24: taken over, and the next begun
        assert algorithm.estimate.size == 24
    taken = search.optimizer.base_estimator_.kernel
    assert taken != first and restored.optimizer.base_estimator_.kernel == taken
    assert search.ask(2) == restored.ask(2)
    for algorithm in (search, restored):
        algorithm.estimate.kernel()     # no thread outlives the test


def test_gp_kernel_is_estimated_at_every_tell_below_the_threshold_in_flight_or_not():
    search = SkoptSearch(SQUARE, seed=1, refit_all_below=34, **QUICK_GP)
    points = SQUARE.sample(np.random.default_rng(0), 35)
    values = [distance_to_corner(p) for p in points]
    search.tell(points[:30], values[:30])         # estimated at once
    first = search.optimizer.base_estimator_.kernel
    (asked,) = search.ask(1)
    search.tell(points[30:31], values[30:31])     # a point in flight: every tell all the same
    assert search.estimated_at == 31 and search.estimate.due == 32
    search.tell([asked], [distance_to_corner(asked)])     # taken over, and the next begun
    assert search.optimizer.base_estimator_.kernel != first
    assert search.estimated_at == 32 and search.estimate.due == 33
    search.tell(points[31:33], values[31:33])     # 34 points: taken over; 10 % from here on
    assert search.estimated_at == 32 and search.estimate is None
    search.tell(points[33:35], values[33:35])     # 36 >= 32 + 10 %: the next estimate
    assert search.estimated_at == 36 and search.estimate.due == 36 + 4
    search.estimate.kernel()


def test_gp_plans_one_point_with_skopts_lbfgs_below_the_threshold_and_sampled_above():
    """Below ``refit_all_below`` results an ask of one point with others in flight is planned
    as skopt plans it (L-BFGS on the acquisition function, for ``acq_optimizer = "auto"``); an
    ask of several points (a batch, or workers waiting on a search behind them), or any ask
    from the threshold on, takes the best of the sampled candidates."""
    fast = {"n_initial_points": 3, "acq_optimizer_kwargs": {"n_points": 300}}
    planned = []

    def record(self, running, fit=True, sampled=True):
        planner = planner_of(self, running, fit, sampled)
        planned.append(planner.acq_optimizer)
        return planner

    planner_of = SkoptSearch._planner
    for below, n, flying, expected in ((100, 1, 2, "lbfgs"), (100, 2, 2, "sampling"),
                                       (100, 3, 0, "sampling"), (8, 1, 2, "sampling")):
        gp = SkoptSearch(SQUARE, seed=1, refit_all_below=below, **fast)
        told(gp, 8)
        gp.ask(flying)                              # in flight
        gp._planner = record.__get__(gp)
        planned.clear()
        assert len(gp.ask(n)) == n
        assert planned == [expected], (below, n, flying)
    gp.estimate and gp.estimate.kernel()


def test_gp_kernel_estimate_started_by_the_daemon_me_thread_is_waited_for_at_exit():
    search = SkoptSearch(SQUARE, seed=1, refit_growth=0.5, refit_all_below=0, **QUICK_GP)
    points = SQUARE.sample(np.random.default_rng(0), 15)

    def tell():     # past the initial points, then grown by half: an estimate under way
        search.tell(points[:10], [distance_to_corner(p) for p in points[:10]])
        search.tell(points[10:], [distance_to_corner(p) for p in points[10:]])

    me = threading.Thread(target=tell, daemon=True)     # eqpy runs the ME as a daemon
    me.start()
    me.join()
    assert search.estimate is not None
    assert not search.estimate._thread.daemon     # the interpreter's exit waits for the fit
    search.estimate.kernel()


def test_gp_learns_its_noise_below_sklearns_floor_unless_it_was_asked_a_batch():
    """One objective, points asked one at a time (sequential) or with others in flight
    (async): the kernel estimate's noise is bounded below by NOISE_FLOOR (the test of the
    candidate posterior sees it fall there); after a batch (several points, none in flight),
    or in ParEGO, by scikit-learn's floor. A state taken with an estimate under way starts it
    again with the floor it began with, whatever was asked since."""
    from emews.algorithms.skopt_search import BATCH_NOISE_FLOOR, NOISE_FLOOR
    from emews.core._algorithm import Objectives

    def floor(sizes, objectives=1):
        """A search told 8 points, then ``asks`` points ``size`` at a time and told them,
        for each (size, asks) of ``sizes``; the floor of its estimate under way."""
        gp = SkoptSearch(SQUARE, seed=1, objectives=objectives, **QUICK_GP)
        points = SQUARE.sample(np.random.default_rng(0), 8)
        for size, asks in [(None, None), *sizes]:
            if size is not None:
                points = [p for _ in range(asks) for p in gp.ask(size)]
            gp.tell(points, [Objectives([distance_to_corner(p)] * objectives)
                             for p in points])
        bound = gp.estimate.kernel().k2.noise_level_bounds[0]   # what the fit was bounded by
        assert bound == gp.estimate.floor
        return gp, bound

    for sizes, objectives, expected in (([(1, 1)] * 2, 1, NOISE_FLOOR),
                                        ([(1, 2)] * 2, 1, NOISE_FLOOR),   # one in flight
                                        ([(4, 1)] * 2, 1, BATCH_NOISE_FLOOR),
                                        ([(1, 1)] * 2, 2, BATCH_NOISE_FLOOR)):
        assert floor(sizes, objectives)[1] == expected, (sizes, objectives)

    gp = SkoptSearch(SQUARE, seed=1, **QUICK_GP)
    told(gp, 8)
    points = gp.ask(1)
    gp.tell(points, [distance_to_corner(p) for p in points])   # an estimate under way
    gp.ask(4)
    restored = SkoptSearch(SQUARE, seed=1, **QUICK_GP)
    restored.restore(gp.state())
    assert restored.estimate.floor == NOISE_FLOOR and restored.asked_batch
    points = gp.ask(1)
    assert restored.ask(1) == points
    for search in (gp, restored):
        search.tell(points, [distance_to_corner(p) for p in points])
    assert restored.optimizer.base_estimator_.kernel == gp.optimizer.base_estimator_.kernel
    for search in (gp, restored):
        search.estimate.kernel()


def test_gp_estimates_its_kernel_with_optunas_priors_where_its_designs_values_repeat():
    """Values of the initial design that repeat at different points (a plateau: accuracies,
    runs that all fail alike) make the kernel's estimates maximum a posteriori; distinct ones,
    repeats after the design, a point told twice, and ParEGO's scalarizations keep maximum
    likelihood."""
    from emews.core._algorithm import Objectives

    points = SQUARE.sample(np.random.default_rng(0), 12)
    distances = [distance_to_corner(p) for p in points]
    plateau = [min(d, 0.5) for d in distances]
    later = distances[:6] + [0.5] * 6
    for told, values, objectives, prior in ((points, distances, 1, False),
                                            (points, plateau, 1, True),
                                            (points, later, 1, False),
                                            (points[:5] + points[:7], distances[:5] + distances[:7],
                                             1, False),
                                            (points, plateau, 2, False)):
        gp = SkoptSearch(SQUARE, seed=1, objectives=objectives,
                         **dict(QUICK_GP, n_initial_points=6))
        gp.tell(told, values if objectives == 1 else [Objectives([v] * 2) for v in values])
        assert len(set(plateau[:6])) < 6 and len(set(later)) < 12    # what the cases need
        estimate = gp._start_estimate(gp.optimizer.Xi, gp.optimizer.yi, due=13)
        assert estimate.prior is prior, (objectives, values)
        estimate.kernel()


def test_the_kernel_prior_holds_length_scales_off_their_bounds_where_the_values_do_not_vary():
    """12 points of a 4-D box whose values vary along the first coordinate only: maximum
    likelihood runs the other three length scales to their bound, the prior keeps them a few
    times the first's (what Optuna's GPSampler's priors do)."""
    from sklearn.gaussian_process import GaussianProcessRegressor
    from skopt import Optimizer
    from skopt.learning.gaussian_process.kernels import WhiteKernel
    from emews.algorithms.skopt_search import KernelPrior, NOISE_FLOOR

    kernel = Optimizer([(0.0, 1.0)] * 4, random_state=0).base_estimator_.kernel + \
        WhiteKernel(noise_level_bounds=(NOISE_FLOOR, 1e5))
    X = np.random.default_rng(0).random((12, 4))
    scales = {}
    for name, optimizer in (("ML", "fmin_l_bfgs_b"), ("MAP", KernelPrior(kernel))):
        model = GaussianProcessRegressor(kernel=kernel, optimizer=optimizer, normalize_y=True,
                                         n_restarts_optimizer=2, random_state=0)
        scales[name] = model.fit(X, np.sin(3 * X[:, 0])).kernel_.k1.k2.length_scale
    bound = kernel.k1.k2.length_scale_bounds[0][1]
    assert np.allclose(scales["ML"][1:], bound)
    assert np.all(scales["MAP"][1:] < bound / 10)
    assert np.all(scales["MAP"][1:] > 3 * scales["MAP"][0])


@pytest.mark.parametrize("batch", [False, True])
def test_candidate_posterior_predicts_what_a_refit_with_the_told_points_predicts(batch):
    """Exactly, up to rounding: conditioning on a told point subtracts covariances of the
    order of the kernel's amplitude (losing eps ||K^-1|| amplitude^2 each) to find the
    point's variance given the data, here a thousandth of the amplitude; the mean moves by
    the values' span over that variance. With the noise learnt down to NOISE_FLOOR as with
    scikit-learn's floor (after a ``batch``)."""
    from emews.algorithms.skopt_search import BATCH_NOISE_FLOOR, CandidatePosterior, _refit

    gp = SkoptSearch(SQUARE, seed=1, **QUICK_GP)
    if batch:
        gp.ask(2)
    told(gp, 12)
    optimizer = gp.optimizer
    model = _refit(optimizer)
    assert (model.noise_ < BATCH_NOISE_FLOOR / 100) != batch
    candidates = np.random.default_rng(4).random((200, 2))
    posterior = CandidatePosterior(model, candidates, optimizer.yi)
    extra = SQUARE.sample(np.random.default_rng(5), 3)
    for point, value in zip(extra, [0.0, 2.0, 0.1]):
        x = [point[p.name] for p in SQUARE.free]
        posterior.tell(optimizer.space.transform([x])[0], value)
        optimizer.tell(x, value)    # the refit the posterior stands for (same fixed kernel)
    mean, std = _refit(optimizer).predict(candidates, return_std=True)
    amplitude = model.kernel_.diag(candidates[:1])[0]
    lost = np.finfo(float).eps * np.linalg.norm(posterior.K_inv, 2) * amplitude ** 2
    rounding = lost / np.min(np.diag(posterior.told_cov)) * np.ptp(optimizer.yi)
    assert np.abs(posterior.mean - mean).max() <= 4 * rounding < 1e-6
    assert np.allclose(posterior.std, std, atol=1e-9)
    assert std.max() > 0.01          # a prediction with something to compare


def test_gp_plans_a_batch_on_one_candidate_set_as_skopts_loop_plans_one_point(monkeypatch):
    def planned(shared, n):
        gp = SkoptSearch(SQUARE, seed=1, refit_all_below=0, **QUICK_GP)
        told(gp, 8)
        gp.ask(3)                            # in flight
        if not shared:
            monkeypatch.setattr(gp, "_plans_on_candidates", lambda running: False)
        assert gp._plans_on_candidates([None] * 3) == shared
        return gp.ask(n)

    one = planned(True, 1)
    assert one == planned(False, 1)          # one point: the same sample, the same choice
    batch = planned(True, 6)
    assert batch[0] == one[0] and len({tuple(sorted(p.items())) for p in batch}) == 6


def test_gp_plans_one_point_asked_alone_where_log_ei_is_best():
    """One objective, nothing in flight, below ``refit_all_below``: the point asked maximizes
    log EI under the model fitted to the told points (L-BFGS-B from the best told points and
    candidates), beyond the best of its own 50 candidates and of a fresh sample of 2,000;
    skopt's gp_hedge no longer plans it."""
    from emews.algorithms.log_ei import log_expected_improvement
    from emews.algorithms.skopt_search import LOG_EI_XI, _refit

    gp = SkoptSearch(SQUARE, seed=1, n_initial_points=3, acq_optimizer_kwargs={"n_points": 50})
    told(gp, 8)
    (asked,) = gp.ask(1)
    sample = [[p[q.name] for q in SQUARE.free]
              for p in SQUARE.sample(np.random.default_rng(9), 2000)]
    model = _refit(gp.optimizer)
    mean, std = model.predict(gp.optimizer.space.transform(
        [[asked[q.name] for q in SQUARE.free], *sample]), return_std=True)
    values = log_expected_improvement(mean, std, min(gp.optimizer.yi), LOG_EI_XI)[0]
    assert values[0] > np.max(values[1:]) - 1e-6
    gp.estimate and gp.estimate.kernel()


def test_gp_from_refit_all_below_on_plans_one_point_on_at_most_fast_points_candidates(
        monkeypatch):
    """From ``refit_all_below`` results on, speed comes first: one point asked alone is the
    best of at most FAST_POINTS candidates, and the kernel is estimated from one start
    (below, with skopt's restarts)."""
    from emews.algorithms import skopt_search

    sizes, restarts = [], []

    class Posterior(skopt_search.CandidatePosterior):
        def __init__(self, model, candidates, y):
            sizes.append(len(candidates))
            super().__init__(model, candidates, y)

    class Estimate(skopt_search.KernelEstimate):
        def __init__(self, settings, X, y, due, floor, prior):
            restarts.append((len(y), settings["n_restarts_optimizer"]))
            super().__init__(settings, X, y, due, floor, prior)

    monkeypatch.setattr(skopt_search, "CandidatePosterior", Posterior)
    monkeypatch.setattr(skopt_search, "KernelEstimate", Estimate)
    gp = SkoptSearch(SQUARE, seed=1, n_initial_points=3, refit_all_below=8)
    told(gp, 7)
    gp.ask(1)                             # 7 told: log EI, no candidate set
    assert sizes == []
    told(gp, 2, seed=1)                   # 9 told
    (point,) = gp.ask(1)
    assert sizes == [skopt_search.FAST_POINTS] and SQUARE.contains(point)
    assert restarts == [(7, 2), (9, 0)]
    gp.estimate and gp.estimate.kernel()
