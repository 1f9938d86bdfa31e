"""How the suite starts its MPI runs (benchmarks/common.py)."""

import pytest

from benchmarks.common import mpiexec_python


@pytest.mark.mpi
def test_mpi_runs_write_bytecode_even_where_the_environment_says_not_to(monkeypatch):
    """Else every rank compiles emews at each start, inside the dispatch part's timed window."""
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    printed = mpiexec_python(2, ["-c", "import sys; print(sys.dont_write_bytecode)"])
    assert (printed.count("False"), printed.count("True")) == (2, 0)   # lines may interleave
