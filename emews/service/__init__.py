"""One study, many pool jobs: the study as a service that pools attach to.

::

    emews serve CONFIG            the ME thread, the master and the store, in one process
        |  tcp://HOST:PORT (zmq; CURVE off loopback), or the study's PostgreSQL database
    mpiexec -n N emews pool EXPDIR     a pool job: rank 0 attaches, ranks 1.. evaluate
    mpiexec -n M emews pool EXPDIR     another, in another batch job, at any time

The service runs the same master and queue as ``emews run``, with a
:class:`~emews.service._core.RemotePool` in place of the in-job MPI pool. The package:

* :mod:`._core`: leases, requeue, duplicates, adoption and drain, once (both sides);
* :mod:`._transport`: what the core asks of a transport;
* :mod:`._zmq_transport` (with :mod:`._protocol` and :mod:`._keys`) and
  :mod:`._postgres_transport`: the two transports;
* :mod:`._links`: which transport a study serves on and a pool attaches through.

The commands ``emews serve`` and ``emews pool`` (:func:`emews._study.serve`,
:func:`emews._study.pool_job`) wire these to the master, the MPI pool and the workers; nothing
here imports them.
"""

from .._errors import missing_extra


def require_zmq():
    """The ``zmq`` module, or a one-line error naming the extra that brings it."""
    try:
        import zmq
    except ImportError:
        raise missing_extra("emews serve / emews pool", "pyzmq", "service") from None
    return zmq
