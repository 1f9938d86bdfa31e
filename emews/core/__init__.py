"""The inversion-of-control core: the ME thread and the master that feeds the pool.

::

    algorithm (Algorithm ABC, plugins, stopping rules)
        ^ asks/tells
    me.py      the ME driver on its own thread
        |  OUT_put / IN_get            (queues.py: the EQ/Py wire, two queues)
    master.py  rank 0: hands points to a pool, commits results before the ME sees them;
        |          the one counter of the study's limits, its verdict in every answer
        |  failure.py  retry / skip / abort per failed evaluation
        |  control.py  pause, stop and walltime drain requests
        |  resume.py   where a run starts: what earlier runs left in the store
        v
    emews.pools (MPI ranks, in-process threads) or emews.service (remote pools)
"""
