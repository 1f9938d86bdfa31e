"""``python -m emews.evaluate COMMAND ARGS...``: the Model Shell's (``models/model.sh``) helpers,
``record-run`` (:func:`emews.evaluate._model_output.main`) and ``container-command``
(:func:`emews.evaluate._container.main`).
"""

import sys

from ._container import main as container_command
from ._model_output import main as record_run

COMMANDS = {"record-run": record_run, "container-command": container_command}


def main(args):
    """Run the command that ``args`` (the command line's words) name; its exit status."""
    if not args or args[0] not in COMMANDS:
        print(f"usage: python -m emews.evaluate {{{','.join(COMMANDS)}}} ARGS...",
              file=sys.stderr)
        return 2
    return COMMANDS[args[0]](args[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
