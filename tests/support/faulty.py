"""A model that fails on request, the way real training runs fail (``params["mode"]``).

It mirrors what HPO studies meet in practice: a native library that segfaults (``segfault``),
a script that calls ``os._exit`` (``exit3``) or ``sys.exit`` (``sysexit``), an interrupt raised
inside a training loop (``keyboardinterrupt``), a run that never ends (``hang``, with a child
process of its own, as data loaders have), a metric that is not a number (``garbage``, ``nan``),
a model that prints megabytes (``biglog``) or bytes that are not UTF-8 (``invalid_utf8``).
``ok`` returns ``x``; ``context`` returns the number in ``current_run().run_id``; ``pid`` the
pid of the process it runs in; ``sleep`` sleeps ``seconds`` and returns ``x``. With ``pidfile``, the model first writes its pid there
(and a hanging model its child's pid to ``pidfile.child``).

Used as a ``py`` objective (``faulty:run``) or as an ``app`` command (``python faulty.py``:
the point from ``EMEWS_PARAMS_FILE``, the value to ``EMEWS_RUN_DIR/result.txt``).
"""

import ctypes
import json
import math
import os
import subprocess
import sys
import threading
import time


def run(params):
    """The value of a point, or the fault that ``params["mode"]`` asks for."""
    mode = params.get("mode", "ok")
    if params.get("pidfile"):
        _write(params["pidfile"], os.getpid())
    print(f"faulty: mode {mode}", flush=True)
    if mode == "segfault":
        ctypes.string_at(0)
    if mode == "exit3":
        os._exit(3)
    if mode == "sysexit":
        sys.exit(3)
    if mode == "keyboardinterrupt":
        raise KeyboardInterrupt
    if mode == "hang":
        child = subprocess.Popen(["sleep", "1000"])
        if params.get("pidfile"):
            _write(params["pidfile"] + ".child", child.pid)
        threading.Event().wait()
    if mode == "garbage":
        return "not a number"
    if mode == "nan":
        return math.nan
    if mode == "biglog":
        for i in range(20_000):
            print(f"faulty: line {i:05d} " + "." * 60)
        raise RuntimeError("the big log ends here")
    if mode == "invalid_utf8":
        sys.stdout.flush()
        os.write(1, b"faulty: bad bytes \xff\xfe\xed\xa0\x80 end\n")
        raise ValueError("a lone surrogate \udcff in the message")
    if mode == "context":
        from emews.evaluate import current_run

        return float(current_run().run_id.removeprefix("RUN"))
    if mode == "pid":
        return float(os.getpid())
    if mode == "sleep":
        time.sleep(float(params["seconds"]))
    return float(params.get("x", 0.0))


def _write(path, pid):
    with open(path + ".tmp", "w") as out:
        out.write(str(pid))
    os.replace(path + ".tmp", path)  # readers never see a half-written file


if __name__ == "__main__":  # the app way in
    with open(os.environ["EMEWS_PARAMS_FILE"], encoding="utf-8") as handle:
        value = run(json.load(handle))
    with open(os.path.join(os.environ["EMEWS_RUN_DIR"], "result.txt"), "w") as out:
        out.write(repr(value))
