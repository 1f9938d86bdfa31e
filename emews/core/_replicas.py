"""Replicas (SmartSim's ensembles of one model): each point evaluated ``R`` times, with seeds.

:class:`Replicas` wraps any :class:`~emews.core._algorithm.Algorithm`::

    algorithm.ask(1) -> {x}  ==>  {x, rng_seed: s1} ... {x, rng_seed: sR}  -> pool
    algorithm.tell([{x}], [mean or worst])  <==  R results

Each replica's seed (under ``seed_param``) is drawn from the study's seed, distinct within the
point; a point whose replicas all failed is told ``NaN``, one a limit cut short is never told.
Told replicas never asked for (a resumed run's history) are grouped by their point without the
seed. See docs/src/running.md (Replicas); the settings are the ME's ``replicas`` entry
(:data:`KEYS`).
"""

import math

import numpy as np

from ._algorithm import Algorithm, pack_state, point_key, unpack_state
from .._errors import ConfigError
from .._status import FINAL, Status
from ._vector import finite_or_none

KEYS = ("replicas", "replica_objective", "replica_seed_param")   # [study] settings
SEED_PARAM = "rng_seed"
SEED_RANGE = 2 ** 31     # seeds are drawn from [0, 2**31): an int32 for any model's RNG


def wrap(algorithm, settings):
    """``algorithm`` wrapped in :class:`Replicas` when ``settings`` (``{"replicas": R, ...}``
    or ``None``) asks for more than one replica; else ``algorithm`` itself."""
    if not settings or settings.get("replicas", 1) <= 1:
        return algorithm
    return Replicas(algorithm.space, seed=algorithm.seed, algorithm=algorithm,
                    replicas=settings["replicas"],
                    objective=settings.get("replica_objective", "mean"),
                    seed_param=settings.get("replica_seed_param", SEED_PARAM))


def settings_of(study):
    """The replica settings (:data:`KEYS`) of a study's :class:`~emews._config.Study` that
    evaluates each point more than once, else (or without a ``study``) ``None``."""
    if study is None or study.replicas <= 1:
        return None
    return {key: getattr(study, key) for key in KEYS}


def check(space, seed_param, where="[study].replica_seed_param"):
    """A ConfigError (naming ``where``) when ``seed_param`` names a parameter of ``space``."""
    if space is not None and seed_param in space.names:
        raise ConfigError(where, "must not be a parameter of the search "
                          f"space ({', '.join(space.names)})", seed_param)


def aggregate(values, objective):
    """The value a point's replica ``values`` tell: their ``mean`` or ``worst`` over the finite
    ones; ``NaN`` when none is finite."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return math.nan
    return max(finite) if objective == "worst" else float(np.mean(finite))


def summarize(rows, seed_param, objective, replicas):
    """Per point of the finished ``rows`` (store rows, ``params`` decoded), complete points
    first, by value: the ``point`` (without the seed), the ``mean``, ``std`` (sample; ``None``
    below two values) and ``count`` of its replicas' finished values, the ``failed`` ones,
    whether all ``replicas`` finished (``complete``), the ``value`` its search is told
    (``objective``; ``None`` when all failed, or incomplete), the ``ids`` of its rows."""
    groups = {}
    for row in rows:
        if row["status"] not in FINAL:
            continue
        point = {k: v for k, v in row["params"].items() if k != seed_param}
        value = row["result"] if row["status"] == Status.DONE and row["result"] is not None \
            else math.nan
        group = groups.setdefault(point_key(point), (point, [], []))
        group[1].append(value)
        group[2].append(row["id"])
    summary = []
    for point, values, ids in groups.values():
        finite = [v for v in values if math.isfinite(v)]
        complete = len(values) >= replicas
        summary.append({"point": point, "mean": float(np.mean(finite)) if finite else None,
                        "std": float(np.std(finite, ddof=1)) if len(finite) > 1 else None,
                        "count": len(finite), "failed": len(values) - len(finite),
                        "complete": complete,
                        "value": aggregate(values, objective) if complete else math.nan,
                        "ids": ids})
    summary.sort(key=lambda s: (not s["complete"], math.isnan(s["value"]), s["value"]))
    return [{**s, "value": finite_or_none(s["value"])} for s in summary]


def best_point(rows, settings):
    """The best point of a study's ``rows`` under its replica ``settings`` (:func:`settings_of`):
    the first entry of :func:`summarize` whose search was told a value, or ``None``."""
    return next((s for s in summarize(rows, settings["replica_seed_param"],
                                      settings["replica_objective"], settings["replicas"])
                 if s["value"] is not None), None)


class Gathered:
    """Replica values gathered per point (its parameters without ``seed_param``) until all
    ``replicas`` of it are in; ``groups`` maps a point's key to its point and values so far."""

    def __init__(self, replicas, objective="mean", seed_param=SEED_PARAM):
        self.replicas, self.objective, self.seed_param = replicas, objective, seed_param
        self.groups = {}

    def add(self, replica, value):
        """Gather one replica's ``value`` (NaN: it failed); ``(point, value)`` when it was the
        point's last replica, the value its search is told (:func:`aggregate`), else ``None``."""
        point = {k: v for k, v in replica.items() if k != self.seed_param}
        group = self.groups.setdefault(point_key(point), {"point": point, "values": []})
        group["values"].append(float(value))
        if len(group["values"]) < self.replicas:
            return None
        del self.groups[point_key(point)]
        return group["point"], aggregate(group["values"], self.objective)


class Replicas(Algorithm):
    """``algorithm``'s points, each evaluated ``replicas`` times with distinct seeds."""

    def __init__(self, space, seed=None, algorithm=None, replicas=2, objective="mean",
                 seed_param=SEED_PARAM):
        super().__init__(space, seed)
        self.rng = np.random.default_rng(None if seed is None else [seed, 1])  # not the inner's
        check(space, seed_param)
        self.algorithm = algorithm
        self.replicas = replicas
        self.seed_param = seed_param
        self.needs_space, self.finite = algorithm.needs_space, algorithm.finite
        self.ready_share = algorithm.ready_share
        self.ready = []      # replica points asked for and not yet proposed
        self.gathered = Gathered(replicas, objective, seed_param)

    def ask(self, n):
        while len(self.ready) < n:
            asked = self.algorithm.ask(math.ceil((n - len(self.ready)) / self.replicas))
            if not asked:
                break
            for point in asked:   # its replicas, with distinct seeds
                seeds = self.rng.choice(SEED_RANGE, size=self.replicas, replace=False)
                self.ready += [{**point, self.seed_param: int(seed)} for seed in seeds]
        points, self.ready = self.ready[:n], self.ready[n:]
        return points

    def tell(self, points, values):
        told = [found for found in map(self.gathered.add, points, values) if found is not None]
        if told:
            self.algorithm.tell([point for point, _ in told], [value for _, value in told])

    def done(self):
        return not self.ready and self.algorithm.done()

    def describe(self):
        return self.algorithm.describe()

    def state(self):
        inner = self.algorithm.state()
        if inner is None:
            return None
        return pack_state(self, {"algorithm": inner, "ready": self.ready,
                                 "groups": self.gathered.groups,
                                 "rng": self.rng.bit_generator.state}, pickled=True)

    def restore(self, state):
        data = unpack_state(self, state)
        self.algorithm.restore(data["algorithm"])
        self.ready, self.gathered.groups = data["ready"], data["groups"]
        self.rng.bit_generator.state = data["rng"]
