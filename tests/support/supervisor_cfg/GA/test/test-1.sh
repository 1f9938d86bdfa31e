#!/bin/bash
set -eu
# Mirrors Supervisor's workflows/GA/test/test-1.sh: the model and site as arguments, the
# self-configuration, utils.sh, the cfg files, a PARAM_SET_FILE named without a directory,
# the 7-argument call of workflow.sh, then turbine-output and its output.txt.

# GA TEST 1

usage()
{
  echo "Usage: test BENCHMARK_NAME SITE RUN_DIR(optional)"
  echo "       RUN_DIR is optional, use -a for automatic"
}

RUN_DIR=""
if (( ${#} == 3 ))
then
  RUN_DIR=$3
elif (( ${#} == 2 )) # test-all uses this
then
  RUN_DIR="-a"
else
  usage
  exit 1
fi

export MODEL_NAME=$1
SITE=$2

# Self-configure
THIS=$( cd $( dirname $0 ) && /bin/pwd )
SUPERVISOR_HOME=$( cd $THIS/../../.. ; /bin/pwd )
EMEWS_PROJECT_ROOT=$( cd $THIS/.. && /bin/pwd )
export EMEWS_PROJECT_ROOT
WORKFLOWS_ROOT=$( cd $EMEWS_PROJECT_ROOT/.. && /bin/pwd )
source $WORKFLOWS_ROOT/common/sh/utils.sh

# Select configurations
export CFG_SYS=$THIS/cfg-sys-1.sh
export CFG_PRM=$THIS/cfg-prm-1.sh

export PARAM_SET_FILE=sup_param_space_ga.json

export MODEL_RETURN=val_loss

CANDLE_MODEL_TYPE=${CANDLE_MODEL_TYPE:-BENCHMARKS}
CANDLE_IMAGE=None # Polaris

export OBJ_RETURN="val_loss"

sv_path_append $THIS/data
sv_path_append $WORKFLOWS_ROOT/common/sh

# Submit job
$EMEWS_PROJECT_ROOT/swift/workflow.sh $SITE $RUN_DIR $CFG_SYS $CFG_PRM $MODEL_NAME \
                                      $CANDLE_MODEL_TYPE $CANDLE_IMAGE
# Check job output
TURBINE_OUTPUT=$( readlink turbine-output )
echo $TURBINE_OUTPUT
OUTPUT=$TURBINE_OUTPUT/output.txt
WORKFLOW=$( basename $EMEWS_PROJECT_ROOT )

SCRIPT=$( basename $0 .sh )
check_output "EXIT CODE: 0" $OUTPUT $WORKFLOW $SCRIPT NONE

echo "$SCRIPT: SUCCESS"
