"""EQPy.swift's own Python, run in one process as Turbine runs it on the resident ME rank."""

import json
import sys
from pathlib import Path

import pytest

SUPPORT = Path(__file__).parent / "support"
if str(SUPPORT) not in sys.path:
    sys.path.insert(0, str(SUPPORT))

from swift_models import AWKWARD  # noqa: E402
from swift_source import Program  # noqa: E402
from turbine import EXCEPTION_RESULT, EmbeddedPython, Turbine, TurbineError  # noqa: E402

SWIFT = Path(__file__).parent.parent / "swift"


@pytest.fixture
def turbine():
    return Turbine(Program.compile(SWIFT / "workflow.swift", ["model_echo"]))


def test_eqpy_put_delivers_any_string_intact(turbine):
    turbine.call("EQPy_init_package", loc="ME", packageName="echo_me")
    assert turbine.call("EQPy_get", loc="ME") == "Params"
    payloads = AWKWARD + ["\n".join(AWKWARD), json.dumps({"s": AWKWARD}, indent=2), "", " "]
    for payload in payloads:
        turbine.call("EQPy_put", loc="ME", data=payload)
        assert json.loads(turbine.call("EQPy_get", loc="ME")) == payload
    turbine.call("EQPy_put", loc="ME", data="stop")
    assert turbine.call("EQPy_get", loc="ME") == "DONE"
    assert turbine.call("EQPy_get", loc="ME") == "{}"
    assert {call.function for call in turbine.executed} == {
        "EQPy_init_package", "EQPy_get", "EQPy_put"}


def test_an_me_package_that_does_not_import_is_an_eqpy_abort_with_its_traceback(turbine):
    turbine.call("EQPy_init_package", loc="ME", packageName='no_such "module"')
    assert turbine.call("EQPy_get", loc="ME") == "EQPY_ABORT"
    trace = turbine.call("EQPy_get", loc="ME")
    assert "ModuleNotFoundError" in trace and 'no_such "module"' in trace


def test_the_stand_in_keeps_turbines_rules_for_embedded_python(capsys):
    python = EmbeddedPython()
    assert python.run("import json\ncount = 1", "json.dumps(count)") == "1"
    assert python.run("count += 1", "str(count)") == "2", "state persists between calls"
    assert python.run("def f():\n    return json", "'defined'") == "defined"
    with pytest.raises(TurbineError, match="NameError"):
        python.run("", "str(f())")  # top-level names are locals: f's globals lack json
    assert python.run("raise ValueError('x')", "''", exceptions_are_errors=False) == \
        EXCEPTION_RESULT
    assert "PYTHON EXCEPTION:" in capsys.readouterr().out
    with pytest.raises(TurbineError, match="did not return a string"):
        python.run("", "42")
