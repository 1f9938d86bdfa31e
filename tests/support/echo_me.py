"""An EQ/Py ME that sends every answer back, JSON-encoded, until it is answered "stop"."""

import json

import eqpy


def run():
    eqpy.OUT_put("Params")
    while (answer := eqpy.IN_get()) != "stop":
        eqpy.OUT_put(json.dumps(answer))
    eqpy.OUT_put("DONE")
    eqpy.OUT_put("{}")
