"""Inspecting a study, running or finished: ``emews status``, ``show``, ``plot``, ``report``,
``export`` and, from Python, :func:`load`.

::

    EXPDIR/results.db, or its PostgreSQL database
        --(a read-only store's snapshot: snapshot.py)--> Study
        summary.py  counts, best, stop reason, failures, rate, ETA
        show.py     best evaluations / failures, --where (query.py), CSV, JSON
        plot.py     convergence and workers' timeline (PNG)
        report.py   report.html with its figures embedded
        export.py   Optuna study, CSV, Parquet

Nothing here writes to the store: a running study goes on undisturbed.
"""

from .snapshot import Study, load

__all__ = ["Study", "load"]
