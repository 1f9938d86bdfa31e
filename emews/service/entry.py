"""The commands ``emews serve`` and ``emews pool``: the remote-pool core wired to a study.

This is the one module of :mod:`emews.service` that reaches the study's composition
(:mod:`emews.study`: preparing the experiment directory, the master, the workers).
"""

import os
from pathlib import Path

from ..errors import EmewsError
from ..store.postgres import is_url
from ..study import load_experiment, prepare, python_path, run_master, run_worker
from . import require_zmq
from .core import Attachment, RemotePool
from .keys import POOLS_FILE, read_service_file, write_service_file


def serve(config, overrides=None, resume=None):
    """Run a study as a service until it ends; return its :class:`~emews.study.Result`.

    Pools attach over zmq, or through the study's PostgreSQL database when its ``[system]
    storage`` is one."""
    expdir, lock = prepare(config, overrides, resume)
    try:
        cfg = load_experiment(expdir)
        slots = max(cfg.system["procs"] - 1, 1) * cfg.system["slots_per_worker"]
        link, where = _service_link(Path(expdir).resolve(), cfg, slots)
        print(f"emews: serving {expdir} {where}; attach pools with: mpiexec -n N emews pool "
              f"{expdir}", flush=True)
        pool = RemotePool(link, slots)
        try:
            return run_master(expdir, cfg, pool)
        finally:
            pool.close()
    finally:
        lock.release()


def _service_link(expdir, cfg, slots):
    """The study's side of its transport, and where it listens (for the banner)."""
    lease = cfg.service["lease"]
    if cfg.system["storage"]:
        from .postgres_transport import PostgresService

        link = PostgresService(cfg.system["storage"], str(expdir), slots, lease, cfg.as_dict(),
                               expdir)
        write_service_file(expdir, f"{cfg.system['storage']}#{expdir}", None)
        return link, "through its database"
    require_zmq()
    from .zmq_transport import ZmqService, bind

    sock, authenticator, address = bind(expdir, cfg.service)
    return ZmqService(sock, lease, expdir / POOLS_FILE,
                      {"config": cfg.as_dict(), "expdir": str(expdir)}, authenticator), \
        f"at {address}"


def pool_job(target, walltime=None, give_up=600.0, keys=None, workdir=None, eqsql=None,
             task_type=0):
    """``mpiexec -n N emews pool TARGET``: rank 0 attaches to the study, the others work.

    ``target`` is the study's experiment directory (its ``service.json`` says where the study
    is served: a zmq address, or a PostgreSQL database) or the service's address,
    ``tcp://HOST:PORT``, with ``keys`` (a directory holding the pool key pair and the
    service's public key) off loopback. With ``eqsql`` (a database URL), ``target`` is a study
    configuration (a dict shaped like the TOML file) and the job serves EQ-SQL tasks of
    ``task_type``. Run directories and worker output go to the experiment directory when it is
    reachable here, else to ``workdir`` (default ``./emews-pool``). Returns why the pool left
    (on rank 0; ``None`` on the others).
    """
    from mpi4py import MPI

    from ..config import load
    from ..pools.mpi import MPIPool

    comm = MPI.COMM_WORLD
    link, study = None, None
    if comm.Get_rank() == 0:
        try:
            link, study = _attach(target, keys, give_up, workdir, eqsql, task_type,
                                  comm.Get_size())
        except BaseException:
            comm.bcast(None)  # the workers must not wait for a study that never comes
            raise
    study = comm.bcast(study)
    if study is None:
        raise SystemExit(1)
    cfg = load([study["config"]], environ={})
    python_path(cfg)
    if comm.Get_rank() > 0:
        return run_worker(Path(study["expdir"]), cfg, comm, comm.Get_rank(), study["label"])
    pool = MPIPool(comm, cfg.system["slots_per_worker"])
    try:
        return Attachment(link, pool, study["lease"], walltime).run()
    finally:
        link.close()
        pool.close()


def _attach(target, keys, give_up, workdir, eqsql, task_type, ranks):
    """Rank 0: connect and learn the study: ``(link, study)``."""
    if ranks < 2:
        raise EmewsError("emews pool needs at least 2 MPI ranks (rank 0 attaches, the others "
                         "evaluate): mpiexec -n N with N >= 2")
    link = _pool_link(target, keys, give_up, workdir, eqsql, task_type, ranks - 1)
    try:
        study = dict(link.introduce())
    except BaseException:
        link.close()
        raise
    expdir = Path(study["expdir"])
    if not study["expdir"] or not (expdir / "config.json").is_file():
        expdir = Path(workdir or "emews-pool").resolve()   # not on a filesystem shared with
        (expdir / "out").mkdir(parents=True, exist_ok=True)   # the service
    study.update(expdir=str(expdir), label=f"pool-{os.getpid()}")
    return link, study


def _pool_link(target, keys, give_up, workdir, eqsql, task_type, workers):
    """A pool's side of the transport that ``target`` (or ``eqsql``) names."""
    if eqsql:
        from .postgres_transport import PostgresPool

        return PostgresPool(eqsql, None, task_type, config=target, workdir=workdir)
    address = str(target)
    if not address.startswith("tcp://"):
        service = read_service_file(target)
        address, keys = service["address"], keys or service.get("keys")
    if is_url(address):
        from .postgres_transport import PostgresPool

        url, _, exp_id = address.rpartition("#")
        return PostgresPool(url, exp_id)
    require_zmq()
    from .zmq_transport import ZmqPool

    return ZmqPool(workers, address, keys, give_up=give_up)
