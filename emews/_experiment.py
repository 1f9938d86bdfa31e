"""Experiment directories: ``<CANDLE_DATA_DIR or ./experiments>/<workflow>/EXPnnn/``, whose
files docs/src/faults.md lists ("What a study leaves behind"). The study's state is in its
store (``results.db``, :mod:`emews.store._base`); ``final.json``, ``service.json`` (a served
study) and ``submit.json`` (submitted jobs) export parts of it for users, never read back.
"""

import json
import re
from pathlib import Path

from ._config import Config
from ._errors import ConfigError
from .store import read_once, study_store

EXP_PATTERN = re.compile(r"EXP(\d+)$")


def create(data_dir, workflow, numbering="emews", expid=None):
    """Make the next free ``EXPnnn`` under ``data_dir/workflow`` (safe against races), or the
    directory ``expid`` there when it is named (made already, it must hold no study).
    ``numbering`` (``[study] experiment_numbering``): ``emews`` takes one more than the highest
    number there (``EXP001`` first); ``supervisor`` takes the lowest free number from
    ``EXP000``, as Supervisor's ``get_expid -a`` (workflows/common/sh/utils.sh) does."""
    _check_directory_name("[study].name", workflow)
    if expid is not None:
        _check_directory_name("[study].expid", expid)
    parent = Path(data_dir) / workflow
    try:
        parent.mkdir(parents=True, exist_ok=True)
        return _numbered(parent, numbering) if expid is None else _named(parent, expid)
    except OSError as exc:
        raise ConfigError(str(exc.filename or parent), "the experiment directory must be "
                          f"creatable there ({exc.strerror})", None, show_value=False) from None


def _numbered(parent, numbering):
    numbers = [int(m.group(1)) for p in parent.iterdir() if (m := EXP_PATTERN.match(p.name))]
    number = 0 if numbering == "supervisor" else max(numbers, default=0) + 1
    while True:
        path = parent / f"EXP{number:03d}"
        try:
            path.mkdir()
        except FileExistsError:   # taken: by a study, or by a race with another one
            number += 1
            continue
        (path / "out").mkdir()
        return path


def _check_directory_name(field, name):
    """Refuse a name that is not one directory's: empty, ``.``/``..``, with a ``/``, or over
    the file systems' 255 bytes."""
    if not name or "/" in name or name in (".", "..") or len(name.encode()) > 255:
        raise ConfigError(field, "must name one directory (not empty, '.' or '..', no '/', at "
                          "most 255 bytes)", name if len(name) <= 40 else name[:40] + "...")


def _named(parent, expid):
    path = parent / expid
    if (path / "config.json").exists():
        raise ConfigError(str(path), "holds a study already: name another EXPID, or -a for "
                          "the next free one", expid, show_value=False)
    (path / "out").mkdir(parents=True, exist_ok=True)
    return path


def write_json(path, data):
    """Write ``data`` as indented JSON, atomically (write then rename)."""
    path = Path(path)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str) + "\n")
    tmp.replace(path)


def load_experiment(expdir):
    """The configuration as run, from ``EXPDIR/config.json`` (already resolved: the
    environment does not apply again)."""
    return Config.read(Path(expdir) / "config.json")


def open_store(expdir, spec=None):
    """The store of the experiment in ``expdir`` (which must hold it), for a command that
    writes the study's state (``emews pause``, ``emews submit``); ``spec`` is the study's
    :class:`~emews._config.Config` (``None``: read from its ``config.json``)."""
    spec = load_experiment(expdir) if spec is None else spec
    return study_store(expdir, spec.system.storage, create=False)


def read_store(expdir, reading, spec=None):
    """``reading(store)`` on the store of the experiment in ``expdir``, opened read-only for
    it alone (never written through, never migrated) and closed; ``spec`` as for
    :func:`open_store`."""
    spec = load_experiment(expdir) if spec is None else spec
    return read_once(expdir, spec.system.storage, reading)


