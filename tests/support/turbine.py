"""A stand-in for Swift/T that runs the Python in ``swift/*.swift`` the way Turbine runs it.

Swift/T is not installable here, so the tests run the .swift files' own Python code (read out of
them by :mod:`swift_source`) under Turbine's rules, as ``tcl-python.c`` applies them:

* each rank has one embedded interpreter; ``python_persist`` keeps it between calls. The code
  runs with ``PyRun_String(code, Py_file_input, main_dict, local_dict)`` and the expression with
  ``Py_eval_input`` in the same two dictionaries: ``__main__``'s and a separate persistent local
  one (so names a code defines at top level are locals, invisible inside functions it defines);
* the expression's value must be a ``str`` (with no NUL), or the job fails;
* an exception prints ``PYTHON EXCEPTION:``, its type and value, then fails the job when
  ``exceptions_are_errors`` is true, or makes the result ``"__EXCEPTION__"`` when it is false;
* plain ``python()`` finalizes the interpreter after each call; it is refused here, since
  nothing in swift/ may use it.

Ranks: work dispatched to ``resident_work`` (with ``@location``) runs in the resident ME rank's
interpreter, ``WORKER`` work in a worker's. One process hosts both, so they share
``sys.modules`` but not their namespaces.

:func:`run_workflow` makes exactly the calls that ``workflow.swift`` makes, in its order; run as
a program (``bin/swift-t``), this module takes swift-t's command line.
"""

import builtins
import os
import sys
import threading
import traceback
from pathlib import Path

from swift_source import Evaluator, Program, SwiftSourceError

EXCEPTION_RESULT = "__EXCEPTION__"


class TurbineError(Exception):
    """What would make Turbine fail the whole job."""


class WorkflowAborted(Exception):
    """workflow.swift's assert(false) after EQPY_ABORT: the job fails with this traceback."""

    def __init__(self, traceback_text):
        super().__init__("EQPY_ABORT")
        self.traceback = traceback_text


class EmbeddedPython:
    """One rank's persistent interpreter, as Turbine's python_persist uses it."""

    def __init__(self):
        self.main_dict = {"__name__": "__main__", "__builtins__": builtins}
        self.local_dict = {}

    def run(self, code, expr, exceptions_are_errors=True):
        """Execute ``code``, evaluate ``expr``; return the string result."""
        for source, mode in ((code, "exec"), (expr, "eval")):
            try:
                value = eval(compile(source, "<string>", mode), self.main_dict, self.local_dict)
            except BaseException as exc:  # noqa: BLE001 - Turbine catches whatever Python raises
                print(f"\nPYTHON EXCEPTION:\n{type(exc)}\n{exc}", flush=True)
                if exceptions_are_errors:
                    raise TurbineError(f"python: {type(exc).__name__}: {exc}") from exc
                return EXCEPTION_RESULT
        if not isinstance(value, str) or "\0" in value:
            raise TurbineError(f"python: expression did not return a string: {value!r}")
        return value


class Turbine:
    """The ranks of one emulated run of a program read by :class:`swift_source.Program`."""

    def __init__(self, program):
        self.program = program
        self.ranks = {}
        self.executed = []
        self.evaluator = Evaluator(program, self._python)

    def call(self, function, **arguments):
        """Call a Swift function by name, with its parameters by name."""
        return self.evaluator.call(function, arguments)

    def _python(self, call, code, expr, exceptions_are_errors):
        leaf = call.leaf
        if not leaf.persist:
            raise TurbineError(f"{call.where()}: plain {leaf.name}() tears the interpreter down "
                               "after each call; swift/ must use python_persist")
        if leaf.dispatch != "WORKER" and call.location is None:
            raise TurbineError(f"{call.where()}: {leaf.dispatch} work needs @location")
        self.executed.append(call)
        interpreter = self.ranks.setdefault(leaf.dispatch, EmbeddedPython())
        return interpreter.run(code, expr, exceptions_are_errors)


def swift_split(text, delimiter):
    """Swift/T's split(): Tcl's split on a one-character delimiter (empty text: no parts)."""
    return text.split(delimiter) if text else []


def run_workflow(turbine, settings, exp_id, turbine_output, model_name, me_package="emews.me"):
    """Make the calls that workflow.swift's main, loop, evaluate, write_final and report_abort
    make, in their order. Returns the final message; raises :class:`WorkflowAborted`."""
    me = "ME"  # locationFromRank(RESIDENT_WORK_RANKS)
    turbine.call("EQPy_init_package", loc=me, packageName=me_package)
    iteration = 1
    while True:
        message = turbine.call("EQPy_get", loc=me)
        if message == "Params":
            turbine.call("EQPy_put", loc=me, data=settings)
        elif message in ("DONE", "FINAL"):
            final_message = turbine.call("EQPy_get", loc=me)
            Path(turbine_output, "final.json").write_text(final_message + "\n")
            break
        elif message == "EQPY_ABORT":
            trace = turbine.call("EQPy_get", loc=me)
            print(f"workflow.swift: the model-exploration algorithm failed (EQPY_ABORT):\n{trace}",
                  flush=True)
            raise WorkflowAborted(trace)
        else:
            results = [turbine.call("candle_model_train", params=point, expid=exp_id,
                                    runid="run_%03i_%04i" % (iteration, j),
                                    model_name=model_name)
                       for j, point in enumerate(swift_split(message, ";"))]
            turbine.call("EQPy_put", loc=me, data=";".join(results))
        iteration += 1
    turbine.call("EQPy_stop", loc=me)
    return final_message


def main(argv):
    """``swift-t -n PROCS [-m MACHINE] [-p] -I DIR -i MODULE -e K=V ... workflow.swift ARGS``."""
    procs, imports, include, env, rest = None, [], [], {}, list(argv)
    while rest and rest[0].startswith("-"):
        flag = rest.pop(0)
        if flag == "-p":
            continue
        value = rest.pop(0)
        if flag == "-n":
            procs = int(value)
        elif flag == "-i":
            imports.append(value)
        elif flag == "-I":
            include.append(value)
        elif flag == "-e":
            name, _, env[name] = value.partition("=")
        elif flag != "-m":
            raise SystemExit(f"swift-t stand-in: unknown option {flag}")
    program_file, args = rest[0], dict(a[2:].partition("=")[::2] for a in rest[1:])
    os.environ.update(env)
    print(f"swift-t stand-in: -n {procs} -i {' '.join(imports)} {Path(program_file).name} "
          f"RESIDENT_WORK_RANKS={os.environ.get('RESIDENT_WORK_RANKS')} "
          f"TURBINE_RESIDENT_WORK_WORKERS={os.environ.get('TURBINE_RESIDENT_WORK_WORKERS')}",
          flush=True)
    if procs is None or procs < 3 or os.environ.get("RESIDENT_WORK_RANKS") != str(procs - 2):
        raise SystemExit("swift-t stand-in: the ME's rank must be PROCS-2 (the last worker; "
                         "the ADLB server is PROCS-1)")
    turbine = Turbine(Program.compile(program_file, imports, include))
    try:
        run_workflow(turbine, args["settings"], args["exp_id"], os.environ["TURBINE_OUTPUT"],
                     os.environ["MODEL_NAME"], args.get("me", "emews.me"))
    except (WorkflowAborted, TurbineError, SwiftSourceError):
        traceback.print_exc()
        return 1
    finally:
        sites = sorted({call.where() for call in turbine.executed})
        print(f"swift-t stand-in: ran the Python at {' '.join(sites)}", flush=True)
    hanging = [t.name for t in threading.enumerate()
               if t is not threading.main_thread() and not t.daemon]
    if hanging:
        print(f"swift-t stand-in: non-daemon threads {hanging} would hang the job at exit",
              flush=True)
        os._exit(3)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
