"""The Pareto front everywhere a user looks (docs/src/multiobjective.md, "Seeing the front"):
``emews status --json``, ``emews show --pareto``, export to Optuna, ``to_optuna()`` and
optuna-dashboard's REST API all give the front of ``final.json``, read through the store."""

import csv
import io
import json
from wsgiref.util import setup_testing_defaults

import optuna
import pytest

import emews
from emews.evaluate import Outcome
from emews.inspect import load
from emews.inspect._export import export
from emews.inspect._optuna_view import StoreView
from emews.inspect._summary import summary
from emews.store import SQLiteStore

from conftest import stored_rows
from test_multiobjective import MO, independent_front

DIRECTIONS = ["minimize", "maximize"]
CONSTRAINED = {**MO, "directions": DIRECTIONS, "constraints": ["acc >= 0.6"]}


def by_id(entries):
    """Front entries (``{"id"?, "point", "values"}``) as ``{json of point: values}``."""
    return {json.dumps(e["point"], sort_keys=True): e["values"] for e in entries}


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished study of two objectives (one maximized) and a constraint, and its rows."""
    tmp = tmp_path_factory.mktemp("mo")
    monkeypatch = pytest.MonkeyPatch()
    from conftest import SUPPORT, TOY_SPACE
    monkeypatch.syspath_prepend(str(SUPPORT))
    (tmp / "space.json").write_text(json.dumps(TOY_SPACE))
    result = emews.run({"system": {"pool": "inprocess", "procs": 3, "progress_interval": 0.0},
                        "study": {"name": "t", "space": str(tmp / "space.json"), "budget": 24,
                                  "seed": 4, "impl": "py", "data_dir": str(tmp),
                                  **CONSTRAINED}})
    monkeypatch.undo()
    rows = stored_rows(result.expdir)
    front = json.loads((result.expdir / "final.json").read_text())["pareto"]
    assert front and any(r["feasible"] is False for r in rows)   # the constraint bites
    return result.expdir, rows, front


@pytest.mark.slow
def test_status_and_show_give_the_front_of_final_json(finished, emews_cli):
    expdir, rows, front = finished
    done = emews_cli("status", "--json", expdir)
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)
    assert info["objectives"] == ["loss", "size"] and info["directions"] == DIRECTIONS
    assert by_id(info["pareto"]) == by_id(front) and info["best"] is None
    ids = {r["id"]: r for r in rows}
    assert all(ids[e["id"]]["objectives"] == e["values"] for e in info["pareto"])
    assert sorted((e["id"], e["values"]) for e in info["pareto"]) == \
        independent_front(rows, DIRECTIONS)

    shown = emews_cli("show", "--pareto", "--json", expdir)
    assert shown.returncode == 0, shown.stderr
    records = json.loads(shown.stdout)
    assert by_id([{"point": {k: r[k] for k in ("x", "n", "act")}, "values": r["values"]}
                  for r in records]) == by_id(front)
    table = emews_cli("show", "--pareto", expdir)
    assert table.returncode == 0 and "Pareto front:" in table.stdout
    assert f"Pareto front: {len(front)} point" in emews_cli("status", expdir).stdout


@pytest.mark.slow
def test_show_pareto_is_refused_in_one_line_for_one_objective(toy_config, emews_cli):
    result = emews.run(toy_config(budget=3))
    done = emews_cli("show", "--pareto", result.expdir)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "emews show --pareto: needs a study of several " \
        "objectives" in done.stderr


def test_a_running_study_shows_the_front_of_its_rows_so_far(tmp_path):
    """No final.json yet: the front is read from the store (written here through its API as
    the master writes it)."""
    expdir = tmp_path / "EXP001"
    expdir.mkdir()
    (expdir / "config.json").write_text(json.dumps({"study": {
        "objectives": ["loss", "size"], "directions": DIRECTIONS}}))
    store = SQLiteStore(expdir / "results.db")
    values = [[1.0, 10.0], [2.0, 30.0], [3.0, 20.0], [0.5, 5.0], [1.5, 10.0]]
    store.add([(i, json.dumps({"x": i}), f"RUN{i:06d}", None, i) for i in range(6)])
    store.finish([(i, 1, Outcome(v[0], objectives=v, started=1.0, finished=2.0), 1, "done")
                  for i, v in enumerate(values)])
    store.commit()
    store.close()   # point 5 still queued
    info = summary(load(expdir))
    assert info["state"] != "finished" and info["counts"]["queued"] == 1
    assert [(e["id"], e["values"]) for e in info["pareto"]] == \
        independent_front(stored_rows(expdir), DIRECTIONS) == [(0, [1.0, 10.0]),
                                                               (1, [2.0, 30.0]),
                                                               (3, [0.5, 5.0])]


def test_export_to_optuna_is_multi_objective_and_reads_back_the_same_front(finished,
                                                                             tmp_path):
    expdir, rows, front = finished
    url = f"sqlite:///{tmp_path / 'optuna.db'}"
    export(load(expdir), "optuna", url)
    study = optuna.load_study(study_name=expdir.name, storage=url)
    assert study.directions == [optuna.study.StudyDirection.MINIMIZE,
                                optuna.study.StudyDirection.MAXIMIZE]
    assert study.metric_names == ["loss", "size"]
    assert len(study.trials) == len(rows)
    read_back = [{"point": t.params, "values": t.values} for t in study.best_trials]
    assert by_id(read_back) == by_id(front)   # Optuna's own front, constraints considered
    infeasible = [t for t in study.trials if any(c > 0 for c in t.system_attrs["constraints"])]
    assert {t.number for t in infeasible} == {r["id"] for r in rows if r["feasible"] is False}


def test_to_optuna_and_the_dashboard_api_show_the_front(finished):
    expdir, rows, front = finished
    study = emews.load(expdir).to_optuna()
    assert [d.name for d in study.directions] == ["MINIMIZE", "MAXIMIZE"]
    assert by_id([{"point": t.params, "values": t.values} for t in study.best_trials]) == \
        by_id(front)
    figure = optuna.visualization.plot_pareto_front(study)
    plotted = sum(len(trace.x) for trace in figure.data if trace.x is not None)
    assert plotted == len([r for r in rows if r["status"] == "done"])

    from optuna_dashboard import wsgi

    app = wsgi(StoreView([expdir]))
    status, detail = get(app, "/api/studies/0")
    assert status.startswith("200")
    assert detail["directions"] == DIRECTIONS and detail["objective_names"] == ["loss", "size"]
    trials = {t["number"]: t for t in detail["trials"]}
    for row in rows:
        assert trials[row["id"]]["values"] == row["objectives"]
        feasible = all(c <= 0 for c in trials[row["id"]]["constraints"])
        assert feasible == (row["feasible"] is not False)
    # optuna-dashboard's list of best trials is the front of every complete trial, by its
    # own rule (constraints ignored); its Pareto plot tells infeasible ones by "constraints"
    everyone = [dict(r, feasible=None) for r in rows]
    assert sorted(t["number"] for t in detail["best_trials"]) == \
        [i for i, _ in independent_front(everyone, DIRECTIONS)]


def get(app, path):
    """``GET path`` through the WSGI ``app``: ``(status, decoded JSON)``."""
    environ = {"PATH_INFO": path, "REQUEST_METHOD": "GET", "wsgi.input": io.BytesIO()}
    setup_testing_defaults(environ)
    status = []
    body = b"".join(app(environ, lambda s, headers, exc=None: status.append(s)))
    return status[0], json.loads(body)


def write_mo_study(expdir, vectors, study, feasible=None):
    """An experiment directory whose store holds one done evaluation per vector (raw
    objectives; ``feasible`` per vector, or ``None``), finished in their order."""
    expdir.mkdir()
    (expdir / "config.json").write_text(json.dumps({"study": study}))
    store = SQLiteStore(expdir / "results.db")
    store.add([(i, json.dumps({"x": float(i)}), f"RUN{i:06d}", None, i)
               for i in range(len(vectors))])
    store.finish([(i, 1, Outcome(v[0], objectives=v, started=10.0 + i, finished=11.0 + i,
                                 feasible=None if feasible is None else feasible[i]), 1, "done")
                  for i, v in enumerate(vectors)])
    store.commit()
    store.close()
    return expdir


def test_the_report_draws_the_hypervolume_over_evaluations_against_the_reference(tmp_path):
    from emews.inspect._report import hypervolume_curve

    # size is maximized: raw (1, -3) is (1, 3) minimized; the infeasible (0, 0) dominates all
    vectors = [[1.0, -3.0], [0.0, 0.0], [2.0, -2.0], [3.0, -1.0]]
    expdir = write_mo_study(tmp_path / "EXP001", vectors, {
        "objectives": ["loss", "size"], "directions": DIRECTIONS,
        "constraints": ["loss >= 0.5"], "reference_point": [4.0, -4.0]},
        feasible=[True, False, True, True])
    reference, curve = hypervolume_curve(load(expdir), points=4)
    # the staircase areas under (4, 4), by hand: (1,3) -> 3; + (2,2) -> 5; + (3,1) -> 6
    assert reference == [4.0, 4.0] and curve == [(1, 3.0), (2, 3.0), (3, 5.0), (4, 6.0)]
    page = load(expdir).report()
    assert (expdir / "report_front.png").stat().st_size > 0
    assert (expdir / "report_hypervolume.png").stat().st_size > 0
    text = page.read_text()
    assert "Pareto front" in text and "Hypervolume over evaluations" in text
    assert "Pareto front: 3 points" in text   # (1,3), (2,2), (3,1): not the infeasible one


def test_the_report_draws_a_pair_plot_for_three_objectives(tmp_path):
    vectors = [[1.0, 2.0, 3.0], [3.0, 2.0, 1.0], [2.0, 2.0, 2.0], [3.0, 3.0, 3.0]]
    expdir = write_mo_study(tmp_path / "EXP001", vectors, {"objectives": ["a", "b", "c"]})
    study = load(expdir)
    assert [r["id"] for r in study.pareto] == [0, 1, 2]
    from emews.inspect import _plot as plot, _report as report

    figure, _ = report._front(plot.pyplot(), study, None)
    drawn = [axes for axes in figure.axes if axes.axison]
    assert sorted((a.get_xlabel(), a.get_ylabel()) for a in drawn) == [
        ("a (min)", "b (min)"), ("a (min)", "c (min)"), ("b (min)", "c (min)")]
    assert "Pareto front" in study.report().read_text()


def test_show_ranks_by_the_first_objective_in_its_direction_feasible_first(tmp_path,
                                                                          emews_cli):
    objectives = [[0.5, 10.0], [0.9, 50.0], [0.7, 5.0], [0.95, 200.0]]   # 3: infeasible
    expdir = write_mo_study(tmp_path / "EXP001", objectives, {
        "objectives": ["acc", "size"], "directions": ["maximize", "minimize"],
        "constraints": ["size <= 100"]}, feasible=[v[1] <= 100 for v in objectives])
    shown = emews_cli("show", "--csv", expdir)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    header = lines[0].split(",")
    assert header[:5] == ["id", "status", "result", "acc", "size"]   # objectives named
    assert [line.split(",")[0] for line in lines[1:]] == ["1", "2", "0", "3"]
    assert lines[1].split(",")[3:5] == ["0.9", "50.0"]
    assert "first objective in its direction" in emews_cli("show", "--help").stdout


def test_show_pareto_csv_has_a_column_per_objective(finished, emews_cli):
    expdir, rows, front = finished
    shown = emews_cli("show", "--pareto", "--csv", expdir)
    assert shown.returncode == 0, shown.stderr
    records = list(csv.DictReader(io.StringIO(shown.stdout)))
    assert sorted([float(r["loss"]), float(r["size"])] for r in records) == \
        sorted(e["values"] for e in front)
