"""Evaluating one point: ``Objective.evaluate(params_json, run_id, cancelled) -> Outcome``.

::

    objective.py   Objective: configuration -> one implementation; evaluate() never raises
      py.py        module:function, in a nanny child or in this interpreter
        isolated.py  the worker's handle on its nanny  <-channel.py->  nanny.py  the child
      app.py       the Model Shell (model.sh) in the run directory
      container.py a model image through the Model Shell: apptainer, singularity, charliecloud,
                   podman, podman-hpc or shifter
      echo.py      no model: the sum of squares
    base.py        RunContext, current_run, EvaluationFailed, the Implementation contract
    outcome.py     Outcome and its one wire form (to_wire / from_wire), for every transport
    process.py     model process groups: environment, timeout, cancel, kill, signals
      deathsig.py  PR_SET_PDEATHSIG for a child (a tiny exec shim)
    model_output.py    values and bounded log tails
    env_objective.py   from_env, candle_model_train (Supervisor's and Swift/T's way in)

``CANDLE_MODEL_IMPL`` (or ``[study].impl``) chooses the implementation. Parameters never pass
through a shell: they are in ``RUN_DIR/params.json`` and every command is an argument list.
``BENCHMARK_TIMEOUT`` reaches the model as ``params['timeout']`` (a soft stop at the end of an
epoch); ``[study].timeout`` (``SH_TIMEOUT``) kills the run's process group.
"""

from ..config import CONTAINER_RUNTIMES, IMPLEMENTATIONS, RETURN_EPOCHS
from .base import EvaluationFailed, RunContext, current_run
from .objective import Objective
from .outcome import BadOutcome, Outcome
from .model_output import extract_value
from .env_objective import candle_model_train, from_env

__all__ = ["Objective", "Outcome", "BadOutcome", "RunContext", "current_run", "EvaluationFailed",
           "extract_value", "candle_model_train", "from_env", "IMPLEMENTATIONS",
           "RETURN_EPOCHS", "CONTAINER_RUNTIMES"]
