"""An app that reports a step every 0.05 s and ignores SIGTERM (for the fidelity tests): the
worker must kill it after the grace period. Mirrors a model script run by the Model Shell."""

import json
import signal
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
for step in range(1, 10_000):
    print("EMEWS_REPORT " + json.dumps({"step": step, "value": 1.0 / step}), flush=True)
    if step == 2:
        print("EMEWS_REPORT {not json", flush=True)
        print("EMEWS_REPORT " + json.dumps({"step": 1, "value": 0.0}), flush=True)
    time.sleep(0.05)
