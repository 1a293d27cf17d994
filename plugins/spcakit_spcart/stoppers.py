r"""Stoppers: when the alternating iterations end.

The SPCArt paper's rule (§6) is "the relative change of loadings
:math:`\|X^{(t)} - X^{(t-1)}\|_F/\sqrt r < 0.01` or iterations exceed 200":
``any-of`` of ``relative-change`` and ``max-iterations``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs

from spcakit.errors import InvalidParameterError
from spcakit.protocols import Stopper
from spcakit.state import IterState


@attrs.frozen
class MaxIterations:
    """Stop after ``n`` update + truncation steps."""

    n: int

    def __call__(self, state: IterState) -> str | None:
        return f"reached the iteration limit ({self.n})" if state.iteration >= self.n else None


@attrs.frozen
class RelativeChange:
    """Stop when the relative change of the unit loadings falls below ``tol``."""

    tol: float

    def __call__(self, state: IterState) -> str | None:
        if state.relative_change < self.tol:
            return f"relative change {state.relative_change:.3g} < {self.tol:g}"
        return None


@attrs.frozen
class ObjectiveChange:
    r"""Stop when the updater's objective changes by less than ``tol`` relative to its last value.

    The objective is the updater's own (for ``gpower`` the unpenalised
    :math:`\|AX\|_*`), so this is in the spirit of, not identical to,
    GPower's published rule, which watches its penalised objective.
    """

    tol: float

    def __call__(self, state: IterState) -> str | None:
        history = state.objective_history
        if len(history) < 2 or not all(math.isfinite(v) for v in history[-2:]):
            return None
        previous, current = history[-2], history[-1]
        change = abs(current - previous) / max(abs(previous), 1e-300)
        return f"relative objective change {change:.3g} < {self.tol:g}" if change < self.tol else None


@attrs.frozen
class AnyOf:
    """Stop as soon as one of ``stoppers`` does; its reason is reported."""

    stoppers: tuple[Stopper, ...]

    def __call__(self, state: IterState) -> str | None:
        for stopper in self.stoppers:
            reason = stopper(state)
            if reason:
                return reason
        return None


def make_max_iterations(n: int = 200) -> MaxIterations:
    try:
        valid = not isinstance(n, bool) and float(n).is_integer() and int(n) >= 1
    except (TypeError, ValueError, OverflowError):
        valid = False
    if not valid:
        raise InvalidParameterError(f"max-iterations: n must be a positive integer; got {n!r}")
    return MaxIterations(int(n))


def _positive_tol(tol: object, part: str) -> float:
    if isinstance(tol, bool):
        raise InvalidParameterError(f"{part}: tol must be a positive number; got {tol!r}")
    try:
        value = float(tol)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InvalidParameterError(f"{part}: tol must be a number; got {tol!r}") from None
    if not (value > 0 and math.isfinite(value)):
        raise InvalidParameterError(f"{part}: tol must be a positive number; got {tol!r}")
    return value


def make_relative_change(tol: float = 0.01) -> RelativeChange:
    return RelativeChange(_positive_tol(tol, "relative-change"))


def make_objective_change(tol: float = 1e-4) -> ObjectiveChange:
    return ObjectiveChange(_positive_tol(tol, "objective-change"))


def make_any_of(stoppers: Sequence[Stopper] = ()) -> AnyOf:
    if isinstance(stoppers, (str, bytes)) or not isinstance(stoppers, Sequence) or not stoppers or not all(
        callable(s) for s in stoppers
    ):
        raise InvalidParameterError("any-of needs a non-empty list of stoppers, e.g. [{name='max-iterations', n=200}]")
    return AnyOf(tuple(stoppers))
