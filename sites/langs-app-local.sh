# langs-app settings of the site "local" (this machine), sourced by the Model Shell
# (models/model.sh) before each app or container run: [system].langs_app = "sites/langs-app-local.sh"
# or EMEWS_LANGS_APP=/path/to/this/file.
#
# A cluster's file loads what its model runs need, for example:
#   module load cuda/12.2 cudnn
#   export PATH=/lus/project/envs/tf/bin:$PATH        # the python3 that runs the model
#   export APP_PYTHONPATH=/lus/project/Benchmarks/Pilot1/NT3:/lus/project/Benchmarks/common
#   export TF_NUM_INTRAOP_THREADS=8
# The run's parameters are never here: they reach the model in params.json.

# This machine: the interpreter that runs emews is first on PATH already; keep TensorFlow to
# one thread per run so that several workers share the cores.
export TF_NUM_INTRAOP_THREADS=${TF_NUM_INTRAOP_THREADS:-1}
export TF_NUM_INTEROP_THREADS=${TF_NUM_INTEROP_THREADS:-1}
export TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-2}
