"""``emews swift-t build``: Swift/T (STC + Turbine) built from source with this Python embedded.

:func:`build` builds the pinned commit (:data:`COMMIT`: STC 1.0.8, Turbine 1.5.2) against the
system's MPICH, after a check of its prerequisites; docs/src/swift-t.md says how and where.
"""

import collections
import fcntl
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from .._errors import ConfigError, EmewsError

COMMIT = "e96b808e7839bfba6cc2f9541538cbe638fcab57"   # 2026-08-05: STC 1.0.8, Turbine 1.5.2
VERSION = COMMIT[:7]
URL = f"https://github.com/swift-lang/swift-t/archive/{COMMIT}.tar.gz"
URL_VARIABLE = "EMEWS_SWIFT_T_URL"   # another place to download the same archive from
# tree_digest() of the pinned commit's source
TREE_SHA256 = "da8c536856a8212f4993acfddc66517359307545d0d400f9cd145823da15ec42"
APT_LOCK_WAIT_S = 600
COMMAND = "emews swift-t build"
# a program the build runs, and the packages that bring it
Prerequisite = collections.namedtuple("Prerequisite", "program debian rpm conda")
PREREQUISITES = (
    Prerequisite("mpicc", "mpich libmpich-dev", "mpich-devel", "mpich"),
    Prerequisite("tclsh", "tcl tcl-dev", "tcl tcl-devel", "tk"),
    Prerequisite("javac", "default-jdk-headless", "java-17-openjdk-devel", "openjdk"),
    Prerequisite("ant", "ant", "ant", "ant"),
    Prerequisite("swig", "swig", "swig", "swig"),
    Prerequisite("zsh", "zsh", "zsh", "zsh"),
    Prerequisite("autoconf", "autoconf", "autoconf", "autoconf"),
    Prerequisite("automake", "automake", "automake", "automake"),
    Prerequisite("libtoolize", "libtool", "libtool", "libtool"),
    Prerequisite("make", "make", "make", "make"),
    Prerequisite("g++", "g++", "gcc-c++", "cxx-compiler"),
)


class MissingPrerequisites(EmewsError):
    """Programs the build needs are not on ``PATH``: ``missing``, their
    :class:`Prerequisite`, each named with its package."""

    def __init__(self, missing):
        super().__init__(f"{COMMAND}: the build needs programs that are not on PATH: " + ", ".join(
            f"{p.program} (Debian: {p.debian}; RPM: {p.rpm}; conda: {p.conda})" for p in missing))


def default_prefix():
    """``$XDG_DATA_HOME/emews/swift-t-<commit>-py<X.Y>`` (``~/.local/share`` by default)."""
    data = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(data) / "emews" / f"swift-t-{VERSION}-py{sys.version_info[0]}.{sys.version_info[1]}"


def path_entries(prefix):
    """The directories of ``swift-t`` (STC) and ``turbine`` under ``prefix``."""
    return [Path(prefix) / "stc" / "bin", Path(prefix) / "turbine" / "bin"]


def is_built(prefix):
    """Whether ``prefix`` holds a built ``swift-t``."""
    return os.access(Path(prefix) / "stc" / "bin" / "swift-t", os.X_OK)


def build_path():
    """``PATH`` for the build: without this virtualenv's ``bin``, whose ``mpicc`` (the mpich
    wheel's) would link ADLB against the wheel's MPI while Turbine links the system's."""
    own = Path(sys.prefix, "bin").resolve() if sys.prefix != sys.base_prefix else None
    return os.pathsep.join(entry for entry in os.environ.get("PATH", "").split(os.pathsep)
                           if entry and Path(entry).resolve() != own)


def missing_prerequisites():
    """The :class:`Prerequisite` whose program is not on :func:`build_path`."""
    path = build_path()
    return [item for item in PREREQUISITES if shutil.which(item.program, path=path) is None]


def build(source=None, prefix=None, apt=True):
    """Build Swift/T into ``prefix`` (default :func:`default_prefix`) from ``source`` (a tarball or
    a directory; default: download :data:`URL`) unless it is built there already; returns the
    directories to put on ``PATH``. ``apt``: as root, apt-get install what is missing."""
    prefix = Path(prefix or default_prefix()).expanduser().resolve()
    if is_built(prefix):
        return path_entries(prefix)
    if not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        raise EmewsError(f"{COMMAND}: Turbine embeds Python through its shared libpython, which "
                         f"{sys.executable} lacks; run it with a Python built with "
                         "--enable-shared (Debian's, python.org's, conda's, or a venv of one)")
    missing = missing_prerequisites()
    if missing and apt and os.geteuid() == 0 and shutil.which("apt-get"):
        packages = sorted({name for item in missing for name in item.debian.split()})
        _say(f"installing Debian packages: {' '.join(packages)}")
        _apt_install(packages)
        missing = missing_prerequisites()
    if missing:
        raise MissingPrerequisites(missing)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    with open(prefix.parent / f".{prefix.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)   # another build of the same prefix: wait for it
        if not is_built(prefix):
            with tempfile.TemporaryDirectory(prefix="emews-swift-t-") as work:
                tree = _source_tree(source, Path(work))
                _say(f"building Swift/T {VERSION} with {sys.executable} into {prefix}")
                _compile(tree, prefix)
    return path_entries(prefix)


def _say(line):
    """A progress line on stderr."""
    print(f"emews: {line}", file=sys.stderr, flush=True)


def _apt_install(packages):
    """``apt-get install`` ``packages``, waiting up to :data:`APT_LOCK_WAIT_S` for another apt
    that holds the dpkg lock."""
    wait = f"DPkg::Lock::Timeout={APT_LOCK_WAIT_S}"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for command in (["apt-get", "-o", wait, "update", "-qq"],
                    ["apt-get", "-o", wait, "install", "-y", "-qq", "--no-install-recommends",
                     *packages]):
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            last = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
            raise EmewsError(f"{COMMAND}: apt-get {command[3]} failed "
                             f"(exit {done.returncode}): {last}")


def tree_digest(tarball):
    """sha256 over a source tarball's files, links and directories (paths without the top
    directory, executable bits, contents, link targets): the same for any archive of one tree
    (GitHub's, ``git archive``'s), whatever its compression and top directory."""
    entries = []
    with tarfile.open(tarball) as archive:
        for member in archive:
            name = member.name.partition("/")[2]
            if not name:
                continue
            if member.isfile():
                content = hashlib.sha256(archive.extractfile(member).read()).hexdigest()
                entries.append((name, "x" if member.mode & 0o111 else "f", content))
            elif member.issym() or member.islnk():
                entries.append((name, "l", member.linkname))
            elif member.isdir():
                entries.append((name.rstrip("/"), "d", ""))
    digest = hashlib.sha256()
    for entry in sorted(entries):
        digest.update("\0".join(entry).encode() + b"\n")
    return digest.hexdigest()


def _source_tree(source, work):
    """The Swift/T source tree to build (a copy under ``work``: the build writes into it)."""
    if source is None:
        source = _download(work)
    source = Path(source).expanduser()
    unpacked = work / "src"
    if source.is_dir():
        shutil.copytree(source, unpacked, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    elif source.is_file():
        try:
            with tarfile.open(source) as archive:
                archive.extractall(unpacked, filter="data")
        except (tarfile.TarError, OSError) as exc:
            raise ConfigError(f"{COMMAND} --source", "must be a Swift/T source tarball or "
                              f"directory; unpacking it failed ({exc})", str(source)) from exc
    else:
        raise ConfigError(f"{COMMAND} --source", "must be a Swift/T source tarball or "
                          "directory, and there is no such file", str(source))
    for tree in (unpacked, *sorted(unpacked.iterdir())):
        if (tree / "dev" / "build" / "build-swift-t.sh").is_file():
            return tree
    raise ConfigError(f"{COMMAND} --source", "must hold Swift/T's source (dev/build/"
                      "build-swift-t.sh, at its top or in its one top directory)", str(source))


def _download(work):
    """The pinned commit's archive, downloaded into ``work`` and checked."""
    url = os.environ.get(URL_VARIABLE) or URL
    tarball = work / f"swift-t-{VERSION}.tar.gz"
    try:
        with urllib.request.urlopen(url, timeout=60) as response, open(tarball, "wb") as out:
            shutil.copyfileobj(response, out)
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise EmewsError(f"{COMMAND}: cannot download Swift/T from {url} ({reason}); offline, "
                         f"build from a copy of its source: {COMMAND} --source TARBALL|DIR "
                         f"(swift-lang/swift-t at commit {COMMIT})") from exc
    try:
        digest = tree_digest(tarball)
    except (tarfile.TarError, OSError) as exc:
        digest = f"no tarball: {exc}"
    if digest != TREE_SHA256:
        raise EmewsError(f"{COMMAND}: {url} is not Swift/T {VERSION}: its source tree's sha256 "
                         f"is {digest}, not {TREE_SHA256}; give its source with --source")
    _say(f"downloaded Swift/T {VERSION} from {url} (its sha256 checked)")
    return tarball


def _compile(tree, prefix):
    """Run Swift/T's own build (dev/build/build-swift-t.sh) of ``tree`` into ``prefix``."""
    env = dict(os.environ, PATH=build_path())
    probe = subprocess.run(["javac", "-Xlint:-this-escape", "-version"], env=env,
                           capture_output=True)
    if probe.returncode != 0:   # STC's build.xml passes it, which javac before 21 rejects
        build_xml = tree / "stc" / "code" / "build.xml"
        build_xml.write_text("".join(line for line in build_xml.read_text().splitlines(True)
                                     if "-Xlint:-this-escape" not in line))
    scripts = tree / "dev" / "build"
    (scripts / "swift-t-settings.sh").unlink(missing_ok=True)
    subprocess.run(["bash", "./init-settings.sh"], cwd=scripts, env=env, check=True,
                   capture_output=True)
    settings = scripts / "swift-t-settings.sh"
    settings.write_text(_settings(settings.read_text(), prefix))
    with tempfile.NamedTemporaryFile("w", prefix=f"emews-swift-t-{VERSION}-", suffix=".log",
                                     delete=False) as out:
        log = Path(out.name)
        done = subprocess.run(["bash", "./build-swift-t.sh"], cwd=scripts, env=env,
                              stdout=out, stderr=subprocess.STDOUT)
    if done.returncode != 0 or not is_built(prefix):
        tail = log.read_text(errors="replace").strip().splitlines()[-30:]
        print("\n".join(tail), file=sys.stderr)
        raise EmewsError(f"{COMMAND}: Swift/T's build failed (exit {done.returncode}); its log "
                         f"is {log}")
    log.unlink()
    subprocess.run([str(prefix / "stc" / "bin" / "swift-t"), "-v"], env=env, check=True,
                   capture_output=True)


def _settings(text, prefix):
    """Swift/T's swift-t-settings.sh with the prefix, embedded Python and parallel make set."""
    edits = ((r"^export SWIFT_T_PREFIX=.*$", f"export SWIFT_T_PREFIX={shlex.quote(str(prefix))}"),
             (r"^ENABLE_PYTHON=0$", "ENABLE_PYTHON=1"),
             (r"^# PYTHON_EXE=\$HOME.*$", f"PYTHON_EXE={shlex.quote(sys.executable)}"),
             (r"^MAKE_PARALLELISM=1$", f"MAKE_PARALLELISM={os.cpu_count() or 1}"))
    for pattern, line in edits:
        text, count = re.subn(pattern, lambda _match, line=line: line, text, count=1,
                              flags=re.MULTILINE)
        if count != 1:
            raise EmewsError(f"{COMMAND}: dev/build/swift-t-settings.sh of this source has no "
                             f"line matching {pattern!r} (another Swift/T version?)")
    return text
