#!/usr/bin/env bash
# The test suite, slow and MPI tests included. Creates or reuses the virtualenv (.venv) first.
# Extra arguments go to pytest (for example: -m "not slow", -k config, -x).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/venv.sh"
cd "$ROOT"
exec python -m pytest -p no:cacheprovider "$@"
