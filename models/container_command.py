"""``python -m emews.models.container_command IMAGE ACTION DEVICES RUN_DIR EXPID RUNID``: the
container runtime's argument list for the Model Shell's Supervisor call (``model.sh FRAMEWORK
PARAMS EXPID RUNID SINGULARITY IMAGE ACTION``), each word followed by NUL, for
``mapfile -d ''``. See :func:`emews.evaluate.container.main`.
"""

import sys

from emews.evaluate.container import main

if __name__ == "__main__":
    sys.exit(main())
