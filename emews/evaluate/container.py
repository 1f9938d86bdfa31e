"""``container``: the Model Shell runs a model image with ``singularity`` or ``apptainer``.

``RUNTIME exec [--nv] --bind DATA:/candle_data_dir --bind RUN_DIR:/emews_run IMAGE ACTION.sh
DEVICES /candle_data_dir --params_file /emews_run/params.json --experiment_id EXP --run_id RUN``
(IMPROVE's train.sh convention); the value is the last ``IMPROVE_RESULT`` line of
``model.log``. Also chosen by ``impl = "app"`` with ``CANDLE_MODEL_TYPE=SINGULARITY``.
"""

import json
import os
import shutil
from dataclasses import dataclass

from ..config import CONTAINER_RUNTIMES
from ..errors import ConfigError
from .app import run_model_shell
from .base import EvaluationFailed, Implementation
from .results import read_improve_result


@dataclass(frozen=True)
class ContainerCommand:
    """The ``singularity``/``apptainer exec`` command of a model image (IMPROVE's train.sh)."""

    image: str
    action: str = "train"
    runtime: str = "singularity"
    exec_args: tuple = ("--nv",)

    @classmethod
    def from_env(cls, env):
        """Read ``CANDLE_IMAGE``, ``MODEL_ACTION``, ``CANDLE_CONTAINER_RUNTIME`` and
        ``CANDLE_CONTAINER_ARGS``; the runtime defaults to whichever is on ``PATH``."""
        image = env.get("CANDLE_IMAGE")
        if not image:
            raise ConfigError("[model].image (CANDLE_IMAGE)", "the container implementation "
                              "needs the model's image", image)
        runtime = env.get("CANDLE_CONTAINER_RUNTIME") or next(
            (name for name in CONTAINER_RUNTIMES if shutil.which(name)), None)
        if runtime not in CONTAINER_RUNTIMES or not shutil.which(runtime):
            raise ConfigError("[model].container_runtime (CANDLE_CONTAINER_RUNTIME)",
                              f"must be one of {list(CONTAINER_RUNTIMES)}, found on PATH",
                              runtime)
        try:
            exec_args = json.loads(env.get("CANDLE_CONTAINER_ARGS") or '["--nv"]')
        except json.JSONDecodeError:
            exec_args = None
        if not isinstance(exec_args, list) or not all(isinstance(a, str) for a in exec_args):
            raise ConfigError("[model].container_args (CANDLE_CONTAINER_ARGS)",
                              "must be a JSON list of strings", env.get("CANDLE_CONTAINER_ARGS"))
        return cls(image, env.get("MODEL_ACTION") or "train", runtime, tuple(exec_args))

    def command(self, run_dir, data_dir, exp_id, run_id):
        """The argument list for one run."""
        for where, path in (("CANDLE_DATA_DIR", data_dir), ("run directory", run_dir)):
            if ":" in str(path) or "," in str(path):
                raise EvaluationFailed(str(ConfigError(where, "a path bound into a container "
                                                       "must not contain ':' or ','", str(path))))
        devices = os.environ.get("CUDA_VISIBLE_DEVICES", "")
        return [self.runtime, "exec", *self.exec_args,
                "--bind", f"{data_dir}:/candle_data_dir", "--bind", f"{run_dir}:/emews_run",
                self.image, f"{self.action}.sh", devices, "/candle_data_dir",
                "--params_file", "/emews_run/params.json",
                "--experiment_id", exp_id, "--run_id", run_id]


class Container(Implementation):
    """Run the model image's action script through the Model Shell."""

    def __init__(self, model_env, expdir):
        self.container = ContainerCommand.from_env(model_env)
        self.model_env, self.expdir = model_env, expdir

    def run(self, params, params_json, context, watch):
        data_dir = self.model_env.get("CANDLE_DATA_DIR") or str(self.expdir)
        command = self.container.command(context.run_dir, data_dir, context.exp_id,
                                         context.run_id)
        log = run_model_shell(command, params_json, context, self.model_env, watch)
        return read_improve_result(log)
