"""Two checkouts of emews on the dispatch part's whole path, alternated: a before/after rate.

``python -m benchmarks.checkouts BEFORE AFTER [--rounds 48] [--tasks 20000] [--out F.jsonl]``

Each round runs :mod:`benchmarks.dispatch`'s ``emews`` contender (``emews.run`` under ``mpiexec
-n 4``, echo tasks, 32 slots per worker) once from each checkout, in turns (the first of a round
goes second in the next), so that the machine's drifts hit both alike. A checkout runs its own
``emews`` and ``benchmarks`` (its root first on the path) with its own virtualenv's Python and
``mpiexec`` (``.venv``, as ``scripts/venv.sh`` makes it: its entry points name its own
algorithms), or with this interpreter's where it has none. The summary
pairs the runs by round: the medians, the median of the per-round ratios AFTER / BEFORE, and the
one-sided paired Wilcoxon p-values of AFTER below and above BEFORE, for the throughput and for
rank 0's CPU time per task.
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from scipy.stats import wilcoxon

from .common import default_mpiexec, mpi_environment
from .dispatch import PREFETCH, SPACE, WORKERS

FIGURES = ("tasks_per_s", "rank0_cpu_us_per_task")


def run_once(checkout, tasks):
    """The dispatch figures of one run of ``checkout``'s whole path."""
    with tempfile.TemporaryDirectory(prefix="emews-checkouts-") as tmp:
        (Path(tmp) / "space.json").write_text(json.dumps(SPACE))
        env = mpi_environment(str(checkout))
        python = checkout / ".venv" / "bin" / "python"
        if not python.exists():
            python = Path(sys.executable)
        mpiexec = python.parent / "mpiexec"
        command = [str(mpiexec) if mpiexec.exists() else default_mpiexec(), "-n",
                   str(WORKERS + 1), str(python), "-m", "benchmarks.dispatch", "emews",
                   str(tasks), f"{tmp}/figures.json", str(PREFETCH), "--dir", tmp]
        done = subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{checkout}: {' '.join(command)} exited with status "
                               f"{done.returncode}:\n{done.stderr[-4000:]}")
        figures = json.loads((Path(tmp) / "figures.json").read_text())[str(PREFETCH)]
    return {key: figures[key] for key in FIGURES}


def alternate(checkouts, rounds, tasks, out):
    """``rounds`` rounds of every checkout (``{name: path}``), each round's order turned by
    one; each run is a JSON line in ``out``. Returns the runs."""
    runs, names = [], list(checkouts)
    for number in range(rounds):
        turn = number % len(names)
        for name in names[turn:] + names[:turn]:
            run = {"round": number, "checkout": name, **run_once(checkouts[name], tasks)}
            runs.append(run)
            out.write(json.dumps(run) + "\n")
            out.flush()
    return runs


def compare(runs, before, after):
    """Per figure: both medians, the median per-round ratio ``after / before``, and the paired
    one-sided Wilcoxon p-values of ``after`` below (``p_less``) and above (``p_greater``)."""
    rounds = {}
    for run in runs:
        rounds.setdefault(run["round"], {})[run["checkout"]] = run
    pairs = [(r[before], r[after]) for r in rounds.values() if before in r and after in r]
    summary = {"pairs": len(pairs)}
    for key in FIGURES:
        a, b = [p[0][key] for p in pairs], [p[1][key] for p in pairs]
        summary[key] = {before: statistics.median(a), after: statistics.median(b),
                        "median_ratio": statistics.median(y / x for x, y in zip(a, b))}
        if len(pairs) >= 6:   # fewer pairs cannot reach p < 0.05
            summary[key]["p_less"] = float(wilcoxon(b, a, alternative="less").pvalue)
            summary[key]["p_greater"] = float(wilcoxon(b, a, alternative="greater").pvalue)
    return summary


def main(argv=None):
    """Alternate BEFORE and AFTER; print the comparison as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path, help="a checkout of emews (its root)")
    parser.add_argument("after", type=Path, help="another checkout of emews (its root)")
    parser.add_argument("--rounds", type=int, default=48)
    parser.add_argument("--tasks", type=int, default=20000)
    parser.add_argument("--out", type=Path, default=Path("checkouts.jsonl"),
                        help="every run as a JSON line (appended)")
    args = parser.parse_args(argv)
    checkouts = {"before": args.before.resolve(), "after": args.after.resolve()}
    with args.out.open("a") as out:
        runs = alternate(checkouts, args.rounds, args.tasks, out)
    print(json.dumps(compare(runs, "before", "after"), indent=1))


if __name__ == "__main__":
    sys.exit(main())
