"""Where a study's evaluations live: :class:`Store`, the contract every store keeps (what it
does, and when a write becomes visible: :mod:`._base`), in SQLite (:class:`SQLiteStore`,
``EXPDIR/results.db``, its schema versions in :mod:`._schema`) or in a PostgreSQL database in
EQ-SQL's schema (:class:`~emews.store._postgres.PostgresStore`); and the study's lock."""

from pathlib import Path

from ._base import Snapshot, Store, bounded
from ._lock import StudyLock
from ._sqlite import SQLiteStore

__all__ = ["SQLiteStore", "Snapshot", "Store", "StudyLock", "bounded", "open_store",
           "read_once", "study_store"]


def open_store(location, create=True, readonly=False):
    """The store at ``location``: a ``results.db`` path, or a PostgreSQL store's
    ``postgresql://...#EXP_ID`` (the ``path`` of a :class:`~emews.store._postgres.PostgresStore`).
    ``readonly`` (for readers: never written through, never migrated) implies ``create=False``.
    """
    from ._postgres import PostgresStore, is_url

    if is_url(location):
        url, _, exp_id = str(location).rpartition("#")
        return PostgresStore(url, exp_id, create, readonly)
    return SQLiteStore(location, create, readonly)


def study_store(expdir, storage=None, create=True, readonly=False):
    """The store of the experiment in ``expdir``: its ``results.db``, or, when ``storage`` is a
    ``postgresql://`` URL, that database (the study's ``exp_id`` is ``expdir``'s full path)."""
    if storage:
        return open_store(f"{storage}#{Path(expdir).resolve()}", create, readonly)
    return SQLiteStore(Path(expdir) / "results.db", create, readonly)


def read_once(expdir, storage, reading):
    """``reading(store)`` on the store of the experiment in ``expdir`` (``storage``: as
    :func:`study_store` takes it), opened read-only for this read alone (never written through,
    never migrated; a study the store does not hold is refused) and closed."""
    store = study_store(expdir, storage, readonly=True)
    try:
        return reading(store)
    finally:
        store.close()
