"""The search-space page (docs/src/spaces.md) runs as written: its example space loads with a
parameter of every type its table documents, its element types are the reader's, and its
error line is what ``emews run`` prints for that mistake."""

import json
import re
import subprocess
import sys
from pathlib import Path

from emews._space import Space

from conftest import SUPPORT

PAGE = (Path(__file__).parent.parent / "docs" / "src" / "spaces.md").read_text()


def blocks(language):
    return re.findall(rf"```{language}\n(.*?)```", PAGE, re.S)


def test_the_example_space_loads_with_every_documented_type():
    entries = json.loads(blocks("json")[0])
    space = Space.from_ga_json(entries, where="spaces.md")
    table = PAGE.split("## The parameter types")[1].split("|---|---|---|\n")[1].split("\n\n")[0]
    documented = re.findall(r"^\| `(\w+)` \|", table, re.M)
    assert sorted(documented) == sorted({entry["type"] for entry in entries})
    assert [param.name for param in space.params] == [entry["name"] for entry in entries]


def test_every_documented_element_type_is_read_and_others_are_refused():
    bullet = PAGE.split("- **`element_type`**", 1)[1].split("\n- **", 1)[0]
    named = re.findall(r'`"(\w+)"`', bullet)
    assert len(named) == 6
    for name in named:
        Space.from_ga_json([{"name": "v", "type": "ordered", "element_type": name,
                             "values": ["true", "false"] if name in ("logical", "bool") else ["1", "2"]}])
    try:
        Space.from_ga_json([{"name": "v", "type": "ordered", "element_type": "complex",
                             "values": ["1"]}])
    except Exception as error:   # the rule lists exactly the documented ones
        assert str(error).endswith(f"must be one of {sorted(named)}, got 'complex'")
    else:
        raise AssertionError("an unknown element_type was accepted")


def test_the_documented_mistake_is_the_line_emews_run_prints(tmp_path):
    (shown,) = blocks("text")
    (tmp_path / "space.json").write_text(json.dumps([
        {"name": "learning_rate", "type": "float", "lower": 1e-5, "upper": 1e-1, "log": True},
        {"name": "epochs", "type": "int", "lower": 2.5, "upper": 20}]))
    (tmp_path / "study.toml").write_text('[study]\nspace = "space.json"\nbudget = 2\n'
                                         'objective = "toy_models:quadratic"\n')
    done = subprocess.run([sys.executable, "-m", "emews", "run", "study.toml"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(SUPPORT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 2
    assert done.stderr.replace(str(tmp_path / "space.json"), "space.json") == shown


def test_the_conditional_examples_load_as_the_page_says(tmp_path):
    section = PAGE.split("## Conditional parameters")[1].split("\n## ")[0]
    conditional, forbidding = (json.loads(block) for block in blocks("json")[1:])
    space = Space.from_ga_json(conditional, where="spaces.md")
    point = json.loads(re.search(r"`(\{\"optimizer\": \"adam\".*?\})`", section).group(1))
    assert space.contains(point)
    assert not space.contains({**point, "momentum": 0.5})
    forbidden = Space.from_ga_json(forbidding, where="spaces.md")
    assert len(forbidden.forbidden) == 2
    assert not forbidden.contains({"optimizer": "sgd", "batch_size": 16, "lr": 0.001})
    (r_text,) = blocks("r")
    (tmp_path / "space.R").write_text(r_text)
    from_r = Space.from_file(tmp_path / "space.R")
    assert [p.condition for p in from_r.params] == [p.condition for p in space.params
                                                   if p.name != "nesterov"]
    mistake = re.search(r"`(space\.json: width3\.condition: .*?)`", section).group(1)
    (tmp_path / "space.json").write_text(json.dumps(
        [conditional[0], dict(conditional[4], condition={"optimizer": ["nadam"]})]))
    try:
        Space.from_file(tmp_path / "space.json")
    except Exception as error:
        assert str(error) == f"{tmp_path / mistake}"
    else:
        raise AssertionError("a value the parent never takes was accepted")
