"""The checkpoint handoff of population-based training and freeze-thaw: a segment's start
checkpoint, copied once (through a ``.partial`` directory renamed into place, so that a run
killed mid-segment and run again keeps what it saved) into ``EXPDIR/checkpoints/RUN_ID``.
docs/src/pbt.md ("The model: a segment") shows the files and the member's log lines, and says
why the study and its pools must share ``EXPDIR``'s filesystem (:func:`mark_unshared`). A
thawed run (:mod:`emews.core._thaw`) is a segment whose directory exists already.
"""

import errno
import fcntl
import os
import shutil
import time
from pathlib import Path

from ..core._segments import checked
from ._base import EvaluationFailed

TRAIN_UNTIL = "EMEWS_TRAIN_UNTIL"
TRAIN_FROM = "EMEWS_TRAIN_FROM"
FICLONE = 0x40049409     # linux/fs.h: _IOW(0x94, 9, int)
UNSHARED = "unshared-expdir.txt"   # in a pool's own directory: the study's, not seen there


def prepare(context, record):
    """Give the run of segment ``record`` its start checkpoint, its step to train to
    (``context.env[TRAIN_UNTIL]``) and the step it starts from (``TRAIN_FROM``); raise
    :class:`EvaluationFailed` when its own start checkpoint is missing."""
    try:
        record = checked(record)
    except ValueError as exc:
        raise EvaluationFailed(str(exc)) from None
    unshared = Path(context.expdir) / UNSHARED
    if unshared.exists():
        raise EvaluationFailed(
            f"segment {record['name']}: this pool cannot see the study's experiment directory "
            f"{unshared.read_text().strip()} (it writes to {context.expdir}): checkpoints are "
            f"handed over through a filesystem that the study and its pools share")
    root = Path(context.expdir) / "checkpoints"
    directory = root / context.run_id.split("-")[0]
    if not directory.exists():
        start = _start(root, record, _member_log(context, record["member"]))
        partial = directory.with_name(directory.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        if start is None:
            partial.mkdir(parents=True)
        else:
            shutil.copytree(start, partial, symlinks=True, copy_function=clone)
        os.replace(partial, directory)
    _link(root / "segments" / record["name"], directory)
    context.env[TRAIN_UNTIL] = str(record["until"])
    context.env[TRAIN_FROM] = str(record["start"])


def segment_variables(env):
    """The steps a segment's model is told (``TRAIN_FROM``, ``TRAIN_UNTIL``) as ``env`` holds
    them: none for a run that is not a segment."""
    return {name: env[name] for name in (TRAIN_FROM, TRAIN_UNTIL) if name in env}


def mark_unshared(workdir, expdir):
    """Mark ``workdir``, where a pool that cannot see the study's experiment directory
    ``expdir`` writes instead, so that its segments fail (see the module docstring)."""
    (Path(workdir) / UNSHARED).write_text(f"{expdir}\n")


def _start(root, record, log):
    """The directory the segment starts from (``None``: its member's first, from nothing),
    after one line in the member's ``log`` saying which."""
    own, name = record["parent"], record["name"]
    line = f"{name}: goes on from {own}" if own else f"{name}: starts from nothing"
    if record["donor"] is not None:
        donor = root / "segments" / record["donor"]
        problem = _unreadable(donor)
        if problem is None:
            log(f"{name}: exploit: starts from {record['donor']}'s checkpoint "
                f"({os.readlink(donor)}), step {record['start']}")
            return donor.resolve()
        line = f"{name}: the donor {record['donor']}'s checkpoint {problem}: goes on from " \
               f"its own, {own}"
    if own is not None and (problem := _unreadable(root / "segments" / own)) is not None:
        raise EvaluationFailed(f"segment {name}: the member's own checkpoint {own} {problem}")
    log(line)
    return None if own is None else (root / "segments" / own).resolve()


def _unreadable(link):
    """Why the checkpoint directory ``link`` names cannot be copied, or ``None``."""
    if not link.exists():
        return "is missing"
    if not link.is_dir():
        return "is not a directory"
    for path in [link, *link.rglob("*")]:
        if not os.access(path, os.R_OK | (os.X_OK if path.is_dir() else 0)):
            return f"cannot be read ({path.name})"
    return None


def _link(link, directory):
    """Point ``link`` at ``directory`` (relative, replaced at once)."""
    link.parent.mkdir(parents=True, exist_ok=True)
    fresh = link.with_name(f".{link.name}.{os.getpid()}")
    fresh.unlink(missing_ok=True)
    fresh.symlink_to(os.path.relpath(directory, link.parent))
    os.replace(fresh, link)


def _member_log(context, member):
    """A function that appends a line to the member's log, ``EXPDIR/run/memberN.log``."""
    path = Path(context.expdir) / "run" / f"member{member}.log"

    def log(line):
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as out:
            out.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {context.run_id} {line}\n")
    return log


def clone(source, target):
    """Copy the file ``source`` to ``target``: a copy-on-write clone where the filesystem
    makes one (btrfs, XFS, ...), else a plain copy."""
    with open(source, "rb") as src, open(target, "wb") as dst:
        try:
            fcntl.ioctl(dst.fileno(), FICLONE, src.fileno())
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.ENOTTY, errno.EXDEV, errno.EINVAL,
                                 errno.ENOSYS, errno.EBADF, errno.EPERM):
                raise
            shutil.copyfileobj(src, dst, 1 << 20)
    shutil.copystat(source, target)
    return target
