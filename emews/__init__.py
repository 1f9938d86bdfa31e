"""emews-hpo: hyperparameter optimization on MPI pools, EMEWS style."""

__version__ = "0.1.0"


def run(config, overrides=None, resume=None):
    """Run a study; see :func:`emews.study.run`. Returns a :class:`emews.result.Result`."""
    from .study import run as run_study

    return run_study(config, overrides, resume)


def load(expdir):
    """The study in experiment directory ``expdir``, read-only: a
    :class:`emews.inspect.Study` with ``.best``, ``.trials_dataframe()`` and ``.report()``."""
    from .inspect import load as load_study

    return load_study(expdir)
