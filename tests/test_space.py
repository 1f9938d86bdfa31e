"""Search spaces from Supervisor's GA JSON format."""

import json

import numpy as np
import pytest

from emews._errors import ConfigError
from emews._space import Categorical, Constant, Float, Int, Logical, Ordered, Space

GA_JSON = [
    {"name": "units", "type": "int", "lower": 8, "upper": 64, "sigma": 4},
    {"name": "lr", "type": "float", "lower": 1e-4, "upper": 1e-1, "log": True},
    {"name": "act", "type": "categorical", "element_type": "string", "values": ["relu", "tanh"]},
    {"name": "batch", "type": "ordered", "element_type": "int", "values": ["16", "32", "64"]},
    {"name": "bn", "type": "logical"},
    {"name": "epochs", "type": "constant", "value": 5},
]


def test_every_ga_type_is_read_with_native_values():
    space = Space.from_ga_json(GA_JSON)
    kinds = [type(p) for p in space.params]
    assert kinds == [Int, Float, Categorical, Ordered, Logical, Constant]
    assert space["batch"].values == (16, 32, 64)
    assert space["lr"].log


def test_samples_belong_to_the_space_and_survive_json():
    space = Space.from_ga_json(GA_JSON)
    for point in space.sample(np.random.default_rng(3), 200):
        assert space.contains(point)
        assert json.loads(json.dumps(point)) == point
        assert space.from_unit(space.to_unit(point)) == point


def test_log_scale_samples_spread_over_decades():
    lr = Space.from_ga_json(GA_JSON)["lr"]
    draws = np.array([lr.sample(np.random.default_rng(i)) for i in range(400)])
    assert (draws < 1e-3).mean() > 0.2


@pytest.mark.parametrize("entry, fragment", [
    ({"name": "a", "type": "int", "lower": 5, "upper": 1}, "lower <= upper"),
    ({"name": "a", "type": "cube"}, ".type: must be one of"),
    ({"name": "a", "type": "float", "lower": "zero", "upper": 1}, ".lower: must be a finite number"),
    ({"name": "a", "type": "int", "lower": "1.5", "upper": 3}, ".lower: must be an integer"),
    ({"name": "a", "type": "float", "lower": 0, "upper": 1, "sigma": "-1"}, "must not be negative"),
    ({"name": "a", "type": "categorical", "values": []}, ".values: must be a non-empty list"),
    ({"type": "int"}, ".name: must be a non-empty string"),
    ({"name": "a", "type": "float", "lower": 0.0, "upper": 1.0, "log": True}, "> 0 on a log"),
])
def test_bad_entries_name_the_parameter_and_the_rule(entry, fragment, tmp_path):
    path = tmp_path / "space.json"
    path.write_text(json.dumps([entry]))
    with pytest.raises(ConfigError) as error:
        Space.from_file(path)
    assert str(path) in str(error.value) and fragment in str(error.value)


def test_malformed_json_names_the_file_and_line(tmp_path):
    path = tmp_path / "space.json"
    path.write_text('[\n{"name": "a",\n')
    with pytest.raises(ConfigError, match=r"space.json:\d+: must be valid JSON"):
        Space.from_file(path)
