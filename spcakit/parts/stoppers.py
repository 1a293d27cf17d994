r"""Stoppers: when the alternating iterations end.

The SPCArt paper's rule (§6) is "the relative change of loadings
:math:`\|X^{(t)} - X^{(t-1)}\|_F/\sqrt r < 0.01` or iterations exceed 200":
``any-of`` of ``relative-change`` and ``max-iterations``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs

from spcakit.core.errors import InvalidParameterError
from spcakit.core.protocols import Stopper, part
from spcakit.core.records import CapReached, IterState
from spcakit.core.fields import integer, positive, to_float, to_int

PAPER = "Hu, Pan, Wang, Wu - Sparse Principal Component Analysis via Rotation and Truncation"


@part("max-iterations")
class MaxIterations(Stopper):
    """stop after n steps (default 200)"""

    n: int = attrs.field(default=200, converter=to_int, validator=integer(1))

    def __call__(self, state: IterState) -> str | None:
        return f"reached the iteration limit ({self.n})" if state.iteration >= self.n else None


@part("one-step")
class OneStep(Stopper):
    """stop after the one step a method that does not iterate takes (PCA, simple thresholding, SPCA-SP's rounds)"""

    def __call__(self, state: IterState) -> str | None:
        return "one step: the method does not iterate" if state.iteration >= 1 else None


@part("relative-change", paper=PAPER)
class RelativeChange(Stopper):
    """stop when ||X_t - X_t-1||_F / sqrt(r) < tol (default 0.01)"""

    tol: float = attrs.field(default=0.01, converter=to_float, validator=positive)

    def __call__(self, state: IterState) -> str | None:
        if state.relative_change < self.tol:
            return f"relative change {state.relative_change:.3g} < {self.tol:g}"
        return None


@part("objective-change")
class ObjectiveChange(Stopper):
    r"""stop when the updater's objective changes by < tol relative (default 1e-4)

    The objective is the updater's own (for ``gpower`` the unpenalised
    :math:`\|AX\|_*`), so this is in the spirit of, not identical to,
    GPower's published rule, which watches its penalised objective.
    """

    tol: float = attrs.field(default=1e-4, converter=to_float, validator=positive)

    def __call__(self, state: IterState) -> str | None:
        history = state.objective_history
        if len(history) < 2 or not all(math.isfinite(v) for v in history[-2:]):
            return None
        previous, current = history[-2], history[-1]
        change = abs(current - previous) / max(abs(previous), 1e-300)
        return f"relative objective change {change:.3g} < {self.tol:g}" if change < self.tol else None


def _stopper_list(value: object) -> object:
    return tuple(value) if isinstance(value, list) else value


def _check_stoppers(instance: object, attribute: object, value: object) -> None:
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes)) or not value or not all(
        isinstance(s, Stopper) for s in value
    ):
        raise InvalidParameterError("any-of needs a non-empty list of stoppers, e.g. [{name='max-iterations', n=200}]")


@part("any-of")
class AnyOf(Stopper):
    """stop when any listed stopper does; its reason is reported

    When ``max-iterations`` stops the run while the list also holds a
    convergence test, the reason is a :class:`~spcakit.core.records.CapReached`:
    the result is not converged, and :func:`spcakit.fit` warns about it.
    """

    stoppers: tuple[Stopper, ...] = attrs.field(default=(), converter=_stopper_list, validator=_check_stoppers)

    def __call__(self, state: IterState) -> str | None:
        for stopper in self.stoppers:
            reason = stopper(state)
            if reason:
                if isinstance(stopper, MaxIterations) and any(not isinstance(s, MaxIterations) for s in self.stoppers):
                    return CapReached(reason)
                return reason
        return None


STOPPERS = [MaxIterations, OneStep, RelativeChange, ObjectiveChange, AnyOf]
