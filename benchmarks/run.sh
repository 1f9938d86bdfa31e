#!/usr/bin/env bash
# The benchmark suite in one command (creates or reuses .venv first). Arguments go to
# `python -m benchmarks`: --smoke, --size reduced, --parts dispatch,simulation, --jobs N, ...
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/venv.sh"
cd "$ROOT"
exec python -m benchmarks "$@"
