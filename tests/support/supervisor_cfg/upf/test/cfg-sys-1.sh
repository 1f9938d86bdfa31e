
# Mirrors Supervisor's workflows/upf/test/cfg-sys-1.sh (shortened), written for the tests.
# UPF CFG SYS 1

# The number of MPI processes
# Note that 1 process is reserved for Swift/T
export PROCS=${PROCS:-2}

# MPI processes per node.  This should not exceed PROCS.
export PPN=${PPN:-2}

#export QUEUE=${QUEUE:-batch}
# export TURBINE_LAUNCH_OPTIONS="-a1 -g6 -c7"

export WALLTIME=${WALLTIME:-1:00:00}
echo WALLTIME: $WALLTIME

# Benchmark run timeout: benchmark run will timeouT
# after the specified number of seconds. -1 is no timeout.
BENCHMARK_TIMEOUT=${BENCHMARK_TIMEOUT:-3600}
