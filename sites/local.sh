# Site: this machine (a workstation, a login or an interactive node). No scheduler: swift-t
# starts the ranks itself with mpiexec. Sourced by swift/workflow.sh; the environment wins.
#
# A scheduler site sets MACHINE to swift-t's name for it (slurm, pbs, lsf, cobalt, ...) and
# PROJECT, QUEUE, WALLTIME and PPN for the job Turbine submits.

export MACHINE=${MACHINE:-}            # swift-t -m; empty: run here
export PROCS=${PROCS:-4}               # ranks: ADLB server + ME + PROCS-2 workers
export PPN=${PPN:-4}                   # ranks per node
export WALLTIME=${WALLTIME:-00:30:00}  # HH:MM:SS (schedulers only)
export QUEUE=${QUEUE:-}                # scheduler queue (schedulers only)
export PROJECT=${PROJECT:-}            # allocation to charge (schedulers only)

# What the Model Shell sources before each app or container run (emews.evaluate).
export EMEWS_LANGS_APP=${EMEWS_LANGS_APP:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/langs-app-local.sh}
