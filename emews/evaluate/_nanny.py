"""The nanny: the child interpreter that runs a worker's ``py`` objective, task after task.

Started by :class:`emews.evaluate._isolated.Nanny` (its docstring draws the exchange) with
``FD PARENT_PID``, FD its end of a private socketpair. It dies with its worker, turns on
:mod:`faulthandler` (a segfault leaves a Python traceback in the log tail) and imports each
objective once. ``SystemExit`` and ``KeyboardInterrupt`` raised in a model fail that run only.
"""

import faulthandler
import json
import os
import socket
import sys

from . import _channel as channel
from ._base import EvaluationFailed, RunContext
from ._deathsig import set_death_signal
from ._outcome import Report
from ._py import call_objective, describe_exception
from ._reporting import Pruned


def main(argv):
    """Serve tasks on the socket whose descriptor is ``argv[0]`` until the worker closes it."""
    fd, parent = int(argv[0]), int(argv[1])
    if not set_death_signal(parent):
        return 1
    faulthandler.enable()
    os.set_inheritable(fd, False)
    sock = socket.socket(fileno=fd)
    functions = {}
    while True:
        task = channel.receive(sock)
        if task is None:
            return 0
        reply = run(task, functions, report_sender(sock))
        sys.stdout.flush()
        sys.stderr.flush()
        channel.send(sock, reply)


def report_sender(sock):
    """The ``send`` of this child's reports: one frame to the worker, and its answer."""
    def send(report: Report):
        channel.send(sock, {"report": report.to_wire()})
        answer = channel.receive(sock)
        if answer is None:
            raise SystemExit("emews: the worker closed the channel")
        return bool(answer.get("prune"))
    return send


def run(task, functions, send=None):
    """One task: ``{"value": number, "metrics": {...}, "objectives": [...]}``, ``{"pruned":
    {"value": number, "step": step}}`` or ``{"error": reason, "tail": traceback}``."""
    for path in reversed(task["sys_path"]):
        if path not in sys.path:
            sys.path.insert(0, path)
    try:
        function = functions.get(task["objective"])
        if function is None:
            from ..core._algorithm import import_dotted

            function = functions[task["objective"]] = import_dotted(task["objective"],
                                                                    "[study].objective")
        value = call_objective(function, json.loads(task["params_json"]),
                               RunContext.from_dict(task["context"]), task["model_return"],
                               task["epoch"], send)
        return {"value": value, "metrics": value.metrics, "objectives": value.objectives}
    except Pruned as exc:
        return {"pruned": {"value": exc.value, "step": exc.step}}
    except EvaluationFailed as exc:
        return {"error": str(exc), "tail": exc.log_tail}
    except (Exception, SystemExit, KeyboardInterrupt) as exc:  # noqa: BLE001 - importing it
        return {"error": describe_exception(exc)}
