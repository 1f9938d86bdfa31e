"""The study's state lives in its store (emews/store/_base.py): the final record, what ``emews
pause`` / ``stop`` asked, where ``emews serve`` listens and the jobs ``emews submit`` queued are
meta rows of the study's store, in SQLite and in a real PostgreSQL database; ``final.json``,
``service.json`` and ``submit.json`` are exports that emews writes and never reads back (an
audit hook sees every ``open`` of the process)."""

import contextlib
import json
import sys

import pytest

from support.postgres import postgres_server, postgres_url  # noqa: F401 - fixtures

import emews
from emews.core._control import Control, request
from emews._errors import ConfigError
from emews._experiment import read_store
from emews.inspect._summary import summary
from emews.launch._jobs import states
from emews.service._keys import record_service, service_of
from emews.store import study_store
from emews.supervisor._command import _own_rule

SIDE_FILES = ("final.json", "service.json", "submit.json", "control.json")
READS = []          # side files opened for reading while WATCHING
WATCHING = [False]


CONNECTS = []       # SQLite databases connected to while WATCHING


def _audit(event, args):
    if WATCHING[0] and event == "open" and isinstance(args[0], (str, bytes)) \
            and str(args[0]).endswith(SIDE_FILES) and "r" in str(args[1] or "r"):
        READS.append(str(args[0]))
    if WATCHING[0] and event == "sqlite3.connect":
        CONNECTS.append(str(args[0]))


sys.addaudithook(_audit)   # every open() of this process, for real; it cannot be removed


@contextlib.contextmanager
def side_file_reads():
    """The side files this process opens for reading within the block (a list)."""
    READS.clear()
    CONNECTS.clear()
    WATCHING[0] = True
    try:
        yield READS
    finally:
        WATCHING[0] = False


@pytest.fixture(params=[None, "postgres_url"], ids=["sqlite", "postgresql"])
def storage(request):
    """The study's ``[system] storage``: ``None`` (its ``results.db``) or a fresh PostgreSQL
    database's URL."""
    if request.param:
        pytest.importorskip("psycopg", reason="pip install 'emews-hpo[postgres]'")
    return request.param and request.getfixturevalue(request.param)


@pytest.fixture
def finished(toy_config, storage):
    """A finished in-process study of 3 evaluations on ``storage``: its Result."""
    config = toy_config(budget=3)
    if storage:
        config["system"]["storage"] = storage
    return emews.run(config)


def meta(expdir, key):
    return read_store(expdir, lambda store: store.meta(key))


def test_the_final_record_is_a_row_and_final_json_its_export_never_read(finished, tmp_path):
    expdir = finished.expdir
    final = meta(expdir, "final")
    assert final["evaluations"] == 3 and final["stop_reason"] == finished.stop_reason
    assert json.loads((expdir / "final.json").read_text()) == final   # the export
    (expdir / "final.json").write_text('{"stop_reason": "not what the store says"}')
    with side_file_reads() as reads:
        assert emews.load(expdir).final == final   # emews status, show, report, export
        with (tmp_path / "output.txt").open("wb") as output:
            assert _own_rule(expdir, output) == 0   # the supervisor: ended by its own rule
        resumed = emews.run(None, {"study.budget": 5}, resume=expdir)
    assert reads == []
    assert resumed.evaluations == 5 and meta(expdir, "final")["evaluations"] == 5
    assert json.loads((expdir / "final.json").read_text()) == meta(expdir, "final")


def test_control_is_a_row_the_master_reads_without_committing_its_own_writes(finished,
                                                                             storage):
    expdir = finished.expdir
    master = study_store(expdir, storage, create=False)
    try:
        control = Control(master)              # a new run starts running
        master.commit()
        assert meta(expdir, "control")["state"] == "running"
        master.set_meta("turn", 1)             # the master's turn, not yet committed
        with side_file_reads() as reads:
            request(expdir, "paused")          # emews pause, through a store of its own
            assert control.current() == "paused" and master.pending
            request(master.path if storage else expdir, "stopped")   # PostgreSQL: URL#EXP_ID
            assert control.current() == "stopped" and master.pending
        assert reads == [] and control.reason == "stopped on request (emews stop)"
        assert meta(expdir, "control")["state"] == "stopped" and meta(expdir, "turn") is None
    finally:
        master.close()
    assert meta(expdir, "turn") == 1
    assert not (expdir / "control.json").exists()


def test_the_service_address_is_a_row_and_service_json_its_export_never_read(finished,
                                                                             storage):
    expdir = finished.expdir
    with pytest.raises(ConfigError, match="must be a study that `emews serve` runs"):
        service_of(expdir)
    store = study_store(expdir, storage, create=False)
    try:
        record_service(store, expdir, "tcp://127.0.0.1:5555", None)
    finally:
        store.close()
    assert meta(expdir, "service")["address"] == "tcp://127.0.0.1:5555"
    assert json.loads((expdir / "service.json").read_text()) == meta(expdir, "service")
    (expdir / "service.json").write_text('{"address": "tcp://127.0.0.1:1"}')
    with side_file_reads() as reads:
        assert service_of(expdir)["address"] == "tcp://127.0.0.1:5555"   # emews pool EXPDIR
    assert reads == []


def test_the_submitted_jobs_are_a_row_and_emews_status_reads_them_there(finished, storage):
    expdir = finished.expdir
    record = {"expdir": str(expdir), "site": {"name": "box", "scheduler": "flux"},
              "jobs": [{"index": 0, "kind": "study", "id": "f1"}]}
    store = study_store(expdir, storage, create=False)   # as emews submit records a job
    try:
        store.set_meta("submit", record)
    finally:
        store.close()
    (expdir / "submit.json").write_text('{"jobs": [{"id": "not-the-store"}]}')
    with side_file_reads() as reads:
        info = summary(emews.load(expdir))
    assert reads == []
    assert info["jobs"] == [{"id": "f1", "kind": "study", "state": "UNKNOWN"}]
    assert info["jobs_note"] == "emews status cannot ask flux for job states"
    assert states(None) == ([], None)


def test_a_run_in_this_process_opens_its_store_once_fresh_or_resumed(toy_config):
    """The prepared study owns its store: the connection that prepared it runs it."""
    with side_file_reads():
        result = emews.run(toy_config(budget=3))
        emews.run(None, {"study.budget": 5}, resume=result.expdir)
    assert CONNECTS == [str(result.expdir / "results.db")] * 2
