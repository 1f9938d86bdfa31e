"""``app``: the Model Shell, ``bash model.sh COMMAND...``, in the run's directory.

models/README.md ("How a model runs") says what ``model.sh`` does, where the value comes from
and what a successful run leaves (as Supervisor's model.sh: ``run_command.txt``, a line of
``EXPDIR/run/output.csv``). The run is its own process group: a timeout or a cancel kills it
all. An evaluation of several ranks runs ``model.sh LAUNCHER ... python _launcher.py
COMMAND...`` (:mod:`.launcher`).
"""

import importlib.resources
import os
import subprocess
import sys
from pathlib import Path

from . import _launcher as launcher, _process as process
from ._base import EvaluationFailed, Implementation
from ._model_output import append_output_csv, read_app_result, tail, write_run_command

MODEL_RUNNER = "emews.models.runner"


def model_shell():
    """The path of ``model.sh``, the shell half of the Model Shell."""
    return str(importlib.resources.files("emews.models").joinpath("model.sh"))


def run_model_shell(command, params_json, context, model_env, watch):
    """Run ``command`` under ``model.sh`` in the run directory; return the log's path."""
    run_dir = context.run_dir
    params_file = run_dir / "params.json"
    params_file.write_text(params_json, encoding="utf-8")
    (run_dir / "result.txt").unlink(missing_ok=True)
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    env = process.child_environ(dict(model_env, EMEWS_PARAMS_FILE=str(params_file),
                                     EMEWS_RUN_DIR=str(run_dir), EXP_ID=context.exp_id,
                                     RUN_ID=context.run_id, PATH=path,
                                     EMEWS_CHECKPOINT_DIR=str(context.checkpoint_dir)))
    if context.resources.ranks > 1:  # model.sh starts the site's launcher, which the ranks
        site_launcher = launcher.Launcher.from_environ()
        env.update(site_launcher.environ(context.resources))
        # each rank sets its own variables, then execs the command: _launcher.py run as a file
        # (it needs only the standard library), so that no process imports emews for it
        command = [*site_launcher.prefix(context.resources), launcher.python(), "-I", "-S",
                   launcher.__file__, *command]
    log = run_dir / "model.log"
    log.write_bytes(b"")
    with open(log, "ab") as out:   # appending: the worker's notes (_reporting.py) stay in it
        child = process.start(["bash", model_shell(), *command], cwd=run_dir, env=env,
                              stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    code = process.wait(child, watch, log)
    if code != 0:
        last = next((line for line in reversed(tail(log).splitlines()) if line.strip()), "")
        raise EvaluationFailed(f"the model {process.describe_exit(code)}: {last}", tail(log))
    write_run_command(run_dir, command)
    return log


class App(Implementation):
    """Run a command (an argument list) through the Model Shell."""

    def __init__(self, command, model_env):
        self.command = list(command or ["python3", "-u", "-m", MODEL_RUNNER])
        self.model_env = model_env

    def run(self, params, params_json, context, watch):
        log = run_model_shell(self.command, params_json, context, context.env, watch)
        value = read_app_result(context.run_dir, log, self.model_env.get("MODEL_RETURN"))
        append_output_csv(context.run_dir, params if isinstance(params, dict) else {},
                          context.run_id, value)
        return value
