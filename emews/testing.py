"""Testing aids for algorithm authors: a driver harness and the conformance suite.

:func:`drive` runs the real ME driver on the EQ/Py queues, evaluating on the calling thread,
so an algorithm is tested exactly as a study runs it, without a pool or a store.

:class:`Conformance` is the contract every algorithm must meet; subclass it in a test module::

    from emews.testing import Conformance

    class TestMySearch(Conformance):
        algorithm = "my_package.search:MySearch"
        options = {"step": 0.2}
"""

import json
import math
import random
from dataclasses import dataclass, field
from pathlib import Path

from .core import _queues as queues
from .core._algorithm import Objectives, PrunedResult, load, point_key
from ._errors import MEAborted
from .core._me import build_algorithm, ready_points
from .core._segments import SEGMENT
from ._space import Space
from .store import read_once

SPACE = [
    {"name": "x", "type": "float", "lower": -2.0, "upper": 2.0},
    {"name": "lr", "type": "float", "lower": 1e-4, "upper": 1e-1, "log": True},
    {"name": "units", "type": "int", "lower": 1, "upper": 64, "log": True},
    {"name": "n", "type": "int", "lower": 0, "upper": 5},
    {"name": "act", "type": "categorical", "values": ["relu", "tanh", "sigmoid"]},
    {"name": "batch", "type": "ordered", "values": [16, 32, 64, 128]},
    {"name": "bn", "type": "logical"},
    {"name": "epochs", "type": "constant", "value": 3},
]
PLANE = [{"name": "x", "type": "float", "lower": 0.0, "upper": 1.0},
         {"name": "y", "type": "float", "lower": 0.0, "upper": 1.0}]
CORNER = (0.85, 0.85)
# a conditional space (emews._conditions): momentum only for SGD, nesterov only with a momentum
# over 0.5, width3 only with 3 layers or more (lr and dropout in every point, so that points
# rarely repeat)
CONDITIONAL = [
    {"name": "optimizer", "type": "categorical", "values": ["sgd", "adam"]},
    {"name": "lr", "type": "float", "lower": 1e-4, "upper": 1e-1, "log": True},
    {"name": "dropout", "type": "float", "lower": 0.0, "upper": 0.5},
    {"name": "momentum", "type": "float", "lower": 0.0, "upper": 0.99,
     "condition": {"optimizer": ["sgd"]}},
    {"name": "nesterov", "type": "logical", "condition": {"momentum": {">": 0.5}}},
    {"name": "depth", "type": "int", "lower": 1, "upper": 4},
    {"name": "width3", "type": "int", "lower": 8, "upper": 256, "log": True,
     "condition": {"depth": {">=": 3}}},
    {"name": "epochs", "type": "constant", "value": 3},
]


def bowl(point):
    """A smooth function of every parameter of :data:`SPACE`; smallest near its middle."""
    return (point["x"] ** 2 + (math.log10(point["lr"]) + 2.5) ** 2 + abs(point["n"] - 2)
            + math.log2(point["units"]) / 6 + {"relu": 0, "tanh": 1, "sigmoid": 2}[point["act"]]
            + point["batch"] / 128 + (0 if point["bn"] else 0.5))


def two_bowls(point):
    """Two objectives of every parameter of :data:`SPACE` that pull apart (:func:`bowl`, and
    one smallest at ``x = 1.5``, ``lr = 0.03``), with one constraint, ``x <= 1``: the
    :class:`~emews.core._algorithm.Objectives` that the driver tells an algorithm."""
    second = ((point["x"] - 1.5) ** 2 + (math.log10(point["lr"]) + 1.5) ** 2
              + point["units"] / 64 + abs(point["n"] - 4))
    return Objectives([bowl(point), second], violations=[max(point["x"] - 1.0, 0.0)])


def branches(point):
    """A function of the points of :data:`CONDITIONAL` that reads each parameter only where
    it is active; smallest for SGD with a high Nesterov momentum, 3 layers of 64 units, lr = 0.003
    and a dropout of 0.2.
    (It reads absent parameters as defaults, so that a plugin's wrong point reaches
    :meth:`Conformance.check_points`, which names what is wrong.)"""
    value = (abs(point.get("depth", 1) - 3) + (math.log10(point.get("lr", 0.1)) + 2.5) ** 2
             + abs(point.get("dropout", 0.5) - 0.2))
    value += abs(math.log2(point.get("width3", 8)) - 6) / 2 if point.get("depth", 1) >= 3 else 1.0
    if point.get("optimizer") == "sgd":
        return value + (point.get("momentum", 0.0) - 0.9) ** 2 + (0.0 if point.get("nesterov")
                                                                  else 0.3)
    return value + 0.5


def distance_to_corner(point):
    """Distance from a point of :data:`PLANE` to :data:`CORNER`."""
    return math.dist((point["x"], point["y"]), CORNER)


@dataclass
class Run:
    """What a driven search did: its final message and every evaluation, in order."""

    final: dict | None = None
    points: list = field(default_factory=list)
    values: list = field(default_factory=list)

    def evaluate(self, objective, point):
        value = objective(point)
        value = value if isinstance(value, float) else float(value)   # a PrunedResult stays
        self.points.append(point)
        self.values.append(value)
        return value


def drive(settings, objective, completion_seed=0):
    """Run :mod:`emews.core._me` with ``settings``, evaluating ``objective(point)`` on this
    thread; in async mode one point at a time, picked at random (seeded by ``completion_seed``)
    among those in flight, so results come back out of order."""
    thread = queues.init("emews.core._me")
    order = random.Random(completion_seed)
    batch = settings.get("mode", "batch") == "batch"
    run, in_flight, next_index = Run(), [], 0
    message = queues.output_q_get()
    if message == queues.PARAMS:
        queues.input_q.put(json.dumps(settings))
        message = queues.output_q_get()
    while message not in queues.END_MESSAGES:
        if message == queues.EQPY_ABORT:
            raise MEAborted(queues.output_q_get())
        points = queues.decode_points(message)
        if batch:
            answer = queues.Answer([run.evaluate(objective, p) for p in points])
        else:
            in_flight += list(enumerate(points, next_index))
            next_index += len(points)
            index, point = in_flight.pop(order.randrange(len(in_flight)))
            answer = queues.Answer([(index, run.evaluate(objective, point))], tagged=True)
        queues.input_q.put(answer)
        message = queues.output_q_get()
    run.final = json.loads(queues.output_q_get())
    thread.join()
    return run


def first_difference(expected, got):
    """Where two lists (points, or rounds of points) first differ, in words: the message of a
    failed assertion."""
    for index, (want, have) in enumerate(zip(expected, got)):
        if want != have:
            return f"#{index} was {have}, expected {want}"
    return f"{len(got)} items, expected {len(expected)}"


def experiment_rows(data_dir):
    """The evaluations (store rows, by id) of the one experiment under ``data_dir``."""
    (expdir,) = [exp for study in Path(data_dir).iterdir() for exp in study.iterdir()]
    return read_once(expdir, None, lambda store: store.rows())


def activity_errors(space, point, active):
    """What is wrong with the parameters of ``point`` in ``space`` (a :class:`Space`), where
    ``active`` are the names active in it, in words: the message of a failed assertion."""
    errors = [f"which sets {name}, not a parameter of the space"
              for name in point if name not in space.names]
    for param in space.params:
        condition = "" if param.condition is None else \
            f"its condition {json.dumps(param.condition.to_json())}"
        if param.name in active and param.name not in point:
            errors.append(f"which lacks {param.name}, active there"
                          + (f" ({condition} holds)" if condition else ""))
        elif param.name in point and param.name not in active:
            errors.append(f"which sets {param.name} = {point[param.name]!r}, inactive there "
                          f"({condition} does not hold)")
    return errors


class Conformance:
    """The ask/tell contract, checked through the real driver (subclass it as ``Test...``).

    Class attributes: ``algorithm`` (a registered name or dotted path), ``options`` (its
    ``[algorithm]`` table), ``finite_options`` (options under which it finishes by itself, or
    ``None`` when it never does), ``space`` (a GA JSON list; the default has every type),
    ``budget`` and ``slots`` (keep runs small), ``learns`` (False for algorithms that ignore
    results), ``learns_from_pruned`` (False for ones that take a pruned run as a failure; by
    default ``learns``), ``seeded`` (False for ones that use no randomness) and
    ``state_rounds`` (the ask/tell rounds of ``slots`` points before and after a checkpoint;
    the checkpoint tests are skipped for an algorithm whose ``state()`` returns ``None``).

    **Conditional spaces.** Every algorithm is also run on ``conditional_space``
    (:data:`CONDITIONAL` by default, told :func:`branches`) with ``conditional_options`` (by
    default ``options``): in batch and async mode, resumed from a history, and restored from
    its state. Each point it proposes must hold exactly the parameters active in it (see
    :mod:`emews._conditions`).

    **Several objectives.** A class that says ``multiobjective = True`` is also run the way a
    study of ``objectives`` objectives (2) runs it: built with the option ``objectives=k``, told
    each result as an :class:`~emews.core._algorithm.Objectives` (``vector_objective``,
    :func:`two_bowls` by default, some points infeasible) or ``NaN`` for a failure. It must
    keep proposing valid points (when none is feasible too), be repeatable under a seed, and
    continue exactly from its state. These checks are skipped where ``several_objectives`` is
    False (options under which a multiobjective class takes one objective only, such as
    Optuna's CMA-ES).
    """

    algorithm = None
    options = {}
    finite_options = None
    space = SPACE
    objective = staticmethod(bowl)
    budget = 12
    slots = 3
    learns = True
    learns_from_pruned = None
    seeded = True
    state_rounds = (3, 2)
    objectives = 2
    vector_objective = staticmethod(two_bowls)
    several_objectives = True
    conditional_space = CONDITIONAL
    conditional_objective = staticmethod(branches)
    conditional_options = None

    def settings(self, mode="batch", seed=1, stop=None, **extra):
        """Driver settings for a run of this algorithm."""
        return {"algorithm": self.algorithm, "options": dict(self.options), "space": self.space,
                "seed": seed, "mode": mode, "slots": self.slots,
                "stop": stop or {"budget": self.budget}, **extra}

    def conditional_settings(self, mode="batch", seed=1, **extra):
        """Driver settings for a run on :attr:`conditional_space`."""
        options = self.options if self.conditional_options is None else self.conditional_options
        return self.settings(mode, seed, **extra) | {"space": self.conditional_space,
                                                     "options": dict(options)}

    def check_points(self, points, space=None):
        """Each point holds exactly the parameters active in it, each with a legal value of
        plain Python; ``space`` is a GA JSON list (by default :attr:`space`)."""
        space = Space.from_ga_json(space or self.space)
        for point in points:
            point = {k: v for k, v in point.items() if k != SEGMENT}  # pbt's segment record
            active = space.active(point)
            assert set(point) == set(active), (
                f"{self.algorithm} proposed {point}, "
                f"{'; '.join(activity_errors(space, point, active))}; expected the parameters "
                f"active there, {active} (a point holds only its active parameters)")
            wrong = [f"{name} = {value!r}, not a value of {space[name]}"
                     for name, value in point.items() if not space[name].contains(value)]
            assert not wrong, f"{self.algorithm} proposed {point}, where {'; '.join(wrong)}"
            again = json.loads(json.dumps(point, default=repr))
            assert again == point, (
                f"{self.algorithm} proposed {point}, which JSON reads back as {again}: a "
                f"point's values must be plain Python (int, float, str, bool), not NumPy's")

    # --- bounds and types -------------------------------------------------------------------

    def check_count(self, run, what, space=None):
        """The run's points are valid (:meth:`check_points`, in ``space``) and as many as its
        final message counts, within the budget."""
        self.check_points(run.points, space)
        assert len(run.points) == run.final["evaluations"] <= self.budget, (
            f"{what}: {len(run.points)} points evaluated, {run.final['evaluations']} counted "
            f"by the final message; expected the same number, at most the budget of "
            f"{self.budget}")

    def test_points_respect_bounds_and_types_in_batch_mode(self):
        self.check_count(drive(self.settings("batch"), self.objective), "a batch run")

    def test_points_respect_bounds_and_types_in_async_mode(self):
        self.check_count(drive(self.settings("async"), self.objective), "an async run")

    # --- failures ---------------------------------------------------------------------------

    def test_survives_nan_inf_and_failed_results(self):
        results = iter([math.nan, math.inf, -math.inf, None] * self.budget)

        def unreliable(point):
            value = next(results)
            return self.objective(point) if value is None else value

        for mode in ("batch", "async"):
            run = drive(self.settings(mode), unreliable)
            self.check_count(run, f"an {mode} run told NaN, inf and -inf")
            assert run.points, f"an {mode} run told NaN, inf and -inf proposed no points"

    def test_takes_pruned_runs_as_their_own_outcome_never_the_best(self):
        counted = iter(range(10 ** 6))

        def pruned_half(point):   # every other run stopped by a pruner, with a fine curve
            value = self.objective(point)
            if next(counted) % 2:
                return value
            return PrunedResult({1: value - 100.0, 2: value - 50.0})

        for mode in ("batch", "async"):
            run = drive(self.settings(mode), pruned_half)
            self.check_count(run, f"an {mode} run with every other run pruned")
            assert run.points, f"an {mode} run with every other run pruned proposed no points"
            finished = [v for v in run.values if not isinstance(v, PrunedResult)]
            assert run.final["best_value"] == min(finished), (   # a curve is never a result
                f"an {mode} run with every other run pruned ended with the best value "
                f"{run.final['best_value']}; expected {min(finished)}, the best finished run's "
                f"(a pruned run's curve is never a result)")

    def test_survives_only_failures(self):
        run = drive(self.settings("async"), lambda point: math.nan)
        self.check_count(run, "a run where every evaluation failed")
        assert run.final["best_point"] is None, (
            f"a run where every evaluation failed named {run.final['best_point']} the best "
            f"point; expected none")

    # --- determinism ------------------------------------------------------------------------

    def test_deterministic_under_a_seed(self):
        for mode in ("batch", "async"):
            first = drive(self.settings(mode, seed=3), self.objective)
            again = drive(self.settings(mode, seed=3), self.objective)
            assert first.points == again.points and first.values == again.values, (
                f"two {mode} runs under seed 3 differ: the second's point "
                f"{first_difference(first.points, again.points)} (draw every random number "
                f"from self.rng, or a generator seeded with the seed)")
        if self.seeded:
            other = drive(self.settings("batch", seed=4), self.objective)
            assert other.points != first.points, (
                f"runs under seeds 3 and 4 proposed the same points, {other.points}: the seed "
                f"is not used (set seeded = False for an algorithm that uses no randomness)")

    # --- the end ----------------------------------------------------------------------------

    def test_asked_after_done_answers_sensibly(self):
        settings = self.settings()
        settings["options"].update(self.finite_options or {})
        algorithm = build_algorithm(settings)
        asked = algorithm.ask(0)
        assert asked == [], f"ask(0) returned {asked}; expected []"
        for _ in range(200 if self.finite_options is not None else 3):
            if algorithm.done():
                break
            points = algorithm.ask(self.slots)
            self.check_points(points)
            algorithm.tell(points, [self.objective(p) for p in points])
        if self.finite_options is not None:
            assert algorithm.done(), (
                f"done() is still False after 200 rounds of ask({self.slots}) and tell under "
                f"the finite options {self.finite_options}")
            asked = algorithm.ask(self.slots)
            assert asked == [] and algorithm.done(), (
                f"once done, ask({self.slots}) returned {asked} and done() then said "
                f"{algorithm.done()}; expected [] and True")
        algorithm.tell([], [])
        self.check_points(algorithm.ask(1))

    def test_stops_on_each_rule(self):
        def flat(point):
            return 1.0

        for mode in ("batch", "async"):
            # in flight at most: the slots, and in async mode the points the driver keeps ready
            most = self.slots + (ready_points(load(self.algorithm), self.slots)
                                 if mode == "async" else 0)
            def check(run, rule, reason, fewest, most, whole=True):
                """The run stopped on ``rule`` for ``reason`` (or one that starts with it,
                unless ``whole``), after ``fewest`` to ``most`` points."""
                got = run.final["stop_reason"]
                said = got == reason if whole else got.startswith(reason)
                assert said and fewest <= len(run.points) <= most, (
                    f"an {mode} run with {rule} stopped after {len(run.points)} points: "
                    f"{got!r}; expected {reason!r}, after {fewest} to {most} points (does "
                    f"ask(n) return n points, or [] only once done() is True?)")

            run = drive(self.settings(mode, stop={"max_iterations": 2}), flat)
            check(run, "max_iterations = 2", "iteration limit of 2 reached", 2, 2 * most)
            assert run.final["iterations"] == 2, (
                f"an {mode} run with max_iterations = 2 counts {run.final['iterations']} "
                f"iterations; expected 2")
            run = drive(self.settings(mode, stop={"patience": 4, "budget": 40}), flat)
            check(run, "patience = 4 on a flat objective",
                  "converged: no improvement larger than 0", 5, 4 + most, whole=False)
            run = drive(self.settings(mode, stop={"target": 1e9, "budget": 40}), self.objective)
            check(run, "target = 1e9", "target value 1000000000.0 reached", 1, most)
            run = drive(self.settings(mode, stop={"max_time": 0}), self.objective)
            check(run, "max_time = 0", "time limit of 0 s reached", 0, 0)

    # --- resume -----------------------------------------------------------------------------

    def test_resumes_without_repeating_its_history(self):
        self.check_resume(self.settings, self.objective, self.space)

    def check_resume(self, settings, objective, space):
        """A run of ``settings`` (a method such as :meth:`settings`) resumed after 4 of its
        first 6 points were told, the other 2 left running, evaluates those 2, proposes
        points of ``space`` and none told again."""
        first = drive(settings(stop={"budget": 6}), objective)
        history = [[p, v] for p, v in zip(first.points[:4], first.values[:4])]
        pending = first.points[4:]
        resumed = drive(settings("async", seed=1 + 7919, history=history, pending=pending),
                        objective)
        self.check_points(resumed.points, space)
        keys = [point_key(p) for p in resumed.points]
        lost = [p for p in pending if point_key(p) not in keys]
        assert not lost, f"the resumed run never evaluated the points left running: {lost}"
        assert resumed.final["evaluations"] == self.budget == len(resumed.points) + 4, (
            f"resumed after 4 evaluations, a run of budget {self.budget} evaluated "
            f"{len(resumed.points)} more points and counts {resumed.final['evaluations']} in "
            f"all; expected {self.budget - 4} more, {self.budget} in all")
        repeated = [p for p, _ in history if point_key(p) in keys]
        assert not repeated, (
            f"the resumed run proposed again points of the history it was told: {repeated}; "
            f"a point told (a resumed study's history too) must never be proposed again")

    def check_learned(self, value, told_as, switch):
        """After 30 random points of :data:`PLANE` were told ``value(point)`` (``told_as``),
        the next points lie nearer the corner."""
        rng = random.Random(5)
        history = [{"x": rng.random(), "y": rng.random()} for _ in range(30)]
        algorithm = build_algorithm(self.settings(seed=2) | {"space": PLANE})
        algorithm.tell(history, [value(p) for p in history])
        proposed = algorithm.ask(4)
        assert proposed, f"ask(4) returned no points after 30 points were told {told_as}"
        told = sum(map(distance_to_corner, history)) / len(history)
        asked = sum(map(distance_to_corner, proposed)) / len(proposed)
        assert asked < 0.6 * told, (
            f"after 30 points of the unit square were told {told_as}, ask(4) proposed "
            f"{proposed}: {asked:.3f} from {CORNER} on average, the told ones {told:.3f}; "
            f"expected under {0.6 * told:.3f}, 0.6 times that (set {switch} = False for an "
            f"algorithm that does not learn from them)")

    def test_warm_start_informs_the_next_points(self):
        if self.learns:
            self.check_learned(distance_to_corner, f"with their distance to {CORNER} as the "
                               "value", "learns")

    def test_learns_from_the_curves_of_pruned_runs(self):
        """Runs that were all pruned (early in an ASHA study, most are) leave their curves to
        learn from: the next points go where the curves were lowest."""
        learns = self.learns if self.learns_from_pruned is None else self.learns_from_pruned
        if learns:
            self.check_learned(lambda p: PrunedResult({1: distance_to_corner(p) + 1.0,
                                                       3: distance_to_corner(p)}),
                               "as pruned runs (PrunedResult), each curve's last value its "
                               f"distance to {CORNER}", "learns_from_pruned")

    # --- checkpoints ------------------------------------------------------------------------

    def checkpointed(self, settings):
        """A new instance of the algorithm; the test is skipped when it has no state()."""
        algorithm = build_algorithm(settings)
        if algorithm.state() is None:
            import pytest

            pytest.skip(f"{self.algorithm} cannot be checkpointed: its state() returns None")
        return algorithm

    def restored(self, settings, state):
        """A new instance of the algorithm, restored from ``state``."""
        algorithm = build_algorithm(settings)
        algorithm.restore(state)
        return algorithm

    def rounds(self, algorithm, count, objective=None, space=None):
        """``count`` rounds of ask(slots) and tell (batch mode) of ``objective`` (default:
        the class's); the points of each round, checked as points of ``space`` (a GA JSON
        list, default :attr:`space`)."""
        objective = objective or self.objective
        asked = []
        for _ in range(count):
            points = algorithm.ask(self.slots)
            self.check_points(points, space)
            algorithm.tell(points, [objective(p) for p in points])
            asked.append(points)
        return asked

    def test_a_restored_state_continues_the_search_exactly(self):
        self.check_restored(self.settings(seed=5), self.objective, self.space)

    def check_restored(self, settings, objective, space):
        """An instance restored from a state (and one restored from its own state) proposes
        what the original proposed after the state was taken."""
        before, after = self.state_rounds
        original = self.checkpointed(settings)
        self.rounds(original, before, objective, space)
        state = original.state()
        assert isinstance(state, bytes), (
            f"state() returned a {type(state).__name__}; expected bytes, or None when the "
            f"algorithm cannot be checkpointed")
        expected = self.rounds(original, after, objective, space)
        assert any(expected), "the rounds after the checkpoint proposed nothing"
        restored = self.restored(settings, state)
        proposed = self.rounds(restored, after // 2, objective, space)
        again = self.restored(settings, restored.state())   # a restored instance's own state
        proposed += self.rounds(again, after - after // 2, objective, space)
        assert proposed == expected, (
            f"restored from its state, it proposed other points than the original did: round "
            f"{first_difference(expected, proposed)} (the state must hold everything that "
            f"decides the next proposals, the random generator's state included)")

    def test_a_restored_state_repeats_the_next_ask(self):
        settings = self.settings(seed=6)
        original = self.checkpointed(settings)
        self.rounds(original, self.state_rounds[0])
        state = original.state()
        asked = original.ask(self.slots)
        assert asked, f"ask({self.slots}) returned no points after {self.state_rounds[0]} rounds"
        again = self.restored(settings, state).ask(self.slots)
        assert again == asked, (
            f"restored from its state, its ask({self.slots}) returned {again}; expected "
            f"{asked}, what the original asked next (taking a state must change nothing)")

    def test_a_state_keeps_the_points_in_flight(self):
        settings, (before, after) = self.settings(seed=7), self.state_rounds
        original = self.checkpointed(settings)
        self.rounds(original, before)
        running = original.ask(self.slots)
        original.tell(running[:1], [self.objective(running[0])])
        running = running[1:] + original.ask(1)
        state = original.state()

        def finish(algorithm):
            """A point asked while those run, all their results out of order, more rounds."""
            more = algorithm.ask(1)
            told = running[::-1] + more
            algorithm.tell(told, [self.objective(p) for p in told])
            return [more] + self.rounds(algorithm, after)

        assert running, "no points were in flight when the state was taken"
        proposed, expected = finish(self.restored(settings, state)), finish(original)
        assert proposed == expected, (
            f"restored from a state taken with {len(running)} points in flight, it proposed "
            f"other points than the original did: round {first_difference(expected, proposed)} "
            f"(the state must hold the points asked and not yet told)")

    # --- conditional spaces -----------------------------------------------------------------

    def test_conditional_points_hold_exactly_their_active_parameters(self):
        for mode in ("batch", "async"):
            run = drive(self.conditional_settings(mode), self.conditional_objective)
            self.check_count(run, f"an {mode} run on a conditional space", self.conditional_space)
            assert run.points, f"an {mode} run on a conditional space proposed no points"

    def test_conditional_space_resumes_without_repeating_its_history(self):
        self.check_resume(self.conditional_settings, self.conditional_objective,
                          self.conditional_space)

    def test_a_restored_state_continues_exactly_on_a_conditional_space(self):
        self.check_restored(self.conditional_settings(seed=5), self.conditional_objective,
                            self.conditional_space)

    # --- several objectives -----------------------------------------------------------------

    def multiobjective_settings(self, mode="batch", seed=1, **extra):
        """Driver settings for a run with :attr:`objectives` objectives; skips the test for
        an algorithm of one objective."""
        if not (load(self.algorithm).multiobjective and self.several_objectives):
            import pytest

            pytest.skip(f"{self.algorithm} with {self.options} searches one objective only")
        settings = self.settings(mode, seed, **extra)
        settings["options"]["objectives"] = self.objectives
        return settings

    def unreliable_vectors(self):
        """:attr:`vector_objective` where every fourth run fails (a new count each call)."""
        counted = iter(range(10 ** 6))
        return lambda point: math.nan if next(counted) % 4 == 3 else self.vector_objective(point)

    def test_takes_vectors_infeasible_points_and_failures(self):
        for mode in ("batch", "async"):
            run = drive(self.multiobjective_settings(mode), self.unreliable_vectors())
            self.check_spent(run, f"an {mode} run of {self.objectives} objectives")
            assert any(isinstance(v, Objectives) and not v.feasible for v in run.values), (
                f"an {mode} run of {self.objectives} objectives proposed no infeasible point "
                f"(x > 1), so the check of infeasible results did not run: {run.points}")
            again = drive(self.multiobjective_settings(mode), self.unreliable_vectors())
            assert again.points == run.points, (
                f"two {mode} runs of {self.objectives} objectives under one seed differ: the "
                f"second's point {first_difference(run.points, again.points)}")

    def check_spent(self, run, what):
        """The run's points are valid (:meth:`check_points`), it spent its whole budget, and its
        final message counts every point."""
        self.check_points(run.points)
        assert run.final["evaluations"] == len(run.points) == self.budget, (
            f"{what}: {len(run.points)} points evaluated, {run.final['evaluations']} counted by "
            f"the final message; expected the whole budget of {self.budget} (does ask(n) "
            f"return [] before the budget is spent?)")

    def test_keeps_proposing_when_no_point_is_feasible(self):
        def infeasible(point):
            value = self.vector_objective(point)
            return Objectives(value.values, [1.0 + abs(v) for v in value.violations])

        for mode in ("batch", "async"):
            run = drive(self.multiobjective_settings(mode), infeasible)
            self.check_spent(run, f"an {mode} run where no point is feasible")

    def test_a_restored_state_continues_exactly_with_vectors(self):
        self.check_restored(self.multiobjective_settings(seed=8), self.vector_objective,
                            self.space)
