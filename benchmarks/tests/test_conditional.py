"""The conditional-space part: its problems, its peers given the conditions, and its target."""

import numpy as np
import pytest

from benchmarks import conditional


@pytest.mark.parametrize("name", conditional.PROBLEMS)
def test_the_flattened_space_has_the_same_parameters_all_active(name):
    space, objective, _ = conditional.problem(name)
    flat, same, _ = conditional.problem(name, flat=True)
    assert space.conditional and not flat.conditional and flat.names == space.names
    for point in flat.sample(np.random.default_rng(0), 5):
        assert set(point) == set(flat.names)
        assert same(point) == objective(space.restrict(point))


def test_branch_b_holds_the_minimum():
    space, objective, minimum = conditional.problem("branches")
    best_b = objective({"branch": "b", "b_x1": 0.114614, "b_x2": 0.555649, "b_x3": 0.852547})
    best_a = objective({"branch": "a", "a_x1": np.pi, "a_x2": 2.275})
    assert best_b == pytest.approx(minimum, abs=1e-5) and best_a == pytest.approx(0.397887)


@pytest.mark.parametrize("peer", [conditional.DEFINE_BY_RUN,
                                  pytest.param(conditional.SMAC, marks=pytest.mark.slow)])
def test_the_peers_given_the_conditions_propose_only_active_parameters(peer):
    if conditional.unavailable(peer):
        pytest.skip(conditional.unavailable(peer))
    space, objective, _ = conditional.problem("models")
    searcher = conditional.contender(peer, space, seed=0, budget=6)
    for _ in range(6):
        [point] = searcher.ask(1)
        assert space.contains(point)
        searcher.tell([point], [objective(point)])


def test_a_search_that_fails_or_is_worse_than_its_flattened_self_misses_the_target():
    def run(contender, seed, best, error=None):
        return {"problem": "branches", "contender": contender, "seed": seed, "best": best,
                **({"error": error} if error else {})}

    results = [run("mbo", s, 0.1 + 0.01 * s) for s in range(8)]
    results += [run("mbo flat", s, 0.1 + 0.02 * s) for s in range(8)]
    results += [run("gp", s, 1.0 + s) for s in range(8)]
    results += [run("gp flat", s, 0.2) for s in range(8)]
    results += [run("ga", s, None, "KeyError: 'a_x1'") for s in range(8)]
    results += [run("ga flat", s, 0.2) for s in range(8)]
    regret, failed = conditional.log_regrets(results)
    part = {"problems": ["branches"], "ours": ["mbo", "gp", "ga"], "failed": failed,
            "contenders": ["mbo", "gp", "ga", "mbo flat", "gp flat", "ga flat"]}
    part["comparisons"] = conditional.comparisons(part, regret)
    met = {target: ok for target, _, ok in conditional.targets(part)}
    assert [ok for ok in met.values()] == [True, False, False]
    assert failed == {"branches": {"ga": "KeyError: 'a_x1'"}}
