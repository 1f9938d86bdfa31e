
# Mirrors Supervisor's workflows/mlrMBO/test/cfg-sys-nightly.sh (shortened), written for the
# tests.
# MLRMBO CFG SYS NIGHTLY

# The number of MPI processes
export PROCS=${PROCS:-3}

# MPI processes per node
export PPN=${PPN:-1}

export QUEUE=${QUEUE:-debug-scaling}
export WALLTIME=${WALLTIME:-00:60:00}

BENCHMARK_TIMEOUT=${BENCHMARK_TIMEOUT:-3600}

export SH_TIMEOUT=${SH_TIMEOUT:-}

# Ignore errors: If 1, unknown errors will be reported to model.log
# but will not bring down the Swift workflow.  See model.sh .
export IGNORE_ERRORS=0

# Resident task worker rank for mlrMBO algorithm
if [[ ${TURBINE_RESIDENT_WORK_WORKERS:-} == "" ]]
then
    export TURBINE_RESIDENT_WORK_WORKERS=1
    export RESIDENT_WORK_RANKS=$(( PROCS - 2 ))
fi
