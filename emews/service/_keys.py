"""Addresses and CURVE keys of a study service: where it listens and where its keys are, as
the study's store records them (meta ``service``) and ``service.json`` exports them. Off
loopback the service accepts only the pools' public key (docs/src/service.md).
"""

import ipaddress
import os
import socket
from pathlib import Path

from .._errors import ConfigError, EmewsError
from .._experiment import read_store, write_json

SERVICE = "service"             # the store's meta key
SERVICE_FILE = "service.json"   # its export
POOLS = "pools"                 # the store's meta key: the attached pools (zmq), for emews status


def is_loopback(host):
    """True for 127.0.0.0/8, ::1 and ``localhost``."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def make_keys(expdir):
    """Create (or reuse) the service's and the pools' CURVE key pairs; return the directory."""
    import zmq.auth

    keys = Path(expdir) / "keys"
    if not (keys / "service.key_secret").exists():
        keys.mkdir(mode=0o700, exist_ok=True)
        for name in ("service", "pool"):
            zmq.auth.create_certificates(str(keys), name)
        for secret in keys.glob("*.key_secret"):
            os.chmod(secret, 0o600)
    return keys


def record_service(store, expdir, address, keys):
    """Record where the service listens (and its keys, if any) for pools and commands: in the
    study's ``store`` (committed at once), then in its export ``service.json``."""
    data = {"address": address, "host": socket.gethostname(), "pid": os.getpid(),
            "keys": str(keys) if keys else None}
    store.set_meta(SERVICE, data)
    store.commit()
    write_json(Path(expdir) / SERVICE_FILE, data)


def served_at(expdir):
    """Where the study in ``expdir`` is served, as its store records it (``None``: it never
    was, or ``expdir`` holds no study)."""
    try:
        return read_store(expdir, lambda store: store.meta(SERVICE))
    except EmewsError:
        return None


def service_of(expdir):
    """Where the study in ``expdir`` is served; a ConfigError when it never was."""
    service = served_at(expdir)
    if service is None:
        raise ConfigError(str(expdir), "must be a study that `emews serve` runs (its store "
                          "records no service): start it with `emews serve` first", None,
                          show_value=False)
    return service
