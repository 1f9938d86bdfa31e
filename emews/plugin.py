"""``from emews.plugin import ...``: what a plugin needs, the names that stay stable.

A plugin is a search algorithm registered under the ``emews.algorithms`` entry point (or named
by a dotted path), or a model and its runner. The algorithms and models shipped with emews
(``emews.algorithms``, ``emews.models``) import only these names and those of ``emews``, as a
third party's plugin would; a test keeps them to it. Everything else under ``emews.`` may move
between releases.

For a search algorithm:

* the contract: :class:`Algorithm` (``ask``/``tell``/``done``/``state``/``restore``), the
  values it is told (a float to minimize, ``NaN`` for a failure, :class:`PrunedResult` for a
  run the pruner stopped, :class:`Objectives` in a study of several objectives or with
  constraints), its state's frame (:func:`pack_state`, :func:`unpack_state`) and
  :func:`point_key`; a population-based search's segment record (:data:`SEGMENT`, see
  :mod:`emews.core._segments`); what failures and pruned runs count as for a model of the results
  (:func:`is_failure`, :func:`failure_value`, :func:`pruned_value`, :func:`pruned_values`);
  :func:`optional_import` for an optional library, :func:`import_dotted` for a function an option names;
* the search space: :class:`Space` and its parameters (:class:`Float`, :class:`Int`,
  :class:`Categorical`, :class:`Ordered`, :class:`Logical`, :class:`Constant`, and mlrMBO's
  :class:`TransformedInt` and :class:`TransformedFloat`);
* its options, each checked in one line naming ``[algorithm].OPTION``, the rule and the value:
  :func:`check_choice`, :func:`check_number`, :func:`check_flag`, :func:`check_text`,
  :func:`check_table`, :func:`check_keywords`, or any rule with :func:`check_option`. A rule is
  a :class:`Rule` (:class:`Number`, :class:`Choice`, :data:`FLAG`, or a subclass of your own)
  that returns the value it accepts or raises :class:`Invalid`; bad input elsewhere is a
  :class:`ConfigError`;
* the conformance suite, :class:`Conformance`: subclass it in a test module.

For a model (beside ``emews.report``, ``emews.Pruned``, ``emews.checkpoint_dir`` and
``emews.comm``): the run it is evaluated in (:func:`current_run`, a :class:`RunContext`), how it
fails (:class:`EvaluationFailed`), whether ``emews.report`` may be called (:func:`in_run`), the
value of what it returned (:func:`extract`, :func:`objective_names`, the epochs
:data:`RETURN_EPOCHS`), and the report of a model run by the Model Shell: a line of
:data:`REPORT_LINE` and a :class:`Report`'s wire form (JSON) on its output.
"""

import importlib
from typing import TYPE_CHECKING, Any

from .core._algorithm import (Algorithm, Objectives, PrunedResult, check_choice, check_flag,
                             check_keywords, check_number, check_option, check_table, check_text,
                             failure_value, import_dotted, is_failure, optional_import,
                             pack_state, point_key, pruned_value, pruned_values,
                             unpack_state)
from .core._criteria import objective_names
from .core._segments import SEGMENT
from ._errors import ConfigError
from ._space import (Categorical, Constant, Float, Int, Logical, Ordered, Space, TransformedFloat,
                    TransformedInt)
from ._validation import FLAG, Choice, Invalid, Number, Rule

if TYPE_CHECKING:
    from ._config import RETURN_EPOCHS
    from .evaluate._base import EvaluationFailed, RunContext, current_run
    from .evaluate._outcome import Report
    from .evaluate._reporting import LINE as REPORT_LINE
    from .evaluate._reporting import in_run
    from .evaluate._model_output import extract
    from .testing import Conformance

# A model's names and the conformance suite, imported on first use: an algorithm that imports
# this module loads neither the evaluation machinery nor the stores the suite drives.
_LAZY = {"RETURN_EPOCHS": ("emews._config", "RETURN_EPOCHS"),
         "EvaluationFailed": ("emews.evaluate._base", "EvaluationFailed"),
         "RunContext": ("emews.evaluate._base", "RunContext"),
         "current_run": ("emews.evaluate._base", "current_run"),
         "Report": ("emews.evaluate._outcome", "Report"),
         "REPORT_LINE": ("emews.evaluate._reporting", "LINE"),
         "in_run": ("emews.evaluate._reporting", "in_run"),
         "extract": ("emews.evaluate._model_output", "extract"),
         "Conformance": ("emews.testing", "Conformance")}

__all__ = [
    # search algorithms: the contract
    "Algorithm", "PrunedResult", "Objectives", "pack_state", "unpack_state", "point_key",
    "is_failure", "failure_value", "pruned_value", "pruned_values", "optional_import",
    "import_dotted", "SEGMENT",
    # the search space
    "Space", "Float", "Int", "Categorical", "Ordered", "Logical", "Constant", "TransformedInt",
    "TransformedFloat",
    # options
    "check_choice", "check_number", "check_flag", "check_text", "check_table", "check_keywords",
    "check_option", "Rule", "Number", "Choice", "FLAG", "Invalid", "ConfigError",
    # the conformance suite
    "Conformance",
    # models
    "current_run", "RunContext", "EvaluationFailed", "in_run", "extract", "objective_names",
    "RETURN_EPOCHS", "Report", "REPORT_LINE",
]


def __getattr__(name: str) -> Any:
    """The names of :data:`_LAZY`, imported on first use."""
    if name not in _LAZY:
        raise AttributeError(f"module 'emews.plugin' has no attribute {name!r}")
    module, attribute = _LAZY[name]
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
