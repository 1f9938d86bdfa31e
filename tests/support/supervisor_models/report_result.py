"""An app for tests/test_supervisor_conventions.py that reports a result as a model does.

It mirrors the end of Supervisor's model_runner.py (``print("IMPROVE_RESULT " + str(result))``
in get_results, and result.txt written by runner_utils.write_output): it reads the point from
$EMEWS_PARAMS_FILE and prints each of ``params["lines"]`` to stdout, then writes
``params["result_txt"]`` to result.txt when the point has it.
"""

import json
import os

with open(os.environ["EMEWS_PARAMS_FILE"], encoding="utf-8") as handle:
    params = json.load(handle)
for line in params.get("lines", []):
    print(line, flush=True)
if "result_txt" in params:
    with open("result.txt", "w", encoding="utf-8") as out:
        out.write(params["result_txt"])
