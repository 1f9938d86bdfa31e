"""Evaluating one point: ``Objective.evaluate(params_json, run_id, cancelled) -> Outcome``.

::

    _objective.py  Objective: configuration -> one implementation; evaluate() never raises;
                   from_env, candle_model_train (Supervisor's and Swift/T's way in)
      _py.py       module:function, in a nanny child or in this interpreter
        _isolated.py the worker's handle on its nanny  <-_channel.py->  _nanny.py the child
      _app.py      the Model Shell (model.sh) in the run directory
      _container.py a model image through the Model Shell: apptainer, singularity, charliecloud,
                   podman, podman-hpc or shifter
      Echo         no model: the sum of squares
    _base.py       RunContext, current_run, EvaluationFailed, the Implementation contract
    _outcome.py    Outcome and its one wire form (to_wire / from_wire), for every transport
    _process.py    model process groups: environment, timeout, cancel, kill, signals
      _deathsig.py PR_SET_PDEATHSIG for a child (a tiny exec shim)
    _model_output.py   values and bounded log tails

``[study].impl`` (``CANDLE_MODEL_IMPL``) chooses the implementation (docs/src/settings.md).
Parameters never pass through a shell: they are in ``RUN_DIR/params.json`` and every command
is an argument list.
"""

from .._config import CONTAINER_RUNTIMES, IMPLEMENTATIONS, RETURN_EPOCHS
from ._base import EvaluationFailed, RunContext, current_run
from ._objective import Objective, candle_model_train, from_env
from ._outcome import BadOutcome, Outcome
from ._model_output import extract_value

__all__ = ["Objective", "Outcome", "BadOutcome", "RunContext", "current_run", "EvaluationFailed",
           "extract_value", "candle_model_train", "from_env", "IMPLEMENTATIONS",
           "RETURN_EPOCHS", "CONTAINER_RUNTIMES"]
