"""Where a study's evaluations live: the SQLite store, its schema versions and its lock; or a
PostgreSQL database in EQ-SQL's schema (:mod:`emews.store.postgres`)."""

from pathlib import Path

from .lock import StudyLock
from .sqlite import Store, bounded

__all__ = ["Store", "StudyLock", "bounded", "open_store", "study_store"]


def open_store(location, create=True):
    """The store at ``location``: a ``results.db`` path, or a PostgreSQL store's
    ``postgresql://...#EXP_ID`` (the ``path`` of a :class:`~emews.store.postgres.PostgresStore`).
    """
    from .postgres import PostgresStore, is_url

    if is_url(location):
        url, _, exp_id = str(location).rpartition("#")
        return PostgresStore(url, exp_id, create)
    return Store(location, create)


def study_store(expdir, storage=None, create=True):
    """The store of the experiment in ``expdir``: its ``results.db``, or, when ``storage`` is a
    ``postgresql://`` URL, that database (the study's ``exp_id`` is ``expdir``'s full path)."""
    if storage:
        return open_store(f"{storage}#{Path(expdir).resolve()}", create)
    return Store(Path(expdir) / "results.db", create)
