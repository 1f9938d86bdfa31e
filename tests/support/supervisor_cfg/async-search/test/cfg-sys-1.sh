# Mirrors Supervisor's workflows/async-search/test/cfg-sys-biowulf.sh (shortened), written for
# the tests.
export PROCS=${PROCS:-3}
export PPN=${PPN:-1}
export WALLTIME=${WALLTIME:-00:60:00}
BENCHMARK_TIMEOUT=${BENCHMARK_TIMEOUT:-3600}
