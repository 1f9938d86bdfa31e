# Mirrors a Slurm site's env-SITE.sh in the shape of Supervisor's
# workflows/common/sh/env-frontier.sh (abridged: no modules or conda here): the site's
# exports, which the job sets up before it starts the ranks.
export SITE_CLUSTER_ENV=sourced
export PYTHONPATH=${PYTHONPATH:-}${PYTHONPATH:+:}$HOME/cluster/python
