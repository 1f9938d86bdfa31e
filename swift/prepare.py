"""Prepare a Swift/T run of emews.core.me: check its settings, then make its experiment directory.

Usage (workflow.sh runs it)::

    python prepare.py DATA_DIR WORKFLOW SETTINGS_JSON
    python prepare.py --resume EXPDIR

Checks that the settings name a known algorithm with options that fit it, a readable search
space and batch mode (the only mode workflow.swift speaks), and that the objective the
environment describes (CANDLE_MODEL_IMPL, EMEWS_OBJECTIVE, EMEWS_APP, ...) can be built. Then
makes ``DATA_DIR/WORKFLOW/EXPnnn/`` (with ``out/``), writes the settings there as
``settings.json`` (a relative ``space`` path made absolute, relative to the settings file), the
study as ``config.json`` (as ``emews run`` does, for ``emews show``) and an empty store,
``results.db``, and prints that directory.
With ``--resume`` (``workflow.sh --resume EXPDIR``) it continues a killed (or finished)
study in ``EXPDIR`` instead, as ``emews run --resume`` does: what the killed run left unfinished
is marked ``interrupted`` in the store, and ``settings-resume.json`` (the ME's settings, which
``EMEWS_SETTINGS`` names) tells the ME every finished evaluation (``history``, so that the
budget counts them) and has it propose the interrupted points first (``pending``), each of
which ``emews_swift`` runs again under its own row; a seeded search gets a new seed, so that it
does not propose its first points again.
Bad input: one line naming the file or field, the rule and the value, and exit status 2.
"""

import json
import os
import sys
from pathlib import Path

from emews import evaluate, experiment
from emews.core.algorithm import load
from emews.core.criteria import Criteria
from emews.errors import ConfigError, EmewsError
from emews.core.me import build_algorithm
from emews.store import SQLiteStore


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


def check_algorithm(settings, path):
    """Build the algorithm once, as emews.core.me will; errors name the settings file."""
    load(settings["algorithm"], f"{path}: algorithm")
    try:
        build_algorithm(settings)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc.where}", str(exc)[len(exc.where) + 2:], None,
                          show_value=False) from None
    except TypeError as exc:
        raise ConfigError(f"{path}: options", f"must fit the algorithm "
                          f"{settings['algorithm']!r} ({exc})", None, show_value=False) from None


def with_objectives(settings, path):
    """The settings, their algorithm's options with ``objectives=k`` for a study of ``k > 1``
    objectives (``MODEL_RETURN`` a comma-separated list), as emews run builds it; the
    objectives' settings (``directions``, ``constraints``) checked, errors naming ``path``."""
    try:
        k = len(Criteria.from_study(study_config(settings)["study"]).names)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc.where}", str(exc)[len(exc.where) + 2:], None,
                          show_value=False) from None
    if k > 1:
        settings["options"] = {**settings.get("options", {}), "objectives": k}
    return settings


def study_config(settings):
    """config.json: the study as emews run records it, for emews show, status and report; and
    this workflow.sh, which ``emews run --resume`` runs again (``--resume``)."""
    env = os.environ
    study = {"algorithm": settings["algorithm"], "options": settings.get("options", {}),
             "mode": "batch", "seed": settings.get("seed"),
             "batch_size": settings.get("batch_size"),
             "impl": env.get("CANDLE_MODEL_IMPL", "py"), "objective": env.get("EMEWS_OBJECTIVE"),
             "model_name": env.get("MODEL_NAME", "model"),
             "model_return": env.get("MODEL_RETURN", "val_loss"),
             **{key: settings[key] for key in ("directions", "constraints") if key in settings},
             **settings.get("stop", {})}
    if isinstance(settings.get("space"), str):
        study["space"] = settings["space"]
    return {"study": study, "driver": "swift-t",
            "workflow": str(Path(__file__).resolve().parent / "workflow.sh")}


def resume(expdir):
    """Mark what a killed run left unfinished ``interrupted``; write the ME's settings for the
    resumed run, ``settings-resume.json``; return the experiment directory."""
    expdir = Path(expdir).resolve()
    if not (expdir / "results.db").is_file():
        raise ConfigError(str(expdir), "--resume needs an experiment directory of workflow.sh "
                          "(holding settings.json and results.db)", None, show_value=False)
    settings = read_settings(expdir / "settings.json")
    check_algorithm(settings, expdir / "settings.json")
    evaluate.from_env()
    store = SQLiteStore(expdir / "results.db", create=False)
    try:
        interrupted = store.interrupt_unfinished()
        finished = store.rows("done", "failed")
        resumes = store.meta("resumes", 0) + 1
        store.set_meta("resumes", resumes)
        store.commit()
    finally:
        store.close()
    settings["history"] = [[row["params"], row["result"] if row["status"] == "done" else None]
                           for row in finished]
    settings["pending"] = [row["params"] for row in interrupted]
    if settings.get("seed") is not None:
        settings["seed"] += 7919 * resumes   # as emews run --resume: no replayed proposals
    experiment.write_json(expdir / "settings-resume.json", settings)
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
        print("usage: python prepare.py DATA_DIR WORKFLOW SETTINGS_JSON | --resume EXPDIR",
              file=sys.stderr)
        return 2
    data_dir, workflow, settings_path = argv
    try:
        settings = with_objectives(read_settings(settings_path), settings_path)
        check_algorithm(settings, settings_path)
        evaluate.from_env()
    except EmewsError as exc:
        print(f"workflow.sh: {exc}", file=sys.stderr)
        return 2
    expdir = experiment.create(data_dir, workflow)
    experiment.write_json(expdir / "settings.json", settings)
    experiment.write_json(expdir / "config.json", study_config(settings))
    SQLiteStore(expdir / "results.db").close()  # emews show works on it from the start
    print(expdir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
