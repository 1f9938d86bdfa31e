"""The layout of ``results.db`` and its versions (``PRAGMA user_version``): docs/src/store.md
says what each table and column holds (``evaluations.seq``: a point's place in the order the ME
proposed them; ``reports.n``: the order the master received them, in which a pruner's
decisions replay on resume).

The master commits every turn (a few rows), so each B-tree that a turn touches costs a page
write: ``evaluations`` has no index on ``status`` (the statuses of finished points would move
in it; its readers, ``emews status`` and a resume, scan the table once), and ``attempts`` is
kept in its primary key's B-tree alone (``WITHOUT ROWID``: no second index to write). Most
attempts succeed at once: keeping them in ``evaluations`` alone spares each task a row of
``attempt_log`` (a fifth of the store's CPU per task). A status is checked by ``=``s joined by
``OR``: SQLite checks ``IN`` (over two values) by filling a temporary index for each row written.

A store written by an older emews is migrated when it is opened; a newer one is refused.
"""

from .._status import STATUSES, Status   # STATUSES: of an attempt (``attempts.status``)

VERSION = 9
POINT_STATUSES = tuple(s for s in STATUSES if s != Status.DUPLICATE)   # of a point


def with_vector(table):
    """``table`` (its version 6 layout) with the columns version 7 added after ``metrics``."""
    return table.replace("    metrics   TEXT", "    metrics   TEXT,\n    objectives TEXT,\n"
                         "    feasible  INTEGER", 1)


EVALUATIONS_6 = """
CREATE TABLE evaluations (
    id        INTEGER PRIMARY KEY,
    params    TEXT NOT NULL,
    result    REAL,
    status    TEXT NOT NULL CHECK ({statuses}),
    error     TEXT,
    log_tail  TEXT,
    rank      INTEGER,
    attempt   INTEGER NOT NULL DEFAULT 1,
    run_id    TEXT,
    queued    REAL,
    started   REAL,
    finished  REAL,
    seq       INTEGER,
    metrics   TEXT
)""".format(statuses=" OR ".join(f"status = '{s}'" for s in POINT_STATUSES))
EVALUATIONS = with_vector(EVALUATIONS_6)

ATTEMPTS_6 = """
CREATE TABLE attempts (
    id        INTEGER NOT NULL,
    attempt   INTEGER NOT NULL,
    status    TEXT NOT NULL,
    result    REAL,
    error     TEXT,
    log_tail  TEXT,
    rank      INTEGER,
    run_id    TEXT,
    started   REAL,
    finished  REAL,
    metrics   TEXT,
    PRIMARY KEY (id, attempt)
) WITHOUT ROWID"""
ATTEMPTS = with_vector(ATTEMPTS_6)
ATTEMPT_LOG = ATTEMPTS.replace("CREATE TABLE attempts", "CREATE TABLE attempt_log")
ATTEMPT_COLUMNS_6 = ("id, attempt, status, result, error, log_tail, rank, run_id, started, "
                     "finished, metrics")
ATTEMPT_COLUMNS = ATTEMPT_COLUMNS_6 + ", objectives, feasible"
VIEW = """
CREATE VIEW attempts AS
SELECT {columns} FROM attempt_log AS a
    WHERE status = 'duplicate' OR NOT EXISTS (SELECT 1 FROM evaluations AS e
        WHERE e.id = a.id AND e.attempt = a.attempt AND e.status = 'done')
UNION ALL
SELECT {done} FROM evaluations WHERE status = 'done'"""
ATTEMPTS_VIEW, ATTEMPTS_VIEW_6 = (VIEW.format(columns=names, done=names.replace("status", "'done'"))
                                  for names in (ATTEMPT_COLUMNS, ATTEMPT_COLUMNS_6))
REPORTS = """
CREATE TABLE reports (
    n         INTEGER PRIMARY KEY,
    id        INTEGER NOT NULL,
    attempt   INTEGER NOT NULL,
    step      INTEGER NOT NULL,
    value     REAL,
    metrics   TEXT,
    time      REAL
)"""
REPORTS_INDEX = "CREATE INDEX reports_point ON reports (id, attempt, step)"
CHECKPOINTS = "CREATE TABLE checkpoints (name TEXT PRIMARY KEY, state BLOB, driver TEXT NOT NULL)"
NO_INDEX = "DROP INDEX IF EXISTS evaluations_status"
REBUILD_ATTEMPTS = f"""
ALTER TABLE attempts RENAME TO attempts_rowid;
{ATTEMPTS_6};
INSERT INTO attempts ({ATTEMPT_COLUMNS_6}) SELECT {ATTEMPT_COLUMNS_6} FROM attempts_rowid;
DROP TABLE attempts_rowid;
"""

CURRENT = f"""
{EVALUATIONS};
{ATTEMPT_LOG};
{ATTEMPTS_VIEW};
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
{CHECKPOINTS};
{REPORTS};
{REPORTS_INDEX};
PRAGMA user_version = {VERSION};
"""

# Each migration below makes the layout of the next version (up to 6: the ``_6`` tables).
# Version 1 (emews 0.1): evaluations with four statuses and meta; no attempts, no checkpoints.
FROM_1 = f"""
ALTER TABLE evaluations RENAME TO evaluations_v1;
{EVALUATIONS_6};
INSERT INTO evaluations SELECT *, id, NULL FROM evaluations_v1;
DROP TABLE evaluations_v1;
{ATTEMPTS_6};
INSERT INTO attempts SELECT id, attempt, status, result, error, log_tail, rank, run_id,
    started, finished, NULL FROM evaluations WHERE status IN ('done', 'failed');
{CHECKPOINTS};
"""
# Version 2: no metrics.
FROM_2 = f"""
ALTER TABLE evaluations ADD COLUMN metrics TEXT;
ALTER TABLE attempts ADD COLUMN metrics TEXT;
{NO_INDEX};
{REBUILD_ATTEMPTS}
"""
# Version 3: an index on evaluations (status), attempts with a rowid.
FROM_3 = f"""
{NO_INDEX};
{REBUILD_ATTEMPTS}
"""
# Version 4: every attempt in the table attempts, the successful ones too.
FROM_4 = f"""
ALTER TABLE attempts RENAME TO attempt_log;
DELETE FROM attempt_log WHERE status = 'done' AND EXISTS (SELECT 1 FROM evaluations AS e
    WHERE e.id = attempt_log.id AND e.attempt = attempt_log.attempt AND e.status = 'done');
{ATTEMPTS_VIEW_6};
"""


def remade(table, view, version):
    """SQL that makes ``evaluations`` of schema ``version`` again as ``table`` (its statuses'
    CHECK changed), its rows kept, with the view ``attempts`` over it as ``view``."""
    return f"""
DROP VIEW attempts;
ALTER TABLE evaluations RENAME TO evaluations_v{version};
{table};
INSERT INTO evaluations SELECT * FROM evaluations_v{version};
DROP TABLE evaluations_v{version};
{view};
"""


# Version 5: no reports, and no status 'pruned'.
FROM_5 = remade(EVALUATIONS_6, ATTEMPTS_VIEW_6, 5) + f"{REPORTS};\n{REPORTS_INDEX};\n"
# Version 6: no objective vectors, no feasibility.
FROM_6 = f"""
DROP VIEW attempts;
ALTER TABLE evaluations ADD COLUMN objectives TEXT;
ALTER TABLE evaluations ADD COLUMN feasible INTEGER;
ALTER TABLE attempt_log ADD COLUMN objectives TEXT;
ALTER TABLE attempt_log ADD COLUMN feasible INTEGER;
{ATTEMPTS_VIEW};
"""
# Version 7: no status 'paused'; version 8: the statuses checked by IN (see the docstring).
FROM_7 = remade(EVALUATIONS, ATTEMPTS_VIEW, 7) + f"PRAGMA user_version = {VERSION};\n"
MIGRATIONS = {1: FROM_1 + FROM_4 + FROM_5 + FROM_6 + FROM_7,
              2: FROM_2 + FROM_4 + FROM_5 + FROM_6 + FROM_7,
              3: FROM_3 + FROM_4 + FROM_5 + FROM_6 + FROM_7, 4: FROM_4 + FROM_5 + FROM_6 + FROM_7,
              5: FROM_5 + FROM_6 + FROM_7, 6: FROM_6 + FROM_7, 7: FROM_7, 8: FROM_7}


def version_of(db):
    """The schema version of an open store: 0 for an empty file, 1 for emews 0.1's layout."""
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version:
        return version
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    return 1 if "evaluations" in tables else 0
