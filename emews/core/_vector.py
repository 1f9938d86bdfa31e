""":class:`Objectives` (of the algorithm contract; here, apart, so that the EQ/Py wire decodes
it too), and numbers as JSON holds them (NaN and the infinities as null)."""

import math
from collections.abc import Iterable
from typing import Any, Self


class Objectives(float):
    """The result of an evaluation in a study of several objectives, or with constraints.

    As a float it is the first objective (so an algorithm of one objective, or a classic ME
    reading one number, sees that). ``values`` holds every objective in the order of
    ``[study] objectives``, each to minimize (the driver negates those to maximize);
    ``violations`` holds one number per constraint, in the order of ``[study] constraints``:
    how far the point breaks it (0.0 when it holds). A failed evaluation is told as a plain
    ``NaN``, never as an :class:`Objectives`.
    """

    values: tuple[float, ...]
    violations: tuple[float, ...]

    def __new__(cls, values: Iterable[float], violations: Iterable[float] = ()) -> Self:
        numbers = tuple(float(v) for v in values)
        self = super().__new__(cls, numbers[0] if numbers else math.nan)
        self.values = numbers
        self.violations = tuple(float(v) for v in violations)
        return self

    @property
    def feasible(self) -> bool:
        """True when the point breaks no constraint."""
        return all(v <= 0.0 for v in self.violations)

    def __reduce__(self) -> tuple[type["Objectives"], tuple[tuple[float, ...], tuple[float, ...]]]:
        return Objectives, (self.values, self.violations)

    def __repr__(self) -> str:
        return f"Objectives({list(self.values)!r}, violations={list(self.violations)!r})"


def finite_or_none(value: float) -> float | None:
    """``value``, or ``None`` for NaN and the infinities (JSON's null, and SQL's NULL)."""
    return value if math.isfinite(value) else None


def json_numbers(data: Any) -> Any:
    """``data`` with each float in it, nested in lists, tuples and dicts, as
    :func:`finite_or_none` has it (tuples become lists): what strict JSON holds
    (``json.dumps(..., allow_nan=False)``; PostgreSQL's ``jsonb`` refuses ``NaN``)."""
    if isinstance(data, float):
        return finite_or_none(data)
    if isinstance(data, dict):
        return {key: json_numbers(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [json_numbers(value) for value in data]
    return data


def nan_for_none(values: Iterable[float | None]) -> list[float]:
    """``values`` as floats, each ``None`` (null, as :func:`json_numbers` writes a non-finite
    number) as NaN."""
    return [math.nan if value is None else float(value) for value in values]
