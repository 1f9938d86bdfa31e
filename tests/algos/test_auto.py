"""``auto``, the default search: its rule on a table of studies, a study that names no
algorithm, a study killed under a real mpiexec and resumed, and the conformance suite."""

import json
import os
import re
import signal
import subprocess
import sys

import pytest

import emews
from emews.algorithms.auto import THRESHOLDS, Auto
from emews.plugin import ConfigError, Space, point_key
from emews.testing import CONDITIONAL, SPACE, Conformance, branches, drive

from conftest import REPO, wait_until
from test_fidelity import gated_runs

FLOATS = [{"name": f"x{i}", "type": "float", "lower": 0.0, "upper": 1.0} for i in range(40)]
GP = ("gp", 0)
TPE = ("optuna (tpe)", 0)
SWITCH = ("optuna (tpe)", THRESHOLDS["gp_max_told"])


def stages(space=SPACE, **settings):
    """``(label, start)`` of each stage ``auto`` plans for a study of ``space`` (GA JSON)."""
    described = Auto(Space.from_ga_json(space), seed=1, **settings).describe()
    return [(stage["label"], stage["start"]) for stage in described["stages"]]


@pytest.mark.parametrize("space, settings, expected", [
    # gp while it is measured best and fast; TPE past gp_max_told told points
    (SPACE, {"budget": 100, "mode": "sequential"}, [GP]),
    (SPACE, {"budget": 100, "mode": "batch", "slots": 3, "batch_size": 8}, [GP]),
    (SPACE, {"budget": 100, "mode": "async", "slots": 8}, [GP]),
    (SPACE, {"budget": 1000, "mode": "async", "slots": 8}, [GP, SWITCH]),
    (SPACE, {"mode": "sequential"}, [GP, SWITCH]),                  # no budget: stop rules
    (SPACE, {"budget": 100, "thresholds": {"gp_max_told": 50}}, [GP, ("optuna (tpe)", 50)]),
    (CONDITIONAL, {"budget": 40, "mode": "sequential"}, [GP]),      # gp best there (table 14)
    (SPACE, {"budget": 200, "objectives": 2}, [GP]),                # ParEGO (table 12)
    (SPACE, {"budget": 200, "objectives": 3, "constraints": 1}, [GP]),
    # TPE from the start
    (SPACE, {"budget": 100, "constraints": 1}, [TPE]),              # one objective, constrained
    (SPACE, {"budget": 100, "pruner": "asha"}, [TPE]),              # curves (table 11)
    (FLOATS, {"budget": 100}, [TPE]),                               # beyond gp_max_dims
    (SPACE, {"budget": 100, "mode": "async", "slots": 65}, [TPE]),  # beyond gp_max_in_flight
    (SPACE, {"budget": 100, "mode": "batch", "slots": 100, "batch_size": 8}, [GP]),
    (SPACE, {"budget": 100, "mode": "sequential", "slots": 100}, [GP]),
])
def test_auto_picks_as_the_docs_table_says(space, settings, expected):
    assert stages(space, **settings) == expected


def test_the_docs_give_each_threshold_with_its_value():
    page = (REPO / "docs" / "src" / "algorithms.md").read_text()
    for name, value in THRESHOLDS.items():
        assert re.search(rf"`{name}`[^\n]*\b{value:,}\b", page), name


@pytest.mark.parametrize("options, where", [
    ({"thresholds": {"gp_max_toldd": 5}}, "[algorithm].thresholds.gp_max_toldd"),
    ({"thresholds": {"gp_max_told": -1}}, "[algorithm].thresholds.gp_max_told"),
    ({"mode": "fast"}, "[algorithm].mode"),
])
def test_a_bad_option_is_one_line_naming_it(options, where):
    with pytest.raises(ConfigError) as error:
        Auto(Space.from_ga_json(SPACE), seed=1, **options)
    assert error.value.where == where


def test_a_setting_of_the_study_in_algorithm_is_refused(toy_config):
    cfg = dict(toy_config(algorithm="auto"), algorithm={"budget": 5})
    with pytest.raises(ConfigError, match=r"\[algorithm\]\.budget: is set from the study's"):
        emews.run(cfg)


def test_a_study_that_names_no_algorithm_runs_auto_and_stores_its_choice(toy_config, capsys):
    cfg = toy_config(budget=14)
    del cfg["study"]["algorithm"]
    cfg["algorithm"] = {"thresholds": {"gp_max_told": 8}}
    result = emews.run(cfg)
    out = capsys.readouterr().out
    study = emews.load(result.expdir)
    search = study.meta["search"]
    assert search["algorithm"] == "auto"
    assert [(s["search"], s["options"], s["start"]) for s in search["stages"]] == [
        ("gp", {}, 0), ("optuna", {"sampler": "tpe"}, 8)]
    assert len(study.rows) == 14 and {r["status"] for r in study.rows} == {"done"}
    assert len({point_key(r["params"]) for r in study.rows}) == 14
    assert "emews: auto chose gp: 3 free parameters, 2 in flight" in out
    switched = re.search(r"emews: auto switches from gp to optuna \(tpe\) after (\d+) points "
                         r"told", out)
    assert switched and 8 <= int(switched[1]) < 14, out
    for command in ("status", "show"):
        shown = subprocess.run([sys.executable, "-m", "emews", command, str(result.expdir)],
                               capture_output=True, text=True, check=True).stdout
        assert "search: auto: gp (3 free parameters, 2 in flight); from 8 told, optuna " \
            "(tpe)" in shown and shown.count("; now optuna (tpe)") == 1, shown


def test_a_study_that_names_its_algorithm_runs_as_before(toy_config, capsys):
    result = emews.run(toy_config(algorithm="random", budget=6))
    assert "search" not in emews.load(result.expdir).meta
    assert "auto" not in capsys.readouterr().out


SMALL = [{"name": "a", "type": "categorical", "values": ["p", "q"]},
         {"name": "b", "type": "ordered", "values": [1, 2, 3]}]


@pytest.mark.parametrize("mode", ["sequential", "batch", "async"])
def test_a_small_discrete_space_is_evaluated_whole_once_then_the_study_ends(mode):
    run = drive({"algorithm": "auto", "options": {"quiet": True}, "space": SMALL, "seed": 1,
                 "mode": mode, "slots": 2, "stop": {"budget": 20}},
                lambda point: {"p": 0, "q": 1}[point["a"]] + point["b"])
    assert sorted((p["a"], p["b"]) for p in run.points) == [
        (a, b) for a in "pq" for b in (1, 2, 3)]
    # gp, auto's choice here, knows a small discrete space whole: it is done once all is told
    assert run.final["stop_reason"] == "the algorithm has no more points to propose"


def test_no_point_breaks_a_forbidden_clause(tmp_path):
    space = tmp_path / "space.json"
    space.write_text(json.dumps({"parameters": CONDITIONAL, "forbidden": [
        {"optimizer": ["sgd"], "momentum": {"<": 0.1}}]}))   # gp and TPE propose such points
    run = drive({"algorithm": "auto", "options": {"quiet": True, "thresholds": {
        "gp_max_told": 15}}, "space": str(space), "seed": 5, "mode": "sequential",
        "stop": {"budget": 30}}, branches)
    assert len(run.points) == 30
    assert all(Space.from_file(space).contains(point) for point in run.points)


BUDGET, STALL = 14, 5


@pytest.mark.slow
def test_a_killed_auto_study_resumes_with_the_same_stages_and_repeats_no_point(study,
                                                                              tmp_path):
    path = study(system={"procs": 3, "pool": "mpi", "progress_interval": 60},
                 study={"algorithm": "auto", "budget": BUDGET, "seed": 5,
                        "objective": "fault_me:stall_after"},
                 algorithm={"thresholds.gp_max_told": 8})   # a TOML dotted key
    emews_run, gate = gated_runs(tmp_path, STALL)   # fault_me's gate works alike
    killed = emews_run(path)
    wait_until(lambda: len(list(gate.glob("call-*"))) > STALL, "a run past the stall point")
    os.killpg(killed.pid, signal.SIGKILL)
    before, _ = killed.communicate()
    (expdir,) = (tmp_path / "experiments" / "study").iterdir()
    first = emews.load(expdir)
    told_before = sum(r["status"] == "done" for r in first.rows)
    assert 0 < told_before < 8 and "emews: auto chose gp" in before
    assert "switches" not in before

    (gate / "go").touch()
    resumed = emews_run("--resume", expdir)
    after, stderr = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, stderr
    study_after = emews.load(expdir)
    assert study_after.meta["search"] == first.meta["search"]   # the same stages
    assert re.search(r"emews: auto resumes with gp after [1-7] points told", after), after
    switched = re.search(r"emews: auto switches from gp to optuna \(tpe\) after (\d+) points "
                         r"told", after)
    assert switched and 8 <= int(switched[1]) < BUDGET, after
    done = [r for r in study_after.rows if r["status"] == "done"]
    assert len(done) == BUDGET
    assert len({point_key(r["params"]) for r in done}) == BUDGET   # no point twice


class TestAuto(Conformance):
    algorithm = "auto"
    options = {"thresholds": {"gp_max_told": 6}}   # gp's random design, then TPE
