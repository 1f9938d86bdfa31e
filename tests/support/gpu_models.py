"""Models of the GPU tests (tests/test_gpu.py): a small PyTorch network trained on the GPU its
pool gave it, on scikit-learn's digits data (as models/digits.py, which trains on the CPU);
:func:`train_checkpointed` keeps checkpoints, so that a paused run is thawed from them.

Each reports its validation loss every epoch (``emews.report``: a pruner may stop it) and
returns, beside ``val_loss``, what it ran on, as numbers (the store keeps numeric metrics): the
CUDA device's index and memory, the GPU memory the training used, the GPU its run was given and
the one ``CUDA_VISIBLE_DEVICES`` showed its process (-1: unset).
"""

import os

import emews
from emews.evaluate import current_run


def _digits(device):
    import torch
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    parts = train_test_split(x / 16.0, y, test_size=0.25, random_state=0, stratify=y)
    kinds = (torch.float32, torch.float32, torch.long, torch.long)
    return [torch.as_tensor(a, dtype=kind, device=device) for a, kind in zip(parts, kinds)]


def _setup(params, device, shard=(0, 1)):
    """The network, its optimizer and the data of ``params``, on ``device``, from the same
    seed for every run of them (this process's ``shard``, (index, count), of the training
    data)."""
    import torch

    torch.manual_seed(0)
    x_train, x_val, y_train, y_val = _digits(device)
    data = (x_train[shard[0]::shard[1]], x_val, y_train[shard[0]::shard[1]], y_val)
    width = int(params.get("hidden_units", 32))
    net = torch.nn.Sequential(torch.nn.Linear(64, width), torch.nn.ReLU(),
                              torch.nn.Linear(width, 10)).to(device)
    optimizer = torch.optim.SGD(net.parameters(), lr=float(params.get("learning_rate", 0.1)))
    return net, optimizer, data


def _epoch(net, optimizer, data, average=None):
    """One full-batch epoch; ``average`` (a function of a list of floats) averages the
    gradients across processes. Returns the validation loss."""
    import torch

    x_train, x_val, y_train, y_val = data
    optimizer.zero_grad()
    torch.nn.functional.cross_entropy(net(x_train), y_train).backward()
    if average is not None:
        for p in net.parameters():
            p.grad.copy_(torch.as_tensor(average(p.grad.cpu().numpy()), device=p.device))
    optimizer.step()
    with torch.no_grad():
        return float(torch.nn.functional.cross_entropy(net(x_val), y_val))


def _fit(params, device, shard=(0, 1), average=None):
    """Train on ``device`` for ``params["epochs"]`` epochs on this process's ``shard``;
    report every epoch's loss and return the last."""
    net, optimizer, data = _setup(params, device, shard)
    for epoch in range(1, int(params.get("epochs", 9)) + 1):
        loss = _epoch(net, optimizer, data, average)
        emews.report(loss, epoch)
    return loss


def curve(params, device):
    """The losses of an uninterrupted training of ``params`` on ``device``, by epoch (what a
    paused and thawed run must report, epoch for epoch)."""
    net, optimizer, data = _setup(params, device)
    return {epoch: _epoch(net, optimizer, data)
            for epoch in range(1, int(params.get("epochs", 9)) + 1)}


def _device():
    import torch

    gpus = current_run().resources.gpus
    if not gpus:
        raise RuntimeError("the pool gave this run no GPU")
    # The run's GPU id, numbered among the ones CUDA_VISIBLE_DEVICES shows the process (the
    # job's, or the one the launcher bound each rank of a multi-rank run to).
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    shown = visible.split(",") if visible else [str(i) for i in range(torch.cuda.device_count())]
    return torch.device("cuda", shown.index(str(gpus[0])) if str(gpus[0]) in shown else 0)


def _ran_on(device):
    import torch

    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    return {"cuda_index": device.index,
            "gpu_memory": torch.cuda.get_device_properties(device).total_memory,
            "peak_allocated": torch.cuda.max_memory_allocated(device),
            "given_gpu": _number(current_run().resources.gpus[0]),
            "visible_gpu": _number(visible)}


def _number(gpu_id):
    """A GPU id as a number (-1: none, or not a number, such as a GPU's UUID)."""
    return int(gpu_id) if str(gpu_id).isdigit() else -1


def train(params):
    """One rank: train on the run's GPU; ``val_loss`` and where it ran."""
    device = _device()
    return {"val_loss": _fit(params, device), **_ran_on(device)}


def train_checkpointed(params):
    """:func:`train`, keeping the network and its optimizer in ``emews.checkpoint_dir()``
    after each epoch (before its report) and going on after the last epoch kept when run
    again (a thaw); writes each epoch it trains to its run directory's ``trained.txt``."""
    import torch

    device = _device()
    net, optimizer, data = _setup(params, device)
    saved, first = emews.checkpoint_dir() / "state.pt", 1
    if saved.exists():
        state = torch.load(saved, map_location=device)
        net.load_state_dict(state["net"])
        optimizer.load_state_dict(state["optimizer"])
        first = state["epoch"] + 1
    for epoch in range(first, int(params.get("epochs", 9)) + 1):
        loss = _epoch(net, optimizer, data)
        with open(current_run().run_dir / "trained.txt", "a") as log:
            log.write(f"{epoch}\n")
        torch.save({"epoch": epoch, "net": net.state_dict(),
                    "optimizer": optimizer.state_dict()}, saved)
        emews.report(loss, epoch)
    return {"val_loss": loss, **_ran_on(device)}


def train_data_parallel(params):
    """Every rank of the evaluation trains on its shard, on the GPU its launcher bound it to,
    averaging gradients over ``emews.comm()``; rank 0 returns ``val_loss``, the world's size,
    where it ran, and how many ranks saw GPU 0 as their one visible GPU and trained there."""
    comm = emews.comm()
    device = _device()

    def average(grad):
        return comm.allreduce(grad) / comm.Get_size()

    loss = _fit(params, device, (comm.Get_rank(), comm.Get_size()), average)
    ran = comm.gather(_ran_on(device))
    if ran is None:   # not rank 0: its return is ignored
        return loss
    return {"val_loss": loss, "world": comm.Get_size(), **ran[0],
            "ranks_on_gpu0": sum(r["visible_gpu"] == 0 and r["peak_allocated"] > 0
                                 for r in ran)}
