"""Part 4, algorithm overhead: how long ``ask(1)`` takes after 50, 200 and 1000 observations.

Each algorithm is built on the Hartmann-6 space (seed 0) and told ``n`` random points with
their values in one ``tell``; then ``ask(1)`` and ``tell`` of the asked point are timed
``overhead_repeats`` times (so model-based algorithms refit between asks). Figures are medians.
Both count: scikit-optimize (``gp``) refits its model in ``tell``, MBO in ``ask``.
"""

import time

import numpy as np


def measure(algorithm, observations, repeats):
    """Median ``ask(1)`` and ``tell`` seconds of ``algorithm`` with ``observations`` told."""
    from emews.core._algorithm import load
    from emews.models import analytic
    from emews._space import Space

    space = Space.from_ga_json(analytic.space("hartmann6"))
    rng = np.random.default_rng(0)
    points = space.sample(rng, observations)
    search = load(algorithm)(space, seed=0)
    search.tell(points, [analytic.hartmann6(p) for p in points])
    asks, tells = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        asked = search.ask(1)
        asks.append(time.perf_counter() - started)
        values = [analytic.hartmann6(p) for p in asked]
        started = time.perf_counter()
        search.tell(asked, values)
        tells.append(time.perf_counter() - started)
    both = np.add(asks, tells)
    return {"algorithm": algorithm, "observations": observations,
            "ask_ms": float(np.median(asks)) * 1e3, "tell_ms": float(np.median(tells)) * 1e3,
            "ask_plus_tell_ms": float(np.median(both)) * 1e3}


def run(sizes):
    """Every algorithm at every number of observations."""
    figures = []
    for algorithm in sizes.overhead_algorithms:
        for n in sizes.overhead_observations:
            print(f"[overhead] {algorithm}, {n} observations", flush=True)
            figures.append(measure(algorithm, n, sizes.overhead_repeats))
    return {"space": "hartmann6", "repeats": sizes.overhead_repeats, "runs": figures}
