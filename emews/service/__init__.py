"""One study, many pool jobs: the study as a service that pools attach to over zmq.

::

    emews serve CONFIG            the ME thread, the master and the store, in one process
        |  tcp://HOST:PORT (ROUTER; CURVE off loopback)      EXPDIR/service.json
    mpiexec -n N emews pool EXPDIR     a pool job: rank 0 attaches, ranks 1.. evaluate
    mpiexec -n M emews pool EXPDIR     another, in another batch job, at any time

The service runs the same master and queue as ``emews run`` (:func:`emews.study.run_master`),
with a :class:`~emews.service.server.ServicePool` in place of the in-job MPI pool.
"""

from pathlib import Path

from ..errors import ConfigError
from .keys import POOLS_FILE, is_loopback, make_keys, read_service_file, write_service_file


def serve(config, overrides=None, resume=None):
    """Run a study as a service until it ends; return its :class:`~emews.study.Result`."""
    zmq = require_zmq()
    from zmq.auth.thread import ThreadAuthenticator

    from ..study import load_experiment, prepare, run_master
    from . import protocol
    from .server import ServicePool

    expdir, lock = prepare(config, overrides, resume)
    cfg = load_experiment(expdir)
    settings = cfg.service
    context = zmq.Context.instance()
    sock = context.socket(zmq.ROUTER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.MAXMSGSIZE, protocol.MAX_MESSAGE)
    authenticator, keys = None, None
    if not is_loopback(settings["bind"]):
        import zmq.auth

        keys = make_keys(expdir)
        authenticator = ThreadAuthenticator(context)
        authenticator.start()
        authenticator.configure_curve(domain="*", location=str(keys))
        public, secret = zmq.auth.load_certificate(str(keys / "service.key_secret"))
        sock.curve_publickey, sock.curve_secretkey, sock.curve_server = public, secret, True
    port = settings["port"] or _previous_port(expdir)
    try:
        if port:
            sock.bind(f"tcp://{settings['bind']}:{port}")
        else:
            port = sock.bind_to_random_port(f"tcp://{settings['bind']}")
        host = settings["bind"] if settings["bind"] not in ("0.0.0.0", "*") else \
            __import__("socket").gethostname()
        address = f"tcp://{host}:{port}"
        write_service_file(expdir, address, keys)
        print(f"emews: serving {expdir} at {address}; attach pools with: mpiexec -n N emews "
              f"pool {expdir}", flush=True)
        pool = ServicePool(sock, settings["lease"], max(cfg.system["procs"] - 1, 1),
                           Path(expdir) / POOLS_FILE)
        try:
            return run_master(expdir, cfg, pool)
        finally:
            pool.close()
    finally:
        sock.close(0)
        if authenticator is not None:
            authenticator.stop()
        lock.release()


def require_zmq():
    """The ``zmq`` module, or a one-line error naming the extra that brings it."""
    try:
        import zmq
    except ImportError:
        raise ConfigError("emews serve / emews pool", "needs pyzmq: pip install "
                          "'emews-hpo[service]'", None, show_value=False) from None
    return zmq


def _previous_port(expdir):
    """The port an earlier service of this study listened on (its pools reconnect there)."""
    try:
        return int(read_service_file(expdir)["address"].rsplit(":", 1)[1])
    except (ConfigError, KeyError, ValueError):
        return 0


def pool_job(expdir, walltime=None, give_up=600.0):
    """``mpiexec -n N emews pool EXPDIR``: rank 0 attaches to the service, the others work.

    Returns why the pool left (on rank 0; ``None`` on the others).
    """
    from mpi4py import MPI

    from ..study import load_experiment, python_path, run_worker

    require_zmq()
    from .attach import attach

    comm = MPI.COMM_WORLD
    expdir = Path(expdir)
    cfg = load_experiment(expdir)
    python_path(cfg)
    label = comm.bcast(f"pool-{__import__('os').getpid()}" if comm.Get_rank() == 0 else None)
    if comm.Get_rank() > 0:
        return run_worker(expdir, cfg, comm, comm.Get_rank(), label)
    return attach(expdir, comm, walltime, give_up)
