# Mirrors Supervisor's workflows/common/sh/langs-app-frontier.sh (abridged): the model's
# Python first on PATH, its libraries, PYTHONHOME and PYTHONPATH.
APP_PYTHONPATH=${APP_PYTHONPATH:-}
export PY=/gpfs/proj/candle_tf_2.10
export LD_LIBRARY_PATH=$PY/lib
export PYTHONHOME=$PY
export PATH=$PYTHONHOME/bin:$PATH
