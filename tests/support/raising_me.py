"""An ME module that dies after one batch."""

import eqpy


def run():
    eqpy.OUT_put('{"x": 1.0, "n": 0, "act": "relu"}')
    eqpy.IN_get()
    raise ValueError("the ME broke on purpose")
