# Mirrors Supervisor's workflows/async-search/test/cfg-prm-1.sh, written for the tests.
# CFG PRM test-1
# async-search settings
# Note: INIT_SIZE needs to be larger than PROCS-2 for now.
INIT_SIZE=${INIT_SIZE:-3}
MAX_EVALS=${MAX_EVALS:-6}
NUM_BUFFER=${NUM_BUFFER:-2}
MAX_THRESHOLD=${MAX_THRESHOLD:-1}
N_JOBS=${N_JOBS:-1}
RANDOM_SEED=${RANDOM_SEED:-0}
