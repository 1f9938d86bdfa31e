"""The inversion-of-control core: the ME thread and the master that feeds the pool.

::

    algorithm (Algorithm ABC, plugins, stopping rules)
        ^ asks/tells
    _me.py     the ME driver on its own thread
        |  OUT_put / IN_get            (_queues.py: the EQ/Py wire, two queues)
    _master.py rank 0: hands points to a pool, commits results before the ME sees them;
        |          the one counter of the study's limits, its verdict in every answer
        |  _failure.py retry / skip / abort per failed evaluation
        |  _control.py pause, stop and walltime drain requests
        |  _resume.py  where a run starts: what earlier runs left in the store
        v
    emews.pools (MPI ranks, in-process threads) or emews.service (remote pools)
"""
