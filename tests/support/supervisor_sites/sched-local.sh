# Mirrors Supervisor's workflows/common/sh/sched-local.sh: no scheduler, no project.
MACHINE=""
export PROJECT=NONE
