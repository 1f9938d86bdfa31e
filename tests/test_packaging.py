"""The distribution: what a `pip install .` puts in site-packages, and its entry points."""

import importlib.metadata
import subprocess
import sys
import zipfile
from importlib.metadata import entry_points
from pathlib import Path

import pytest

REPO = Path(__file__).parent.parent


@pytest.mark.slow
def test_the_wheel_installs_only_the_emews_namespace(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path),
                    str(REPO)], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("emews_hpo-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(
        ".dist-info")}
    assert top_level == {"emews"}
    assert "emews/algorithms/random_search.py" in names
    assert "emews/eqpy.py" in names   # the public name of the EQ/Py module (emews.__all__)
    subpackages = [f"emews/{p.parent.name}/__init__.py" for p in REPO.glob("emews/*/__init__.py")]
    assert subpackages and [p for p in subpackages if p not in names] == []
    assert "emews/models/digits.py" in names and "emews/models/digits_space.json" in names
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(wheel).read(metadata).decode()
    assert "Name: emews-hpo" in text
    for extra in ("ga", "bayes", "keras", "test", "all"):
        assert f"Provides-Extra: {extra}" in text
    requires = [line.split(":", 1)[1].strip() for line in text.splitlines()
                if line.startswith("Requires-Dist:")]
    default = {req.split(">")[0].split("=")[0].split(";")[0].strip().lower()
               for req in requires if "extra ==" not in req}
    assert {"mpi4py", "mpich", "numpy", "scikit-learn", "deap", "scikit-optimize", "optuna",
            "rich", "matplotlib"} <= default  # the demo and every algorithm, by default
    assert not any(name.startswith("tensorflow") for name in default)
    tensorflow = [req for req in requires if req.startswith("tensorflow")]
    assert tensorflow and all('extra == "keras"' in req for req in tensorflow)


def test_builtin_algorithms_are_registered_entry_points():
    names = {ep.name for ep in entry_points(group="emews.algorithms")}
    assert {"random", "sweep"} <= names
    scripts = {ep.name: ep.value for ep in entry_points(group="console_scripts")}
    assert scripts["emews"] == "emews._cli:main"


def test_the_keras_model_names_the_extra_when_keras_is_missing():
    script = ("import sys; sys.modules['keras'] = None\n"
              "from emews.models import nt3_baseline_keras2 as nt3\n"
              "try:\n    nt3.keras_module()\nexcept ImportError as exc:\n    print(exc)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.stdout.strip().endswith("pip install 'emews-hpo[keras]'"), done.stderr


def test_the_virtualenv_has_tensorflow_cpu_and_not_tensorflow_too():
    """tf-keras requires ``tensorflow``, whose files are those of the keras extra's
    ``tensorflow-cpu``: scripts/venv.sh keeps it out (scripts/uv-overrides.txt)."""
    pytest.importorskip("tf_keras", reason="the keras extra is not installed")
    for name in ("tensorflow-cpu", "tf-keras"):
        assert importlib.metadata.distribution(name).version
    with pytest.raises(importlib.metadata.PackageNotFoundError):
        importlib.metadata.distribution("tensorflow")
