"""Which transport a served study listens on (:func:`service_link`), and which one a pool job
attaches through (:func:`attach`)."""

import os
from pathlib import Path

from ..evaluate._handoff import mark_unshared
from ..store._postgres import is_url
from ._keys import record_service, service_of


def service_link(store, expdir, cfg, slots):
    """The study's side of its transport for ``slots`` slots: its database where ``[system]
    storage`` is set, else zmq, bound as ``[service]`` says; and where it listens (for the
    banner), which ``store`` records: ``(link, where)``."""
    lease = cfg.service.lease
    if cfg.system.storage:
        from ._postgres_transport import PostgresService

        link = PostgresService(cfg.system.storage, str(expdir), slots, lease, cfg.as_dict(),
                               expdir)
        record_service(store, expdir, f"{cfg.system.storage}#{expdir}", None)
        return link, "through its database"
    from ._zmq_transport import ZmqService, bind

    sock, authenticator, address = bind(store, expdir, cfg.service)
    return ZmqService(sock, lease, store,
                      {"config": cfg.as_dict(), "expdir": str(expdir)}, authenticator), \
        f"at {address}"


def attach(target, keys, give_up, workdir, eqsql, task_type, workers):
    """A pool job's rank 0 (arguments: :func:`emews._study.pool_job`'s), connected, and the
    study it learnt: ``(link, study)``, ``study`` with the study's ``config`` (a dict), its
    ``lease``, the ``expdir`` of this pool's run directories and output (the study's where it is
    reachable, else ``workdir``, default ``./emews-pool``) and the pool's ``label``."""
    link = _pool_link(target, keys, give_up, workdir, eqsql, task_type, workers)
    try:
        study = dict(link.learn_study())
    except BaseException:
        link.close()
        raise
    expdir = Path(study["expdir"])
    if not study["expdir"] or not (expdir / "config.json").is_file():
        expdir = Path(workdir or "emews-pool").resolve()   # not on a filesystem shared with
        (expdir / "out").mkdir(parents=True, exist_ok=True)   # the service
        mark_unshared(expdir, study["expdir"])   # segments of pbt cannot run here
    study.update(expdir=str(expdir), label=f"pool-{os.getpid()}")
    return link, study


def _pool_link(target, keys, give_up, workdir, eqsql, task_type, workers):
    """A pool's side of the transport that ``target`` names: an EXPDIR (its store says where it
    is served), ``tcp://HOST:PORT`` or a PostgreSQL store's ``URL#EXP_ID``; or ``eqsql``."""
    if eqsql:
        from ._postgres_transport import PostgresPool

        return PostgresPool(eqsql, None, task_type, config=target, workdir=workdir)
    address = str(target)
    if not address.startswith("tcp://") and not is_url(address):
        service = service_of(target)
        address, keys = service["address"], keys or service.get("keys")
    if is_url(address):
        from ._postgres_transport import PostgresPool

        url, _, exp_id = address.rpartition("#")
        return PostgresPool(url, exp_id)
    from ._zmq_transport import ZmqPool

    return ZmqPool(workers, address, keys, give_up)
