"""Helpers of emews.core.algorithm that algorithms share: extras, option checks, failure values."""

import math
import sys

import pytest

from emews.core.algorithm import check_keywords, check_number, failure_value, optional_import
from emews.algorithms.ga import GA
from emews.algorithms.mbo import MBO
from emews.algorithms.optuna_search import OptunaSearch
from emews.algorithms.skopt_search import SkoptSearch
from emews.errors import ConfigError, PluginError
from emews.space import Space
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
