"""A real single-node Slurm for tests: munged, slurmctld and slurmd started by hand.

Debian's ``slurmd slurmctld slurm-client munge`` (``.ci/apt-packages``). Everything lives in a
temporary directory, and the daemons listen on free ports: the munge key and socket, ``slurm.conf``, state, spool, pid and log files.
The ``slurm`` fixture (import ``slurm_fixture`` into a test module) starts it once per session, waits until ``sinfo`` says the node is idle,
and tears it down (``scancel``, then SIGTERM to each daemon by the pid in its pid file).
Tests need root (the daemons run as root, ``SlurmUser=root``).
"""

import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
# Job ids start at a random number: under srun (PMI-2) MPICH names its shared-memory segment
# (/dev/shm/mpich_shm_*) after the job and step ids, and a segment left by a job killed in an
# earlier cluster (scancel: SIGKILL) made the next cluster's job with the same id crash or hang.
# CPUs the node says it has, whatever the machine has (config_overrides): a study job and two
# pool jobs of a few ranks each run side by side, oversubscribed as under mpiexec.
CPUS = 12
BINARIES = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo", "scontrol", "scancel")


def _missing():
    return [name for name in BINARIES if shutil.which(name) is None
            and not Path("/usr/sbin", name).exists()]


def missing_reason():
    """Why a real Slurm cannot start here, or ``None``.

    As root (CI, the development machines) missing packages are installed with
    ``scripts/apt-deps.sh``; a Slurm that still cannot start is then a failure, not a skip.
    """
    missing = _missing()
    if os.geteuid() == 0:
        if missing:
            subprocess.run(["bash", str(REPO / "scripts" / "apt-deps.sh")], check=True)
        return None
    if missing:
        return (f"no Slurm here ({', '.join(missing)} not found) and not root to install it "
                "(apt: slurmd slurmctld slurm-client munge)")
    return "Slurm is installed but its daemons (SlurmUser=root) need root to start"


def _binary(name):
    return shutil.which(name) or str(Path("/usr/sbin", name))


def wait_for(predicate, timeout, what):
    """Poll ``predicate`` (backing off to 0.5 s) until it is true; fail after ``timeout``."""
    deadline, delay = time.monotonic() + timeout, 0.05
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(delay)
        delay = min(delay * 2, 0.5)
    raise TimeoutError(f"timed out after {timeout} s waiting for {what}")


class Slurm:
    """A running single-node Slurm; ``env`` holds ``SLURM_CONF`` for its commands."""

    def __init__(self, root):
        self.root = Path(root)
        self.host = socket.gethostname().split(".")[0]
        self.conf = self.root / "slurm.conf"
        self.env = dict(os.environ, SLURM_CONF=str(self.conf))
        self.pids = {name: self.root / f"{name}.pid" for name in ("munged", "slurmctld",
                                                                  "slurmd")}

    def start(self):
        munge = self.root / "munge"
        munge.mkdir()
        os.chmod(munge, 0o755)
        key = munge / "munge.key"
        key.write_bytes(os.urandom(1024))
        os.chmod(key, 0o400)
        self.socket = munge / "munge.socket"
        self._run([_binary("munged"), "--key-file", str(key), "--socket", str(self.socket),
                   "--pid-file", str(self.pids["munged"]), "--log-file",
                   str(self.root / "munged.log"), "--seed-file", str(munge / "seed")])
        for name in ("state", "spool"):
            (self.root / name).mkdir()
        memory = subprocess.run([_binary("slurmd"), "-C"], capture_output=True, text=True,
                                check=True).stdout.split("RealMemory=")[1].split()[0]
        self.conf.write_text("\n".join([
            "ClusterName=emewstest",
            f"FirstJobId={random.randrange(10**6, 6 * 10**7)}",
            f"SlurmctldHost={self.host}(127.0.0.1)",
            f"SlurmctldPort={_free_port()}", f"SlurmdPort={_free_port()}",
            "AuthType=auth/munge", "CredType=cred/munge", f"AuthInfo=socket={self.socket}",
            "SlurmUser=root", f"StateSaveLocation={self.root / 'state'}",
            f"SlurmdSpoolDir={self.root / 'spool'}",
            f"SlurmctldPidFile={self.pids['slurmctld']}",
            f"SlurmdPidFile={self.pids['slurmd']}",
            f"SlurmctldLogFile={self.root / 'slurmctld.log'}",
            f"SlurmdLogFile={self.root / 'slurmd.log'}",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none", "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU", "MpiDefault=pmi2", "MailProg=/bin/true",
            "ReturnToService=2", "SlurmdParameters=config_overrides",
            f"NodeName={self.host} CPUs={CPUS} RealMemory={memory} NodeAddr=127.0.0.1",
            "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP", ""]))
        self._run([_binary("slurmctld"), "-f", str(self.conf)])
        self._run([_binary("slurmd"), "-f", str(self.conf), "-N", self.host])
        wait_for(lambda: self.command("sinfo", "-h", "-o", "%T").strip() == "idle", 60,
                 "sinfo to say the node is idle")
        return self

    def _run(self, command):
        subprocess.run(command, check=True, env=self.env, capture_output=True)

    def command(self, *args, check=False):
        """Run a Slurm client command against this cluster; return its stdout."""
        done = subprocess.run(list(args), env=self.env, capture_output=True, text=True)
        if check and done.returncode:
            raise RuntimeError(f"{' '.join(args)} failed: {done.stderr.strip()}")
        return done.stdout

    def job_state(self, job_id):
        """The job's state as ``squeue`` shows it, or ``""`` once it has left the queue."""
        return self.command("squeue", "-h", "-j", str(job_id), "-o", "%T").strip()

    def wait_gone(self, job_id, timeout=180):
        """Poll ``squeue -h -j JOBID`` until the job has left the queue."""
        wait_for(lambda: self.job_state(job_id) == "", timeout, f"job {job_id} to finish")

    def stop(self):
        self.command("scancel", "--user=root")
        for name in ("slurmd", "slurmctld", "munged"):
            try:
                pid = int(self.pids[name].read_text().split()[0])
                os.kill(pid, signal.SIGTERM)
            except (OSError, ValueError, IndexError):
                continue
            try:
                wait_for(lambda: not _alive(pid), 15, f"{name} to stop")
            except TimeoutError:
                os.kill(pid, signal.SIGKILL)

    def logs(self):
        """The daemons' logs, for a failing test's message."""
        return "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}"
                         for p in sorted(self.root.glob("*.log")))


def _free_port():
    """A TCP port free now: another Slurm on this machine keeps its own (6817/6818)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture(scope="session", name="slurm")
def slurm_fixture():
    """A real single-node Slurm for the session (skipped only without it and without root)."""
    reason = missing_reason()
    if reason:
        pytest.skip(reason)
    root = tempfile.mkdtemp(prefix="emews-slurm-")
    os.chmod(root, 0o755)
    cluster = Slurm(root)
    try:
        cluster.start()
    except BaseException:
        cluster.stop()
        raise
    try:
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
