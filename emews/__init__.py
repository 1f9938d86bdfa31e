"""emews-hpo: hyperparameter optimization on MPI pools, EMEWS style."""

__version__ = "0.1.0"
