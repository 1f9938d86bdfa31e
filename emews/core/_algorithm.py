"""The ask/tell contract of search algorithms, how they are found, and when a search stops.

An algorithm is a class constructed as ``cls(space, seed=None, **options)``, where ``options`` is
the ``[algorithm]`` table of the study configuration. The ME driver (:mod:`emews.core._me`) calls
``ask`` and ``tell`` on the ME thread; the algorithm never sees queues, MPI or the store.
Algorithms are found by name or dotted path (:func:`load`).
"""

import copyreg
import importlib
import inspect
import io
import json
import math
import os
import pickle
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from types import ModuleType
from typing import TYPE_CHECKING, Any, Self, TypeAlias, cast

import numpy as np

from . import _queues as queues  # noqa: F401 - binds the name ``eqpy`` for classic ME modules
from . import _pareto as pareto
from ._vector import Objectives, finite_or_none   # Objectives: of the contract, apart for the wire
from .._errors import ConfigError, PluginError, missing_extra
from .._validation import FLAG, Choice, Maybe, Number, Rule, Table, Text, check

if TYPE_CHECKING:
    from .._space import Space

ENTRY_POINT_GROUP = "emews.algorithms"

Point: TypeAlias = dict[str, Any]   # a point: parameter name -> native value


class Algorithm:
    """Base class of search algorithms (ask/tell).

    Subclasses implement :meth:`ask` and usually :meth:`tell`; everything else has a default
    (each method says what it must do).

    Options arrive as keyword arguments of ``__init__``; one it does not take is refused with a
    :class:`~emews._errors.ConfigError` naming it before ``__init__`` runs (a class whose
    ``__init__`` takes ``**options`` checks those itself, e.g. with :func:`check_keywords`).
    Values that are not finite (``NaN`` from a failure, ``inf``, ``-inf``) must never crash an
    algorithm; the built-in ones treat all of them as failures. ``needs_space`` is False for
    algorithms that can run without a search-space file; ``finite`` is True for algorithms that
    end by themselves (a study of one needs no stopping rule). ``ready_share`` is how many points
    the async driver keeps ready beyond the busy slots, as a share of the slots
    (:func:`emews.core._me.ready_points`): a freed worker then gets a point at once instead of
    waiting for the ME's round trip. :class:`emews.testing.Conformance` checks an algorithm
    against this contract.

    ``multiobjective`` is True for algorithms that search several objectives at once. Only
    such a class is built for a study of ``k > 1`` objectives, with the keyword
    ``objectives=k`` added to its options; every other refuses such a study in one line.
    """

    needs_space: bool = True
    finite: bool = False
    ready_share: float = 0.0
    multiobjective: bool = False

    def __new__(cls, *args: Any, **options: Any) -> Self:
        """Refuse an option ``__init__`` does not take (a ConfigError, not a TypeError);
        ``objectives`` is the study's to give, never listed as an option."""
        check_keywords(cls.__init__, {k: v for k, v in options.items()
                                      if k not in ("space", "seed", "objectives")},
                       exclude=("self", "space", "seed", "objectives"), owner=cls.__name__)
        return super().__new__(cls)

    def __init__(self, space: "Space | None", seed: int | None = None) -> None:
        self.space = space
        self.seed = seed
        self.rng = np.random.default_rng(seed)

    def ask(self, n: int) -> list[Point]:
        """Return up to ``n`` new points (dicts of native values): fewer, or none, when the
        algorithm is exhausted or must wait for results."""
        raise NotImplementedError

    def tell(self, points: list[Point], values: list[float]) -> None:
        """Learn from finished evaluations, in any order and grouping, points never asked for
        (a resumed run's history) included. ``values`` are floats to minimize; a failure is
        ``NaN``; a run the study's pruner stopped is a :class:`PrunedResult` (a ``NaN``, a
        failure to an algorithm that does not look, that carries its learning curve). In a
        study of several objectives, or with constraints, a value is an :class:`Objectives`: a
        float (the first objective) that carries every objective, each to minimize, and how
        far each constraint is broken."""

    def done(self) -> bool:
        """True when the algorithm will propose nothing more (``ask`` then returns ``[]``)."""
        return False

    def running(self, points: list[Point]) -> None:
        """Points of a resumed run (not restored from a state) that were running when it was
        killed: the driver proposes them again before it asks for new ones, and tells their
        results like any other's. By default nothing is done (``pbt`` marks their members
        busy, so that no member trains twice at once)."""

    def describe(self) -> dict[str, Any] | None:
        """What the search chose to run, as JSON-able data (``auto``: its stages), which the
        study stores (meta ``search``) and ``emews status`` shows; ``None`` (the default): it
        runs what its name says."""
        return None

    def state(self) -> bytes | None:
        """Everything that decides what the algorithm proposes next (random generator states,
        populations, a surrogate's training data, the points asked and not yet told,
        counters), as bytes; or ``None`` (the default): it cannot be checkpointed, and the
        driver rebuilds it by telling it the history again. Taking a state changes nothing."""
        return None

    def restore(self, state: bytes) -> None:
        """Continue from ``state()`` of an instance built with the same space, seed and
        options: from then on, propose exactly what that instance would have, points in flight
        included (:func:`pack_state` and :func:`unpack_state` frame a state and check that it
        comes from the same algorithm)."""
        raise NotImplementedError(f"{type(self).__name__} saves no state to restore")


def pack_state(algorithm: Algorithm, data: Any, pickled: bool = False) -> bytes:
    """``data`` framed as the bytes that ``algorithm.state()`` returns.

    ``data`` is written as JSON (plain data: ``NaN`` and infinities allowed), or with pickle
    when ``pickled`` (library objects such as an optimizer), and compressed with zlib. A
    one-line JSON header names the algorithm's class and the format. Loading a pickle can run
    code: a state is trusted like any other checkpoint file the study writes, and is never read
    from anywhere else. A thread lock inside a library object is saved as a new, released one
    (Optuna 5.1's genetic samplers hold one and do not say how to pickle it).
    """
    header = {"algorithm": type(algorithm).__qualname__, "format": "pickle" if pickled else "json"}
    body = _pickled(data) if pickled else json.dumps(data, separators=(",", ":")).encode()
    return json.dumps(header).encode() + b"\n" + zlib.compress(body)


def _pickled(data: Any) -> bytes:
    """``data`` pickled, each thread lock in it as a new lock of its kind."""
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = {**copyreg.dispatch_table,
                              type(threading.Lock()): lambda lock: (threading.Lock, ()),
                              type(threading.RLock()): lambda lock: (threading.RLock, ())}
    pickler.dump(data)
    return buffer.getvalue()


def unpack_state(algorithm: Algorithm, state: bytes) -> Any:
    """The data that :func:`pack_state` framed; a ConfigError if another algorithm saved it."""
    header, _, body = bytes(state).partition(b"\n")
    try:
        saved = json.loads(header)
    except ValueError:
        saved = None
    expected = type(algorithm).__qualname__
    if not isinstance(saved, dict) or saved.get("algorithm") != expected:
        raise ConfigError("algorithm state", f"must be a state saved by {expected}",
                          saved.get("algorithm") if isinstance(saved, dict) else header[:40])
    try:
        body = zlib.decompress(body)
    except zlib.error:
        raise ConfigError("algorithm state", "must be a whole state (its data does not "
                          "decompress)", len(state), show_value=False) from None
    return pickle.loads(body) if saved.get("format") == "pickle" else json.loads(body)


def point_key(point: Point) -> str:
    """A canonical string for a point, to recognise the same point twice."""
    return json.dumps(point, sort_keys=True)


class PrunedResult(float):
    """The result of a run that the pruner stopped: ``NaN`` (it has no final value), with its
    learning ``curve`` (``{step: value}``, in step order) and the ``step`` it was stopped at.
    An algorithm that knows of pruning may learn from the curve (Optuna's pruned trials); any
    other takes it as a failure."""

    curve: dict[int, float | None]
    step: int | None

    def __new__(cls, curve: Mapping[int, float | None] | None = None) -> Self:
        self = super().__new__(cls, math.nan)
        self.curve = dict(sorted((curve or {}).items()))
        self.step = max(self.curve, default=None)
        return self

    @property
    def last(self) -> float:
        """The value the run last reported (``NaN`` when it reported none, or a NaN)."""
        value = None if self.step is None else self.curve[self.step]
        return math.nan if value is None else float(value)

    def __reduce__(self) -> tuple[type["PrunedResult"], tuple[dict[int, float | None]]]:
        return PrunedResult, (self.curve,)


def is_failure(value: float) -> bool:
    """True for results that carry no usable value: ``NaN``, ``inf`` and ``-inf``."""
    return not math.isfinite(value)


def failure_value(values: Iterable[float]) -> float | None:
    """What a failure counts as for a surrogate model: the worst finite value plus a tenth of
    the finite values' range (plus 1 when they are all equal); ``None`` when none is finite."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return None
    worst, spread = max(finite), max(finite) - min(finite)
    return worst + (0.1 * spread if spread > 0 else 1.0)


def pruned_value(last: float, finished: Iterable[float]) -> float | None:
    """What a pruned run counts as for a model of the results (``gp``, ``mbo``, the GA): its
    ``last`` reported value, moved into ``[worst finished value, failure_value(finished)]``:
    below every finished run and above every failure, as Optuna's TPE ranks pruned trials
    after the complete ones, and among other pruned runs in the order of their curves. While
    no run has finished it is ``last`` itself (early in an ASHA study most runs are pruned,
    and their curves are all there is to learn from). ``None`` when ``last`` is not finite:
    such a run counts as a failure."""
    if not math.isfinite(last):
        return None
    finite = [v for v in finished if math.isfinite(v)]
    if not finite:
        return float(last)
    return min(max(float(last), max(finite)), cast(float, failure_value(finite)))


def pruned_values(lasts: Iterable[float], finished: Iterable[float]) -> list[float | None]:
    """:func:`pruned_value` of each of ``lasts``, ``finished`` read once: each is ranked
    against the finished values' least and worst, all that it reads of them (a search that
    re-ranks every pruned run at each tell pays for the finished values once, not once a run)."""
    finite = [v for v in finished if math.isfinite(v)]
    ends = [min(finite), max(finite)] if finite else []
    return [pruned_value(last, ends) for last in lasts]


def optional_import(module: str, extra: str) -> ModuleType:
    """Import an optional library; when it is missing, name the pip extra that brings it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise missing_extra("[study].algorithm", f"the optional package {module!r} ({exc})",
                            extra, PluginError) from None


def check_option(name: str, value: Any, rule: Rule) -> Any:
    """``value`` of option ``name`` as ``rule`` (an :mod:`emews._validation` rule) accepts it;
    else a ConfigError naming ``[algorithm].NAME``, the rule and the value."""
    return check(f"[algorithm].{name}", rule, value)


def check_choice(name: str, value: Any, choices: Iterable[Any]) -> Any:
    """``value`` of option ``name`` when it is one of ``choices``; else a ConfigError."""
    return check_option(name, value, Choice(tuple(choices)))


def check_number(name: str, value: Any, minimum: float | None = None,
                 maximum: float | None = None, integer: bool = False, allow_none: bool = False,
                 above: float | None = None) -> Any:
    """``value`` of option ``name`` when it is a finite number within the bounds (``minimum``
    and ``maximum`` inclusive, ``above`` exclusive); else a ConfigError."""
    rule = Number(integer, minimum, maximum, above)
    return check_option(name, value, Maybe(rule) if allow_none else rule)


def check_flag(name: str, value: Any) -> bool:
    """``value`` of option ``name`` when it is ``true`` or ``false``; else a ConfigError."""
    return cast(bool, check_option(name, value, FLAG))


def check_text(name: str, value: Any) -> str:
    """``value`` of option ``name`` when it is a non-empty string (a path); else a ConfigError."""
    return cast(str, check_option(name, value, Text(nonempty=True)))


def check_table(name: str, value: Any, rules: Mapping[str, Rule]) -> dict[str, Any]:
    """``value`` of option ``name`` when it is a table whose keys all have a rule in ``rules``
    (:mod:`emews._validation` rules) that accepts their value; else a ConfigError naming the
    key (``[algorithm].NAME.KEY``)."""
    return cast(dict[str, Any], check_option(name, value, Table(rules, name)))


def check_keywords(target: Callable[..., Any], options: Mapping[str, Any],
                   exclude: Sequence[str] = (), owner: str | None = None) -> None:
    """Raise a ConfigError for an option that ``target`` (a callable) does not take.

    A ``target`` that takes ``**kwargs`` takes every name. ``owner`` names ``target`` in the
    message (default: its qualified name).
    """
    parameters = inspect.signature(target).parameters
    if any(p.kind == p.VAR_KEYWORD for p in parameters.values()):
        return
    allowed = sorted(name for name, p in parameters.items() if name not in exclude
                     and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))
    for name in options:
        if name not in allowed:
            listing = f"options: {', '.join(allowed)}" if allowed else "it takes none"
            raise ConfigError(f"[algorithm].{name}", f"is not an option of "
                              f"{owner or target.__qualname__} ({listing})", options[name])


def available() -> list[str]:
    """Names of the algorithms registered under the ``emews.algorithms`` entry point."""
    return sorted(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))


def load(name: str, where: str = "[study].algorithm") -> Any:
    """Resolve an algorithm name (of the entry-point group ``emews.algorithms``) or dotted path
    (``package.module:Class`` or ``package.module.Class``) to an :class:`Algorithm` subclass or
    a classic EQ/Py ME module (one with ``run()``, which runs unchanged)."""
    if not isinstance(name, str) or not name:
        raise ConfigError(where, "must be an algorithm name or a dotted path", name)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            try:
                return ep.load()
            except ImportError as exc:
                raise PluginError(where, f"algorithm {name!r} needs a missing package ({exc})",
                                  name, show_value=False) from None
    rule = (f"must be one of {available()}, a dotted path such as 'package.module:Class', "
            f"or an EQ/Py module")
    obj = import_dotted(name, where, rule)
    if (isinstance(obj, type) and issubclass(obj, Algorithm)) or \
            (not isinstance(obj, type) and callable(getattr(obj, "run", None))):
        return obj
    raise PluginError(where, "must name an Algorithm subclass or an EQ/Py module with run()", name)


def import_dotted(path: str, where: str,
                  rule: str = "must be an importable 'module:attribute' path") -> Any:
    """Import ``module:attr``, ``module.attr`` or a module; errors name ``where``, and what
    was missing: the module (with the directories searched), or the attribute."""
    module_name, _, attr = path.partition(":")
    candidates = [(module_name, attr)] if attr else [(path, "")]
    if not attr and "." in path:
        package, _, name = path.rpartition(".")
        candidates.append((package, name))
    missing = None
    for module_name, attr in candidates:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name and module_name.startswith(exc.name):
                missing = missing or f"no module {exc.name!r} in {_searched()}"
                continue
            raise PluginError(where, f"importing {module_name!r} failed ({exc})", path,
                              show_value=False) from None
        except Exception as exc:  # noqa: BLE001 - a plugin's own import error, reported plainly
            raise PluginError(where, f"importing {module_name!r} failed "
                              f"({type(exc).__name__}: {exc})", path, show_value=False) from None
        if not attr:
            return module
        if hasattr(module, attr):
            return getattr(module, attr)
        missing = f"module {module_name!r} ({getattr(module, '__file__', None)}) has no " \
                  f"attribute {attr!r}"   # found the module: the precise part that is missing
    raise PluginError(where, f"{rule} ({missing})", path)


def _searched() -> str:
    """The directories a user's module is looked for in: the Python path without the
    interpreter's own library and its installed packages."""
    own = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    mine = [os.path.abspath(p or ".") for p in sys.path
            if not any(os.path.realpath(p or ".").startswith(prefix) for prefix in own)]
    return ", ".join(dict.fromkeys(mine)) or "no directory of its own"


@dataclass(frozen=True)
class Verdict:
    """What the limits say to the ME driver: how many more points it may propose (``allowed``,
    net of the points in flight; ``None``: no budget), why the search must stop now
    (``reason``, ``None`` while it goes on) and the limits' :meth:`Stopper.counts`."""

    allowed: int | None
    reason: str | None
    counts: dict[str, Any]


DESIGN = 10   # at most this many first vectors derive a Stopper's reference point


@dataclass
class Stopper:
    """When a search stops: a table of small predicates, checked after every result.

    ``budget`` (evaluations, resumed ones included), ``max_iterations`` (ask/tell rounds that
    produced points), ``tol`` with ``patience`` (no improvement larger than ``tol`` within
    ``patience`` evaluations), ``target`` (a value at or below it), ``max_time`` (seconds) and
    ``step_budget`` (steps that models reported having trained, over all runs).

    Told :class:`Objectives`, ``tol`` and ``patience`` apply to the hypervolume of the feasible
    front against ``reference_point``, or, without one, the point derived from the first
    ``min(patience, DESIGN)`` usable vectors told (each of which counts as an improvement).

    The master counts a study's limits in one Stopper, and tells the ME driver its
    :meth:`verdict`; where no master counts (Swift/T, :func:`emews.testing.drive`), the driver
    counts its own.
    """

    budget: int | None = None
    max_iterations: int | None = None
    tol: float = 0.0
    patience: int | None = None
    target: float | None = None
    max_time: float | None = None
    step_budget: int | None = None
    reference_point: list[float] | None = None

    def __post_init__(self) -> None:
        self.steps = 0
        self.evaluations = 0
        self.iterations = 0
        self.best = math.inf
        self.last_improvement = 0
        self.started = time.monotonic()
        self.front: list[list[float]] = []         # of told Objectives, with patience
        self.hypervolume = 0.0
        self.design: list[list[float]] = []        # the first vectors, until a reference

    def record(self, values: Iterable[float]) -> None:
        """Count finished evaluations and track the best value (the front's hypervolume,
        for told :class:`Objectives` with ``patience``)."""
        for value in values:
            self.evaluations += 1
            if isinstance(value, Objectives) and self.patience is not None:
                self._record_vector(value, self.patience)
            elif value < self.best - self.tol:   # never true of NaN
                self.last_improvement = self.evaluations
            if value < self.best:
                self.best = value

    def _record_vector(self, value: Objectives, patience: int) -> None:
        """Add a told vector to the front: an improvement while the first design is told, then
        when the hypervolume grows by more than ``tol``."""
        if not pareto.usable([value.values], [value.feasible]):
            return
        front = self.front + [list(value.values)]
        self.front = [front[i] for i in pareto.front(front)]
        if self.reference_point is None:
            self.last_improvement = self.evaluations
            self.design.append(list(value.values))
            if len(self.design) < min(patience, DESIGN):
                return
            self.reference_point = pareto.reference_point(self.design)
        volume = pareto.hypervolume(self.front, self.reference_point)
        if volume > self.hypervolume + self.tol:
            self.last_improvement = self.evaluations
        self.hypervolume = max(volume, self.hypervolume)

    def record_steps(self, steps: int) -> None:
        """Count ``steps`` more trained (a report's step beyond its run's last one)."""
        self.steps += steps

    def remaining(self) -> int | None:
        """How many more evaluations the budget allows (``None``: no budget)."""
        return None if self.budget is None else max(self.budget - self.evaluations, 0)

    def counts(self) -> dict[str, Any]:
        """What the rules have counted so far (JSON-serializable; :meth:`restore` takes it)."""
        counts: dict[str, Any] = {"evaluations": self.evaluations, "iterations": self.iterations,
                  "last_improvement": self.last_improvement, "steps": self.steps,
                  "best": finite_or_none(self.best)}
        if self.front:
            counts.update(front=self.front, hypervolume=self.hypervolume,
                          reference_point=self.reference_point, design=list(self.design))
        return counts

    def restore(self, counts: dict[str, Any]) -> None:
        """Go on from :meth:`counts` (of a checkpoint)."""
        self.evaluations, self.iterations = counts["evaluations"], counts["iterations"]
        self.last_improvement = counts["last_improvement"]
        self.steps = counts.get("steps", 0)   # a checkpoint from before step budgets
        self.best = math.inf if counts["best"] is None else counts["best"]
        if "front" in counts:   # a study of several objectives, with patience
            self.front, self.hypervolume = counts["front"], counts["hypervolume"]
            self.reference_point, self.design = counts["reference_point"], counts["design"]

    def verdict(self, in_flight: int = 0, reason: str | None = None) -> Verdict:
        """The :class:`Verdict` for a driver with ``in_flight`` points not yet counted;
        ``reason`` (a stop already decided) wins over the rules'."""
        remaining = self.remaining()
        return Verdict(None if remaining is None else max(remaining - in_flight, 0),
                       reason or self.reason(), self.counts())

    def reason(self, iterations: bool = True) -> str | None:
        """Why the search must stop now, or ``None``; with ``iterations=False``, a finished
        iteration does not count (the current one may go on)."""
        if self.budget is not None and self.evaluations >= self.budget:
            return f"evaluation budget of {self.budget} reached"
        if iterations and self.max_iterations is not None and \
                self.iterations >= self.max_iterations:
            return f"iteration limit of {self.max_iterations} reached"
        if self.patience is not None and \
                self.evaluations - self.last_improvement >= self.patience:
            what = "hypervolume improvement" if self.front else "improvement"
            return (f"converged: no {what} larger than {self.tol} in {self.patience} "
                    "evaluations")
        return self.final_reason()

    def final_reason(self) -> str | None:
        """Why not even a paused run may go on (:mod:`emews.core._thaw`), or ``None``: a
        ``target`` reached, the time or the steps spent (the budget, the iterations and the
        patience end only the proposals: the drain thaws paused runs)."""
        if self.target is not None and self.best <= self.target:
            return f"target value {self.target} reached"
        if self.max_time is not None and time.monotonic() - self.started >= self.max_time:
            return f"time limit of {self.max_time} s reached"
        if self.step_budget is not None and self.steps >= self.step_budget:
            return f"step budget of {self.step_budget} reached"
        return None
