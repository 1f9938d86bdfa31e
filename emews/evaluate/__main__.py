"""``python -m emews.evaluate COMMAND ARGS...``: the Model Shell's (``models/model.sh``) helpers.

* ``record-run RUN_DIR RUN_ID -- COMMAND...``: read a run's result and write Supervisor's files
  (:func:`emews.evaluate._model_output.main`);
* ``container-command IMAGE ACTION DEVICES RUN_DIR EXPID RUNID``: print a model image's
  command, NUL-separated (:func:`emews.evaluate._container.main`).
"""

import sys

from ._container import main as container_command
from ._model_output import main as record_run

COMMANDS = {"record-run": record_run, "container-command": container_command}


def main(argv=None):
    """Run the command that ``argv`` (default: the command line) names; its exit status."""
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] not in COMMANDS:
        print(f"usage: python -m emews.evaluate {{{','.join(COMMANDS)}}} ARGS...",
              file=sys.stderr)
        return 2
    return COMMANDS[args[0]](args[1:])


if __name__ == "__main__":
    sys.exit(main())
