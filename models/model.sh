#!/bin/bash
# model.sh: the shell half of the Model Shell (emews.evaluate's app and container runs),
# the equivalent of CANDLE/Supervisor's model.sh (workflows/common/sh/model.sh).
#
# Usage: model.sh COMMAND [ARG...]
#    or: model.sh FRAMEWORK PARAMS EXPID RUNID MODEL_TYPE MODEL_NAME MODEL_ACTION
#
# The first form is emews' own: emews.evaluate starts it in the run's directory with stdout
# and stderr already going to model.log, and kills its process group at SH_TIMEOUT (SIGTERM,
# then SIGKILL). It sources the site's langs-app settings (EMEWS_LANGS_APP: a file that sets
# PATH, modules, APP_PYTHONPATH, ...), prepends APP_PYTHONPATH to PYTHONPATH, then execs
# COMMAND with its arguments exactly as given. The hyperparameters are in EMEWS_PARAMS_FILE
# (JSON); nothing here expands them.
#
# The second form is Supervisor's call (7 arguments, MODEL_TYPE BENCHMARK, BENCHMARKS or
# SINGULARITY, PARAMS a JSON object). FRAMEWORK keras means the keras2 baseline. PARAMS is
# written, as it is, to RUN_DIR/params.json and is never part of a shell line. RUN_DIR is
# EMEWS_RUN_DIR if set, else Supervisor's: $TURBINE_OUTPUT/RUNID (BENCHMARK; the current
# directory when TURBINE_OUTPUT is unset) or $CANDLE_DATA_DIR/<image name>/Output/EXPID/RUNID
# (SINGULARITY). Output is appended to RUN_DIR/model.log. The model runs under `timeout
# SH_TIMEOUT` (empty or -1: none): BENCHMARK runs python3 -u -m emews.models.runner, SINGULARITY
# runs the image MODEL_NAME with its runtime (CANDLE_CONTAINER_RUNTIME, else the first
# installed; GPUs CANDLE_CONTAINER_GPUS, default nvidia, Supervisor's --nv), e.g. singularity
# exec --nv --bind DATA:/candle_data_dir --bind RUN_DIR:/emews_run --pwd /emews_run --env ...
# MODEL_NAME MODEL_ACTION.sh CUDA_DEVICE /candle_data_dir --params_file /emews_run/params.json
# --experiment_id EXPID --run_id RUNID (emews.evaluate._container). After a success, result.txt
# holds the number, and run_command.txt and ../output.csv are written (python3 -m
# emews.evaluate record-run). A failure, or no number (None, nan, inf), exits 1, unless
# IGNORE_ERRORS is set non-zero: then it exits 0 without result.txt (Supervisor's NaN).
set -eu

log() { echo "$(date '+%Y-%m-%d %H:%M:%S') MODEL.SH: $*"; }

supervisor_call() {
  (( $# == 7 )) || return 1
  case $5 in BENCHMARK|BENCHMARKS|SINGULARITY) ;; *) return 1 ;; esac
  [[ $2 =~ ^[[:space:]]*\{ ]]
}

langs_app() {
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
}

if ! supervisor_call "$@"; then
  log "START run ${RUN_ID:-?} of ${EXP_ID:-?}, model ${MODEL_NAME:-?}, in $PWD"
  langs_app
  log "PYTHON: $(command -v python3 || echo none)"
  log "BENCHMARK_TIMEOUT: ${BENCHMARK_TIMEOUT:-none}"
  log "COMMAND: $*"
  exec "$@"
fi

# Supervisor's call
export FRAMEWORK=$1
PARAMS=$2
export EXPID=$3 RUNID=$4 MODEL_TYPE=$5 MODEL_NAME=$6 MODEL_ACTION=$7
export EXP_ID=$EXPID RUN_ID=$RUNID CANDLE_MODEL_TYPE=$MODEL_TYPE
if [[ $MODEL_TYPE == SINGULARITY ]]; then
  MODEL_TOKEN=$(basename -- "$MODEL_NAME" .sif)
  : "${CANDLE_DATA_DIR:?model.sh: a SINGULARITY run needs CANDLE_DATA_DIR}"
  RUN_DIR=${EMEWS_RUN_DIR:-$CANDLE_DATA_DIR/$MODEL_TOKEN/Output/$EXPID/$RUNID}
else
  RUN_DIR=${EMEWS_RUN_DIR:-${TURBINE_OUTPUT:-$PWD}/$RUNID}
fi
mkdir -p -- "$RUN_DIR"
RUN_DIR=$(cd -- "$RUN_DIR" && pwd -P)
echo "redirecting to: LOG_FILE=$RUN_DIR/model.log"
exec >> "$RUN_DIR/model.log" 2>&1
cd -- "$RUN_DIR"
printf '%s\n' "$PARAMS" > params.json
export EMEWS_PARAMS_FILE=$RUN_DIR/params.json EMEWS_RUN_DIR=$RUN_DIR
rm -f result.txt

log "START (Supervisor's call)"
log "MODEL_NAME: $MODEL_NAME"
log "RUNID: $RUNID"
log "MODEL_TYPE: $MODEL_TYPE"
langs_app
log "USING PYTHON: $(command -v python3 || echo none)"

if [[ $MODEL_TYPE == SINGULARITY ]]; then
  CVD=$(( ${ADLB_RANK_OFFSET:-0} + ${CANDLE_CUDA_OFFSET:-0} ))
  export USER=${USER:-$(id -un)}  # ch-run refuses to start without it
  # the runtime's argument list, one NUL-terminated word each (emews.evaluate._container)
  mapfile -d '' -t MODEL_CMD < <(
    python3 -m emews.evaluate container-command "$MODEL_NAME" "$MODEL_ACTION" "$CVD" \
            "$RUN_DIR" "$EXPID" "$RUNID")
  wait $! || { log "MODEL ERROR! no container command (see above)"; exit 1; }
else
  MODEL_CMD=( python3 -u -m emews.models.runner --params_file "$RUN_DIR/params.json"
              --run_dir "$RUN_DIR" --experiment_id "$EXPID" --run_id "$RUNID" )
fi
TIMEOUT_CMD=()
if [[ -n ${SH_TIMEOUT:-} && ${SH_TIMEOUT} != -1 && ${SH_TIMEOUT} != 0 ]]; then
  TIMEOUT_CMD=( timeout "$SH_TIMEOUT" )
fi
log "MODEL_CMD: ${MODEL_CMD[*]}"

if "${TIMEOUT_CMD[@]}" "${MODEL_CMD[@]}" &&
   python3 -m emews.evaluate record-run "$RUN_DIR" "$RUNID" -- "${MODEL_CMD[@]}"; then
  log "END: SUCCESS"
  exit 0
else
  CODE=$?
fi
if (( CODE == 124 )); then
  log "TIMEOUT ERROR! (timeout=$SH_TIMEOUT)"
else
  log "MODEL ERROR! (CODE=$CODE)"
fi
rm -f result.txt
if [[ ${IGNORE_ERRORS:-0} == 0 ]]; then
  log "ABORTING WORKFLOW (exit 1)"
  exit 1
fi
log "IGNORING ERROR."
exit 0
