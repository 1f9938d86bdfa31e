"""Plots of a finished (or running) study: convergence and the workers' timeline."""

import itertools
import math
from pathlib import Path

from .._errors import ConfigError, missing_extra
from .._status import Status


def pyplot():
    """matplotlib's pyplot on the Agg backend (no display), or a ConfigError naming the
    extra to install."""
    try:
        import matplotlib
    except ImportError:
        raise missing_extra("emews plot", "matplotlib", "plot") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def spans_decades(values):
    """Whether positive ``values`` span more than two powers of ten (log axis)."""
    values = [v for v in values if v is not None and math.isfinite(v)]
    if not values or min(values) <= 0:
        return False
    return math.log10(max(values) / min(values)) > 2


def draw_convergence(axes, study, metric=None):
    """Each evaluation's value by id, the best so far, failures marked; log scale when the
    values span more than two decades."""
    rows = [r for r in study.rows if r["status"] in (Status.DONE, Status.FAILED)]
    points = [(r["id"], r["result"] if metric is None else r["metrics"].get(metric))
              for r in rows if r["status"] == Status.DONE]
    points = [(i, v) for i, v in points if v is not None]
    axes.scatter([i for i, _ in points], [v for _, v in points], s=12, label="evaluation")
    by_id = dict(points)
    steps = list(itertools.accumulate((by_id.get(r["id"], math.inf) for r in rows), min))
    if rows:
        axes.step([r["id"] for r in rows], steps, where="post", color="C3", label="best so far")
    failed = [r["id"] for r in rows if r["status"] == Status.FAILED]
    if failed and points:
        top = max(v for _, v in points)
        axes.scatter(failed, [top] * len(failed), marker="x", color="k", label="failed")
    if spans_decades([v for _, v in points]):
        axes.set_yscale("log")
    name = metric or study.objective
    axes.set(xlabel="evaluation", ylabel=f"{name} (minimized)" if metric is None else name,
             title=f"{study.expdir.name}: {name}")
    if rows:
        axes.legend()


def draw_timeline(axes, study):
    """Each rank's evaluations as bars over time; failures red, with an x at their end."""
    rows = [r for r in study.rows if r["started"] and r["finished"] and r["rank"] is not None]
    start = min((r["started"] for r in rows), default=0.0)
    for row in rows:
        ok = row["status"] == Status.DONE
        axes.barh(row["rank"], row["finished"] - row["started"], left=row["started"] - start,
                  color="C0" if ok else "C3", edgecolor="white")
        if not ok:
            axes.plot(row["finished"] - start, row["rank"], "kx")
    axes.set_yticks(sorted({r["rank"] for r in rows}))
    axes.set(xlabel="seconds since the first evaluation", ylabel="rank",
             title="worker timeline (red, x: failed)")


def write_file(path, write):
    """``write(path)`` for an output file (a figure, a page, an export); a one-line
    ConfigError naming ``path`` when it is a directory or cannot be written. Returns it."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(str(path), "must be a file path, not a directory", None,
                          show_value=False)
    try:
        write(path)
    except OSError as exc:
        raise ConfigError(str(path), "must be a writable file path",
                          exc.strerror or str(exc)) from None
    return path


def save(figure, output, plt):
    """Save ``figure`` to ``output`` (:func:`write_file`), and close it."""
    try:
        return write_file(output, lambda path: figure.savefig(path, dpi=100))
    finally:
        plt.close(figure)


def plot(study, output=None, metric=None):
    """Draw the results of ``study`` (a :class:`~emews.inspect.Study`) by evaluation (with the
    best so far) and each rank's busy periods into ``output`` (default
    ``EXPDIR/convergence.png``); return its path. ``metric``: that metric, not the objective."""
    if metric is not None and metric not in study.metric_names:
        raise ConfigError("--metric", f"must be a metric of the study "
                          f"({', '.join(study.metric_names) or 'it has none'})", metric)
    plt = pyplot()
    figure, (progress, timeline) = plt.subplots(1, 2, figsize=(12, 4.5))
    draw_convergence(progress, study, metric)
    draw_timeline(timeline, study)
    figure.tight_layout()
    return save(figure, Path(output) if output else study.expdir / "convergence.png", plt)
