"""Model-based optimization in the style of R's mlrMBO, on scikit-learn's random forest.

::

    ask(n) --> initial design left?  --> Latin-hypercube points
           --> fewer than 2 values?   --> wait for the design (random points if it all failed)
           --> otherwise: fit the forest on every result (failures imputed) and on the points
               in flight (believed at the forest's mean there), then find each proposal by
               focus search on the infill criterion (one point: EI or CB; several: one
               criterion, each point believed in turn; or qLCB; or constant liar)
    tell   --> results join the data; told points never asked for (a resumed run's history)
               join it the same way and count towards the initial design

Design choices (mlrMBO's defaults unless said otherwise):

* Coordinates: every free parameter in [0, 1] by :meth:`emews.plugin.Space.to_unit` (numbers on
  their own or log scale; integers, ordered and categorical values at the centre of equal
  bins). A tree can isolate any category with two splits, so no one-hot encoding is needed.
* Inactive parameters (a conditional space): as mlrMBO imputes an inactive numeric value out
  of its range and an inactive discrete one as a level of its own, the surrogate sees an
  inactive parameter's coordinate as ``INACTIVE`` (-1, one range below every value), apart
  from every active value. Focus search samples every coordinate, and the criterion rates
  each candidate as the point it makes (:meth:`emews.plugin.Space.from_unit` leaves its
  inactive parameters out), so a proposal holds only active parameters.
* Initial design: ``design_size`` points (default 4 per free parameter) of a Latin hypercube
  (SciPy's, improved for centred discrepancy, where mlrMBO uses a maximin LHS); every value of
  an integer or categorical parameter gets an equal share.
* Surrogate: a random forest (``n_trees`` 100 trees, where R's randomForest grows 500;
  ``max_features`` a third of the parameters, as R's; ``min_samples_leaf`` 1, where R's is 5;
  ``split = "random"``: each candidate parameter of a node is cut at a random threshold and
  the best of those cuts taken, as in extremely randomized trees (Geurts, Ernst and Wehenkel,
  2006), where R's randomForest searches every threshold (``"best"``); each measured in
  algorithms/README.md). Random cuts average into a smoother surface than the best cuts of
  100 bootstrap samples of the same few points: at 100 evaluations (10 paired seeds), median
  log10 regret on Ackley-5 1.18 -> 0.91 sequentially (8 seeds of 10 better, Wilcoxon
  p = 0.027) and 1.25 -> 1.00 async (p = 0.01), and no problem significantly worse. Its
  standard error is the jackknife-after-bootstrap of Wager, Hastie and Efron (2014), as mlr's
  ``se.method = "jackknife"``, without the Monte-Carlo bias correction (which can turn the
  variance negative with few trees; the uncorrected one errs towards exploring);
  ``se_method = "bootstrap"`` uses the spread of the trees' predictions instead.
* Refits: the forest is grown again once the data has grown by ``rebuild_growth`` (5 %) since
  it was last grown, where mlrMBO grows it at every proposal; in between, results told since
  (and the points in flight, with the lie) are dropped into its leaves, which updates their
  means and the jackknife without new splits.
* Failures and non-finite results are imputed as :func:`emews.plugin.failure_value` (the
  worst value plus a tenth of the range), so the model steers away from them. A run the pruner
  stopped is imputed as :func:`emews.plugin.pruned_value` of its last reported value
  (within the worst finished value and the failures' value; its last value itself while none
  has finished), imputed again at every fit as the finished values change.
* Infill criteria: ``cb`` (lower confidence bound mean - lambda * se; ``cb_lambda`` defaults to
  1 for purely numeric spaces and 2 otherwise) or ``ei`` (expected improvement).
* Infill optimizer: focus search. ``focus_restarts`` times: ``focus_points`` random points in
  the current region, keep the best, shrink every numeric range to half its width around it
  and drop a random other value of every categorical parameter; ``focus_maxit`` rounds.
* The kriging believer: a point whose value is not known yet is dropped into the forest's
  leaves at the forest's own mean there, which leaves the mean where it was and shrinks the
  standard error around it, so the next proposal looks for uncertainty elsewhere. The lie
  (``cl_lie``, the minimum of the values so far, as mlrMBO's ``cl.lie = min``; ``mean`` and
  ``max`` measured no different) pulls a forest's mean down around the point instead, which
  draws the next proposal towards it.
* Several points at once (``multipoint``): ``kb`` (the default) optimizes the one infill
  criterion for every point, each believed before the next is found; ``qlcb`` (mlrMBO's
  ``multipoint.method = "cb"``, ours before) optimizes CB once per point with a lambda drawn
  from Exp(1) on one model; ``cl`` (constant liar) optimizes the one criterion, each point
  told the lie before the next. ``propose_points`` caps the points per iteration.
* Points in flight (``pending``): ``believer`` (the default) or ``lie`` (ours before), so the
  next proposal is planned around them. Budget 100, 10 paired seeds (algorithms/README.md):
  the believer and ``kb`` are better than the lie and ``qlcb`` in async mode on Hartmann-6
  and Ackley-5 and in batch on Branin, and nowhere worse. Several objectives (ParEGO) keep
  the lie for both. A proposal equal to a known point is replaced by a random one.
* A small discrete space (every free parameter categorical, ordered, logical or an integer,
  at most :data:`.finite.LARGEST` points): the infill criterion is rated at every point not
  yet told or in flight and the best taken (no focus search), a design point already known is
  replaced by a random untried one, an ask gets no more points than are left, and once every
  point is told the algorithm is done: the study ends instead of evaluating a point again.
* Forbidden clauses of the space: focus search rates a candidate where one holds as the
  worst, and a design point where one holds is drawn again, so no proposal is forbidden.
* ``max_budget`` (evaluations in all, the design included; mlrMBO's ``max.evals``) and
  ``max_iterations`` (model-based rounds; mlrMBO's ``iters``) make the algorithm done.
* ``max_features`` is the share of the parameters each split considers, in (0, 1] (an integer
  1 means all of them, not one parameter as in scikit-learn).
* ``y_transform`` (one objective): the values the forest learns (its splits, leaf means and
  the lie), a monotone transform of the told values (failures and pruned runs imputed
  first), made again at every proposal from all of them: ``log`` (the default,
  ``log(y - min + range / 100)``: mlrMBO's ``trafo.y.fun = trafoLog``, shifted so that it
  takes any values); ``none`` (mlrMBO's default, and ours on a space with a categorical or
  logical parameter until ``log`` was measured there. The quality part's digits network,
  10 paired seeds, budget 100, median log10 regret none -> log: sequential -1.72 -> -1.95
  (better, p = 0.001; level with Optuna's TPE, -2.23, p worse 0.080, where none was worse,
  p = 0.001), batch of 8 -1.70 -> -1.85 (better, p = 0.010; level with TPE's -1.97), async
  -1.77 -> -1.90 (better, p = 0.049; still worse than TPE's -2.22). The conditional part's
  branches, 40 evaluations: -0.09 -> -0.40 (p = 0.024), flattened -0.04 -> -0.63
  (p = 0.004); its models problem level. Bayesmark's lasso-diabetes-mae, 40 evaluations:
  lower on 5 of 6 seeds);
  ``rank`` (each value's rank over their count); ``power`` (Yeo-Johnson of the standardized
  values, HEBO's output warping). The forest's splits then separate the good region from
  the merely bad rather than the bad from the terrible. Budget 100, 4 paired seeds, median
  log10 regret none -> log: sequential Branin -1.52 -> -2.56, Hartmann-6 -0.57 -> -0.90,
  Ackley-5 1.00 -> 0.70, Rosenbrock-4 0.89 -> 0.65, Levy-6 0.40 -> 0.78 (worse on every
  seed); async (8 workers) Branin -0.67 -> -2.33, Hartmann-6 -0.66 -> -0.64, Rosenbrock-4
  1.16 -> 0.69 (algorithms/README.md has the other transforms beside it).
* Several objectives (``objectives`` > 1, set by the study): ParEGO (:mod:`.parego`). The
  forest is grown on the equal-weight scalarization of the told vectors; each proposal draws
  its own weights and puts the told points' values under them in the same leaves
  (:meth:`Surrogate.relabeled`) before the infill criterion is optimized. The default
  ``design_size`` is then at most 20: each scalarization needs model-based proposals more
  than a large design (ZDT1 with 30 variables at 200 evaluations, 2 seeds: hypervolume 8.82
  with 20 design points against 8.68 with 120).
* ``state()`` is plain JSON: the generator's state, every told point (unit coordinates) with its
  value, the points in flight, the rest of the design, the iteration count and the size and
  seed the forest was grown with, which a restore grows again: about 8 kB
  (zlib-compressed) at n = 200 on the 7-parameter test space.
"""

import copy
import math

import numpy as np

from emews.plugin import (Algorithm, Categorical, Logical, Ordered, PrunedResult, check_choice,
                          check_number, failure_value, optional_import, pack_state, point_key,
                          pruned_values, unpack_state)

from .finite import Grid
from .parego import ObjectiveHistory

INFILL = ("cb", "ei")
LIES = {"min": np.min, "mean": np.mean, "max": np.max}
MULTIPOINT = ("kb", "qlcb", "cl")
PENDING = ("believer", "lie")
SE_METHODS = ("jackknife", "bootstrap")
SPLITS = ("random", "best")
Y_TRANSFORMS = ("none", "power", "rank", "log")
LOG_OFFSET = 0.01   # y_transform "log": log(y - min + LOG_OFFSET * range)
INACTIVE = -1.0   # the coordinate of an inactive parameter, below every value's


class MBO(Algorithm):
    """mlrMBO-like sequential model-based optimization with a random-forest surrogate."""

    ready_share = 0.25  # async: the driver keeps a quarter as many points ready as slots
    multiobjective = True

    def __init__(self, space, seed=None, design_size=None, infill="cb", cb_lambda=None,
                 multipoint="kb", cl_lie="min", propose_points=None, max_budget=None,
                 max_iterations=None,
                 n_trees=100, max_features=1 / 3, min_samples_leaf=1, split="random",
                 se_method="jackknife",
                 focus_points=1000, focus_maxit=5, focus_restarts=1, rebuild_growth=0.05,
                 y_transform=None, objectives=1, pending="believer"):
        super().__init__(space, seed)
        optional_import("sklearn.ensemble", "mbo")
        objectives = check_number("objectives", objectives, 1, integer=True)
        self.history = ObjectiveHistory(objectives) if objectives > 1 else None
        dimension = len(space.free)
        self.design_size = check_number("design_size", design_size, 0, integer=True,
                                        allow_none=True)
        if design_size is None:   # several objectives: at most 20 (see the module's notes)
            self.design_size = 4 * dimension if objectives == 1 else min(4 * dimension, 20)
        self.infill = check_choice("infill", infill, INFILL)
        numeric = all(p.kind in ("int", "float") for p in space.free)
        self.cb_lambda = check_number("cb_lambda", cb_lambda, 0, allow_none=True)
        if cb_lambda is None:
            self.cb_lambda = 1.0 if numeric else 2.0
        self.multipoint = check_choice("multipoint", multipoint, MULTIPOINT)
        self.lie = LIES[check_choice("cl_lie", cl_lie, list(LIES))]
        self.pending = check_choice("pending", pending, PENDING)
        self.propose_points = check_number("propose_points", propose_points, 1, integer=True,
                                           allow_none=True)
        self.max_budget = check_number("max_budget", max_budget, 1, integer=True,
                                       allow_none=True)
        self.max_iterations = check_number("max_iterations", max_iterations, 1, integer=True,
                                           allow_none=True)
        self.forest = {"n_estimators": check_number("n_trees", n_trees, 2, integer=True),
                       "max_features": float(check_number("max_features", max_features,
                                                          maximum=1, above=0)),
                       "min_samples_leaf": check_number("min_samples_leaf", min_samples_leaf,
                                                        1, integer=True),
                       "splitter": check_choice("split", split, SPLITS)}
        self.se_method = check_choice("se_method", se_method, SE_METHODS)
        self.y_transform = check_choice("y_transform", "log" if y_transform is None
                                        else y_transform, Y_TRANSFORMS)
        self.rebuild_growth = float(check_number("rebuild_growth", rebuild_growth, 0))
        self.focus = FocusSearch(space, check_number("focus_points", focus_points, 1,
                                                     integer=True),
                                 check_number("focus_maxit", focus_maxit, 1, integer=True),
                                 check_number("focus_restarts", focus_restarts, 1,
                                              integer=True))
        self.X, self.y = [], []        # told points (unit coordinates) and their values
        self.pruned = {}               # index in y of a pruned run (NaN there) -> last value
        self.in_flight = {}            # point key -> [unit coordinates], asked and not told
        self.design = None             # initial-design points still to propose
        self.iterations = 0
        self.built = None              # (told points, seed) the forest was grown from
        self.model = None
        self.grid = Grid.of(space)     # a small discrete space's points (None for others)
        if self.grid is not None:      # their unit coordinates, to rate every one
            self.grid_units = {key: _unit(space, p) for key, p in self.grid.points.items()}

    # --- ask/tell ---------------------------------------------------------------------------

    def ask(self, n):
        n = min(n, self._budget_left())
        if self.grid is not None:
            n = min(n, len(self.grid.untried(self.in_flight)))
        if n <= 0 or self.done():
            return []
        if self.design is None:
            self.design = self._initial_design()
        points, self.design = self.design[:n], self.design[n:]
        wanted = n - len(points)
        if wanted and sum(np.isfinite(self.y)) + len(self.pruned) < 2:
            if not points and not self.in_flight:   # the design failed: explore at random
                points = self.space.sample(self.rng, wanted)
        elif wanted and (self.max_iterations is None or self.iterations < self.max_iterations):
            self.iterations += 1
            points += self._propose(min(wanted, self.propose_points or wanted))
        if self.grid is not None:
            points = self._fresh(points)
        for point in points:
            self.in_flight.setdefault(point_key(point), []).append(_unit(self.space, point))
        return points

    def tell(self, points, values):
        for point, value in zip(points, values):
            key = point_key(point)
            if self.in_flight.get(key):
                unit = self.in_flight[key].pop()
                if not self.in_flight[key]:
                    del self.in_flight[key]
            elif self.space.contains(point):
                unit = _unit(self.space, point)
            else:
                continue
            if isinstance(value, PrunedResult) and math.isfinite(value.last):
                self.pruned[len(self.y)] = value.last
            self.X.append(unit)
            self.y.append(float(value))
            if self.grid is not None:
                self.grid.tell(point)
            if self.history is not None:
                self.history.add(value)

    def done(self):
        if self._budget_left() <= 0 or (self.grid is not None and self.grid.exhausted()):
            return True
        return (self.max_iterations is not None and self.iterations >= self.max_iterations
                and self.design is not None and not self.design)

    def state(self):
        return pack_state(self, {"rng": self.rng.bit_generator.state, "X": self.X, "y": self.y,
                                 "in_flight": self.in_flight, "design": self.design,
                                 "iterations": self.iterations, "built": self.built,
                                 "pruned": list(self.pruned.items()),
                                 "history": None if self.history is None else
                                 self.history.to_json()})

    def restore(self, state):
        data = unpack_state(self, state)
        self.rng.bit_generator.state = data["rng"]
        self.X, self.y, self.in_flight = data["X"], data["y"], data["in_flight"]
        self.design, self.iterations = data["design"], data["iterations"]
        self.pruned = {int(i): last for i, last in data.get("pruned", [])}
        self.built = None if data.get("built") is None else tuple(data["built"])
        self.model = None
        if self.grid is not None:
            self.grid.told = {point_key(self.space.from_unit(u)) for u in self.X}
        if data.get("history") is not None:
            self.history = ObjectiveHistory.from_json(data["history"])

    # --- internals --------------------------------------------------------------------------

    def _budget_left(self):
        if self.max_budget is None:
            return np.inf
        return self.max_budget - len(self.y) - sum(map(len, self.in_flight.values()))

    def _initial_design(self):
        """A Latin hypercube of the design points not yet covered by told results."""
        from scipy.stats import qmc

        size = max(self.design_size - len(self.y), 0)
        if size == 0 or not self.space.free:
            return []
        sampler = qmc.LatinHypercube(len(self.space.free), optimization="random-cd",
                                     rng=self.rng)
        return [_allowed(self.space, u) or self.space.sample(self.rng)[0]
                for u in sampler.random(size)]

    def _data(self):
        """Coordinates and values to fit: failures imputed, the points in flight told the
        forest's mean there (``pending = "believer"``) or the lie."""
        y = _warp(self._values(len(self.y)), self.y_transform)
        running = [u for units in self.in_flight.values() for u in units]
        X = np.array(self.X + running)
        if running and self.pending == "believer":
            believed = self._model(X[:len(y)], y).predict(X[len(y):])[0]
        else:
            believed = np.full(len(running), self.lie(y))
        return X, np.concatenate([y, believed])

    def _values(self, count):
        """The first ``count`` told values as the forest learns them: pruned runs and
        failures imputed."""
        told = self.y[:count]
        values = np.array(told)
        pruned = [index for index in self.pruned if index < count]
        values[pruned] = pruned_values([self.pruned[index] for index in pruned], told)
        values[~np.isfinite(values)] = failure_value(told)
        return values

    def _model(self, X, y):
        """The forest grown on the first ``built`` told points (grown again once the data has
        grown by ``rebuild_growth`` since), with the later rows of ``X`` and ``y`` (told since,
        and in flight) dropped into its leaves. With several objectives its leaves' values
        are those of ``y`` (this proposal's scalarization), the splits those it was grown
        with (the equal-weight scalarization of the points it was grown on)."""
        told = len(self.y)
        if self.built is None or told - self.built[0] >= max(
                1, math.ceil(self.rebuild_growth * self.built[0])):
            self.built, self.model = (told, int(self.rng.integers(2 ** 31 - 1))), None
        count, seed = self.built
        if self.model is None:
            if self.history is None:
                values = y[:count]
            else:
                grown = ObjectiveHistory(self.history.objectives, self.history.vectors[:count],
                                         self.history.violations[:count])
                values = grown.scalarize(grown.equal_weights())
            self.model = Surrogate(np.array(self.X[:count]), values, self.forest,
                                   self.se_method, np.random.default_rng(seed))
        model = self.model.relabeled(y[:count])
        return model.with_points(X[count:], y[count:])

    def _propose(self, count):
        if self.history is not None:
            units = []
            for _ in range(count):
                unit = self._propose_scalarized(units)
                if unit is None:   # a small discrete space, every point known
                    break
                units.append(unit)
            return [self.space.from_unit(u) for u in units]
        X, y = self._data()
        chosen = []
        model = self._model(X, y)
        for i in range(count):
            if count > 1 and self.multipoint == "qlcb":
                criterion = model.confidence_bound(self.rng.exponential(1.0))
            else:
                criterion = self._criterion(model, y.min())
            unit = self._optimize(criterion, X)
            if unit is None:   # a small discrete space, every point known
                break
            chosen.append(self.space.from_unit(unit))
            if self.multipoint == "kb":
                value = float(model.predict(unit[None])[0][0])
            else:
                value = self.lie(y[:len(self.y)])
            X, y = np.vstack([X, unit]), np.append(y, value)
            if self.multipoint != "qlcb" and i + 1 < count:
                model = model.with_points([unit], [value])
        return chosen

    def _propose_scalarized(self, chosen):
        """The unit coordinates of one point by the infill criterion, the forest's leaves
        holding the told points' ParEGO scalarization under weights drawn for this point
        (:mod:`.parego`), the points in flight and those ``chosen`` in this ask told the
        lie."""
        y = self.history.scalarize(self.history.weights(self.rng))
        running = [u for units in self.in_flight.values() for u in units] + \
            [list(u) for u in chosen]
        X = np.array(self.X + running)
        model = self._model(X, np.concatenate([y, np.full(len(running), self.lie(y))]))
        return self._optimize(self._criterion(model, y.min()), X)

    def _fresh(self, points):
        """``points`` with each known one (told, in flight, or earlier among them) replaced
        by a random point of the grid not yet tried, or left out when none is left."""
        fresh, busy = [], set(self.in_flight)
        for point in points:
            if point_key(point) in busy or point_key(point) in self.grid.told:
                untried = self.grid.untried(busy)
                if not untried:
                    continue
                point = untried[self.rng.integers(len(untried))]
            fresh.append(point)
            busy.add(point_key(point))
        return fresh

    def _criterion(self, model, best):
        """The infill criterion of one point: EI below ``best``, or CB."""
        if self.infill == "ei":
            return model.expected_improvement(best)
        return model.confidence_bound(self.cb_lambda)

    def _optimize(self, criterion, X):
        """The unit coordinates that focus search finds best by ``criterion``; a random
        point's instead when they are those of a row of ``X`` (a known point). On a small
        discrete space, the best of every point not in ``X`` (None when none is left)."""
        if self.grid is not None:
            known = set(map(tuple, np.asarray(X).tolist()))
            left = [u for u in self.grid_units.values() if tuple(u) not in known]
            return np.array(left[int(np.argmin(criterion(np.array(left))))]) if left else None
        unit = self.focus.minimize(criterion, self.rng)
        if unit is None or _seen(unit, X):
            unit = np.array(_unit(self.space, self.space.sample(self.rng)[0]))
        return unit


class Surrogate:
    """A random forest with a standard error for each prediction, whose leaves take new points.

    The trees are scikit-learn's regression trees, each grown on a bootstrap sample (as
    scikit-learn's forest does it: the whole data with the sample's counts as weights). Each
    tree keeps the sum and weight of the values in each of its nodes, so :meth:`with_points`
    can drop more points into the leaves (a Poisson(1) number of copies per tree, the share a
    bootstrap would have given them) without growing new splits: the cheap update between two
    rebuilds, and the constant liar's update for the points in flight.
    """

    def __init__(self, X, y, forest, se_method, rng):
        from sklearn.tree import DecisionTreeRegressor

        X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
        self.se_method, self.seed = se_method, int(rng.integers(2 ** 31 - 1))
        draws = np.random.default_rng(self.seed)
        trees = forest["n_estimators"]
        self.counts = np.empty((trees, len(y)), dtype=np.int32)   # in-bag copies of each point
        self.trees, self.sums, self.weights = [], [], []
        self.grown_on, self._leaves = X.astype(np.float32), None
        for b in range(trees):
            self.counts[b] = np.bincount(draws.integers(len(y), size=len(y)), minlength=len(y))
            tree = DecisionTreeRegressor(splitter=forest["splitter"],
                                         max_features=forest["max_features"],
                                         min_samples_leaf=forest["min_samples_leaf"],
                                         random_state=int(draws.integers(2 ** 31 - 1)))
            tree = tree.fit(X, y, sample_weight=self.counts[b]).tree_
            self.trees.append(tree)
            self.weights.append(tree.weighted_n_node_samples.copy())
            self.sums.append(tree.value[:, 0, 0] * self.weights[-1])
        self._gram = None

    def relabeled(self, y):
        """A copy of this model whose nodes hold the values ``y`` of the points it was grown
        on in place of theirs (the same splits)."""
        if self._leaves is None:   # each point's leaf in each tree
            self._leaves = [tree.apply(self.grown_on) for tree in self.trees]
        model = copy.copy(self)
        y = np.asarray(y, dtype=float)
        model.sums = [np.bincount(leaves, weights=counts * y, minlength=len(sums))
                      for leaves, counts, sums in zip(self._leaves, self.counts, self.sums)]
        return model

    def with_points(self, X, y):
        """A copy of this model with the points ``X`` (values ``y``) dropped into its leaves."""
        model = copy.copy(self)
        if not len(y):
            return model
        X = np.asarray(X, dtype=np.float32)
        draws = np.random.default_rng([self.seed, self.counts.shape[1], len(y)])
        extra = draws.poisson(1.0, (len(self.trees), len(y)))
        model.sums, model.weights = [s.copy() for s in self.sums], [w.copy() for w in self.weights]
        for tree, sums, weights, copies in zip(self.trees, model.sums, model.weights, extra):
            leaves = tree.apply(X)
            np.add.at(sums, leaves, copies * np.asarray(y, dtype=float))
            np.add.at(weights, leaves, copies)
        model.counts, model._gram = np.hstack([self.counts, extra]), None
        return model

    def predict(self, X):
        """Mean and standard error at each row of ``X``."""
        X = np.asarray(X, dtype=np.float32)   # what the fitted trees read, without checks
        trees = np.empty((len(self.trees), len(X)))
        for b, (tree, sums, weights) in enumerate(zip(self.trees, self.sums, self.weights)):
            leaves = tree.apply(X)
            trees[b] = sums[leaves] / weights[leaves]
        mean = trees.mean(axis=0)
        if self.se_method == "bootstrap":
            return mean, trees.std(axis=0)
        # jackknife-after-bootstrap: sum over points i of (mean of the trees grown without i
        # - mean)^2, written as d' G d with d the trees' deviations, so it costs trees^2 per row
        deviations = trees - mean
        gram, used = self._jackknife_gram()
        variance = (used - 1) / used * np.einsum("bm,bm->m", deviations, gram @ deviations)
        return mean, np.sqrt(np.maximum(variance, 0.0))

    def _jackknife_gram(self):
        """``A A'`` where ``A[b, i]`` is 1/(trees without point i) if tree b lacks point i."""
        if self._gram is None:
            out_of_bag = self.counts == 0
            without = out_of_bag.sum(axis=0)
            usable = without > 0
            share = out_of_bag[:, usable] / without[usable]
            self._gram = (share @ share.T, max(int(usable.sum()), 1))
        return self._gram

    def confidence_bound(self, lam):
        """The criterion mean - lam * se (to minimize)."""
        def criterion(X):
            mean, se = self.predict(X)
            return mean - lam * se
        return criterion

    def expected_improvement(self, best):
        """The criterion -EI below ``best`` (to minimize)."""
        from scipy.stats import norm

        def criterion(X):
            mean, se = self.predict(X)
            se = np.maximum(se, 1e-12)
            z = (best - mean) / se
            return -((best - mean) * norm.cdf(z) + se * norm.pdf(z))
        return criterion


class FocusSearch:
    """mlrMBO's focus search over unit coordinates of a mixed space."""

    def __init__(self, space, points, maxit, restarts):
        self.space, self.points, self.maxit, self.restarts = space, points, maxit, restarts
        self.choices = [_choices(p) for p in space.free]   # None for numeric parameters

    def minimize(self, criterion, rng):
        """The unit coordinates of the best point found (its inactive ones ``INACTIVE``);
        None when every candidate was forbidden."""
        best, best_value = None, np.inf
        for _ in range(self.restarts):
            lower, upper = np.zeros(len(self.choices)), np.ones(len(self.choices))
            allowed = [None if c is None else list(c) for c in self.choices]
            for _ in range(self.maxit):
                X = self._sample(lower, upper, allowed, rng)
                rated, possible = self._imputed(X)
                values = np.where(possible, criterion(rated), np.inf)
                i = int(np.argmin(values))
                if values[i] < best_value:
                    best, best_value = rated[i], values[i]
                width = (upper - lower) / 4
                lower, upper = np.maximum(lower, X[i] - width), np.minimum(upper, X[i] + width)
                for j, options in enumerate(allowed):
                    if options is not None and len(options) > 1:
                        others = [o for o in options if o != X[i, j]]
                        options.remove(others[rng.integers(len(others))])
        return best

    def _sample(self, lower, upper, allowed, rng):
        X = lower + rng.random((self.points, len(lower))) * (upper - lower)
        for j, (param, options) in enumerate(zip(self.space.free, allowed)):
            if options is not None:
                X[:, j] = rng.choice(options, self.points)
            elif param.kind in ("int", "ordered"):   # snap to the values' bin centres
                X[:, j] = [param.to_unit(param.from_unit(u)) for u in X[:, j]]
        return X


    def _imputed(self, X):
        """``X`` with the coordinates of the parameters inactive in each row ``INACTIVE``,
        and which rows make a point no forbidden clause holds on."""
        if not (self.space.conditional or self.space.forbidden):
            return X, np.ones(len(X), dtype=bool)
        points = [_allowed(self.space, row) for row in X]
        return (np.array([row if p is None else _unit(self.space, p)
                          for row, p in zip(X, points)]),
                np.array([p is not None for p in points]))


def _warp(y, how):
    """The values ``y`` as the forest learns them: unchanged, or by ``how``."""
    if how == "none" or len(y) < 3 or np.ptp(y) == 0:
        return y
    if how == "rank":
        from scipy.stats import rankdata
        return rankdata(y) / len(y)
    if how == "log":
        return np.log(y - y.min() + LOG_OFFSET * np.ptp(y))
    from scipy.stats import yeojohnson
    z = (y - y.mean()) / y.std()
    return yeojohnson(z)[0]


def _allowed(space, unit):
    """The point of the unit coordinates ``unit``; None where a forbidden clause holds."""
    try:
        return space.from_unit(unit)
    except ValueError:
        return None


def _unit(space, point):
    """The unit coordinates of ``point``, those of its inactive parameters ``INACTIVE``."""
    return space.to_unit(point, inactive=INACTIVE)


def _choices(param):
    """Unit coordinates of an unordered parameter's values; None for numeric ones."""
    if isinstance(param, Logical):
        return (0.0, 1.0)
    if isinstance(param, Categorical) and not isinstance(param, Ordered):
        return tuple(param.to_unit(v) for v in param.values)
    return None


def _seen(unit, X):
    """True when ``unit`` is (numerically) one of the rows of ``X``."""
    return len(X) > 0 and bool(np.any(np.all(np.abs(X - unit) < 1e-9, axis=1)))
