"""Inspecting a study, running or finished: ``emews status``, ``show``, ``plot``, ``report``,
``export`` and, from Python, :func:`load`.

::

    EXPDIR/results.db, or its PostgreSQL database
        --(a read-only store's snapshot: _snapshot.py)--> Study
        _summary.py counts, best, stop reason, failures, rate, ETA
        _show.py    best evaluations / failures, --where (_query.py), CSV, JSON
        _plot.py    convergence and workers' timeline (PNG)
        _report.py  report.html with its figures embedded
        _export.py  Optuna study, CSV, Parquet

Nothing here writes to the store: a running study goes on undisturbed.
"""

from ._snapshot import Study, load

__all__ = ["Study", "load"]
