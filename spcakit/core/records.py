"""Frozen records a driver threads: the carry between rounds, the state of an iteration, the outcome."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from spcakit.core.errors import ZeroLoadingError


def arrays_equal(a: np.ndarray | None, b: np.ndarray | None) -> bool:
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

    def without(self, key: str) -> Carry:
        """This carry without ``key`` (itself when it has none)."""
        return Carry(tuple((k, v) for k, v in self.entries if k != key)) if key in self else self

    def __contains__(self, key: str) -> bool:
        return any(k == key for k, _ in self.entries)


#: Carry key of a generalized problem's constraint: the orthonormal ``p x t`` :math:`Q` of
#: :math:`B = I - QQ^\top`; a round then maximises :math:`x^\top C x` s.t. :math:`x^\top B x = 1`.
CONSTRAINT = "constraint"


#: Carry key the deflation driver sets for its deflator: ``(unit, product)``, the unit loading just found and
#: :math:`C` times it, when the loading's own run already made that product (:meth:`~spcakit.core.protocols.Updater.
#: loading_product`); absent otherwise. A deflator that needs :math:`Cx` takes it instead of another pass over the data.
LOADING_PRODUCT = "loading.product"


#: Carry key the block driver sets for its updater's ``init`` when the run's truncation keeps the ``k`` largest
#: magnitudes of each column (:meth:`~spcakit.core.protocols.Truncator.keeps`): ``k``. An updater may then compute
#: :math:`Z` exactly only where that choice looks (:mod:`spcakit.numerics.operators.screen`).
TRUNCATION_KEEPS = "truncation.keeps"


#: Carry key the drivers set for the updater's ``init``: ``(component, count, started)``, the 0-based index of the
#: component being fitted, how many the run fits, and :func:`time.perf_counter` at the run's start. A part with a
#: time limit for the whole run gives each component its share of what is left (the ``exact`` solver).
COMPONENT = "component"


def known_product(carry: Carry, unit: np.ndarray, covariance: Any = None) -> np.ndarray | None:
    """The carry's :data:`LOADING_PRODUCT` for exactly this ``unit`` loading, else ``None``; ``None`` too when the
    ``covariance`` given is explicit (it takes its own product, :math:`O(p^2)`, so that its results do not change)."""
    if covariance is not None and covariance.explicit() is not None:
        return None
    known = carry.get(LOADING_PRODUCT)
    return known[1] if known is not None and arrays_equal(known[0], unit) else None


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


def column_norms(x: np.ndarray) -> np.ndarray:
    """Each column's Euclidean length (``x``: ``p x r`` or a vector); rescaled where squares over- or underflow."""
    squares = np.einsum("i...,i...->...", x, x)  # no p x r temporary
    if np.all(np.isfinite(squares) & (squares >= np.finfo(float).tiny)):
        return np.sqrt(squares)
    largest = np.max(np.abs(x), axis=0, initial=0.0)
    scaled = x / np.where(largest > 0, largest, 1.0)
    return largest * np.sqrt(np.einsum("i...,i...->...", scaled, scaled))


def nonzero_column_norms(x: np.ndarray) -> np.ndarray:
    """:func:`column_norms`, or :class:`~spcakit.core.errors.ZeroLoadingError` when a column is zero (it has no
    unit-length version)."""
    norms = column_norms(x)
    if np.any(norms == 0):
        raise ZeroLoadingError("a loading vector is entirely zero and cannot be normalised")
    return norms


def unit_columns(x: np.ndarray, norms: np.ndarray | None = None) -> np.ndarray:
    """``x`` with each column scaled to unit Euclidean length, a new array in C order whatever ``x``'s layout;
    :class:`~spcakit.core.errors.ZeroLoadingError` for a zero column. ``norms``: the columns' lengths, when known."""
    lengths = nonzero_column_norms(x) if norms is None else norms
    return np.divide(x, lengths, out=np.empty(x.shape))


class CapReached(str):
    """A stopping reason that says the iterations hit a cap before their convergence test passed.

    A stopper returns it (instead of a plain ``str``) so that :func:`spcakit.fit`
    can warn that the result is not converged; it prints like any reason. ``advice`` says what would let
    the run finish (by default: a higher iteration cap or a looser tolerance).
    """

    advice = "raise the stopper's iteration cap or loosen its tolerance"

    def __new__(cls, reason: str, advice: str | None = None) -> CapReached:
        made = super().__new__(cls, reason)
        if advice is not None:
            made.advice = advice
        return made

    def __repr__(self) -> str:
        return f"CapReached({str(self)!r})"


class Proved(str):
    """A stopping reason that carries an upper bound the method proved for its component (the ``exact`` search's
    certificate); it prints like any reason. See :func:`with_proved_bound`."""


def with_proved_bound(reason: str, bound: float, *, given_earlier: bool) -> str:
    r"""``reason`` (a plain reason or a :class:`CapReached`) carrying ``bound``, an upper bound the method proved on
    :math:`\max x^\top C_t x / x^\top B x` over the loadings with its number of nonzeros, on the matrix its
    component was fitted to.

    ``given_earlier``: the method maximised the variance the loading adds to the earlier ones (Mackey's generalized
    deflation, :math:`C_t = (I - P)C(I - P)`, :math:`B = I - P`, :math:`P` the projection onto their span). The first
    loading's bound is one on the sparse eigenvalue of :math:`C` itself, which the result's ``bound`` metric takes
    (:func:`spcakit.analysis.certificate.cumulative_bounds`); :func:`proved_bound` reads it back.
    """
    made: str = reason if isinstance(reason, CapReached) else Proved(reason)
    made.proved_bound = float(bound)  # type: ignore[attr-defined]
    made.given_earlier = bool(given_earlier)  # type: ignore[attr-defined]
    return made


def proved_bound(reason: str, component: int) -> float | None:
    """The bound ``reason`` carries (:func:`with_proved_bound`) when it bounds the sparse eigenvalue of the covariance
    itself: the first loading's (``component`` 0); else ``None`` (a later loading's is for what the earlier left)."""
    bound = getattr(reason, "proved_bound", None)
    if bound is None or component != 0:
        return None
    return float(bound)


class IssuedWarning(str):
    """A message of :attr:`Result.warnings` that :func:`spcakit.fit` has already issued as a Python warning
    (a :class:`~spcakit.core.errors.ConstantColumnWarning`): code that turns a result's warnings into Python
    warnings (:class:`spcakit.SparsePCA`) skips it. It prints like any message."""

    def __repr__(self) -> str:
        return f"IssuedWarning({str(self)!r})"


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
        ``x`` with unit-length columns: made from ``x`` when asked for
        (the drivers hold ``x`` alone between steps, one ``p x r`` array
        fewer), unless given to the constructor.
    relative_change
        :math:`\\|X^{(t)} - X^{(t-1)}\\|_F / \\sqrt{r}` of the unit loadings
        (``inf`` before the first step).
    objective_history
        The updater's objective, one value per completed step.
    updater_state
        What the updater carries from step to step (its ``init`` and
        ``propose`` return it; see :class:`~spcakit.core.protocols.Updater`).
    norms
        The lengths of ``x``'s columns when known (the step that made ``x`` measured them), else ``None``.
    """

    iteration: int
    x: np.ndarray = attrs.field(eq=attrs.cmp_using(eq=arrays_equal))
    _given_loadings: np.ndarray | None = attrs.field(default=None, alias="loadings", eq=False, repr=False)
    relative_change: float = float("inf")
    objective_history: tuple[float, ...] = ()
    updater_state: Any = attrs.field(default=None, eq=False)
    norms: np.ndarray | None = attrs.field(default=None, eq=False, repr=False)

    @property
    def loadings(self) -> np.ndarray:
        """``x`` with unit-length columns, in C order whatever ``x``'s layout (a new array each time, unless given to
        the constructor)."""
        if self._given_loadings is not None:
            return self._given_loadings
        return unit_columns(self.x, self.norms)

    def column_norms(self) -> np.ndarray:
        """The lengths of ``x``'s columns: :attr:`norms`, or measured."""
        return column_norms(self.x) if self.norms is None else self.norms


@attrs.frozen(kw_only=True)
class Outcome:
    """What a driver returns: loadings and how the iterations went."""

    loadings: np.ndarray = attrs.field(eq=attrs.cmp_using(eq=arrays_equal))
    iterations: int
    stopping_reasons: tuple[str, ...]
    objective_history: tuple[float, ...] = ()


