"""A classic ME written against the public API: ``from emews import eqpy``, then the EQ/Py
handshake and one batch of a grid over ``x``."""

import json

from emews import eqpy

GRID = [{"x": x / 2.0, "n": 1, "act": "tanh"} for x in range(-2, 3)]


def run():
    eqpy.OUT_put("Params")
    eqpy.IN_get()
    eqpy.OUT_put(";".join(json.dumps(point) for point in GRID))
    values = [float(v) for v in eqpy.IN_get().split(";")]
    eqpy.OUT_put("DONE")
    eqpy.OUT_put(json.dumps({"stop_reason": "grid evaluated", "best_value": min(values)}))
