"""Experiment directories: ``<CANDLE_DATA_DIR or ./experiments>/<workflow>/EXPnnn/``.

Each holds ``out/`` (one ``out-R.txt`` per rank), ``run/`` (one directory per run that needs
one), ``config.json`` (the configuration as run), ``settings.json`` (the ME's settings: a
classic EQ/Py module reads them at the handshake), ``results.db`` (the store) and, at the end,
``final.json``.
"""

import json
import re
from pathlib import Path

from .config import Config
from .errors import ConfigError

EXP_PATTERN = re.compile(r"EXP(\d+)$")


NUMBERINGS = ("emews", "supervisor")


def create(data_dir, workflow, numbering="emews", expid=None):
    """Make the next free ``EXPnnn`` under ``data_dir/workflow`` (safe against races), or the
    directory ``expid`` there when it is named (made already, it must hold no study).

    ``numbering`` (``[study] experiment_numbering``): ``emews`` takes one more than the highest
    number there (``EXP001`` first); ``supervisor`` takes the lowest free number from
    ``EXP000``, as Supervisor's ``get_expid -a`` (workflows/common/sh/utils.sh) does.
    """
    if numbering not in NUMBERINGS:
        raise ValueError(f"numbering must be one of {list(NUMBERINGS)}: {numbering!r}")
    parent = Path(data_dir) / workflow
    parent.mkdir(parents=True, exist_ok=True)
    if expid is not None:
        return _named(parent, expid)
    if numbering == "supervisor":
        number = 0
    else:
        numbers = [int(m.group(1)) for p in parent.iterdir()
                   if (m := EXP_PATTERN.match(p.name))]
        number = max(numbers, default=0) + 1
    while True:
        path = parent / f"EXP{number:03d}"
        try:
            path.mkdir()
        except FileExistsError:
            number += 1
            continue
        (path / "out").mkdir()
        return path


def _named(parent, expid):
    if not expid or "/" in expid or expid in (".", ".."):
        raise ConfigError("[study].expid", "must name a directory (no /)", expid)
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


def read_json(path):
    """Read a JSON file written by :func:`write_json`."""
    return json.loads(Path(path).read_text())


def load_experiment(expdir):
    """The configuration as run, from ``EXPDIR/config.json`` (already resolved: the
    environment does not apply again)."""
    return Config.read(Path(expdir) / "config.json")


