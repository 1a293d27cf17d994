"""Frozen records threaded through the drivers and returned to users."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np


def _arrays_equal(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    if a is None or b is None:
        return a is b
    return a.shape == b.shape and bool(np.array_equal(a, b))


@attrs.frozen
class Carry:
    r"""What a run hands from one round of a driver to the next: entries by key.

    The initializer's ``prepare`` makes the first one; each deflator returns
    the next; the initializer and the updater of every round read it. A part
    keeps its entries under keys it documents, e.g. ``"constraint"`` for the
    orthonormal :math:`Q` of a generalized problem's :math:`B = I - QQ^\top`
    (:data:`CONSTRAINT`). It is immutable: :meth:`set` returns a new carry.
    """

    entries: tuple[tuple[str, Any], ...] = attrs.field(default=(), eq=False)

    def get(self, key: str, default: Any = None) -> Any:
        for k, v in self.entries:
            if k == key:
                return v
        return default

    def set(self, key: str, value: Any) -> Carry:
        return Carry(tuple((k, v) for k, v in self.entries if k != key) + ((key, value),))

    def __contains__(self, key: str) -> bool:
        return any(k == key for k, _ in self.entries)


#: Carry key of a generalized problem's constraint: the orthonormal ``p x t`` :math:`Q` of
#: :math:`B = I - QQ^\top`; a round then maximises :math:`x^\top C x` s.t. :math:`x^\top B x = 1`.
CONSTRAINT = "constraint"


def constraint_matmat(carry: Carry, v: np.ndarray) -> np.ndarray:
    """:math:`Bv` for the carry's constraint (``v`` itself when there is none)."""
    q = carry.get(CONSTRAINT)
    return v if q is None else v - q @ (q.T @ v)


def constraint_submatrix(carry: Carry, support: np.ndarray) -> np.ndarray:
    """:math:`B_{SS}` for the variables ``support`` (the identity when there is no constraint)."""
    eye = np.eye(len(support))
    q = carry.get(CONSTRAINT)
    if q is None:
        return eye
    qs = q[support]
    return eye - qs @ qs.T


class CapReached(str):
    """A stopping reason that says the iterations hit a cap before their convergence test passed.

    A stopper returns it (instead of a plain ``str``) so that :func:`spcakit.fit`
    can warn that the result is not converged; it prints like any reason.
    """

    def __repr__(self) -> str:
        return f"CapReached({str(self)!r})"


@attrs.frozen(kw_only=True)
class IterState:
    """One iteration of the block loop.

    Attributes
    ----------
    iteration
        Number of completed update + truncation steps (0 before the first).
    x
        The current iterate as the truncation returned it (column lengths
        as the updater needs them).
    loadings
        ``x`` with unit-length columns.
    relative_change
        :math:`\\|X^{(t)} - X^{(t-1)}\\|_F / \\sqrt{r}` of the unit loadings
        (``inf`` before the first step).
    objective_history
        The updater's objective, one value per completed step.
    updater_state
        What the updater carries from step to step (its ``init`` and
        ``propose`` return it; see :class:`~spcakit.protocols.Updater`).
    """

    iteration: int
    x: np.ndarray = attrs.field(eq=attrs.cmp_using(eq=_arrays_equal))
    loadings: np.ndarray = attrs.field(eq=attrs.cmp_using(eq=_arrays_equal))
    relative_change: float = float("inf")
    objective_history: tuple[float, ...] = ()
    updater_state: Any = attrs.field(default=None, eq=False)


@attrs.frozen(kw_only=True)
class Outcome:
    """What a driver returns: loadings and how the iterations went."""

    loadings: np.ndarray = attrs.field(eq=attrs.cmp_using(eq=_arrays_equal))
    iterations: int
    stopping_reasons: tuple[str, ...]
    objective_history: tuple[float, ...] = ()


@attrs.frozen(kw_only=True)
class Result:
    """The result of :func:`spcakit.fit`.

    Attributes
    ----------
    method
        Name of the method spec that ran.
    spec
        The full composition that ran, as a plain dictionary.
    loadings
        ``p x r`` array, unit-length columns, sign fixed so that each
        column's largest-magnitude entry is positive.
    feature_names
        One name per row of ``loadings``.
    metrics
        Criteria of the papers (see :mod:`spcakit.metrics`).
    iterations
        Total number of update + truncation steps over all components.
    stopping_reason
        Why the iterations stopped (per component for deflation methods).
    objective_history
        The updater's objective at every step.
    seconds
        Wall-clock time of the driver, initialisation included.
    warnings
        What the user should know about the result, e.g. a component that
        stopped at its iteration cap before converging.
    """

    method: str
    spec: dict[str, Any]
    loadings: np.ndarray = attrs.field(eq=attrs.cmp_using(eq=_arrays_equal))
    feature_names: tuple[str, ...]
    metrics: dict[str, Any]
    iterations: int
    stopping_reason: str
    objective_history: tuple[float, ...] = ()
    seconds: float = 0.0
    warnings: tuple[str, ...] = ()

    @property
    def r(self) -> int:
        return self.loadings.shape[1]

    @property
    def p(self) -> int:
        return self.loadings.shape[0]

    def components(self, digits: int | None = None) -> list[list[tuple[str, float]]]:
        """Per loading, its nonzero variables as ``(name, weight)``, largest magnitude first.

        With ``digits``, magnitudes equal when rounded to that many decimals
        count as equal and keep the variables' order, so that what is printed
        with ``digits`` decimals is ordered the same on every machine
        (rounding noise in the last bits never reorders equal weights).
        """
        out = []
        for j in range(self.r):
            col = self.loadings[:, j]
            idx = np.nonzero(col)[0]
            magnitude = np.abs(col[idx]) if digits is None else np.round(np.abs(col[idx]), digits)
            idx = idx[np.argsort(-magnitude, kind="stable")]
            out.append([(self.feature_names[i], float(col[i])) for i in idx])
        return out

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of ``spcakit run --json``."""
        return {
            "method": self.method,
            "spec": self.spec,
            "r": self.r,
            "p": self.p,
            "feature_names": list(self.feature_names),
            "loadings": self.loadings.tolist(),
            "metrics": self.metrics,
            "iterations": self.iterations,
            "stopping_reason": self.stopping_reason,
            "objective_history": list(self.objective_history),
            "seconds": self.seconds,
            "warnings": list(self.warnings),
        }
