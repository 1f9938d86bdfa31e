"""One GPU per worker: ``CUDA_VISIBLE_DEVICES`` from the worker's rank on its node.

A worker whose node-local rank is ``r`` takes device ``(r + CANDLE_CUDA_OFFSET) % G`` (``G``:
the site's GPUs per node), or that entry of a job-wide ``CUDA_VISIBLE_DEVICES`` (``2,3``). The
variable is the site's ``gpu_binding`` (docs/src/parallel-evals.md); each worker prints the
devices it was given, so its ``out-R.txt`` records them.
"""

import os
import sys

from ..evaluate._launcher import DEVICE_VARIABLES, gpu_binding, local_rank


def device_for(rank, gpus_per_node, offset=0, visible=None):
    """The device (a string) a worker of node-local ``rank`` uses, or ``None`` without GPUs;
    ``visible``: the job's ``CUDA_VISIBLE_DEVICES`` list, when it set one."""
    count = int(gpus_per_node or 0)
    if count <= 0:
        return None
    devices = [d.strip() for d in (visible or "").split(",") if d.strip()]
    index = (int(rank) + int(offset)) % count
    return devices[index % len(devices)] if devices else str(index)


def assign(rank, gpus_per_node, offset=None, environ=os.environ, binding=None, stream=None):
    """Set the binding's variable in ``environ`` for the worker of global ``rank``; return the
    device, or ``None``. ``offset`` defaults to ``CANDLE_CUDA_OFFSET``, ``binding`` to
    ``EMEWS_GPU_BINDING`` (else ``CUDA_VISIBLE_DEVICES``). Prints one line naming the devices
    the worker has to ``stream`` (default: stdout, the worker's ``out-R.txt``)."""
    if offset is None:
        offset = int(environ.get("CANDLE_CUDA_OFFSET") or 0)
    binding = binding or gpu_binding(environ)
    device = None
    if binding in DEVICE_VARIABLES:
        device = device_for(local_rank(environ, rank), gpus_per_node, offset,
                            environ.get(binding))
        if device is not None:
            environ[binding] = device
    given = ", ".join(f"{name}={environ[name]}" for name in DEVICE_VARIABLES if name in environ)
    print(f"emews: rank {rank} GPUs ({binding}, {int(gpus_per_node or 0)} per node): "
          f"{given or 'none set'}", file=stream or sys.stdout, flush=True)
    return device
