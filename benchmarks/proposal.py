"""Part 7, proposal speed: the time of one ask + tell against the number of results n, 6-D.

Each contender is told ``n`` random points of Hartmann-6 at once (``warm_s``), then runs
``steps`` rounds of ask(1) + tell(1) (at most ``STEP_BUDGET_S`` seconds of them, at least
one); ``step_ms`` is their mean, ``step_max_ms`` the longest. Ours do some work only now and
then: ``gp`` re-estimates its kernel's hyperparameters when the data has grown by
``refit_growth`` (10 %), on a thread beside the search (the first estimate, in the warm tell,
on the caller's: its time is what each later one costs); ``mbo`` grows its forest again when
the data has grown by ``rebuild_growth`` (5 %), in the first ask after (the first step).
``amortized_ms`` adds that work's share per step, as if it were done on the caller's thread
(what it costs in CPU time on a machine with no core to spare)::

    amortized = mean step without periodic work + periodic work / ceil(growth x n)

The peers, in the same run on the same points: scikit-optimize's ``Optimizer`` as
``gp_minimize`` builds it (GP, gp_hedge, lbfgs), Optuna's ``TPESampler`` and, when PyTorch is
installed, Optuna's ``GPSampler`` (otherwise the record says it was not measured, and why).

Ours once more as a pruned study tells them (issue 47): ``n`` results of which a share
(:data:`PRUNED_SHARE`) are pruned runs (:class:`~emews.plugin.PrunedResult`, curves of 3
steps falling towards the point's value), the rest values; the peers take no pruned runs.

And ours as an asynchronous study of :data:`IN_FLIGHT` workers runs them (issue 46): told the
same ``n`` results, asked for :data:`IN_FLIGHT` points at once (``fill_s``: a study resumed
onto that many free workers), then in each step told the oldest point in flight and asked
for the next, so that :data:`IN_FLIGHT` stay in flight.
"""

import argparse
import collections
import importlib.util
import json
import math
import time

import numpy as np

from emews.core._algorithm import load
from emews.plugin import PrunedResult
from emews.models import analytic
from emews._space import Space

SPACE = Space.from_ga_json(analytic.space("hartmann6"))
SIZES = {"full": ((50, 100, 300, 1000), 5, 500), "reduced": ((50, 300), 3, 500),
         "smoke": ((12, 24), 2, 24)}   # ns, steps, the n of the pruned study's results
PRUNED_SHARE = 0.8
PRUNED_MOST_MS = 200.0   # issue 47: a gp or mbo proposal, 500 told results, most pruned
IN_FLIGHT = 64           # issue 46: a gp or mbo proposal, 500 told results, 64 in flight,
IN_FLIGHT_MOST_MS = 1000.0   # takes at most this: 64 workers busy on runs of a minute
STEP_BUDGET_S = 60.0
GROWTH = {"emews gp": 0.1, "emews mbo": 0.05}


class Ours:
    """One of our algorithms (a registered name) behind the benchmark's interface."""

    def __init__(self, name, seed):
        self.algorithm = load(name)(SPACE, seed=seed)

    def warm(self, points, values):
        self.algorithm.tell(points, values)

    def step(self, objective):
        (point,) = self.algorithm.ask(1)
        self.algorithm.tell([point], [objective(point)])

    def fill(self, slots):
        """Ask for ``slots`` points at once; they are in flight."""
        self.running = collections.deque(self.algorithm.ask(slots))

    def step_in_flight(self, objective):
        """Tell the oldest point in flight, and ask for the next."""
        point = self.running.popleft()
        self.algorithm.tell([point], [objective(point)])
        self.running.extend(self.algorithm.ask(1))


class SkoptOptimizer:
    """scikit-optimize's ``Optimizer`` with ``gp_minimize``'s defaults."""

    def __init__(self, seed):
        from skopt import Optimizer

        self.optimizer = Optimizer([(p.lower, p.upper) for p in SPACE.free], "GP",
                                   acq_func="gp_hedge", acq_optimizer="auto",
                                   random_state=seed)

    def warm(self, points, values):
        self.optimizer.tell([[p[name] for name in SPACE.names] for p in points], values)

    def step(self, objective):
        x = self.optimizer.ask()
        self.optimizer.tell(x, objective(dict(zip(SPACE.names, x))))


class OptunaSampler:
    """An Optuna sampler through the study's ask/tell, in-memory storage."""

    def __init__(self, sampler):
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.optuna = optuna
        self.study = optuna.create_study(sampler=sampler)
        self.distributions = {p.name: optuna.distributions.FloatDistribution(p.lower, p.upper)
                              for p in SPACE.free}

    def warm(self, points, values):
        self.study.add_trials([self.optuna.trial.create_trial(
            params=p, distributions=self.distributions, value=v)
            for p, v in zip(points, values)])

    def step(self, objective):
        trial = self.study.ask(self.distributions)
        self.study.tell(trial, objective(trial.params))


def contenders(seed):
    """Name -> a factory of each contender; name -> why one cannot run here."""
    import optuna

    made = {"emews gp": lambda: Ours("gp", seed), "emews mbo": lambda: Ours("mbo", seed),
            "skopt Optimizer": lambda: SkoptOptimizer(seed),
            "optuna TPE": lambda: OptunaSampler(optuna.samplers.TPESampler(seed=seed))}
    missing = {}
    if importlib.util.find_spec("torch") is not None:     # Optuna's GPSampler needs it
        made["optuna GP"] = lambda: OptunaSampler(optuna.samplers.GPSampler(seed=seed))
    else:
        missing["optuna GP"] = "not measured: GPSampler needs PyTorch, which is not installed"
    return made, missing


def measure(make, n, steps, seed=0, pruned=0.0, in_flight=0):
    """Warm one contender with ``n`` random points (about a ``pruned`` share of them told as
    pruned runs); time ``steps`` ask + tell rounds, with ``in_flight`` points in flight.
    Returns ``(warm, times, fill)``: ``fill`` the time to ask for those at once (or None)."""
    rng = np.random.default_rng(seed)
    points = SPACE.sample(rng, n)
    values = [analytic.hartmann6(p) for p in points]
    values = [PrunedResult({s: v + 1.0 / s for s in (1, 2, 3)}) if cut else v
              for v, cut in zip(values, rng.random(n) < pruned)]
    contender = make()
    started = time.perf_counter()
    contender.warm(points, values)
    warm = time.perf_counter() - started
    step, fill = contender.step, None
    if in_flight:
        started = time.perf_counter()
        contender.fill(in_flight)
        fill, step = time.perf_counter() - started, contender.step_in_flight
    times = []
    while len(times) < steps and (not times or sum(times) < STEP_BUDGET_S):
        started = time.perf_counter()
        step(analytic.hartmann6)
        times.append(time.perf_counter() - started)
    return warm, times, fill


def run(sizes):
    """Every contender at every n of the size; the figures, and a Markdown table printed.

    Every contender's linear algebra runs on one BLAS thread, as in the quality part: the
    matrices are small (n x n, n <= 1000), and on a 2-core machine a second BLAS thread made a
    GP step several times slower (0.18 s -> 1.2 s for gp at n = 300).
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        return _run(sizes)


def _run(sizes):
    ns, steps, pruned_n = SIZES.get(sizes.name, SIZES["full"])
    made, missing = contenders(seed=0)
    runs = [_row(name, n, *measure(make, n, steps)) for name, make in made.items() for n in ns]
    pruned = [dict(_row(name, pruned_n, *measure(made[name], pruned_n, steps,
                                                 pruned=PRUNED_SHARE)), pruned=PRUNED_SHARE)
              for name in GROWTH]
    in_flight = [dict(_row(name, pruned_n, *measure(made[name], pruned_n, steps,
                                                    in_flight=IN_FLIGHT)), in_flight=IN_FLIGHT)
                 for name in GROWTH]
    figures = {"problem": "hartmann6 (6-D)", "ns": list(ns), "runs": runs, "pruned": pruned,
               "in_flight": in_flight, "not_measured": missing}
    print(markdown(figures), flush=True)
    return figures


def _row(name, n, warm, times, fill=None):
    """The figures of one contender's ``times`` (s per step) after ``n`` results told in
    ``warm`` s (and ``fill`` s to ask for the points in flight at once, if any)."""
    print(f"[proposal] {name} at n = {n}", flush=True)
    step = float(np.mean(times))
    row = {"contender": name, "n": n, "warm_s": warm, "steps": len(times),
           "step_ms": 1e3 * step, "step_max_ms": 1e3 * max(times)}
    if fill is not None:
        row["fill_s"] = fill
    if name in GROWTH:   # the steps between two rounds of periodic work, and its share
        between = times if name == "emews gp" else times[1:] or times
        periodic = warm if name == "emews gp" else max(times[0] - float(np.mean(between)), 0.0)
        row["amortized_ms"] = 1e3 * (float(np.mean(between))
                                     + periodic / math.ceil(GROWTH[name] * n))
    return row


def markdown(figures):
    """The figures as a table: ms per ask + tell, one row per contender, one column per n."""
    ns = figures["ns"]
    by = {(r["contender"], r["n"]): r for r in figures["runs"]}
    lines = ["| contender | " + " | ".join(f"n = {n:,}" for n in ns) + " |",
             "|---|" + "---|" * len(ns)]
    for name in dict.fromkeys(r["contender"] for r in figures["runs"]):
        cells = []
        for n in ns:
            r = by.get((name, n))
            cell = "–" if r is None else f"{r['step_ms']:,.1f}"
            if r is not None and "amortized_ms" in r:
                cell += f" ({r['amortized_ms']:,.1f} amortized)"
            cells.append(cell)
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += [f"| {name} | {why} |" + " |" * (len(ns) - 1)
              for name, why in figures["not_measured"].items()]
    pruned = [f"{r['contender']} {r['step_ms']:,.1f} ms ({r['amortized_ms']:,.1f} amortized)"
              for r in figures.get("pruned", [])]
    if pruned:
        r = figures["pruned"][0]
        pruned = [f"\n\nAfter n = {r['n']:,} results, {r['pruned']:.0%} of them pruned runs "
                  "(issue 47): " + "; ".join(pruned) + "."]
    flying = [f"{r['contender']} {r['step_ms']:,.1f} ms ({r['amortized_ms']:,.1f} amortized; "
              f"{r['fill_s']:,.1f} s to ask for all {r['in_flight']} at once)"
              for r in figures.get("in_flight", [])]
    if flying:
        r = figures["in_flight"][0]
        flying = [f"\n\nAfter n = {r['n']:,} results, with {r['in_flight']} points in flight, "
                  "each told as the next is asked for (issue 46): " + "; ".join(flying) + "."]
    return (f"### 8. Proposal speed: ms per ask + tell on {figures['problem']}, after n "
            f"results (mean of the steps; amortized: with the periodic work's share)\n\n"
            + "\n".join(lines) + "".join(pruned) + "".join(flying)
            + f"\n\nThe curve: [{CURVE}](results/{CURVE}).")


# issue "search": (contender, n, the most ms one ask + tell may take on average)
TARGETS = (("emews gp", 300, 500.0), ("emews gp", 1000, 2000.0), ("emews mbo", 1000, 50.0))
CURVE = "proposal.svg"


def targets(figures):
    """The issue's proposal-speed targets measured in ``figures``, each ``(target, measured,
    met)``, judged on the cost of a step with the periodic work at its share (``amortized_ms``):
    the mean of a few steps counts that work at whatever share of them it fell among (mbo's
    rebuild in one of 5 steps instead of one of 50 at n = 1,000; gp's kernel estimate in none),
    which says little about a search's steps in the long run."""
    by = {(r["contender"], r["n"]): r for r in figures["runs"]}
    found = []
    for name, n, most in TARGETS:
        r = by.get((name, n))
        if r is not None:
            cost = r.get("amortized_ms", r["step_ms"])
            found.append((f"{name} ask + tell ≤ {most:,.0f} ms at n = {n:,}",
                          f"{cost:,.0f} ms amortized ({r['step_ms']:,.0f} ms mean step)",
                          cost <= most))
    for r in figures.get("pruned", []):
        cost = r["amortized_ms"]
        found.append((f"{r['contender']} ask + tell ≤ {PRUNED_MOST_MS:,.0f} ms at n = "
                      f"{r['n']:,}, {r['pruned']:.0%} pruned (issue 47)",
                      f"{cost:,.0f} ms amortized ({r['step_ms']:,.0f} ms mean step)",
                      cost <= PRUNED_MOST_MS))
    for r in figures.get("in_flight", []):
        cost = r["amortized_ms"]
        found.append((f"{r['contender']} ask + tell ≤ {IN_FLIGHT_MOST_MS:,.0f} ms at n = "
                      f"{r['n']:,}, {r['in_flight']} in flight (issue 46)",
                      f"{cost:,.0f} ms amortized ({r['step_ms']:,.0f} ms mean step; "
                      f"{r['fill_s']:,.1f} s to ask for {r['in_flight']} at once)",
                      cost <= IN_FLIGHT_MOST_MS))
    return found


def plot(figures, path):
    """Draw the curve of ms per ask + tell against n, one line per contender (log-log; ours
    also amortized, dashed), to the SVG file ``path``."""
    from emews.inspect._plot import pyplot as load_pyplot

    pyplot = load_pyplot()
    # text stays text in the SVG, and its ids are the same each time it is drawn again
    with pyplot.rc_context({"svg.fonttype": "none", "svg.hashsalt": "emews"}):
        figure, axes = pyplot.subplots(figsize=(6.4, 4.2))
        for name in dict.fromkeys(r["contender"] for r in figures["runs"]):
            rows = sorted((r for r in figures["runs"] if r["contender"] == name),
                          key=lambda r: r["n"])
            line, = axes.plot([r["n"] for r in rows], [r["step_ms"] for r in rows], marker="o",
                              label=name)
            if all("amortized_ms" in r for r in rows):
                axes.plot([r["n"] for r in rows], [r["amortized_ms"] for r in rows], ls="--",
                          color=line.get_color(), label=f"{name}, amortized")
        for _, n, most in TARGETS:
            axes.plot([n], [most], marker="_", markersize=14, color="black")
        axes.set(xscale="log", yscale="log", xlabel="results told (n)",
                 ylabel="ms per ask + tell", title=f"Proposal speed on {figures['problem']} "
                 "(bars: the issue's targets)")
        axes.legend(fontsize="small")
        axes.grid(True, which="both", alpha=0.3)
        figure.tight_layout()
        figure.savefig(path, format="svg", metadata={"Date": None})
    pyplot.close(figure)


# --- mlrMBO's values beside ours (algorithms/README.md) ----------------------------------------

# option -> (mlrMBO's value as Supervisor's mlrMBO-mbo.R runs it, the value beside it): our
# default where it differs (n_trees, min_samples_leaf, rebuild_growth: 0 grows the forest at
# every proposal, as mlrMBO; design_size: 10 is Supervisor's design.size default, None our 4
# per parameter, mlrMBO's own), and for cl_lie the mean we had before taking mlrMBO's min
MLRMBO_VARIANTS = {"n_trees": (500, 100), "min_samples_leaf": (5, 1),
                   "rebuild_growth": (0.0, 0.05), "design_size": (10, None),
                   "cl_lie": ("min", "mean")}


def mbo_variants(seeds=5, budget=40, slots=8, problems=("hartmann6",), options=None):
    """mlrMBO's value of each option of :data:`MLRMBO_VARIANTS` and the value beside it, on
    the same seeds, async with ``slots`` points in flight (results back in a seeded random
    order). Returns rows of the median final regret, paired wins, Wilcoxon's p and the time per
    run (``other`` is the value beside mlrMBO's)."""
    from scipy.stats import wilcoxon

    from emews.testing import drive

    rows = []
    for option in options or MLRMBO_VARIANTS:
        theirs, other = MLRMBO_VARIANTS[option]
        for problem in problems:
            regret, seconds = ([], []), [0.0, 0.0]
            for seed in range(seeds):
                for side, value in enumerate((theirs, other)):
                    started = time.perf_counter()
                    run = drive({"algorithm": "mbo", "options": {option: value},
                                 "space": analytic.space(problem), "seed": seed,
                                 "mode": "async", "slots": slots, "stop": {"budget": budget}},
                                getattr(analytic, problem), completion_seed=seed)
                    seconds[side] += time.perf_counter() - started
                    regret[side].append(min(run.values) - analytic.MINIMA[problem])
            a, b = np.array(regret[0]), np.array(regret[1])
            rows.append({"option": option, "problem": problem, "mlrmbo": theirs,
                         "other": other, "seeds": seeds, "budget": budget, "slots": slots,
                         "mlrmbo_median_regret": float(np.median(a)),
                         "other_median_regret": float(np.median(b)),
                         "other_better": int(np.sum(b < a)), "mlrmbo_better": int(np.sum(a < b)),
                         "wilcoxon_p": float(wilcoxon(a, b).pvalue) if np.any(a != b) else 1.0,
                         "mlrmbo_s_per_run": seconds[0] / seeds,
                         "other_s_per_run": seconds[1] / seeds})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def main(argv=None):
    """mlrMBO's option values beside ours (``mbo_variants``); JSON rows on stdout."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--budget", type=int, default=40)
    parser.add_argument("--slots", type=int, default=8)
    parser.add_argument("--problems", nargs="+", default=["hartmann6"])
    parser.add_argument("--options", nargs="+", choices=list(MLRMBO_VARIANTS))
    args = parser.parse_args(argv)
    mbo_variants(args.seeds, args.budget, args.slots, tuple(args.problems), args.options)


if __name__ == "__main__":
    main()
