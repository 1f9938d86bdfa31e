# Mirrors Supervisor's workflows/common/sh/langs-app-local.sh (abridged): an Anaconda under
# $HOME first on PATH for the model runs, Supervisor's Python and APP_PYTHONPATH on PYTHONPATH.
export PYTHONHOME="$HOME/anaconda3"
export LD_LIBRARY_PATH="$PYTHONHOME/lib"
export PATH="$PYTHONHOME/bin:$PATH"
COMMON_DIR=$EMEWS_PROJECT_ROOT/python
APP_PYTHONPATH=${APP_PYTHONPATH:-}
export PYTHONPATH=$COMMON_DIR${APP_PYTHONPATH:+:}$APP_PYTHONPATH
