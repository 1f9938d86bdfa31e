"""What isolation costs per evaluation: a no-op ``py`` objective, isolated or not.

``python -m benchmarks.isolation [N]`` evaluates a no-op objective N times (2000) through
:class:`emews.evaluate.Objective` with ``isolate=True`` (a nanny child: one round trip over a
socketpair per evaluation) and ``isolate=False`` (a call in this interpreter), and prints the
mean cost of one evaluation and the nanny's start-up time.
"""

import sys
import time

from emews.evaluate import Objective


def noop(params):
    """The no-op objective."""
    return 0.0


def measure(isolate, n):
    """``(start-up seconds, seconds per evaluation)`` over ``n`` evaluations."""
    objective = Objective("py", objective="benchmarks.isolation:noop", isolate=isolate)
    try:
        started = time.perf_counter()
        objective.evaluate('{"x": 1}', "RUN0")
        startup = time.perf_counter() - started
        started = time.perf_counter()
        for i in range(n):
            objective.evaluate('{"x": 1}', f"RUN{i}")
        return startup, (time.perf_counter() - started) / n
    finally:
        objective.close()


def main(argv):
    n = int(argv[0]) if argv else 2000
    for isolate in (True, False):
        startup, each = measure(isolate, n)
        print(f"isolate = {str(isolate).lower():5}  first evaluation {startup * 1e3:8.1f} ms"
              f"  then {each * 1e6:8.1f} us per evaluation ({n} evaluations)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
