"""``python -m emews.models.record_run RUN_DIR RUN_ID -- COMMAND...``: what the Model Shell's
Supervisor call (``model.sh FRAMEWORK PARAMS EXPID RUNID ...``) does after its model exits 0.

It reads the run's result (``result.txt``, else ``model.log``'s ``IMPROVE_RESULT``; see
:func:`emews.evaluate.results.parse_result`), rewrites ``result.txt`` as the number, and writes
``run_command.txt`` and ``../output.csv`` (:func:`emews.evaluate.results.record_run`). Exit
status 1, the reason on stderr, when there is no number (``None``, ``nan``, ``inf``, ...).
"""

import sys

from emews.evaluate.results import main

if __name__ == "__main__":
    sys.exit(main())
