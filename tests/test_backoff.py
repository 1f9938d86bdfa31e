"""The pools' non-spinning wait (:class:`emews.pools._base.Backoff`): its sleeps double up to
their maximum, and with a share they stretch further as a wait lasts, within that share."""

import time

from emews.pools._base import LONGEST_WAIT, Backoff


def waits(backoff, seconds):
    """Wait with ``backoff`` for about ``seconds``; return each wait as ``(seconds since the
    first began, its delay)``."""
    start, seen = time.monotonic(), []

    def waiter(delay):
        seen.append((time.monotonic() - start, delay))
        time.sleep(delay)

    while time.monotonic() - start < seconds:
        backoff.wait(waiter)
    return seen


def test_a_plain_backoff_doubles_from_10_us_to_its_maximum_and_stays_there():
    delays = [delay for _, delay in waits(Backoff(maximum=0.002), 0.3)]
    assert delays[:4] == [0.0, 1e-5, 2e-5, 4e-5]
    assert max(delays) == 0.002 and delays[-3:] == [0.002] * 3


def test_a_backoff_with_a_share_stretches_its_sleeps_within_that_share_of_the_wait():
    backoff = Backoff(maximum=0.002, share=0.05)
    seen = waits(backoff, 1.0)
    for elapsed, delay in seen:
        assert delay <= max(0.002, 0.05 * elapsed), (elapsed, delay)
    longest = max(delay for _, delay in seen)
    assert 0.02 < longest <= LONGEST_WAIT
    backoff.reset()   # progress: the next wait polls at once, and the stretch starts again
    after_reset = []
    for _ in range(2):   # counted, not timed: a loaded machine may take any time per wait
        backoff.wait(after_reset.append)
    assert after_reset == [0.0, 1e-5]
