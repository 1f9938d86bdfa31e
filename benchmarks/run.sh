#!/usr/bin/env bash
# The benchmark suite in one command (creates or reuses .venv first, with the `bench` extra).
# Arguments go to `python -m benchmarks`: --smoke, --size reduced, --parts dispatch,simulation,
# --jobs N, ..., or `report` (regenerate benchmarks/README.md from benchmarks/results/*.json).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/venv.sh"
cd "$ROOT"
exec python -m benchmarks "$@"
