"""``python -m benchmarks``: run the suite, write its JSON record and the README's tables.

::

    python -m benchmarks                  # full size (hours: see benchmarks/README.md)
    python -m benchmarks --size reduced   # every contender, fewer seeds and evaluations
    python -m benchmarks --smoke          # every part, tiny sizes, a temporary output directory
    python -m benchmarks --parts dispatch,simulation
    python -m benchmarks faults           # the same as --parts faults: writes results/faults.md

A full or reduced run writes ``benchmarks/results/<date>-<host>.json`` and regenerates the
tables in ``benchmarks/README.md``; a smoke run writes to a temporary directory and leaves the
README alone unless ``--out`` and ``--readme`` say otherwise. The record is rewritten after each
part, so an interrupted run keeps what it measured. A record of the same day, host and size
keeps the parts that this run does not measure again (``--parts``), each with its commit.
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

from . import dispatch, faults, overhead, proposal, quality, report, simulate, utilization
from .sizes import SIZES

HERE = Path(__file__).resolve().parent
PARTS = {"dispatch": dispatch.run, "utilization": utilization.run,
         "simulation": simulate.run, "overhead": overhead.run, "quality": quality.run,
         "faults": faults.run, "proposal": proposal.run}


def parser():
    """The command line of the suite."""
    top = argparse.ArgumentParser(prog="python -m benchmarks",
                                  description=__doc__.splitlines()[0])
    top.add_argument("part", nargs="?", help="one part to run (the same as --parts PART)")
    top.add_argument("--size", choices=sorted(SIZES), default="full")
    top.add_argument("--smoke", action="store_const", const="smoke", dest="size",
                     help="the same as --size smoke")
    top.add_argument("--parts", default=",".join(PARTS),
                     help=f"comma-separated, from {', '.join(PARTS)} (default: all)")
    top.add_argument("--out", help="directory for the JSON record (default: "
                     "benchmarks/results, or a temporary directory for --smoke)")
    top.add_argument("--readme", help="Markdown file whose result tables are regenerated "
                     "(default: benchmarks/README.md, none for --smoke)")
    top.add_argument("--jobs", type=int, help="parallel runs in the quality part "
                     "(default: one per core)")
    return top


def main(argv=None):
    """Run the chosen parts; return the exit status."""
    args = parser().parse_args(argv)
    parts = [p.strip() for p in (args.part or args.parts).split(",") if p.strip()]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        print(f"python -m benchmarks: error: --parts: {unknown[0]!r} is not one of "
              f"{', '.join(PARTS)}", file=sys.stderr)
        return 2
    sizes = SIZES[args.size]
    smoke = sizes.name == "smoke"
    out = Path(args.out or (tempfile.mkdtemp(prefix="emews-bench-") if smoke
                            else HERE / "results"))
    readme = args.readme or (None if smoke else HERE / "README.md")
    record = {"date": time.strftime("%Y-%m-%d %H:%M:%S %z"), "size": sizes.name,
              "sizes": vars(sizes), "machine": report.machine(), "versions": report.versions(),
              "parts": {}, "part_wall_s": {}, "part_commits": {}}
    path = report.record_path(out, record["machine"]["host"])
    report.keep_earlier_parts(record, path)
    for name in parts:
        part_started = time.perf_counter()
        options = {"quality": {"jobs": args.jobs}, "faults": {"out": out / "faults.md"}}.get(
            name, {})
        record["parts"][name] = PARTS[name](sizes, **options)
        record["part_wall_s"][name] = time.perf_counter() - part_started
        record["part_commits"][name] = record["versions"]["emews_commit"]
        report.write_json(record, path)
    record["targets"] = report.targets(record["parts"])
    report.write_json(record, path)
    tables = report.markdown(record)
    if readme:
        report.update_readme(readme, tables)
    print(f"{tables}\n\nbenchmarks: wrote {path}" + (f" and {readme}" if readme else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
