# Mirrors Supervisor's workflows/common/sh/langs-app-polaris.sh (abridged): a module for
# containers, a conda environment first on PATH, the HTTP proxy.
module load singularity
PATH=/eagle/Candle_ECP/conda/2024-03-13-LGBM/bin:$PATH
export HTTP_PROXY=http://proxy.alcf.anl.gov:3128
export https_proxy=http://proxy.alcf.anl.gov:3128
