"""EQPy.swift under a real Swift/T: EQPy_put and EQPy_get carry any string that Tcl can hold
(characters up to U+FFFF) intact, both ways, between a Swift program and a classic EQ/Py ME."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SUPPORT = Path(__file__).parent / "support"
if str(SUPPORT) not in sys.path:
    sys.path.insert(0, str(SUPPORT))

from swift_models import AWKWARD  # noqa: E402
from swift_t import launcher_env, swift_t  # noqa: E402,F401 - swift_t: the session fixture

SWIFT = Path(__file__).parent.parent / "swift"

# Sends each payload (read from EQPY_PAYLOADS by Python on a worker) to echo_me with EQPy_put,
# reads the echo (the payload as JSON) with EQPy_get, and has Python compare it with the original.
ECHO_SWIFT = """
import io;
import location;
import python;
import python_literal;
import string;
import sys;

import EQPy;

string payloads_code = ----
import json, os
payloads = json.load(open(os.environ["EQPY_PAYLOADS"], encoding="utf-8"))
----;

main
{
  location ME = locationFromRank(string2int(getenv("RESIDENT_WORK_RANKS")));
  int n = string2int(python_persist(payloads_code, "str(len(payloads))"));
  EQPy_init_package(ME, "echo_me") =>
    string first = EQPy_get(ME);
  wait (first)
  {
    printf("EQPy first: %s", first) =>
      step(ME, 0, n);
  }
}

step(location ME, int i, int n)
{
  if (i < n)
  {
    string payload = python_persist(payloads_code, "payloads[%i]" % i);
    void put = EQPy_put(ME, payload);
    wait (put)
    {
      string echoed = EQPy_get(ME);
      string same = python_persist(payloads_code, "str(json.loads(%s) == payloads[%i])" %
                                   (python_literal(echoed), i));
      printf("EQPy echo %i: %s", i, same) =>
        step(ME, i + 1, n);
    }
  }
  else
  {
    void put = EQPy_put(ME, "stop");
    wait (put)
    {
      string done = EQPy_get(ME);
      string final_message = EQPy_get(ME);
      printf("EQPy end: %s %s", done, final_message);
    }
  }
}
"""


@pytest.mark.slow
def test_eqpy_put_and_get_carry_any_string_intact_under_turbine(tmp_path, swift_t):
    payloads = [text for text in AWKWARD if max(map(ord, text)) <= 0xFFFF]
    payloads += ["\n".join(payloads), json.dumps({"s": payloads}, indent=2), "", " "]
    (tmp_path / "payloads.json").write_text(json.dumps(payloads), encoding="utf-8")
    (tmp_path / "eqpy_echo.swift").write_text(ECHO_SWIFT)
    env = dict(os.environ, PATH=":".join([*swift_t, str(Path(sys.executable).parent),
                                          os.environ["PATH"]]), **launcher_env())
    done = subprocess.run(
        ["swift-t", "-n", "3", "-p", "-I", str(SWIFT), "-o", "eqpy_echo.tic",
         "-e", "RESIDENT_WORK_RANKS=1", "-e", "TURBINE_RESIDENT_WORK_WORKERS=1",
         "-e", "EQPY_PAYLOADS=payloads.json", "-e", f"PYTHONPATH={SUPPORT}",
         "-e", "PYTHONMALLOC=malloc", "eqpy_echo.swift"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("EQPy ")]
    assert lines == ["EQPy first: Params"] + [
        f"EQPy echo {i}: True" for i in range(len(payloads))] + ["EQPy end: DONE {}"]
