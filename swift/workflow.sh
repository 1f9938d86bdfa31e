#!/usr/bin/env bash
# workflow.sh: run an emews model exploration under Swift/T (see swift/README.md).
#
#   swift/workflow.sh SITE SETTINGS [CONFIG]
#   swift/workflow.sh --resume EXPDIR
#
#   SITE      a site file: sites/NAME.sh (give NAME) or a path. Machine settings:
#             MACHINE (swift-t -m; empty: run here), PROCS, PPN, WALLTIME, QUEUE, PROJECT.
#   SETTINGS  emews.core._me's settings, JSON: algorithm, options, space, seed, batch_size, stop.
#   CONFIG    optional shell file of model settings: MODEL_NAME, MODEL_RETURN,
#             CANDLE_MODEL_IMPL, EMEWS_OBJECTIVE, EMEWS_APP, APP_PYTHONPATH, CANDLE_DATA_DIR,
#             EMEWS_RANKS_PER_EVAL (k > 1: each evaluation is a Swift/T parallel task of k
#             workers, @par=k, whose first starts the model's k processes: docs, parallel-evals).
#
# Both files set variables as VAR=${VAR:-value}, so a variable already in the environment wins.
# Makes the experiment directory $CANDLE_DATA_DIR/$MODEL_NAME/EXPnnn (TURBINE_OUTPUT), copies
# the settings, site and config files into it and runs workflow.swift there; Turbine's output
# is also kept in output.txt. The exit status is swift-t's: non-zero when the ME failed.
# --resume continues a killed (or finished) study in EXPDIR, with the site and config files it
# copied there (the environment still wins): every finished evaluation is told to the ME, and
# the points the killed job left unfinished run again, each under its own row of results.db.
# The ME's rank runs the master of emews run (failure policy, pruner, limits, resume, final
# record) on the job's workers.
set -euo pipefail

THIS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$THIS")

die() { echo "workflow.sh: $*" >&2; exit 2; }

USAGE="usage: workflow.sh SITE SETTINGS [CONFIG] | workflow.sh --resume EXPDIR"
if [ "${1:-}" = --resume ]; then
    [ $# -eq 2 ] || die "$USAGE"
    RESUME=$2 SITE=$2/site.sh SETTINGS="" CONFIG=""
    [ -f "$RESUME/config.sh" ] && CONFIG=$RESUME/config.sh
else
    [ $# -ge 2 ] && [ $# -le 3 ] || die "$USAGE"
    RESUME="" SITE=$1 SETTINGS=$2 CONFIG=${3:-}
fi
[[ $SITE == */* || $SITE == *.sh ]] || SITE=$ROOT/sites/$SITE.sh
[ -f "$SITE" ] || die "site file $SITE: must exist"
source "$SITE"
if [ -n "$CONFIG" ]; then
    [ -f "$CONFIG" ] || die "config file $CONFIG: must exist"
    source "$CONFIG"
fi

export MACHINE=${MACHINE:-} PROCS=${PROCS:-4} PPN=${PPN:-1} WALLTIME=${WALLTIME:-01:00:00}
export QUEUE=${QUEUE:-} PROJECT=${PROJECT:-}
export MODEL_NAME=${MODEL_NAME:-model} MODEL_RETURN=${MODEL_RETURN:-val_loss}
export CANDLE_MODEL_IMPL=${CANDLE_MODEL_IMPL:-py}
export CANDLE_DATA_DIR=${CANDLE_DATA_DIR:-$PWD/experiments}
# The model's modules first, then emews_swift.py (what workflow.swift's Python calls).
export PYTHONPATH=${APP_PYTHONPATH:+$APP_PYTHONPATH:}$THIS${PYTHONPATH:+:$PYTHONPATH}
# Under Turbine with Debian's MPICH, a job that has imported scipy or scikit-learn (the mbo
# algorithm, the digits model) can crash or hang at exit with Python's own allocator (3 runs in
# 4 hung); with the C library's malloc it ends cleanly. Exported for the launcher and passed
# with -e so that it reaches every rank on a scheduler too. (emews_swift.py also ends each rank
# before Python finalizes its modules, which crashed a scikit-learn worker even so.)
export PYTHONMALLOC=malloc

[[ $PROCS =~ ^[0-9]+$ ]] && (( PROCS >= 3 )) ||
    die "PROCS: must be an integer of at least 3 (ADLB server, ME rank, a worker), got '$PROCS'"
export EMEWS_RANKS_PER_EVAL=${EMEWS_RANKS_PER_EVAL:-1}
[[ $EMEWS_RANKS_PER_EVAL =~ ^[0-9]+$ ]] && (( EMEWS_RANKS_PER_EVAL >= 1 &&
                                             EMEWS_RANKS_PER_EVAL <= PROCS - 2 )) ||
    die "EMEWS_RANKS_PER_EVAL: must be an integer from 1 to the $(( PROCS - 2 )) workers of" \
        "PROCS = $PROCS, got '$EMEWS_RANKS_PER_EVAL'"
[[ $CANDLE_MODEL_IMPL =~ ^[a-z]+$ ]] && [ -f "$THIS/model_$CANDLE_MODEL_IMPL.swift" ] ||
    die "CANDLE_MODEL_IMPL: must be one of py, app, container, echo, got '$CANDLE_MODEL_IMPL'"

# Checks the settings and the objective, then makes the experiment directory (resuming: checks
# it; the master on the ME's rank resumes the study as emews run --resume does).
if [ -n "$RESUME" ]; then
    EXPDIR=$("${PYTHON:-python3}" "$THIS/prepare_study.py" --resume "$RESUME")
else
    EXPDIR=$("${PYTHON:-python3}" "$THIS/prepare_study.py" "$CANDLE_DATA_DIR" "$MODEL_NAME" \
             "$SETTINGS")
    cp "$SITE" "$EXPDIR/site.sh"
    [ -z "$CONFIG" ] || cp "$CONFIG" "$EXPDIR/config.sh"
fi
export TURBINE_OUTPUT=$EXPDIR EMEWS_EXP_ID=$(basename "$EXPDIR") EMEWS_ME=${EMEWS_ME:-}

# Rank layout: ADLB_SERVERS=1 server on the last rank (PROCS-1), the ME on the resident rank
# just below it (PROCS-2), candle_model_train() on the workers 0 .. PROCS-3.
export ADLB_SERVERS=1 TURBINE_RESIDENT_WORK_WORKERS=1 RESIDENT_WORK_RANKS=$(( PROCS - 2 ))

# Every setting reaches workflow.swift through the environment (never its command line: Turbine
# splits its argv as a Tcl list, which breaks on quotes and spaces), passed with -e so that it
# reaches the job on a scheduler too; the study itself is the file config.json.
ENV_ARGS=()
# What Turbine, the embedded Python and emews.evaluate read (emews._config's [model] table).
for name in TURBINE_OUTPUT ADLB_SERVERS TURBINE_RESIDENT_WORK_WORKERS RESIDENT_WORK_RANKS \
            EMEWS_EXP_ID EMEWS_ME EMEWS_ISOLATE PYTHONMALLOC \
            EMEWS_RANKS_PER_EVAL EMEWS_LAUNCH EMEWS_GPU_BINDING \
            PYTHONPATH OMP_NUM_THREADS OPENBLAS_NUM_THREADS \
            MODEL_NAME MODEL_RETURN MODEL_RETURN_EPOCH CANDLE_MODEL_IMPL CANDLE_MODEL_TYPE \
            CANDLE_DATA_DIR EMEWS_OBJECTIVE EMEWS_APP EMEWS_LANGS_APP APP_PYTHONPATH \
            FRAMEWORK MODEL_PYTHON_DIR MODEL_PYTHON_SCRIPT CANDLE_DEFAULT_MODEL_FILE \
            BENCHMARK_TIMEOUT SH_TIMEOUT CANDLE_IMAGE MODEL_ACTION CANDLE_CONTAINER_RUNTIME \
            CANDLE_CONTAINER_GPUS CANDLE_CONTAINER_ARGS; do
    [ -z "${!name:-}" ] || ENV_ARGS+=(-e "$name=${!name}")
done

echo "workflow.sh: experiment directory $EXPDIR"
cd "$EXPDIR"
# STC writes the compiled workflow.tic here, in the experiment directory (-o), not beside the
# source.
swift-t -n "$PROCS" ${MACHINE:+-m "$MACHINE"} -p -I "$THIS" -i "model_$CANDLE_MODEL_IMPL" \
    -o workflow.tic "${ENV_ARGS[@]}" "$THIS/workflow.swift" 2>&1 |
    tee -a "$EXPDIR/output.txt"
