"""Helpers of emews.core._algorithm that algorithms share: extras, option checks, failure values."""

import math
import sys

import pytest

from emews.core._algorithm import check_keywords, check_number, failure_value, optional_import
from emews.algorithms.ga import GA
from emews.algorithms.mbo import MBO
from emews.algorithms.optuna_search import OptunaSearch
from emews.algorithms.skopt_search import SkoptSearch
from emews._errors import ConfigError, PluginError
from emews._space import Space
from emews.testing import SPACE


@pytest.mark.parametrize("cls, module, extra", [
    (GA, "deap.algorithms", "ga"), (SkoptSearch, "skopt", "bayes"),
    (OptunaSearch, "optuna", "bayes"), (MBO, "sklearn.ensemble", "mbo"),
])
def test_a_missing_library_names_the_extra_that_brings_it(monkeypatch, cls, module, extra):
    monkeypatch.setitem(sys.modules, module, None)     # what an uninstalled package looks like
    with pytest.raises(PluginError, match=rf"needs the optional package '{module}'.*"
                                          rf"pip install 'emews-hpo\[{extra}\]'"):
        cls(Space.from_ga_json(SPACE))


def test_optional_import_returns_the_module():
    assert optional_import("math", "none") is math


def test_option_checks_name_the_option_the_rule_and_the_value():
    assert check_number("n", 3, 1, integer=True) == 3
    assert check_number("n", None, 1, allow_none=True) is None
    for value in (0, 2.5, True, "3"):
        with pytest.raises(ConfigError, match=r"^\[algorithm\]\.n: must be an integer >= 1, got"):
            check_number("n", value, 1, integer=True)

    def library(dimensions, *, alpha=1, beta=2):
        """A library callable."""

    check_keywords(library, {"alpha": 3}, exclude=("dimensions",))
    with pytest.raises(ConfigError, match=r"\[algorithm\]\.gamma: is not an option of "
                                          r".*library \(options: alpha, beta\), got 4"):
        check_keywords(library, {"gamma": 4}, exclude=("dimensions",))


def test_a_failure_counts_as_the_worst_value_plus_a_tenth_of_the_range():
    assert failure_value([1.0, math.nan, 3.0, -math.inf]) == pytest.approx(3.2)
    assert failure_value([2.0, 2.0]) == 3.0
    assert failure_value([math.nan, math.inf]) is None


def test_a_pruned_run_counts_below_the_finished_runs_and_above_the_failures():
    from emews.core._algorithm import pruned_value

    finished = [1.0, 3.0, math.nan]
    assert pruned_value(0.5, finished) == 3.0                    # never above a finished run
    assert pruned_value(3.1, finished) == 3.1                    # its curve orders it
    assert pruned_value(9.0, finished) == failure_value(finished) == pytest.approx(3.2)
    assert pruned_value(0.5, [math.nan]) == 0.5                  # none finished: its value
    assert pruned_value(math.inf, finished) is None              # a failure


@pytest.mark.parametrize("cls", [GA, MBO, SkoptSearch])
def test_the_model_based_searches_rank_a_pruned_run_between_finished_and_failed(cls):
    """What each search learns: a pruned run below the finished ones (even when its last
    value is lower), re-ranked when a worse finished run comes in, and above a failure."""
    from emews.core._algorithm import PrunedResult

    plane = [{"name": "x", "type": "float", "lower": 0.0, "upper": 1.0}]
    search = cls(Space.from_ga_json(plane), seed=1)
    points = [{"x": x} for x in (0.1, 0.2, 0.3, 0.4)]
    search.tell(points[:2], [1.0, PrunedResult({1: 5.0, 3: 0.5})])
    search.tell(points[3:], [2.0])
    search.tell(points[2:3], [math.nan])   # gp fixes a failure's value when it is told
    learned = learned_values(search)
    assert learned[1.0] < learned[2.0] <= learned[0.5] < learned[math.nan]


def learned_values(search):
    """What ``search`` (GA, MBO or SkoptSearch) learned at each point, by the point's value
    there in the test (its last reported value for the pruned one)."""
    told = {0.1: 1.0, 0.2: 0.5, 0.3: math.nan, 0.4: 2.0}
    if isinstance(search, GA):
        return {told[round(key_x(k), 1)]: f[0] for k, f in search.known.items()}
    if isinstance(search, MBO):
        return {told[round(x[0], 1)]: v for x, v in zip(search.X, search._values(len(search.y)))}
    xs, ys = search.optimizer.Xi, search.optimizer.yi
    return {told[round(x[0], 1)]: y for x, y in zip(xs, ys)}


def key_x(key):
    import json

    return json.loads(key)["x"]


def test_pruned_values_rank_each_run_as_pruned_value_does():
    from emews.core._algorithm import pruned_value, pruned_values

    finished = [2.0, math.nan, 3.0, 2.5]
    lasts = [0.5, 3.1, 9.0, math.inf]
    assert pruned_values(lasts, finished) == [pruned_value(v, finished) for v in lasts]
    assert pruned_values([0.5], []) == [0.5]
