# Mirrors Supervisor's workflows/common/sh/env-local.sh (abridged): Swift/T under $HOME,
# Supervisor's Python on PYTHONPATH, the resident-worker settings from $PROCS (so it must be
# sourced after the cfg files), a non-exported CANDLE_MODEL_IMPL, the exports for test output.
export SWIFT_T=${SWIFT_T:-$HOME/install/swift-t/}
export LD_LIBRARY_PATH+=:$SWIFT_T/turbine/lib:$SWIFT_T/lb/lib

# Python
export PYTHONPATH=${PYTHONPATH:-}${PYTHONPATH:+:}
PYTHONPATH+=$WORKFLOWS_ROOT/common/python:

export PATH=$SWIFT_T/stc/bin:$PATH
CANDLE_MODEL_IMPL="py"

if [ -z ${TURBINE_RESIDENT_WORK_WORKERS+x} ]
then
    export TURBINE_RESIDENT_WORK_WORKERS=1
    export RESIDENT_WORK_RANKS=$(( PROCS - 2 ))
fi

# For test output processing:
export LOCAL=1
export CRAY=0

# Cf. utils.sh
log_path LD_LIBRARY_PATH
log_path PYTHONPATH
