"""The record of a run, and ``benchmarks/README.md`` made from the records.

A record (``benchmarks/results/<date>-<host>.json``) carries, beside every figure, where each
part came from: the date, the command, the commit and whether the tree had local changes, the
machine (cores, memory, CPU) and the versions of Python and of the libraries that matter.

``python -m benchmarks report`` writes ``benchmarks/README.md`` from ``README.in.md`` (the
prose, written by hand) and the records in ``benchmarks/results``: each part from the newest
record that measured it (a smoke record only when nothing else did), with its provenance, and
the sizes table from :mod:`benchmarks.sizes`. Nothing in ``README.md`` is written by hand.
"""

import json
import os
import platform
import shlex
import socket
import subprocess
import sys
import time
from dataclasses import fields
from importlib import metadata
from pathlib import Path

from .common import REPO
from . import conditional, fidelity, launch, multiobjective, pbt, peers, proposal, quality
from .sizes import SIZES

TEMPLATE = Path(__file__).resolve().parent / "README.in.md"
SIZES_MARK, RESULTS_MARK = "<!-- sizes -->", "<!-- results -->"
PACKAGES = ("emews-hpo", "numpy", "scipy", "mpi4py", "mpich", "optuna", "scikit-optimize",
            "scikit-learn", "deap", "libensemble", "dask", "distributed", "torch", "smac")
GENERATED_PATHS = ("benchmarks/results/", "benchmarks/README.md")


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
    found["emews_commit"] = git("rev-parse", "--short", "HEAD")
    found["emews_tree_clean"] = not local_changes()
    return found


def local_changes():
    """Tracked files that differ from the commit, leaving out the suite's own outputs."""
    status = git("status", "--porcelain", "--untracked-files=no") or ""
    changed = [line[3:] for line in status.splitlines()]
    return [path for path in changed if not path.startswith(GENERATED_PATHS)]


def provenance(argv):
    """Date, command, commit and local changes of a run started with ``argv``."""
    changed = local_changes()
    return {"date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
            "command": shlex.join(["python", "-m", "benchmarks", *argv]),
            "commit": git("rev-parse", "HEAD"), "dirty": bool(changed),
            "changed_files": changed}


def git(*args):
    """The output of ``git ARGS`` in the repository (None when it fails)."""
    done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def new_record(sizes, argv):
    """An empty record for a run of ``sizes`` started with ``argv``."""
    run = provenance(argv)
    return {"date": run["date"], "command": run["command"], "commit": run["commit"],
            "dirty": run["dirty"], "changed_files": run["changed_files"], "size": sizes.name,
            "sizes": vars(sizes), "machine": machine(), "versions": versions(), "parts": {},
            "part_wall_s": {}, "part_runs": {}}


def add_part(record, name, figures, wall_s):
    """Put part ``name``'s figures in ``record``, with this run's provenance."""
    record["parts"][name] = figures
    record["part_wall_s"][name] = wall_s
    record["part_runs"][name] = {key: record[key] for key in (
        "date", "command", "commit", "dirty", "size")}


def part_runs(record):
    """Each part's provenance; records from before ``part_runs`` get their run's."""
    v = record["versions"]
    commits = record.get("part_commits", {})
    found = {name: {"date": record["date"], "command": record.get("command"),
                    "commit": commits.get(name, v["emews_commit"]),
                    "dirty": not v["emews_tree_clean"], "size": record["size"]}
             for name in record["parts"]}
    found.update(record.get("part_runs", {}))
    return found


def record_path(directory, host, size="full"):
    """``DIRECTORY/<date>-<host>.json`` for a full run, ``<date>-<host>-<size>.json`` for
    another size, so that runs of different sizes on one day keep their own records."""
    suffix = "" if size == "full" else f"-{size}"
    return Path(directory) / f"{time.strftime('%Y-%m-%d')}-{host}{suffix}.json"


def keep_earlier_parts(record, path):
    """Copy into ``record`` the parts of an earlier record at ``path`` of the same size."""
    try:
        earlier = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return
    if earlier.get("size") != record["size"]:
        return
    record["parts"].update(earlier.get("parts", {}))
    record["part_wall_s"].update(earlier.get("part_wall_s", {}))
    record["part_runs"].update(part_runs(earlier))


def write_json(record, path):
    """Write the record to ``path`` (creating its directory)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")


# --- the README ----------------------------------------------------------------------------

def latest(directory):
    """The newest measurement of each part among the records in ``directory``.

    ``{"parts": {part: figures}, "sources": {part: {"file", "run", "machine", "versions",
    "wall_s"}}}``; a part measured at smoke size is taken only when no other record has it.
    """
    best = {}
    for path in sorted(Path(directory).glob("*.json")):
        record = json.loads(path.read_text())
        for name, run in part_runs(record).items():
            rank = (run["size"] != "smoke", _when(run["date"]))
            if name not in best or rank >= best[name][0]:
                best[name] = (rank, {
                    "file": path.name, "run": run, "machine": record["machine"],
                    "versions": record["versions"],
                    "wall_s": record.get("part_wall_s", {}).get(name)},
                    record["parts"][name])
    return {"parts": {n: best[n][2] for n in best}, "sources": {n: best[n][1] for n in best}}


def _when(date):
    return time.mktime(time.strptime(date, "%Y-%m-%d %H:%M:%S %z"))


def readme(newest, template=TEMPLATE):
    """The text of ``README.md``: the template with the sizes and the results (``newest``,
    :func:`latest`'s answer) filled in."""
    text = Path(template).read_text()
    for mark in (SIZES_MARK, RESULTS_MARK):
        if mark not in text:
            raise ValueError(f"{template}: the template has no {mark} line")
    note = (f"<!-- Generated by `python -m benchmarks report` from {Path(template).name} and "
            f"the records in results/: edit those, not this file. -->\n")
    return note + (text.replace(SIZES_MARK, sizes_table())
                   .replace(RESULTS_MARK, markdown(newest)))


def write_readme(path, directory, template=TEMPLATE):
    """Regenerate the README at ``path`` from the records in ``directory``, and the curve of
    the newest proposal-speed part (:func:`benchmarks.proposal.plot`) beside the records."""
    newest = latest(directory)
    Path(path).write_text(readme(newest, template))
    if "proposal" in newest["parts"]:
        proposal.plot(newest["parts"]["proposal"], Path(directory) / proposal.CURVE)


def sizes_table():
    """Every size of :mod:`benchmarks.sizes`, one row per setting."""
    names = list(SIZES)
    rows = [(f"`{f.name}`", *(_setting(getattr(SIZES[n], f.name)) for n in names))
            for f in fields(SIZES[names[0]]) if f.name != "name"]
    return _table(("setting", *(f"`{n}`" for n in names)), rows)


def _setting(value):
    if isinstance(value, tuple):
        return ", ".join(map(str, value))
    return "–" if value is None else f"{value:,}" if isinstance(value, int) else str(value)


# --- Markdown ------------------------------------------------------------------------------

def markdown(newest):
    """The tables of :func:`latest`'s parts (or of one record, see :func:`of_record`)."""
    parts, order = newest["parts"], list(RENDERERS)
    names = sorted(parts, key=lambda n: (order.index(n) if n in order else len(order), n))
    sections = [_sources({name: newest["sources"][name] for name in names})]
    sections += [RENDERERS.get(name, _rows_of(name))(parts[name]) for name in names]
    sections.append(_targets(targets(parts)))
    return "\n\n".join(sections)


def of_record(record, file="this run"):
    """One record in the shape of :func:`latest`'s answer."""
    runs = part_runs(record)
    return {"parts": record["parts"],
            "sources": {name: {"file": file, "run": runs[name], "machine": record["machine"],
                               "versions": record["versions"],
                               "wall_s": record["part_wall_s"].get(name)}
                        for name in record["parts"]}}


def _sources(sources):
    """Where each part comes from, and each record's machine and versions."""
    rows = [(name, f"`{s['file']}`", s["run"]["size"], s["run"]["date"],
             f"`{(s['run']['commit'] or '?')[:10]}`",
             "yes" if s["run"]["dirty"] else "no",
             f"`{s['run']['command']}`" if s["run"].get("command") else "–",
             _number(s["wall_s"] / 60 if s["wall_s"] is not None else None, 2))
            for name, s in sources.items()]
    machines = {}
    for s in sources.values():
        machines.setdefault(s["file"], _machine_line(s["machine"], s["versions"]))
    return ("Each part below comes from the newest record that measured it:\n\n"
            + _table(("part", "record", "size", "date", "emews commit", "local changes",
                      "command", "minutes"), rows)
            + "\n\n" + "\n".join(f"* `{f}`: {line}" for f, line in machines.items()))


def _machine_line(m, v):
    load = ", ".join(f"{x:.2f}" for x in m["load_average_at_start"])
    packages = ", ".join(f"{k} {v[k]}" for k in PACKAGES if v.get(k))
    return (f"`{m['host']}`, {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB, "
            f"{m['os']}; load average at start {load}. Python {v['python']}, {packages}; "
            f"{v['mpi_library']}.")


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


def _dispatch(part):
    rows = [(name, _spread(c, "tasks_per_s"), _number(c["ratio_to_bare"], 2),
             _spread(c, "rank0_cpu_us_per_task"), _number(c.get("round_trip_us_p50")),
             _number(c.get("round_trip_us_p99")))
            for name, c in part["contenders"].items()]
    text = (f"### 1. Dispatch overhead: {part['tasks']:,} no-op tasks, {part['workers']} workers "
            f"(median [min–max] of {part['repeats']} interleaved runs)\n\n"
            + _table(("contender", "tasks/s", "ratio to spinning bare (1 in flight)",
                      "rank 0 CPU (µs/task)", "round trip p50 (µs)", "round trip p99 (µs)"),
                     rows))
    floors = [(name, style, _number(r["ratio"], 2), f"{_number(r['min'], 2)}–"
               f"{_number(r['max'], 2)}") for name, c in part["contenders"].items()
              for style, r in c.get("floors", {}).items()]
    if floors:
        text += ("\n\nemews against the floors that wait as it does, at the same tasks in flight "
                 "(`wait`: the bare loop; `ioc`: the bare IoC loop):\n\n"
                 + _table(("contender", "floor", "ratio of medians", "range"), floors))
    if "pingpong_us" in part:
        trip = part["pingpong_us"]
        ours = [(name, c["rank0_cpu_us_per_task"] / trip["spin"])
                for name, c in part["contenders"].items()
                if name.startswith("emews") and c.get("rank0_cpu_us_per_task")]
        text += (f"\n\nThe MPI round trip of a short string between two ranks (ping-pong, "
                 f"median): {trip['spin']:.1f} µs with blocking calls, {trip['wait']:.0f} µs "
                 "waiting without spinning. Rank 0's CPU time per task on emews' whole path is "
                 + ", ".join(f"{m:,.0f}× the blocking round trip ({name})" for name, m in ours)
                 + ".")
    return text


def _spread(c, key):
    """``median [min–max]`` of ``c[key]`` over the repeats (the median alone if one run)."""
    low, high = c.get(f"{key}_min"), c.get(f"{key}_max")
    if low is None or low == high:
        return _number(c.get(key))
    return f"{_number(c.get(key))} [{_number(low)}–{_number(high)}]"


def _utilization(part):
    rows = [(r["algorithm"], r["mode"], r["evaluations"], _number(r["utilization"], 2),
             _number(r["steady_utilization"], 2),
             _number(r.get("after_design_utilization"), 2), _number(r["ask_ms_p50"]),
             _number(r["ask_ms_p99"]), _number(r["tell_ms_p50"]), _number(r["tell_ms_p99"]),
             _number(_sum(r["ask_total_s"], r["tell_total_s"])), _number(r["makespan_s"]),
             r["stop_reason"]) for r in part["runs"]]
    return (f"### 2. Worker utilization: {part['workers']} workers, {part['tasks']} tasks, "
            f"{part['duration']}\n\n"
            + _table(("algorithm", "mode", "evaluations", "utilization", "steady utilization",
                      "after the design", "ask p50 (ms)", "ask p99 (ms)", "tell p50 (ms)",
                      "tell p99 (ms)", "ask + tell total (s)", "makespan (s)", "stopped"),
                     rows))


def _sum(*values):
    present = [v for v in values if v is not None]
    return sum(present) if present else None


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
    if "task_means" not in part:        # a record from before training-length tasks
        rows = [(r["workers"], r["mode"], r["tasks"], _number(r["utilization"], 2),
                 _number(r["steady_utilization"], 2), _number(r["tasks_per_real_s"]),
                 _number(r["master_tasks_per_s"])) for r in part["runs"]]
        return (f"### 5. Scale by simulation: the real master, ME and store; simulated "
                f"workers, {part['duration']}\n\n"
                + _table(("workers", "mode", "tasks", "utilization", "steady utilization",
                          "tasks per real s", "master tasks/s (zero-length tasks)"), rows))
    means = [f"{m:g}s" for m in part["task_means"]]
    labels = list(part["runs"][0]["saturation_workers"])
    rows = [(r["workers"], r["mode"], r["tasks"],
             *(f"{_number(r[f'steady_utilization_{m}'], 3)} "
               f"({_number(r[f'utilization_{m}'], 3)})" for m in means),
             _number(r["master_tasks_per_s"]), _number(r["master_cpu_us_per_task"]),
             _number(r["queue_peak_mib"]),
             *(_number(r["saturation_workers"][label]) for label in labels))
            for r in part["runs"]]
    return (f"### 5. Scale by simulation: the real master, ME and store; simulated workers, "
            f"{part['duration']}\n\n"
            + _table(("workers", "mode", "tasks",
                      *(f"utilization, mean {m}: steady (whole)" for m in means),
                      "master tasks/s (zero-length)",
                      "master CPU (µs/task)", "peak memory (MiB)",
                      *(f"workers one master saturates at, {label} tasks" for label in labels)),
                     rows)
            + "\n\nThe last columns are task time / CPU per task: past that many workers one "
              "master is busy all the time and workers start to wait for it.")


def _faults(part):
    return ("### 6. Faults injected into real studies: every row must show 0 lost\n\n"
            + _row_table(part["rows"]))


def _service(part):
    return (f"### 7. The study as a service: {_number(part['tasks'])} no-op tasks, side by side "
            "with EQ-SQL's own client\n\n" + _row_table(part["runs"]))


def _packing(part):
    rows = [(r["layout"], r["policy"], r["tasks"], _number(r["steady_utilization"], 3),
             _number(r["utilization"], 3), _number(r["largest_wait_ratio"], 2))
            for r in part["runs"]]
    return (f"### 9. Packing evaluations of {', '.join(map(str, part['sizes']))} slots on "
            f"{part['slots']:,} slots ({part['slots_per_node']} per node), {part['duration']}"
            "\n\n" + _table(("layout", "policy", "tasks", "steady utilization",
                              "utilization (with the drain)",
                              "mean start, largest / smallest"), rows))


def _rows_of(name):
    """A part without a renderer of its own: the table of its ``rows`` or ``runs``."""
    return lambda part: f"### {name}\n\n" + _row_table(part.get("rows", part.get("runs", [])))


def _row_table(rows):
    columns = list(dict.fromkeys(c for r in rows for c in r))
    return _table(columns, [[_cell(r.get(c)) for c in columns] for r in rows])


def _cell(value):
    if value is None or isinstance(value, bool):
        return {None: "–", True: "yes", False: "NO"}[value]
    return _number(value) if isinstance(value, (int, float)) else str(value)


RENDERERS = {"dispatch": _dispatch, "utilization": _utilization, "quality": quality.markdown,
             "overhead": _overhead, "simulation": _simulation, "faults": _faults,
             "service": _service, "proposal": proposal.markdown, "packing": _packing,
             "launch": launch.markdown, "fidelity": fidelity.markdown,
             "multiobjective": multiobjective.markdown, "pbt": pbt.markdown,
             "conditional": conditional.markdown, "peers": peers.markdown}


# --- targets -------------------------------------------------------------------------------

def targets(parts):
    """The issue's targets, each with the figure it is judged on and whether it is met."""
    found = []
    if "dispatch" in parts:
        found += _dispatch_targets(parts["dispatch"]["contenders"])
    if "utilization" in parts:
        for r in parts["utilization"]["runs"]:
            if r["mode"] == "async" and r.get("plugin"):  # ours, not the peers
                found.append((f"async utilization ≥ 95% ({r['algorithm']})",
                              f"{r['utilization']:.1%} (steady {r['steady_utilization']:.1%})",
                              r["utilization"] >= 0.95))
                if r["algorithm"] in MODEL_BASED and \
                        r.get("after_design_utilization") is not None:
                    found.append((f"async utilization after the initial design ≥ "
                                  f"{MODEL_BASED_UTILIZATION:.0%} ({r['algorithm']})",
                                  f"{r['after_design_utilization']:.1%}",
                                  r["after_design_utilization"] >= MODEL_BASED_UTILIZATION))
    if "quality" in parts:
        found += quality.targets(parts["quality"])
    if "proposal" in parts:
        found += proposal.targets(parts["proposal"])
    if "fidelity" in parts:
        found += fidelity.targets(parts["fidelity"])
    if "multiobjective" in parts:
        found += multiobjective.targets(parts["multiobjective"])
    if "conditional" in parts:
        found += conditional.targets(parts["conditional"])
    if "pbt" in parts:
        found += pbt.targets(parts["pbt"])
    if "peers" in parts:
        found += peers.targets(parts["peers"])
    if "service" in parts:
        found += [(f"{r['contender']} ≥ {SERVICE_TARGET:g}× EQ-SQL's per-task path",
                   f"{r['ratio_to_eqsql']:.1f}×", r["ratio_to_eqsql"] >= SERVICE_TARGET)
                  for r in parts["service"]["runs"]
                  if r["contender"].startswith(("zmq", "PostgreSQL"))]
    if "packing" in parts:
        found += [(f"packing utilization ≥ {PACKING_TARGET:.0%} ({r['layout']}, steady)",
                   f"{r['steady_utilization']:.1%} (first-come-first-served "
                   f"{fcfs['steady_utilization']:.1%})",
                   r["steady_utilization"] >= PACKING_TARGET)
                  for r in parts["packing"]["runs"] if r["policy"] == "emews"
                  for fcfs in parts["packing"]["runs"]
                  if fcfs["layout"] == r["layout"] and fcfs["policy"] != "emews"
                  and fcfs["policy"].startswith("first-come")]
    return found


PACKING_TARGET = 0.9   # issue 35, judged before the drain of a finite backlog
MODEL_BASED, MODEL_BASED_UTILIZATION = ("gp", "mbo"), 0.90   # issue "search"
SERVICE_TARGET = 10.0  # issues "service" and 28: both transports against EQ-SQL's own client


DISPATCH_TARGETS = (  # issue "dispatch": (slots per worker, floor, ratio, rank-0 CPU µs/task)
    ("1", "wait", 0.9, 100.0), ("32", "ioc", 0.5, 15.0))


def _dispatch_targets(contenders):
    """Issue 18's floors, judged as the issue defines them: the ratio of the medians over the
    interleaved repeats, and the median CPU per task; the spread is shown, and whether every
    repeat clears the target too."""
    found = []
    for slots, floor, least, cpu in DISPATCH_TARGETS:
        c = contenders.get(f"emews whole path, slots_per_worker={slots}", {})
        if floor in c.get("floors", {}):
            r = c["floors"][floor]
            found.append((f"whole path ≥ {least}× the {floor} floor, {slots} in flight",
                          f"{r['ratio']:.2f} [{r['min']:.2f}–{r['max']:.2f}]"
                          + _every_repeat(r["min"] >= least), r["ratio"] >= least))
        if "rank0_cpu_us_per_task_max" in c:
            found.append((f"rank 0 CPU ≤ {cpu:g} µs per task, {slots} in flight",
                          _spread(c, "rank0_cpu_us_per_task")
                          + _every_repeat(c["rank0_cpu_us_per_task_max"] <= cpu),
                          c["rank0_cpu_us_per_task"] <= cpu))
    return found


def _every_repeat(cleared):
    return "; every repeat clears it" if cleared else "; not every repeat clears it"


def _targets(found):
    return ("### Targets of the issues (reported, not asserted)\n\n"
            + _table(("target", "measured", "met"),
                     [(t, m, "yes" if ok else "no") for t, m, ok in found]))
