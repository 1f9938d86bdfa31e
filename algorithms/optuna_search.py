"""Optuna's samplers (TPE, CMA-ES, GP, random, QMC, NSGA-II, NSGA-III) through Optuna's own
ask/tell interface.

Each point is one trial of an in-memory study: ``ask`` is ``study.ask(distributions)``, ``tell``
is ``study.tell(trial, value)``. Points in flight are running trials, which the samplers
already account for. TPE runs as Optuna 5 runs it by default, on Optuna 4 as well:
``constant_liar`` (running trials count as bad ones, so that the points in flight differ) and
``multivariate`` (Optuna 4's defaults were ``false`` for both); either can be set. A failed or
non-finite result ends its trial as ``FAIL``, which every sampler skips; a run the study's
pruner stopped (a :class:`~emews.plugin.PrunedResult`) ends it as ``PRUNED``, with the
run's learning curve as its intermediate values (``trial.report``; for a trial asked before a
restore, without them), as Optuna's own pruners leave a trial. Told points that were
never asked for (a resumed run's history) become finished trials (``study.add_trial``; a
pruned one ``PRUNED`` with its curve), so they
count towards ``n_startup_trials`` and inform the sampler; CMA-ES, which learns only from its
own generations, is warm-started from them instead (Optuna's ``source_trials``, or ``x0`` at
the best of a short history) when the first point is asked, unless ``x0``/``sigma0`` are set.
Optuna's NSGA-II and NSGA-III breed from generations of trials: told points never asked for
are their first generation (generation 0, in the trial's system attribute where Optuna's
genetic samplers keep it), so a resumed search breeds its next generation from the best of
its history, not from random points. This needs an Optuna whose genetic samplers share
``BaseGASampler``, as Optuna 5's do; older ones do not see told points.

A point that a forbidden clause of the space excludes is never proposed: its trial ends as
``FAIL`` and the sampler is asked again (after :data:`REDRAWS` tries, a random allowed point).

Options: ``sampler`` (``tpe``, ``cmaes``, ``gp``, ``random``, ``qmc``) and the keywords of
that sampler's constructor that a configuration can set (:data:`SAMPLER_OPTIONS`: not ``seed``,
which is the study's, nor those that take Python objects or that Optuna has made no-ops), each
value checked by its rule; an option that the installed Optuna's sampler does not take (Optuna
4.0's ``GPSampler`` has no ``warn_independent_sampling``) is refused by name. ``x0``
(CMA-ES's start) is a table of a value for every integer, float and ordered parameter, in the
space's own values. Optuna's ``GPSampler`` needs PyTorch, which emews does not install.

``state()`` pickles the study's in-memory storage (every trial, running ones included, and the
samplers' own records, such as CMA-ES's optimizer) and the sampler (its random states), with
the running trials' numbers by point. At n = 200 on the 7-parameter test space it takes about
23 kB with TPE and 30 kB with CMA-ES (zlib-compressed; CMA-ES keeps a copy of its optimizer in
every trial, 0.8 MB uncompressed).

Several objectives: the plugin is ``multiobjective``; in a study of k objectives it is built
with ``objectives=k`` and runs a study of k directions, all ``minimize`` (the driver has
already negated those to maximize). Every sampler but CMA-ES takes several objectives: TPE is
Optuna's multi-objective TPE, ``gp`` its multi-objective GP (on an Optuna whose ``GPSampler``
has them), ``nsga2`` and ``nsga3`` Optuna's ``NSGAIISampler`` and ``NSGAIIISampler``. A told
:class:`~emews.plugin.Objectives` becomes the trial's values; one that does not carry
one finite value per objective ends its trial as ``FAIL``. Constraints: a told value's
``violations`` are stored in the trial's user attribute ``constraints`` before the trial is
told, and every sampler that takes a ``constraints_func`` (TPE, NSGA-II, NSGA-III, and GP on
Optuna >= 4.2) gets :func:`trial_violations`, which reads them back: so Optuna's own
constraint handling (constrained domination, feasibility-aware TPE and GP) applies. A trial
without constraints (a failure, a pruned run, a study without them) reports none; a told
point that was never asked for carries its violations as Optuna's after-trial processing
would have recorded them.

Types: floats and integers with their log scales, ordered values as an integer position (so
samplers see their order), categorical and logical values as Optuna categories.

Conditional spaces (:mod:`emews._conditions`) are sampled define-by-run, as an Optuna objective
would: a trial is asked with no distributions and each parameter is suggested only once it is
active, parents before their children, so a trial holds (and a told point that was never
asked for is added with) only its active parameters and their distributions. TPE's
``multivariate`` models the parameters every trial has, with ``group = true`` each group
of parameters that occur together; CMA-ES models the numeric parameters every trial has and
samples the others independently.
"""

import importlib.metadata
import importlib.util
import inspect
import warnings

from emews.plugin import (FLAG, Algorithm, Categorical, Choice, ConfigError, Invalid, Logical,
                          Number, Ordered, PrunedResult, Rule, check_choice, check_number,
                          check_option, is_failure, optional_import, pack_state, point_key,
                          unpack_state)

SAMPLERS = {"tpe": "TPESampler", "cmaes": "CmaEsSampler", "gp": "GPSampler",
            "random": "RandomSampler", "qmc": "QMCSampler", "nsga2": "NSGAIISampler",
            "nsga3": "NSGAIIISampler"}
SINGLE_OBJECTIVE = ("cmaes",)   # samplers that refuse a study of several objectives
MULTIOBJECTIVE_GP_SINCE = (4, 4)   # GPSampler's first Optuna (major, minor) with several objectives
VIOLATIONS = "constraints"   # the user attribute that holds a trial's constraint violations
# where Optuna records what a constraints_func returned (Optuna 4 and 5): a told point that
# was never asked for gets it directly, since no sampler's after_trial sees it
OPTUNA_CONSTRAINTS = "constraints"
PROBABILITY = Number(minimum=0, maximum=1)
REDRAWS = 100   # a sampler's tries at a point no forbidden clause excludes, then a random one
WARM_START_TRIALS = 10   # WS-CMA-ES keeps the best tenth of the source trials: at least one
COUNT = Number(integer=True, minimum=0)
POSITIVE = Number(above=0)
# option -> rule (emews.plugin.Rule), per sampler; CMA-ES also takes x0 (a StartPoint)
SAMPLER_OPTIONS = {
    "tpe": {"n_startup_trials": COUNT, "n_ei_candidates": Number(integer=True, minimum=1),
            "multivariate": FLAG, "group": FLAG, "constant_liar": FLAG, "consider_prior": FLAG,
            "prior_weight": POSITIVE, "consider_magic_clip": FLAG, "consider_endpoints": FLAG,
            "warn_independent_sampling": FLAG},
    "cmaes": {"sigma0": POSITIVE, "n_startup_trials": COUNT,
              "popsize": Number(integer=True, minimum=4), "use_separable_cma": FLAG,
              "with_margin": FLAG, "lr_adapt": FLAG, "consider_pruned_trials": FLAG,
              "warn_independent_sampling": FLAG},
    "gp": {"n_startup_trials": COUNT, "deterministic_objective": FLAG,
           "warn_independent_sampling": FLAG},
    "random": {},
    "qmc": {"qmc_type": Choice(("sobol", "halton")), "scramble": FLAG,
            "warn_asynchronous_seeding": FLAG, "warn_independent_sampling": FLAG},
    "nsga2": {"population_size": Number(integer=True, minimum=2), "mutation_prob": PROBABILITY,
              "crossover_prob": PROBABILITY, "swapping_prob": PROBABILITY},
    "nsga3": {"population_size": Number(integer=True, minimum=2), "mutation_prob": PROBABILITY,
              "crossover_prob": PROBABILITY, "swapping_prob": PROBABILITY,
              "dividing_parameter": Number(integer=True, minimum=1)},
}
CMA_VARIANTS = ("lr_adapt", "use_separable_cma", "with_margin")   # at most one of them
# Optuna 5's defaults for a single objective, set explicitly so that Optuna 4 behaves the same
SAMPLER_DEFAULTS = {"tpe": {"constant_liar": True, "multivariate": True}}


class OptunaSearch(Algorithm):
    """An Optuna sampler on an in-memory study, driven by ask/tell."""

    multiobjective = True

    def __init__(self, space, seed=None, sampler="tpe", objectives=1, **sampler_options):
        super().__init__(space, seed)
        optuna = optional_import("optuna", "bayes")
        check_choice("sampler", sampler, list(SAMPLERS))
        self.objectives = check_number("objectives", objectives, 1, integer=True)
        if objectives > 1 and sampler in SINGLE_OBJECTIVE:
            raise ConfigError("[algorithm].sampler", f"{SAMPLERS[sampler]} searches one "
                              f"objective only, and this study has {objectives} (choose one of "
                              f"{', '.join(s for s in SAMPLERS if s not in SINGLE_OBJECTIVE)})",
                              sampler)
        if sampler == "cmaes":
            optional_import("cmaes", "bayes")
        if sampler == "gp" and importlib.util.find_spec("torch") is None:
            raise ConfigError("[algorithm].sampler", "Optuna's GPSampler needs PyTorch, which "
                              "is not installed: pip install torch (or choose sampler = "
                              "\"tpe\", \"cmaes\", \"random\" or \"qmc\")", sampler)
        if sampler == "gp" and objectives > 1 and \
                tuple(int(n) for n in optuna.__version__.split(".")[:2]) < MULTIOBJECTIVE_GP_SINCE:
            raise ConfigError("[algorithm].sampler", f"Optuna's GPSampler takes several "
                              f"objectives from Optuna 4.4 on, and this "
                              f"is Optuna {optuna.__version__}: pip install -U optuna (or "
                              f"choose sampler = \"tpe\", \"nsga2\" or \"nsga3\")", sampler)
        self.sampler_class = getattr(optuna.samplers, SAMPLERS[sampler])
        self.sampler_options = {**SAMPLER_DEFAULTS.get(sampler, {}), **_check_sampler_options(
            sampler, sampler_options, space, self.sampler_class)}
        if "constraints_func" in inspect.signature(self.sampler_class.__init__).parameters:
            self.sampler_options["constraints_func"] = trial_violations
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.storage = optuna.storages.InMemoryStorage()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # Optuna's experimental and deprecated options
            self.study = optuna.create_study(storage=self.storage, study_name="emews",
                                             directions=["minimize"] * objectives,
                                             sampler=self._sampler())
        self.distributions = distributions(space)
        self.trials = {}            # point key -> numbers of the running trials at that point
        self.live = {}              # trial number -> its Trial, since it was asked in this run
        self.warm_started = sampler != "cmaes" or bool(
            {"x0", "sigma0", "source_trials", "use_separable_cma"} & set(sampler_options))

    def ask(self, n):
        if not self.warm_started:
            self._warm_start_cmaes()
        points = []
        for _ in range(n):
            trial, point = self._ask_allowed()
            self.trials.setdefault(point_key(point), []).append(trial.number)
            self.live[trial.number] = trial
            points.append(point)
        return points

    def tell(self, points, values):
        from optuna.trial import TrialState, create_trial

        for point, value in zip(points, values):
            told = self._values(value)
            violations = list(getattr(value, "violations", ()))
            running = self.trials.get(point_key(point))
            if running:
                trial = running.pop(0)
                if not running:
                    del self.trials[point_key(point)]
                live = self.live.pop(trial, None)
                if isinstance(value, PrunedResult) and self.objectives == 1:
                    for step, reported in value.curve.items() if live is not None else ():
                        live.report(reported, step)   # as Optuna's own pruners leave a trial
                    self.study.tell(trial, state=TrialState.PRUNED)
                elif told is None:
                    self.study.tell(trial, state=TrialState.FAIL)
                else:
                    if violations:
                        self.storage.set_trial_user_attr(self._trial_id(trial), VIOLATIONS,
                                                         violations)
                    self.study.tell(trial, told)
            elif self.space.contains(point):
                params = {p.name: encode(p, point[p.name]) for p in self.space.free
                          if p.name in point}   # its active parameters
                constrained = violations and told is not None
                pruned = isinstance(value, PrunedResult) and self.objectives == 1
                system_attrs = {OPTUNA_CONSTRAINTS: violations} if constrained else {}
                generation_key = getattr(self.study.sampler, "_get_generation_key", None)
                if generation_key is not None:   # NSGA-II or -III: it breeds from the history
                    system_attrs[generation_key()] = 0
                self.study.add_trial(create_trial(
                    params=params, distributions={name: self.distributions[name]
                                                  for name in params}, values=told,
                    intermediate_values={step: v for step, v in value.curve.items()
                                         if v is not None} if pruned else None,
                    state=TrialState.PRUNED if pruned else
                    TrialState.FAIL if told is None else TrialState.COMPLETE,
                    user_attrs={VIOLATIONS: violations} if constrained else None,
                    system_attrs=system_attrs or None))

    def _ask_allowed(self):
        """A new trial and its point, one that no forbidden clause excludes. A forbidden
        point's trial ends as ``FAIL`` (which every sampler skips) and the sampler is asked
        again, up to :data:`REDRAWS` times; then the trial is a random allowed point (queued
        with ``enqueue_trial``)."""
        from optuna.trial import TrialState

        for redraw in range(REDRAWS + 1):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if redraw == REDRAWS:
                    drawn = self.space.sample(self.rng)[0]
                    self.study.enqueue_trial({p.name: encode(p, drawn[p.name])
                                              for p in self.space.free if p.name in drawn})
                trial = self.study.ask()
                point = self._suggest(trial)
            if not self.space.is_forbidden(point):
                return trial, point
            self.study.tell(trial, state=TrialState.FAIL)

    def _suggest(self, trial):
        """The point of a new trial, sampled define-by-run: each parameter suggested (with
        its distribution) only once it is active, parents before their children."""
        return self.space.complete({}, lambda param: decode(
            param, suggest(trial, param.name, self.distributions[param.name])))

    def _values(self, value):
        """The trial's values for a told ``value``; ``None`` for a failure (a non-finite
        value, or not one value per objective)."""
        told = getattr(value, "values", (value,) if self.objectives == 1 else ())
        if len(told) != self.objectives or any(is_failure(v) for v in told):
            return None
        return [float(v) for v in told]

    def _trial_id(self, number):
        """The storage's id of this study's trial ``number``."""
        return self.storage.get_trial_id_from_study_id_trial_number(
            self.storage.get_study_id_from_name("emews"), number)

    def state(self):
        return pack_state(self, {"storage": self.storage, "sampler": self.study.sampler,
                                 "trials": self.trials, "warm_started": self.warm_started,
                                 "rng": self.rng.bit_generator.state}, pickled=True)

    def restore(self, state):
        import optuna

        data = unpack_state(self, state)
        self.storage, self.trials, self.live = data["storage"], data["trials"], {}
        self.warm_started = data["warm_started"]
        if "rng" in data:   # a state saved before forbidden points were drawn again has none
            self.rng.bit_generator.state = data["rng"]
        self.study = optuna.Study(study_name="emews", storage=self.storage,
                                  sampler=data["sampler"])

    def _sampler(self, **extra):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # Optuna's experimental and deprecated options
            return self.sampler_class(seed=self.seed, **self.sampler_options, **extra)

    def _warm_start_cmaes(self):
        """Start CMA-ES from the told history (when there is one).

        With at least ``WARM_START_TRIALS`` told trials, Optuna's warm-starting CMA-ES
        (``source_trials``) estimates the start distribution from the best of them; with
        fewer, the search is centred on the best one (``x0``). CMA-ES models only the numeric
        parameters (of a conditional space, those every trial has) and wants source trials with
        exactly those, so they are cut down to them.
        """
        from optuna.distributions import CategoricalDistribution
        from optuna.trial import TrialState, create_trial

        self.warm_started = True
        numeric = {name: d for name, d in self.distributions.items()
                   if not isinstance(d, CategoricalDistribution)}
        told = self.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        # of a conditional space, the numeric parameters every told trial has
        numeric = {name: d for name, d in numeric.items() if all(name in t.params for t in told)}
        if not told or not numeric:
            return

        def cut(params):
            return {name: value for name, value in params.items() if name in numeric}

        if len(told) >= WARM_START_TRIALS:
            warm = {"source_trials": [create_trial(
                params=cut(t.params), distributions=cut(t.distributions), value=t.value)
                for t in told]}
        else:
            warm = {"x0": cut(min(told, key=lambda t: t.value).params)}
        self.study.sampler = self._sampler(**warm)


def trial_violations(trial):
    """Optuna's ``constraints_func``: the violations stored with the trial (none if none)."""
    return trial.user_attrs.get(VIOLATIONS, ())


def _check_sampler_options(sampler, options, space, sampler_class):
    """The options of ``sampler``, each checked by its rule (``x0`` in Optuna's encoding); only
    those that the installed Optuna's ``sampler_class`` takes."""
    takes = inspect.signature(sampler_class.__init__).parameters
    rules = {name: rule for name, rule in SAMPLER_OPTIONS[sampler].items() if name in takes}
    if sampler == "cmaes":
        rules["x0"] = StartPoint(space)
    checked = {}
    for name, value in options.items():
        if name not in rules:
            listing = f"options: {', '.join(rules)}" if rules else "it takes none"
            raise ConfigError(f"[algorithm].{name}", f"is not an option of "
                              f"{SAMPLERS[sampler]} ({listing}) in Optuna {_version()}", value)
        checked[name] = check_option(name, value, rules[name])
    if checked.get("group") and checked.get("multivariate", True) is False:
        raise ConfigError("[algorithm].group", "group = true needs multivariate = true", True)
    variants = [name for name in CMA_VARIANTS if checked.get(name)]
    if len(variants) > 1:
        raise ConfigError(f"[algorithm].{variants[1]}", f"at most one of "
                          f"{', '.join(CMA_VARIANTS)} may be true", variants)
    return checked


def _version():
    return importlib.metadata.version("optuna")


class StartPoint(Rule):
    """CMA-ES's start point: a value for every numeric parameter of ``space``; the rule
    returns it in Optuna's encoding."""

    def __init__(self, space):
        self.space = space

    def __call__(self, x0):
        numeric = [p for p in self.space.free if isinstance(p, Ordered) or
                   not isinstance(p, (Categorical, Logical))]
        names = [p.name for p in numeric]
        if not isinstance(x0, dict) or sorted(x0) != sorted(names):
            raise Invalid(f"must be a table with a value for each of {', '.join(names)}", x0)
        for param in numeric:
            if not param.contains(x0[param.name]):
                raise Invalid("must be a value of the parameter in the search space",
                              x0[param.name], f".{param.name}")
        return {p.name: encode(p, x0[p.name]) for p in numeric}


def distributions(space):
    """Optuna's distribution of each free parameter of ``space``, by name (ordered values by
    position: see :func:`encode`)."""
    return {param.name: _distribution(param) for param in space.free}


def suggest(trial, name, distribution):
    """Optuna's suggestion on ``trial`` of the parameter ``name`` from ``distribution``."""
    from optuna.distributions import CategoricalDistribution, IntDistribution

    if isinstance(distribution, CategoricalDistribution):
        return trial.suggest_categorical(name, distribution.choices)
    method = trial.suggest_int if isinstance(distribution, IntDistribution) else \
        trial.suggest_float
    return method(name, distribution.low, distribution.high, log=distribution.log)


def _distribution(param):
    from optuna.distributions import (CategoricalDistribution, FloatDistribution,
                                      IntDistribution)

    if isinstance(param, Ordered):
        return IntDistribution(0, len(param.values) - 1)
    if isinstance(param, Categorical):
        return CategoricalDistribution(param.values)
    if isinstance(param, Logical):
        return CategoricalDistribution((False, True))
    kind = IntDistribution if param.kind == "int" else FloatDistribution
    return kind(param.lower, param.upper, log=param.log)


def encode(param, value):
    """``value`` of ``param`` as Optuna's distribution holds it (ordered values by position)."""
    return param.index(value) if isinstance(param, Ordered) else value


def decode(param, value):
    """The value of ``param`` for Optuna's ``value`` of it."""
    if isinstance(param, Ordered):
        return param.values[int(value)]
    if isinstance(param, (Categorical, Logical)):
        return value
    return int(value) if param.kind == "int" else float(value)
