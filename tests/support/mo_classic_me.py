"""A classic EQ/Py ME module (as CANDLE Supervisor's are: it imports ``eqpy``) on a study of
several objectives: its first generation reads the result text (JSON lists, one per point),
its second reads one number per point (``IN_get_results``: the first objective); its final
message says what it saw, for tests/test_multiobjective.py."""

import json

import eqpy


def run():
    eqpy.OUT_put("Params")
    eqpy.IN_get()
    seen = {"points": [], "texts": [], "numbers": []}
    for generation in range(2):
        points = [{"x": (generation - i) / 2.0, "n": i, "act": "relu"} for i in range(3)]
        seen["points"] += points
        eqpy.OUT_put(";".join(json.dumps(p) for p in points))
        if generation == 0:
            seen["texts"] += [json.loads(part) for part in eqpy.IN_get().split(";")]
        else:
            seen["numbers"] += [float(v) for v in eqpy.IN_get_results()]
    eqpy.OUT_put("DONE")
    eqpy.OUT_put(json.dumps({"stop_reason": "classic ME finished", **seen}))
