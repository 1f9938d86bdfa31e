"""Where a study's evaluations live: the SQLite store, its schema versions and its lock."""

from .lock import StudyLock
from .sqlite import Store, bounded

__all__ = ["Store", "StudyLock", "bounded"]
