"""What a pool's leading worker does with an evaluation of two ranks. Mirrors the leading rank
in emews/pools: its objective's ``implementation.run`` with the context's resources.

``launch_driver.py OUT EXPDIR``, as one step of a Slurm job (tests/test_launch_slurm.py): run
an ``app`` and a ``py`` evaluation of ``Resources(2, (this node, this node))`` with the site's
launcher (``EMEWS_LAUNCH``: srun steps), and write what came of each to OUT (JSON).

``launch_driver.py hold EXPDIR``: a worker (its SIGINT/SIGTERM handler, as emews/_worker.py
installs it; its pid in ``EXPDIR/worker.pid``) running one ``py`` evaluation of two ranks that
sleep until it is interrupted (tests/test_launch_ranks.py: Ctrl-C; tests/test_launch_slurm.py:
SIGKILL)."""

import json
import os
import socket
import sys
from pathlib import Path

from emews.evaluate import _process as process
from emews.evaluate._app import App
from emews.evaluate._base import EvaluationFailed, Resources, RunContext
from emews.evaluate._py import Py


def evaluate(implementation, point, run_id, expdir):
    host = socket.gethostname()
    context = RunContext("EXP001", run_id, "launch", expdir, {},
                         Resources(2, (host, host), ()))
    try:
        return {"value": float(implementation.run(point, json.dumps(point), context,
                                                  process.Watch(120, grace=2)))}
    except EvaluationFailed as exc:
        return {"error": str(exc)}


def main(out, expdir):
    app = App([sys.executable, str(Path(__file__).with_name("launch_models.py")), "app"], {})
    results = {"app": evaluate(app, {"x": 1.5}, "RUN000001", expdir),
               "py": evaluate(Py("launch_models:check_group"), {"x": 2.0}, "RUN000002", expdir),
               "killed": evaluate(Py("launch_models:check_group"), {"x": 1.0, "die_rank": 1},
                                  "RUN000003", expdir)}
    Path(out).write_text(json.dumps(results))


def hold(expdir):
    Path(expdir).mkdir(parents=True, exist_ok=True)
    Path(expdir, "worker.pid").write_text(str(os.getpid()))
    process.stop_on_signals()
    evaluate(Py("launch_models:check_group"), {"x": 1.0, "sleep": 600}, "RUN000001", expdir)


if __name__ == "__main__":
    hold(sys.argv[2]) if sys.argv[1] == "hold" else main(*sys.argv[1:])
