"""One study, many pool jobs: the study as a service that pools attach to (docs/src/service.md).

::

    emews serve CONFIG            the ME thread, the master and the store, in one process
        |  tcp://HOST:PORT (zmq; CURVE off loopback), or the study's PostgreSQL database
    mpiexec -n N emews pool EXPDIR     a pool job: rank 0 attaches, ranks 1.. evaluate

:mod:`._core` holds leases, requeue, duplicates, adoption and drain once, over a transport
(:mod:`._transport`): :mod:`._zmq_transport` or :mod:`._postgres_transport`, as :mod:`._links`
picks. :func:`emews._study.serve` and :func:`emews._study.pool_job` wire them to the master and
the workers; nothing here imports those.
"""
