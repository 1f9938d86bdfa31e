"""A real container image for the Charliecloud tests, made once per machine and cached.

Debian 12 has no Apptainer, but it has Charliecloud's ``ch-run`` (``charliecloud-runtime``)
and ``debootstrap`` (``.ci/apt-packages``). The base image is ``debootstrap --variant=minbase
bookworm``, a 206 MB directory (30 s to 4 min, the network's speed), built once into
``~/.cache/emews/test-images/bookworm-minbase`` (``EMEWS_TEST_IMAGE_CACHE`` names another
directory) under a file lock, in a temporary directory renamed into place when complete.

The model image is that base, hard-linked (``cp -al``, a second), plus the files of
``tests/support/container/charliecloud/`` in ``/usr/local/bin``, a marker
``/etc/emews-test-image`` holding the image's name, and the bind-mount targets
``/candle_data_dir`` and ``/emews_run``. Its name carries a hash of those files, so a changed
``train.sh`` makes a new image. ``ch-run`` mounts it read-only, so the shared files stay as the
base has them. :func:`squashfs_image` packs it into a SquashFS file beside it (uncompressed,
seconds), once.
"""

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
MODEL_FILES = Path(__file__).resolve().parent / "container" / "charliecloud"
BASE = "bookworm-minbase"
MIRROR = "http://deb.debian.org/debian"


def cache_directory():
    """Where the images are kept: ``EMEWS_TEST_IMAGE_CACHE``, else
    ``~/.cache/emews/test-images``."""
    path = os.environ.get("EMEWS_TEST_IMAGE_CACHE") or Path.home() / ".cache" / "emews" / \
        "test-images"
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    return path


def missing_reason():
    """Why no Charliecloud container can start here, or ``None``. As root (CI, the development
    machines) missing packages are installed with ``scripts/apt-deps.sh``."""
    missing = [name for name in ("ch-run", "debootstrap", "mksquashfs")
               if not shutil.which(name) and not Path("/usr/sbin", name).exists()]
    if missing and os.geteuid() == 0:
        subprocess.run(["bash", str(REPO / "scripts" / "apt-deps.sh")], check=True)
        return None
    if missing:
        return (f"no Charliecloud image here ({', '.join(missing)} not found) and not root to "
                "install them (apt: charliecloud-runtime debootstrap squashfs-tools)")
    if os.geteuid() != 0:
        return "building the Debian image with debootstrap needs root"
    return None


def mirror():
    """The Debian mirror apt uses here (``/etc/apt/sources.list.d/debian.sources``)."""
    try:
        for line in Path("/etc/apt/sources.list.d/debian.sources").read_text().splitlines():
            if line.startswith("URIs:") and "security" not in line:
                return line.split()[1]
    except OSError:
        pass
    return MIRROR


@contextmanager
def locked(path):
    """Hold an exclusive lock on the file ``path`` (one builder per machine)."""
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def base_image(cache):
    """The cached Debian minbase directory image, built first if missing."""
    image = cache / BASE
    with locked(cache / f"{BASE}.lock"):
        if not image.is_dir():
            building = Path(tempfile.mkdtemp(prefix=f"{BASE}.building-", dir=cache))
            done = subprocess.run(["debootstrap", "--variant=minbase", "bookworm",
                                   str(building), mirror()], capture_output=True, text=True)
            if done.returncode:
                shutil.rmtree(building, ignore_errors=True)
                raise RuntimeError(f"debootstrap failed ({done.returncode}): "
                                   f"{(done.stdout + done.stderr)[-2000:]}")
            building.rename(image)
    return image


def model_image(cache=None):
    """The directory image with the IMPROVE-style ``train.sh`` (see the module's docstring)."""
    cache = cache or cache_directory()
    files = sorted(MODEL_FILES.iterdir())
    digest = hashlib.sha256(b"".join(f.name.encode() + b"\0" + f.read_bytes() for f in files))
    name = f"{BASE}-model-{digest.hexdigest()[:12]}"
    image = cache / name
    with locked(cache / f"{name}.lock"):
        if not image.is_dir():
            base = base_image(cache)
            building = Path(tempfile.mkdtemp(prefix=f"{name}.building-", dir=cache))
            building.rmdir()
            subprocess.run(["cp", "-al", str(base), str(building)], check=True)
            for source in files:
                target = building / "usr" / "local" / "bin" / source.name
                shutil.copy2(source, target)  # a new file: the base's links stay as they are
            (building / "etc" / "emews-test-image").write_text(name + "\n")
            for mount in ("candle_data_dir", "emews_run"):
                (building / mount).mkdir()
            building.rename(image)
    return image


def squashfs_image(cache=None):
    """The model image as a SquashFS file (``mksquashfs``, squashfs-tools), which ``ch-run``
    mounts with FUSE; made once, beside the directory image."""
    directory = model_image(cache)
    image = directory.with_name(directory.name + ".sqfs")
    with locked(directory.with_name(directory.name + ".sqfs.lock")):
        if not image.is_file():
            building = image.with_name(image.name + ".building")
            subprocess.run(["mksquashfs", str(directory), str(building), "-noappend", "-quiet",
                            "-no-progress", "-noI", "-noD", "-noF", "-noX"], check=True,
                           stdout=subprocess.DEVNULL)
            building.rename(image)
    return image


@pytest.fixture(scope="session", name="charliecloud_image")
def charliecloud_image_fixture():
    """The path of the cached model image (skipped only without ch-run and without root)."""
    reason = missing_reason()
    return pytest.skip(reason) if reason else model_image()
