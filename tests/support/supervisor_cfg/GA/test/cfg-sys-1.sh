#
# Mirrors Supervisor's workflows/GA/test/cfg-sys-1.sh (shortened), written for the tests.
# GA CFG SYS 1

# The number of MPI processes
# Note that 2 processes are reserved for Swift/EMEMS
export PROCS=${PROCS:-10}

# MPI processes per node
export PPN=${PPN:-10}

#  Benchmark run timeout: if set to -1 there is no timeout.
BENCHMARK_TIMEOUT=${BENCHMARK_TIMEOUT:-3600}

# Uncomment below to use custom python script to run
# MODEL_PYTHON_SCRIPT=my_script

# Shell timeout: if set to -1 or empty there is no timeout.
export SH_TIMEOUT=${SH_TIMEOUT:-}

# Ignore errors: If 1, unknown errors will be reported to model.log
# but will not bring down the Swift workflow.  See model.sh .
export IGNORE_ERRORS=0

# for running locally, edit as necessary
# export PYTHONHOME=$HOME/anaconda3
