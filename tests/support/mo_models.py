"""Models of several objectives for tests/test_multiobjective.py (they mirror a deep-learning
model judged on its loss and its size: models/digits.py returns such a dict).

* :func:`loss_and_size`: ``{"loss", "size"}`` that trade off against each other in ``x``,
  with ``n`` shifting the loss (so that some points are dominated), as a Keras ``History``
  style dict (``loss`` per epoch);
* :func:`lacks_size`: ``size`` is missing when ``n == 3``, NaN when ``n == 2``.
"""

import math


def loss_and_size(params):
    x, n = params["x"], params["n"]
    return {"loss": [9.0, (x - 2.0) ** 2 + n], "size": (x + 2.0) ** 2 * 1000.0,
            "acc": 1.0 - abs(x) / 4}


def lacks_size(params):
    result = loss_and_size(params)
    if params["n"] == 3:
        del result["size"]
    elif params["n"] == 2:
        result["size"] = math.nan
    return result
