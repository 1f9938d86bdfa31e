"""``emews report``: one self-contained HTML page (``EXPDIR/report.html``) and its PNGs.

::

    Study (read-only snapshot) --> figures (matplotlib, Agg) --> PNG files beside the page
                               \\-> tables (status, best, failures)  --> report.html
                                                                       (PNGs as data: URIs)

:func:`write_report` lists the figures; each figure's note on the page says what it shows.
"""

import base64
import html
import math
from pathlib import Path

from ..core import _pareto as pareto
from ..core._thaw import predict
from .._errors import ConfigError, missing_extra
from .._space import Space
from .._status import FINAL, Status
from . import _plot as plot
from ._source import read_thaws
from ._show import cell, lineage, point_table, schedule
from ._summary import one_line, render, summary

MIN_FOR_IMPORTANCE = 8
INACTIVE = -1.0   # the forest's coordinate of a parameter a point leaves out: apart from [0, 1]


def write_report(study, output=None):
    """Write the report of ``study`` to ``output`` (default ``EXPDIR/report.html``) and its
    PNGs beside it; return the page's path."""
    output = Path(output) if output else study.expdir / "report.html"
    if output.is_dir():
        raise ConfigError(str(output), "must be a file path for the HTML report, not a "
                          "directory", None, show_value=False)
    if not output.parent.is_dir():
        raise ConfigError(str(output), "must be a file path in an existing directory", None,
                          show_value=False)
    plt = plot.pyplot()
    coordinates = Coordinates(study)
    figures = [("convergence", "Convergence", _convergence),
               ("parallel", "Parallel coordinates of the best quarter", _parallel),
               ("params", f"Each parameter against {study.objective}", _params),
               ("importance", "Parameter importance", _importance),
               ("timeline", "Workers' timeline", _timeline)]
    if study.pareto is not None and len(study.criteria.names) > 1:   # several objectives
        figures[1:1] = [("front", "Pareto front", _front),
                        ("hypervolume", "Hypervolume over evaluations", _hypervolume)]
    curves = study.curves()
    if curves:   # the models reported (emews.report)
        figures.insert(1, ("curves", "Learning curves",
                           lambda plt, study, _: _curves(plt, study, curves)))
    thaws = read_thaws(study.expdir)
    if thaws:   # runs were paused (freeze-thaw)
        figures.insert(2, ("thaws", "Paused and thawed runs",
                           lambda plt, study, _: _thaws(plt, study, thaws)))
    segments = lineage(study)
    if segments:   # a population-based study (algorithm = "pbt")
        figures[1:1] = [
            ("population", "The population's curves",
             lambda plt, study, _: _population(plt, study, segments, curves)),
            ("schedules", "Each member's hyperparameter schedule",
             lambda plt, study, coordinates: _schedules(plt, study, segments, coordinates))]
    sections = []
    for name, title, draw in figures:
        figure, note = draw(plt, study, coordinates)
        figure.tight_layout()
        path = plot.save(figure, output.with_name(f"{output.stem}_{name}.png"), plt)
        sections.append((title, path, note))
    return plot.write_file(output, lambda path: path.write_text(_page(study, sections),
                                                                 encoding="utf-8"))


class Coordinates:
    """Each parameter's values mapped to [0, 1]: on the search space's scale when the space
    file can be read, else min-max or sorted categories. A parameter a point leaves out
    (inactive) has no coordinate: it is left out of the figures, never drawn at a default."""

    def __init__(self, study):
        self.names = study.param_names
        path = study.config.study.space
        try:
            self.params = {p.name: p for p in Space.from_file(path).params} if path else {}
        except ConfigError:   # no space file to read (gone, or moved with the experiment)
            self.params = {}
        self.values = {name: [r["params"][name] for r in study.rows if name in r["params"]]
                       for name in self.names}

    def varying(self):
        """The parameters that take more than one value."""
        return [n for n in self.names if len({repr(v) for v in self.values[n]}) > 1]

    def unit(self, name, value, absent=math.nan):
        """``value`` of parameter ``name`` on [0, 1]; ``absent`` where ``value`` is ``None``
        (the point leaves the parameter out)."""
        if value is None:
            return absent
        param = self.params.get(name)
        if param is not None and param.contains(value):
            return param.to_unit(value)
        if _numeric(value):
            numbers = [v for v in self.values[name] if _numeric(v)]
            lo, hi = min(numbers), max(numbers)
            return 0.5 if hi == lo else (value - lo) / (hi - lo)
        labels = self.labels(name)
        return (labels.index(str(value)) + 0.5) / len(labels)

    def labels(self, name):
        """The distinct values of a non-numeric parameter, as sorted text."""
        return sorted({str(v) for v in self.values[name]})

    def numeric(self, name):
        """Whether parameter ``name``'s values are all numbers."""
        return all(_numeric(v) for v in self.values[name])

    def is_log(self, name):
        """Whether parameter ``name`` is on a log scale: as its space declares it, or, with no
        space to read, when its values span decades."""
        param = self.params.get(name)
        if param is not None:
            return bool(getattr(param, "log", False))
        return self.numeric(name) and plot.spans_decades(self.values[name])

    def place(self, name):
        """A value of parameter ``name`` to its place on an axis: itself, or where the values
        are not all numbers its index in :meth:`labels` (``None``, left out, stays ``None``)."""
        if self.numeric(name):
            return lambda value: value
        labels = self.labels(name)
        return lambda value: None if value is None else labels.index(str(value))

    def scale(self, axes, name, which):
        """Parameter ``name`` on ``axes``' ``which`` axis (``"x"``, ``"y"``), once drawn:
        :meth:`labels` as ticks where its values are not all numbers, else any log scale."""
        if not self.numeric(name):
            labels = self.labels(name)
            getattr(axes, f"set_{which}ticks")(range(len(labels)), labels)
        elif self.is_log(name):
            getattr(axes, f"set_{which}scale")("log")


def _numeric(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _panels(plt, count, columns, width, height):
    """A figure of ``count`` panels, at most ``columns`` a row, each ``width`` by ``height``
    inches: ``(figure, its panels)``, those past ``count`` blank."""
    columns = min(columns, max(count, 1))
    rows = max(1, math.ceil(count / columns))
    figure, grid = plt.subplots(rows, columns, figsize=(width * columns, height * rows),
                                squeeze=False)
    panels = list(grid.flat)
    for axes in panels[count:]:
        axes.set_axis_off()
    return figure, panels


def _convergence(plt, study, coordinates):
    figure, axes = plt.subplots(figsize=(8, 4.5))
    plot.draw_convergence(axes, study)
    scale = "log" if axes.get_yscale() == "log" else "linear"
    return figure, f"Every evaluation and the best so far ({scale} axis)."


def _curves(plt, study, curves):
    figure, axes = plt.subplots(figsize=(8, 4.5))
    status = {row["id"]: row["status"] for row in study.rows}
    pruned = 0
    for point_id, curve in sorted(curves.items()):
        stopped = status.get(point_id) == "pruned"
        pruned += stopped
        steps = sorted(curve)
        axes.plot(steps, [curve[s] for s in steps], color="0.7" if stopped else None,
                  marker="x" if stopped else None, linewidth=0.8 if stopped else 1.4)
    axes.set(xlabel="step", ylabel=study.objective, title="reported values, by evaluation")
    return figure, (f"What {len(curves)} evaluations reported at each step "
                    f"(<code>emews.report</code>); the {pruned} that the pruner stopped in "
                    "grey, ending with an x.")


def _thaws(plt, study, thaws):
    """The curves of the runs that were paused (``thaws``: of
    :func:`~emews.inspect._source.read_thaws`), as the figure's note says."""
    figure, axes = plt.subplots(figsize=(8, 4.5))
    status = {row["id"]: row["status"] for row in study.rows}
    horizon = study.config.pruner.max_resource
    for n, (point_id, parts) in enumerate(sorted(thaws.items())):
        color = f"C{n % 10}"
        for k, part in enumerate(parts):
            steps = sorted(part)
            axes.plot(steps, [part[s] for s in steps], color=color, linewidth=1.2)
            if k:
                axes.plot(steps[0], part[steps[0]], ">", color=color)
            if k < len(parts) - 1 or status.get(point_id) == Status.PAUSED:
                axes.plot(steps[-1], part[steps[-1]], "o", color=color, fillstyle="none")
        if status.get(point_id) == Status.PAUSED and horizon:
            whole = {s: v for part in parts for s, v in part.items()}
            last = max(whole)
            axes.plot([last, horizon], [whole[last], predict(whole, horizon)], ":",
                      color=color)
    axes.set(xlabel="step", ylabel=study.objective, title="paused runs, by evaluation")
    return figure, (f"The curves of the {len(thaws)} runs the pruner paused: an open circle "
                    "where a run paused, a triangle where its thaw went on from its "
                    "checkpoint, and for a run still paused a dotted line to the final value "
                    "its curve predicts (the median of pow3, exp3 and log-linear fits).")


def _by_member(segments):
    """``{member: its segments in the order they were proposed}``."""
    members = {}
    for segment in sorted(segments, key=lambda s: s["id"]):
        members.setdefault(segment["member"], []).append(segment)
    return members


def _population(plt, study, segments, curves):
    """Each member's reported values by step (label ``member M``), as the figure's note
    says."""
    figure, axes = plt.subplots(figsize=(8, 4.5))
    ended = {s["name"]: curves.get(s["id"], {}).get(s["until"]) for s in segments}
    exploits = 0
    for member, own in sorted(_by_member(segments).items()):
        steps, values = [], []
        for segment in own:
            curve = curves.get(segment["id"], {})
            start = ended.get(segment["donor"] or segment["parent"])
            if start is not None:
                steps.append(segment["start"])
                values.append(start)
            steps += sorted(curve)
            values += [curve[s] for s in sorted(curve)]
            steps.append(math.nan)   # a break between segments
            values.append(math.nan)
        line, = axes.plot(steps, values, linewidth=1.2, label=f"member {member}")
        jumps = [(s["start"], ended[s["donor"]]) for s in own
                 if s["donor"] is not None and ended.get(s["donor"]) is not None]
        exploits += len(jumps)
        if jumps:
            axes.plot(*zip(*jumps), linestyle="none", marker="^", color=line.get_color())
    axes.set(xlabel="step", ylabel=study.objective,
             title="reported values by step, one colour a member")
    axes.legend(fontsize="small")
    return figure, (f"{len(segments)} segments of {len(_by_member(segments))} members: each "
                    "member's reports by step, each segment from the value of the checkpoint "
                    f"it started from; a triangle at each of the {exploits} exploits, where a "
                    "member took a donor's checkpoint (<code>emews show --lineage</code>).")


def _schedules(plt, study, segments, coordinates):
    """One panel a varying hyperparameter (titled with its name): each member's value by step
    (label ``member M``), and the best member's schedule (label ``best``, black, dashed)."""
    names = coordinates.varying() or coordinates.names
    members = _by_member(segments)
    done = [s for s in segments if s["status"] == Status.DONE and s["value"] is not None]
    best = schedule(study) if done else None
    figure, panels = _panels(plt, len(names), 2, 6, 3.4)
    for axes, name in zip(panels, names):
        position = coordinates.place(name)
        for member, own in sorted(members.items()):
            steps = [step for s in own for step in (s["start"], s["until"], math.nan)]
            values = [v for s in own for v in [position(s["params"].get(name))] * 2 + [math.nan]]
            axes.plot(steps, [math.nan if v is None else v for v in values], linewidth=1.4,
                      label=f"member {member}")
        if best is not None:
            starts = sorted(int(step) for step in best["schedule"])
            values = [position(best["schedule"][str(step)].get(name)) for step in starts]
            axes.step(starts + [best["until"]], values + values[-1:], where="post",
                      color="k", linestyle="--", linewidth=1.0, label="best")
        coordinates.scale(axes, name, "y")
        axes.set(xlabel="step", ylabel=name, title=name)
    panels[0].legend(fontsize="small")
    note = "" if best is None else (
        f" Dashed: the schedule of the best segment, {_e(best['name'])} (member "
        f"{best['member']}), followed back through the segments it started from "
        "(<code>emews show --schedule</code>), to replay as one training.")
    return figure, ("Each member's hyperparameters over the steps each of its segments "
                    "trained (a member that exploits takes its donor's, perturbed)." + note)


def _front(plt, study, coordinates):
    """The done evaluations' objectives, the front marked: one scatter for two objectives,
    a pair plot (each pair once) for three or more."""
    criteria = study.criteria
    names = [f"{n} ({d[:3]})" for n, d in zip(criteria.names, criteria.directions)]
    done = [r for r in study.rows if r["status"] == Status.DONE and r["objectives"]]
    on_front = {r["id"] for r in study.pareto}
    k = len(names)
    size = 7 if k == 2 else 3.2 * (k - 1)
    figure, grid = plt.subplots(k - 1, k - 1, figsize=(size, size * (0.72 if k == 2 else 1)),
                                squeeze=False)
    groups = [("dominated", "0.6", "o", [r for r in done if r["id"] not in on_front
                                          and r["feasible"] is not False]),
              ("infeasible", "C3", "x", [r for r in done if r["feasible"] is False]),
              ("Pareto front", "C0", "D", [r for r in done if r["id"] in on_front])]
    for row_index in range(k - 1):
        for column in range(k - 1):
            axes, i, j = grid[row_index][column], column, row_index + 1
            if i >= j:
                axes.set_axis_off()
                continue
            for label, colour, marker, rows in groups:
                axes.scatter([r["objectives"][i] for r in rows],
                             [r["objectives"][j] for r in rows], s=28 if marker == "D" else 12,
                             c=colour, marker=marker, label=f"{label} ({len(rows)})")
            if k == 2 and on_front:   # the front as a staircase, in the objectives' order
                front = sorted((r["objectives"][0], r["objectives"][1]) for r in groups[2][3])
                axes.step(*zip(*front), where="post" if criteria.directions[0] ==
                          criteria.directions[1] else "pre", color="C0", linewidth=0.8)
            axes.set(xlabel=names[i], ylabel=names[j])
    grid[0][0].legend(fontsize="small")
    return figure, (f"{len(done)} done evaluations by their objectives (raw values); the "
                    f"{len(on_front)} on the front are the feasible ones that no other "
                    "dominates" + ("" if k == 2 else "; one panel per pair of objectives") + ".")


def hypervolume_curve(study, points=200):
    """``(reference, [(finished evaluations, hypervolume of the feasible front so far)])`` at
    up to ``points`` evenly spaced counts, each objective minimized; ``reference``: the study's
    ``reference_point``, else one derived from every feasible done vector (``None``: none)."""
    directions = study.criteria.directions
    finished = sorted((r for r in study.rows if r["status"] in FINAL and r["finished"]),
                      key=lambda r: (r["finished"], r["id"]))
    vectors = [pareto.minimized(r["objectives"], directions)
               if r["status"] == Status.DONE and r["objectives"] else None for r in finished]
    feasible = [v is not None and r["feasible"] is not False for v, r in zip(vectors, finished)]
    given = study.config.study.reference_point
    reference = pareto.minimized(given, directions) if given else pareto.reference_point(
        [v for v, ok in zip(vectors, feasible) if ok])
    if reference is None:
        return None, []
    counts = sorted({max(1, round(len(finished) * step / points)) for step in
                     range(1, points + 1)})
    curve = []
    for count in counts:
        kept = [v for v, ok in zip(vectors[:count], feasible[:count]) if ok]
        curve.append((count, pareto.hypervolume(kept, reference)))
    return reference, curve


def _hypervolume(plt, study, coordinates):
    reference, curve = hypervolume_curve(study)
    figure, axes = plt.subplots(figsize=(8, 4))
    if not curve:
        axes.text(0.5, 0.5, "no feasible evaluation done yet", ha="center", va="center")
        axes.set_axis_off()
        return figure, "No feasible evaluation with its objectives yet."
    axes.plot(*zip(*curve), color="C0")
    axes.set(xlabel="evaluations finished", ylabel="hypervolume",
             title="hypervolume of the feasible front so far")
    given = study.config.study.reference_point
    source = "the study's <code>reference_point</code>" if given else (
        "derived from every feasible result (the worst of each objective plus a tenth of its "
        "range)")
    return figure, ("The volume the front dominates (moocore), each objective minimized (those "
                    f"to maximize negated), against the reference point {_e(reference)}, "
                    f"{source}.")


def _timeline(plt, study, coordinates):
    figure, axes = plt.subplots(figsize=(8, 4))
    plot.draw_timeline(axes, study)
    return figure, f"{len(study.failed)} failed evaluations marked in red with an x."


def _parallel(plt, study, coordinates):
    done = study.done
    best = done[:max(1, math.ceil(len(done) / 4))]
    names = coordinates.varying()
    figure, axes = plt.subplots(figsize=(max(6, 1.6 * (len(names) + 1)), 4.5))
    if not best or not names:
        axes.text(0.5, 0.5, "nothing to draw yet", ha="center", va="center")
        axes.set_axis_off()
        return figure, "No evaluation with a value, or no parameter that varies."
    values = [r["result"] for r in best]
    lo, hi = min(values), max(values)
    colours = plt.get_cmap("viridis_r")
    for row in reversed(best):
        shade = 0.5 if hi == lo else (row["result"] - lo) / (hi - lo)
        ys = [coordinates.unit(n, row["params"].get(n)) for n in names]
        ys.append(1 - shade)
        axes.plot(range(len(names) + 1), ys, color=colours(1 - shade), alpha=0.8, marker=".")
    axes.set_xticks(range(len(names) + 1), names + [study.objective])
    axes.set_ylim(-0.05, 1.05)
    for x in range(len(names) + 1):
        axes.axvline(x, color="grey", linewidth=0.8)
    axes.set(ylabel="position on the parameter's scale (0-1)",
             title=f"best {len(best)} of {len(done)} evaluations (best drawn last)")
    return figure, ("Each line is one of the best quarter of the evaluations; each axis spans "
                    "its parameter's range (log scales as searched); the last axis is "
                    f"{study.objective}, best at the top. A line breaks at a parameter its "
                    "point leaves out (inactive).")


def _params(plt, study, coordinates):
    names = coordinates.varying() or coordinates.names
    done = study.done
    figure, panels = _panels(plt, len(names), 3, 4, 3.2)
    for axes, name in zip(panels, names):
        position, active = coordinates.place(name), [r for r in done if name in r["params"]]
        values = [r["result"] for r in active]
        axes.scatter([position(r["params"][name]) for r in active], values, s=12)
        coordinates.scale(axes, name, "x")
        if plot.spans_decades(values):
            axes.set_yscale("log")
        axes.set(xlabel=name, ylabel=study.objective)
    return figure, (f"{len(done)} evaluations with a value; each panel shows those in which "
                    "its parameter is active.")


def importance(study, coordinates, seed=0):
    """``[(parameter, mean, std)]``, most important first: the permutation importance of a
    scikit-learn random forest fitted to the parameters and the objective; ``None`` with too
    few evaluations (fewer than 8) or no parameter that varies."""
    done = study.done
    names = coordinates.varying()
    if len(done) < MIN_FOR_IMPORTANCE or not names:
        return None
    try:
        import numpy as np
        from sklearn.ensemble import RandomForestRegressor
        from sklearn.inspection import permutation_importance
    except ImportError:
        raise missing_extra("emews report", "scikit-learn for parameter importance",
                            "plot") from None
    x = np.array([[coordinates.unit(n, r["params"].get(n), INACTIVE) for n in names]
                  for r in done])
    y = np.array([r["result"] for r in done])
    forest = RandomForestRegressor(n_estimators=100, random_state=seed).fit(x, y)
    result = permutation_importance(forest, x, y, n_repeats=10, random_state=seed)
    order = np.argsort(-result.importances_mean)
    return [(names[i], float(result.importances_mean[i]), float(result.importances_std[i]))
            for i in order]


def _importance(plt, study, coordinates):
    ranked = importance(study, coordinates)
    figure, axes = plt.subplots(figsize=(7, max(2.5, 0.5 * len(coordinates.names) + 1)))
    if ranked is None:
        axes.text(0.5, 0.5, f"needs at least {MIN_FOR_IMPORTANCE} evaluations with a value",
                  ha="center", va="center")
        axes.set_axis_off()
        return figure, "Too few evaluations to estimate importance."
    names = [n for n, _, _ in ranked][::-1]
    axes.barh(names, [m for _, m, _ in ranked][::-1], xerr=[s for _, _, s in ranked][::-1],
              color="C2")
    axes.set(xlabel="mean drop of the forest's R^2 when the parameter is shuffled",
             title="permutation importance (random forest)")
    return figure, ("Permutation importance (scikit-learn <code>permutation_importance</code>, "
                    "10 repeats) of a random forest (<code>RandomForestRegressor</code>, 100 "
                    f"trees) fitted to {len(study.done)} evaluations: how much worse the "
                    "forest predicts the objective when one parameter's values are shuffled.")


STYLE = """
body { font-family: sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
img { max-width: 100%; border: 1px solid #ddd; }
pre { background: #f7f7f7; padding: 0.6em; }
"""


def _page(study, sections):
    info = summary(study)
    best = "Evaluations on the Pareto front" if study.pareto is not None else \
        f"Best {'points' if study.replicas else 'evaluations'}"
    parts = [f"<h1>emews report: {_e(study.expdir.name)}</h1>",
             f"<p>{_e(study.expdir)}</p>",
             "<h2>Summary</h2>", "<pre>" + _e("\n".join(render(info))) + "</pre>",
             f"<h2>{best}</h2>", _best_table(study)]
    for title, path, note in sections:
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        parts += [f"<h2>{_e(title)}</h2>", f"<p>{note}</p>",
                  f'<img alt="{_e(title)}" src="data:image/png;base64,{data}">']
    parts += ["<h2>Failures</h2>", _failure_table(study)]
    body = "\n".join(parts)
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>emews report: {_e(study.expdir.name)}</title>\n"
            f"<style>{STYLE}</style>\n</head>\n<body>\n{body}\n</body>\n</html>\n")


def _e(text):
    return html.escape(str(text))


def _table(header, rows):
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _best_table(study, top=10):
    if study.replicas is not None:   # the best points, as final.json judges them
        points = [p for p in study.points if p["value"] is not None][:top]
        if not points:
            return "<p>No point has a value yet.</p>"
        header, rows = point_table(points)
        return _table(header, [[cell(c) for c in row] for row in rows])
    rows = study.done[:top] if study.pareto is None else study.pareto[:top]
    if not rows:
        return "<p>No evaluation has a value yet.</p>"
    columns = [c for c in study.columns() if c not in ("status", "attempt", "error")]
    records = study.table(rows)
    return _table(columns, [[cell(record[c]) for c in columns] for record in records])


def _failure_table(study):
    failed = study.failed
    if not failed:
        return "<p>No evaluation failed.</p>"
    groups = {}
    for row in failed:
        groups.setdefault(one_line(row["error"] or "no reason recorded"), []).append(row["id"])
    ranked = sorted(groups.items(), key=lambda item: -len(item[1]))
    return _table(["reason", "count", "evaluations"],
                  [[reason, len(ids), ", ".join(map(str, ids[:20])) +
                    (" ..." if len(ids) > 20 else "")] for reason, ids in ranked])
