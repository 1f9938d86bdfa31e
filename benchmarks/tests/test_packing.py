"""The packing simulation keeps working at a small size: the product's own packer, every task
run once, never more slots held than there are. No figure is judged here."""

import pytest

from benchmarks import packing
from emews.pools._packing import Packer


def test_the_simulated_policies_pack_the_product_s_own_packer():
    assert packing.POLICIES["emews"] is Packer
    assert all(issubclass(policy, Packer) for policy in packing.POLICIES.values())


@pytest.mark.parametrize("layout", list(packing.LAYOUTS))
@pytest.mark.parametrize("policy", list(packing.POLICIES))
def test_each_policy_runs_every_task_once_within_the_slots(policy, layout):
    intervals, sizes = packing.simulate(policy, layout, 32, 8, 60, (1, 2, 4, 8), seed=2)
    assert sorted(task for _, _, _, task in intervals) == list(range(60))
    assert [k for _, _, k, _ in sorted(intervals, key=lambda i: i[3])] == sizes
    events = sorted([(start, 1, k) for start, _, k, _ in intervals] +
                    [(end, 0, -k) for _, end, k, _ in intervals])
    held = peak = 0
    for _, _, change in events:
        held += change
        peak = max(peak, held)
    assert peak <= 32
    found = packing.figures(intervals, sizes, 32)
    assert 0 < found["utilization"] <= 1 and 0 < found["steady_utilization"] <= 1
