"""Optuna's samplers (TPE, CMA-ES, GP, random, QMC) through Optuna's own ask/tell interface.

Each point is one trial of an in-memory study: ``ask`` is ``study.ask(distributions)``, ``tell``
is ``study.tell(trial, value)``. Points in flight are running trials, which the samplers
already account for (TPE's ``constant_liar``, on by default in Optuna 5). A failed or
non-finite result ends its trial as ``FAIL``, which every sampler skips. Told points that were
never asked for (a resumed run's history) become finished trials (``study.add_trial``), so they
count towards ``n_startup_trials`` and inform the sampler; CMA-ES, which learns only from its
own generations, is warm-started from them instead (Optuna's ``source_trials``, or ``x0`` at
the best of a short history) when the first point is asked, unless ``x0``/``sigma0`` are set.

Options: ``sampler`` (``tpe``, ``cmaes``, ``gp``, ``random``, ``qmc``) and every keyword of
that sampler's constructor except ``seed`` (e.g. ``n_startup_trials``, ``multivariate``,
``n_ei_candidates``, ``sigma0``, ``popsize``, ``restart_strategy``), checked against its
signature. Optuna's ``GPSampler`` needs PyTorch, which emews does not install.

Types: floats and integers with their log scales, ordered values as an integer position (so
samplers see their order), categorical and logical values as Optuna categories.
"""

import importlib.util
import warnings

from emews.algorithm import (Algorithm, check_choice, check_keywords, is_failure,
                             optional_import, point_key)
from emews.errors import ConfigError
from emews.space import Categorical, Logical, Ordered

SAMPLERS = {"tpe": "TPESampler", "cmaes": "CmaEsSampler", "gp": "GPSampler",
            "random": "RandomSampler", "qmc": "QMCSampler"}
WARM_START_TRIALS = 10   # WS-CMA-ES keeps the best tenth of the source trials: at least one


class OptunaSearch(Algorithm):
    """An Optuna sampler on an in-memory study, driven by ask/tell."""

    def __init__(self, space, seed=None, sampler="tpe", **sampler_options):
        super().__init__(space, seed)
        optuna = optional_import("optuna", "bayes")
        check_choice("sampler", sampler, list(SAMPLERS))
        if sampler == "cmaes":
            optional_import("cmaes", "bayes")
        if sampler == "gp" and importlib.util.find_spec("torch") is None:
            raise ConfigError("[algorithm].sampler", "Optuna's GPSampler needs PyTorch, which "
                              "is not installed: pip install torch (or choose sampler = "
                              "\"tpe\", \"cmaes\", \"random\" or \"qmc\")", sampler)
        self.sampler_class = getattr(optuna.samplers, SAMPLERS[sampler])
        check_keywords(self.sampler_class, sampler_options, exclude=("seed",))
        self.sampler_options = sampler_options
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            self.study = optuna.create_study(direction="minimize", sampler=self._sampler())
        self.distributions = {p.name: _distribution(p) for p in space.free}
        self.trials = {}            # point key -> running trials at that point
        self.warm_started = sampler != "cmaes" or bool(
            {"x0", "sigma0", "source_trials", "use_separable_cma"} & set(sampler_options))

    def ask(self, n):
        if not self.warm_started:
            self._warm_start_cmaes()
        points = []
        for _ in range(n):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                trial = self.study.ask(self.distributions)
            point = self.space.point([_decode(p, trial.params[p.name]) for p in self.space.free])
            self.trials.setdefault(point_key(point), []).append(trial)
            points.append(point)
        return points

    def tell(self, points, values):
        from optuna.trial import TrialState, create_trial

        for point, value in zip(points, values):
            failed = is_failure(value)
            running = self.trials.get(point_key(point))
            if running:
                trial = running.pop(0)
                if not running:
                    del self.trials[point_key(point)]
                if failed:
                    self.study.tell(trial, state=TrialState.FAIL)
                else:
                    self.study.tell(trial, float(value))
            elif self.space.contains(point):
                params = {p.name: _encode(p, point[p.name]) for p in self.space.free}
                self.study.add_trial(create_trial(
                    params=params, distributions=self.distributions,
                    value=None if failed else float(value),
                    state=TrialState.FAIL if failed else TrialState.COMPLETE))

    def _sampler(self, **extra):
        return self.sampler_class(seed=self.seed, **self.sampler_options, **extra)

    def _warm_start_cmaes(self):
        """Start CMA-ES from the told history (when there is one).

        With at least ``WARM_START_TRIALS`` told trials, Optuna's warm-starting CMA-ES
        (``source_trials``) estimates the start distribution from the best of them; with
        fewer, the search is centred on the best one (``x0``). CMA-ES models only the numeric
        parameters and wants source trials with exactly those, so they are cut down to them.
        """
        from optuna.distributions import CategoricalDistribution
        from optuna.trial import TrialState, create_trial

        self.warm_started = True
        numeric = {name: d for name, d in self.distributions.items()
                   if not isinstance(d, CategoricalDistribution)}
        told = self.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        if not told or not numeric:
            return
        if len(told) >= WARM_START_TRIALS:
            warm = {"source_trials": [create_trial(params={k: t.params[k] for k in numeric},
                                                   distributions=numeric, value=t.value)
                                      for t in told]}
        else:
            warm = {"x0": {k: min(told, key=lambda t: t.value).params[k] for k in numeric}}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.study.sampler = self._sampler(**warm)


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


def _encode(param, value):
    return param.index(value) if isinstance(param, Ordered) else value


def _decode(param, value):
    if isinstance(param, Ordered):
        return param.values[int(value)]
    if isinstance(param, (Categorical, Logical)):
        return value
    return int(value) if param.kind == "int" else float(value)
