# Mirrors Supervisor's workflows/common/sh/env-local.sh (abridged): Swift/T under $HOME,
# Supervisor's Python on PYTHONPATH, the resident-worker settings, a non-exported impl.
export SWIFT_T=${SWIFT_T:-$HOME/install/swift-t}
export LD_LIBRARY_PATH+=:$SWIFT_T/turbine/lib:$SWIFT_T/lb/lib
export PYTHONPATH=${PYTHONPATH:-}${PYTHONPATH:+:}
PYTHONPATH+=$WORKFLOWS_ROOT/common/python
export PATH=$SWIFT_T/stc/bin:$PATH
CANDLE_MODEL_IMPL="py"
EQR=$WORKFLOWS_ROOT/common/ext/EQ-R
export TURBINE_RESIDENT_WORK_WORKERS=1
export LOCAL=1
export CRAY=0
log_path LD_LIBRARY_PATH      # a helper of Supervisor's utils.sh
