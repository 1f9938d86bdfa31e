"""A classic EQ/Py ME module, written as CANDLE Supervisor's are: it imports ``eqpy``."""

import json

import eqpy


def run():
    eqpy.OUT_put("Params")
    settings = eqpy.IN_get()
    assert settings, "the handshake must answer with settings"
    best = None
    for generation in range(3):
        points = [{"x": (generation - i) / 4.0, "n": i, "act": "relu"} for i in range(4)]
        eqpy.OUT_put(";".join(json.dumps(p) for p in points))
        results = [float(r) for r in eqpy.IN_get().split(";")]
        gen_best = min(results)
        best = gen_best if best is None else min(best, gen_best)
    eqpy.OUT_put("DONE")
    eqpy.OUT_put(json.dumps({"stop_reason": "classic ME finished", "best_value": best}))
