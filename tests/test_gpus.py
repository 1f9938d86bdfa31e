"""One GPU per worker: the device from the node-local rank, CANDLE_CUDA_OFFSET and GPUs per node."""

import pytest

from emews.launch import gpus


@pytest.mark.parametrize("rank, per_node, offset, expected", [
    (1, 4, 0, "1"), (4, 4, 0, "0"), (3, 4, 2, "1"), (0, 1, 0, "0"), (5, 0, 0, None),
])
def test_device_for_rank_offset_and_gpus_per_node(rank, per_node, offset, expected):
    assert gpus.device_for(rank, per_node, offset) == expected


def test_n_workers_on_a_node_take_one_gpu_each():
    assert sorted(gpus.device_for(rank, 4) for rank in range(1, 5)) == ["0", "1", "2", "3"]


def test_a_job_wide_device_list_is_split_among_the_workers():
    assert [gpus.device_for(rank, 2, visible="4,6") for rank in (0, 1, 2)] == ["4", "6", "4"]


def test_assign_uses_the_launcher_s_local_rank_and_candle_cuda_offset():
    environ = {"MPI_LOCALRANKID": "2", "CANDLE_CUDA_OFFSET": "1"}
    assert gpus.assign(9, 4, environ=environ) == "3"
    assert environ["CUDA_VISIBLE_DEVICES"] == "3"


def test_without_a_launcher_the_global_rank_is_used_and_no_gpus_set_nothing():
    environ = {}
    assert gpus.assign(5, 4, environ=environ) == "1"
    untouched = {"CUDA_VISIBLE_DEVICES": "0,1"}
    assert gpus.assign(1, 0, environ=untouched) is None
    assert untouched == {"CUDA_VISIBLE_DEVICES": "0,1"}
