r"""Covariance operators: what every part needs of :math:`C`, without forming it.

Sparse PCA only ever touches the covariance :math:`C \in \mathbb{R}^{p\times p}`
through products :math:`CV`, its diagonal, its trace and (for the PCA start)
its leading eigenvectors. An operator provides exactly these, so that

* an explicit covariance is used as it is (:class:`DenseCovariance`);
* a data matrix :math:`A \in \mathbb{R}^{n\times p}` gives
  :math:`C = A^\top A / s` applied as :math:`A^\top (A V) / s`
  (:class:`GramCovariance`): when :math:`n < p` no :math:`p\times p` array
  is ever allocated;
* deflations are low-rank corrections wrapped around another operator
  (:class:`RankOneCorrected` for Hotelling's and the Schur complement
  deflation, :class:`ProjectionDeflated` for projections).

All operators are frozen: a deflation returns a new operator.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import attrs
import numpy as np
import scipy.linalg

#: Above this dimension an operator is never densified to find eigenvectors.
DENSE_EIGEN_LIMIT = 600
#: A data matrix whose smaller side is at most this uses a dense eigensolver on its small Gram matrix.
DENSE_GRAM_LIMIT = 2000
#: An explicit covariance larger than this uses Lanczos for its ``r <= p/20`` leading eigenpairs.
LANCZOS_LIMIT = 2000


def _array_eq(a: np.ndarray, b: np.ndarray) -> bool:
    return a is b or (a.shape == b.shape and bool(np.array_equal(a, b)))


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


def leading_eigenpairs(matrix: np.ndarray, r: int, *, vectors: bool = True) -> Any:
    r"""The ``r`` leading eigenpairs (eigenvalues only without ``vectors``) of an explicit symmetric matrix.

    The package's one policy: LAPACK's subset driver (``eigh``, :math:`O(p^3)`)
    up to :data:`LANCZOS_LIMIT` variables or for ``r > p/20``; Lanczos
    (:func:`lanczos_top`, :math:`O(p^2 r)` per restart, from a fixed start so
    that every run gives the same digits) beyond: 50 s against 1.6 s at
    :math:`p = 5000`, :math:`r = 10`.
    """
    p = matrix.shape[0]
    if p > LANCZOS_LIMIT and 20 * r <= p:
        return lanczos_top(matrix, r, vectors=vectors)
    if not vectors:
        values = scipy.linalg.eigh(matrix, subset_by_index=[p - r, p - 1], eigvals_only=True)
        if values.shape[0] != r:  # the subset driver can return fewer values on clustered spectra
            values = scipy.linalg.eigvalsh(matrix)[p - r:]
        return np.sort(values)[::-1]
    return _eigh_top(matrix, r)


def _eigh_top(matrix: np.ndarray, r: int) -> tuple[np.ndarray, np.ndarray]:
    p = matrix.shape[0]
    values, vectors = scipy.linalg.eigh(matrix, subset_by_index=[p - r, p - 1])
    if values.shape[0] != r:  # LAPACK's subset driver can return fewer pairs on clustered spectra
        values, vectors = scipy.linalg.eigh(matrix)
        values, vectors = values[p - r:], vectors[:, p - r:]
    return values[::-1], vectors[:, ::-1]


def lanczos_top(matrix: np.ndarray, k: int, *, vectors: bool = True) -> Any:
    """The ``k`` leading eigenvalues (descending) of a symmetric ``matrix`` and, with ``vectors``, eigenvectors.

    ARPACK's Lanczos (``eigsh``) from a fixed start vector, so that every run
    gives the same digits: :math:`O(p^2 k)` per restart instead of a dense
    solver's :math:`O(p^3)`, for large ``p`` and small ``k``.
    """
    from scipy.sparse.linalg import eigsh  # noqa: PLC0415 - scipy.sparse takes 0.1 s to import

    start = np.random.default_rng(0).standard_normal(matrix.shape[0])
    if not vectors:
        return np.sort(eigsh(matrix, k=k, which="LA", v0=start, return_eigenvectors=False))[::-1]
    values, vecs = eigsh(matrix, k=k, which="LA", v0=start)
    order = np.argsort(values)[::-1]
    return values[order], vecs[:, order]


def _orthonormal_completion(basis: np.ndarray, r: int) -> np.ndarray:
    """``basis`` (p x k, orthonormal) completed to ``r`` orthonormal columns.

    The added columns span part of the null space (eigenvalue 0); they are
    drawn from a fixed-seed Gaussian so that results are reproducible.
    """
    p, k = basis.shape
    if k >= r:
        return basis[:, :r]
    extra = np.random.default_rng(0).standard_normal((p, r - k))
    extra -= basis @ (basis.T @ extra)
    q, _ = np.linalg.qr(extra)
    q -= basis @ (basis.T @ q)
    q, _ = np.linalg.qr(q)
    return np.hstack([basis, q])


def _operator_top(op: CovarianceOperator, r: int) -> tuple[np.ndarray, np.ndarray]:
    """Leading eigenpairs of any operator: dense when small, Lanczos otherwise."""
    p = op.p
    if p <= DENSE_EIGEN_LIMIT or r >= p - 1:
        dense = op.matmat(np.eye(p))
        return _eigh_top((dense + dense.T) / 2, r)
    from scipy.sparse.linalg import LinearOperator, eigsh  # noqa: PLC0415 - scipy.sparse takes 0.1 s to import

    linear = LinearOperator((p, p), matvec=op.matmat, matmat=op.matmat, dtype=float)
    values, vectors = eigsh(linear, k=r, which="LA")
    order = np.argsort(values)[::-1]
    return values[order], vectors[:, order]


@attrs.frozen(eq=False)
class DenseCovariance(OperatorAccess):
    """An explicit symmetric :math:`p\\times p` covariance matrix."""

    matrix: np.ndarray

    @property
    def p(self) -> int:
        return self.matrix.shape[0]

    def matmat(self, v: np.ndarray) -> np.ndarray:
        return self.matrix @ v

    def diagonal(self) -> np.ndarray:
        return np.diag(self.matrix).copy()

    def trace(self) -> float:
        return float(np.trace(self.matrix))

    def top_eigenpairs(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        return leading_eigenpairs(self.matrix, r)  # type: ignore[no-any-return]

    def top_eigenvalues(self, r: int) -> np.ndarray:
        return np.clip(leading_eigenpairs(self.matrix, min(r, self.p), vectors=False), 0.0, None)

    def columns(self, index: np.ndarray) -> np.ndarray:
        return self.matrix[:, np.asarray(index, dtype=int)]

    def submatrix(self, index: np.ndarray) -> np.ndarray:
        index = np.asarray(index, dtype=int)
        sub = self.matrix[np.ix_(index, index)]
        return (sub + sub.T) / 2

    def matmat_rows(self, w: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return self.matrix[:, rows] @ w[rows]

    def explicit(self) -> np.ndarray | None:
        return self.matrix

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DenseCovariance) and _array_eq(self.matrix, other.matrix)

    __hash__ = None  # type: ignore[assignment]


@attrs.frozen(eq=False)
class GramCovariance(OperatorAccess):
    r"""The covariance :math:`C = A^\top A / s` of a (centred) data matrix.

    Products cost :math:`O(npk)` for a ``(p, k)`` block; the diagonal and
    trace are column sums of squares. Nothing of size :math:`p\times p` is
    formed, whatever ``n`` and ``p`` are.
    """

    data: np.ndarray
    scale: float = 1.0

    @property
    def p(self) -> int:
        return self.data.shape[1]

    def matmat(self, v: np.ndarray) -> np.ndarray:
        return self.data.T @ (self.data @ v) / self.scale

    def diagonal(self) -> np.ndarray:
        return np.einsum("ij,ij->j", self.data, self.data) / self.scale

    def trace(self) -> float:
        return float(np.vdot(self.data, self.data)) / self.scale

    def top_eigenpairs(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        n, p = self.data.shape
        if min(n, p) <= DENSE_GRAM_LIMIT or r >= min(n, p) - 1:
            if n < p:
                # eigenvectors of A A^T (n x n), mapped back: cheaper than SVD when n << p
                values, left = _eigh_top(self.data @ self.data.T, min(r, n))
                values = np.clip(values, 0.0, None)
                good = values > max(float(values[0]), 0.0) * n * np.finfo(float).eps * 10
                right = self.data.T @ left[:, good] / np.sqrt(values[good])
                k = int(good.sum())
                full_values = np.concatenate([values[good], np.zeros(r - k)])
                return full_values / self.scale, _orthonormal_completion(right, r)
            values, vectors = _eigh_top(self.data.T @ self.data, r)
            return values / self.scale, vectors
        from scipy.sparse.linalg import svds  # noqa: PLC0415 - scipy.sparse takes 0.1 s to import

        _, sing, vt = svds(self.data, k=r)
        order = np.argsort(sing)[::-1]
        return sing[order] ** 2 / self.scale, vt[order].T

    def columns(self, index: np.ndarray) -> np.ndarray:
        return self.data.T @ self.data[:, np.asarray(index, dtype=int)] / self.scale

    def submatrix(self, index: np.ndarray) -> np.ndarray:
        cols = self.data[:, np.asarray(index, dtype=int)]
        sub = cols.T @ cols / self.scale
        return (sub + sub.T) / 2

    def matmat_rows(self, w: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return self.data.T @ (self.data[:, rows] @ w[rows]) / self.scale

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, GramCovariance)
            and self.scale == other.scale
            and _array_eq(self.data, other.data)
        )

    __hash__ = None  # type: ignore[assignment]


@attrs.frozen(eq=False)
class RankOneCorrected(OperatorAccess):
    r"""A rank-one correction :math:`C - w\, v v^\top` of ``base``.

    Hotelling's deflation is :math:`v = x`, :math:`w = x^\top C x`; the Schur
    complement deflation is :math:`v = Cx`, :math:`w = 1/(x^\top C x)`.
    One product with ``base`` plus :math:`O(pk)`.
    """

    base: CovarianceOperator
    vector: np.ndarray
    weight: float

    @property
    def p(self) -> int:
        return self.base.p

    def matmat(self, v: np.ndarray) -> np.ndarray:
        x = self.vector
        if v.ndim == 1:
            return self.base.matmat(v) - self.weight * x * (x @ v)
        return self.base.matmat(v) - self.weight * np.outer(x, x @ v)

    def diagonal(self) -> np.ndarray:
        return self.base.diagonal() - self.weight * self.vector**2

    def trace(self) -> float:
        return self.base.trace() - self.weight * float(self.vector @ self.vector)

    def top_eigenpairs(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        return _operator_top(self, r)


@attrs.frozen(eq=False)
class ProjectionDeflated(OperatorAccess):
    r"""Projection deflation :math:`(I - xx^\top) C (I - xx^\top)` of ``base``.

    ``vector`` must have unit length. Applied as :math:`P\,(C\,(P v))` with
    :math:`P v = v - x (x^\top v)`: two rank-one updates around one product.
    """

    base: CovarianceOperator
    vector: np.ndarray

    @property
    def p(self) -> int:
        return self.base.p

    def _project(self, v: np.ndarray) -> np.ndarray:
        x = self.vector
        if v.ndim == 1:
            return v - x * (x @ v)
        return v - np.outer(x, x @ v)

    def matmat(self, v: np.ndarray) -> np.ndarray:
        return self._project(self.base.matmat(self._project(v)))

    def diagonal(self) -> np.ndarray:
        x = self.vector
        cx = self.base.matmat(x)
        return self.base.diagonal() - 2 * x * cx + x**2 * float(x @ cx)

    def trace(self) -> float:
        x = self.vector
        cx = self.base.matmat(x)
        return self.base.trace() - 2 * float(x @ cx) + float(x @ x) * float(x @ cx)

    def top_eigenpairs(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        return _operator_top(self, r)


def rank_one_downdate(op: CovarianceOperator, vector: np.ndarray, weight: float) -> CovarianceOperator:
    r""":math:`C - w\,vv^\top`: explicit for an explicit ``op`` (O(p^2)), wrapped otherwise."""
    if isinstance(op, DenseCovariance):
        m = op.matrix - weight * np.outer(vector, vector)
        return DenseCovariance((m + m.T) / 2)
    return RankOneCorrected(op, vector, weight)


def project_out(op: CovarianceOperator, unit: np.ndarray) -> CovarianceOperator:
    r""":math:`(I - qq^\top) C (I - qq^\top)` for a unit ``q``: a rank-two update of an explicit ``op``, wrapped otherwise."""
    if isinstance(op, DenseCovariance):
        cq = op.matrix @ unit
        m = op.matrix - np.outer(unit, cq) - np.outer(cq, unit) + float(unit @ cq) * np.outer(unit, unit)
        return DenseCovariance((m + m.T) / 2)
    return ProjectionDeflated(op, unit)


def densify(op: CovarianceOperator) -> np.ndarray:
    """Return the explicit matrix of ``op`` (for small ``p``: tests, checks)."""
    if isinstance(op, DenseCovariance):
        return op.matrix
    dense = op.matmat(np.eye(op.p))
    return (dense + dense.T) / 2
