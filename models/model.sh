#!/bin/bash
# model.sh: the shell half of the Model Shell (emews.evaluate's app and container runs),
# the equivalent of CANDLE/Supervisor's model.sh.
#
# Usage: model.sh COMMAND [ARG...]
#
# emews.evaluate starts it in the run's directory with stdout and stderr already going to
# model.log, and kills its process group at SH_TIMEOUT (SIGTERM, then SIGKILL). It sources the site's langs-app
# settings (EMEWS_LANGS_APP: a file that sets PATH, modules, APP_PYTHONPATH, ...), prepends
# APP_PYTHONPATH to PYTHONPATH, then execs COMMAND with its arguments exactly as given.
# The hyperparameters are in EMEWS_PARAMS_FILE (JSON); nothing here expands them.
set -eu

log() { echo "$(date '+%Y-%m-%d %H:%M:%S') MODEL.SH: $*"; }

log "START run ${RUN_ID:-?} of ${EXP_ID:-?}, model ${MODEL_NAME:-?}, in $PWD"
if [[ -n ${EMEWS_LANGS_APP:-} ]]; then
  log "sourcing langs-app settings $EMEWS_LANGS_APP"
  set +u
  # shellcheck disable=SC1090
  source "$EMEWS_LANGS_APP"
  set -u
fi
if [[ -n ${APP_PYTHONPATH:-} ]]; then
  export PYTHONPATH="$APP_PYTHONPATH${PYTHONPATH:+:$PYTHONPATH}"
fi
log "PYTHON: $(command -v python3 || echo none)"
log "BENCHMARK_TIMEOUT: ${BENCHMARK_TIMEOUT:-none}"
log "COMMAND: $*"
exec "$@"
