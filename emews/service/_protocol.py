"""The messages between the study service and its pools (JSON over zmq, one frame each).

::

    pool  --hello {pool, workers, host, pid, received}-->  service   (again after a reconnect)
    pool  --want {free, received}------------->  service     free slots, tasks received so far
    pool  <--tasks {tasks: [[id, params, run_id, attempt]]}--  service   leased to the pool
    pool  --results {results: [[id, attempt, rank, outcome]], free, received}--> service
                                                            with a want's request, after them
    pool  --reports {reports: [[id, attempt, rank, report]]}--> service   emews.report, waiting
    pool  <--verdicts {verdicts: [[id, stop]]}----  service     the pruner's answers
    pool  <--ack {ids}---------------------------  service     stored: the pool may forget them
    pool  --heartbeat------------------------->  service     renews every lease the pool holds
    pool  <--stop {reason}----------------------  service     the study ended: leave
    pool  <--cancel-----------------------------  service     cancel what runs, drain
    pool  <--study {config, expdir, lease}------  service     the answer to hello: the study
    pool  <--who--------------------------------  service     "say hello again" (after the
                                                                service was restarted)
    pool  --bye------------------------------->  service

An ``outcome`` is :meth:`~emews.evaluate.Outcome.to_wire`'s list, as on every transport.
Messages are checked by :mod:`emews._validation`; what breaks a rule is one :class:`BadMessage`
line naming the op, the field, the rule and the value: the service logs it and drops the
message, or that entry alone.
"""

import json

from .. import _validation as validation
from ..evaluate import BadOutcome, Outcome
from ..evaluate._outcome import Report

MAX_MESSAGE = 4 * 1024 * 1024


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
        data = json.loads(frame)
    except (UnicodeDecodeError, ValueError):
        raise BadMessage("a message that is not JSON") from None
    try:
        return validation.message(data)
    except validation.Invalid as invalid:
        raise BadMessage(f"a malformed message: {invalid}") from None


def result(entry):
    """One entry of a ``results`` message, ``[id, attempt, rank, outcome]``, as ``(id, attempt,
    rank, Outcome)``; raises :class:`BadMessage`."""
    try:
        task_id, attempt, rank, outcome = validation.result(entry)
    except validation.Invalid as invalid:
        raise BadMessage(f"a malformed {invalid}") from None
    try:
        return task_id, attempt, rank, Outcome.from_wire(outcome)
    except BadOutcome as exc:
        raise BadMessage(f"a result of task {task_id}: {exc}") from None


def report(entry):
    """One entry of a ``reports`` message (checked already), ``[id, attempt, rank, report]``,
    as ``(id, attempt, rank, Report)``; raises :class:`BadMessage`."""
    task_id, attempt, rank, wire = entry
    try:
        return task_id, attempt, rank, Report.from_wire(wire)
    except BadOutcome as exc:
        raise BadMessage(f"a report of task {task_id}: {exc}") from None
