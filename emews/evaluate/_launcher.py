"""Launching one evaluation of several ranks: the site's launcher, and what each process gets.

::

    worker (the evaluation's leading rank), RunContext.resources = Resources(k, hosts, gpus)
      Launcher.from_environ()          EMEWS_LAUNCH (the site's [launch], set by the batch
                                       script of emews submit), else mpiexec beside python
      .prefix(resources)               mpiexec -n k ..., srun ..., jsrun, aprun, flux run ...
                                       (argument lists, never a shell)
      .environ(resources)              WORLD_SIZE, MASTER_ADDR, MASTER_PORT, EMEWS_EVAL_GPUS, ...
        -> each of the k processes: rank_environ() adds RANK, LOCAL_RANK, LOCAL_WORLD_SIZE and
           its own GPU (CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES or ZE_AFFINITY_MASK)

docs/src/parallel-evals.md tabulates each launcher's words and the template fields (:data:`FIELDS`).
"""

import json
import math
import os
import shutil
import socket
import sys
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

LAUNCH_VARIABLE = "EMEWS_LAUNCH"         # the site's [launch] table, as JSON
BINDING_VARIABLE = "EMEWS_GPU_BINDING"   # the site's gpu_binding (emews.launch._gpus)
GPUS_VARIABLE = "EMEWS_EVAL_GPUS"        # the evaluation's devices, comma-separated
DEVICE_VARIABLES = ("CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "ZE_AFFINITY_MASK")
DEFAULT_BINDING = DEVICE_VARIABLES[0]    # without a site's gpu_binding

TEMPLATES = {  # launcher: (command, hosts, gpus)
    "mpiexec": (["{mpiexec}", "-n", "{ranks}"], ["-hosts", "{hostcounts}"], []),
    "srun": (["srun", "-n", "{ranks}", "-N", "{nodes}", "--exact", "--overlap",
              "--kill-on-bad-exit=1"],
             ["--nodelist={hosts}"], ["--gpus={gpus}"]),
    "jsrun": (["jsrun", "-n", "{ranks}"], [], []),   # resource sets: the site's launcher_args
    "aprun": (["aprun", "-n", "{ranks}", "-N", "{ppn}"], ["-L", "{hosts}"], []),
    "flux": (["flux", "run", "-n", "{ranks}", "-N", "{nodes}"], ["--requires=host:{hosts}"],
             ["-g", "{gpus_per_rank}"]),
}
FIELDS = ("ranks", "nodes", "ppn", "hosts", "hostcounts", "gpus", "gpus_per_rank", "mpiexec")
# the process's rank among the evaluation's, and on its node, as each launcher tells it
RANK_VARIABLES = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID",
                  "FLUX_TASK_RANK", "JSM_NAMESPACE_RANK", "ALPS_APP_PE", "PALS_RANKID")
LOCAL_RANK_VARIABLES = ("MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK", "PMIX_LOCAL_RANK",
                        "SLURM_LOCALID", "FLUX_TASK_LOCAL_ID", "JSM_NAMESPACE_LOCAL_RANK",
                        "PALS_LOCAL_RANKID")
LOCAL_SIZE_VARIABLES = ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE", "PMIX_LOCAL_SIZE",
                        "SLURM_NTASKS_PER_NODE", "JSM_NAMESPACE_LOCAL_SIZE")


@dataclass
class Launcher:
    """How an evaluation of several ranks starts: the site's templates (see the module) and the
    variable that carries each process's GPU (``launcher`` or ``none``: none is set)."""

    kind: str = "mpiexec"
    command: list = field(default_factory=list)
    hosts: list = field(default_factory=list)
    gpus: list = field(default_factory=list)
    gpu_variable: str = DEFAULT_BINDING

    @classmethod
    def of(cls, kind, command=None, hosts=None, gpus=None, args=(), launcher_command=None,
           gpu_variable=DEFAULT_BINDING):
        """The launcher ``kind`` with its default templates, each replaced when given;
        ``args`` are appended to the command, ``launcher_command`` replaces its first word."""
        default = TEMPLATES[kind]
        command = list(command if command is not None else default[0])
        if launcher_command and command:
            command[0] = launcher_command
        return cls(kind, command + list(args),
                   list(hosts if hosts is not None else default[1]),
                   list(gpus if gpus is not None else default[2]), gpu_variable)

    @classmethod
    def from_environ(cls, environ=os.environ):
        """The launcher the batch script named (``EMEWS_LAUNCH``), else ``mpiexec``."""
        binding = gpu_binding(environ)
        text = environ.get(LAUNCH_VARIABLE)
        if not text:
            return cls.of("mpiexec", gpu_variable=binding)
        data = json.loads(text)
        return cls(data["kind"], list(data["command"]), list(data["hosts"]),
                   list(data["gpus"]), data.get("gpu_variable", binding))

    def as_json(self):
        """The launcher as ``EMEWS_LAUNCH``'s value."""
        return json.dumps(asdict(self))

    def prefix(self, resources):
        """The argument list that starts ``resources.ranks`` processes of what follows it."""
        hosts = remote_hosts(resources.hosts)
        values = numbers(resources, hosts)
        words = self.command + (self.hosts if hosts else []) + \
            (self.gpus if resources.gpus else [])
        return [fill(word, values) for word in words]

    def environ(self, resources):
        """The variables every process of the evaluation shares (the launcher passes them on);
        :func:`rank_environ` adds each one's own."""
        hosts = remote_hosts(resources.hosts)
        env = {"WORLD_SIZE": str(resources.ranks),
               "MASTER_ADDR": hosts[0] if hosts else "127.0.0.1",
               "MASTER_PORT": str(free_port()),
               BINDING_VARIABLE: self.gpu_variable}
        if resources.gpus:
            env[GPUS_VARIABLE] = ",".join(str(g) for g in resources.gpus)
        return env


def numbers(resources, hosts):
    """The values of the template fields for ``resources`` on ``hosts`` (remote ones)."""
    counts = Counter(hosts)
    nodes = max(len(counts), 1)
    gpus = len(resources.gpus)
    return {"ranks": resources.ranks, "nodes": nodes, "ppn": math.ceil(resources.ranks / nodes),
            "hosts": ",".join(counts),
            "hostcounts": ",".join(f"{h}:{n}" for h, n in counts.items()), "gpus": gpus,
            "gpus_per_rank": max(gpus // resources.ranks, 1) if gpus else 0,
            "mpiexec": default_mpiexec()}


def fill(word, values):
    """``word`` with each ``{field}`` of :data:`FIELDS` replaced (no other formatting)."""
    for name in FIELDS:
        word = word.replace("{" + name + "}", str(values[name]))
    return word


def remote_hosts(hosts):
    """``hosts`` (one name per rank), or ``()`` when every one is this node."""
    here = {socket.gethostname(), socket.getfqdn(), "localhost", "127.0.0.1"}
    return tuple(hosts) if any(h not in here for h in hosts) else ()


def is_python(executable):
    """Whether ``executable`` is a Python interpreter (in an embedding program such as Swift/T's
    Turbine it may be the host program, or empty)."""
    return bool(executable) and os.path.basename(executable).lower().startswith("python")


def python():
    """This Python interpreter, else (see :func:`is_python`) ``python3`` from PATH."""
    return sys.executable if is_python(sys.executable) else shutil.which("python3") or "python3"


def free_port():
    """A TCP port free on this node now (for ``MASTER_PORT``)."""
    with socket.socket() as sock:
        sock.bind(("", 0))
        return sock.getsockname()[1]


def default_mpiexec(python=None):
    """The ``mpiexec`` beside ``python`` (the ``mpich`` wheel's in its virtualenv); without
    ``python``, beside this interpreter, else the one on PATH; else a bare ``mpiexec``.

    A batch job's Python (``python`` given) gets no PATH lookup here: the job's node resolves
    the bare name, after its site's modules are loaded. Where none is found the bare name fails
    to start, saying so (:func:`emews.launch._spawn.spawn` refuses it before it starts)."""
    beside = Path(python or sys.executable).parent / "mpiexec"
    if beside.is_absolute() and beside.exists():
        return str(beside)
    return (python is None and shutil.which("mpiexec")) or "mpiexec"


def gpu_binding(environ=os.environ):
    """The variable that carries a process's GPU: the site's binding (``EMEWS_GPU_BINDING``:
    one of :data:`DEVICE_VARIABLES`, ``launcher`` or ``none``), else ``CUDA_VISIBLE_DEVICES``."""
    return environ.get(BINDING_VARIABLE) or DEFAULT_BINDING


def _first(environ, names, default):
    for name in names:
        if str(environ.get(name, "")).isdigit():
            return int(environ[name])
    return default


def launcher_rank(environ=os.environ, default=0):
    """This process's rank among the job's, as its launcher tells it (the first of
    :data:`RANK_VARIABLES` set to a number), else ``default``."""
    return _first(environ, RANK_VARIABLES, default)


def local_rank(environ=os.environ, default=0):
    """This process's rank on its node, as its launcher tells it (the first of
    :data:`LOCAL_RANK_VARIABLES` set to a number), else ``default``."""
    return _first(environ, LOCAL_RANK_VARIABLES, default)


def devices_of(rank, ranks, gpus):
    """The devices of process ``rank`` of ``ranks`` among ``gpus``: ``len(gpus) // ranks`` of
    them (the ``rank``-th slice), or with fewer GPUs than ranks device ``rank mod len(gpus)``."""
    if not gpus:
        return []
    if len(gpus) >= ranks:
        share = len(gpus) // ranks
        return list(gpus[rank * share:(rank + 1) * share])
    return [gpus[rank % len(gpus)]]


def rank_environ(environ=os.environ):
    """This process's own variables (``RANK``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``, its GPU),
    read from what its launcher set; a dict to add to ``environ``."""
    rank = launcher_rank(environ)
    world = int(environ.get("WORLD_SIZE") or 1)
    env = {"RANK": str(rank), "LOCAL_RANK": str(local_rank(environ, rank)),
           "LOCAL_WORLD_SIZE": str(_first(environ, LOCAL_SIZE_VARIABLES, world))}
    variable = gpu_binding(environ)
    gpus = [g for g in environ.get(GPUS_VARIABLE, "").split(",") if g]
    if gpus and variable in DEVICE_VARIABLES:
        env[variable] = ",".join(devices_of(rank, world, gpus))
    return env


def main(argv):
    """``python -I -S .../emews/evaluate/_launcher.py COMMAND...``: set this process's variables
    (see :func:`rank_environ`) and exec COMMAND (each process of an ``app`` evaluation). Run
    as a file: it imports only the standard library."""
    if not argv:
        print("usage: python _launcher.py COMMAND [ARG...]", file=sys.stderr)
        return 2
    os.environ.update(rank_environ())
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
