"""Segments of population-based training: a point that trains one member for some steps.

A search that trains a population (``algorithm = "pbt"``) adds to each point it proposes, under
:data:`SEGMENT`, the segment's record (plain JSON; its keys :data:`FIELDS`, docs/src/pbt.md
says what each means). The record is stored with the point (the study's lineage) and taken out
of the parameters before the model sees them (:mod:`emews.evaluate._handoff` gives the run its
start checkpoint and ``EMEWS_TRAIN_UNTIL``).
"""

import re

SEGMENT = "emews_segment"
NAME = re.compile(r"[A-Za-z0-9_.-]+\Z")   # a segment's name is a file name in checkpoints/
FIELDS = ("member", "name", "parent", "donor", "start", "until")


def split(params):
    """``(parameters, record)``: ``params`` without its segment record, and the record (or
    ``None`` for a point that is not a segment)."""
    if not isinstance(params, dict) or SEGMENT not in params:
        return params, None
    params = dict(params)
    return params, params.pop(SEGMENT)


def checked(record):
    """``record`` when it is a well-formed segment record, else a ValueError naming the rule
    and the value (a name must be a plain file name; steps whole numbers)."""
    if not isinstance(record, dict) or set(record) != set(FIELDS):
        raise ValueError(f"a point's {SEGMENT} must be an object with the keys {list(FIELDS)}, "
                         f"got {record!r}")
    for key in ("name", "parent", "donor"):
        value = record[key]
        if (value is not None or key == "name") and not (isinstance(value, str)
                                                         and NAME.match(value)):
            raise ValueError(f"a point's {SEGMENT}.{key} must be a name of letters, digits, "
                             f"'_', '.' and '-', got {value!r}")
    for key in ("member", "start", "until"):
        if not isinstance(record[key], int) or isinstance(record[key], bool) or record[key] < 0:
            raise ValueError(f"a point's {SEGMENT}.{key} must be a whole number of 0 or more, "
                             f"got {record[key]!r}")
    return record
