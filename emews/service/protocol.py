"""The messages between the study service and its pools (JSON over zmq, one frame each).

::

    pool  --hello {pool, workers, host, pid, received}-->  service   (again after a reconnect)
    pool  --want {free, received}------------->  service     free slots, tasks received so far
    pool  <--tasks {tasks: [[id, params, run_id, attempt]]}--  service   leased to the pool
    pool  --results {results: [[id, attempt, rank, outcome]]}--> service
    pool  <--ack {ids}---------------------------  service     stored: the pool may forget them
    pool  --heartbeat------------------------->  service     renews every lease the pool holds
    pool  <--stop {reason}----------------------  service     the study ended: leave
    pool  <--cancel-----------------------------  service     cancel what runs, drain
    pool  <--study {config, expdir, lease}------  service     the answer to hello: the study
    pool  <--who--------------------------------  service     "say hello again" (after the
                                                                service was restarted)
    pool  --bye------------------------------->  service

An ``outcome`` is :meth:`~emews.evaluate.Outcome.to_wire`'s dict, as on every transport.
A message that is not a JSON object with a known ``op`` and fields of the right types, or is
larger than :data:`MAX_MESSAGE`, is rejected by :func:`decode` (the service logs and drops it);
so is each entry of ``results`` that :func:`result` does not accept.
"""

import json

from ..evaluate import BadOutcome, Outcome

MAX_MESSAGE = 4 * 1024 * 1024
FIELDS = {
    "hello": {"pool": str, "workers": int, "host": str, "pid": int, "received": int},
    "want": {"free": int, "received": int},
    "results": {"results": list},
    "heartbeat": {},
    "bye": {},
    "tasks": {"tasks": list},
    "ack": {"ids": list},
    "stop": {"reason": str},
    "cancel": {},
    "who": {},
    "study": {"config": dict, "expdir": str, "lease": (int, float)},
}


class BadMessage(ValueError):
    """A message that does not follow the protocol."""


def encode(op, **fields):
    """One message as bytes."""
    return json.dumps({"op": op, **fields}, separators=(",", ":")).encode()


def decode(frame):
    """The message in ``frame`` as a dict, checked; raises :class:`BadMessage`."""
    if len(frame) > MAX_MESSAGE:
        raise BadMessage(f"a message of {len(frame)} bytes (at most {MAX_MESSAGE})")
    try:
        message = json.loads(frame)
    except (UnicodeDecodeError, ValueError):
        raise BadMessage("a message that is not JSON") from None
    if not isinstance(message, dict) or message.get("op") not in FIELDS:
        raise BadMessage(f"a message with no known op: {str(message)[:80]!r}")
    for name, kind in FIELDS[message["op"]].items():
        if not isinstance(message.get(name), kind) or isinstance(message.get(name), bool):
            raise BadMessage(f"{message['op']}: field {name!r} must be "
                             f"{getattr(kind, '__name__', 'a number')}")
    return message


def result(entry):
    """One entry of a ``results`` message, ``[id, attempt, rank, outcome]``, as ``(id, attempt,
    rank, Outcome)``; raises :class:`BadMessage`."""
    try:
        task_id, attempt, rank, outcome = entry
    except (TypeError, ValueError):
        raise BadMessage(f"a result that is not [id, attempt, rank, outcome]: "
                         f"{str(entry)[:80]!r}") from None
    if not (type(task_id) is int and type(attempt) is int and type(rank) is int):
        raise BadMessage(f"a result with a field of the wrong type: {str(entry)[:80]!r}")
    try:
        return task_id, attempt, rank, Outcome.from_wire(outcome)
    except BadOutcome as exc:
        raise BadMessage(f"a result of task {task_id}: {exc}") from None
