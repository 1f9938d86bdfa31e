"""A real, throwaway PostgreSQL server for tests: Debian's ``postgresql``, on a temp directory.

``initdb`` and ``postgres`` refuse to run as root: as root the server runs as the ``postgres``
user that the Debian package creates (``runuser``), otherwise as the current user. It listens on
127.0.0.1 and a free port, with trust authentication (loopback only) and fsync off.

The ``postgres_url`` fixture (import ``postgres_server`` and ``postgres_url`` into a test
module) yields the ``postgresql://`` URL of a fresh database per test, on one server per session
(``postgres_server``), stopped (``pg_ctl stop -m immediate``) and removed at the end.
:meth:`Server.create_password_database` makes a database whose owner must give a password
(scram-sha-256), for the tests that keep passwords out of files.
:class:`Server` serves the benchmarks too (``benchmarks/service.py``).
"""

import getpass
import glob
import importlib.util
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent


def binaries():
    """The directory of Debian's PostgreSQL server binaries (the newest), or ``None``."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(Path(p).parent.parent.name))
    return Path(found[-1]).parent if found else None


def missing_reason():
    """Why a real PostgreSQL cannot start here, or ``None`` (as root, missing packages are
    installed with ``scripts/apt-deps.sh`` first: a server that still cannot start fails)."""
    if binaries() is None and os.geteuid() == 0:
        subprocess.run(["bash", str(REPO / "scripts" / "apt-deps.sh")], check=True)
    if binaries() is None:
        return "no PostgreSQL server binaries here (apt: postgresql)"
    if importlib.util.find_spec("psycopg") is None:
        return "psycopg is not installed (pip install 'emews-hpo[postgres]')"
    return None


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """One PostgreSQL server in ``directory`` (see the module docstring)."""

    def __init__(self, directory):
        self.directory, self.bin = Path(directory), binaries()
        self.port = free_port()
        self.user = "postgres" if os.geteuid() == 0 else getpass.getuser()

    def _run(self, *command):
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run(prefix + [str(self.bin / command[0]), *command[1:]], check=True,
                       capture_output=True, text=True, timeout=60)

    def start(self):
        """initdb, then start the server and wait until it accepts connections."""
        if os.geteuid() == 0:
            shutil.chown(self.directory, "postgres", "postgres")
        data = self.directory / "data"
        self._run("initdb", "-D", str(data), "-U", self.user, "-A", "trust", "-E", "UTF8",
                  "--locale=C.UTF-8", "-N")
        log = self.directory / "log"
        for _ in range(3):   # another process may take the free port before the server does
            options = (f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.directory} "
                       "-c fsync=off -c synchronous_commit=off -c full_page_writes=off")
            try:
                self._run("pg_ctl", "-D", str(data), "-l", str(log), "-w", "-t", "60", "-o",
                          options, "start")
                return self
            except subprocess.CalledProcessError as exc:
                told = log.read_text(errors="replace") if log.exists() else ""
                if "could not bind" not in told and "already in use" not in told:
                    raise RuntimeError(f"PostgreSQL did not start: {exc.stderr}\n{told}")
                self.port = free_port()
        raise RuntimeError(f"PostgreSQL found no free port to listen on:\n{told}")

    def stop(self):
        """Stop the server at once (its data is thrown away)."""
        self._run("pg_ctl", "-D", str(self.directory / "data"), "-m", "immediate", "-w", "stop")

    def url(self, database="postgres"):
        """The ``postgresql://`` URL of ``database`` on this server."""
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"

    def create_database(self, owner=None):
        """A fresh, empty database (owned by the role ``owner``); returns its URL."""
        import psycopg

        name = "t" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"' + (f' OWNER "{owner}"' if owner else ""))
        return self.url(name)

    def drop_database(self, url):
        """Drop the database of ``url`` (made by :meth:`create_database`), closing its
        connections: nothing of it is left for autovacuum to work on later."""
        import psycopg

        name = url.rsplit("/", 1)[1]
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')

    def create_password_database(self):
        """A fresh database owned by a new role that must log in with a password over TCP
        (a ``pg_hba.conf`` line before the trust lines); returns ``(url, password)``, the
        URL holding the password."""
        import psycopg

        role, password = "r" + uuid.uuid4().hex[:12], uuid.uuid4().hex
        hba = self.directory / "data" / "pg_hba.conf"
        hba.write_text(f"host all {role} 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE ROLE \"{role}\" LOGIN PASSWORD '{password}'")
            conn.execute("SELECT pg_reload_conf()")
        name = self.create_database(role).rsplit("/", 1)[1]
        return f"postgresql://{role}:{password}@127.0.0.1:{self.port}/{name}", password


@pytest.fixture(scope="session")
def postgres_server():
    """One PostgreSQL server for the whole session (skipped only where none can run)."""
    reason = missing_reason()
    if reason:
        pytest.skip(reason)
    directory = tempfile.mkdtemp(prefix="emews-pg-")
    os.chmod(directory, 0o755)
    server = Server(directory).start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_server):
    """The URL of a fresh database on the session's server."""
    return postgres_server.create_database()
