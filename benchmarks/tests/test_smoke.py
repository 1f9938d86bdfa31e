"""The benchmark suite keeps working: every part at tiny sizes, its record, and the README.

No timing is checked here: speed is what the suite reports, never what a test asserts.
"""

import ast
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks import proposal
from benchmarks.__main__ import PARTS

REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = REPO / "benchmarks"

# What benchmarks/report.py reads from each part: top-level fields, then those of each row
# (dispatch: each contender; utilization, overhead, simulation, proposal: each run; faults:
# each row).
REPORT_FIELDS = {
    "dispatch": (("tasks", "workers", "repeats", "contenders", "pingpong_us"),
                 ("tasks", "tasks_per_s", "ratio_to_bare")),
    "utilization": (("workers", "tasks", "duration", "runs"),
                    ("algorithm", "mode", "evaluations", "utilization", "steady_utilization",
                     "ask_ms_p50", "ask_ms_p99", "tell_ms_p50", "tell_ms_p99", "ask_total_s",
                     "tell_total_s", "makespan_s", "stop_reason")),
    "quality": (("contenders", "problems", "summary", "seconds_by_contender", "budget", "seeds",
                 "regret_floor", "runs", "modes", "workers", "comparisons", "targets"), ()),
    "overhead": (("space", "repeats", "runs"),
                 ("algorithm", "observations", "ask_ms", "tell_ms", "ask_plus_tell_ms")),
    "simulation": (("duration", "task_means", "runs"),
                   ("workers", "mode", "tasks", "master_tasks_per_s", "master_cpu_us_per_task", "queue_peak_mib",
                    "saturation_workers", "utilization_10s", "utilization_3600s")),
    "faults": (("rows",), ("fault", "survived", "evaluations lost")),
    "service": (("tasks", "runs"), ("contender", "tasks", "tasks_per_s", "us_per_task",
                                    "ratio_to_eqsql")),
    "fidelity": (("runs", "problems", "comparisons", "seeds", "budget_epochs", "workers"),
                 ("problem", "contender", "log10_regret", "log10_regret_third", "utilization")),
    "proposal": (("problem", "ns", "runs", "not_measured"),
                 ("contender", "n", "warm_s", "steps", "step_ms", "step_max_ms")),
    "packing": (("slots", "slots_per_node", "sizes", "duration", "runs"),
                ("layout", "policy", "tasks", "utilization", "steady_utilization",
                 "largest_wait_ratio")),
    "launch": (("repeats", "runs"),
               ("model", "ranks", "median_s", "overhead_s", "ratio_to_one_rank")),
    "multiobjective": (("budget", "digits_budget", "seeds", "workers", "modes", "problems",
                        "contenders", "ours", "references", "skipped", "alpha", "summary",
                        "comparisons", "targets", "async_forms", "missing"),
                       ("problem", "contender", "mode", "seed", "evaluations", "seconds",
                        "hypervolume", "hypervolume_half")),
    "pbt": (("runs", "seeds", "population", "steps", "interval", "problems", "comparisons"),
            ("problem", "contender", "log10_loss", "q25", "q75")),
    "conditional": (("budget", "seeds", "problems", "contenders", "ours", "skipped", "failed",
                     "regret_floor", "alpha", "summary", "comparisons", "targets", "runs"),
                    ("problem", "contender", "seed", "evaluations", "best", "seconds")),
    "peers": (("rounds", "batch", "sequential_budget", "seeds", "modes", "tasks", "contenders",
               "ours", "missing", "versions", "alpha", "summary", "comparisons", "runs"),
              ("problem", "contender", "mode", "seed", "evaluations", "best_by_round")),
}
PEERS_DISPATCH = ("libEnsemble, persistent generator, async return", "Dask distributed, submit",
                  "Dask distributed, map")
PEERS_UTILIZATION = ("libEnsemble persistent_uniform", "optuna TPE (n_jobs threads)",
                     "optuna random (n_jobs threads)")


def _benchmarks(*args, timeout=1400):
    return subprocess.run([sys.executable, "-m", "benchmarks", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)


def _rows(name, part):
    if name == "dispatch":
        return list(part["contenders"].values())
    return part.get("rows" if name == "faults" else "runs", [])


def _git(*args):
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_every_benchmark_module_is_a_part_of_the_suite():
    """A module with a top-level ``run(sizes, ...)`` is a part, so the smoke run covers it."""
    modules = set()
    for path in BENCHMARKS.glob("*.py"):
        tree = ast.parse(path.read_text())
        if any(isinstance(node, ast.FunctionDef) and node.name == "run" and node.args.args
               and node.args.args[0].arg == "sizes" for node in tree.body):
            modules.add(f"benchmarks.{path.stem}")
    assert modules == {run.__module__ for run in PARTS.values()}
    assert set(REPORT_FIELDS) == set(PARTS)


def test_readme_is_what_the_report_command_writes(tmp_path):
    """benchmarks/README.md and the proposal curve are generated from README.in.md and
    results/*.json, never edited."""
    readme, records = tmp_path / "README.md", tmp_path / "results"
    records.mkdir()
    for path in (BENCHMARKS / "results").glob("*.json"):
        shutil.copy(path, records)
    done = _benchmarks("report", "--readme", str(readme), "--out", str(records))
    assert done.returncode == 0, done.stderr
    assert readme.read_text() == (BENCHMARKS / "README.md").read_text(), (
        "benchmarks/README.md differs from what `python -m benchmarks report` writes: "
        "edit benchmarks/README.in.md and run the command")
    curve = (records / "proposal.svg").read_text()
    assert curve == (BENCHMARKS / "results" / "proposal.svg").read_text()
    assert all(f">{name}<" in curve for name in ("emews gp", "emews mbo", "skopt Optimizer"))


def test_model_based_searches_are_judged_on_their_async_utilization_after_the_design():
    """gp and mbo meet the utilization target of issue "search" at 90 % after their initial
    design; a run without that figure (an older record) is not judged on it."""
    from benchmarks import report

    def run(algorithm, after):
        return {"algorithm": algorithm, "mode": "async", "plugin": True, "utilization": 0.8,
                "steady_utilization": 0.9, "after_design_utilization": after}

    found = report.targets({"utilization": {"runs": [
        run("gp", 0.9), run("mbo", 0.899), run("random", 0.5), run("gp", None)]}})
    judged = [(target, met) for target, _, met in found if "after the initial" in target]
    assert judged == [("async utilization after the initial design ≥ 90% (gp)", True),
                      ("async utilization after the initial design ≥ 90% (mbo)", False)]


def test_proposal_targets_are_judged_on_the_amortized_step_at_their_n():
    """Each proposal-speed target is met only by a step whose cost, periodic work at its share,
    is at or under its bound, at its n, whatever the mean of the few steps measured; a target
    whose n was not measured is not reported."""
    runs = [{"contender": "emews gp", "n": 300, "step_ms": 300.0, "amortized_ms": 500.0},
            {"contender": "emews gp", "n": 1000, "step_ms": 1900.0, "amortized_ms": 2000.5},
            {"contender": "emews mbo", "n": 1000, "step_ms": 54.0, "amortized_ms": 37.0},
            {"contender": "emews mbo", "n": 300, "step_ms": 10.0}]
    found = proposal.targets({"runs": runs})
    assert [(target.split(" ≤ ")[0], met) for target, _, met in found] == [
        ("emews gp ask + tell", True), ("emews gp ask + tell", False),
        ("emews mbo ask + tell", True)]
    assert found[2][1] == "37 ms amortized (54 ms mean step)"


def test_the_pruned_studys_proposal_targets_are_judged_on_the_amortized_step():
    """Issue 47's: gp's and mbo's amortized step after a pruned study's results, at or under
    200 ms; the mean step alone meets nothing."""
    pruned = [{"contender": "emews gp", "n": 500, "step_ms": 150.0, "amortized_ms": 250.0,
               "pruned": 0.8},
              {"contender": "emews mbo", "n": 500, "step_ms": 250.0, "amortized_ms": 200.0,
               "pruned": 0.8}]
    found = proposal.targets({"runs": [], "pruned": pruned})
    assert [(target, met) for target, _, met in found] == [
        ("emews gp ask + tell ≤ 200 ms at n = 500, 80% pruned (issue 47)", False),
        ("emews mbo ask + tell ≤ 200 ms at n = 500, 80% pruned (issue 47)", True)]
    assert "After n = 500 results, 80% of them pruned runs (issue 47): emews gp 150.0 ms " \
        "(250.0 amortized)" in proposal.markdown({"ns": [], "runs": [], "pruned": pruned,
                                                  "not_measured": {}, "problem": "p"})


@pytest.mark.slow
@pytest.mark.mpi
@pytest.mark.timeout(1500)   # every part once at its smallest: minutes, more with each new part
def test_smoke_run_of_every_part_records_what_the_report_needs(tmp_path):
    readme = tmp_path / "README.md"
    args = ["--smoke", "--out", str(tmp_path), "--readme", str(readme)]
    done = _benchmarks(*args)
    assert done.returncode == 0, done.stderr
    (path,) = tmp_path.glob("*.json")
    record = json.loads(path.read_text())

    # provenance: commit, local changes, date, command, machine, versions
    assert record["commit"] == _git("rev-parse", "HEAD")
    assert record["dirty"] is bool(record["changed_files"])
    assert record["command"] == "python -m benchmarks " + " ".join(args)
    assert abs(time.mktime(time.strptime(record["date"], "%Y-%m-%d %H:%M:%S %z"))
               - time.time()) < 900
    assert record["machine"]["cores"] == os.cpu_count() and record["machine"]["memory_gib"] > 0
    versions = record["versions"]
    assert versions["python"] == platform.python_version()
    assert all(versions[p] for p in ("mpi4py", "optuna", "libensemble", "dask", "distributed"))

    parts = record["parts"]
    assert set(parts) == set(PARTS)
    for name, part in parts.items():
        top, row_fields = REPORT_FIELDS[name]
        assert set(top) <= part.keys(), (name, set(top) - part.keys())
        rows = _rows(name, part)
        assert rows, name
        assert all(set(row_fields) <= row.keys() for row in rows), name
        run = record["part_runs"][name]
        assert (run["commit"], run["size"], run["command"]) == (
            record["commit"], "smoke", record["command"])

    dispatch = parts["dispatch"]["contenders"]
    assert set(PEERS_DISPATCH) <= dispatch.keys()
    assert {c["tasks"] for c in dispatch.values()} == {300}
    assert all(dispatch[p]["rank0_cpu_us_per_task"] > 0 for p in PEERS_DISPATCH)
    utilization = {r["algorithm"]: r for r in parts["utilization"]["runs"]}
    assert set(PEERS_UTILIZATION) <= utilization.keys()
    assert all(r["evaluations"] == 12 and 0 < r["utilization"] <= 1
               for r in utilization.values())
    faults = parts["faults"]["rows"]
    assert len(faults) == 15 and (tmp_path / "faults.md").read_text().count("\n| ") == 16
    failing = [r for r in faults if r["survived"] is not True or r["evaluations lost"] != 0]
    assert not failing, failing
    for r in parts["simulation"]["runs"]:
        assert all(0 < r[f"utilization_{m:g}s"] <= 1 for m in (10, 3600))
        assert r["master_cpu_us_per_task"] > 0 and r["queue_peak_mib"] > 0
        assert r["saturation_workers"]["1 h"] == pytest.approx(
            3600 / (r["master_cpu_us_per_task"] * 1e-6))
    floors = dispatch["emews whole path, slots_per_worker=1"]["floors"]
    assert set(floors) == {"wait", "ioc"} and all(f["min"] <= f["ratio"] <= f["max"]
                                                  for f in floors.values())
    assert all(dispatch[f"bare {s}, 1 in flight per worker"]["rank0_cpu_us_per_task"] > 0
               for s in ("mpi4py, spinning", "mpi4py, waiting without spinning",
                         "IoC loop (ME thread, queues, batches)"))
    assert all(parts["dispatch"]["pingpong_us"][style] > 0 for style in ("spin", "wait"))
    assert {(r["model"], r["ranks"]) for r in parts["launch"]["runs"]} == {
        ("app", 1), ("app", 2), ("py", 1), ("py", 2)}
    assert {(r["algorithm"], r["observations"]) for r in parts["overhead"]["runs"]} == {
        ("random", 5), ("random", 10)}
    assert {(r["contender"], r["n"]) for r in parts["proposal"]["runs"]} >= {
        (c, n) for c in ("emews gp", "emews mbo", "skopt Optimizer", "optuna TPE")
        for n in (12, 24)}
    quality = parts["quality"]
    assert len(quality["runs"]) == 2 * 2 * 3 * 2  # problems x contenders x modes x seeds
    assert all(r["evaluations"] == 6 for r in quality["runs"])
    assert {r["mode"] for r in quality["runs"]} == {"sequential", "batch", "async"}
    assert {(c["mode"], c["problem"]) for c in quality["comparisons"]
            if c["peer"] == "optuna TPE"} == {(m, p) for m in ("sequential", "batch", "async")
                                               for p in ("branin", "digits")}

    text = readme.read_text()
    template = (REPO / "benchmarks" / "README.in.md").read_text()
    assert "<!-- results -->" not in text and template.splitlines()[0] in text
    for title in ("### 1. Dispatch overhead", "### 2. Worker utilization",
                  "### 3. Search quality", "### 4. Algorithm overhead", "### 5. Scale",
                  "### 6. Faults", "### 8. Proposal speed", "### 9. Packing", "### Targets"):
        assert title in text
    assert f"`{path.name}`" in text and f"`{record['commit'][:10]}`" in text
    assert all(f"| {p} |" in text for p in PEERS_DISPATCH + PEERS_UTILIZATION)
    assert "#### Paired comparisons (Wilcoxon" in text and "#### async" in text
    curve = (tmp_path / "proposal.svg").read_text()
    assert all(f">{name}<" in curve for name in ("emews gp", "emews mbo", "optuna TPE"))

    again = _benchmarks("--smoke", "--out", str(tmp_path), "--readme", str(readme),
                        "--record", str(path), "--parts", "overhead")   # the day may have ended
    assert again.returncode == 0, again.stderr
    rerun = json.loads(path.read_text())
    assert rerun["parts"].keys() == parts.keys()
    assert rerun["parts"]["quality"] == quality
    assert rerun["part_runs"]["quality"] == record["part_runs"]["quality"]
    assert rerun["part_runs"]["overhead"]["command"].endswith("--parts overhead")
    assert "### 3. Search quality" in readme.read_text()


def test_the_in_flight_proposal_targets_are_judged_on_the_amortized_step():
    """Issue 46's: gp's and mbo's amortized step after 500 results with 64 points in flight,
    at or under 1 s; the time to ask for all 64 at once is reported beside it."""
    in_flight = [{"contender": "emews gp", "n": 500, "step_ms": 900.0, "amortized_ms": 1100.0,
                  "in_flight": 64, "fill_s": 50.2},
                 {"contender": "emews mbo", "n": 500, "step_ms": 30.0, "amortized_ms": 32.0,
                  "in_flight": 64, "fill_s": 2.0}]
    found = proposal.targets({"runs": [], "in_flight": in_flight})
    assert [(target, met) for target, _, met in found] == [
        ("emews gp ask + tell ≤ 1,000 ms at n = 500, 64 in flight (issue 46)", False),
        ("emews mbo ask + tell ≤ 1,000 ms at n = 500, 64 in flight (issue 46)", True)]
    assert found[0][1] == "1,100 ms amortized (900 ms mean step; 50.2 s to ask for 64 at once)"
    assert "with 64 points in flight, each told as the next is asked for (issue 46): emews " \
        "gp 900.0 ms (1,100.0 amortized; 50.2 s to ask for all 64 at once)" in \
        proposal.markdown({"ns": [], "runs": [], "in_flight": in_flight, "not_measured": {},
                           "problem": "p"})
