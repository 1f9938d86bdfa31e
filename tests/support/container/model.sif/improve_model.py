"""An IMPROVE-style model inside the stand-in image: reads --params_file, reports IMPROVE_RESULT.

It writes what it received next to the params file (received.json) and prints the result
line only: no result.txt, so the value must come from the log.
"""
import argparse
import json
import os

parser = argparse.ArgumentParser()
parser.add_argument("--params_file")
parser.add_argument("--experiment_id")
parser.add_argument("--run_id")
args = parser.parse_args()
with open(args.params_file, encoding="utf-8") as handle:
    params = json.load(handle)
received = {"params": params, "experiment_id": args.experiment_id, "run_id": args.run_id,
            "cuda": os.environ["CUDA_VISIBLE_DEVICES"], "data_dir": os.environ["CANDLE_DATA_DIR"]}
with open(os.path.join(os.path.dirname(args.params_file), "received.json"), "w",
          encoding="utf-8") as out:
    json.dump(received, out, ensure_ascii=False)
print("training...")
print(f"IMPROVE_RESULT {2 * params['x']}")
print("done")
