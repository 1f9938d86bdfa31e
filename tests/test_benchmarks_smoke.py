"""The benchmark suite's smoke mode keeps working (every part, tiny sizes; no timings checked)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).parent.parent


def _smoke(out, readme, *options):
    return subprocess.run([sys.executable, "-m", "benchmarks", "--smoke", "--out", str(out),
                           "--readme", str(readme), *options], cwd=REPO, capture_output=True,
                          text=True, timeout=600)


@pytest.mark.slow
@pytest.mark.mpi
def test_smoke_run_writes_its_record_and_the_readme_tables(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# Benchmarks\n\n<!-- results:begin -->\nold\n<!-- results:end -->\n\nEnd.\n")
    done = _smoke(tmp_path, readme)
    assert done.returncode == 0, done.stderr
    (path,) = tmp_path.glob("*.json")
    record = json.loads(path.read_text())
    parts = record["parts"]
    assert set(parts) == {"dispatch", "utilization", "simulation", "overhead", "quality",
                          "faults"}
    faults = parts["faults"]["rows"]
    assert len(faults) == 15 and (tmp_path / "faults.md").read_text().count("\n| ") == 16
    assert all(r["survived"] is True and r["evaluations lost"] == 0 for r in faults), faults
    assert {c["tasks"] for c in parts["dispatch"]["contenders"].values()} == {300}
    assert all(0 < r["utilization"] <= 1 for r in parts["utilization"]["runs"])
    assert all(r["evaluations"] == 12 for r in parts["utilization"]["runs"])
    assert all(0 < r["utilization"] <= 1 for r in parts["simulation"]["runs"])
    assert {(r["algorithm"], r["observations"]) for r in parts["overhead"]["runs"]} == {
        ("random", 5), ("random", 10)}
    quality = parts["quality"]
    assert len(quality["runs"]) == 2 * 2 * 3 * 2  # problems x contenders x modes x seeds
    assert all(r["evaluations"] == 6 for r in quality["runs"])
    assert {r["mode"] for r in quality["runs"]} == {"sequential", "batch", "async"}
    assert {(c["mode"], c["problem"]) for c in quality["comparisons"]
            if c["peer"] == "optuna TPE"} == {(m, p) for m in ("sequential", "batch", "async")
                                               for p in ("branin", "digits")}
    assert record["versions"]["mpi4py"] and record["machine"]["cores"]
    text = readme.read_text()
    assert "old" not in text and text.startswith("# Benchmarks") and text.endswith("End.\n")
    assert "### 1. Dispatch overhead" in text and "### Targets of issue 6" in text
    assert "#### Paired comparisons (Wilcoxon" in text and "#### async" in text

    again = _smoke(tmp_path, readme, "--parts", "overhead")
    assert again.returncode == 0, again.stderr
    rerun = json.loads(path.read_text())
    assert rerun["parts"].keys() == parts.keys()
    assert rerun["parts"]["quality"] == quality
    assert rerun["part_commits"].keys() == parts.keys()
    assert "### 3. Search quality" in readme.read_text()
