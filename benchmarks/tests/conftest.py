"""The product suite's fixtures (tests/conftest.py: ``study``, ``query_store``, ...) for the
benchmarks' tests, which start studies the same way."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

from conftest import study  # noqa: E402,F401 - a fixture, registered by this import
