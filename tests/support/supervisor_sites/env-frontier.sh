# Mirrors Supervisor's workflows/common/sh/env-frontier.sh (abridged): Swift/T and a conda
# environment on PATH, Turbine's home exported, a non-exported CANDLE_MODEL_IMPL.
CANDLE_MODEL_IMPL=py
ROOT=/lustre/orion/proj/world-shared/sfw
SWIFT=$ROOT/swift-t/2023-08-13
export TURBINE_HOME=$SWIFT/turbine
PATH=$SWIFT/stc/bin:$PATH
PY=/lustre/orion/proj/world-shared/conda543
PATH=$PY/bin:$PATH
