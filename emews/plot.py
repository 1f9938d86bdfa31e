"""Plots of a finished (or running) study: convergence and the workers' timeline."""

import math
from pathlib import Path

from .errors import ConfigError
from .store import Store


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise ConfigError("emews plot", "needs matplotlib: pip install 'emews-hpo[plot]'",
                          None, show_value=False) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot(expdir, output=None):
    """Draw results by evaluation (with the best so far) and each rank's busy periods.

    Writes ``output`` (default ``EXPDIR/convergence.png``) and returns its path.
    """
    expdir = Path(expdir)
    if not (expdir / "results.db").is_file():
        raise ConfigError(str(expdir), "must be an experiment directory holding results.db",
                          str(expdir), show_value=False)
    store = Store(expdir / "results.db")
    try:
        rows = store.rows("done", "failed")
    finally:
        store.close()
    plt = _pyplot()
    figure, (progress, timeline) = plt.subplots(1, 2, figsize=(12, 4.5))
    done = [r for r in rows if r["status"] == "done"]
    progress.scatter([r["id"] for r in done], [r["result"] for r in done], s=12,
                     label="evaluation")
    best, best_so_far = math.inf, []
    for row in rows:
        if row["status"] == "done":
            best = min(best, row["result"])
        best_so_far.append(best)
    progress.step([r["id"] for r in rows], best_so_far, where="post", color="C3",
                  label="best so far")
    failed = [r["id"] for r in rows if r["status"] == "failed"]
    if failed and done:
        top = max(r["result"] for r in done)
        progress.scatter(failed, [top] * len(failed), marker="x", color="k", label="failed")
    progress.set(xlabel="evaluation", ylabel="result (minimized)", title=expdir.name)
    progress.legend()
    start = min((r["started"] for r in rows if r["started"]), default=0.0)
    for row in rows:
        if row["started"] and row["finished"]:
            timeline.barh(row["rank"], row["finished"] - row["started"],
                          left=row["started"] - start,
                          color="C0" if row["status"] == "done" else "C3", edgecolor="white")
    timeline.set_yticks(sorted({r["rank"] for r in rows if r["rank"] is not None}))
    timeline.set(xlabel="seconds since the first evaluation", ylabel="rank",
                 title="worker timeline")
    figure.tight_layout()
    output = Path(output) if output else expdir / "convergence.png"
    figure.savefig(output, dpi=100)
    plt.close(figure)
    return output
