"""Objectives of a conditional search space (tests/test_conditional_io.py): they check that the
model receives exactly the active parameters."""

ACTIVE = {"lr": lambda p: True, "optimizer": lambda p: True,
          "momentum": lambda p: p["optimizer"] == "sgd",
          "beta": lambda p: p["optimizer"] == "adam",
          "warmup": lambda p: p["optimizer"] == "adam" and p["beta"] > 0.5}


def branches(params):
    """A two-branch problem (sgd with its momentum, adam with its beta and maybe warmup);
    raises when it receives an inactive parameter or lacks an active one."""
    wanted = {name for name, active in ACTIVE.items() if active(params)}
    if set(params) != wanted:
        raise RuntimeError(f"received {sorted(params)}, active {sorted(wanted)}")
    if params["optimizer"] == "sgd":
        value = (params["momentum"] - 0.9) ** 2
    else:
        value = (params["beta"] - 0.6) ** 2 + (0.0 if params.get("warmup") else 0.1)
    return {"loss": value + params["lr"], "received": len(params)}
