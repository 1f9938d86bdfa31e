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

from ..errors import ConfigError, EmewsError
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
    if cfg.system["storage"]:
        return _serve_database(expdir, cfg, lock)
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
        pool = ServicePool(sock, settings["lease"],
                           max(cfg.system["procs"] - 1, 1) * cfg.system["slots_per_worker"],
                           Path(expdir) / POOLS_FILE,
                           {"config": cfg.as_dict(), "expdir": str(Path(expdir).resolve())})
        try:
            return run_master(expdir, cfg, pool)
        finally:
            pool.close()
    finally:
        sock.close(0)
        if authenticator is not None:
            authenticator.stop()
        lock.release()


def _serve_database(expdir, cfg, lock):
    """Serve the study through its PostgreSQL database: pools pop its tasks there."""
    from ..pools.database import DatabasePool
    from ..study import run_master

    try:
        location = f"{cfg.system['storage']}#{Path(expdir).resolve()}"
        pool = DatabasePool(cfg.system["storage"], str(Path(expdir).resolve()),
                            max(cfg.system["procs"] - 1, 1) * cfg.system["slots_per_worker"],
                            cfg.service["lease"],
                            cfg.as_dict(), Path(expdir).resolve())
        write_service_file(expdir, location, None)
        print(f"emews: serving {expdir} through its database; attach pools with: mpiexec -n N "
              f"emews pool {expdir}", flush=True)
        try:
            return run_master(expdir, cfg, pool)
        finally:
            pool.close()
    finally:
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


def pool_job(target, walltime=None, give_up=600.0, keys=None, workdir=None):
    """``mpiexec -n N emews pool TARGET``: rank 0 attaches to the service, the others work.

    ``target`` is the study's experiment directory (its ``service.json`` gives the address and
    keys) or the service's address, ``tcp://HOST:PORT``, with ``keys`` (a directory holding
    the pool key pair and the service's public key) off loopback. The service tells the pool
    the study's configuration; run directories and worker output go to the experiment
    directory when it is reachable here, else to ``workdir`` (default ``./emews-pool``).
    Returns why the pool left (on rank 0; ``None`` on the others).
    """
    from ..store.postgres import is_url

    if not str(target).startswith("tcp://"):
        address = target if is_url(target) else read_service_file(target)["address"]
        if is_url(address):
            from ..pools import database

            url, _, exp_id = str(address).rpartition("#")
            return database.pool_job(url, exp_id, walltime=walltime, workdir=workdir)
    from mpi4py import MPI

    from ..config import load
    from ..study import python_path, run_worker

    require_zmq()
    comm = MPI.COMM_WORLD
    attachment, study = None, None
    if comm.Get_rank() == 0:
        try:
            attachment, study = _introduce(target, keys, walltime, give_up, workdir, comm)
        except BaseException:
            comm.bcast(None)
            raise
    study = comm.bcast(study)
    if study is None:
        raise SystemExit(1)
    cfg = load([study["config"]], environ={})
    python_path(cfg)
    if comm.Get_rank() > 0:
        return run_worker(Path(study["expdir"]), cfg, comm, comm.Get_rank(), study["label"])
    from ..pools.mpi import MPIPool

    pool = MPIPool(comm, cfg.system["slots_per_worker"])
    try:
        return attachment.run(pool)
    finally:
        attachment.close()
        pool.close()


def _introduce(target, keys, walltime, give_up, workdir, comm):
    """Rank 0: connect, say hello, and learn the study: ``(attachment, study)``."""
    import os

    from .attach import Attachment

    if comm.Get_size() < 2:
        raise EmewsError("emews pool needs at least 2 MPI ranks (rank 0 attaches, the others "
                         "evaluate): mpiexec -n N with N >= 2")
    if str(target).startswith("tcp://"):
        address = str(target)
    else:
        service = read_service_file(target)
        address, keys = service["address"], keys or service.get("keys")
    attachment = Attachment(comm.Get_size() - 1, address, keys, walltime=walltime,
                            give_up=give_up)
    study = dict(attachment.introduce())
    expdir = Path(study["expdir"])
    if not (expdir / "config.json").is_file():  # not on a filesystem shared with the service
        expdir = Path(workdir or "emews-pool").resolve()
        (expdir / "out").mkdir(parents=True, exist_ok=True)
    study.update(expdir=str(expdir), label=f"pool-{os.getpid()}")
    return attachment, study
