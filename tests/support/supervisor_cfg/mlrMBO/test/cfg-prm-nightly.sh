# Mirrors Supervisor's workflows/mlrMBO/test/cfg-prm-nightly.sh (shortened; the model "sup"
# added to its chain of models), written for the tests.
# CFG PRM NIGHTLY

# mlrMBO settings

# Total iterations
PROPOSE_POINTS=${PROPOSE_POINTS:-5}
MAX_CONCURRENT_EVALUATIONS=${MAX_CONCURRET_EVALUATIONS:-1}
MAX_ITERATIONS=${MAX_ITERATIONS:-3}
MAX_BUDGET=${MAX_BUDGET:-180}
DESIGN_SIZE=${DESIGN_SIZE:-5}

# Set the R data file for running
if [ "$MODEL_NAME" = "combo" ]; then
    PARAM_SET_FILE=${PARAM_SET_FILE:-$EMEWS_PROJECT_ROOT/data/combo_nightly.R}
elif [ "$MODEL_NAME" = "sup" ]; then
    PARAM_SET_FILE=${PARAM_SET_FILE:-$EMEWS_PROJECT_ROOT/data/sup_nightly.R}
elif [[ "${PARAM_SET_FILE:-}" != "" ]]; then
    PARAM_SET_FILE=${EMEWS_PROJECT_ROOT}/data/${PARAM_SET_FILE}
else
    PARAM_SET_FILE=${PARAM_SET_FILE:-$EMEWS_PROJECT_ROOT/data/graphdrp_small.R}
#    printf "Could not find PARAM_SET_FILE for model: '%s'\n" $MODEL_NAME
#    exit 1
fi
