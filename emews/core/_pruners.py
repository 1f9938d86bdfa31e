"""Pruners: which running evaluations to stop at a report, decided in the master.

::

    model: emews.report(value, step) --> pool --> Master._judge(task, report)
                                                    |  store.add_reports (group commit)
                                                    +-> Pruner.report(run, step, value) -> stop?
    Master: a done run --> Pruner.completed(run)

``[study] pruner`` picks one (``none``, the default, stops nothing; reports are only stored);
its options are the ``[pruner]`` table. Each pruner decides as Optuna's pruner of its name
(each class says how; docs/src/fidelity.md tabulates their rules and options).

With ``pause = true``, a run that a rung would stop is paused instead (:data:`PAUSE`; thawed by
:mod:`emews.core._thaw`). A NaN or infinite value is the worst there is: such a run is stopped
(never paused) at its first judged step. A resumed study replays the stored reports in order
(:meth:`Pruner.replay`) and decides as the killed run would have.
"""

import math
from dataclasses import dataclass, fields

from .._errors import ConfigError

PRUNERS = ("none", "median", "percentile", "asha", "hyperband")
AUTO = "auto"   # [study] pruner = "auto" (the default): :func:`choose` picks one of PRUNERS
PAUSE = "pause"   # a pruner's verdict on a run to pause rather than stop (true as a stop is)


@dataclass(eq=False)   # its subclasses' fields are the [pruner] options they take
class Pruner:
    """Stops nothing (``pruner = "none"``); the base of the others.

    A run is ``(point id, attempt)``: a retried attempt starts its curve afresh (a thawed one
    is judged as the run it goes on). ``pause``: whether it pauses runs rather than stopping
    them; ``max_resource``: the step a run ends at (``None``: the model decides).
    """

    pause = False
    max_resource = None

    def report(self, run, step, value):
        """``run`` reported ``value`` at ``step``: True when it must stop, :data:`PAUSE`
        when it must stop and may be thawed later."""
        return False

    def completed(self, run):
        """``run`` finished ``done`` (not pruned, not failed)."""

    def replay(self, reports, done):
        """Take back what a killed run of the study had seen: ``reports`` (as
        :meth:`emews.store.Store.reports` gives them, in order) and the ``done`` runs."""
        for row in reports:
            value = math.nan if row["value"] is None else row["value"]
            self.report((row["id"], row["attempt"]), row["step"], value)
        for run in done:
            self.completed(run)


@dataclass
class Percentile(Pruner):
    """Optuna's ``PercentilePruner`` (``median``: ``percentile = 50``), as
    docs/src/fidelity.md says."""

    percentile: float = 50.0
    n_startup_trials: int = 5
    n_warmup_steps: int = 0
    interval_steps: int = 1
    n_min_trials: int = 1

    def __post_init__(self):
        self.curves = {}      # run -> {step: value}
        self.done = []        # completed runs, in order

    def report(self, run, step, value):
        curve = self.curves.setdefault(run, {})
        curve[step] = value
        if len(self.done) < self.n_startup_trials or step < self.n_warmup_steps or \
                (step - self.n_warmup_steps) % self.interval_steps:
            return False
        finite = [v for v in curve.values() if not math.isnan(v)]
        if not finite:
            return True
        others = [self.curves[r][step] for r in self.done if step in self.curves[r]]
        others = [v for v in others if not math.isnan(v)]
        if len(others) < max(self.n_min_trials, 1):
            return False
        return min(finite) > percentile(others, self.percentile)

    def completed(self, run):
        if run in self.curves:
            self.done.append(run)


def percentile(values, q):
    """The ``q``-th percentile of ``values`` (linear interpolation, as numpy's default)."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@dataclass
class Asha(Pruner):
    """Asynchronous successive halving, Optuna's ``SuccessiveHalvingPruner`` rule
    (docs/src/fidelity.md): a run first at or past a rung's step adds its value there."""

    min_resource: int = 1
    max_resource: int | None = None
    reduction_factor: int = 3
    pause: bool = False

    def __post_init__(self):
        self.rungs = {}       # rung index -> values reached there, in order
        self.next_rung = {}   # run -> the index of the next rung it has not passed

    def rung_step(self, k):
        """The step of rung ``k``."""
        return self.min_resource * self.reduction_factor ** k

    def report(self, run, step, value):
        k = self.next_rung.get(run, 0)
        while self.rung_step(k) <= step and (self.max_resource is None
                                             or self.rung_step(k) < self.max_resource):
            values = self.rungs.setdefault(k, [])
            values.append(value if math.isfinite(value) else math.inf)   # NaN, inf: last
            k += 1
            self.next_rung[run] = k
            if not math.isfinite(value):
                return True
            # promoted only among the rung's best len // reduction_factor (the best, while
            # it has fewer values than that)
            if value > sorted(values)[max(len(values) // self.reduction_factor - 1, 0)]:
                return PAUSE if self.pause else True
        return False


@dataclass
class Hyperband(Pruner):
    """Brackets of ASHA, Optuna's ``HyperbandPruner`` rule (docs/src/fidelity.md), each
    with Hyperband's share of the point ids (:meth:`bracket_of`)."""

    min_resource: int = 1
    max_resource: int = 1
    reduction_factor: int = 3
    pause: bool = False

    def __post_init__(self):
        eta, count = self.reduction_factor, 1
        while self.min_resource * eta ** count <= self.max_resource:
            count += 1
        self.brackets = [Asha(self.min_resource * eta ** b, self.max_resource, eta, self.pause)
                         for b in range(count)]
        self.shares = [math.ceil(count * eta ** s / (s + 1)) for s in range(count - 1, -1, -1)]
        self.cycle = spread(self.shares)

    def bracket_of(self, point):
        """The bracket index of point id ``point``."""
        return self.cycle[point % len(self.cycle)]

    def report(self, run, step, value):
        return self.brackets[self.bracket_of(run[0])].report(run, step, value)


def spread(shares):
    """A cycle of ``sum(shares)`` indices holding index ``i`` ``shares[i]`` times, each spread
    evenly over it (smooth weighted round robin)."""
    total, credit, cycle = sum(shares), [0] * len(shares), []
    for _ in range(total):
        credit = [c + share for c, share in zip(credit, shares)]
        chosen = credit.index(max(credit))
        credit[chosen] -= total
        cycle.append(chosen)
    return cycle


def choose(options, several=False):
    """What ``pruner = "auto"`` runs, and why: ``hyperband`` where a run's last step is known
    (``[pruner] max_resource``: the model reports learning curves of that many steps) and the
    study has one value to compare (not ``several`` objectives or constraints); else ``none``.

    Measured (the fidelity part, 2026-12-05, 10 paired seeds, docs/src/fidelity.md): with TPE,
    Hyperband's final regret was never worse than no pruning on any of the 10 settings
    (better on pow3); the median pruner's and ASHA's were worse on lc-diabetes."""
    if several:
        return "none", "a study of several objectives or constraints: a pruner compares one value"
    if options.get("max_resource") is None:
        return "none", "[pruner].max_resource is not set (the step a run ends at)"
    return "hyperband", (f"runs end at step {options['max_resource']} ([pruner].max_resource); "
                         "of the pruners, it alone never ended behind no pruning in the "
                         "fidelity benchmark")


def make(name="none", options=None, where=lambda key: f"[pruner].{key}"):
    """The pruner ``name`` with ``options`` (the ``[pruner]`` table, ``None`` values left
    out), checked together: an option of another pruner, or options that contradict each
    other, raise a one-line :class:`~emews._errors.ConfigError` naming ``where(option)``."""
    options = {key: value for key, value in (options or {}).items() if value is not None}
    if name not in PRUNERS:
        raise ConfigError("[study].pruner", f"must be one of {list(PRUNERS)}", name)
    cls = {"median": Percentile, "percentile": Percentile, "asha": Asha,
           "hyperband": Hyperband}.get(name, Pruner)
    takes = [f.name for f in fields(cls) if (name, f.name) != ("median", "percentile")]
    for key in options:
        if key not in takes:
            raise ConfigError(where(key), f"does not apply to pruner {name!r} (its "
                              f"options: {', '.join(takes) or 'none'})", options[key])
    if name == "percentile" and not 0 <= options.get("percentile", -1) <= 100:
        raise ConfigError(where("percentile"), "must be a number from 0 to 100 for pruner "
                          "'percentile'", options.get("percentile"))
    if name in ("asha", "hyperband"):
        minimum, maximum = options.get("min_resource", 1), options.get("max_resource")
        if name == "hyperband" and maximum is None:
            raise ConfigError(where("max_resource"), "must be given for pruner 'hyperband' "
                              "(the step a run ends at)", None, show_value=False)
        if options.get("pause") and maximum is None:
            raise ConfigError(where("max_resource"), "must be given with pause = true (the "
                              "step a thawed run is predicted at)", None, show_value=False)
        if maximum is not None and minimum > maximum:
            raise ConfigError(where("min_resource"), f"must not be above max_resource "
                              f"({maximum})", minimum)
    return cls(**options)
