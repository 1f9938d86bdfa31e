"""A stand-in for Supervisor's tc1 (``workflows/pbt/models/tc1/tc1_baseline_keras2.py``) in the
pbt workflow, for tests/test_supervisor_command.py: no Keras, and synthetic data in place of
tc1's, which comes from the network (``type_18_300_*.csv``).

``run(params)`` trains a softmax classifier (numpy) on a fixed synthetic set of
``feature_subsample`` features (20 when 0) and ``classes`` classes by minibatch SGD with
``lr``, ``batch_size`` and input dropout ``drop`` (``activation``, ``optimizer``, ``conv`` and
``dense`` are taken and unused). As a member of a population (``algorithm = "pbt"``) it goes on
from the checkpoint it finds in ``emews.checkpoint_dir()`` (``tc1.npz``: the weights, the
epoch and the history so far), trains to ``EMEWS_TRAIN_UNTIL`` epochs (else ``epochs``), saves
its checkpoint and reports ``val_loss`` after each epoch, and writes ``started.json`` in its run
directory: the epoch and the SHA-256 of the checkpoint it found (``null`` for none). It returns
its Keras-like history, ``val_loss`` per epoch trained so far.
"""

import hashlib
import io
import json
import os

import numpy as np

import candle
import emews
from emews.plugin import current_run

file_path = os.path.dirname(os.path.realpath(__file__))
CHECKPOINT = "tc1.npz"


def initialize_parameters(default_model="tc1_default_model.txt"):
    bmk = candle.Benchmark(file_path, default_model, "keras", prog="tc1",
                           additional_definitions=[{"name": "classes", "type": int},
                                                   {"name": "feature_subsample", "type": int}],
                           required=["model_name", "epochs", "lr"])
    return candle.finalize_parameters(bmk)


def synthetic(features, classes, count=400):
    """A fixed set (seed 0): class means drawn once, points around them; train and validation
    halves."""
    rng = np.random.default_rng(0)
    means = rng.normal(0.0, 1.0, (classes, features))
    labels = rng.integers(classes, size=count)
    x = means[labels] + rng.normal(0.0, 2.0, (count, features))
    half = count // 2
    return (x[:half], labels[:half]), (x[half:], labels[half:])


def loss(weights, x, labels):
    logits = x @ weights
    logits -= logits.max(axis=1, keepdims=True)
    log_p = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    return float(-log_p[np.arange(len(labels)), labels].mean())


def run(params):
    features, classes = int(params["feature_subsample"]) or 20, int(params["classes"])
    (x, y), (x_val, y_val) = synthetic(features, classes)
    context = current_run()
    until = int(context.env.get("EMEWS_TRAIN_UNTIL", params["epochs"]))
    saved = emews.checkpoint_dir() / CHECKPOINT
    found = saved.read_bytes() if saved.exists() else None
    if found is None:
        epoch, weights, history = 0, np.zeros((features, classes)), []
    else:
        state = np.load(io.BytesIO(found))
        epoch, weights, history = int(state["epoch"]), state["weights"], list(state["history"])
    (context.run_dir / "started.json").write_text(json.dumps(
        {"epoch": epoch, "sha256": found and hashlib.sha256(found).hexdigest()}))
    rng = np.random.default_rng(epoch)
    lr, batch, drop = float(params["lr"]), int(params["batch_size"]), float(params["drop"])
    while epoch < until:
        order = rng.permutation(len(y))
        for start in range(0, len(y), batch):
            rows = order[start:start + batch]
            xb = x[rows] * (rng.random(x[rows].shape) >= drop) / (1.0 - drop)
            logits = xb @ weights
            p = np.exp(logits - logits.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            p[np.arange(len(rows)), y[rows]] -= 1.0
            weights = weights - lr * xb.T @ p / len(rows)
        epoch += 1
        history.append(loss(weights, x_val, y_val))
        buffer = io.BytesIO()
        np.savez(buffer, epoch=epoch, weights=weights, history=np.array(history))
        saved.write_bytes(buffer.getvalue())
        emews.report(history[-1], epoch)
    return {"val_loss": history}
