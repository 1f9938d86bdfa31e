# Mirrors Supervisor's workflows/grid/test/cfg-sys-1.sh (shortened), written for the tests.
export PROCS=${PROCS:-3}
export PPN=${PPN:-1}
export WALLTIME=${WALLTIME:-00:10:00}
