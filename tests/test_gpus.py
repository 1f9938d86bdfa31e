"""One GPU per worker: the device from the node-local rank, CANDLE_CUDA_OFFSET and GPUs per node."""

import io

import pytest

from emews.evaluate._launcher import (BINDING_VARIABLE, GPUS_VARIABLE, gpu_binding, launcher_rank,
                                     local_rank, rank_environ)
from emews.launch import _gpus as gpus
from emews.pools._packed import visible_devices


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


# every launcher's variable, as the one reader (emews.evaluate._launcher) knows it: Hydra (mpich),
# Open MPI, PMIx, Slurm, Flux, IBM's jsrun, Cray's ALPS and PALS
RANKS = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID", "FLUX_TASK_RANK",
         "JSM_NAMESPACE_RANK", "ALPS_APP_PE", "PALS_RANKID")
LOCAL_RANKS = ("MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK", "PMIX_LOCAL_RANK",
               "SLURM_LOCALID", "FLUX_TASK_LOCAL_ID", "JSM_NAMESPACE_LOCAL_RANK",
               "PALS_LOCAL_RANKID")


@pytest.mark.parametrize("name", RANKS)
def test_each_launcher_s_rank_variable_is_read(name):
    assert launcher_rank({name: "6"}) == 6
    assert launcher_rank({name: "x", "UNRELATED_RANK": "2"}, default=None) is None
    assert rank_environ({name: "6"})["RANK"] == "6"


@pytest.mark.parametrize("name", LOCAL_RANKS)
def test_each_launcher_s_local_rank_variable_is_read_by_the_worker_s_gpu_too(name):
    assert local_rank({name: "3"}) == 3
    assert local_rank({}, default=7) == 7
    environ = {name: "3"}
    assert gpus.assign(9, 2, environ=environ, stream=io.StringIO()) == "1"


@pytest.mark.parametrize("binding", ["CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
                                     "ZE_AFFINITY_MASK"])
def test_each_device_variable_is_one_the_site_the_worker_and_a_container_know(binding):
    from emews.evaluate import _container as container
    from emews.launch._site import GPU_BINDINGS

    assert binding in GPU_BINDINGS and gpu_binding({BINDING_VARIABLE: binding}) == binding
    environ = {BINDING_VARIABLE: binding, binding: "4,5"}
    assert visible_devices(environ) == ["4", "5"]
    assert gpus.assign(1, 2, environ=environ, stream=io.StringIO()) == "5"
    assert rank_environ({BINDING_VARIABLE: binding, GPUS_VARIABLE: "2,3",
                           "PMI_RANK": "1", "WORLD_SIZE": "2"})[binding] == "3"
    assert binding in container.DEVICE_VARIABLES
    assert gpu_binding({}) == "CUDA_VISIBLE_DEVICES"
