"""The record of a run: machine and versions, the JSON file, and the Markdown tables.

``benchmarks/README.md`` holds the tables of the latest run between two markers; :func:`update_readme`
rewrites only that part.
"""

import json
import os
import platform
import socket
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

from .common import REPO
from . import quality

BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"
PACKAGES = ("emews-hpo", "numpy", "scipy", "mpi4py", "mpich", "optuna", "scikit-optimize",
            "scikit-learn", "deap")


def machine():
    """Host, CPU, cores, memory and the load average when the run started."""
    cpu = next((line.split(":", 1)[1].strip() for line in _lines("/proc/cpuinfo")
                if line.startswith("model name")), platform.processor())
    memory = next((line.split()[1] for line in _lines("/proc/meminfo")
                   if line.startswith("MemTotal")), None)
    return {"host": socket.gethostname(), "os": platform.platform(), "cpu": cpu,
            "cores": os.cpu_count(),
            "memory_gib": round(int(memory) / 2 ** 20, 1) if memory else None,
            "load_average_at_start": os.getloadavg()}


def _lines(path):
    try:
        return Path(path).read_text().splitlines()
    except OSError:
        return []


def versions():
    """Python, the packages that matter, the MPI library and the emews commit."""
    found = {"python": sys.version.split()[0]}
    for package in PACKAGES:
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = None
    try:
        from mpi4py import MPI

        found["mpi_library"] = MPI.Get_library_version().splitlines()[0].strip()
    except ImportError:
        found["mpi_library"] = None
    found["emews_commit"] = _git("rev-parse", "--short", "HEAD")
    found["emews_tree_clean"] = _git("status", "--porcelain", "--untracked-files=no") == ""
    return found


def _git(*args):
    done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def record_path(directory, host):
    """``DIRECTORY/<date>-<host>.json``."""
    return Path(directory) / f"{time.strftime('%Y-%m-%d')}-{host}.json"


def keep_earlier_parts(record, path):
    """Copy into ``record`` the parts of an earlier record at ``path`` of the same size."""
    try:
        earlier = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return
    if earlier.get("size") != record["size"]:
        return
    for key in ("parts", "part_wall_s", "part_commits"):
        record[key].update(earlier.get(key, {}))
    for name in earlier.get("parts", {}):
        record["part_commits"].setdefault(name, earlier["versions"]["emews_commit"])


def write_json(record, path):
    """Write the record to ``path`` (creating its directory)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")


def update_readme(path, markdown):
    """Replace the text between the result markers of ``path`` with ``markdown``."""
    text = Path(path).read_text()
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    Path(path).write_text(f"{head}{BEGIN}\n{markdown}\n{END}{tail}")


# --- Markdown ------------------------------------------------------------------------------

def markdown(record):
    """All the tables of a run's record."""
    parts = record["parts"]
    sections = [_header(record)]
    renderers = (("dispatch", _dispatch), ("utilization", _utilization),
                 ("quality", _quality), ("overhead", _overhead), ("simulation", _simulation))
    sections += [render(parts[name]) for name, render in renderers if name in parts]
    sections.append(_targets(targets(parts)))
    return "\n\n".join(sections)


def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _number(value, digits=3):
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return f"{value:.{digits}g}" if abs(value) < 10 ** digits else f"{value:,.0f}"


def _header(record):
    m, v = record["machine"], record["versions"]
    load = ", ".join(f"{x:.2f}" for x in m["load_average_at_start"])
    packages = ", ".join(f"{k} {v[k]}" for k in PACKAGES if v.get(k))
    return (f"Run of {record['date']} on `{m['host']}`: {m['cpu']}, {m['cores']} cores, "
            f"{m['memory_gib']} GiB, {m['os']}; load average at start {load}. "
            f"Size `{record['size']}`, {sum(record['part_wall_s'].values()) / 60:.1f} min in "
            f"all ({', '.join(f'{k} {s / 60:.1f}' for k, s in record['part_wall_s'].items())}). "
            f"Python {v['python']}, {packages}; {v['mpi_library']}; emews at "
            f"`{v['emews_commit']}`{'' if v['emews_tree_clean'] else ' (with local changes)'}"
            f"{_other_commits(record)}.")


def _other_commits(record):
    """``; quality at `abc1234``` for parts that an earlier run measured at another commit."""
    latest = record["versions"]["emews_commit"]
    others = [f"{name} at `{commit}`" for name, commit in record["part_commits"].items()
              if commit != latest]
    return f" ({', '.join(others)})" if others else ""


def _dispatch(part):
    rows = [(name, _number(c["tasks_per_s"]), _number(c["ratio_to_bare"], 2),
             _number(c.get("round_trip_us_p50")), _number(c.get("round_trip_us_p99")))
            for name, c in part["contenders"].items()]
    return (f"### 1. Dispatch overhead: {part['tasks']:,} no-op tasks, {part['workers']} workers "
            f"(median of {part['repeats']} runs)\n\n"
            + _table(("contender", "tasks/s", "ratio to bare (1 in flight)",
                      "round trip p50 (µs)", "round trip p99 (µs)"), rows))


def _utilization(part):
    rows = [(r["algorithm"], r["mode"], r["evaluations"], _number(r["utilization"], 2),
             _number(r["steady_utilization"], 2), _number(r["ask_ms_p50"]),
             _number(r["ask_ms_p99"]), _number(r["tell_ms_p50"]), _number(r["tell_ms_p99"]),
             _number(r["ask_total_s"] + r["tell_total_s"]), _number(r["makespan_s"]),
             r["stop_reason"]) for r in part["runs"]]
    return (f"### 2. Worker utilization: {part['workers']} MPI workers, {part['tasks']} tasks, "
            f"{part['duration']}\n\n"
            + _table(("algorithm", "mode", "evaluations", "utilization", "steady utilization",
                      "ask p50 (ms)", "ask p99 (ms)", "tell p50 (ms)", "tell p99 (ms)",
                      "ask + tell total (s)", "makespan (s)", "stopped"), rows))


def _quality(part):
    return quality.markdown(part)


def _overhead(part):
    counts = sorted({r["observations"] for r in part["runs"]})
    by = {(r["algorithm"], r["observations"]): r for r in part["runs"]}
    algorithms = list(dict.fromkeys(r["algorithm"] for r in part["runs"]))
    columns = ("ask_ms", "tell_ms", "ask_plus_tell_ms")
    rows = [(a, *(_number(by[(a, n)][c]) for c in columns for n in counts)) for a in algorithms]
    names = ("ask", "tell", "ask + tell")
    return (f"### 4. Algorithm overhead: median ms per call on {part['space']} after n "
            f"observations ({part['repeats']} repeats)\n\n"
            + _table(("algorithm", *(f"{name} @{n}" for name in names for n in counts)), rows))


def _simulation(part):
    rows = [(r["workers"], r["mode"], r["tasks"], _number(r["utilization"], 2),
             _number(r["steady_utilization"], 2), _number(r["tasks_per_real_s"]),
             _number(r["master_tasks_per_s"])) for r in part["runs"]]
    return (f"### 5. Scale by simulation: the real master, ME and store; simulated workers, "
            f"{part['duration']}\n\n"
            + _table(("workers", "mode", "tasks", "utilization", "steady utilization",
                      "tasks per real s", "master tasks/s (zero-length tasks)"), rows))


# --- targets -------------------------------------------------------------------------------

def targets(parts):
    """The issue's targets, each with the figure it is judged on and whether it is met."""
    found = []
    if "dispatch" in parts:
        for name, c in parts["dispatch"]["contenders"].items():
            if name.startswith("emews"):
                found.append((f"whole path ≥ 50% of bare mpi4py ({name})",
                              f"{c['ratio_to_bare']:.1%}", c["ratio_to_bare"] >= 0.5))
    if "utilization" in parts:
        for r in parts["utilization"]["runs"]:
            if r["mode"] == "async":
                found.append((f"async utilization ≥ 95% ({r['algorithm']})",
                              f"{r['utilization']:.1%} (steady {r['steady_utilization']:.1%})",
                              r["utilization"] >= 0.95))
    if "quality" in parts:
        found += _quality_targets(parts["quality"])
    return found


def _quality_targets(part):
    return quality.targets(part)


def _targets(found):
    return ("### Targets of issue 6 (reported, not asserted)\n\n"
            + _table(("target", "measured", "met"),
                     [(t, m, "yes" if ok else "no") for t, m, ok in found]))
