"""``container``: the Model Shell runs a model image's action script with a container runtime.

::

    Container.run -> run_model_shell -> model.sh -> RUNTIME [its options] IMAGE ACTION.sh
        DEVICES /candle_data_dir --params_file /emews_run/params.json --experiment_id EXP
        --run_id RUN          (IMPROVE's train.sh convention; output -> RUN_DIR/model.log)

Every runtime starts the same :class:`Launch`, each with its own argument list (one
:class:`Runtime` each); docs/src/containers.md says what is bound where, which variables are
set inside and each runtime's words. ``python -m emews.evaluate container-command`` prints the
argument list for Supervisor's 7-argument ``model.sh`` call (:func:`main`).
"""

import json
import os
import pwd
import shutil
import sys
from dataclasses import dataclass

from .._config import CONTAINER_RUNTIMES, SCHEMA
from .._errors import ConfigError
from .._validation import check
from ._app import run_model_shell
from ._base import EvaluationFailed, Implementation
from ._handoff import segment_variables
from ._launcher import DEVICE_VARIABLES
from ._model_output import read_app_result

DATA, RUN = "/candle_data_dir", "/emews_run"
PARAMS, CHECKPOINTS = f"{RUN}/params.json", f"{RUN}/checkpoints"
IMAGE_SETTING = "[model].image (CANDLE_IMAGE)"
RUNTIME_SETTING = "[model].container_runtime (CANDLE_CONTAINER_RUNTIME)"
GPUS_SETTING = "[model].container_gpus (CANDLE_CONTAINER_GPUS)"
NO_IMAGE = ("", "NONE", "None")  # Supervisor's workflow.sh: ${CANDLE_IMAGE:=NONE}
KIND_VARIABLES = {"nvidia": "CUDA_VISIBLE_DEVICES", "amd": "ROCR_VISIBLE_DEVICES"}
NODE_DEVICES = {"nvidia": "/dev/nvidiactl", "amd": "/dev/kfd"}  # a node's GPUs, by kind


@dataclass(frozen=True)
class Launch:
    """One run of an image's action script: what every runtime must start."""

    image: str
    action: str
    binds: tuple          # "host:guest" strings
    env: tuple            # "NAME=value" strings: the variables set inside the container
    gpus: str | None      # "nvidia", "amd" or None
    devices: tuple        # the worker's GPU devices ("3",); () when none are named
    exp_id: str
    run_id: str
    extra: tuple = ()     # [model].container_args, before the image

    def action_args(self, devices):
        """IMPROVE's action script and its arguments, with ``devices`` as seen inside."""
        return [f"{self.action}.sh", ",".join(devices), DATA, "--params_file", PARAMS,
                "--experiment_id", self.exp_id, "--run_id", self.run_id]


def words(flag, values):
    """``flag`` before each of ``values``: joined to it when it ends in ``=``, else apart."""
    return [w for v in values for w in ([flag + v] if flag.endswith("=") else [flag, v])]


class Runtime:
    """A container runtime: its executable and the argument list of one :class:`Launch`."""

    gpu_flags = {}  # "nvidia"/"amd" -> options

    def __init__(self, name, executable=None):
        self.name, self.executable = name, executable or name

    def command(self, launch):
        """The whole argument list that runs ``launch``."""
        raise NotImplementedError

    def gpu_args(self, launch):
        """The options that give the container the worker's GPUs."""
        if launch.gpus is None:
            return []
        if launch.gpus not in self.gpu_flags:
            raise EvaluationFailed(str(ConfigError(GPUS_SETTING, f"{self.name} has no flags "
                                                   f"for {launch.gpus} GPUs", launch.gpus)))
        return list(self.gpu_flags[launch.gpus])

    def check_image(self, image):
        """The image as the runtime will be given it (a path made absolute); a ConfigError
        when it names a file that is not there."""
        if "://" in image:
            return image  # docker://, oras://, library://: the runtime fetches it
        if not os.path.exists(image):
            raise ConfigError(IMAGE_SETTING, f"must be an existing image file or directory "
                              f"({self.name})", image)
        return os.path.abspath(image)


class Apptainer(Runtime):
    """``apptainer exec`` / ``singularity exec`` (Frontier, Polaris, Aurora, Supervisor)."""

    gpu_flags = {"nvidia": ["--nv"], "amd": ["--rocm"]}

    def command(self, launch):
        return [self.executable, "exec", *self.gpu_args(launch), *words("--bind", launch.binds),
                "--pwd", RUN, *words("--env", launch.env), *launch.extra, launch.image,
                *launch.action_args(launch.devices)]


class Charliecloud(Runtime):
    """``ch-run`` on a directory or SquashFS image (LANL). GPUs need no flag: the image holds
    the host's driver libraries (``ch-fromhost --nvidia``) and the device variables pass."""

    gpu_flags = {"nvidia": [], "amd": []}

    def command(self, launch):
        return [self.executable, *words("--bind=", launch.binds), f"--cd={RUN}",
                "--env-no-expand", *words("--set-env=", launch.env), *launch.extra,
                launch.image, "--", *launch.action_args(launch.devices)]


class Podman(Runtime):
    """``podman run`` (and NERSC's ``podman-hpc run``); a directory image is a ``--rootfs``.
    NVIDIA GPUs are CDI devices: the container sees only those, numbered from 0."""

    gpu_flags = {"nvidia": [], "amd": ["--device", "/dev/kfd", "--device", "/dev/dri"]}

    def command(self, launch):
        image = ["--rootfs", launch.image] if os.path.isdir(launch.image) else [launch.image]
        return [self.executable, "run", "--rm", *self.gpu_args(launch),
                *words("--volume", launch.binds), "--workdir", RUN, *words("--env", launch.env),
                *launch.extra, *image, *launch.action_args(self.guest_devices(launch))]

    def gpu_args(self, launch):
        if launch.gpus != "nvidia":
            return super().gpu_args(launch)
        return [arg for device in launch.devices or ("all",)
                for arg in ("--device", f"nvidia.com/gpu={device}")]

    def guest_devices(self, launch):
        """The devices as the container numbers them."""
        if launch.gpus == "nvidia":
            return tuple(str(i) for i in range(len(launch.devices)))
        return launch.devices

    def check_image(self, image):
        if image.startswith(("/", "./", "../")):
            return super().check_image(image)
        return image  # a registry name, which podman pulls


class PodmanHPC(Podman):
    """NERSC's ``podman-hpc run`` (Perlmutter): ``--gpu`` gives every GPU of the node."""

    def gpu_args(self, launch):
        return ["--gpu"] if launch.gpus == "nvidia" else super().gpu_args(launch)

    def guest_devices(self, launch):
        return launch.devices


class Shifter(Runtime):
    """``shifter --image=...`` (NERSC); the image is a Shifter name (``docker:repo/name:tag``)."""

    gpu_flags = {"nvidia": ["--module=gpu"]}

    def command(self, launch):
        return [self.executable, f"--image={launch.image}", *self.gpu_args(launch),
                *words("--volume=", launch.binds), f"--workdir={RUN}",
                *words("--env=", launch.env), *launch.extra, "--",
                *launch.action_args(launch.devices)]

    def check_image(self, image):
        return image  # names an image in Shifter's gateway, not a file


RUNTIMES = {"apptainer": Apptainer("apptainer"), "singularity": Apptainer("singularity"),
            "charliecloud": Charliecloud("charliecloud", "ch-run"),
            "podman": Podman("podman"), "podman-hpc": PodmanHPC("podman-hpc"),
            "shifter": Shifter("shifter")}


def find_runtime(name):
    """The :class:`Runtime` called ``name`` (None: the first of :data:`CONTAINER_RUNTIMES`
    on PATH); a ConfigError naming the setting when it is unknown or not installed."""
    if not name:
        name = next((n for n in CONTAINER_RUNTIMES if shutil.which(RUNTIMES[n].executable)),
                    None)
        if name is None:
            raise ConfigError(RUNTIME_SETTING, "must name an installed runtime: none of "
                              f"{list(CONTAINER_RUNTIMES)} is on PATH", None, show_value=False)
    check(RUNTIME_SETTING, SCHEMA["model"]["container_runtime"].rule, name)
    runtime = RUNTIMES[name]
    if not shutil.which(runtime.executable):
        raise ConfigError(RUNTIME_SETTING, f"must name an installed runtime: "
                          f"{runtime.executable} is not on PATH", name)
    return runtime


def image_of(env):
    """The model's image: ``CANDLE_IMAGE``, else (Supervisor's form, with
    ``CANDLE_MODEL_TYPE=SINGULARITY``) ``MODEL_NAME``."""
    image = env.get("CANDLE_IMAGE") or ""
    if image in NO_IMAGE and env.get("CANDLE_MODEL_TYPE") == "SINGULARITY":
        image = env.get("MODEL_NAME") or ""
    if image in NO_IMAGE:
        raise ConfigError(IMAGE_SETTING, "the container implementation needs the model's "
                          "image (or MODEL_NAME=/path/model.sif with "
                          "CANDLE_MODEL_TYPE=SINGULARITY)", image or None)
    return image


def gpu_kind(setting, environ):
    """``nvidia``, ``amd`` or None from ``[model].container_gpus``. ``auto``: from the
    worker's device variable, else from the node's device files (:data:`NODE_DEVICES`)."""
    check(GPUS_SETTING, SCHEMA["model"]["container_gpus"].rule, setting)
    if setting == "auto":
        setting = next((kind for kind, name in KIND_VARIABLES.items() if environ.get(name)),
                       None) or next((kind for kind, path in NODE_DEVICES.items()
                                      if os.path.exists(path)), "none")
    return None if setting == "none" else setting


@dataclass(frozen=True)
class ContainerCommand:
    """A configured container runtime and image: the argument list of each run."""

    runtime: Runtime
    image: str
    action: str = "train"
    gpus: str = "auto"
    extra: tuple = ()

    @classmethod
    def from_env(cls, env, gpus_default="auto"):
        """Read ``CANDLE_IMAGE`` (or ``MODEL_NAME``), ``MODEL_ACTION``,
        ``CANDLE_CONTAINER_RUNTIME``, ``CANDLE_CONTAINER_GPUS`` and ``CANDLE_CONTAINER_ARGS``
        (a JSON list); each bad one is a ConfigError naming it."""
        runtime = find_runtime(env.get("CANDLE_CONTAINER_RUNTIME"))
        image = runtime.check_image(image_of(env))
        gpus = env.get("CANDLE_CONTAINER_GPUS") or gpus_default
        gpu_kind(gpus, {})  # checks the setting now; "auto" is decided per run
        try:
            extra = json.loads(env.get("CANDLE_CONTAINER_ARGS") or "[]")
        except json.JSONDecodeError:
            extra = None
        if not isinstance(extra, list) or not all(isinstance(a, str) for a in extra):
            raise ConfigError("[model].container_args (CANDLE_CONTAINER_ARGS)",
                              "must be a JSON list of strings", env.get("CANDLE_CONTAINER_ARGS"))
        return cls(runtime, image, env.get("MODEL_ACTION") or "train", gpus, tuple(extra))

    def command(self, run_dir, data_dir, exp_id, run_id, environ=None, devices=None,
                checkpoint_dir=None, segment=None):
        """The argument list for one run. ``devices`` (default: the worker's device
        variable in ``environ``) is the action script's first argument; ``checkpoint_dir``
        (the point's) is bound at :data:`CHECKPOINTS`, its mount point made in ``run_dir``;
        ``segment`` holds a segment's steps to train from and to (:mod:`.handoff`'s
        variables)."""
        environ = os.environ if environ is None else environ
        binds = [("CANDLE_DATA_DIR", data_dir, DATA), ("run directory", run_dir, RUN)]
        # the variables set inside: paths as the container sees them
        env = {"CANDLE_DATA_DIR": DATA, "EMEWS_RUN_DIR": RUN, "EMEWS_PARAMS_FILE": PARAMS,
               "EXP_ID": exp_id, "RUN_ID": run_id}
        if checkpoint_dir is not None:
            binds.append(("checkpoint directory", checkpoint_dir, CHECKPOINTS))
            env["EMEWS_CHECKPOINT_DIR"] = CHECKPOINTS
        for where, path, _ in binds:
            if ":" in str(path) or "," in str(path):
                raise EvaluationFailed(str(ConfigError(where, "a path bound into a container "
                                                       "must not contain ':' or ','", str(path))))
        if checkpoint_dir is not None:
            os.makedirs(os.path.join(run_dir, os.path.basename(CHECKPOINTS)), exist_ok=True)
        kind = gpu_kind(self.gpus, environ)
        if devices is None:
            # without GPU flags, any device variable (Intel's GPUs need none: Aurora)
            names = [KIND_VARIABLES[kind]] if kind else DEVICE_VARIABLES
            devices = next((environ[name] for name in names if environ.get(name)), "")
        env.update(segment or {})
        launch = Launch(self.image, self.action,
                        tuple(f"{host}:{guest}" for _, host, guest in binds),
                        tuple(f"{name}={value}" for name, value in env.items()), kind,
                        tuple(d.strip() for d in str(devices).split(",") if d.strip()),
                        exp_id, run_id, self.extra)
        return self.runtime.command(launch)


class Container(Implementation):
    """Run the model image's action script through the Model Shell."""

    def __init__(self, model_env, expdir):
        self.container = ContainerCommand.from_env(model_env)
        self.model_env, self.expdir = model_env, expdir

    def run(self, params, params_json, context, watch):
        data_dir = self.model_env.get("CANDLE_DATA_DIR") or str(self.expdir)
        command = self.container.command(context.run_dir, os.path.abspath(data_dir),
                                         context.exp_id, context.run_id,
                                         checkpoint_dir=context.checkpoint_dir,
                                         segment=segment_variables(context.env))
        env = context.env
        if not os.environ.get("USER"):  # ch-run refuses to start without it
            env = dict(env, USER=pwd.getpwuid(os.getuid()).pw_name)
        log = run_model_shell(command, params_json, context, env, watch)
        return read_app_result(None, log, self.model_env.get("MODEL_RETURN"))


def main(args):
    """``python -m emews.evaluate container-command IMAGE ACTION DEVICES RUN_DIR EXPID
    RUNID``: print the runtime's argument list, each word followed by NUL (model.sh reads it with
    ``mapfile -d ''``). The runtime, GPUs (default ``nvidia``, Supervisor's ``--nv``) and
    extra options come from the environment, as for :class:`ContainerCommand`, and so does
    the point's checkpoint directory, where emews names one (``EMEWS_CHECKPOINT_DIR``)."""
    if len(args) != 6:
        print("usage: python -m emews.evaluate container-command IMAGE ACTION DEVICES RUN_DIR "
              "EXPID RUNID", file=sys.stderr)
        return 2
    image, action, devices, run_dir, exp_id, run_id = args
    env = dict(os.environ, CANDLE_IMAGE=image, MODEL_ACTION=action)
    try:
        container = ContainerCommand.from_env(env, gpus_default="nvidia")
        command = container.command(run_dir, env.get("CANDLE_DATA_DIR") or ".", exp_id,
                                    run_id, env, devices, env.get("EMEWS_CHECKPOINT_DIR"),
                                    segment_variables(env))
    except (ConfigError, EvaluationFailed) as exc:
        print(f"emews.evaluate container-command: error: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write("".join(f"{word}\0" for word in command))
    return 0
