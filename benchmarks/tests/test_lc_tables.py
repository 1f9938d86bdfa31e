"""The learning-curve tables (benchmarks/lc_tables.py): what is shipped is what the script
trains, big enough and small, and a tabular problem replays its table exactly, its epochs
charged to a simulated clock."""

import gzip
import json

import numpy as np
import pytest

from benchmarks import fidelity, lc_tables
from benchmarks.quality_runs import evaluate

SHIPPED = [n for n in lc_tables.DATASETS if (lc_tables.TABLES / f"{n}.json.gz").is_file()]


def test_at_least_four_tables_of_1000_configurations_by_27_epochs_each_small():
    assert len(SHIPPED) >= 4
    for name in SHIPPED:
        table = lc_tables.load(name)
        assert table.loss.shape == table.seconds.shape == (lc_tables.CONFIGURATIONS,
                                                           lc_tables.EPOCHS)
        assert lc_tables.CONFIGURATIONS >= 1000 and lc_tables.EPOCHS >= 27
        assert np.isfinite(table.loss).all() and (table.loss >= 0).all()
        assert (table.seconds > 0).all()
        assert table.configurations == json.loads(json.dumps(
            [{k: float(f"{v:.6g}") if isinstance(v, float) else v for k, v in c.items()}
             for c in lc_tables.configurations()]))
        assert table.settings["seed"] == lc_tables.SEED and table.space == lc_tables.SPACE
        assert (lc_tables.TABLES / f"{name}.json.gz").stat().st_size < 1_500_000
    assert sum((lc_tables.TABLES / f"{n}.json.gz").stat().st_size for n in SHIPPED) < 6e6


@pytest.mark.parametrize("index", [0, 1, 517, 999])
def test_a_table_holds_what_the_script_trains(index):
    """Training a configuration again gives its row (5 significant digits kept)."""
    table = lc_tables.load("wine")
    losses, seconds, diverged = lc_tables.curve("wine", lc_tables.configurations()[index],
                                                index)
    assert table.loss[index] == pytest.approx(losses, rel=1e-4, abs=1e-9)
    assert len(seconds) == lc_tables.EPOCHS and diverged == 0


def test_a_tabular_task_replays_its_table_exactly():
    table = lc_tables.load("wine")
    assert lc_tables.fidelity("lc-wine") == (1, table.epochs)
    space = lc_tables.space("lc-wine")
    assert [p.name for p in space.free] == [p["name"] for p in lc_tables.SPACE]
    rng = np.random.default_rng(0)
    for index in rng.choice(len(table.configurations), 25, replace=False):
        point = {**table.configurations[index], "task": "lc-wine"}
        assert table.nearest(point) == index
        assert lc_tables.objective(point) == table.loss[index, -1]
        assert lc_tables.seconds(point) == pytest.approx(table.seconds[index].sum())
        nudged = {**point, "learning_rate_init": point["learning_rate_init"] * (1 + 1e-9)}
        assert lc_tables.objective(nudged) == table.loss[index, -1]
        # a multi-fidelity peer's point: its epochs; a continued training's: those it adds
        epochs, resume = rng.integers(1, table.epochs + 1), rng.integers(0, 3)
        assert lc_tables.objective({**point, "epochs": epochs}) == table.loss[index, epochs - 1]
        assert lc_tables.seconds({**point, "epochs": epochs, "resume": min(resume, epochs)}) \
            == pytest.approx(table.seconds[index, min(resume, epochs):epochs].sum())
    for _ in range(25):         # off the table: the nearest configuration's, in unit space
        (point,) = space.sample(rng)
        units = np.array([[p.to_unit(c[p.name]) for p in space.free]
                          for c in table.configurations])
        here = np.array([p.to_unit(point[p.name]) for p in space.free])
        nearest = int(np.argmin(((units - here) ** 2).sum(axis=1)))
        assert lc_tables.objective(point) == table.loss[nearest, -1]


def test_the_fidelity_part_replays_a_tables_curves_and_charges_its_epoch_seconds(tmp_path):
    problem = fidelity.PROBLEMS["lc-wine"]
    table = lc_tables.load("wine")
    curves = fidelity.Curves(problem, table.epochs, tmp_path)
    assert problem.minimum(table.epochs) == table.loss[:, -1].min()
    result = fidelity.simulate("random", problem, curves, 0, 5 * table.epochs, 1)
    assert not list(tmp_path.iterdir())        # a shipped table's curves are not kept again
    # One worker, no pruning: five whole curves, each value the table's final one, the clock
    # running without a gap.
    assert result["runs"] == 5 and result["utilization"] == pytest.approx(1.0)
    finals = set(table.loss[:, -1])
    assert all(row[1] in finals and row[2] == row[1] for row in result["trajectory"])
    pruned = fidelity.simulate("optuna TPE + HyperbandPruner", problem, curves, 0,
                               20 * table.epochs, 4)
    assert pruned["runs"] > 20 and pruned["pruned"] > 0


class TableOrder:
    """A searcher that proposes the table's configurations in order (test helper)."""

    def __init__(self, table):
        self.table, self.next, self.told = table, 0, []

    def ask(self, n):
        points = [{**c, "task": "lc-wine"}
                  for c in self.table.configurations[self.next:self.next + n]]
        self.next += n
        return points

    def tell(self, points, values):
        self.told += [self.table.nearest(p) for p in points]


def test_the_async_mode_charges_a_tables_evaluation_its_epochs_seconds():
    table = lc_tables.load("wine")
    searcher = TableOrder(table)
    values = evaluate(searcher, lc_tables.objective, 12, "async", 3, 0, lc_tables.seconds)
    # Replay the clock: three workers, each freed one taking the next configuration.
    finish = {i: table.seconds[i].sum() for i in range(3)}
    expected, handed = [], 3
    while finish:
        done = min(finish, key=lambda i: (finish[i], i))
        expected.append(done)
        now = finish.pop(done)
        if handed < 12:
            finish[handed] = now + table.seconds[handed].sum()
            handed += 1
    assert searcher.told == expected != sorted(expected)
    assert values == [table.loss[i, -1] for i in expected]


def test_the_table_files_are_gzip_json_with_their_settings():
    for name in SHIPPED:
        with gzip.open(lc_tables.TABLES / f"{name}.json.gz", "rt") as f:
            data = json.load(f)
        assert data["name"] == name and data["settings"]["epochs"] == lc_tables.EPOCHS
        assert set(data["settings"]["versions"]) == {"python", "numpy", "scikit-learn"}
