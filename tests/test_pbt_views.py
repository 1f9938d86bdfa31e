"""Seeing a population-based study (``algorithm = "pbt"``): ``emews report`` draws each
member's hyperparameter schedule over steps and the population's curves (rendered by a real
headless Chromium), and the dashboard's view of the store serves each segment's intermediate
values and record, all checked against the store's rows and reports."""

import math

import pytest

import emews
from emews.core._segments import FIELDS, SEGMENT
from emews.inspect import _report as report, _show as show
from emews.inspect._plot import pyplot
from emews.models import pbt_toy

from test_inspect import cli, image_widths


@pytest.fixture
def population(study, tmp_path):
    """A finished population of the PBT paper's toy (4 members, 4 segments each, in-process
    pool); its experiment directory."""
    study(space=pbt_toy.SPACE, system={"pool": "inprocess", "procs": 4, "progress_interval": 0.0},
          study={"budget": 24, "objective": "emews.models.pbt_toy:train", "seed": 1,
                 "algorithm": "pbt", "mode": "batch"},
          algorithm={"population_size": 4, "perturbation_interval": 3, "max_steps": 12,
                     "quantile": 0.25})
    done = cli("run", "study.toml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (expdir,) = (tmp_path / "experiments" / "study").iterdir()
    return expdir


def drawn(axes):
    """``{label: (x, y)}`` of the lines on ``axes``, NaNs (the breaks) as None."""
    def plain(values):
        return [None if isinstance(v, float) and math.isnan(v) else v for v in values]

    return {line.get_label(): (plain(line.get_xdata()), plain(line.get_ydata()))
            for line in axes.get_lines() if not line.get_label().startswith("_")}


def test_the_dashboard_gives_each_segment_its_record_and_its_intermediate_values(population):
    """The dashboard's view (Optuna's storage API over the store): a trial a segment, its
    record a user attribute and never a parameter, its intermediate values the steps it
    trained, as the model reported them."""
    from emews.inspect._optuna_view import StoreView

    study = emews.load(population)
    segments = {s["id"]: s for s in show.lineage(study)}
    curves = study.curves()
    trials = StoreView([population]).get_all_trials(0)
    assert sorted(t.user_attrs["emews_id"] for t in trials) == sorted(segments) != []
    for trial in trials:
        segment = segments[trial.user_attrs["emews_id"]]
        assert trial.user_attrs["segment"] == {k: segment[k] for k in FIELDS}
        assert trial.params == segment["params"] and SEGMENT not in trial.params
        assert trial.intermediate_values == curves[segment["id"]]
        assert sorted(trial.intermediate_values) == list(range(segment["start"] + 1,
                                                               segment["until"] + 1))
        assert trial.value == segment["value"] == trial.intermediate_values[segment["until"]]


@pytest.mark.slow   # scikit-learn's forest and matplotlib: seconds on a busy machine
def test_the_report_draws_each_members_schedule_and_the_populations_curves(population,
                                                                          tmp_path):
    study = emews.load(population)
    segments = show.lineage(study)
    curves = study.curves()
    by_name = {s["name"]: s for s in segments}
    members = sorted({s["member"] for s in segments})
    assert members == [0, 1, 2, 3] and any(s["donor"] for s in segments)
    plt = pyplot()

    # the population's curves: each member's segments in order, each from its start value
    figure, note = report._population(plt, study, segments, curves)
    lines = drawn(figure.axes[0])
    assert sorted(lines) == [f"member {m}" for m in members]
    for member in members:
        steps, values = [], []
        for segment in sorted((s for s in segments if s["member"] == member),
                              key=lambda s: s["id"]):
            start = segment["donor"] or segment["parent"]
            if start:
                steps.append(segment["start"])
                values.append(curves[by_name[start]["id"]][segment["start"]])
            steps += list(range(segment["start"] + 1, segment["until"] + 1))
            values += [curves[segment["id"]][step] for step in steps[len(values):]]
            steps.append(None)
            values.append(None)
        assert lines[f"member {member}"] == (steps, values)
    exploits = sum(s["donor"] is not None for s in segments)
    assert f"{len(segments)} segments of 4 members" in note and f"the {exploits} exploits" \
        in note
    plt.close(figure)

    # each member's schedule, one panel a hyperparameter, and the best member's over them
    best = show.schedule(study)
    figure, note = report._schedules(plt, study, segments, report.Coordinates(study))
    assert [axes.get_title() for axes in figure.axes] == ["h0", "h1"]
    for axes in figure.axes:
        name, lines = axes.get_title(), drawn(axes)
        for member in members:
            own = sorted((s for s in segments if s["member"] == member), key=lambda s: s["id"])
            assert lines[f"member {member}"] == (
                [x for s in own for x in (s["start"], s["until"], None)],
                [y for s in own for y in (s["params"][name],) * 2 + (None,)])
        starts = sorted(int(step) for step in best["schedule"])
        values = [best["schedule"][str(step)][name] for step in starts]
        assert lines["best"] == (starts + [12], values + values[-1:])
    assert f"the best segment, {best['name']} (member {best['member']})" in note
    plt.close(figure)

    # the page: both figures among the others, every image decoded by Chromium
    done = cli("report", population, "-o", tmp_path / "r.html")
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "r.html").read_text()
    assert "The population&#x27;s curves" in page
    assert "Each member&#x27;s hyperparameter schedule" in page
    assert sorted(p.name for p in tmp_path.glob("r_*.png")) == [
        "r_convergence.png", "r_curves.png", "r_importance.png", "r_parallel.png",
        "r_params.png", "r_population.png", "r_schedules.png", "r_timeline.png"]
    widths, console = image_widths(page, tmp_path)
    assert len(widths) == 8 and all(w > 0 for w in widths)
    assert [line for line in console if "probed" not in line] == []
