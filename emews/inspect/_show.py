"""``emews show``: a study's best evaluations with all their metrics, its failures, its Pareto
front, its points (with replicas), a population's lineage and best schedule, or its paused
runs, as a table, CSV or JSON (each view's function says what it holds)."""

import csv
import io
import json

from ..core._segments import FIELDS, split
from ..core._thaw import predict
from ..core._vector import finite_or_none, json_numbers
from .._errors import ConfigError
from .._status import Status
from ._query import select
from ._source import read_thaws
from ._summary import one_line

POINT_KEYS = ("value", "mean", "std", "count", "failed", "complete", "ids")  # and params


def grouped(study, failed=False):
    """Whether ``show`` lists points (a study with replicas, unless the failures are asked for)
    rather than evaluations."""
    return study.replicas is not None and not failed


def chosen(study, failed=False, where=None, top=None, pareto=False):
    """The rows to show: the failures, the evaluations with a value (best first) or those on
    the Pareto front, filtered by ``where`` and cut to ``top``; where :func:`grouped`, the
    points (of ``study.points``, best first) one of whose replicas matches ``where``."""
    rows = study.pareto if pareto else study.failed if failed else study.done
    names = study.param_names + study.metric_names + ["result"]
    rows = select(rows, where, list(dict.fromkeys(names)))
    if grouped(study, failed):
        ids = {row["id"] for row in rows}
        rows = [point for point in study.points if ids.intersection(point["ids"])]
    return rows[:top] if top else rows


def points_as_json(points):
    """``points`` (entries of ``study.points``) as a JSON list: :data:`POINT_KEYS` and
    ``params``."""
    return as_json_text([{**{c: point[c] for c in POINT_KEYS}, "params": point["point"]}
                         for point in points])


def csv_text(header, rows):
    """A header and rows of cells (:func:`point_table`, :func:`lineage_table`) as CSV text."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def point_table(points):
    """``points`` (entries of ``study.points``) as a header and rows of cells: their figures,
    replica ids (``evaluations``), then one column per parameter (``param.NAME`` where a
    parameter is named like one of the others)."""
    names = list(dict.fromkeys(k for p in points for k in p["point"]))
    stats = ("value", "mean", "std", "count", "failed")
    header = [*stats, "evaluations",
              *(f"param.{n}" if n in stats or n == "evaluations" else n for n in names)]
    rows = [[*(point[c] for c in stats), " ".join(map(str, point["ids"])),
             *(point["point"].get(n) for n in names)] for point in points]
    return header, rows


def as_csv(study, rows):
    """``rows`` as CSV text, one column per parameter and metric, and in a study of several
    objectives or with constraints one per objective after ``result`` (``objective.NAME``
    where another column has that name)."""
    columns, records = study.columns(), study.table(rows)
    if study.criteria.vector:
        names = [f"objective.{n}" if n in columns else n for n in study.criteria.names]
        for record, row in zip(records, rows):
            record.update(zip(names, row["objectives"] or [None] * len(names)))
        at = columns.index("result") + 1
        columns[at:at] = names
    return csv_text(columns, [[record.get(c) for c in columns] for record in records])


def as_json(study, rows):
    """``rows`` as a JSON list of records, one key per active parameter and metric, and
    where the models reported, each one's ``curve``: ``[[step, value], ...]``."""
    records, curves = study.table(rows), study.curves()
    for record, row in zip(records, rows):
        for name in study.param_names:
            if name not in row["params"]:
                del record[name]
        if study.criteria.vector:   # each objective's raw value, in the order of the objectives
            record["values"] = row["objectives"]
        if curves:
            record["curve"] = json_numbers(sorted(curves.get(row["id"], {}).items()))
    return as_json_text(records)


def print_table(study, rows, failed, console, pareto=False):
    """Print ``rows`` as a table on a rich ``console``."""
    params, objectives = study.param_names, list(study.criteria.names)
    metrics = [] if failed else [study.metric_column(m) for m in study.metric_names
                                 if m not in objectives]   # their columns
    kind = "failed evaluation" if failed else "evaluation on the Pareto front" if pareto \
        else "evaluation with a value"
    what = "failures" if failed else "Pareto front:" if pareto else "best"
    columns = ["id", *([] if failed else objectives), *params, *metrics,
               "MPI rank", "seconds", *(["error"] if failed else [])]   # not the row's place
    cells = [[record["id"], *([] if failed else _values(row, objectives)),
              *(record[c] for c in params + metrics), record["rank"],
              None if record["seconds"] is None else f"{record['seconds']:.3g}",
              *([one_line(row["error"])] if failed else [])]
             for record, row in zip(study.table(rows), rows)]
    _print_cells(console, study, f"no {kind} to show ({len(study.rows)} evaluations in all)",
                 f"{what} {len(rows)} of {len(study.rows)}", columns, cells)


def _values(row, objectives):
    """A row's value of each of the study's ``objectives``."""
    if row.get("objectives"):
        return row["objectives"]
    return [row["result"], *[None] * (len(objectives) - 1)]


def cell(value):
    """A table's cell: ``-`` for ``None``, a float to 6 significant digits."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def print_points(study, points, console):
    """Print ``points`` (entries of ``study.points``) as a table on a rich ``console`` (the
    columns of :func:`point_table`)."""
    settings = study.config.study
    every = study.points
    short = sum(not entry["complete"] for entry in every)
    title = (f"best {len(points)} points by the {settings.replica_objective} "
             f"of {settings.replicas} replicas ({len(every)} points"
             + (f"; {short} cut short by a limit, with no value)" if short else ")"))
    _print_cells(console, study, f"no point with a finished replica to show ({len(every)} "
                 f"points, {len(study.rows)} evaluations in all)", title, *point_table(points))


def _print_cells(console, study, none, title, header, rows):
    """Print on ``console`` a rich table titled ``EXPDIR: title`` of a header and rows of
    cells; where there are no rows, the line ``EXPDIR: none``."""
    if not rows:
        console.print(f"{study.expdir}: {none}", markup=False)
        return
    from rich.table import Table

    table = Table(title=f"{study.expdir}: {title}")
    for column in header:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*(cell(c) for c in row))
    console.print(table)


LINEAGE = ("id", *FIELDS, "status", "value")   # and params


def lineage(study):
    """The segments of a population-based study (:mod:`emews.core._segments`), by member and
    start step: :data:`LINEAGE` and ``params``."""
    segments = []
    for row in study.rows:
        params, record = split(row["params"])
        if record is not None:
            segments.append({"id": row["id"], **{key: record[key] for key in FIELDS},
                             "status": row["status"], "value": row["result"],
                             "params": params})
    return sorted(segments, key=lambda s: (s["member"], s["start"], s["id"]))


def schedule(study):
    """The schedule of the best finished segment: ``{"id", "member", "name", "value",
    "until", "schedule": {step: params}}``, followed back through the segment each one started
    from (its donor, or its parent). A ConfigError for a study with no finished segment."""
    done = [s for s in lineage(study) if s["status"] == Status.DONE and s["value"] is not None]
    if not done:
        raise ConfigError("emews show --schedule", "needs a population-based study with a "
                          "finished segment", str(study.expdir), show_value=False)
    by_name = {s["name"]: s for s in sorted(done, key=lambda s: s["id"])}   # a rerun's wins
    best = min(done, key=lambda s: (s["value"], s["id"]))
    chain, segment = [], best
    while segment is not None:
        chain.append(segment)
        segment = by_name.get(segment["donor"] or segment["parent"])
    return {**{key: best[key] for key in ("id", "member", "name", "value", "until")},
            "schedule": {str(s["start"]): s["params"] for s in reversed(chain)}}


def lineage_table(segments, columns=LINEAGE):
    """``segments`` (of :func:`lineage`, or runs of :func:`paused` with ``columns=PAUSED``) as
    a header and rows of cells: the ``columns``, then the hyperparameters (JSON)."""
    return [*columns, "params"], [[*(s[c] for c in columns), json.dumps(s["params"])]
                                  for s in segments]


PAUSED = ("id", "run_id", "step", "value", "predicted")   # and params


def paused(study):
    """The paused runs (:mod:`emews.core._thaw`), the most promising first: :data:`PAUSED`
    (``predicted``: at ``[pruner] max_resource``, ``None`` without one) and ``params``."""
    horizon = study.config.pruner.max_resource
    thaws = read_thaws(study.expdir)
    runs = []
    for row in study.rows:
        if row["status"] == Status.PAUSED:
            curve = {step: v for part in thaws.get(row["id"], []) for step, v in part.items()}
            runs.append({"id": row["id"], "run_id": row["run_id"],
                         "step": max(curve, default=None), "value": row["result"],
                         "predicted": finite_or_none(predict(curve, horizon)) if horizon
                         else None,
                         "params": row["params"]})
    return sorted(runs, key=lambda r: (r["predicted"] is None, r["predicted"] or 0, r["id"]))


def as_json_text(data):
    """``data`` (rows, points, the lineage, a schedule) as indented JSON text, ending in a
    newline."""
    return json.dumps(data, indent=2, allow_nan=False, default=str) + "\n"


def print_lineage(study, segments, console):
    """Print ``segments`` (of :func:`lineage`) as a table on a rich ``console``."""
    members = len({s["member"] for s in segments})
    _print_cells(console, study, 'no segments (not a population-based study: algorithm = "pbt")',
                 f"lineage of {len(segments)} segments, {members} members",
                 *lineage_table(segments))


def print_paused(study, runs, console):
    """Print ``runs`` (of :func:`paused`) as a table on a rich ``console``."""
    _print_cells(console, study, "no paused runs",
                 f"{len(runs)} paused runs, the most promising first", *lineage_table(runs, PAUSED))
