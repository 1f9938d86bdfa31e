"""The .swift files, read as STC reads them: their Python calls and python_literal (every
character). Whole runs under a real Swift/T are in test_swift_workflow.py and test_swift_eqpy.py."""

import ast
import sys
from pathlib import Path

import pytest

SUPPORT = Path(__file__).parent / "support"
if str(SUPPORT) not in sys.path:
    sys.path.insert(0, str(SUPPORT))

from swift_source import Evaluator, Program, SwiftSourceError, tokenize  # noqa: E402

SWIFT = Path(__file__).parent.parent / "swift"
FILES = sorted(SWIFT.glob("*.swift"))


@pytest.fixture(scope="module")
def program():
    return Program.load(FILES)


def python_literal(program, text):
    def no_python(*args):
        raise AssertionError("python_literal must not call Python")

    return Evaluator(program, no_python).call("python_literal", {"s": text})


def test_every_python_call_is_python_persist_and_the_me_ones_run_on_the_resident_rank(program):
    calls = {(call.function, call.where()): call for call in program.calls}
    assert sorted(function for function, _ in calls) == [
        "EQPy_get", "EQPy_init_package", "EQPy_put", "emews_candle_model_train",
        "emews_model_train", "evaluate", "loop"]
    assert all(call.leaf.persist for call in program.calls), "plain python() would reset state"
    for (function, _), call in calls.items():
        if function.startswith("emews_"):
            assert call.leaf.dispatch == "WORKER"
        else:  # the ME's queues and the store live in the resident rank's interpreter
            assert call.leaf.dispatch == "resident_work"
            assert call.location.value == ("loc" if function.startswith("EQPy") else "ME")


def test_each_model_module_defines_candle_model_train_with_supervisors_signature(program):
    definitions = program.functions["candle_model_train"]
    assert sorted(f.token.file for f in definitions) == [
        "model_app.swift", "model_container.swift", "model_echo.swift", "model_py.swift"]
    for function in definitions:
        assert function.inputs == [("string", "params"), ("string", "expid"),
                                   ("string", "runid"), ("string", "model_name")]
        assert function.outputs == [("string", "model_result")]


def test_python_literal_gives_back_every_character(program):
    for start in range(0, 0x110000, 0x4000):
        text = "".join(chr(c) for c in range(max(start, 1), start + 0x4000)
                       if not 0xD800 <= c <= 0xDFFF)
        namespace = {}
        exec(compile(f"value = {python_literal(program, text)}\n", "<string>", "exec"),
             namespace)
        assert namespace["value"] == text


@pytest.mark.parametrize("text", ['"', "\\", "\\\"", "a\\", '"""', "\\n", "\n\r\r\n",
                                  "x\\\ny", "'", "%s%%", ""])
def test_python_literal_survives_escapes_that_meet(program, text):
    assert ast.literal_eval(python_literal(program, text)) == text


def test_stc_string_literals_are_unescaped_as_stc_does():
    (token, _) = tokenize(r'"a\"b\\c\n\t\101\x41"', "t.swift")
    assert token.value == 'a"b\\c\n\tAA'
    (token, _) = tokenize('----\nraw "quotes" stay\n----', "t.swift")
    assert token.value == '\nraw "quotes" stay\n'


BAD_SOURCES = {
    "an escape STC rejects": r'string s = "\q";',
    "a preprocessor line": '#include "x.swift"\n',
    "an operator the reader does not evaluate":
        '(string o) f(string c) { o = python_persist(c * 2, "x"); }',
    "a format it does not evaluate":
        '(string o) f(string c) { o = python_persist("%f" % c, "x"); }',
    "a python leaf it cannot read": '@dispatch=W (string o) p(string code, string expr) '
                                    '"turbine" "0.1.0" [ "set <<o>> [ turbine::python 1 '
                                    '<<code>> <<expr>> ]" ];',
    "a python call outside a function": 'python_persist("import os", "repr(0)");',
    "an unterminated string": 'string s = "abc;',
    "a python call with one argument": '(string o) f() { o = python_persist("x"); }',
    "a parameter default": '(string o) f(string c="x") { o = python_persist(c, "x"); }',
}


@pytest.mark.parametrize("source", BAD_SOURCES.values(), ids=BAD_SOURCES)
def test_the_reader_refuses_what_it_does_not_understand_and_names_the_line(tmp_path, source):
    path = tmp_path / "bad.swift"
    path.write_text("\n" + source)
    with pytest.raises(SwiftSourceError, match=r"bad.swift:2"):
        program = Program.load([path])
        function = program.all_functions()[0]
        Evaluator(program, lambda *a: "").call(function.name, {
            name: "text" for _, name in function.inputs})
