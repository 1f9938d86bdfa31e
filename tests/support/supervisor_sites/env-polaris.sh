# Mirrors Supervisor's workflows/common/sh/env-polaris.sh (abridged): it exits when its
# Swift/T installation is missing (as it is here), before its module load.
CANDLE_MODEL_IMPL=app
SWIFT=/eagle/Candle_ECP/sfw/swift-t/2024-03-13
if ! [[ -d $SWIFT ]]
then
  echo "Not found: SWIFT=$SWIFT"
  exit 1
fi
module load PrgEnv-nvhpc
