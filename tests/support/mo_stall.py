"""A model of two objectives that stalls after a number of calls, for tests/test_nsga_study.py:
the values of :func:`mo_models.loss_and_size` behind the gate of :func:`fault_me.stall_after`
(so that a test can kill a study in the middle of a batch)."""

from fault_me import stall_after
from mo_models import loss_and_size


def loss_and_size_stalling(params):
    stall_after(params)
    return loss_and_size(params)
