"""An ``app`` model of the PBT paper's toy problem (``emews.models.pbt_toy``), run by the
Model Shell: the point from ``EMEWS_PARAMS_FILE``, its checkpoint in
``EMEWS_CHECKPOINT_DIR/theta.json`` (``start.json`` in the run directory keeps the bytes it
found there), trained to ``EMEWS_TRAIN_UNTIL``, an ``EMEWS_REPORT`` line per step, the loss
in ``result.txt``."""

import json
import os
from pathlib import Path

from emews.models import pbt_toy

params = json.loads(Path(os.environ["EMEWS_PARAMS_FILE"]).read_text())
checkpoint = Path(os.environ["EMEWS_CHECKPOINT_DIR"]) / pbt_toy.CHECKPOINT
found = checkpoint.read_bytes() if checkpoint.exists() else b""
Path("start.json").write_bytes(found)
state = json.loads(found) if found else {"theta": pbt_toy.START, "step": 0}
while state["step"] < int(os.environ["EMEWS_TRAIN_UNTIL"]):
    state = {"theta": pbt_toy.step(state["theta"], params), "step": state["step"] + 1}
    checkpoint.write_text(json.dumps(state))
    print("EMEWS_REPORT " + json.dumps({"step": state["step"],
                                        "value": pbt_toy.loss(state["theta"])}), flush=True)
Path("result.txt").write_text(str(pbt_toy.loss(state["theta"])))
