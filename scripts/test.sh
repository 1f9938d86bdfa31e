#!/usr/bin/env bash
# The test suite, slow and MPI tests included, with all its set-up: as root, the Debian packages
# the tests start for real (scripts/apt-deps.sh: .ci/apt-packages, waiting for another apt's
# lock); then the virtualenv (.venv), created or reused. Without root it installs no packages and
# says at the end which it skipped and the command that installs them.
# Extra arguments go to pytest (for example: -m "not slow", -k config, -x).
set -euo pipefail
scripts=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
skipped=""
if [ "$(id -u)" -eq 0 ]; then
    bash "$scripts/apt-deps.sh"
elif command -v dpkg-query >/dev/null; then
    skipped=$(bash "$scripts/apt-deps.sh" --missing)
    install="sudo bash scripts/apt-deps.sh"
else   # not Debian: its package names are a guide
    skipped=$(grep -v '^\s*#' "$scripts/../.ci/apt-packages" | awk 'NF {printf "%s ", $1}')
    install="your system's packages for these Debian ones"
fi
source "$scripts/venv.sh"
cd "$ROOT"
status=0
python -m pytest -p no:cacheprovider "$@" || status=$?
if [ -n "$skipped" ]; then
    echo "emews: not root, so these Debian packages were not installed (the tests that start" \
         "them skipped or failed): $skipped"
    echo "emews: to install them: $install"
fi
exit $status
