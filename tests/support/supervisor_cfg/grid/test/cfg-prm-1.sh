# Mirrors Supervisor's workflows/grid/test/cfg-prm-1.sh (shortened), written for the tests:
# the grid workflow reads none of it (its grid is data/settings.json).
# NOT NEEDED FOR GRID SEARCH

PROPOSE_POINTS=${PROPOSE_POINTS:-3}
MAX_ITERATIONS=${MAX_ITERATIONS:-2}
PARAM_SET_FILE=${PARAM_SET_FILE:-$EMEWS_PROJECT_ROOT/data/parameter_set.R}
