"""An objective and an algorithm for the Swift/T tests (found through PYTHONPATH)."""

import json

from emews.core.algorithm import Algorithm
from emews.evaluate import current_run

# Labels that broke the classic EQPy_put, or that might break a careless quoting.
AWKWARD = ['say "hi"', "back\\slash \\n \\", "line\nbreak\r\n", "tab\t;semi;", "naïve ☃ 𝄞",
           "'''\"\"\"", "%s %% {x} ----",
           "emoji \U0001F600 beyond U+FFFF"]

SPACE = [{"name": "x", "type": "float", "lower": -2.0, "upper": 2.0},
         {"name": "label", "type": "categorical", "values": AWKWARD}]


def awkward(params):
    """Keep what arrived in the run directory; x**2 plus the label's position in AWKWARD."""
    (current_run().run_dir / "received.json").write_text(json.dumps(params))
    return params["x"] ** 2 + AWKWARD.index(params["label"])


class BrokenAlgorithm(Algorithm):
    """Proposes one batch, then raises when it is told the results."""

    def ask(self, n):
        return self.space.sample(self.rng, n)

    def tell(self, points, values):
        raise RuntimeError("the algorithm broke on purpose")
