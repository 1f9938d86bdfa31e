"""The public API (``emews.__all__``): what users import, one module behind every name of
eqpy, a cheap ``import emews``, and the one reference page that documents exactly those names."""

import importlib
import importlib.util
import re
import subprocess
import sys

import emews

from conftest import REPO


def test_import_emews_imports_no_part_of_the_product_until_a_name_is_used():
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, emews; print(sorted(m for m in sys.modules "
         "if m.startswith('emews') or m == 'numpy'))"],
        capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "['emews']"


def test_every_public_name_is_reachable_from_the_package():
    from emews.core.algorithm import Algorithm
    from emews.status import Status

    assert sorted(emews.__all__) == ["Algorithm", "Pruned", "Status", "checkpoint_dir", "comm",
                                     "eqpy", "load", "report", "run"]
    assert emews.Algorithm is Algorithm and emews.Status is Status
    from emews.evaluate.reporting import Pruned, report

    assert emews.report is report and emews.Pruned is Pruned
    from emews.evaluate.base import checkpoint_dir, comm

    assert emews.checkpoint_dir is checkpoint_dir and emews.comm is comm
    assert emews.Status.DONE == "done" and set(emews.__all__) <= set(dir(emews))


def test_eqpy_is_one_module_under_every_name_so_its_queues_are_shared():
    import emews.eqpy
    from emews import eqpy

    classic = importlib.import_module("eqpy")    # the name classic ME modules import
    assert eqpy is emews.eqpy is sys.modules["emews.core.eqpy"] is classic


def test_a_classic_me_written_with_from_emews_import_eqpy_runs_a_study(toy_config):
    result = emews.run(toy_config(algorithm="public_api_me", budget=10))
    study = emews.load(result.expdir)
    rows = sorted((row["params"]["x"], row["result"], row["status"]) for row in study.done)
    assert rows == [(x / 2.0, (x / 2.0) ** 2 + 1, emews.Status.DONE) for x in range(-2, 3)]
    assert result.best_value == 1.0 and result.stop_reason == "grid evaluated"


def reference_hook():
    """docs/hooks/reference.py, the hook that writes the reference pages."""
    spec = importlib.util.spec_from_file_location("reference", REPO / "docs/hooks/reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_python_api_page_documents_exactly_the_public_names():
    page = (REPO / "docs/src/python.md").read_text()
    assert "{{ api }}" in page and not re.findall(r"^#{2,} ", page, re.MULTILINE)
    written = reference_hook().on_page_markdown(page, None, None, None)
    assert re.findall(r"^## `emews\.(\w+)`$", written, re.MULTILINE) == emews.__all__
    for entry in re.findall(r"^### `emews\.(\w+)\.\w+`$", written, re.MULTILINE):
        assert entry in emews.__all__   # members appear under their public name only
    assert "emews.run(config, overrides=None, resume=None)" in written
    assert "emews.eqpy.OUT_put(string_params)" in written
