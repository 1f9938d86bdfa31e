"""``emews show``: the best evaluations with all their metrics, or the failures with their
reasons; as a table, CSV or JSON. A study with replicas also gets its per-point summary."""

import csv
import io
import json
import math

from ..core.replicas import summarize

from .query import select
from .status import one_line


def chosen(study, failed=False, where=None, top=None):
    """The rows to show: the failures (by id) or the evaluations with a value (best first),
    filtered by ``where`` and cut to ``top``."""
    rows = study.failed if failed else study.done
    names = study.param_names + study.metric_names + ["result"]
    rows = select(rows, where, list(dict.fromkeys(names)))
    return rows[:top] if top else rows


def as_csv(study, rows):
    """``rows`` as CSV text, one column per parameter and metric."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=study.columns(), lineterminator="\n")
    writer.writeheader()
    writer.writerows(study.table(rows))
    return out.getvalue()


def as_json(study, rows):
    """``rows`` as a JSON list of records, one key per parameter and metric; where the models
    reported (``emews.report``), each record's ``curve`` too: ``[[step, value], ...]``
    (``null`` for a value that was not finite)."""
    records, curves = study.table(rows), study.curves()
    if curves:
        for record in records:
            curve = curves.get(record["id"], {})
            record["curve"] = [[step, value if math.isfinite(value) else None]
                               for step, value in sorted(curve.items())]
    return json.dumps(records, indent=2, allow_nan=False, default=str)


def print_table(study, rows, failed, console):
    """Print ``rows`` as a table on a rich ``console``."""
    from rich.table import Table

    params, metrics = study.param_names, study.metric_names
    if not rows:
        kind = "failed evaluation" if failed else "evaluation with a value"
        console.print(f"{study.expdir}: no {kind} to show ({len(study.rows)} evaluations in "
                      "all)", markup=False)
        return
    what = "failures" if failed else "best"
    table = Table(title=f"{study.expdir}: {what} {len(rows)} of {len(study.rows)}")
    columns = ["id", *([] if failed else [study.objective]), *params,
               *([] if failed else [study.metric_column(m) for m in metrics if
                                    m != study.objective]),
               "rank", "seconds", *(["error"] if failed else [])]
    for column in columns:
        table.add_column(column, overflow="fold")
    for record, row in zip(study.table(rows), rows):
        cells = [record["id"], *([] if failed else [row["result"]]),
                 *(record[p] for p in params),
                 *([] if failed else [record[study.metric_column(m)] for m in metrics
                                      if m != study.objective]),
                 record["rank"], _seconds(record["seconds"]),
                 *([one_line(row["error"])] if failed else [])]
        table.add_row(*(_cell(c) for c in cells))
    console.print(table)


def _cell(value):
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _seconds(value):
    return None if value is None else f"{value:.3g}"


def replica_summary(study):
    """Per point of a study with ``[study].replicas`` > 1 (``[]`` otherwise), best first: the
    point (its parameters without the replica seed), the ``mean``, ``std`` (sample standard
    deviation; ``None`` below two values) and ``count`` of its replicas' finished values, the
    ``failed`` replicas, whether all of them finished (``complete``) and the ``value`` the search
    was told (``replica_objective``; ``None`` for a point a limit cut short)."""
    settings = study.config.get("study", {})
    if settings.get("replicas", 1) <= 1:
        return []
    return summarize(study.rows, settings["replica_seed_param"],
                     settings["replica_objective"], settings["replicas"])


def print_replicas(study, console, top=None):
    """Print the :func:`replica_summary` of ``study`` (nothing without replicas)."""
    from rich.table import Table

    summary = replica_summary(study)
    if not summary:
        return
    settings = study.config["study"]
    names = list(dict.fromkeys(k for s in summary for k in s["point"]))
    short = sum(not entry["complete"] for entry in summary)
    table = Table(title=f"{study.expdir}: points by the {settings['replica_objective']} of "
                        f"{settings['replicas']} replicas ({len(summary)} points"
                        + (f"; {short} cut short by a limit, with no value)" if short else ")"))
    for column in ["value", "mean", "std", "count", "failed", *names]:
        table.add_column(column, overflow="fold")
    for entry in summary[:top] if top else summary:
        table.add_row(*(_cell(entry[c]) for c in ("value", "mean", "std", "count", "failed")),
                      *(_cell(entry["point"].get(n)) for n in names))
    console.print(table)
