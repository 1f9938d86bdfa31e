"""Where a run of a study starts from: what earlier runs of it left in the store
(:func:`resume_unfinished`, then :func:`starting_state`). A fresh study is a resumed one whose
store is empty: the same path, with nothing in it."""

import math
import time
from dataclasses import dataclass, field

from ..evaluate import Outcome
from ._criteria import as_json
from ._replicas import KEYS as REPLICA_KEYS
from .._status import TOLD, Status

CHECKPOINT = "me"                    # the ME driver's checkpoint in the store
MAX_INTERRUPTIONS = 3                # a point interrupted this often is not run again
SEED_STEP = 7919                     # a resumed search's seed moves on by this per resume


def resume_unfinished(store):
    """Mark what a killed run left unfinished ``interrupted``; fail for good the points that
    were interrupted :data:`MAX_INTERRUPTIONS` times; pause again the thaws of paused runs
    (the search was told of their points), with the last value they reported; return the
    others, to run again."""
    rows = store.interrupt_unfinished()
    thaws = {(row["id"], row["attempt"] + 1) for row in store.attempts()
             if row["status"] == Status.PAUSED}
    repaused = [row for row in rows if (row["id"], row["attempt"]) in thaws]
    store.finish([(row["id"], row["rank"], _repaused(store, row), row["attempt"],
                   Status.PAUSED) for row in repaused])
    rows = [row for row in rows if (row["id"], row["attempt"]) not in thaws]
    given_up = [row for row in rows if row["interruptions"] >= MAX_INTERRUPTIONS]
    store.finish([(row["id"], row["rank"], Outcome(
        math.nan, Status.FAILED, f"interrupted {row['interruptions']} times (its worker or "
        "the whole job died each time); not run again"), row["attempt"], Status.FAILED)
        for row in given_up])
    store.commit()
    return [row for row in rows if row["interruptions"] < MAX_INTERRUPTIONS]


def _repaused(store, row):
    """The outcome of a thaw ``row`` a killed run interrupted: paused at its last report."""
    reports = [r for r in store.reports(row["id"]) if r["attempt"] == row["attempt"]]
    value = math.nan if not reports or reports[-1]["value"] is None else reports[-1]["value"]
    step = reports[-1]["step"] if reports else "its start"
    return Outcome(value, Status.PAUSED, f"paused at step {step} (its thaw was interrupted)",
                   started=row["started"] or 0.0, finished=time.time())


def restorable(store, mode):
    """True when the search resumes from its checkpoint, taken after each tell in batch mode
    (a classic EQ/Py module takes none)."""
    return mode == "batch" and store.checkpoint(CHECKPOINT) is not None


def resumes(store):
    """How many runs of the study resumed one that had stored something, this one included."""
    return store.meta("resumes", 0) + (1 if store.counts() else 0)


def search_seed(cfg, store):
    """The seed this run's search is built with: the study's, moved on by
    :data:`SEED_STEP` for each resume (a resumed search must not replay its proposals), except
    for a search restored from its checkpoint, which goes on as it was."""
    seed = cfg.study.seed
    if seed is None or restorable(store, cfg.study.mode):
        return seed
    return seed + SEED_STEP * resumes(store)


def search_settings(cfg, seed):
    """The ME's settings (the keys of :mod:`emews.core._me`) of the study ``cfg`` for a search
    built with ``seed``; :func:`starting_state` adds where a run of it starts from."""
    study = cfg.study
    return {"algorithm": study.algorithm, "options": cfg.algorithm_options,
            "space": study.space, "seed": seed, "mode": study.mode,
            "batch_size": study.batch_size, "stop": cfg.stop,
            "replicas": {key: getattr(study, key) for key in REPLICA_KEYS}}


def told_value(row, policy, criteria=None):
    """What the search was told of a finished point: its result (an
    :class:`~emews.core._algorithm.Objectives` in a vector study: ``criteria``), NaN for a
    pruned one, or the policy's value for a failure (its penalty, else NaN)."""
    if row["status"] == Status.DONE:
        return counted_value(row, criteria)
    if row["status"] in (Status.PRUNED, Status.PAUSED) or policy.penalty is None:
        return math.nan
    return policy.penalty


def counted_value(row, criteria=None):
    """What the master's limits count of a finished point: as :func:`told_value`, but NaN
    for a failure."""
    if row["status"] != Status.DONE:
        return math.nan
    if criteria is not None and criteria.vector and row["objectives"]:
        return criteria.search_value(row["objectives"], row["metrics"])
    return row["result"]


@dataclass
class StartingState:
    """Where a run starts: the ME's ``settings`` (the keys of :mod:`emews.core._me`),
    ``stored_answers``: the finished points a search restored from its checkpoint proposes
    again (``(id, params, told value, counted value)``, answered from the store),
    ``restored`` (the checkpoint's counts of the limits, or ``None``) and ``earlier_values``:
    the values of earlier runs the limits count first, in the order the search is told them."""

    settings: dict
    stored_answers: list = field(default_factory=list)
    restored: dict | None = None
    earlier_values: list = field(default_factory=list)


def starting_state(cfg, store, slots, classic, requeue, policy):
    """The :class:`StartingState` of this run: a search restored from its checkpoint is told
    nothing (what it proposed after the checkpoint is answered from the store); any other is
    told every finished point (``history``) and proposes the unfinished ones first."""
    criteria = cfg.criteria
    mode = "batch" if classic else cfg.study.mode
    restore = not classic and restorable(store, mode)
    finished = store.rows(*TOLD)
    settings = dict(search_settings(cfg, cfg.study.seed), mode=mode, slots=slots, history=[],
                    pending=[], checkpoint={"store": store.path, "name": CHECKPOINT,
                                            "restore": restore})
    if restore:
        _, driver = store.checkpoint(CHECKPOINT)
        settings["put_base"] = driver["put"]
        after = [row for row in finished if row["seq"] is not None and row["seq"] >= driver["put"]]
        answers = [(row["id"], row["params"], told_value(row, policy, criteria),
                    counted_value(row, criteria)) for row in after]
        return StartingState(settings, answers, driver)
    settings["history"] = [[row["params"], as_json(told_value(row, policy, criteria))]
                           for row in finished]
    settings["pending"] = [row["params"] for row in requeue]
    settings["seed"] = search_seed(cfg, store)
    store.set_meta("resumes", resumes(store))
    return StartingState(settings,
                         earlier_values=[counted_value(row, criteria) for row in finished])
