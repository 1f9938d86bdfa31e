"""The study's specification: one frozen, typed object, read back through the same type by a
process that starts later (a spawned rank, a resume), and never read back by the process that
prepared it."""

import dataclasses
import json
import sys

import pytest

import emews
from emews._config import Config, load
from emews._errors import ConfigError
from emews._experiment import load_experiment
from emews._prepare import prepare_run

from conftest import SUPPORT


@pytest.fixture
def prepared(study, tmp_path, monkeypatch):
    """A study prepared from a TOML file with a setting of every kind in it."""
    monkeypatch.syspath_prepend(str(SUPPORT))
    (tmp_path / "lib").mkdir()
    path = study(system={"pool": "inprocess", "procs": 3, "python_path": ["lib"],
                         "mpiexec_args": ["-bind-to", "none"]},
                 study={"budget": 4, "seed": 7, "objective": "toy_models:quadratic",
                        "data_dir": "runs", "timeout": 30, "constraints": ["x <= 1.5"]},
                 failure={"retries": 1, "on_failure": "fail"},
                 service={"lease": 5})
    done = prepare_run(path, {"study.tol": 0.5})
    yield done
    done.release()


def test_a_spec_is_frozen_and_typed(prepared):
    spec = prepared.spec
    assert spec.system.procs == 3 and spec.study.tol == 0.5 and spec.failure.retries == 1
    assert spec.study.constraints == ["x <= 1.5"] and spec.model.framework == "keras2"
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.study.budget = 5
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.study = None
    with pytest.raises(TypeError):
        spec.algorithm["seed"] = 1   # the free-form [algorithm] table is read-only too


def test_a_spec_survives_the_round_trip_to_a_spawned_rank_and_a_resume(prepared):
    spec, expdir = prepared.spec, prepared.expdir
    spawned = load_experiment(expdir)   # what each rank of the spawned MPI job reads
    assert spawned == spec and spawned is not spec
    assert Config.from_dict(json.loads(json.dumps(spec.as_dict()))) == spec
    prepared.lock.release()
    resumed = prepare_run(None, resume=expdir)
    try:
        assert resumed.spec == spec
        assert load_experiment(expdir) == spec   # written again by the resume, unchanged
    finally:
        resumed.release()
    prepared.lock.acquire()


def test_a_resume_that_changes_a_setting_gets_a_spec_with_the_change(prepared):
    prepared.lock.release()
    resumed = prepare_run(None, {"study.budget": 6}, resume=prepared.expdir)
    try:
        assert resumed.spec == dataclasses.replace(
            prepared.spec, study=dataclasses.replace(prepared.spec.study, budget=6))
    finally:
        resumed.release()
    prepared.lock.acquire()


@pytest.mark.parametrize("table, key, value, message", [
    ("study", "budjet", 3, "[study].budjet: is not a setting of [study]; known: algorithm, "),
    ("system", "procs", "four", "[system].procs: must be an integer, got 'four'"),
    ("failure", "on_failure", "retry", "[failure].on_failure: must be one of "),
])
def test_a_bad_key_or_value_read_back_is_refused_in_one_line(prepared, table, key, value,
                                                             message):
    path = prepared.expdir / "config.json"
    data = json.loads(path.read_text())
    data[table][key] = value
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError) as error:
        load_experiment(prepared.expdir)
    assert str(error.value).startswith(f"{path}: {message}")
    assert "\n" not in str(error.value)
    if key != "budjet":
        assert repr(value) in str(error.value)


def test_a_bad_key_or_value_in_a_study_file_is_refused_in_one_line(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('[model]\nreturn_epoch = "best"\n')
    with pytest.raises(ConfigError) as error:
        load(path, environ={})
    assert str(error.value) == (f"{path}: [model].return_epoch: must be one of "
                                "['last', 'min', 'max'], got 'best'")


def test_an_in_process_run_reads_back_neither_config_json_nor_settings_json(toy_config):
    reads = []
    watching = [True]

    def audit(event, args):
        if watching[0] and event == "open" and isinstance(args[0], (str, bytes)) \
                and str(args[0]).endswith(("config.json", "settings.json")) \
                and "r" in str(args[1] or "r"):
            reads.append(str(args[0]))

    sys.addaudithook(audit)   # every open() of the process, for real; it cannot be removed
    try:
        result = emews.run(toy_config(budget=3))
    finally:
        watching[0] = False
    assert result.evaluations == 3
    assert (result.expdir / "config.json").is_file() and (result.expdir / "settings.json").is_file()
    assert reads == []
