"""An objective and an algorithm for the Swift/T tests (found through PYTHONPATH)."""

import json
import threading

from emews.core._algorithm import Algorithm
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


def gated(params):
    """x**2; the first attempts of the fifth and sixth points (RUN000004, RUN000005) write
    ``blocked`` into their run directories and block until the test kills the job."""
    run = current_run()
    if run.run_id in ("RUN000004", "RUN000005"):
        (run.run_dir / "blocked").write_text(run.run_id)
        threading.Event().wait()
    return params["x"] ** 2


class BrokenAlgorithm(Algorithm):
    """Proposes one batch, then raises when it is told the results."""

    def ask(self, n):
        return self.space.sample(self.rng, n)

    def tell(self, points, values):
        raise RuntimeError("the algorithm broke on purpose")
