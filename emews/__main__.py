"""``python -m emews``: the same as the ``emews`` command."""

import sys

from ._cli import main

sys.exit(main())
