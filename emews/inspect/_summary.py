"""``emews status``: where a study stands, running or finished, from a read-only snapshot, and
the state of its batch jobs (``emews submit``) as their scheduler tells it."""

import collections
import math
import time
from pathlib import Path

from ..launch._jobs import JOBS, states as job_states
from ..pools._requests import Demand
from ..service._keys import POOLS
from .._status import FINAL, TOLD, Status
from ..store import _schema as schema
from ..store._base import NO_REASON, common_reasons
from .._validation import Invalid
from ._progress import duration

TOP_FAILURES = 5


def summary(study, now=None):
    """The study's state as JSON-able data (``emews status --json``); the evaluation rate is
    per minute of the time some evaluation ran (a stopped study's wait does not count)."""
    now = time.time() if now is None else now
    counts = {status: 0 for status in schema.POINT_STATUSES}
    counts.update(collections.Counter(row["status"] for row in study.rows))
    finished = sum(counts[status] for status in TOLD)   # a paused one counts, as pruned
    state = "running" if study.is_running() else (
        "finished" if study.final is not None else "stopped")
    final = study.final if state == "finished" else {}   # a resumed run's end is not yet known
    times = [(row["started"], row["finished"]) for row in study.rows
             if row["status"] in FINAL and row["started"] and row["finished"]]
    span = busy(times)
    rate = len(times) / span * 60 if span > 0 else None
    budget = study.budget
    remaining = max(budget - finished, 0) if budget and state != "finished" else None
    eta = remaining / rate * 60 if remaining is not None and rate and state == "running" \
        else None
    reasons = common_reasons(collections.Counter(row["error"] or NO_REASON
                                                 for row in study.failed).items(), TOP_FAILURES)
    pools = []   # while it runs: the pools its service (zmq) described in its store
    if state == "running":
        pools = [dict(pool, last_heard_s=max(now - pool["last_heard"], 0.0))
                 for pool in (study.meta.get(POOLS) or {}).get("pools", [])]
    front = study.pareto
    search = study.meta.get("search")   # auto's stages; current: the one running now
    pruner = study.meta.get("pruner")   # what pruner = "auto" chose, and why
    jobs, jobs_note = job_states(study.meta.get(JOBS))
    return {
        "expdir": str(study.expdir), "state": state, "objective": study.objective,
        "counts": counts, "evaluations": len(study.rows), "finished": finished,
        "budget": budget, "remaining": remaining,
        "search": None if not search else dict(search, current=max(
            i for i, stage in enumerate(search["stages"]) if stage["start"] <= finished)),
        "pruner": pruner,
        "best": _best(study, study.best) if front is None else None,
        "stop_reason": final.get("stop_reason"),
        "failures": [{"reason": reason, "count": count} for reason, count in reasons],
        "rate_per_minute": rate, "eta_seconds": eta, "pools": pools,
        "slots": _slots(study, pools),
        "jobs": jobs, "jobs_note": jobs_note,
        "eta": None if eta is None else time.strftime("%Y-%m-%d %H:%M:%S UTC",
                                                      time.gmtime(now + eta)),
        **({} if front is None else {   # as final.json holds them
            "objectives": list(study.criteria.names),
            "directions": list(study.criteria.directions),
            "pareto": [{"id": row["id"], "point": row["params"], "values": row["objectives"]}
                       for row in front]}),
    }


def render(info):
    """The summary as lines of text."""
    counts = ", ".join(f"{status} {n}" for status, n in info["counts"].items() if n)
    of = f" of a budget of {info['budget']}" if info["budget"] else ""
    lines = [f"study: {info['expdir']} ({info['state']})",
             f"evaluations: {info['finished']} finished{of} ({counts or 'none yet'})"]
    search = info.get("search")
    if search:   # each stage and why, and the one running
        stages = "; ".join(f"{stage['label']} ({stage['why']})" if stage["start"] == 0 else
                           f"from {stage['start']} told, {stage['label']} ({stage['why']})"
                           for stage in search["stages"])
        lines.append(f"search: {search['algorithm']}: {stages}; now "
                     f"{search['stages'][search['current']]['label']}")
    if info.get("pruner"):
        lines.append(f"pruner: auto: {info['pruner']['pruner']} ({info['pruner']['why']})")
    best = info["best"]
    if "pareto" in info:
        lines.extend(_front_lines(info))
    elif best is not None and "replicas" in best:
        spread = "" if best["std"] is None else f", std {best['std']:.3g}"
        lines.append(f"best {info['objective']}: {best['value']:.6g} ({best['objective']} of "
                     f"{best['replicas']} replicas{spread}; evaluations "
                     f"{', '.join(map(str, best['ids']))}) at {best['params']}")
    elif best is not None:
        lines.append(f"best {info['objective']}: {best['value']:.6g} (evaluation "
                     f"{best['id']}) at {best['params']}")
    else:
        lines.append(f"best {info['objective']}: - (no evaluation has a value yet)")
    if info["counts"].get(Status.PAUSED):
        lines.append(f"paused: {info['counts'][Status.PAUSED]} runs, their checkpoints kept "
                     "(emews show --paused: the most promising first)")
    if info["rate_per_minute"] is not None:
        lines.append(f"rate: {info['rate_per_minute']:.3g} evaluations per minute")
    if info["eta_seconds"] is not None:
        lines.append(f"eta: {info['remaining']} to go, about {duration(info['eta_seconds'])}"
                     f" (at {info['eta']})")
    if info["stop_reason"]:
        lines.append(f"stop reason: {info['stop_reason']}")
    elif info["state"] == "stopped":
        lines.append(f"stop reason: none recorded (killed?); resume with: emews run --resume "
                     f"{info['expdir']}")
    slots = info.get("slots")
    if slots is not None:
        gpus = f", {slots['gpus']:g} GPUs" if slots["gpus"] else ""
        lines.append(f"slots: {slots['in_use']} of {slots['pool']} in use{gpus} "
                     f"({slots['evaluations']} evaluations running)")
    lines += [f"pool {pool['pool']} on {pool['host']}: {pool['workers']} workers, "
              f"{pool['tasks']} tasks, last heard {pool['last_heard_s']:.0f} s ago"
              for pool in info["pools"]]
    lines += [f"job {job['id']} ({job['kind']}): {job['state']}" for job in info["jobs"]]
    if info["jobs_note"]:
        lines.append(f"jobs: {info['jobs_note']}")
    lines += [f"failed {failure['count']}x: {one_line(failure['reason'])}"
              for failure in info["failures"]]
    if info["failures"]:
        lines.append(f"tracebacks: {tracebacks(info['expdir'])}")
    return lines


def busy(spans):
    """How long something ran: the length of the union of ``(start, end)`` ``spans``."""
    total, reached = 0.0, -math.inf
    for start, end in sorted(spans):
        if end > reached:
            total += end - max(start, reached)
            reached = end
    return total


def tracebacks(expdir):
    """Where the failed evaluations' tracebacks are: each rank's output file."""
    return f"{Path(expdir) / 'out'}/out-R.txt (R: the rank that ran the evaluation)"


def _best(study, best):
    """The best evaluation as JSON-able data; in a study with replicas, the best point and
    its replicas' figures."""
    if best is None:
        return None
    if study.replicas is None:
        return {"id": best["id"], "value": best["result"], "params": best["params"],
                "metrics": best["metrics"]}
    return {"value": best["result"], "params": best["params"],
            "objective": study.replicas["replica_objective"],
            "replicas": study.replicas["replicas"], "mean": best["mean"], "std": best["std"],
            "count": best["count"], "failed": best["failed"], "ids": best["ids"]}


def _front_lines(info, limit=10):
    """The Pareto front of :func:`summary`'s ``info`` as lines (its first ``limit`` points)."""
    names = [f"{name} ({direction[:3]})" for name, direction in
             zip(info["objectives"], info["directions"])]
    front = info["pareto"]
    lines = [f"Pareto front: {len(front)} point{'' if len(front) == 1 else 's'} of "
             f"{', '.join(names)}" + ("" if front else " (no feasible evaluation done yet)")]
    for entry in front[:limit]:
        values = ", ".join(f"{v:.6g}" for v in entry["values"])
        lines.append(f"  [{values}] (evaluation {entry['id']}) at {entry['point']}")
    if len(front) > limit:
        lines.append(f"  ... {len(front) - limit} more: emews show --pareto")
    return lines


def _slots(study, pools):
    """The worker slots (and GPUs) the running evaluations hold, each as its point asks
    (:mod:`emews.pools._requests`), and how many the pool has; ``None`` for a study whose every
    evaluation is one slot without GPUs."""
    demand = Demand.from_config(study.config)
    if demand.trivial:
        return None
    held, gpus, running = 0, 0.0, 0
    for row in study.rows:
        if row["status"] != Status.RUNNING:
            continue
        running += 1
        try:
            request = demand.of(row["params"])
        except Invalid:
            continue
        held, gpus = held + request.ranks, gpus + float(request.gpus)
    pool = sum(p.get("workers", 0) for p in pools) or study.config.system.workers
    return {"in_use": held, "pool": pool, "gpus": gpus, "evaluations": running}


def one_line(text, limit=200):
    """The first line of ``text``, cut to ``limit`` characters."""
    lines = (text or "").strip().splitlines() or [""]
    return lines[0][:limit] + ("..." if len(lines[0]) > limit or len(lines) > 1 else "")
