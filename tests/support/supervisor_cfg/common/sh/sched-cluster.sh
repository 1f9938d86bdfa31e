# Mirrors a Slurm site's sched-SITE.sh in the shape of Supervisor's
# workflows/common/sh/sched-frontier.sh (abridged: no modules, no GPU options): Slurm, a
# default project that Supervisor writes as NONE, a walltime.
MACHINE="-m slurm"
export PROJECT=${PROJECT:-NONE}
export WALLTIME=${WALLTIME:-00:10:00}
