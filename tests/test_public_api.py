"""The public API (``emews.__all__``, ``emews.plugin``): what users and plugins import, one
module behind every name of eqpy, a cheap ``import emews``, the one reference page that
documents exactly those names, and the shipped algorithms and models importing nothing else."""

import ast
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
    from emews.core._algorithm import Algorithm
    from emews.inspect._snapshot import Study
    from emews._result import Result
    from emews._status import Status

    assert sorted(emews.__all__) == ["Algorithm", "Pruned", "Result", "Status", "Study",
                                     "checkpoint_dir", "comm", "eqpy", "load", "plugin",
                                     "report", "run"]
    assert emews.Algorithm is Algorithm and emews.Status is Status
    assert emews.Result is Result and emews.Study is Study
    assert emews.plugin is importlib.import_module("emews.plugin")
    assert all(hasattr(emews.plugin, name) for name in emews.plugin.__all__)
    assert emews.plugin.Algorithm is Algorithm
    from emews.evaluate._reporting import Pruned, report

    assert emews.report is report and emews.Pruned is Pruned
    from emews.evaluate._base import checkpoint_dir, comm

    assert emews.checkpoint_dir is checkpoint_dir and emews.comm is comm
    assert emews.Status.DONE == "done" and set(emews.__all__) <= set(dir(emews))


def test_eqpy_is_one_module_under_every_name_so_its_queues_are_shared():
    import emews.eqpy
    from emews import eqpy

    classic = importlib.import_module("eqpy")    # the name classic ME modules import
    assert eqpy is emews.eqpy is sys.modules["emews.core._queues"] is classic


def test_a_classic_me_written_with_from_emews_import_eqpy_runs_a_study(toy_config):
    result = emews.run(toy_config(algorithm="public_api_me", budget=10))
    study = emews.load(result.expdir)
    assert isinstance(result, emews.Result) and isinstance(study, emews.Study)
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
    hook = reference_hook()
    page = (REPO / "docs/src/python.md").read_text()
    head, marker, _ = page.partition(hook.MARKER)   # what follows it is generated
    assert marker and not re.findall(r"^#{2,} ", head, re.MULTILINE)
    written = hook.regenerated("python.md")
    assert re.findall(r"^## `emews\.(\w+)`$", written, re.MULTILINE) == emews.__all__
    for entry in re.findall(r"^### `emews\.(\w+)\.\w+`$", written, re.MULTILINE):
        assert entry in emews.__all__   # members appear under their public name only
    assert "emews.run(config, overrides=None, resume=None, quiet=False)" in written
    assert "emews.eqpy.OUT_put(string_params)" in written


def public_names():
    """``{module: names}`` that a plugin may import: ``emews``'s ``__all__``, ``emews.plugin``'s
    and the classic EQ/Py names of ``emews.eqpy``."""
    import emews.plugin

    return {"emews": set(emews.__all__), "emews.plugin": set(emews.plugin.__all__),
            "emews.eqpy": set(reference_hook().EQPY_NAMES)}


def private_imports(path, package):
    """``FILE:LINE: NAME`` for each import in the Python file ``path`` (of the plugin package
    ``package``, ``emews.algorithms`` or ``emews.models``) of a name that is not public: any
    ``emews.X`` module but ``emews``, ``emews.plugin``, ``emews.eqpy`` and the package itself,
    or a name those modules do not export."""
    public, found = public_names(), []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            imported = [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - node.level + 1]
            module = ".".join(base + [node.module or ""] if node.level else [node.module])
            imported = [(module.rstrip("."), alias.name) for alias in node.names]
        else:
            continue
        for module, name in imported:
            if module != "emews" and not module.startswith("emews.") or \
                    module == package or module.startswith(package + "."):
                continue
            if module not in public or name is not None and name not in public[module]:
                where = module if name is None else f"{module}.{name}"
                found.append(f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path}"
                             f":{node.lineno}: {where}")
    return found


PUBLIC_MODULES = {"emews/eqpy.py", "emews/plugin.py", "emews/testing.py"}


def test_every_internal_module_is_named_private():
    """Under emews/, a module is public (eqpy, plugin, testing), a package's ``__init__`` or
    ``__main__``, or internal and named with a leading underscore."""
    unmarked = [str(path.relative_to(REPO)) for path in sorted((REPO / "emews").rglob("*.py"))
                if not path.name.startswith("_")
                and str(path.relative_to(REPO)) not in PUBLIC_MODULES]
    assert unmarked == []
    assert all((REPO / name).is_file() for name in PUBLIC_MODULES)


def test_the_shipped_algorithms_and_models_import_only_public_names():
    found = [line for folder, package in (("algorithms", "emews.algorithms"),
                                          ("models", "emews.models"))
             for path in sorted((REPO / folder).glob("*.py"))
             for line in private_imports(path, package)]
    assert found == []


def test_a_private_import_is_found_naming_the_file_line_and_name(tmp_path):
    plugin = tmp_path / "search.py"
    plugin.write_text("import math\nimport emews\nfrom emews import run, plugin\n"
                      "from emews.plugin import Algorithm, Space\n"
                      "from emews.algorithms.ga import GA\nfrom .sweep import read_upf\n"
                      "from emews.core._algorithm import Algorithm\nimport emews._space\n"
                      "def later():\n    from emews import _config\n"
                      "    from .._validation import Rule\n    from emews.plugin import Stopper\n")
    assert private_imports(plugin, "emews.algorithms") == [
        f"{plugin}:7: emews.core._algorithm.Algorithm", f"{plugin}:8: emews._space",
        f"{plugin}:10: emews._config", f"{plugin}:11: emews._validation.Rule",
        f"{plugin}:12: emews.plugin.Stopper"]
