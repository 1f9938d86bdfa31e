"""``from emews import eqpy``: the EQ/Py queues (:mod:`emews.core._queues`) under the name EMEWS
users know. This module replaces itself with that one, so both names reach the same queues."""

import sys

from .core import _queues as queues

sys.modules[__name__] = queues
