"""``auto``: the search a study gets when it names none, chosen by a rule of measured thresholds.

::

    the study's settings (space, budget, mode and points in flight, objectives, constraints,
    pruner) --plan()--> stages: [Stage(start=0, "gp"), Stage(start=300, "optuna" TPE)]
    ask  --> the stage of the number of told points; entering one builds its search (same
             space and seed), tells it every told point, prints one line
         --> that search's points, less any told or in flight (random ones stand in
             when none is left)
    tell --> every result is kept, and passed to the stage's search

The rule (:func:`plan`) reads only :data:`THRESHOLDS`, each the point where a measurement of
the benchmarks (benchmarks/README.md, docs/src/algorithms.md gives the table) changes the
best search: a later measurement changes a number there, not the code. ``[algorithm]
thresholds`` overrides them for one study. A study that uses a pruner gets Optuna's TPE (our
``optuna``) from the start; so does one with a constraint and one objective (``gp`` and
``mbo`` learn constraints only in their ParEGO form), one of more free parameters than
``gp`` was measured on, and one with more points in flight than ``gp`` was measured to keep
busy. Any other starts with ``gp`` (whose first points are its own random design) and
switches to TPE once ``gp_max_told`` points are told, where ``gp``'s proposals grow slow; a
budget within it plans no switch.

The plan depends on the settings alone, and a stage on the number of points told, so a
resumed study (told its history, or restored from its state) runs the same stages, switched
at the same counts. :meth:`Auto.describe` is the plan as the study stores it (meta
``search``, shown by ``emews status`` and ``emews show``). A search entered at a switch never
saw the points in flight: a point it proposes that was told or is in flight is not proposed
again (a told one is told to it at once, one in flight once its result comes), so ``auto``
never repeats a point. When a search proposes nothing new, random points stand in; when those
are all known too (a small discrete space exhausted), ``auto`` proposes none and the study
ends.
"""

from dataclasses import asdict, dataclass
from importlib.metadata import entry_points

from emews.plugin import (Algorithm, ConfigError, Number, check_choice, check_flag,
                          check_number, check_table, pack_state, point_key, unpack_state)

# What the rule switches on, each from a measurement (docs/src/algorithms.md, "auto"):
THRESHOLDS = {
    "gp_max_told": 300,        # gp: 56 ms a proposal at 300 told, 0.40 s at 1,000 (table 8)
    "gp_max_dims": 30,         # table 12: gp best of all on ZDT1-3, 30 free parameters
    "gp_max_in_flight": 64,    # issue 46: gp keeps 64 workers busy (table 3: best at 8)
}
# The options each search is built with, beyond the study's space, seed and objectives
OPTIONS = {"gp": {}, "optuna": {"sampler": "tpe"}}
MODES = ("async", "batch", "sequential")
# The study's settings that auto chooses by (emews._config sets them, never [algorithm]): defaults
STUDY = {"budget": None, "mode": "async", "slots": 1, "batch_size": None, "constraints": 0,
         "pruner": "none", "quiet": False}
ROUNDS = 3   # asks of the search for one ask of auto's, before random points stand in
DRAWS = 100  # random points drawn for each one asked, to find those not yet told


@dataclass(frozen=True)
class Stage:
    """A part of the plan: from ``start`` points told on, ``search`` (a registered name) with
    ``options``, for the reason ``why``."""

    start: int
    search: str
    options: dict
    why: str

    @property
    def label(self):
        """The search as a user names it: ``gp``, ``optuna (tpe)``."""
        sampler = self.options.get("sampler")
        return f"{self.search} ({sampler})" if sampler else self.search


def plan(free, objectives=1, constraints=0, budget=None, in_flight=1, pruner="none",
         thresholds=None):
    """The stages of a study of ``free`` free parameters and ``objectives`` objectives with
    ``constraints``, a ``budget`` (``None``: none), ``in_flight`` points evaluated at once
    and a ``pruner``, by :data:`THRESHOLDS` (or ``thresholds``)."""
    limit = {**THRESHOLDS, **(thresholds or {})}
    tpe = OPTIONS["optuna"]
    if pruner != "none":
        return [Stage(0, "optuna", tpe, f"a pruner ({pruner}) stops runs early: TPE learns "
                      "from their curves (table 11)")]
    if constraints and objectives == 1:
        return [Stage(0, "optuna", tpe, f"{constraints} constraint(s) on one objective: TPE "
                      "learns them (gp ignores them outside ParEGO)")]
    if free > limit["gp_max_dims"]:
        return [Stage(0, "optuna", tpe, f"{free} free parameters, more than gp_max_dims "
                      f"({limit['gp_max_dims']})")]
    if in_flight > limit["gp_max_in_flight"]:
        return [Stage(0, "optuna", tpe, f"{in_flight} points in flight, more than "
                      f"gp_max_in_flight ({limit['gp_max_in_flight']})")]
    several = f" ({objectives} objectives: ParEGO, table 12)" if objectives > 1 else ""
    stages = [Stage(0, "gp", OPTIONS["gp"], f"{free} free parameters, {in_flight} in "
                    f"flight{several}")]
    if budget is None or budget > limit["gp_max_told"]:
        stages.append(Stage(limit["gp_max_told"], "optuna", tpe, "gp's proposals grow slow "
                            "past gp_max_told points told, TPE's stay fast (table 8)"))
    return stages


def in_flight_of(mode, slots, batch_size=None):
    """How many points a study of ``mode`` evaluates at once on ``slots`` slots."""
    if mode == "sequential":
        return 1
    return batch_size or slots if mode == "batch" else slots


class Auto(Algorithm):
    """Runs the search that :func:`plan` chooses for the study, switching as it grows.

    Its one option is ``thresholds`` (a table of :data:`THRESHOLDS`' keys); ``study`` holds
    the study's settings of :data:`STUDY` (``quiet``: print no line), which
    :mod:`emews._config` sets from ``[study]`` and ``[system]``. Its
    state is the stage's search's, with every told point. A model's learning curves count
    through the pruner: without one, no run reports a curve that a search sees.
    """

    multiobjective = True
    ready_share = 0.5   # gp's (async: half as many points ready as slots); TPE's liar suits it

    def __init__(self, space, seed=None, objectives=1, thresholds=None, **study):
        super().__init__(space, seed)
        for name in study:
            if name not in STUDY:
                raise ConfigError(f"[algorithm].{name}", "is not an option of Auto (options: "
                                  "thresholds)", study[name])
        study = {**STUDY, **study}
        self.objectives = check_number("objectives", objectives, 1, integer=True)
        rule = Number(integer=True, minimum=0)
        thresholds = check_table("thresholds", thresholds or {}, dict.fromkeys(THRESHOLDS, rule))
        self.stages = plan(
            len(space.free), self.objectives,
            check_number("constraints", study["constraints"], 0, integer=True),
            check_number("budget", study["budget"], 1, integer=True, allow_none=True),
            in_flight_of(check_choice("mode", study["mode"], MODES),
                         check_number("slots", study["slots"], 1, integer=True),
                         check_number("batch_size", study["batch_size"], 1, integer=True,
                                      allow_none=True)),
            study["pruner"], thresholds)
        self.quiet = check_flag("quiet", study["quiet"])
        self.told = []           # (point, value) of every told point, in the order told
        self.known = {}          # point key -> its told value
        self.in_flight = {}      # point key -> how many of its evaluations are in flight
        self.shadows = {}        # point key -> proposals of the search that were not passed on
        self.stage, self.search, self.announced = None, None, False

    def describe(self):
        return {"algorithm": "auto", "stages": [asdict(stage) | {"label": stage.label}
                                                for stage in self.stages]}

    def ask(self, n):
        self._follow_plan()
        points = []
        for _ in range(ROUNDS):   # a search that proposes what is known is asked again
            asked = self.search.ask(n - len(points))
            points += self._new(asked, self.search)
            if len(points) == n or not asked or self.search.done():
                break
        drawn = iter(self.space.sample(self.rng, DRAWS * n) if not points else ())
        while len(points) < n:   # nothing new from the search: random points, if any is new
            point = next(drawn, None)
            if point is None:
                break
            points += self._new([point])
        return points

    def _new(self, points, search=None):
        """The points that are new (not told, not in flight), each then in flight. What
        ``search`` proposed is not lost on it: a told point is told its value, and one in
        flight its result once it comes."""
        new = []
        for point in points:
            key = point_key(point)
            if key in self.in_flight:
                if search is not None:
                    self.shadows[key] = self.shadows.get(key, 0) + 1
            elif key in self.known:
                if search is not None:
                    search.tell([point], [self.known[key]])
            else:
                self.in_flight[key] = 1
                new.append(point)
        return new

    def tell(self, points, values):
        told = list(zip(points, values))
        for point, value in zip(points, values):
            key = point_key(point)
            self.in_flight[key] = self.in_flight.get(key, 1) - 1
            if self.in_flight[key] <= 0:
                del self.in_flight[key]
            self.told.append((point, value))
            self.known[key] = value
            told += [(point, value)] * self.shadows.pop(key, 0)
        if self.search is not None:
            self.search.tell([point for point, _ in told], [value for _, value in told])

    def running(self, points):
        for point in points:
            key = point_key(point)
            self.in_flight[key] = self.in_flight.get(key, 0) + 1

    def done(self):
        return self.search is not None and self.search.done()

    def state(self):
        inner = None if self.search is None else self.search.state()
        if self.search is not None and inner is None:
            return None
        return pack_state(self, {"stage": self.stage, "search": inner, "told": self.told,
                                 "in_flight": self.in_flight, "shadows": self.shadows,
                                 "rng": self.rng.bit_generator.state}, pickled=True)

    def restore(self, state):
        data = unpack_state(self, state)
        self.told, self.in_flight = data["told"], data["in_flight"]
        self.known = {point_key(point): value for point, value in self.told}
        self.shadows = data["shadows"]
        self.rng.bit_generator.state = data["rng"]
        self.stage, self.search, self.announced = data["stage"], None, False
        if self.stage is not None:
            self.search = self._build(self.stages[self.stage])
            self.search.restore(data["search"])

    def _follow_plan(self):
        """Enter the stage of the number of points told, if it is not the current one."""
        due = max(i for i, stage in enumerate(self.stages) if stage.start <= len(self.told))
        before, stage, told = self.stage, self.stages[due], len(self.told)
        if due != before:
            self.stage, self.search = due, self._build(stage)
            if self.told:
                self.search.tell([point for point, _ in self.told],
                                 [value for _, value in self.told])
        if due != before and before is not None:
            self._announce(f"switches from {self.stages[before].label} to {stage.label} after "
                           f"{told} points told", stage)
        elif not self.announced:   # a new study, or a resumed one (told or restored)
            self._announce(f"resumes with {stage.label} after {told} points told" if told
                           else f"chose {stage.label}", stage)

    def _build(self, stage):
        """The search of ``stage``, on this space and seed (and the study's objectives)."""
        extra = {"objectives": self.objectives} if self.objectives > 1 else {}
        return _load(stage.search)(self.space, seed=self.seed, **stage.options, **extra)

    def _announce(self, what, stage):
        """Print one line: what ``auto`` does now, and why."""
        if not self.quiet:
            print(f"emews: auto {what}: {stage.why}", flush=True)
        self.announced = True


def _load(name):
    """The search registered as ``name`` (entry point ``emews.algorithms``)."""
    found = entry_points(group="emews.algorithms", name=name)
    if not found:
        raise ConfigError("[study].algorithm", f"auto runs {name!r}, which is not installed",
                          name)
    return next(iter(found)).load()
