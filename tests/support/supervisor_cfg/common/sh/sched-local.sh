# Mirrors Supervisor's workflows/common/sh/sched-local.sh: no scheduler, no project.
# SCHED LOCAL

MACHINE=""

# Swift special setting for Local
export LOCAL true

# Default PROJECT for CANDLE
export PROJECT=NONE
