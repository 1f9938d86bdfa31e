"""An ``app`` model for the freeze-thaw tests: ``freeze_models.checkpointed`` run by the Model
Shell, the point from ``EMEWS_PARAMS_FILE``, one checkpoint per step in
``EMEWS_CHECKPOINT_DIR`` (``step-N``), an ``EMEWS_REPORT`` line per step, the value in
``result.txt``. A thawed run goes on from ``EMEWS_TRAIN_FROM``'s checkpoint (the app may have
trained past it before its signal came)."""

import json
import os
from pathlib import Path

from freeze_models import STEPS, value_at

params = json.loads(Path(os.environ["EMEWS_PARAMS_FILE"]).read_text())
checkpoints = Path(os.environ["EMEWS_CHECKPOINT_DIR"])
start = int(os.environ.get("EMEWS_TRAIN_FROM", "0"))
first = start + 1 if (checkpoints / f"step-{start}").exists() else 1
for step in range(first, STEPS + 1):
    with open("trained.txt", "a") as log:
        log.write(f"{step}\n")
    (checkpoints / f"step-{step}").write_text(str(value_at(params, step)))
    print("EMEWS_REPORT " + json.dumps({"step": step, "value": value_at(params, step)}),
          flush=True)
Path("result.txt").write_text(str(value_at(params, STEPS)))
