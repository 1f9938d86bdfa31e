"""A run of ours in the peers part, with the searches it builds imported in the run's own
process first, so that its line records their code.

A line records the files of ours that the run's process imported
(:func:`benchmarks.peers_runs.recorded_code`). In the async mode our search runs in the
master of an ``mpiexec`` pool, not in that process, so ``auto``'s async lines recorded
``algorithms/auto.py`` alone and not the searches of its stages (``gp``, Optuna's TPE): a
change to ``gp`` left them standing. This module imports them here too, and
:func:`complete` tells the lines made without them, to be run again.
"""

import importlib
from importlib.metadata import entry_points

from . import peers_runs

GROUP = "emews.algorithms"   # the entry points of the searches


def search_modules(name):
    """The modules that a run of our search ``name`` builds its searches from: its own, and
    for ``auto`` those of its stages' searches (``emews.algorithms.auto.OPTIONS``)."""
    from emews.algorithms import auto

    modules = {ep.name: ep.module for ep in entry_points(group=GROUP)}
    return [modules[n] for n in ([name, *auto.OPTIONS] if name == "auto" else [name])]


def recorded_names(name):
    """The names under which a line records :func:`search_modules` of ``name``
    (``algorithms/skopt_search.py``)."""
    return {f"algorithms/{module.rpartition('.')[2]}.py" for module in search_modules(name)}


def one_run(task, name, mode, seed, rounds, batch, ours, venv_directory):
    """:func:`benchmarks.peers_runs.one_run`, for ours with :func:`search_modules` imported
    first."""
    if name in ours:
        for module in search_modules(name):
            importlib.import_module(module)
    return peers_runs.one_run(task, name, mode, seed, rounds, batch, ours, venv_directory)


def complete(line, ours):
    """False for a line of one of ``ours`` that does not record each of its
    :func:`recorded_names` (made before this module, in the async mode)."""
    return line["contender"] not in ours or recorded_names(line["contender"]) <= set(line["code"])
