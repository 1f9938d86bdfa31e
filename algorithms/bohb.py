"""BOHB-like multi-fidelity search: a TPE-style density model proposes the configurations of
Hyperband's brackets (Falkner, Klein and Hutter, ICML 2018).

Who does what::

    [study] pruner = "hyperband"   the master's pruner decides the rungs: a run goes on or
                                   is stopped at each rung step (emews.core._pruners)
    [study] algorithm = "bohb"     this class proposes the configurations, from every
                                   result and every pruned run's learning curve

The budgets are the models' own steps (epochs): the search does not run brackets itself, it
keeps the workers busy with configurations and the pruner stops the bad ones, as ASHA-based
BOHB variants do. Any pruner works; without one it is a plain TPE-like search.

What the model learns from: every told run, ranked by the budget it reached first and its
value there second, as Optuna's TPE ranks pruned trials:

* a finished run ranks above every pruned one, by its final value among the finished;
* a pruned run (a :class:`~emews.plugin.PrunedResult`) ranks by the last step it reported
  (the rung where the pruner stopped it: a later one ranks higher) and, among the runs
  stopped at the same step, by its value there (a NaN report the worst of them);
* a failure ranks below every run.

So a value is only ever compared with the values of the same budget: a pruned run's value at
its rung with those of the runs stopped there, never with a final value.

Once ``min_points_in_model + 2`` runs are told, the best ``top_n_percent`` of them (at least
``min_points_in_model``) make the good density l(x), the rest (at least
``min_points_in_model``) the bad density g(x). Each is a product of Gaussian kernels in the
unit coordinates of :meth:`emews.plugin.Space.to_unit` (integers, ordered and categorical
values at the centre of equal bins: one kernel type for all, where BOHB uses Aitchison-Aitken
kernels for categories), with the bandwidth of Optuna's multivariate TPE in every coordinate,
``0.2 n ** (-1 / (d + 4))`` for ``n`` points in ``d`` coordinates (at least
``min_bandwidth``). A proposal is the best l/g of ``num_samples`` candidates drawn around
random good points with the good bandwidths widened by ``bandwidth_factor``; a share
``random_fraction`` of the proposals, and every one before a model can be fitted, are drawn at
random. Defaults are BOHB's (hpbandster's): ``min_points_in_model`` the free parameters + 1,
``top_n_percent`` 15, ``num_samples`` 64, ``random_fraction`` 1/3, ``bandwidth_factor`` 3,
``min_bandwidth`` 1e-3. A candidate equal to a point already told or in flight is replaced by
a random one.

Where this departs from BOHB, and why (``benchmarks/fidelity.py``'s problems with
``hyperband``, against Optuna's TPE with its ``HyperbandPruner``, 20 paired seeds, 20 runs'
epochs; median log10 regret):

* BOHB fits its model on the largest budget with enough observations alone: with a pruner
  that lets few runs finish, a handful of finished runs, good against finished runs as bad.
  Async on 8 workers it was worse on exp3 and pow3 (-1.47 and -1.30 against -1.79 and
  -1.66, worse by the paired one-sided Wilcoxon test); ranked over every run, a tie on exp3,
  pow3 and pow6.
* BOHB's bandwidth is the normal-reference one, which follows the spread of the points: a
  tight good set made it narrow, and the search settled short of the optimum. On 1 worker it
  was worse on pow3 and exp3 (-1.56 and -1.50 against -2.07 and -1.80); with this bandwidth
  -2.14 and -1.86, ties, and async on exp3, pow3 and pow6 -1.62, -1.53 and -0.79 against
  -1.79, -1.66 and -0.87, ties still.

Inactive parameters (a conditional space) are absent from a told point (their coordinates
NaN), and imputed as hpbandster's BOHB does: in the good and in the bad set apart, each
absent coordinate takes that coordinate of a random point of the set where it is present (a
uniform draw where none is). The candidates are then drawn and rated on every coordinate,
and each proposal is the point its coordinates make (:meth:`emews.plugin.Space.from_unit`
leaves the parameters it makes inactive out).

``state()`` is plain JSON: the generator's state, every told point (unit coordinates) with its
curve and its final value, and the points in flight.
"""

import math

import numpy as np

from emews.plugin import Algorithm, PrunedResult, check_number, pack_state, point_key, unpack_state


class BOHB(Algorithm):
    """Multi-fidelity model-based search: TPE-style densities over every told run, ranked by
    the budget it reached and its value there (see the module docstring)."""

    ready_share = 0.25

    def __init__(self, space, seed=None, min_points_in_model=None, top_n_percent=15,
                 num_samples=64, random_fraction=1 / 3, bandwidth_factor=3.0,
                 min_bandwidth=1e-3):
        super().__init__(space, seed)
        self.min_points = check_number("min_points_in_model", min_points_in_model, 1,
                                       integer=True, allow_none=True)
        if min_points_in_model is None:
            self.min_points = len(space.free) + 1
        self.top_n_percent = check_number("top_n_percent", top_n_percent, 1, 99)
        self.num_samples = check_number("num_samples", num_samples, 1, integer=True)
        self.random_fraction = float(check_number("random_fraction", random_fraction, 0, 1))
        self.bandwidth_factor = float(check_number("bandwidth_factor", bandwidth_factor,
                                                   above=0))
        self.min_bandwidth = float(check_number("min_bandwidth", min_bandwidth, above=0))
        self.told = []        # [unit coordinates, final value or None (pruned), [[step, value]]]
        self.in_flight = {}   # point key -> how many copies are running

    # --- ask/tell ---------------------------------------------------------------------------

    def ask(self, n):
        points = []
        for _ in range(max(n, 0)):
            point = self._propose()
            key = point_key(point)
            self.in_flight[key] = self.in_flight.get(key, 0) + 1
            points.append(point)
        return points

    def tell(self, points, values):
        for point, value in zip(points, values):
            key = point_key(point)
            if self.in_flight.get(key):
                self.in_flight[key] -= 1
                if not self.in_flight[key]:
                    del self.in_flight[key]
            elif not self.space.contains(point):
                continue
            unit = [float(u) for u in self.space.to_unit(point, inactive=math.nan)]
            if isinstance(value, PrunedResult):
                curve = [[int(step), _finite(v)] for step, v in value.curve.items()]
                self.told.append([unit, None, curve])
            else:
                self.told.append([unit, _finite(value), []])

    def state(self):
        return pack_state(self, {"rng": self.rng.bit_generator.state, "told": self.told,
                                 "in_flight": self.in_flight})

    def restore(self, state):
        data = unpack_state(self, state)
        self.rng.bit_generator.state = data["rng"]
        self.told, self.in_flight = data["told"], data["in_flight"]

    # --- the model --------------------------------------------------------------------------

    def observations(self):
        """The unit coordinates of every told run, best first (see the module docstring), or
        ``None`` while fewer than ``min_points_in_model + 2`` are told."""
        if len(self.told) < self.min_points + 2:
            return None
        return np.array([unit for unit, _, _ in sorted(self.told, key=_rank)])

    def _propose(self):
        """A point: the best l/g of sampled candidates, or a random one."""
        known = {point_key(self._point(u)) for u, _, _ in self.told} | set(self.in_flight)
        X = self.observations() if self.space.free else None
        explore = self.rng.random() < self.random_fraction
        if X is None or explore:
            return self.space.sample(self.rng)[0]
        n = len(X)
        n_good = max(self.min_points, self.top_n_percent * n // 100)
        n_bad = max(self.min_points, (100 - self.top_n_percent) * n // 100)
        good, bad = X[:n_good], X[n_good:n_good + n_bad]
        if len(bad) == 0:
            bad = X[-self.min_points:]
        good, bad = self._imputed(good), self._imputed(bad)
        good_bw, bad_bw = self._bandwidths(good), self._bandwidths(bad)
        centres = good[self.rng.integers(len(good), size=self.num_samples)]
        candidates = _truncated_normal(self.rng, centres, good_bw * self.bandwidth_factor)
        score = _log_density(candidates, good, good_bw) - _log_density(candidates, bad, bad_bw)
        for best in np.argsort(-score):   # the best candidate no forbidden clause excludes
            try:
                point = self._point(candidates[best])
            except ValueError:
                continue
            return self.space.sample(self.rng)[0] if point_key(point) in known else point
        return self.space.sample(self.rng)[0]

    def _imputed(self, X):
        """``X`` with each absent (NaN) coordinate that of a random row where it is present,
        or uniform where none is."""
        absent = np.isnan(X)
        if not absent.any():
            return X
        X = X.copy()
        for j in np.flatnonzero(absent.any(axis=0)):
            present = X[~absent[:, j], j]
            count = int(absent[:, j].sum())
            X[absent[:, j], j] = (self.rng.choice(present, count) if len(present)
                                  else self.rng.random(count))
        return X

    def _point(self, unit):
        """The point of unit coordinates ``unit`` (absent ones, NaN, taken as inactive)."""
        return self.space.from_unit(np.where(np.isnan(unit), 0.5, unit))

    def _bandwidths(self, X):
        """The bandwidth of every coordinate: ``0.2 n ** (-1 / (d + 4))`` for ``n`` rows and
        ``d`` coordinates (Scott's rule on the unit range, as Optuna's multivariate TPE), at
        least ``min_bandwidth``."""
        n, d = X.shape
        return np.full(d, max(0.2 * n ** (-1.0 / (d + 4)), self.min_bandwidth))


def _rank(told):
    """The sort key of a told run ``[unit, final, curve]``: finished runs first, by their final
    value, then pruned runs by the last step they reported (the latest first) and their value
    there, then failures."""
    _, final, curve = told
    if final is not None:
        return (0, 0, final)
    if not curve:
        return (2, 0, 0.0)
    step, value = max(curve, key=lambda reported: reported[0])
    return (1, -step, math.inf if value is None else value)


def _finite(value):
    """``value`` as a float, ``None`` when it is missing or not finite."""
    return None if value is None or not math.isfinite(value) else float(value)


def _truncated_normal(rng, centres, scales):
    """One draw per row of ``centres``: each coordinate normal around it, kept in [0, 1]
    (redrawn where it fell outside, then clipped)."""
    draws = centres + rng.normal(size=centres.shape) * scales
    for _ in range(10):
        outside = (draws < 0) | (draws > 1)
        if not outside.any():
            break
        draws = np.where(outside, centres + rng.normal(size=centres.shape) * scales, draws)
    return np.clip(draws, 0.0, 1.0)


def _log_density(points, data, bandwidths):
    """The log density at ``points`` of the product-Gaussian kernel density of ``data``."""
    z = (points[:, None, :] - data[None, :, :]) / bandwidths
    log_kernels = -0.5 * np.sum(z * z, axis=2) - np.sum(np.log(bandwidths))
    top = log_kernels.max(axis=1, keepdims=True)
    return (top[:, 0] + np.log(np.exp(log_kernels - top).mean(axis=1)))
