"""Population-based training (Jaderberg et al., 2017), with PB2's explore (Parker-Holder et
al., NeurIPS 2020): a population of members trained in segments, the worst ones taking the
weights of the best and a perturbation of their hyperparameters.

Each point this search proposes is one **segment** of one member: the member's
hyperparameters, and a record under :data:`emews.plugin.SEGMENT` (:mod:`emews.core._segments`)
naming the checkpoint to start from and the step to train to::

    ask: member 3, its last segment m3s4 at step 20, told 0.41
      in the bottom quantile  -> exploit: {"name": "m3s5", "parent": "m3s4", "donor": "m0s4",
                                 "start": 20, "until": 25} and explore(m0's hyperparameters)
      otherwise               -> {"name": "m3s5", "parent": "m3s4", "donor": null,
                                 "start": 20, "until": 25} with its own hyperparameters
    evaluate: the run's checkpoint directory gets a copy of m0s4's (or m3s4's) checkpoint;
              the model trains from it to step EMEWS_TRAIN_UNTIL and returns its value
    tell: member 3 is at step 25, its value the one it returned

Every member trains ``perturbation_interval`` steps a segment (up to ``max_steps``, when
given). A member is ready for its next segment as soon as its last one is told: in an
``async`` study members never wait for each other (Ray Tune's PBT); in a ``batch`` study of
``population_size`` slots every member trains one segment per round (Ray Tune's
``synch=True``), and a killed study resumes exactly from the search's checkpoint. A resumed
async study tells the search its finished segments (the members are rebuilt from them) and
the ones that were running (:meth:`running`: their members get no other segment meanwhile).

When a member's segment is told, it is ranked with the other members by their latest values:
one in the bottom ``quantile`` (at most half of the population) exploits a member of the top
``quantile``, drawn at random: it starts its next segment from that donor's latest checkpoint,
at the donor's step, with the donor's hyperparameters explored. ``explore``:

* ``"perturb"`` (Ray Tune's and Supervisor's): each free parameter is drawn again from the
  space with ``resample_probability``, else a number is multiplied by one of ``factors``
  (drawn at random; 0.8 and 1.2) and kept within its bounds, an ordered value moves one
  place up or down, and a categorical or logical value stays;
* ``"pb2"``: the numeric parameters (float and int) are chosen by a GP bandit: scikit-learn's
  ``GaussianProcessRegressor`` (Matern 5/2 and white noise, on the unit coordinates and the
  step) models how much a segment improved the value, and the candidate of largest upper
  confidence bound (GP-UCB's schedule, delta 0.1) among 500 random ones is taken; the other
  parameters are perturbed as above, and until two segments were told it is ``perturb``;
* a ``"module:function"`` of yours, imported (never evaluated as text):
  ``function(params, space, rng) -> params``, given a copy of the donor's hyperparameters,
  the :class:`~emews.plugin.Space` and a NumPy generator; what it returns must be in the space.

A failed segment leaves its member where it was, ranked the worst: it exploits next. The
first points are the best told points that are not segments (a warm start), then random ones.

``state()`` is plain JSON: the generator, every member (hyperparameters, latest segment,
step, value, the segment it has in flight), the warm-start points and PB2's data.
"""

import math
import re
import warnings

import numpy as np

from emews.plugin import (SEGMENT, Algorithm, ConfigError, Float, Int, Ordered, check_choice,
                          check_number, import_dotted, pack_state, unpack_state)

EXPLORE = ("perturb", "pb2")
PB2_CANDIDATES = 500
PB2_DATA = 200          # PB2's GP is fitted on the latest this many segments
PB2_DELTA = 0.1


class PBT(Algorithm):
    """Population-based training with PBT's or PB2's explore (see the module docstring)."""

    def __init__(self, space, seed=None, population_size=8, perturbation_interval=5,
                 quantile=0.2, explore="perturb", resample_probability=0.25,
                 factors=(0.8, 1.2), max_steps=None):
        super().__init__(space, seed)
        self.size = check_number("population_size", population_size, 2, integer=True)
        self.interval = check_number("perturbation_interval", perturbation_interval, 1,
                                     integer=True)
        self.quantile = float(check_number("quantile", quantile, above=0, maximum=0.5))
        self.resample = float(check_number("resample_probability", resample_probability, 0, 1))
        if not isinstance(factors, (list, tuple)) or not factors:
            raise ConfigError("[algorithm].factors", "must be a list of positive numbers",
                              factors)
        self.factors = [float(check_number("factors", f, above=0)) for f in factors]
        self.max_steps = check_number("max_steps", max_steps, 1, integer=True, allow_none=True)
        if not isinstance(explore, str) or ":" not in explore:
            check_choice("explore", explore, EXPLORE + ("module:function",))
            self.explorer = explore
        else:
            self.explorer = import_dotted(explore, "[algorithm].explore")
            if not callable(self.explorer):
                raise ConfigError("[algorithm].explore", "must name a callable", explore)
        self.explore_name = explore
        self.members = []     # [{"params", "segment", "index", "step", "score", "running"}]
        self.candidates = []  # [[params, score]]: told points that are not segments
        self.pb2 = []         # [[unit coordinates of the numeric parameters, step, gain]]

    # --- ask/tell ---------------------------------------------------------------------------

    def ask(self, n):
        if not self.members or None in self.members:
            self._populate()
        idle = [m for m, member in enumerate(self.members)
                if member["running"] is None and not self._finished(member)]
        idle.sort(key=lambda m: (self.members[m]["step"], m))
        return [self._next(m) for m in idle[:max(n, 0)]]

    def tell(self, points, values):
        for point, value in zip(points, values):
            params = {k: v for k, v in point.items() if k != SEGMENT}
            record = point.get(SEGMENT)
            if record is None:
                self.candidates.append([params, _score(value)])
            else:
                self._told(record, params, value)

    def running(self, points):
        """A resumed study's segments that were running: their members are busy."""
        for point in points:
            record = point.get(SEGMENT)
            if record is not None:
                member = self._member_of(record, point)
                member["running"] = {"name": record["name"], "start_score": None}

    def done(self):
        return (self.max_steps is not None and len(self.members) == self.size
                and None not in self.members
                and all(self._finished(m) and m["running"] is None for m in self.members))

    def state(self):
        return pack_state(self, {"rng": self.rng.bit_generator.state, "members": self.members,
                                 "candidates": self.candidates, "pb2": self.pb2})

    def restore(self, state):
        data = unpack_state(self, state)
        self.rng.bit_generator.state = data["rng"]
        self.members, self.candidates, self.pb2 = data["members"], data["candidates"], data["pb2"]

    # --- the population ---------------------------------------------------------------------

    def _populate(self):
        """Members for the empty places: the best warm-start points first, then random ones."""
        self.members += [None] * (self.size - len(self.members))
        best = sorted(self.candidates, key=lambda c: c[1])
        for m, member in enumerate(self.members):
            if member is None:
                params = best.pop(0)[0] if best else self.space.sample(self.rng)[0]
                self.members[m] = _member(params)

    def _finished(self, member):
        return self.max_steps is not None and member["step"] >= self.max_steps

    def _next(self, m):
        """Member ``m``'s next segment, as a point (exploit and explore when it ranks low)."""
        member = self.members[m]
        params, donor, start, start_score = member["params"], None, member["step"], \
            member["score"]
        bottom, top = self._quantiles()
        if m in bottom and top:
            d = top[int(self.rng.integers(len(top)))]
            chosen = self.members[d]
            donor, start, start_score = chosen["segment"], chosen["step"], chosen["score"]
            params = self._explore(dict(chosen["params"]), start)
        until = start + self.interval
        if self.max_steps is not None:
            until = min(until, self.max_steps)
        name = f"m{m}s{member['index']}"
        member["index"] += 1
        member["running"] = {"name": name, "start_score": start_score}
        record = {"member": m, "name": name, "parent": member["segment"], "donor": donor,
                  "start": start, "until": until}
        return {**params, SEGMENT: record}

    def _quantiles(self):
        """``(bottom, top)``: the members of the bottom and the top quantile by their latest
        values (only members told a value are ranked; at most half in each); a donor of the
        top has a checkpoint and has not reached ``max_steps``."""
        ranked = sorted((m for m, member in enumerate(self.members)
                         if member is not None and member["score"] is not None),
                        key=lambda m: (self.members[m]["score"], m))
        k = min(math.ceil(len(ranked) * self.quantile), len(ranked) // 2)
        top = [m for m in ranked[:k] if self.members[m]["segment"] is not None
               and not self._finished(self.members[m])]   # a donor with steps left to train
        return (ranked[len(ranked) - k:] if k else []), top

    def _told(self, record, params, value):
        """A segment's result: its member moves on (finished) or stays (failed)."""
        member = self._member_of(record, params)
        latest = member["segment"] is None or _index(record["name"]) > _index(member["segment"])
        start_score = None
        if member["running"] is not None and member["running"]["name"] == record["name"]:
            start_score, latest = member["running"]["start_score"], True
            member["running"] = None
        score = _score(value)
        if math.isfinite(value) and latest:   # (a resumed history's older segment: not)
            if start_score is not None and math.isfinite(start_score):
                self.pb2 = (self.pb2 + [[self._unit(params), record["until"],
                                         start_score - score]])[-PB2_DATA:]
            member.update(params=params, segment=record["name"], step=record["until"])
        member["score"] = score

    def _member_of(self, record, params):
        """The member of a segment ``record``, made from it (with ``params``) when it is new
        (a segment of a resumed study's history), its count of segments past the record's."""
        m = record["member"]
        self.members += [None] * (m + 1 - len(self.members))
        if self.members[m] is None:
            self.members[m] = _member({k: v for k, v in params.items() if k != SEGMENT})
        member = self.members[m]
        member["index"] = max(member["index"], _index(record["name"]) + 1)
        return member

    # --- explore ----------------------------------------------------------------------------

    def _explore(self, params, step):
        """New hyperparameters from the donor's ``params`` (see the module docstring)."""
        if callable(self.explorer):
            explored = self.explorer(dict(params), self.space, self.rng)
            if not isinstance(explored, dict) or not self.space.contains(explored):
                raise ValueError(f"[algorithm].explore {self.explore_name} returned "
                                 f"{explored!r}, which is not a point of the search space")
            return explored
        explored = self._perturb(params)
        if self.explorer == "pb2" and len(self.pb2) >= 2 and self._numeric():
            explored.update((k, v) for k, v in self._bandit(step).items() if k in explored)
        # a changed parent may switch a conditional parameter on (drawn) or off (left out)
        return self.space.complete(explored, lambda p: p.sample(self.rng))

    def _perturb(self, params):
        """PBT's perturbation of every free parameter."""
        explored = dict(params)
        for p in self.space.free:
            if p.name not in params:   # a parameter the point leaves out
                continue
            value = params[p.name]
            if self.rng.random() < self.resample:
                explored[p.name] = p.sample(self.rng)
            elif isinstance(p, Float):   # Int and TransformedFloat too
                factor = self.factors[int(self.rng.integers(len(self.factors)))]
                moved = min(max(value * factor, p.lower), p.upper)
                explored[p.name] = int(round(moved)) if isinstance(p, Int) else float(moved)
            elif isinstance(p, Ordered):
                i = p.index(value) + (1 if self.rng.random() < 0.5 else -1)
                explored[p.name] = p.values[min(max(i, 0), len(p.values) - 1)]
        return explored

    def _numeric(self):
        """The parameters PB2 chooses: floats and ints."""
        return [p for p in self.space.free if isinstance(p, Float)]

    def _unit(self, params):
        """The unit coordinates of the numeric parameters (0.5 for one the point leaves out)."""
        return [p.to_unit(params[p.name]) if p.name in params else 0.5 for p in self._numeric()]

    def _bandit(self, step):
        """PB2: the numeric parameters of largest upper confidence bound of the gain."""
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.gaussian_process import GaussianProcessRegressor
        from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

        numeric = self._numeric()
        horizon = max(max(row[1] for row in self.pb2), step, 1)
        X = np.array([row[0] + [row[1] / horizon] for row in self.pb2])
        y = np.array([row[2] for row in self.pb2])
        kernel = ConstantKernel() * Matern(length_scale=np.ones(X.shape[1]), nu=2.5) \
            + WhiteKernel()
        gp = GaussianProcessRegressor(kernel, normalize_y=True, n_restarts_optimizer=0,
                                      random_state=int(self.rng.integers(2 ** 31)))
        with warnings.catch_warnings():   # a kernel bound reached on few data: expected
            warnings.simplefilter("ignore", ConvergenceWarning)
            gp.fit(X, y)
        candidates = self.rng.random((PB2_CANDIDATES, len(numeric)))
        mean, std = gp.predict(np.column_stack([candidates,
                                                np.full(PB2_CANDIDATES, step / horizon)]),
                               return_std=True)
        t = len(self.pb2)
        kappa = math.sqrt(2 * math.log(t * t * math.pi ** 2 / (6 * PB2_DELTA)))
        best = candidates[int(np.argmax(mean + kappa * std))]
        return {p.name: p.from_unit(float(u)) for p, u in zip(numeric, best)}


def _member(params):
    return {"params": params, "segment": None, "index": 0, "step": 0, "score": None,
            "running": None}


def _index(name):
    """The count of segment ``name`` in its member (``m3s5``: 5; -1 for another name)."""
    counted = re.fullmatch(r"m\d+s(\d+)", name)
    return int(counted.group(1)) if counted else -1


def _score(value):
    """What a result ranks by: its value, a pruned run's last reported value, or ``inf``."""
    score = getattr(value, "last", value)
    return float(score) if math.isfinite(score) else math.inf
