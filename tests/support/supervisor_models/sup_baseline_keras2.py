"""A toy CANDLE Benchmark for tests/test_supervisor_conventions.py (no Keras).

It mirrors the shape of a Benchmarks model that Supervisor's model_runner.py imports as
``<MODEL_NAME>_baseline_keras2`` (e.g. Benchmarks' Pilot1/NT3/nt3_baseline_keras2.py):
``initialize_parameters(default_model=...)`` through ``candle.Benchmark`` and
``candle.finalize_parameters``, and ``run(params)`` returning a Keras-like history.

``run`` writes ``ran.json`` (the params it got) and ``env.json`` (the environment it runs in,
for tests/test_supervisor_command.py) in ``params["output_dir"]`` and returns
``val_loss = [x + 2, x + 1, x]`` cut to ``stop_after`` epochs when that is set (early stopping);
``sleep`` (seconds) makes it block first.
"""

import json
import os
import time

import candle

file_path = os.path.dirname(os.path.realpath(__file__))


def initialize_parameters(default_model="sup_default_model.txt"):
    bmk = candle.Benchmark(file_path, default_model, "keras", prog="sup",
                           additional_definitions=[{"name": "x", "type": float}],
                           required=["model_name", "epochs"])
    return candle.finalize_parameters(bmk)


def run(params):
    with open(os.path.join(params["output_dir"], "ran.json"), "w", encoding="utf-8") as out:
        json.dump(params, out, ensure_ascii=False)
    print("sup model ran", flush=True)
    with open(os.path.join(params["output_dir"], "env.json"), "w", encoding="utf-8") as out:
        json.dump(dict(os.environ), out)
    if params.get("sleep"):
        time.sleep(float(params["sleep"]))
    x = float(params["x"])
    val_loss = [x + 2, x + 1, x]
    if params.get("stop_after"):
        val_loss = val_loss[:int(params["stop_after"])]
    return {"val_loss": val_loss, "loss": [1.0, 0.5, 0.25][:len(val_loss)]}
