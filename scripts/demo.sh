#!/usr/bin/env bash
# The main job: an HPO of a real model on a local MPI pool of 4 ranks, results in SQLite.
# Creates or reuses the virtualenv (.venv) first. Extra arguments go to `emews run`.
set -euo pipefail
EMEWS_EXTRAS=${EMEWS_EXTRAS-}   # the default install: no TensorFlow (the demo never imports it)
source "$(dirname "${BASH_SOURCE[0]}")/venv.sh"
cd "$ROOT"
exec emews run examples/quickstart/study.toml "$@"
