"""A toy CANDLE Benchmark for tests/test_supervisor_command.py (no Keras): it reports the
environment it runs in, so a test can see what Supervisor's site files set for the model.

Its shape is sup_baseline_keras2.py's (Benchmarks' ``<MODEL_NAME>_baseline_keras2.py``):
``run`` writes ``env.json`` (the whole environment) in ``params["output_dir"]`` and returns
``val_loss = [x]``.
"""

import json
import os

import candle

file_path = os.path.dirname(os.path.realpath(__file__))


def initialize_parameters(default_model="siteenv_default_model.txt"):
    bmk = candle.Benchmark(file_path, default_model, "keras", prog="siteenv",
                           additional_definitions=[{"name": "x", "type": float}],
                           required=["model_name", "epochs"])
    return candle.finalize_parameters(bmk)


def run(params):
    with open(os.path.join(params["output_dir"], "env.json"), "w", encoding="utf-8") as out:
        json.dump(dict(os.environ), out)
    return {"val_loss": [float(params["x"])]}
