"""The operator protocol (:class:`CovarianceOperator`) and the access every operator shares (:class:`OperatorAccess`)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np


def array_eq(a: np.ndarray, b: np.ndarray) -> bool:
    return a is b or (a.shape == b.shape and bool(np.array_equal(a, b)))


def sparse_product(op: CovarianceOperator, w: np.ndarray) -> np.ndarray:
    r""":math:`CW` from the nonzero rows :math:`I` of ``w`` alone, :math:`C_{:,I}W_I`, when they are at most half of the
    variables (:meth:`CovarianceOperator.matmat_rows`: for data :math:`A^\top(A_{:,I}W_I)/s`, one pass over the data
    where a dense product makes two), else the dense product. The same numbers, to rounding."""
    rows = sparse_rows(w)
    return op.matmat(w) if rows is None else op.matmat_rows(w, rows)


def sparse_rows(w: np.ndarray) -> np.ndarray | None:
    """The rows where ``w`` (a vector or ``p x k``) is nonzero when they are at most half of them, else ``None``."""
    rows = np.flatnonzero(w if w.ndim == 1 else np.any(w, axis=1))
    return rows if 2 * rows.size <= w.shape[0] else None


@runtime_checkable
class CovarianceOperator(Protocol):
    """What a part may ask of a covariance matrix :math:`C`."""

    @property
    def p(self) -> int:
        """Number of variables."""

    def matmat(self, v: np.ndarray) -> np.ndarray:
        """Return :math:`Cv` for ``v`` of shape ``(p,)`` or ``(p, k)``."""

    def diagonal(self) -> np.ndarray:
        """Return the diagonal of :math:`C`, shape ``(p,)``."""

    def trace(self) -> float:
        """Return :math:`\\operatorname{tr} C`."""

    def top_eigenpairs(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        """Return the ``r`` largest eigenvalues (descending) and eigenvectors, by the cheapest sufficient solver."""

    def top_eigenvalues(self, r: int) -> np.ndarray:
        """Return the ``r`` largest eigenvalues (descending, clipped at 0), without eigenvectors."""

    def columns(self, index: np.ndarray) -> np.ndarray:
        """Return the columns :math:`C_{:,I}` (``p x |I|``)."""

    def submatrix(self, index: np.ndarray) -> np.ndarray:
        """Return the principal submatrix :math:`C_{II}` (symmetric)."""

    def matmat_rows(self, w: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Return :math:`CW` for ``W`` zero outside ``rows`` (:math:`C_{:,I}W_I`)."""

    def explicit(self) -> np.ndarray | None:
        """Return the matrix :math:`C` when the operator holds it, else ``None`` (nothing is formed)."""


class OperatorAccess:
    r"""What every operator gets from its products alone, unless it has something cheaper.

    The eigenvalue policy of the whole package lives here and in
    :func:`leading_eigenpairs`; sub-matrices come from products with
    coordinate vectors (:math:`|I|` products).
    """

    def top_eigenvalues(self, r: int) -> np.ndarray:
        return np.clip(np.asarray(self.top_eigenpairs(min(r, self.p))[0], dtype=float), 0.0, None)  # type: ignore[attr-defined]

    def direct_spectrum(self, r: int) -> bool:
        """Whether the ``r`` leading eigenpairs come from a direct solver (LAPACK, exact to rounding) rather than
        an iterative one: only then is :math:`\\lambda_1` an upper bound (:mod:`spcakit.analysis.bounds`). Here: the
        operator's products densified up to :data:`~spcakit.numerics.operators.DENSE_EIGEN_LIMIT` variables
        (:func:`~spcakit.numerics.operators.operator_top`); an operator with a solver of its own says so itself."""
        return False

    def rank_at_most(self) -> int:
        """An upper bound on the rank of :math:`C` known for free: ``p`` here; the number of samples for an
        operator on data (at most that many eigenvalues are nonzero)."""
        return int(self.p)  # type: ignore[attr-defined]

    def kept_top_eigenvalues(self, r: int) -> np.ndarray | None:
        r"""The ``r`` leading eigenvalues of :math:`C` (descending, clipped at 0; all ``p`` when ``r`` is more) when a
        direct solver already found them and the operator kept them (free), else ``None``; nothing is computed."""
        return None

    def columns(self, index: np.ndarray) -> np.ndarray:
        index = np.asarray(index, dtype=int)
        selector = np.zeros((self.p, index.size))  # type: ignore[attr-defined]
        selector[index, np.arange(index.size)] = 1.0
        return self.matmat(selector)  # type: ignore[attr-defined]

    def submatrix(self, index: np.ndarray) -> np.ndarray:
        index = np.asarray(index, dtype=int)
        sub = self.columns(index)[index]
        return (sub + sub.T) / 2

    def matmat_rows(self, w: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return self.matmat(w)  # type: ignore[attr-defined]

    def explicit(self) -> np.ndarray | None:
        return None


def optional_array_eq(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and array_eq(a, b))
