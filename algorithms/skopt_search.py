"""Bayesian optimization with scikit-optimize's ``Optimizer`` (a GP surrogate by default).

``ask(n)`` in batch mode plans its points one after the other, as skopt's ``Optimizer.ask(n)``
does, each told to a throwaway copy of the optimizer before the next is planned. In async mode
the driver asks whenever a worker frees up while others are still running; those running points
are told to the copy too, so the next point is planned away from them::

    points in flight --believed value--> copy of the optimizer --ask--> next point(s)
    results ---------------------------> the optimizer (one refit per tell)

What the copy is told at a point in flight is ``strategy``: ``kb`` (the default, the kriging
believer) tells the model's own mean there; ``cl_min``, ``cl_mean`` and ``cl_max`` (skopt's
constant liar) tell the best, mean or worst value so far (``kb`` too, before the first model).
The constant liar's best value at every point in flight makes the model see a cluster of
optima where points merely run, and it drew async proposals to them: with 8 workers on
Branin the GP's median log10 regret at 50 evaluations was -0.75 with ``cl_min`` and -2.9 with
``kb`` (-3.3 sequential; 4 seeds).

Below ``refit_all_below`` (100) results, a search is small and its model cheap: the kernel is
estimated at every tell. An ask of one point with none in flight (a sequential search), for
``acq_func`` ``gp_hedge`` (the default) or ``EI``, is planned where log EI is best, as Optuna's
``GPSampler`` plans it (:func:`.log_ei.local_search`: the best of the sampled candidates and
of L-BFGS-B searches over the whole space from the :data:`LOG_EI_STARTS` told points best and
as many best candidates; no margin ``xi`` unless one is set): EI itself underflows away from
the data, and skopt's polish of gp_hedge's choice stalled short of the minimum. Measured on
the quality part's problems (budget 100, paired seeds, median log10 regret, before -> after,
Optuna's GPSampler): Branin -4.83 -> -4.92 (-4.82), Hartmann-6 -2.08 -> -3.40 (-3.94),
Ackley-5 0.54 -> 0.47 (0.77), Rosenbrock-4 0.47 -> -0.01 (-0.55), Levy-6 0.35 -> 0.00 (0.04):
algorithms/README.md has the table. A batch is planned as before, its first point by skopt
at the tell (by log EI among the candidates it was worse on 4 of 5 problems). An ask of one
point with others in flight is planned as ``gp_minimize`` plans it, the acquisition function optimized by skopt's own optimizer
(L-BFGS from the best of 10,000 sampled candidates, for ``acq_optimizer = "auto"``), the
points in flight told to a refitted copy. Measured at the issue's budget of 100, async with 8
workers, 10 seeds, median log10 regret: Rosenbrock-4 0.59 -> 0.39, Ackley-5 0.85 -> 0.62
(``gp_minimize``'s own async loop: 0.40 and 0.64), where the fast path below had been used
with points in flight; sequentially, the kernel a tenth of the data behind had cost a third
of a decade on Hartmann-6 at 50 evaluations (-0.59 against -0.91). An ask of several points
(a batch, or several workers waiting on a search that has fallen behind them) takes the best
of a fresh sample of candidates for each point, as below: the L-BFGS polish drew a batch's
points together (batch of 8, budget 100: Hartmann-6 -0.92 with it against -1.84 without,
Levy-6 0.93 against 0.17; ``gp_minimize`` -2.41 and 0.47).

The noise the kernel estimate learns (skopt's ``noise = "gaussian"``, a ``WhiteKernel``) is
at least :data:`NOISE_FLOOR` (1e-10), with one objective, unless the last ask was a batch
(several points, none in flight): then, and in ParEGO, scikit-learn's 1e-5. On values
without noise the estimate sits at its floor, and scikit-learn's blurs the model where the
points crowd, near the minimum. Measured (10 seeds, budget 100, median log10 regret, 1e-5 ->
1e-10, Optuna's GPSampler): sequentially Branin -4.92 -> -8.00 (-4.82), Hartmann-6 -3.40 ->
-5.04 (-3.94), Rosenbrock-4 -0.01 -> -0.40 (-0.55), Ackley-5 and Levy-6 level: at or above
Optuna's on all 5 (Hartmann-6 and Rosenbrock-4 were worse); async with 8 workers Branin
-4.34 -> -8.00, Hartmann-6 -0.92 -> -3.18 (both better), Rosenbrock-4 level. A batch of 8
with a lower floor found Branin's minimum (-5.12 at 1e-10, against -4.42) but lost
Hartmann-6 (-1.50 at 1e-10, -1.42 at 1e-8, -1.75 at 1e-7, against -2.31; each worse, p <=
0.024), so a batch keeps scikit-learn's (algorithms/README.md has the tables).

The kernel's hyperparameters are estimated by maximum likelihood, unless values of the initial
design (the first ``n_initial_points`` told, random points of the space by default) repeat at
different points (one objective): then by maximum a posteriori, with Optuna's GPSampler's
priors (:class:`KernelPrior`). Random points repeat a value where the objective has plateaus:
an accuracy on a small test set, a region of the space where every tree is trivial, runs that
failed alike. There maximum likelihood fits the few points off the plateau with short length
scales, and the search exploits their neighbourhood. Later repeats say little of the
objective: on Ackley-5 `gp` itself tells equal values from the 57th point on (points that the
function's symmetry makes alike), and the prior from there made it worse (two seeds: 0.45 ->
0.53, 0.42 -> 0.72). Measured on the peers part's Bayesmark tasks (40 sequential evaluations,
7 tasks, seeds 0-4, Bayesmark's normalized score; algorithms/README.md has the table): 78.4 by
maximum likelihood, 84.3 with the prior (better, p 0.031; Optuna's GPSampler 84.9, level),
82.5 with the prior on every fit, which also cost Ackley-5 (median log10 regret 0.42 -> 0.83,
p 0.001).

From ``refit_all_below`` results on, speed comes first. The points
of one ask made with points in flight, or of an ask of one point, are planned on one sample
of candidates (skopt's ``n_points``, at most :data:`FAST_POINTS`, 1,000) once the GP's kernel
is fixed: the GP's predictions there are
conditioned on each lie in turn (:class:`CandidatePosterior`, exactly what a refit with the
lie would predict) instead of a refit and a new prediction at a fresh sample per point, so
that asking 8 points costs about what asking one does (at n = 400 data, 0.16 s instead of
1.4-1.7 s on one core). The GP's kernel hyperparameters are estimated again (maximum
likelihood from one start: skopt's 2 restarts made an estimate at 500 results six times
dearer) each time the data has grown by ``refit_growth`` (10 %), on a
thread of its own, while the search goes on with the previous estimate; the new one replaces
it when the data has grown by ``refit_growth`` again (a state taken meanwhile starts that
estimate again on restore). Between estimates a refit is one Cholesky factorization. At 500
results, 80 % of them pruned runs (benchmarks/proposal.py's pruned row, one BLAS thread, CPU
time), a proposal costs 0.09 s with the estimate's share (issue 47 asks <= 0.2 s); with
10,000 candidates and the restarts it cost 0.7-0.9 s.

Options: ``strategy`` (``kb``, ``cl_min``, ``cl_mean``, ``cl_max``), ``refit_growth``,
``refit_all_below`` and the keywords of
``skopt.Optimizer`` that a configuration can set, each checked here (skopt would fail late, or
not at all): ``base_estimator`` (``GP``, ``RF``, ``ET``), ``n_initial_points`` (>= 1),
``initial_point_generator``, ``acq_func`` (``gp_hedge``, ``EI``, ``PI``, ``LCB``, ``MES``),
``acq_optimizer`` (``auto``, ``sampling``, ``lbfgs``: GP only), ``n_jobs``,
``model_queue_size``, ``avoid_duplicates``, ``acq_func_kwargs`` (``xi``, ``kappa``, ``eta``,
``n_min_samples``, ``n_thompson``) and ``acq_optimizer_kwargs`` (``n_points``,
``n_restarts_optimizer``, ``n_jobs``). Defaults are skopt's, except ``model_queue_size = 1``
(skopt otherwise keeps every model it ever fitted).

``state()`` pickles the ``Optimizer`` (its data, random state and next point) with the points
in flight, the held-back failures and the generator that seeds the liar's copies. It leaves out
the fitted model (a GP holds two n x n matrices; nothing but ``Optimizer.models`` reads it
again), which ``restore`` refits on the same data with the same random state, so the state
stays small: about 17 kB (zlib-compressed) at n = 200 on the 7-parameter test space, where
the model would add 0.7 MB. The refit costs what one ``tell`` costs.

Several objectives (``objectives`` > 1, set by the study): ParEGO (:mod:`.parego`). The
optimizer holds the told points with their equal-weight scalarization (what the kernel is
estimated on); each point asked is planned on a copy refitted to the told points'
scalarization under weights drawn for that point, the points in flight believed as above,
where log EI is best (:mod:`.log_ei`: the best of the sampled candidates and of L-BFGS-B
searches near the 5 told points best under the weights, which reach a front on the bounds; EI
itself underflows away from the data). The acquisition is EI, and only EI. Each point is
planned on a scalarization of its own, so a kernel fresh at every tell buys little: the
defaults are then ``refit_all_below = 0`` and ``refit_growth = 0.25`` (about a dozen estimates
in 200 results, where one-objective defaults make over a hundred); each can still be set.

A small discrete space (every free parameter categorical, ordered, logical or an integer, at
most :data:`.finite.LARGEST` points): a proposal that is a known point (told, in flight, or
earlier in the same ask; skopt's own duplicate check knows only the told ones, and replaces
them by random points that may be known too) is replaced by a random point not yet tried, an
ask gets no more points than are left, and once every point is told the algorithm is done:
the study ends instead of evaluating a point again.

Forbidden clauses of the space: the optimizer's random draws (its initial points and the
acquisition function's candidates) are made again where one holds, the acquisition is
optimized over those candidates only (as on a conditional space: ``"lbfgs"`` is refused), and
an initial point of another generator (``sobol``, ``lhs``, ...) where one holds is replaced by
a random one.

Types: integers and floats (log scales as skopt's ``log-uniform`` prior), ordered values as an
integer position, categorical and logical values as skopt categories. A failed or non-finite
result is told as :func:`emews.plugin.failure_value` of the values seen so far (the worst
plus a tenth of their range; held back until there is a finite value), so the surrogate learns
to avoid the region without being thrown off by infinities. A run the pruner stopped is told
as :func:`emews.plugin.pruned_value` of its last reported value and the finished
values (below every finished run, above the failures), told again at each tell as the
finished values change (its entry of the optimizer's values is replaced before the refit).
Told points that
were never asked for (a resumed run's history) are told the same way; they count towards
``n_initial_points``.

Inactive parameters (a conditional space): as mlrMBO imputes an inactive value out of its
range, the surrogate sees every coordinate of an inactive parameter (one-hot columns too) as
``INACTIVE`` (-1, one range below the [0, 1] its values take), apart from every active value:
the optimizer's space (:class:`ImputingSpace`) imputes them in every transform, of the told
points and of the candidates alike. A told point's inactive parameters hold a placeholder
value in the optimizer's data, which the transform ignores. The acquisition function is
optimized over sampled candidates only (``acq_optimizer = "auto"`` is ``"sampling"``, and
``"lbfgs"`` is refused): each candidate is rated as the point it makes, whose inactive
parameters are left out, where L-BFGS would move the coordinates of inactive parameters as
if they counted.
"""

import collections
import copy
import math
import threading
import warnings

import numpy as np
import scipy.optimize
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.utils import check_random_state
from skopt.learning.gaussian_process.kernels import WhiteKernel
from skopt.acquisition import gaussian_ei, gaussian_lcb, gaussian_pi
from skopt.learning import gaussian_process as skopt_gp
from skopt.space import Space as SkoptSpace

from emews.plugin import (Algorithm, ConfigError, Invalid, Number, PrunedResult, Rule, check_choice,
                          check_flag, check_keywords, check_number, check_option, check_table,
                          failure_value, is_failure, optional_import, pack_state, point_key,
                          pruned_values, unpack_state)

from .finite import Grid
from .log_ei import local_search, trust_radius
from .parego import ObjectiveHistory
from .skopt_space import decode, dimension, encode

STRATEGIES = ("kb", "cl_min", "cl_mean", "cl_max")
ESTIMATORS = ("GP", "RF", "ET")
GENERATORS = ("random", "sobol", "halton", "hammersly", "lhs", "grid")
ACQ_FUNCS = ("gp_hedge", "EI", "PI", "LCB", "MES")   # PVRS fails on forests and mixed
# spaces; EIps and PIps need the evaluation times as a second objective
LIES = {"kb": np.min, "cl_min": np.min, "cl_mean": np.mean, "cl_max": np.max}  # kb: before a model
ONE_OBJECTIVE = {"refit_growth": 0.1, "refit_all_below": 100, "skopt": {}}
LOG_EI_STARTS = 5  # one objective: L-BFGS-B from the best told points and the best candidates
LOG_EI_XI = 0.0    # ... and log EI's margin unless xi is set (Optuna's LogEI has none)
NOISE_FLOOR = 1e-10        # one objective: the learnt noise's lower bound, but after a batch
BATCH_NOISE_FLOOR = 1e-5   # scikit-learn's (and in ParEGO; see the module's notes)
FAST_POINTS = 1000   # from refit_all_below results on: candidates at most (speed first)
SCALE_PRIOR = 0.1    # one objective, a design whose values repeat: -0.1 (l^2 + 1/l^2) per l
# ParEGO (several objectives): see the module's notes
WARM_STARTS = 5    # ParEGO: local searches start at the told points best under the weights
SEVERAL_OBJECTIVES = {"refit_growth": 0.25, "refit_all_below": 0, "skopt": {"acq_func": "EI"}}
DRAWS = 100       # forbidden clauses: rounds of random draws before the space counts as empty
INACTIVE = -1.0   # a transformed coordinate of an inactive parameter, below every value's


class SkoptSearch(Algorithm):
    """scikit-optimize's ``Optimizer`` on ask/tell, with constant liar for points in flight."""

    ready_share = 0.5   # async: the driver keeps half as many points ready as there are slots

    multiobjective = True

    def __init__(self, space, seed=None, strategy="kb", refit_growth=None, refit_all_below=None,
                 objectives=1, **skopt_options):
        super().__init__(space, seed)
        skopt = optional_import("skopt", "bayes")
        objectives = check_number("objectives", objectives, 1, integer=True)
        self.history = ObjectiveHistory(objectives) if objectives > 1 else None
        defaults = ONE_OBJECTIVE if objectives == 1 else SEVERAL_OBJECTIVES
        refit_growth = defaults["refit_growth"] if refit_growth is None else refit_growth
        if refit_all_below is None:
            refit_all_below = defaults["refit_all_below"]
        for name, value in defaults["skopt"].items():
            if skopt_options.get(name) is None:
                skopt_options[name] = value
        self.strategy = check_choice("strategy", strategy, STRATEGIES)
        self.refit_growth = float(check_number("refit_growth", refit_growth, 0))
        self.refit_all_below = int(check_number("refit_all_below", refit_all_below, 0,
                                                integer=True))
        check_keywords(skopt.Optimizer, skopt_options, exclude=(
            "dimensions", "random_state", "n_random_starts", "space_constraint"))
        _check_skopt_options(skopt_options, objectives)
        if space.conditional or space.forbidden:   # candidates only (see the module's notes)
            if skopt_options.get("acq_optimizer") == "lbfgs":
                raise ConfigError("[algorithm].acq_optimizer", "\"lbfgs\" needs a space "
                                  "without conditions or forbidden clauses (or use "
                                  "\"sampling\")", "lbfgs")
            skopt_options["acq_optimizer"] = "sampling"
        self.sample_beside = skopt_options.get("acq_optimizer", "auto") == "auto"
        skopt_options.setdefault("model_queue_size", 1)
        self.optimizer = skopt.Optimizer([dimension(p) for p in space.free],
                                         random_state=seed, **skopt_options)
        if space.conditional or space.forbidden:
            self.optimizer.space = ImputingSpace(self.optimizer.space.dimensions, space)
        self.in_flight = collections.defaultdict(list)   # point key -> skopt coordinates
        self.held_back = []                              # failures told before any value
        self.finished = []                               # values of the runs that finished
        self.pruned = {}                                 # index in yi of a pruned run -> last
        self.kernel_estimator = None                     # the GP whose kernel is re-estimated
        self.estimated_at = 0                            # data size at the last estimate
        self.estimate = None                             # a KernelEstimate under way
        self.asked_batch = False                         # last ask: several, none in flight
        self.grid = Grid.of(space)                       # a small discrete space's points
        if isinstance(self.optimizer.base_estimator_, skopt_gp.GaussianProcessRegressor):
            self.kernel_estimator = self.optimizer.base_estimator_
            self.optimizer.base_estimator_ = ReusingGP(
                **self.kernel_estimator.get_params(deep=False))
        self.log_ei = objectives == 1 and self.kernel_estimator is not None and \
            self.optimizer.acq_func in ("gp_hedge", "EI")

    def ask(self, n):
        if self.grid is not None:
            n = min(n, len(self.grid.untried(self.in_flight)))
        if n <= 0:
            return []
        if self.history is not None:
            return [p for _ in range(n) for p in self._ask_scalarized()]
        return self._ask(n)

    def _ask(self, n):
        """``n`` points planned on the optimizer (the one-objective search)."""
        running = [x for xs in self.in_flight.values() for x in xs]
        self.asked_batch = n > 1 and not running
        exact = n == 1 and len(self.optimizer.yi) < self.refit_all_below
        if not exact and (running or n == 1) and self._plans_on_candidates(running):
            xs = self._plan_on_candidates(self._planner(running, fit=False), n)
        elif self.log_ei and not running and n == 1:
            xs = [self._plan_log_ei(self._planner(running, fit=False, sampled=False))]
        elif not running and n == 1:
            xs = [self.optimizer.ask()]
        else:
            planner = self._planner(running, sampled=not exact)
            xs = []
            for i in range(n):   # skopt's ask(n), less the refit it starts with
                first = i == 0 and not running and self._fast(len(self.optimizer.yi))
                xs.append(self._plan_log_ei(planner) if first else planner.ask())
                if i + 1 < n:
                    planner._tell(xs[-1], self._lies(planner, [xs[-1]])[0])
        return self._in_flight(xs)

    def _fast(self, size):
        """True when no point is planned at a tell of ``size`` results (skopt's fit plans
        one for its ``ask``): one objective, gp_hedge or EI, from ``refit_all_below`` results
        on, where every ask is planned by :meth:`_plan_log_ei` or
        :meth:`_plan_on_candidates`."""
        return self.log_ei and size >= self.refit_all_below

    def _plan_log_ei(self, planner):
        """The point (skopt coordinates) that ``planner`` plans where log EI is best
        (:func:`.log_ei.local_search`: the best of the sampled candidates and of L-BFGS-B
        searches over the whole space from the :data:`LOG_EI_STARTS` best told points and as
        many best candidates), past the initial design; there, the design's next point."""
        if planner._n_initial_points > 0:
            return planner.ask()
        planner.models = [_refit(planner)]
        best_told = np.argsort(planner.yi)[:LOG_EI_STARTS]
        starts = planner.space.transform([planner.Xi[j] for j in best_told])
        xi = (planner.acq_func_kwargs or {}).get("xi", LOG_EI_XI)
        planner._next_x = local_search(planner, planner.models[0], starts, radius=1.0,
                                       from_candidates=LOG_EI_STARTS, xi=xi)
        return planner.ask()   # skopt's check against a point told before

    def _in_flight(self, xs):
        """The points of the skopt coordinates ``xs``, each recorded as in flight. On a
        small discrete space, one known (told, in flight, or earlier in ``xs``) is replaced
        by a random point not yet tried, or left out when none is left."""
        points = []
        for x in xs:
            if self.space.forbidden and not self.optimizer.space.allows(x):   # an initial
                # point of skopt's generator: a random one instead
                x = self.optimizer.space.rvs(random_state=self.optimizer.rng)[0]
            point = self.space.point([decode(p, v) for p, v in zip(self.space.free, x)])
            if self.grid is not None and (point_key(point) in self.in_flight
                                          or point_key(point) in self.grid.told):
                untried = self.grid.untried(self.in_flight)
                if not untried:
                    continue
                point = untried[self.rng.integers(len(untried))]
                x = _encoded(self.space, point)
            self.in_flight[point_key(point)].append(list(x))
            points.append(point)
        return points

    def done(self):
        return self.grid is not None and self.grid.exhausted()

    def tell(self, points, values):
        if self.history is not None:
            return self._tell_objectives(points, values)
        xs, ys, failed, pruned = [], [], [], []
        for point, value in zip(points, values):
            x = self._coordinates(point)
            if x is None:
                continue
            if self.grid is not None:
                self.grid.tell(point)
            if isinstance(value, PrunedResult) and math.isfinite(value.last):
                pruned.append((x, value.last))
            elif is_failure(value):
                failed.append(x)
            else:
                xs.append(x)
                ys.append(float(value))
        self.finished += ys
        told = len(self.optimizer.yi)
        for x, last in pruned:
            self.pruned[told + len(ys)] = last
            xs.append(x)
            ys.append(last)
        ranked = pruned_values(self.pruned.values(), self.finished)
        for index, value in zip(self.pruned, ranked):   # every one among the finished values
            if index < told:
                self.optimizer.yi[index] = value
            else:
                ys[index - told] = value
        self.held_back += failed
        penalty = failure_value(list(self.optimizer.yi) + ys)
        if penalty is not None and self.held_back:
            xs += self.held_back
            ys += [penalty] * len(self.held_back)
            self.held_back = []
        if xs:   # with points in flight, the next ask fits a copy anyway: no fit here
            self._estimate_kernel(len(self.optimizer.yi) + len(ys), xs, ys)
            fast = self._fast(len(self.optimizer.yi) + len(ys))
            self.optimizer.tell(xs, ys, fit=not self.in_flight and not fast)
            if fast and not self.in_flight and self.optimizer._n_initial_points <= 0:
                self.optimizer.models = [_refit(self.optimizer)]   # skopt's fit, less its ask

    def state(self):
        optimizer = copy.copy(self.optimizer)
        optimizer.models = []   # refitted by restore: a GP holds two n x n matrices
        return pack_state(self, {"optimizer": optimizer, "in_flight": dict(self.in_flight),
                                 "held_back": self.held_back, "estimated_at": self.estimated_at,
                                 "finished": self.finished, "pruned": self.pruned,
                                 "estimate": None if self.estimate is None else
                                 (self.estimate.size, self.estimate.due, self.estimate.floor),
                                 "asked_batch": self.asked_batch,
                                 "rng": self.rng.bit_generator.state,
                                 "history": self.history,
                                 "told": None if self.grid is None else self.grid.told},
                          pickled=True)

    def restore(self, state):
        data = unpack_state(self, state)
        self.optimizer, self.held_back = data["optimizer"], data["held_back"]
        self.finished = data.get("finished", list(self.optimizer.yi))
        self.pruned = data.get("pruned", {})
        self.in_flight = collections.defaultdict(list, data["in_flight"])
        self.rng.bit_generator.state = data["rng"]
        self.history = data.get("history")
        if self.grid is not None and data.get("told") is not None:
            self.grid.told = data["told"]
        self.estimated_at = data.get("estimated_at", 0)
        self.asked_batch = data.get("asked_batch", False)
        self.estimate = None
        if data.get("estimate") is not None:   # under way when the state was taken: again
            size, due, *floor = data["estimate"]
            self.estimate = self._start_estimate(self.optimizer.Xi[:size],
                                                 self.optimizer.yi[:size], due, *floor)
        if self.optimizer.Xi and self.optimizer._n_initial_points <= 0:
            self.optimizer.models = [_refit(self.optimizer)]

    def _ask_scalarized(self):
        """One point planned on a copy of the optimizer whose values are the told points'
        ParEGO scalarization under weights drawn for this point (:mod:`.parego`), the points
        in flight believed as above: where log EI is best (:func:`.log_ei.local_search`, among
        sampled candidates and searches near the :data:`WARM_STARTS` told points best under
        these weights, within the trust region the told points' improvements of the front
        have left, :func:`.log_ei.trust_radius`). The initial design is the optimizer's
        own."""
        optimizer = self.optimizer
        if optimizer._n_initial_points > 0 or not optimizer.Xi:
            return self._ask(1)
        values = [float(v) for v in self.history.scalarize(self.history.weights(self.rng))]
        running = [x for xs in self.in_flight.values() for x in xs]
        planner = self._planner(running, fit=False, sampled=False, values=values)
        planner.models = [_refit(planner)]
        best_told = np.argsort(values)[:WARM_STARTS]
        starts = planner.space.transform([optimizer.Xi[i] for i in best_told])
        improvements = self.history.improvements()[optimizer.n_initial_points_:]
        radius = trust_radius(improvements, planner.space.transformed_n_dims)
        planner._next_x = local_search(planner, planner.models[0], starts, radius)
        return self._in_flight([planner.ask()])   # skopt's check against a point told before

    def _tell_objectives(self, points, values):
        """Record told vectors; the optimizer holds the told points with their equal-weight
        scalarization (what its kernel is estimated on), in the order told."""
        xs = []
        for point, value in zip(points, values):
            x = self._coordinates(point)
            if x is not None:
                xs.append(x)
                self.history.add(value)
                if self.grid is not None:
                    self.grid.tell(point)
        if not xs:
            return
        scalars = [float(v) for v in self.history.scalarize(self.history.equal_weights())]
        self.optimizer.yi = scalars[:len(self.optimizer.yi)]
        self._estimate_kernel(len(scalars), xs, scalars[-len(xs):])
        self.optimizer.tell(xs, scalars[-len(xs):], fit=False)

    def _coordinates(self, point):
        """skopt coordinates of a told point (None for one outside the space)."""
        waiting = self.in_flight.get(point_key(point))
        if waiting:
            x = waiting.pop()
            if not waiting:
                del self.in_flight[point_key(point)]
            return x
        if not self.space.contains(point):
            return None
        return _encoded(self.space, point)

    def _planner(self, running, fit=True, sampled=True, values=None):
        """A copy of the optimizer (its told values replaced by ``values`` when given), told
        the liar's value at every point still in flight (``running``), and fitted to them
        unless not ``fit``; its acquisition function is optimized on sampled candidates only
        (not by skopt's L-BFGS) when ``sampled``."""
        planner = copy.copy(self.optimizer)   # what planning changes, copied; the model shared
        planner.Xi = list(planner.Xi)
        planner.yi = list(planner.yi if values is None else values)
        planner.models = list(planner.models)
        planner.cache_ = {}
        if hasattr(planner, "gains_"):
            planner.gains_ = planner.gains_.copy()
        planner.rng = np.random.RandomState(int(self.rng.integers(2 ** 31 - 1)))
        if sampled and self.sample_beside:   # a worker may be waiting: the best candidate
            planner.acq_optimizer = "sampling"
        if planner.yi and running:
            model = _refit(planner) if self._believes(planner) else None   # a current one
            planner.tell(running, self._lies(planner, running, model), fit=fit)
        return planner

    def _plans_on_candidates(self, running):
        """True when the points of one ask are planned on one set of candidates
        (:meth:`_plan_on_candidates`): with points in flight (async: a worker may be waiting;
        a batch waits for its slowest point anyway, and keeps skopt's fresh sample per point,
        which refines a 2-D minimum better), a GP whose kernel is fixed (estimated once at
        least), past its initial design once the points in flight are told, an acquisition
        function of skopt's Gaussian ones, optimized by sampling."""
        optimizer = self.optimizer
        return self.estimated_at > 0 and bool(optimizer.yi) and \
            optimizer._n_initial_points - len(running) <= 0 and \
            optimizer.acq_func in ("gp_hedge", "EI", "PI", "LCB") and \
            (self.sample_beside or optimizer.acq_optimizer == "sampling")

    def _plan_on_candidates(self, planner, n):
        """``n`` points by constant liar, as skopt plans them (each point the best of the
        sampled candidates by the acquisition function, ``gp_hedge`` choosing among EI, LCB
        and PI by their gains; then told the liar's value), but on one sample of candidates
        for all ``n``, with the model's predictions there updated for each lie
        (:class:`CandidatePosterior`) instead of a refit and a fresh sample per point: at
        n = 400 data and 8 points, one prediction of 10,000 candidates instead of eight."""
        model = _refit(planner)
        planner.models = [model]
        hedge = planner.acq_func == "gp_hedge"
        if hedge and hasattr(planner, "next_xs_"):   # what skopt's fit does to the gains
            planner.gains_ -= model.predict(np.vstack(planner.next_xs_))
        space = planner.space
        count = planner.n_points if len(self.optimizer.yi) < self.refit_all_below else \
            min(planner.n_points, FAST_POINTS)
        candidates = space.transform(space.rvs(n_samples=count, random_state=planner.rng))
        posterior = CandidatePosterior(model, candidates, planner.yi)
        lie = self._lie(planner)
        taken = np.zeros(len(candidates), dtype=bool)   # a fresh sample would not hold them
        xs = []
        for i in range(n):
            best = [int(np.argmin(np.where(taken, np.inf, acquisition(
                acq_func, posterior, planner.acq_func_kwargs or {}))))
                for acq_func in planner.cand_acq_funcs_]
            planner.next_xs_ = [candidates[j] for j in best]
            chosen = best[0]
            if hedge:
                logits = planner.gains_ - np.max(planner.gains_)
                odds = np.exp(planner.eta * logits)
                chosen = best[int(np.argmax(planner.rng.multinomial(1, odds / odds.sum())))]
            taken[chosen] = True
            planner._next_x = space.inverse_transform(candidates[chosen].reshape(1, -1))[0]
            xs.append(planner.ask())   # skopt's check against a point told before
            if i + 1 < n:
                value = float(posterior.mean[chosen]) if self.strategy == "kb" else lie
                posterior.tell(space.transform([xs[-1]])[0], value)
                planner.Xi.append(xs[-1])
                planner.yi.append(value)
                if hedge:
                    planner.gains_ -= posterior.mean[best]
        return xs

    def _lie(self, optimizer):
        """The constant liar's value (skopt's: 0 before any value is known)."""
        return float(LIES[self.strategy](optimizer.yi)) if optimizer.yi else 0.0

    def _believes(self, planner):
        """True when ``planner`` is told its model's mean at points in flight (``kb``, once
        past the initial design: before it there is no model to believe)."""
        return self.strategy == "kb" and planner._n_initial_points <= 0 and bool(planner.yi)

    def _lies(self, planner, xs, model=None):
        """The values ``planner`` is told at the points ``xs`` (skopt coordinates) it plans
        around: ``model``'s mean there (by default the planner's last fitted model) while it
        :meth:`_believes`, else the constant liar's value."""
        if not self._believes(planner):
            return [self._lie(planner)] * len(xs)
        model = model if model is not None else planner.models[-1]
        return [float(v) for v in model.predict(planner.space.transform(xs))]


    def _estimate_kernel(self, size, xs, ys):
        """Re-estimate the GP's kernel hyperparameters (maximum marginal likelihood with
        skopt's kernel, noise and restarts, or a posteriori where the design's values repeat) at
        every tell below ``refit_all_below`` results, and from there on once the data has
        grown by ``refit_growth`` since the last estimate; in between, the optimizer's GP
        keeps them fixed, so that fitting it is one Cholesky factorization instead of an
        optimization.

        The first estimate is made at once (the first model needs a kernel); each later one
        on a thread of its own, from the data as it was, while the search goes on with the
        kernel it has, and it takes over when the data has grown by ``refit_growth`` again
        (waiting for the thread then, if need be), as the next estimate starts: always at the
        same size, so that a seeded search proposes the same points however long the
        estimate took."""
        optimizer = self.optimizer
        growth = 0.0 if size < self.refit_all_below else self.refit_growth
        if self.estimate is not None and size >= self.estimate.due:
            self._use_kernel(self.estimate.kernel())
            self.estimate = None
        if self.kernel_estimator is None or optimizer._n_initial_points - len(ys) > 0 or \
                self.estimate is not None or size < self.estimated_at * (1 + growth):
            return
        estimate = self._start_estimate(optimizer.Xi + xs, optimizer.yi + ys,
                                        size + max(1, math.ceil(growth * size)))
        if self.estimated_at:
            self.estimate = estimate
        else:
            self._use_kernel(estimate.kernel())
        self.estimated_at = size

    def _start_estimate(self, xs, ys, due, floor=None):
        """A :class:`KernelEstimate` on the data ``xs``, ``ys``, due at data size ``due``:
        with one objective, from ``refit_all_below`` results on, one maximization of the
        likelihood, without skopt's restarts (speed first). The learnt noise is at least
        ``floor``, by default :data:`NOISE_FLOOR` (one objective, unless the last ask was a
        batch: several points, none in flight), else :data:`BATCH_NOISE_FLOOR`. With one
        objective, where values of the initial design (the first ``n_initial_points`` of
        ``ys``) repeat at points of ``xs`` apart (:func:`repeats`), the estimate is a
        posteriori (:class:`KernelPrior`)."""
        settings = self.kernel_estimator.get_params(deep=False)
        if self.history is None and len(ys) >= self.refit_all_below:
            settings["n_restarts_optimizer"] = 0
        if floor is None:
            floor = NOISE_FLOOR if self.history is None and not self.asked_batch else \
                BATCH_NOISE_FLOOR
        design = self.optimizer.n_initial_points_   # the first points told: skopt's design
        prior = self.history is None and repeats(xs[:design], ys[:design])
        return KernelEstimate(settings, self.optimizer.space.transform(xs), list(ys), due,
                              floor, prior)

    def _use_kernel(self, kernel):
        """Fit the optimizer's GP with ``kernel``, its hyperparameters fixed, from now on."""
        settings = self.kernel_estimator.get_params(deep=False)
        self.optimizer.base_estimator_ = ReusingGP(**dict(settings, kernel=kernel,
                                                          optimizer=None))


class ImputingSpace(SkoptSpace):
    """skopt's space of a conditional ``space`` whose transform sets every coordinate of a
    parameter inactive in a row to ``INACTIVE``; its inverse reads such coordinates as the
    bound nearest (a placeholder, left out of the point the row makes). Its random draws
    (the initial points and the candidates) are those of points no forbidden clause of
    ``space`` holds on."""

    def __init__(self, dimensions, space):
        super().__init__(dimensions)
        self.conditional = space
        ends = np.cumsum([d.transformed_size for d in self.dimensions])
        self.columns = [slice(end - d.transformed_size, end)
                        for d, end in zip(self.dimensions, ends)]
        tested = set().union(*(p.condition.parents() for p in space.params if p.condition))
        self.parents = [j for j, p in enumerate(space.free) if p.name in tested]

    def allows(self, x):
        """True when no forbidden clause holds on the point of skopt coordinates ``x``."""
        try:
            self.conditional.point([decode(p, v) for p, v in zip(self.conditional.free, x)])
        except ValueError:
            return False
        return True

    def rvs(self, n_samples=1, random_state=None):
        if not self.conditional.forbidden:
            return super().rvs(n_samples, random_state)
        rng = check_random_state(random_state)
        drawn = []
        for _ in range(DRAWS):
            drawn += [x for x in super().rvs(n_samples, rng) if self.allows(x)]
            if len(drawn) >= n_samples:
                return drawn[:n_samples]
        raise ConfigError(f"{self.conditional.where}: forbidden", "must leave points to draw",
                          n_samples - len(drawn))

    def transform(self, X):
        Xt = np.array(super().transform(X), dtype=float)
        free, inactive = self.conditional.free, {}   # parents' coordinates -> inactive columns
        for row, x in enumerate(X):
            key = tuple(x[j] for j in self.parents)
            if key not in inactive:
                point = self.conditional.point([decode(p, v) for p, v in zip(free, x)])
                inactive[key] = [columns for param, columns in zip(free, self.columns)
                                 if param.name not in point]
            for columns in inactive[key]:
                Xt[row, columns] = INACTIVE
        return Xt

    def inverse_transform(self, Xt):
        low, high = np.asarray(self.transformed_bounds, dtype=float).T
        return super().inverse_transform(np.clip(Xt, low, high))


def _encoded(space, point):
    """The skopt coordinates of ``point``, a placeholder (the middle value) for each inactive
    parameter."""
    return [encode(p, point[p.name] if p.name in point else p.from_unit(0.5))
            for p in space.free]


class KernelEstimate:
    """The kernel of a GP fitted by maximum marginal likelihood to ``X``, ``y`` (a posteriori,
    by :class:`KernelPrior`, if ``prior``), on a thread of its own (numpy's linear algebra runs
    without the GIL); ``due`` is the data size at which the search takes it over, and
    ``floor`` the learnt noise's lower bound (a ``WhiteKernel``'s). A length scale at its
    bound is what the kernel's bounds are for, so scikit-learn's ConvergenceWarning about it
    is silenced (a filter for the whole process, as ``warnings.catch_warnings`` cannot be
    scoped to one thread).

    The thread is not a daemon, though the ME thread that starts it is: the interpreter waits
    for a fit still under way when the study ends instead of exiting with the thread inside
    scipy's C++ (the process then aborts, "terminate called without an active exception")."""

    def __init__(self, settings, X, y, due, floor, prior=False):
        self.size, self.due, self.floor, self.prior = len(y), due, floor, prior
        self._kernel = self._error = None
        warnings.filterwarnings("ignore", category=ConvergenceWarning,
                                module="sklearn.gaussian_process")
        self._thread = threading.Thread(target=self._fit, args=(settings, X, y),
                                        name="emews-gp-kernel", daemon=False)
        self._thread.start()

    def _fit(self, settings, X, y):
        try:
            kernel = settings["kernel"] + WhiteKernel(   # skopt's noise = "gaussian"
                noise_level_bounds=(self.floor, 1e5))
            model = GaussianProcessRegressor(
                kernel=kernel, optimizer=KernelPrior(kernel) if self.prior else "fmin_l_bfgs_b",
                normalize_y=settings["normalize_y"],
                n_restarts_optimizer=settings["n_restarts_optimizer"],
                random_state=settings["random_state"])
            self._kernel = model.fit(X, y).kernel_
        except Exception as error:   # raised again on the ME thread, by kernel()
            self._error = error

    def kernel(self):
        """The fitted kernel, once the thread is done."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._kernel


def repeats(xs, ys):
    """True when a value of ``ys`` was told at two different points of ``xs`` (a plateau; a
    point told twice does not count)."""
    return len(set(ys)) < len({(tuple(x), y) for x, y in zip(xs, ys)})


class KernelPrior:
    """The optimizer (scikit-learn's ``optimizer`` callable) of a kernel estimate by maximum a
    posteriori, with Optuna's GPSampler's priors (optuna/_gp/prior.py) on the hyperparameters
    of ``kernel`` (none on the noise's ``WhiteKernel``): scikit-learn's L-BFGS-B on the
    negative log marginal likelihood plus :data:`SCALE_PRIOR` (l² + 1/l²) for each length
    scale l (in [0, 1] coordinates) and minus the log of a Gamma(2, 1) density of the signal
    variance (on normalized values)."""

    def __init__(self, kernel):
        free = [h for h in kernel.hyperparameters if not h.fixed]
        sizes = [h.n_elements for h in free]
        self.length_scales = np.repeat(["length_scale" in h.name for h in free], sizes)
        self.signal = np.repeat(["constant_value" in h.name for h in free], sizes)

    def __call__(self, obj_func, initial_theta, bounds):
        def posterior(theta):   # theta: the log of each hyperparameter
            value, gradient = obj_func(theta)
            squares, signal = np.exp(2 * theta[self.length_scales]), theta[self.signal]
            value += SCALE_PRIOR * np.sum(squares + 1 / squares) - np.sum(signal - np.exp(signal))
            gradient = gradient.copy()
            gradient[self.length_scales] += 2 * SCALE_PRIOR * (squares - 1 / squares)
            gradient[self.signal] -= 1 - np.exp(signal)
            return value, gradient
        result = scipy.optimize.minimize(posterior, initial_theta, method="L-BFGS-B", jac=True,
                                         bounds=bounds)
        return result.x, result.fun


class ReusingGP(skopt_gp.GaussianProcessRegressor):
    """skopt's GP with a faster prediction of means and standard deviations at many points.

    skopt computes the variances with a three-operand ``einsum`` that numpy runs as a plain
    loop (7 s for 10,000 candidates at n = 1000); here the same sum is a matrix product. A
    second prediction of the very same candidate array (gp_hedge rates the candidates by EI,
    PI and LCB in turn) is answered from the first.
    """

    def predict(self, X, return_std=False, return_cov=False, return_mean_grad=False,
                return_std_grad=False):
        if not return_std or return_cov or return_mean_grad or return_std_grad or \
                not hasattr(self, "X_train_"):
            return super().predict(X, return_std, return_cov, return_mean_grad,
                                   return_std_grad)
        cached = getattr(self, "_last", None)
        if cached is not None and cached[0] is X:
            return cached[1]
        points = np.asarray(X, dtype=float)
        cross = self.kernel_(points, self.X_train_)
        mean = self.y_train_std_ * cross.dot(self.alpha_) + self.y_train_mean_
        variance = self.kernel_.diag(points) - np.einsum("ij,ij->i", cross @ self.K_inv_, cross)
        std = np.sqrt(np.maximum(variance, 0.0) * self.y_train_std_ ** 2)
        self._last = (X, (mean, std))
        return mean, std


class CandidatePosterior:
    """What a fitted GP predicts at a fixed set of candidate points (transformed coordinates),
    and what it would predict there, refitted with its kernel fixed, after points are told
    one by one (:meth:`tell`): exact Gaussian conditioning on each told point, at a cost of
    O(candidates x data) per point instead of the O(candidates x data^2) of a refit and a new
    prediction.

    skopt's GP normalizes the values (``normalize_y``), and a refit normalizes them again with
    the told values included. Its mean, ``mu + w . (y - mu)`` with ``w`` the kriging weights and
    ``mu`` the values' mean, is kept as ``w . y`` and ``w . 1`` (both updated by conditioning),
    and its standard deviation as the normalized variance, scaled by the values' deviation.
    :attr:`mean` and :attr:`std` are the predictions; :meth:`predict` hands them to skopt's
    acquisition functions."""

    def __init__(self, model, candidates, y):
        self.kernel, self.train = model.kernel_, model.X_train_
        self.K_inv = model.K_inv_
        self.noise = (model.noise_ or 0.0) + model.alpha   # what a fit adds to a told point
        self.candidates = candidates
        cross = self.kernel(candidates, self.train)
        self.weights = cross @ self.K_inv                    # kriging weights of the data
        self.variance = self.kernel.diag(candidates) - np.einsum("ij,ij->i", self.weights,
                                                                 cross)
        self.y = np.asarray(y, dtype=float)
        self.targets = np.column_stack([self.y, np.ones_like(self.y)])   # w . y and w . 1
        self.kriged = self.weights @ self.targets
        self.told = np.empty((0, candidates.shape[1]))       # told points
        self.told_weights = np.empty((0, len(self.y)))      # their kriging weights
        self.told_targets = np.empty((0, 2))
        self.cross = np.empty((len(candidates), 0))        # covariances candidates x told
        self.told_cov = np.empty((0, 0))                     # covariances told x told
        self._predict()

    def tell(self, x, value):
        """Condition on ``value`` observed at ``x`` (transformed coordinates)."""
        x = np.asarray(x, dtype=float).reshape(1, -1)
        at = self.kernel(x, self.train)[0]
        weights = at @ self.K_inv
        to_candidates = self.kernel(self.candidates, x)[:, 0] - self.weights @ at
        to_told = self.kernel(self.told, x)[:, 0] - self.told_weights @ at
        own = self.kernel.diag(x)[0] - weights @ at
        self.told_cov = np.block([[self.told_cov, to_told[:, None]],
                                  [to_told[None, :], np.array([[own]])]])
        self.cross = np.column_stack([self.cross, to_candidates])
        self.told = np.vstack([self.told, x])
        self.told_weights = np.vstack([self.told_weights, weights])
        self.told_targets = np.vstack([self.told_targets, [value, 1.0]])
        self.y = np.append(self.y, value)
        self._predict()

    def _predict(self):
        kriged, variance = self.kriged, self.variance
        if len(self.told):
            residual = self.told_targets - self.told_weights @ self.targets
            gain = np.linalg.solve(self.told_cov + self.noise * np.eye(len(self.told)),
                                   self.cross.T).T
            kriged = kriged + gain @ residual
            variance = variance - np.einsum("ij,ij->i", gain, self.cross)
        mu, scale = np.mean(self.y), np.std(self.y)
        if scale < 10 * np.finfo(float).eps:   # scikit-learn's normalization leaves it alone
            scale = 1.0
        self.mean = mu + kriged[:, 0] - mu * kriged[:, 1]
        self.std = scale * np.sqrt(np.maximum(variance, 0.0))

    def predict(self, X, return_std=False):
        """The predictions at the candidates (``X`` must be them)."""
        if X is not self.candidates:
            raise ValueError("CandidatePosterior predicts at its own candidates only")
        return (self.mean, self.std) if return_std else self.mean


def acquisition(acq_func, model, options):
    """skopt's acquisition function ``acq_func`` (``EI``, ``PI`` or ``LCB``; lower is better)
    at ``model``'s candidates, with ``options`` its ``acq_func_kwargs``."""
    y_opt = np.min(model.y)
    if acq_func == "LCB":
        return gaussian_lcb(model.candidates, model, options.get("kappa", 1.96))
    function = gaussian_ei if acq_func == "EI" else gaussian_pi
    return -function(model.candidates, model, y_opt, options.get("xi", 0.01))


def _refit(optimizer):
    """The model ``optimizer`` fitted at its last tell (skopt's ``_tell``, less the rest)."""
    from sklearn.base import clone

    model = clone(optimizer.base_estimator_)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(optimizer.space.transform(optimizer.Xi), optimizer.yi)
    return model


def _check_skopt_options(options, objectives):
    """Check the value of every skopt keyword given (skopt would fail late, or not at all),
    in a study of ``objectives`` objectives."""
    estimator = options.get("base_estimator", "GP")
    estimator = check_choice("base_estimator", estimator.upper() if isinstance(estimator, str)
                             else estimator, ESTIMATORS)
    check_number("n_initial_points", options.get("n_initial_points", 10), 1, integer=True)
    check_choice("initial_point_generator", options.get("initial_point_generator", "random"),
                 GENERATORS)
    check_option("n_jobs", options.get("n_jobs", 1), JOBS)
    acq_func = check_choice("acq_func", options.get("acq_func", "gp_hedge"), ACQ_FUNCS)
    if objectives > 1 and acq_func != "EI":
        raise ConfigError("[algorithm].acq_func", "must be \"EI\" with several objectives "
                          "(ParEGO's proposals maximize log EI)", acq_func)
    acq_optimizer = check_choice("acq_optimizer", options.get("acq_optimizer", "auto"),
                                 ("auto", "sampling", "lbfgs"))
    if acq_optimizer == "lbfgs" and (estimator != "GP" or acq_func == "MES"):
        raise ConfigError("[algorithm].acq_optimizer", "\"lbfgs\" needs base_estimator = "
                          "\"GP\" and an acq_func other than MES (or use "
                          "\"sampling\")", acq_optimizer)
    check_number("model_queue_size", options.get("model_queue_size", 1), 1, integer=True)
    check_flag("avoid_duplicates", options.get("avoid_duplicates", True))
    number, count = Number(minimum=0), Number(integer=True, minimum=1)
    check_table("acq_func_kwargs", options.get("acq_func_kwargs", {}), {
        "xi": number, "kappa": number, "eta": Number(above=0), "n_min_samples": count,
        "n_thompson": count})
    check_table("acq_optimizer_kwargs", options.get("acq_optimizer_kwargs", {}), {
        "n_points": count, "n_restarts_optimizer": count, "n_jobs": JOBS})


class Jobs(Rule):
    """scikit-learn's ``n_jobs``: a count of processes, or -1 for one per core."""

    def __call__(self, value):
        if isinstance(value, bool) or not isinstance(value, int) or value == 0 or value < -1:
            raise Invalid("must be an integer >= 1, or -1 (every core)", value)
        return value


JOBS = Jobs()
