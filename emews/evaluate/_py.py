"""``py``: call ``module:function(params)``, in a nanny child (isolated) or in this interpreter.

Isolated (the default), each concurrent caller gets a nanny of its own (:class:`~.isolated.Nanny`;
models/README.md says what isolation buys and costs). An evaluation of several ranks runs as
that many processes sharing ``emews.comm()`` (:mod:`.group`).
"""

import threading
import traceback

from ..core._algorithm import import_dotted
from ..core._criteria import OBJECTIVE
from .._errors import ConfigError
from ._base import EvaluationFailed, Implementation, _current_run
from ._group import run_group
from ._isolated import Nanny
from ._reporting import Pruned, Reporter, _reporter
from ._model_output import decode_tail, extract


def call_objective(function, params, context, model_return=OBJECTIVE, epoch="last",
                   send=None):
    """``function(params)`` as the run ``context`` (see ``current_run()``), its reports going
    to ``send`` (see :mod:`.reporting`): the value to minimize (see
    :func:`~._model_output.extract`), :class:`Pruned` when a report stopped it (whatever the
    model did after), or :class:`EvaluationFailed` with the reason and the traceback."""
    reporter = Reporter(send)
    run_token, reporter_token = _current_run.set(context), _reporter.set(reporter)
    try:
        result = function(params)
        if reporter.pruned is not None:
            raise reporter.pruned
        return extract(result, model_return, epoch)
    except (EvaluationFailed, Pruned):
        raise
    except (Exception, SystemExit, KeyboardInterrupt) as exc:  # noqa: BLE001 - the model's
        if reporter.pruned is not None:
            raise reporter.pruned from None   # it was stopped, and failed on its way out
        traceback.print_exc()
        raise EvaluationFailed(describe_exception(exc),
                               decode_tail(traceback.format_exc().encode("utf-8",
                                                                         "backslashreplace")))
    finally:
        _current_run.reset(run_token)
        _reporter.reset(reporter_token)


def describe_exception(exc):
    """``RuntimeError: message`` for an exception; ``the model raised SystemExit: 3`` for an
    exit or interrupt that a model raised."""
    if isinstance(exc, Exception):
        return f"{type(exc).__name__}: {exc}"
    text = str(exc)
    return f"the model raised {type(exc).__name__}" + (f": {text}" if text else "")


class Py(Implementation):
    """A ``module:function`` objective (imported here too, so that a bad path is a
    :class:`~emews._errors.ConfigError` before anything runs)."""

    def __init__(self, path, model_return=OBJECTIVE, epoch="last", isolate=True):
        self.function = import_dotted(path, "[study].objective")
        if not callable(self.function):
            raise ConfigError("[study].objective", "must name a callable", path)
        self.path, self.model_return, self.epoch, self.isolate = path, model_return, epoch, isolate
        self.idle, self.nannies = [], []
        self.lock = threading.Lock()

    def run(self, params, params_json, context, watch):
        if context.resources.ranks > 1:   # k processes started by the site's launcher
            return run_group(self.task(params_json, context), context, watch)
        if not self.isolate:
            return call_objective(self.function, params, context, self.model_return,
                                  self.epoch, watch.report)
        with self.lock:
            nanny = self.idle.pop() if self.idle else None
            if nanny is None:
                nanny = Nanny(watch.grace)
                self.nannies.append(nanny)
        try:
            return nanny.run(self.task(params_json, context), watch)
        finally:
            with self.lock:
                self.idle.append(nanny)

    def task(self, params_json, context):
        """What a nanny (or each process of a group) needs to run one point."""
        return {"objective": self.path, "model_return": self.model_return, "epoch": self.epoch,
                "params_json": params_json, "context": context.as_dict()}

    def close(self):
        with self.lock:
            nannies, self.nannies, self.idle = self.nannies, [], []
        for nanny in nannies:
            nanny.close()
