# Mirrors Supervisor's workflows/common/sh/langs-app-local.sh (abridged): the model runs'
# PYTHONPATH, with Supervisor's common Python and APP_PYTHONPATH. Its Anaconda lines
# (PYTHONHOME, PATH, LD_LIBRARY_PATH under $HOME/anaconda3) are left out: there is none here.
# LANGS APP LOCAL

COMMON_DIR=$EMEWS_PROJECT_ROOT/../common/python
PYTHONPATH=${PYTHONPATH:-}
PYTHONPATH+=":$COMMON_DIR:"

APP_PYTHONPATH=${APP_PYTHONPATH:-}
PYTHONPATH+=":$APP_PYTHONPATH"

export PYTHONPATH
