"""A small CANDLE-compliant model for the runner's tests (no Keras).

``run(params)`` records what it received in ``output_dir/received.json`` (plus the
environment's TOY_MARK and the interpreter's PID) and returns a Keras-like history dict whose
``val_loss`` is ``[x + 3, x + 1, x + 2]``. ``behaviour`` chooses a misbehaviour: ``nan``,
``text`` (a non-numeric result), ``raise``, ``sleep`` (blocks ``seconds``).
"""

import json
import math
import os
import time

import candle

IMPORTS = {"count": 0}
IMPORTS["count"] += 1

file_path = os.path.dirname(os.path.realpath(__file__))


def initialize_parameters(default_model="toy_default_model.txt"):
    bmk = candle.Benchmark(file_path, default_model, "keras", prog="toy",
                           additional_definitions=[{"name": "x", "type": float}],
                           required=["model_name", "epochs"])
    return candle.finalize_parameters(bmk)


def run(params):
    received = dict(params, _toy_mark=os.environ.get("TOY_MARK"), _pid=os.getpid(),
                    _imports=IMPORTS["count"], _cwd=os.getcwd())
    with open(os.path.join(params["output_dir"], "received.json"), "w", encoding="utf-8") as out:
        json.dump(received, out, ensure_ascii=False)
    print("toy model ran", flush=True)
    behaviour = params.get("behaviour", "ok")
    if behaviour == "nan":
        return math.nan
    if behaviour == "text":
        return "not a number"
    if behaviour == "raise":
        raise RuntimeError("the toy model failed on purpose")
    if behaviour == "sleep":
        time.sleep(params["seconds"])
    x = float(params["x"])
    return {"val_loss": [x + 3, x + 1, x + 2], "loss": [1.0, 0.5, 0.25]}
