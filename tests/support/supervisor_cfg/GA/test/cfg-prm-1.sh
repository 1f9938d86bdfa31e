# Mirrors Supervisor's workflows/GA/test/cfg-prm-1.sh (shortened; the model "sup" added to its
# chain of models), written for the tests.
# CFG PRM 1

# GA settings

SEED=${SEED:-1}
# SEED=${SEED:-$$}

# Total iterations
NUM_ITERATIONS=${NUM_ITERATIONS:-5}
# Size of GA population
POPULATION_SIZE=${POPULATION_SIZE:-16}
# the GA strategy: one of 'simple' or 'mu_plus_lambda'.
GA_STRATEGY=${STRATEGY:-mu_plus_lambda}
OFFSPRING_PROPORTION=${OFF_PROP:-0.5}
MUT_PROB=${MUTATION_PROBABILITY:-0.8}
CX_PROB=${CROSSOVER_PROBABILITY:-0.2}
MUT_INDPB=${GENE_MUTATION_PROBABILITY:-0.5}
CX_INDPB=${GENE_CROSSOVER_PROBABILITY:-0.5}
TOURNSIZE=${TOURNAMENT_SIZE:-4}

INIT_PARAMS_FILE=${INIT_PARAMS_FILE:-}

# Set the ga parameter space definition file for running
if [ "$MODEL_NAME" = "combo" ]; then
    PARAM_SET_FILE=${PARAM_SET_FILE:-$EMEWS_PROJECT_ROOT/data/combo_param_space_ga.json}
elif [ "$MODEL_NAME" = "sup" ]; then
    PARAM_SET_FILE=${PARAM_SET_FILE:-$EMEWS_PROJECT_ROOT/data/sup_param_space_ga.json}
elif [ "$MODEL_NAME" = "nt3" ]; then
    PARAM_SET_FILE=${PARAM_SET_FILE:-$EMEWS_PROJECT_ROOT/data/nt3_param_space_ga.json}
elif [ "${PARAM_SET_FILE:-}" != "" ]; then
    PARAM_SET_FILE=${EMEWS_PROJECT_ROOT}/data/${PARAM_SET_FILE}
else
    echo "Invalid model-" $MODEL_NAME
    exit 1
fi
