#!/usr/bin/env bash
# Install the Debian packages that the test suite uses (listed in .ci/apt-packages), if missing.
# Needs root (CI and the development machines run as root); prints what it installs.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mapfile -t wanted < <(grep -v '^\s*#' "$ROOT/.ci/apt-packages" | awk 'NF {print $1}')
missing=()
for package in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
        || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "emews: installing Debian packages: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
