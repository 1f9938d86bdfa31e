# Mirrors Supervisor's workflows/random/test/cfg-sys-1.sh (its comments left out).
export PROCS=${PROCS:-26}
export PPN=${PPN:-1}
export WALLTIME=${WALLTIME:-01:33:00}
BENCHMARK_TIMEOUT=${BENCHMARK_TIMEOUT:-3600}
