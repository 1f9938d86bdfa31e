# Mirrors Supervisor's workflows/common/sh/sched-frontier.sh: Slurm, a default project, the
# modules and conda activation run before the launch, a constraint directive, GPU options.
MACHINE="-m slurm"
export PROJECT=${PROJECT:-MED106}
PY=/lustre/orion/proj/world-shared/conda543
MODS=( DefApps
       cray-mpich )
export TURBINE_PRELAUNCH="module load ${MODS[@]} ; source activate $PY"
export TURBINE_DIRECTIVE="#SBATCH -C nvme"
export TURBINE_LAUNCH_OPTIONS="--gpus-per-task=1 --gpus-per-node=$PPN"
