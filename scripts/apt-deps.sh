#!/usr/bin/env bash
# Install the Debian packages that the test suite uses (listed in .ci/apt-packages), if missing.
# Needs root; prints what it installs. Another apt holding the dpkg or package-list lock is waited
# for (up to 10 minutes), not an error.
# With --missing it installs nothing: it prints the missing packages (one line; empty if none).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LOCK_WAIT_S=600
mapfile -t wanted < <(grep -v '^\s*#' "$ROOT/.ci/apt-packages" | awk 'NF {print $1}')
missing=()
for package in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
        || missing+=("$package")
done
if [ "${1:-}" = --missing ]; then echo "${missing[*]}"; exit 0; fi
[ ${#missing[@]} -eq 0 ] && exit 0
echo "emews: installing Debian packages: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# Both wait for another apt's lock (the package lists', dpkg's) up to LOCK_WAIT_S.
apt-get -o DPkg::Lock::Timeout=$LOCK_WAIT_S update -qq
apt-get -o DPkg::Lock::Timeout=$LOCK_WAIT_S install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
