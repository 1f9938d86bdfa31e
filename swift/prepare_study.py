"""Prepare a Swift/T run of emews.core._me: check its settings, then make its experiment directory.

Usage (workflow.sh runs it)::

    python prepare_study.py DATA_DIR WORKFLOW SETTINGS_JSON
    python prepare_study.py --resume EXPDIR

Checks that the settings name a known algorithm with options that fit it, a readable search
space and batch mode (the only mode workflow.swift speaks), and that the objective the
environment describes (CANDLE_MODEL_IMPL, EMEWS_OBJECTIVE, EMEWS_APP, ...) can be built. Then
makes ``DATA_DIR/WORKFLOW/EXPnnn/`` (with ``out/``), writes the study there as ``config.json``,
the configuration ``emews run`` records (a space given inline in ``space.json``), and a store,
``results.db``, empty but for its ``driver`` row (this workflow.sh, which ``emews run
--resume`` runs again), and prints that directory. The ME's rank runs the study's master from
``config.json`` as ``emews run`` does (``emews_swift``).

The settings are emews.core._me's (``algorithm``, ``options``, ``space``, ``seed``,
``batch_size``, ``stop``, ``directions``, ``constraints``) and the study's: ``failure`` (the
``[failure]`` table: retries, on_failure, penalty), ``pruner`` (``[study] pruner``) and
``pruner_options`` (the ``[pruner]`` table).

With ``--resume`` (``workflow.sh --resume EXPDIR``) it checks that ``EXPDIR`` holds a study
of workflow.sh and prints it: the master then resumes it as ``emews run --resume`` does
(:mod:`emews.core._resume`).
Bad input: one line naming the file or field, the rule and the value, and exit status 2.
"""

import json
import os
import shutil
import sys
from pathlib import Path

from emews import _config as configuration
from emews import evaluate, _experiment as experiment
from emews.core._algorithm import load
from emews._errors import ConfigError, EmewsError
from emews._space import Space
from emews.core._me import build_algorithm
from emews.core._resume import search_settings
from emews.store import SQLiteStore


DRIVER = {"name": "swift-t", "workflow": str(Path(__file__).resolve().parent / "workflow.sh")}


def read_settings(path):
    """The settings dict of ``path``, checked for what workflow.swift needs."""
    path = Path(path)
    try:
        settings = json.loads(path.read_text())
    except OSError as exc:
        raise ConfigError(str(path), "the settings file must be readable", exc.strerror) from None
    except json.JSONDecodeError as exc:
        raise ConfigError(str(path), f"must be JSON ({exc.msg}, line {exc.lineno})",
                          None, show_value=False) from None
    if not isinstance(settings, dict):
        raise ConfigError(str(path), "must hold a JSON object", type(settings).__name__)
    if "algorithm" not in settings:
        raise ConfigError(f"{path}: algorithm", "must name the ME's algorithm", None)
    if settings.get("mode", "batch") != "batch":
        raise ConfigError(f"{path}: mode", "must be 'batch': workflow.swift answers each "
                          "batch of points with positional results", settings["mode"])
    space = settings.get("space")
    if isinstance(space, str) and not Path(space).is_absolute():
        settings["space"] = str((path.parent / space).resolve())
    return settings


def in_settings(exc, path):
    """``exc`` naming the settings file ``path`` first."""
    return ConfigError(f"{path}: {exc.where}", str(exc)[len(exc.where) + 2:], None,
                       show_value=False)


def study_spec(settings, space, path):
    """The study as emews run specifies it (``space``: the space's file), read from the
    settings and the environment (``MODEL_RETURN``, ``EMEWS_OBJECTIVE``); errors name
    ``path``."""
    study = {"algorithm": settings["algorithm"], "space": space, "mode": "batch",
             "seed": settings.get("seed"), "batch_size": settings.get("batch_size"),
             "objective": os.environ.get("EMEWS_OBJECTIVE"),
             **{key: settings[key] for key in ("directions", "constraints", "pruner")
                if key in settings},
             **settings.get("stop", {})}
    data = {"study": study, "algorithm": settings.get("options", {}),
            "failure": settings.get("failure", {}), "pruner": settings.get("pruner_options", {})}
    try:
        return configuration.load([data])
    except ConfigError as exc:
        raise in_settings(exc, path) from None


def check_algorithm(cfg, space, path):
    """Build the algorithm once, as the study's master will, on ``space`` (``None``: the
    spec's file); errors name the settings file."""
    algorithm = load(cfg.study.algorithm, f"{path}: algorithm")
    try:
        build_algorithm(search_settings(cfg, cfg.study.seed), algorithm, space)
    except ConfigError as exc:
        raise in_settings(exc, path) from None
    except TypeError as exc:
        raise ConfigError(f"{path}: options", f"must fit the algorithm "
                          f"{cfg.study.algorithm!r} ({exc})", None, show_value=False) from None


def resume(expdir):
    """Check that ``expdir`` holds a study of workflow.sh (and that the objective can be built);
    return it."""
    expdir = Path(expdir).resolve()
    if not (expdir / "results.db").is_file() or not (expdir / "config.json").is_file():
        raise ConfigError(str(expdir), "--resume needs an experiment directory of workflow.sh "
                          "(holding config.json and results.db)", None, show_value=False)
    evaluate.from_env()
    return expdir


def main(argv):
    if len(argv) == 2 and argv[0] == "--resume":
        try:
            print(resume(argv[1]))
        except EmewsError as exc:
            print(f"workflow.sh: {exc}", file=sys.stderr)
            return 2
        return 0
    if len(argv) != 3:
        print("usage: python prepare_study.py DATA_DIR WORKFLOW SETTINGS_JSON | --resume EXPDIR",
              file=sys.stderr)
        return 2
    data_dir, workflow, settings_path = argv
    try:
        settings = read_settings(settings_path)
        space = settings.get("space")
        inline = Space.from_ga_json(space, settings_path) if isinstance(space, list) else None
        checked = study_spec(settings, space if inline is None else "space.json", settings_path)
        check_algorithm(checked, inline, settings_path)
        evaluate.from_env()
    except EmewsError as exc:
        print(f"workflow.sh: {exc}", file=sys.stderr)
        return 2
    expdir = experiment.create(data_dir, workflow)
    try:
        if inline is not None:
            space = str(expdir / "space.json")
            experiment.write_json(space, settings["space"])
        experiment.write_json(expdir / "config.json",
                              study_spec(settings, space, settings_path).as_dict())
    except EmewsError as exc:
        shutil.rmtree(expdir)
        print(f"workflow.sh: {exc}", file=sys.stderr)
        return 2
    store = SQLiteStore(expdir / "results.db")  # emews show works on it from the start
    store.set_meta("driver", DRIVER)  # emews run --resume runs this workflow.sh again
    store.commit()
    store.close()
    print(expdir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
