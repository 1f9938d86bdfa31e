"""Addresses and CURVE keys of a study service.

The service binds to 127.0.0.1 unless told otherwise. Any other interface needs CURVE: the
service's and the pools' key pairs are generated into ``EXPDIR/keys/`` (secret keys readable by
the owner only), the service accepts only the pools' public key, and a pool presents its key
pair. ``service.json`` in the experiment directory says where the service listens and where the
keys are.
"""

import ipaddress
import os
import socket
from pathlib import Path

from ..errors import ConfigError
from ..experiment import read_json, write_json

SERVICE_FILE = "service.json"
POOLS_FILE = "pools.json"      # the attached pools, kept by the running service


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


def write_service_file(expdir, address, keys):
    """Record where the service listens (and its keys, if any) for pools and commands."""
    data = {"address": address, "host": socket.gethostname(), "pid": os.getpid(),
            "keys": str(keys) if keys else None}
    write_json(Path(expdir) / SERVICE_FILE, data)
    return data


def read_service_file(expdir):
    """What ``service.json`` says; a ConfigError when there is none."""
    path = Path(expdir) / SERVICE_FILE
    try:
        return read_json(path)
    except (OSError, ValueError):
        raise ConfigError(str(path), "must exist: start the study with `emews serve` first",
                          None, show_value=False) from None
