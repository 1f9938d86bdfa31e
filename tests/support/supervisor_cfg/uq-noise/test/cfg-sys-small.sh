# Mirrors Supervisor's workflows/uq-noise/test/cfg-sys-small.sh (its comments left out).
export PROCS=${PROCS:-3}
export PPN=${PPN:-1}
export WALLTIME=${WALLTIME:-00:15:00}
RESIDENT_WORK_RANKS=$(( PROCS - 2 ))
BENCHMARK_TIMEOUT=${BENCHMARK_TIMEOUT:-3600}
export SH_TIMEOUT=${SH_TIMEOUT:-}
export IGNORE_ERRORS=0
