"""``python -m benchmarks``: run the suite and record it; ``report`` writes the README.

::

    python -m benchmarks                  # full size (hours: see benchmarks/README.md)
    python -m benchmarks --size reduced   # every contender, fewer seeds and evaluations
    python -m benchmarks --smoke          # every part, tiny sizes, a temporary output directory
    python -m benchmarks --parts dispatch,simulation
    python -m benchmarks faults           # the same as --parts faults: writes results/faults.md
    python -m benchmarks report           # benchmarks/README.md from README.in.md and results/

A full or reduced run writes ``benchmarks/results/<date>-<host>.json`` (each part with its
date, command, commit and local changes; the machine and the versions) and regenerates
``benchmarks/README.md`` from the records; a smoke run writes to a temporary directory and
leaves the README alone unless ``--out`` and ``--readme`` say otherwise. The record is rewritten
after each part, so an interrupted run keeps what it measured. A record of the same day, host
and size keeps the parts that this run does not measure again (``--parts``), each with its own
provenance.
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

from . import (conditional, dispatch, faults, fidelity, launch, multiobjective, overhead,
               packing, pbt, peers, proposal, quality, report, service, simulate, utilization)
from .sizes import SIZES

HERE = Path(__file__).resolve().parent
PARTS = {"dispatch": dispatch.run, "utilization": utilization.run,
         "simulation": simulate.run, "overhead": overhead.run, "quality": quality.run,
         "faults": faults.run, "service": service.run, "proposal": proposal.run,
         "packing": packing.run, "launch": launch.run, "fidelity": fidelity.run,
         "multiobjective": multiobjective.run, "pbt": pbt.run,
         "conditional": conditional.run, "peers": peers.run}


def parser():
    """The command line of the suite."""
    top = argparse.ArgumentParser(prog="python -m benchmarks",
                                  description=__doc__.splitlines()[0])
    top.add_argument("part", nargs="?", help="one part to run (the same as --parts PART), or "
                     "report: regenerate the README from the records in --out")
    top.add_argument("--size", choices=sorted(SIZES), default="full")
    top.add_argument("--smoke", action="store_const", const="smoke", dest="size",
                     help="the same as --size smoke")
    top.add_argument("--parts", default=",".join(PARTS),
                     help=f"comma-separated, from {', '.join(PARTS)} (default: all)")
    top.add_argument("--out", help="directory of the JSON records (default: "
                     "benchmarks/results, or a temporary directory for --smoke)")
    top.add_argument("--record", help="the JSON record to write, keeping the parts it "
                     "already has (default: OUT/<date>-<host>[-<size>].json, the day's)")
    top.add_argument("--readme", help="Markdown file regenerated from README.in.md and the "
                     "records (default: benchmarks/README.md, none for --smoke)")
    top.add_argument("--jobs", type=int, help="parallel runs in the quality, "
                     "multiobjective, conditional, peers and pbt parts (default: one per core)")
    top.add_argument("--no-new-runs", action="store_false", dest="new_runs",
                     help="the multiobjective and peers parts of the runs in their caches "
                     "only (an interrupted run so far; run it again without this to go on)")
    return top


def main(argv=None):
    """Run the chosen parts, or write the README; return the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser().parse_args(argv)
    if args.part == "report":
        readme = Path(args.readme or HERE / "README.md")
        report.write_readme(readme, Path(args.out or HERE / "results"))
        print(f"benchmarks: wrote {readme}")
        return 0
    parts = [p.strip() for p in (args.part or args.parts).split(",") if p.strip()]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        print(f"python -m benchmarks: error: --parts: {unknown[0]!r} is not one of "
              f"{', '.join(PARTS)} (or report)", file=sys.stderr)
        return 2
    sizes = SIZES[args.size]
    smoke = sizes.name == "smoke"
    out = Path(args.out or (tempfile.mkdtemp(prefix="emews-bench-") if smoke
                            else HERE / "results"))
    readme = args.readme or (None if smoke else HERE / "README.md")
    record = report.new_record(sizes, argv)
    path = Path(args.record) if args.record else report.record_path(
        out, record["machine"]["host"], sizes.name)
    report.keep_earlier_parts(record, path)
    for name in parts:
        part_started = time.perf_counter()
        options = {"quality": {"jobs": args.jobs, "cache_directory": out / "quality-runs"},
                   "multiobjective": {"jobs": args.jobs, "new_runs": args.new_runs,
                                      "cache_directory": out / "multiobjective-runs"},
                   "faults": {"out": out / "faults.md"},
                   "fidelity": {"curves_directory": out / "fidelity-curves"},
                   "conditional": {"jobs": args.jobs,
                                   "cache_directory": out / "conditional-runs"},
                   "peers": {"jobs": args.jobs, "cache_directory": out / "peers-runs",
                             "install": not smoke, "new_runs": args.new_runs},
                   "pbt": {"install": not smoke, "jobs": args.jobs,
                           "cache_directory": out / "pbt-runs"}}.get(
            name, {})
        figures = PARTS[name](sizes, **options)
        report.add_part(record, name, figures, time.perf_counter() - part_started)
        report.write_json(record, path)
    record["targets"] = report.targets(record["parts"])
    report.write_json(record, path)
    print(report.markdown(report.of_record(record, path.name)))
    if readme:
        report.write_readme(readme, out)
    print(f"\nbenchmarks: wrote {path}" + (f" and {readme}" if readme else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
