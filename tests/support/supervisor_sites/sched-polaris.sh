# Mirrors Supervisor's workflows/common/sh/sched-polaris.sh: PBS, project, queue, walltime,
# a filesystems directive and a Turbine-only switch.
MACHINE="-m pbs"
export PROJECT=${PROJECT:-CSC249ADOA01}
export QUEUE=${QUEUE:-debug}
export WALLTIME=${WALLTIME:-00:10:00}
export TURBINE_POLARIS=1
export TURBINE_DIRECTIVE='#PBS -l filesystems=home:grand:eagle'
