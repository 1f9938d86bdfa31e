"""What a study found: its final record, its :class:`Result`, and the summary printed at the end.

::

    the ME's final message --final_record()--> store meta "final", final.json
                                               (several objectives: "pareto", the front)
    the store (counts, best) + "final"  --result_of()--> Result --print_summary()--> stdout
"""

import json
from dataclasses import dataclass
from pathlib import Path

from ._config import Study
from .core._criteria import Criteria
from .core._pareto import front_rows
from .core._replicas import best_point, settings_of
from ._errors import Interrupted
from ._experiment import read_store
from ._status import Status


@dataclass
class Result:
    """What a study found: its best point and value, or, in a study of several objectives or
    with constraints, its Pareto front (``pareto``: ``{"point", "values"}`` dicts, the values
    raw, in the order of the objectives; ``best_point`` and ``best_value`` are then ``None``).
    ``evaluations`` counts every finished evaluation: done, ``failed`` and ``pruned`` ones, and
    those paused (freeze-thaw: ``pruned`` counts them too; ``final.json``'s ``evaluations``)."""

    best_point: dict | None
    best_value: float | None
    expdir: Path
    stop_reason: str | None = None
    evaluations: int = 0
    failed: int = 0
    pareto: list | None = None
    pruned: int = 0

    @property
    def all_failed(self):
        """True when the study evaluated something and every evaluation failed."""
        return bool(self.evaluations) and self.failed == self.evaluations


def final_record(text, store, study=None):
    """The study's final record: the ME's final message ``text`` (a JSON object, else kept as
    its ``message``), ``evaluations`` (the finished ones ``store`` holds, those that ended after
    the ME's last word too) and the best point and value (:func:`best`), or in a ``study`` of
    several objectives or with constraints its Pareto front (:func:`pareto`)."""
    try:
        final = json.loads(text)
    except (TypeError, ValueError):
        final = None
    final = final if isinstance(final, dict) else {"message": text}
    final = dict(final, evaluations=store.finished_count())
    criteria = Criteria.from_study(study or Study())
    if criteria.vector:
        final = {k: v for k, v in final.items() if k not in ("best_point", "best_value")}
        return dict(final, pareto=pareto(store, criteria.directions))
    point, value = best(store, study)
    return dict(final, best_point=point, best_value=value)


def pareto(store, directions):
    """The study's Pareto front: ``{"point": ..., "values": [...]}`` of every feasible,
    non-dominated done evaluation (each objective in its ``directions``), by id."""
    return [{"point": row["params"], "values": row["objectives"]}
            for row in front_rows(store.rows(Status.DONE), directions)]


def best(store, study=None):
    """``(point, value)`` of the best finished evaluation, or ``(None, None)``; a study with
    ``replicas`` > 1 is judged per point, by the value its search was told (a point whose
    replicas a limit cut short was never told, and is not a candidate)."""
    settings = settings_of(study)
    if settings is not None:
        found = best_point(store.rows(), settings)
        return (found["point"], found["value"]) if found else (None, None)
    found = store.best()
    return (found["params"], found["result"]) if found else (None, None)


def result_from(expdir, store, final):
    """The :class:`Result` of ``final`` (the stored final record, with its best point)."""
    counts = store.counts()
    if "pareto" in final:
        point, value = None, None
    elif "best_point" in final:
        point, value = final["best_point"], final["best_value"]
    else:
        point, value = best(store)
    failed = counts.get(Status.FAILED, 0)
    pruned = counts.get(Status.PRUNED, 0) + counts.get(Status.PAUSED, 0)
    return Result(point, value, Path(expdir), final.get("stop_reason"),
                  counts.get(Status.DONE, 0) + failed + pruned, failed, final.get("pareto"),
                  pruned)


def result_of(expdir, spec=None):
    """The :class:`Result` of a finished experiment, read from its store (``spec``:
    :func:`~emews._experiment.read_store`'s)."""
    return read_store(expdir, lambda store: result_from(expdir, store, store.meta("final", {})),
                      spec)


def stored_count(expdir, spec=None):
    """How many evaluations of ``expdir`` have a final result in its store."""
    return read_store(expdir, lambda store: store.finished_count(), spec)


def interrupted(expdir, signum, stored):
    """The :class:`~emews._errors.Interrupted` error of ``expdir``, with the count of
    evaluations ``stored``."""
    error = Interrupted(signum)
    error.expdir, error.stored = Path(expdir), stored
    return error


def print_summary(result):
    """Print the stop reason, the counts and the best point."""
    pruned = f", {result.pruned} pruned" if result.pruned else ""
    lines = [f"emews: stopped: {result.stop_reason or 'the ME sent DONE'}",
             f"emews: {result.evaluations} evaluations ({result.failed} failed{pruned})"]
    if result.pareto is not None:
        lines.append(f"emews: Pareto front of {len(result.pareto)} point"
                     f"{'' if len(result.pareto) == 1 else 's'} (final.json: pareto)")
    if result.best_point is not None:
        lines.append(f"emews: best value {result.best_value:.6g} at "
                     f"{json.dumps(result.best_point, ensure_ascii=False)}")
    lines.append(f"emews: experiment directory {result.expdir}")
    print("\n".join(lines), flush=True)
