r"""Covariance operators: what every part needs of :math:`C`, without forming it.

Sparse PCA only ever touches the covariance :math:`C \in \mathbb{R}^{p\times p}`
through products :math:`CV`, its diagonal, its trace and (for the PCA start)
its leading eigenvectors. An operator provides exactly these, so that

* an explicit covariance is used as it is (:class:`DenseCovariance`);
* a data matrix :math:`A \in \mathbb{R}^{n\times p}` gives
  :math:`C = A^\top A / s` applied as :math:`A^\top (A V) / s`
  (:class:`GramCovariance`), centred and scaled implicitly when it holds the
  caller's array as given (so the data are held once): when :math:`n < p` no
  :math:`p\times p` array is ever allocated;
* a ``scipy.sparse`` data matrix :math:`X` gives the covariance of its
  centred (and optionally standardised) copy without forming it, nor
  densifying :math:`X` (:class:`CenteredSparseGram`);
* deflations are low-rank corrections wrapped around another operator
  (:class:`RankOneCorrected` for Hotelling's and the Schur complement
  deflation, :class:`ProjectionDeflated` for projections);
* data with constant columns give the covariance of the columns that vary
  (each operator's ``restrict``) padded with zero rows and columns
  (:class:`PaddedCovariance`).

All operators are frozen: a deflation returns a new operator.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol, runtime_checkable

import attrs
import numpy as np

from spcakit.errors import InvalidDataError

#: Above this dimension an operator is never densified to find eigenvectors.
DENSE_EIGEN_LIMIT = 600
#: Up to this dimension the leading eigenpairs of an explicit matrix come from NumPy's ``eigh`` (all of them,
#: LAPACK's divide and conquer); above it, from SciPy's subset driver (``scipy.linalg.eigh`` with
#: ``subset_by_index``), 2.4x faster at 500 and 3x at 2000, but whose import takes 0.3 s and its own BLAS
#: (27 MiB resident): at 500 variables NumPy takes 20 ms against SciPy's 8 ms, at 169 1.6 against 1.3 ms.
NUMPY_EIGH_LIMIT = 500
#: A data matrix whose smaller side is at most this uses a dense eigensolver on its small Gram matrix.
DENSE_GRAM_LIMIT = 2000
#: An explicit covariance larger than this uses Lanczos for its ``r <= p/20`` leading eigenpairs.
LANCZOS_LIMIT = 2000
#: Bytes of one block of a dense data matrix centred (and scaled) into a reused buffer.
DENSE_BLOCK_BYTES = 1 << 22
#: A product :math:`B^\top(Bv)` with a dense C-ordered data matrix reads its rows in blocks of this many
#: bytes, each block's two products taken while it is in the cache (:meth:`GramCovariance._row_block_product`).
#: On 10 001 x 10 000 Gaussian data (1 BLAS thread; 1 MiB of L2 cache per core, 32 MiB of L3) a product with
#: 10 columns took 19.6 against 25.0 ms per column in two passes, with 16 columns 13.9 against 17.1 ms
#: (2 to 6 MiB blocks within 5 % of each other); on 500 x 100 000 data, in blocks of 8 to 52 rows, it was
#: slower (13.4-15.0 against 11.5 ms per column with 10 columns), hence :data:`ROW_BLOCK_MIN_ROWS`.
ROW_BLOCK_BYTES = 1 << 22
#: Fewest rows in a block of :data:`ROW_BLOCK_BYTES` for which the one-pass product is used (p <= 32 768): on
#: 2500 x 20 000 data blocks of 16 rows took 9.6 against 12.0 ms per column with 10 columns.
ROW_BLOCK_MIN_ROWS = 16
#: Widest ``v`` for which the one-pass product is used (wider products are bound by arithmetic, not memory).
ROW_BLOCK_WIDTH = 32
#: A dense data matrix is centred implicitly in products while every column's mean is at most this many
#: times its root mean square deviation (the products then lose at most ~2 of 16 digits against the
#: centred copy's); beyond, each product centres the data a block of columns at a time.
OFFSET_LIMIT = 100.0
#: Residual :math:`\|Cy - \theta y\| \le` this times :math:`\theta_1` ends :func:`block_krylov_top`.
KRYLOV_TOL = 1e-10
#: Blocks in :func:`block_krylov_top`'s basis before it restarts (the first one included): with blocks of
#: ``r = 20`` columns, 16 took the fewest columns of products to 1e-10 on 4001 x 4000 Gaussian data (960,
#: against 1080 for 12 blocks, 1260 for 12 of 30 and 2040 for 6 of 40); more gain nothing at 10 000.
KRYLOV_DEPTH = 16
#: Columns of :func:`block_krylov_top`'s blocks (at least ``r``): wider blocks take more columns of products to
#: converge, but each column costs less (a product is bound by memory below ~30 columns). To 1e-10 on
#: 10 001 x 10 000 Gaussian data with r = 10 (1 BLAS thread, depth 16, the one-pass products of
#: :data:`ROW_BLOCK_BYTES`, convergence checked at restarts only): 880 columns in 14.9 s with blocks of 10,
#: 960 in 13.2-13.5 s with 12, 1152 in 15.1 s with 16, 1320 in 15.3 s with 20 (depth 12).
KRYLOV_BLOCK = 12
#: After a restart whose residuals are within this factor of :data:`KRYLOV_TOL`, :func:`block_krylov_top`
#: checks convergence after every block rather than at the next restart: one Rayleigh-Ritz step per block
#: (about 5 ms at 10 000 variables against 160 ms for the block's product) to stop up to a cycle earlier.
#: Near the end a cycle (8 blocks of 12) lowers the residuals 10-30 fold; r = 10, blocks of 12, to 1e-10:
#: 4001 x 4000 Gaussian data 684 columns against 768, 10 001 x 10 000 948 against 960.
KRYLOV_NEAR = 1e3
#: Restarts of :func:`block_krylov_top` before it hands over to ARPACK (never reached in the tests).
KRYLOV_CYCLES = 200


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
        if p <= NUMPY_EIGH_LIMIT:
            return np.linalg.eigvalsh(matrix)[p - r :][::-1]
        import scipy.linalg  # noqa: PLC0415 - 0.3 s and 27 MiB: only for matrices above NUMPY_EIGH_LIMIT

        values = scipy.linalg.eigh(matrix, subset_by_index=[p - r, p - 1], eigvals_only=True)
        if values.shape[0] != r:  # the subset driver can return fewer values on clustered spectra
            values = scipy.linalg.eigvalsh(matrix)[p - r:]
        return np.sort(values)[::-1]
    return _eigh_top(matrix, r)


def _eigh_top(matrix: np.ndarray, r: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``r`` leading eigenpairs of a symmetric ``matrix`` (values descending), by :data:`NUMPY_EIGH_LIMIT`'s
    rule."""
    p = matrix.shape[0]
    if p <= NUMPY_EIGH_LIMIT:
        values, vectors = np.linalg.eigh(matrix)
        return values[p - r :][::-1], vectors[:, p - r :][:, ::-1]
    import scipy.linalg  # noqa: PLC0415 - see NUMPY_EIGH_LIMIT

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


def operator_lanczos(matmat: Callable[[np.ndarray], np.ndarray], p: int, r: int, *, vectors: bool = True) -> Any:
    """The ``r`` leading eigenvalues (descending) of a symmetric ``p x p`` operator given by its products
    ``matmat`` and, with ``vectors``, eigenvectors: ARPACK's Lanczos (``eigsh``) with a basis of
    :data:`LANCZOS_BASIS` vectors (at least ``2r + 1``), from a fixed start vector so that every run gives
    the same digits."""
    from scipy.sparse.linalg import LinearOperator, eigsh  # noqa: PLC0415 - scipy.sparse takes 0.1 s to import

    linear = LinearOperator((p, p), matvec=matmat, matmat=matmat, rmatvec=matmat, dtype=float)
    start = np.random.default_rng(0).standard_normal(p)
    ncv = min(p, max(2 * r + 1, LANCZOS_BASIS))
    if not vectors:
        return np.sort(eigsh(linear, k=r, which="LA", v0=start, ncv=ncv, return_eigenvectors=False))[::-1]
    values, vecs = eigsh(linear, k=r, which="LA", v0=start, ncv=ncv)
    order = np.argsort(values)[::-1]
    return values[order], vecs[:, order]


def _operator_top(op: CovarianceOperator, r: int) -> tuple[np.ndarray, np.ndarray]:
    """Leading eigenpairs of any operator: dense when small, Lanczos otherwise (from a fixed start, so that
    every run gives the same digits: ARPACK's default start is random)."""
    p = op.p
    if p <= DENSE_EIGEN_LIMIT or r >= p - 1:
        dense = op.matmat(np.eye(p))
        return _eigh_top((dense + dense.T) / 2, r)
    from scipy.sparse.linalg import LinearOperator, eigsh  # noqa: PLC0415 - scipy.sparse takes 0.1 s to import

    linear = LinearOperator((p, p), matvec=op.matmat, matmat=op.matmat, dtype=float)
    values, vectors = eigsh(linear, k=r, which="LA", v0=np.random.default_rng(0).standard_normal(p))
    order = np.argsort(values)[::-1]
    return values[order], vectors[:, order]


def _orthonormal_block(block: np.ndarray, basis: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    r"""An orthonormal basis of ``block``'s columns made orthogonal to ``basis`` (orthonormal, ``p x m``).

    Block classical Gram-Schmidt twice ("twice is enough"), a QR factorisation, and once more
    against ``basis`` (what the QR magnified of the rounding). A column that lies (to 8 digits) in
    the span of the basis and the block's earlier columns is replaced by a Gaussian one from
    ``rng`` and the block is made again, so the result always has ``block``'s width (the Krylov
    space ran out: an invariant subspace was found). Needs ``m`` plus the width at most ``p``.
    """
    out = block.copy()
    before = np.linalg.norm(block, axis=0)
    for _ in range(2):
        if basis.shape[1]:
            out -= basis @ (basis.T @ out)
    q, triangle = np.linalg.qr(out)
    dead = np.abs(np.diagonal(triangle)) <= 1e-8 * np.maximum(before, np.finfo(float).tiny)
    if np.any(dead):
        fresh = block.copy()
        fresh[:, dead] = rng.standard_normal((block.shape[0], int(dead.sum())))
        return _orthonormal_block(fresh, basis, rng)
    if basis.shape[1]:
        q -= basis @ (basis.T @ q)
        q, _ = np.linalg.qr(q)
    return q


def _rayleigh_ritz(k: np.ndarray, ck: np.ndarray, t: np.ndarray, r: int) -> tuple[np.ndarray, np.ndarray, float]:
    r"""Ritz values :math:`\theta` (descending) and coefficients :math:`s` of the orthonormal basis ``k`` from
    ``t`` :math:`= k^\top C k` (its upper triangle), and the largest residual of the ``r`` leading pairs
    relative to :math:`\theta_1`, :math:`\max_{i \le r} \|(Ck)s_i - \theta_i ks_i\|/\theta_1`, from ``ck``
    :math:`= Ck`."""
    theta, s = np.linalg.eigh(t, UPLO="U")
    theta, s = theta[::-1], s[:, ::-1]
    residuals = ck @ s[:, :r] - (k @ s[:, :r]) * theta[:r]
    return theta, s, float(np.linalg.norm(residuals, axis=0).max()) / max(float(theta[0]), np.finfo(float).tiny)


def block_krylov_top(
    matmat: Callable[[np.ndarray], np.ndarray], p: int, r: int, *, block: int | None = None,
    depth: int = KRYLOV_DEPTH, tol: float = KRYLOV_TOL, max_cycles: int = KRYLOV_CYCLES, keep: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    r"""The ``r`` leading eigenpairs of a symmetric PSD operator by restarted block Krylov iteration.

    From a Gaussian block :math:`Q_0` (``p x b``, fixed seed: every run gives the same digits) the
    basis :math:`K = [Q_0, Q_1, \dots, Q_{d-1}]` of the block Krylov space
    :math:`\operatorname{span}\{Q_0, CQ_0, \dots, C^{d-1}Q_0\}` is built with one product
    :math:`CQ_j` per block (``b`` columns at once: BLAS-3 products with the data, where a vector
    Lanczos method makes ``b`` memory-bound ones), each new block orthonormalised against the
    basis. The Rayleigh-Ritz step takes the eigenpairs :math:`(\theta_i, s_i)` of
    :math:`T = K^\top (CK)` (``CK`` kept from the products, :math:`d\,b \times d\,b`) and the Ritz
    vectors :math:`y_i = Ks_i`, whose residuals :math:`\|Cy_i - \theta_i y_i\| = \|(CK)s_i - \theta_i
    Ks_i\|` cost no product. It stops when the ``r`` leading residuals are at most
    ``tol`` :math:`\cdot\,\theta_1` (:data:`KRYLOV_TOL`): then every eigenvalue is exact to
    :math:`\|r_i\|^2/\mathrm{gap}` and every eigenvector to :math:`\|r_i\|/\mathrm{gap}`. Otherwise
    it restarts from the leading Ritz vectors (their products known, so a restart costs no product);
    once a restart's residuals are within :data:`KRYLOV_NEAR` of the tolerance, the test runs after every
    block (:math:`T` is kept a block column at a time, so a test costs no pass over the basis).

    The block is ``b = max(r,`` :data:`KRYLOV_BLOCK` ``)`` columns by default (``p <= 3b``: the dense matrix); the basis holds
    ``d b`` columns and their products (``16 p d b`` bytes). A restart keeps the leading half of
    the Ritz vectors (``keep``; thick restart) and goes on with the block the basis would have
    grown by. Costs :math:`O(p\,d^2b^2)` per restart besides the products. After ``max_cycles``
    restarts ARPACK's ``eigsh`` finishes from the best Ritz vector.

    Returns
    -------
    values, vectors
        Descending eigenvalues (``r``) and orthonormal eigenvectors (``p x r``).
    """
    b = max(r, block if block is not None else KRYLOV_BLOCK)
    if p <= 3 * b:  # too small for a Krylov space beyond the block: the dense matrix, column by column
        dense = matmat(np.eye(p))
        return _eigh_top((dense + dense.T) / 2, r)
    rng = np.random.default_rng(0)
    depth = max(2, min(depth, p // b - 1))  # room for the block grown at a restart: d b + b <= p
    basis, products = np.empty((p, depth * b)), np.empty((p, depth * b))  # K and CK, filled block by block
    q = _orthonormal_block(rng.standard_normal((p, b)), basis[:, :0], rng)
    gram = np.zeros((depth * b, depth * b))  # T = K^T C K, its upper triangle filled a block column at a time
    m = 0  # columns of K (and CK) in use
    near = False  # a restart's residuals were within KRYLOV_NEAR of tol: the test runs after every block
    for _ in range(max_cycles):
        while True:
            basis[:, m : m + b] = q
            products[:, m : m + b] = matmat(q)
            gram[: m + b, m : m + b] = basis[:, : m + b].T @ products[:, m : m + b]
            m += b
            if m + b > depth * b:
                break
            if near:  # close to the tolerance: a Rayleigh-Ritz step on this basis may end the run a few blocks early
                theta, s, worst = _rayleigh_ritz(basis[:, :m], products[:, :m], gram[:m, :m], r)
                if worst <= tol:
                    return theta[:r], basis[:, :m] @ s[:, :r]
            q = _orthonormal_block(products[:, m - b : m], basis[:, :m], rng)
        k, ck = basis[:, :m], products[:, :m]
        theta, s, worst = _rayleigh_ritz(k, ck, gram[:m, :m], r)
        kept = max(r, min(keep, m - b) if keep is not None else max(b, m // 2))
        if worst <= tol or m >= p:  # converged; or the basis spans everything: exact up to rounding
            return theta[:r], k @ s[:, :r]
        near = worst <= tol * KRYLOV_NEAR
        ritz, ritz_products = k @ s[:, :kept], ck @ s[:, :kept]
        q = _orthonormal_block(ck[:, m - b :], k, rng)  # the next Krylov block, as if there were no restart
        basis[:, :kept], products[:, :kept] = ritz, ritz_products
        gram[:kept, :kept] = ritz.T @ ritz_products
        m = kept
    from scipy.sparse.linalg import LinearOperator, eigsh  # noqa: PLC0415 - scipy.sparse takes 0.1 s to import

    linear = LinearOperator((p, p), matvec=matmat, matmat=matmat, dtype=float)
    values, vectors = eigsh(linear, k=r, which="LA", v0=basis[:, 0])
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

    def restrict(self, index: np.ndarray) -> DenseCovariance:
        """The covariance of the variables ``index`` alone: :math:`C_{II}`, a copy."""
        index = np.asarray(index, dtype=int)
        return DenseCovariance(self.matrix[np.ix_(index, index)])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DenseCovariance) and _array_eq(self.matrix, other.matrix)

    __hash__ = None  # type: ignore[assignment]


def eigenpairs_through_small_gram(
    small_gram: np.ndarray, transpose_product: Callable[[np.ndarray], np.ndarray], r: int
) -> tuple[np.ndarray, np.ndarray]:
    r"""The ``r`` leading eigenpairs of :math:`B^\top B` (``p x p``) from the ``n x n`` :math:`BB^\top` (``n < p``).

    With :math:`BB^\top u = \lambda u`, :math:`v = B^\top u/\sqrt\lambda` is a unit eigenvector of
    :math:`B^\top B` for :math:`\lambda` (``transpose_product(U)`` is :math:`B^\top U`). Eigenvalues at the
    rounding level of the largest (:math:`\le 10\,n\,\epsilon\,\lambda_1`) give no direction: they are
    reported as 0 and their vectors complete the others to an orthonormal set.
    """
    n = small_gram.shape[0]
    values, left = _eigh_top(small_gram, min(r, n))
    values = np.clip(values, 0.0, None)
    good = values > max(float(values[0]), 0.0) * n * np.finfo(float).eps * 10
    right = transpose_product(left[:, good]) / np.sqrt(values[good])
    full_values = np.concatenate([values[good], np.zeros(r - int(good.sum()))])
    return full_values, _orthonormal_completion(right, r)


class ImplicitCentring:
    r"""Products with the centred, scaled data :math:`B = (X - \mathbf 1\mu^\top)D^{-1}` without forming :math:`B`.

    For a data matrix ``data`` :math:`X` (``n x p``, dense or ``scipy.sparse``), column means ``mean``
    :math:`\mu` (``None``: not centred), divisor ``scale`` :math:`s` and column scales
    ``column_scale`` :math:`d` (``None``: :math:`D = I`):

    .. math::

        Bv = X(D^{-1}v) - \mathbf 1\,\mu^\top D^{-1}v, \qquad
        B^\top z = D^{-1}\big(X^\top z - \mu\,(\mathbf 1^\top z)\big), \qquad
        C V = B^\top (B V)/s,

    :math:`O(\mathrm{nnz}\,k + (n + p)k)` for ``k`` columns. Shared by :class:`GramCovariance`
    (dense) and :class:`CenteredSparseGram`.
    """

    data: Any
    mean: np.ndarray | None
    scale: float
    column_scale: np.ndarray | None

    @property
    def p(self) -> int:
        return int(self.data.shape[1])

    @property
    def n(self) -> int:
        """Number of samples (rows of the data)."""
        return int(self.data.shape[0])

    def _unscale(self, v: np.ndarray) -> np.ndarray:
        """:math:`D^{-1}v` for ``v`` of shape ``(p,)`` or ``(p, k)``."""
        if self.column_scale is None:
            return v
        return v / (self.column_scale if v.ndim == 1 else self.column_scale[:, None])

    def _implicit_product(self, v: np.ndarray) -> np.ndarray:
        """:math:`Cv = B^\\top(Bv)/s` by the formulas above."""
        v = np.asarray(v, dtype=float)
        w = self._unscale(v)
        z = np.asarray(self.data @ w)
        if self.mean is not None:
            z -= self.mean @ w  # the centred data times w
        y = np.asarray(self.data.T @ z)  # the one p x k array made: the rest is done in place
        return self._finish_product(y, None if self.mean is None else z.sum(axis=0))

    def _finish_product(self, y: np.ndarray, sums: np.ndarray | None) -> np.ndarray:
        r""":math:`D^{-1}(y - \mu\,\mathbf 1^\top z)/s` in place, from :math:`y = X^\top z` and the sums
        :math:`\mathbf 1^\top z` of the centred products :math:`z = Bv` (``None`` without a mean)."""
        if sums is not None:
            if y.ndim == 1:
                y -= self.mean * sums
            else:
                for j in range(y.shape[1]):  # the rank-one correction a column at a time: no p x k temporary
                    y[:, j] -= self.mean * sums[j]
        y /= self.scale
        if self.column_scale is not None:
            y /= self.column_scale if y.ndim == 1 else self.column_scale[:, None]
        return y


def centred_column_blocks(
    data: np.ndarray, mean: np.ndarray | None, column_scale: np.ndarray | None
) -> Iterator[tuple[slice, np.ndarray]]:
    r"""``(columns, block)``: :math:`B_{:,J} = (X_{:,J} - \mathbf 1\mu_J^\top)D_J^{-1}` for consecutive column
    ranges :math:`J` of :data:`DENSE_BLOCK_BYTES`, each written into one reused buffer (valid until the next
    block is drawn): the centred data column block by column block, never the whole of it."""
    n, p = data.shape
    width = max(1, min(p, DENSE_BLOCK_BYTES // (8 * n)))
    buffer = np.empty((n, width))
    for start in range(0, p, width):
        cols = slice(start, min(p, start + width))
        block = buffer[:, : cols.stop - start]
        if mean is None:
            np.copyto(block, data[:, cols])
        else:
            np.subtract(data[:, cols], mean[cols], out=block)
        if column_scale is not None:
            block /= column_scale[cols]
        yield cols, block


@attrs.frozen(eq=False)
class GramCovariance(ImplicitCentring, OperatorAccess):
    r"""The covariance :math:`C = B^\top B / s` of a dense data matrix, :math:`B = (A - \mathbf 1\mu^\top)D^{-1}`.

    ``data`` :math:`A` (``n x p``) is used as it is, never copied: given centred (``mean`` ``None``,
    the former form ``GramCovariance(centred, s)``) or as the caller's array with its column means
    ``mean`` and, for standardised data, its standard deviations ``column_scale``
    (:func:`spcakit.inputs.dense.data_problem` builds it so: the data are held once).

    Products cost :math:`O(npk)` for a ``(p, k)`` block; nothing of size :math:`p\times p` is formed,
    whatever ``n`` and ``p`` are. With ``mean`` they are the implicit formulas of
    :class:`ImplicitCentring` while every column's mean is at most :data:`OFFSET_LIMIT` times its root
    mean square deviation (the rounding of :math:`Av` then grows by at most that factor); data whose
    means dominate their spread are centred a block of columns at a time in each product instead
    (:func:`centred_column_blocks`: exact as the centred copy, one more pass over the data). The
    diagonal (column sums of squares, by blocks) is computed once and kept.

    The eigenpairs (:meth:`top_eigenpairs`) come from the small Gram matrix (:math:`BB^\top` when
    :math:`n < p`, else :math:`B^\top B`, formed by centred blocks) when :math:`\min(n, p) \le`
    :data:`DENSE_GRAM_LIMIT`, else from :func:`block_krylov_top` on the products.
    """

    data: np.ndarray
    scale: float = 1.0
    mean: np.ndarray | None = None
    column_scale: np.ndarray | None = None
    _kept: dict[str, Any] = attrs.field(factory=dict, init=False, repr=False)

    def _blocks(self) -> Iterator[tuple[slice, np.ndarray]]:
        return centred_column_blocks(self.data, self.mean, self.column_scale)

    def _centred(self) -> bool:
        return self.mean is not None or self.column_scale is not None

    def _implicit(self) -> bool:
        """Whether products centre implicitly (see the class): no mean, or means within :data:`OFFSET_LIMIT`."""
        if self.mean is None:
            return True
        if "implicit" not in self._kept:
            spread = np.sqrt(self.diagonal() * self.scale / self.n)  # of the scaled columns
            offset = np.abs(self._unscale(self.mean))
            self._kept["implicit"] = bool(np.all(offset <= OFFSET_LIMIT * spread))
        return bool(self._kept["implicit"])

    def matmat(self, v: np.ndarray) -> np.ndarray:
        height = self._row_block_height(v)
        if height and (not self._centred() or self._implicit()):
            return self._row_block_product(v, height)
        if not self._centred():
            return self.data.T @ (self.data @ v) / self.scale
        if self._implicit():
            return self._implicit_product(v)
        v = np.asarray(v, dtype=float)
        z = sum(block @ v[cols] for cols, block in self._blocks())  # B v, a block of columns at a time
        out = np.empty(v.shape)
        for cols, block in self._blocks():
            out[cols] = block.T @ z
        return out / self.scale

    def _row_block_height(self, v: np.ndarray) -> int:
        """Rows per block of :meth:`_row_block_product` for ``v``, or 0 where the two passes are faster."""
        n, p = self.data.shape
        width = 1 if np.ndim(v) == 1 else int(np.shape(v)[1])
        height = ROW_BLOCK_BYTES // (8 * p)
        if width > ROW_BLOCK_WIDTH or height < ROW_BLOCK_MIN_ROWS or n < 4 * height:
            return 0
        return int(height) if self.data.flags.c_contiguous else 0

    def _row_block_product(self, v: np.ndarray, height: int) -> np.ndarray:
        r""":math:`Cv = \sum_i B_i^\top (B_i v)/s` over blocks :math:`B_i` of ``height`` rows (:meth:`_row_block_height`).

        Each block is read twice while it is in the cache, so the data cross the memory bus once per
        product instead of twice: for a narrow ``v`` (a few columns: the product is bound by memory)
        this is faster (see :data:`ROW_BLOCK_BYTES`). Centring is implicit as in
        :class:`ImplicitCentring`: :math:`B_i v = A_i w - \mathbf 1\mu^\top w` with :math:`w = D^{-1}v`,
        and :math:`\mu\,\mathbf 1^\top (Bv)` subtracted once at the end.
        """
        v = np.asarray(v, dtype=float)
        w = self._unscale(v[:, None] if v.ndim == 1 else v)
        shift = None if self.mean is None else self.mean @ w
        out = np.zeros(w.shape)
        part = np.empty(w.shape)  # NumPy's matmul has no in-place sum; SciPy's dgemm (beta = 1) was slower here
        sums = None if shift is None else np.zeros(w.shape[1])
        for start in range(0, self.data.shape[0], height):
            rows = self.data[start : start + height]
            z = rows @ w
            if shift is not None:
                z -= shift
                sums += z.sum(axis=0)
            np.matmul(rows.T, z, out=part)
            out += part
        out = self._finish_product(out, sums)
        return out[:, 0] if v.ndim == 1 else out

    def _transpose_product(self, z: np.ndarray) -> np.ndarray:
        r""":math:`B^\top z` (``z`` of shape ``(n, k)``), a block of columns at a time."""
        if not self._centred():
            return self.data.T @ z
        out = np.empty((self.p, z.shape[1]))
        for cols, block in self._blocks():
            out[cols] = block.T @ z
        return out

    def diagonal(self) -> np.ndarray:
        if not self._centred():
            return np.einsum("ij,ij->j", self.data, self.data) / self.scale
        if "diagonal" not in self._kept:
            squares = np.empty(self.p)
            for cols, block in self._blocks():
                squares[cols] = np.einsum("ij,ij->j", block, block)
            self._kept["diagonal"] = squares / self.scale
        return self._kept["diagonal"].copy()  # type: ignore[no-any-return]

    def trace(self) -> float:
        if not self._centred():
            return float(np.vdot(self.data, self.data)) / self.scale
        return float(self.diagonal().sum())

    def _small_gram(self) -> np.ndarray:
        r""":math:`BB^\top` (``n x n``) when :math:`n < p`, else :math:`B^\top B` (``p x p``), by centred blocks."""
        n, p = self.data.shape
        if not self._centred():
            return self.data @ self.data.T if n < p else self.data.T @ self.data
        if n < p:
            gram = np.zeros((n, n))
            for _, block in self._blocks():
                gram += block @ block.T
            return gram
        gram = np.zeros((p, p))  # p <= DENSE_GRAM_LIMIT here: a block of rows at a time
        height = max(1, DENSE_BLOCK_BYTES // (8 * p))
        for start in range(0, n, height):
            block = self._unscale(self.data[start : start + height].T).T
            if self.mean is not None:
                block = block - self._unscale(self.mean)
            gram += block.T @ block
        return gram

    def _centred_columns(self, index: np.ndarray) -> np.ndarray:
        """:math:`B_{:,I}` (``n x |I|``): the chosen columns centred and scaled, a copy of them alone."""
        index = np.asarray(index, dtype=int)
        cols = self.data[:, index]
        if self.mean is not None:
            cols = cols - self.mean[index]
        if self.column_scale is not None:
            cols = cols / self.column_scale[index]
        return cols

    def top_eigenpairs(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        n, p = self.data.shape
        if min(n, p) <= DENSE_GRAM_LIMIT or r >= min(n, p) - 1:
            if n < p:  # eigenvectors of B B^T (n x n), mapped back: cheaper than SVD when n << p
                values, vectors = eigenpairs_through_small_gram(self._small_gram(), self._transpose_product, r)
                return values / self.scale, vectors
            values, vectors = _eigh_top(self._small_gram(), r)
            return values / self.scale, vectors
        # the Krylov basis and its products take at most a tenth of the data's memory (and 12 blocks)
        block = max(r, KRYLOV_BLOCK)
        return block_krylov_top(self.matmat, p, r, block=block, depth=max(3, min(KRYLOV_DEPTH, n // (20 * block))))

    def columns(self, index: np.ndarray) -> np.ndarray:
        return self._transpose_product(self._centred_columns(index)) / self.scale

    def submatrix(self, index: np.ndarray) -> np.ndarray:
        cols = self._centred_columns(index)
        sub = cols.T @ cols / self.scale
        return (sub + sub.T) / 2

    def matmat_rows(self, w: np.ndarray, rows: np.ndarray) -> np.ndarray:
        if not self._centred():
            return self.data.T @ (self.data[:, rows] @ w[rows]) / self.scale
        z = self._centred_columns(rows) @ w[rows]
        return (self._transpose_product(z if z.ndim == 2 else z[:, None]) / self.scale).reshape(w.shape)

    def restrict(self, index: np.ndarray) -> GramCovariance:
        """The covariance of the variables ``index`` alone: of a copy of those columns of the data (``n x |I|``,
        C-ordered), with their means and scales."""
        index = np.asarray(index, dtype=int)
        return GramCovariance(
            np.take(self.data, index, axis=1), self.scale, None if self.mean is None else self.mean[index],
            None if self.column_scale is None else self.column_scale[index],
        )  # fmt: skip

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, GramCovariance)
            and self.scale == other.scale
            and _array_eq(self.data, other.data)
            and _optional_array_eq(self.mean, other.mean)
            and _optional_array_eq(self.column_scale, other.column_scale)
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


@attrs.frozen(eq=False)
class PaddedCovariance(OperatorAccess):
    r"""The covariance of ``size`` variables of which only those at ``index`` vary: ``base`` (their
    covariance, :math:`|I| \times |I|`) padded with zero rows and columns,

    .. math:: C = E\,C_{II}\,E^\top, \qquad E = [e_i]_{i \in I} \quad (p \times |I|).

    What a problem with constant columns holds (:func:`spcakit.problem.with_constant_columns`): the method
    runs on ``base``, the metrics of the re-embedded loadings are taken on this. Products cost one product
    with ``base`` plus :math:`O(pk)`; nothing of size :math:`p \times p` is formed. ``index`` must be
    sorted and without repeats.
    """

    base: CovarianceOperator
    index: np.ndarray = attrs.field(converter=lambda value: np.asarray(value, dtype=int))
    size: int

    @property
    def p(self) -> int:
        return self.size

    def _embed(self, y: np.ndarray) -> np.ndarray:
        out = np.zeros((self.size, *y.shape[1:]))
        out[self.index] = y
        return out

    def _positions(self, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For variables ``index``: which of them vary (their places in ``index``) and their rows in ``base``."""
        where = np.searchsorted(self.index, index)
        varies = (where < self.index.size) & (self.index[np.minimum(where, self.index.size - 1)] == index)
        return np.flatnonzero(varies), where[varies]

    def matmat(self, v: np.ndarray) -> np.ndarray:
        return self._embed(self.base.matmat(np.asarray(v, dtype=float)[self.index]))

    def diagonal(self) -> np.ndarray:
        return self._embed(self.base.diagonal())

    def trace(self) -> float:
        return float(self.base.trace())

    def top_eigenpairs(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        """``base``'s leading pairs embedded; beyond its ``|I|`` pairs, eigenvalue 0 with the constant
        variables' coordinate vectors."""
        m = min(r, self.index.size)
        values, vectors = self.base.top_eigenpairs(m)
        extra = np.setdiff1d(np.arange(self.size), self.index)[: r - m]
        padding = np.zeros((self.size, extra.size))
        padding[extra, np.arange(extra.size)] = 1.0
        return np.concatenate([values, np.zeros(extra.size)]), np.hstack([self._embed(vectors), padding])

    def top_eigenvalues(self, r: int) -> np.ndarray:
        r = min(r, self.size)
        values = np.asarray(self.base.top_eigenvalues(min(r, self.index.size)), dtype=float)
        return np.concatenate([values, np.zeros(r - values.size)])

    def columns(self, index: np.ndarray) -> np.ndarray:
        index = np.asarray(index, dtype=int)
        out = np.zeros((self.size, index.size))
        places, rows = self._positions(index)
        if rows.size:
            out[:, places] = self._embed(self.base.columns(rows))
        return out

    def submatrix(self, index: np.ndarray) -> np.ndarray:
        index = np.asarray(index, dtype=int)
        out = np.zeros((index.size, index.size))
        places, rows = self._positions(index)
        if rows.size:
            out[np.ix_(places, places)] = self.base.submatrix(rows)
        return out

    def matmat_rows(self, w: np.ndarray, rows: np.ndarray) -> np.ndarray:
        _, inner = self._positions(np.asarray(rows, dtype=int))
        return self._embed(self.base.matmat_rows(np.asarray(w, dtype=float)[self.index], inner))

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, PaddedCovariance) and self.size == other.size and _array_eq(self.index, other.index)
            and self.base == other.base
        )  # fmt: skip

    __hash__ = None  # type: ignore[assignment]


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


#: Stored entries of a sparse matrix visited at a time by :class:`CenteredSparseGram` (4 MiB of float64):
#: column sums over the stored entries make temporaries of this size, never of the size of the data.
SPARSE_BLOCK_ENTRIES = 1 << 19
#: Dense bytes a block of :meth:`CenteredSparseGram.columns` or :meth:`CenteredSparseGram.submatrix` may take.
SPARSE_BLOCK_BYTES = 1 << 22
#: Smallest Lanczos basis of :class:`CenteredSparseGram`'s eigensolver: ARPACK's default (``2r + 1``, at
#: least 20) restarts often when the leading eigenvalues are close (noise-like data); 40 vectors halve the
#: products there (1451 against 807 for r = 10 on 100 000 x 50 000 Gaussian data at density 0.001).
LANCZOS_BASIS = 40


def canonical_csr(matrix: Any, what: str = "the data matrix", *, owned: bool = False) -> Any:
    """``matrix`` as a canonical ``scipy.sparse.csr_array`` of float64: sorted indices, no duplicates, no
    explicit zeros.

    The caller's arrays are never changed: a float64 CSR matrix already
    canonical is wrapped without a copy (its arrays are shared); any other is
    converted to a new CSR array (one copy of the stored entries), which is
    then canonicalised in place. ``owned=True`` says that ``matrix`` is the
    caller's own temporary, which may be canonicalised in place. Complex or
    non-numeric values and shapes other than 2-D are refused
    (:class:`~spcakit.errors.InvalidDataError`).
    """
    import scipy.sparse as sp  # noqa: PLC0415 - scipy.sparse only for sparse input

    if not sp.issparse(matrix):
        raise InvalidDataError(f"{what} must be a scipy.sparse matrix or array; got {type(matrix).__name__}")
    if matrix.ndim != 2:
        raise InvalidDataError(f"{what} must be 2-D (rows x columns); got a {matrix.ndim}-D sparse array of shape {matrix.shape}")
    kind = np.dtype(matrix.dtype).kind
    if kind == "c":
        raise InvalidDataError(f"{what} is complex; sparse PCA here needs real numbers")
    if kind not in "biuf":
        raise InvalidDataError(f"{what} must hold numbers; got a sparse matrix of dtype {matrix.dtype}")
    x = matrix
    if x.dtype != np.float64:
        x, owned = x.astype(np.float64), True  # bool and integer duplicates then sum as numbers
    if x.format != "csr":
        x, owned = x.tocsr(), True  # COO's duplicates are summed here
    canonical = bool(x.has_canonical_format)
    zeros = int(np.count_nonzero(x.data)) != x.data.size
    if not owned and (not canonical or zeros):
        x, owned = x.copy(), True
    if not canonical:
        x.sum_duplicates()
    if zeros:
        x.eliminate_zeros()
    return x if isinstance(x, sp.csr_array) else sp.csr_array(x)


def stored_per_column(x: Any) -> np.ndarray:
    """The number of stored entries in each column of the CSR ``x``, counted a block at a time (``bincount``
    would otherwise copy all the column indices to 64-bit integers at once)."""
    counts = np.zeros(x.shape[1], dtype=np.int64)
    for start in range(0, x.indices.size, SPARSE_BLOCK_ENTRIES):
        counts += np.bincount(x.indices[start : start + SPARSE_BLOCK_ENTRIES], minlength=x.shape[1])
    return counts


def _optional_array_eq(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and _array_eq(a, b))


@attrs.frozen(eq=False)
class CenteredSparseGram(ImplicitCentring, OperatorAccess):
    r"""The covariance of a ``scipy.sparse`` data matrix, centred and standardised implicitly.

    For :math:`X` (``n x p``, sparse), column means :math:`\mu` (``mean``;
    :math:`\mu = 0` when ``mean`` is ``None``), the divisor :math:`s`
    (``scale``: :math:`n - 1` when centring, :math:`n` otherwise) and column
    scales :math:`D = \operatorname{diag}(d)` (``column_scale``; the identity
    when ``None``),

    .. math::

        C = D^{-1}\,\frac{(X - \mathbf 1\mu^\top)^\top (X - \mathbf 1\mu^\top)}{s}\,D^{-1}
          = D^{-1}\,\frac{X^\top X - n\,\mu\mu^\top}{s}\,D^{-1},

    the covariance (correlation, with :math:`d` the standard deviations) of
    the centred data, which are never formed: :math:`X` stays sparse (the
    second form holds when :math:`\mu` holds the column means, as
    :func:`spcakit.inputs.sparse.sparse_problem` gives them).

    ``data`` is held as a canonical CSR array of float64 (sorted indices, no
    duplicates, no explicit zeros; see :func:`canonical_csr`,
    which the constructor applies): the caller's array itself when it is
    one already, else one converted copy of the stored entries (``12 nnz`` bytes with
    32-bit indices, ``16 nnz`` with 64-bit ones).

    Products :math:`CV` (``V`` of shape ``(p, k)``) cost :math:`O(\mathrm{nnz}\,k + (n + p)k)`:

    .. math::

        Z = X(D^{-1}V) - \mathbf 1\,\mu^\top D^{-1} V, \qquad
        CV = D^{-1}\big(X^\top Z - \mu\,(\mathbf 1^\top Z)\big)/s,

    (:class:`ImplicitCentring`, shared with the dense :class:`GramCovariance`),
    :math:`Z` being the centred data times :math:`D^{-1}V` (``n x k``), so that
    no difference of large sums is taken: the rounding error is that of the
    dense centred product, not :math:`\epsilon\,\|X^\top X\|`. The diagonal
    sums the centred stored entries, :math:`\sum_{i: x_{ij} \ne 0}(x_{ij} - \mu_j)^2
    + (n - \mathrm{nnz}_j)\,\mu_j^2`, a block of
    :data:`SPARSE_BLOCK_ENTRIES` entries at a time. Nothing ``n x p`` is ever
    formed, and nothing ``p x p`` unless ``p`` is small (see
    :meth:`top_eigenpairs`).
    """

    data: Any = attrs.field(converter=canonical_csr)
    mean: np.ndarray | None = None
    scale: float = 1.0
    column_scale: np.ndarray | None = None
    _spectra: dict[Any, Any] = attrs.field(factory=dict, init=False, repr=False)

    def matmat(self, v: np.ndarray) -> np.ndarray:
        return self._implicit_product(v)

    def _stored_blocks(self) -> Any:
        """``(columns, values)`` of the stored entries, :data:`SPARSE_BLOCK_ENTRIES` at a time."""
        indices, values = self.data.indices, self.data.data
        for start in range(0, values.size, SPARSE_BLOCK_ENTRIES):
            yield indices[start : start + SPARSE_BLOCK_ENTRIES], values[start : start + SPARSE_BLOCK_ENTRIES]

    def diagonal(self) -> np.ndarray:
        p = self.p
        squares = np.zeros(p)
        for columns, values in self._stored_blocks():
            deviations = values if self.mean is None else values - self.mean[columns]
            squares += np.bincount(columns, weights=deviations * deviations, minlength=p)
        if self.mean is not None:
            squares += (self.n - stored_per_column(self.data)) * self.mean**2  # the implicit zeros, centred
        diagonal = squares / self.scale
        return diagonal if self.column_scale is None else diagonal / self.column_scale**2

    def trace(self) -> float:
        return float(self.diagonal().sum())

    def _small_covariance(self) -> np.ndarray:
        r"""The explicit :math:`p\times p` covariance, for small ``p`` only: :math:`(X^\top X - n\mu\mu^\top)/s`
        from the sparse product :math:`X^\top X` (its rounding error is :math:`\epsilon\|X^\top X\|`, larger
        than the products' when the means dominate the spread)."""
        gram = np.asarray((self.data.T @ self.data).toarray())
        if self.mean is not None:
            gram -= self.n * np.outer(self.mean, self.mean)
        gram /= self.scale
        if self.column_scale is not None:
            gram /= np.outer(self.column_scale, self.column_scale)
        return (gram + gram.T) / 2

    def _explicit_eigen(self, r: int) -> bool:
        """Whether the eigenpairs come from the explicit covariance: ``p`` at most :data:`DENSE_EIGEN_LIMIT`,
        or at most :data:`DENSE_GRAM_LIMIT` with ``n >= p`` (then ``p x p`` is no more than ``n x p``), or
        ``r >= p - 1`` (beyond Lanczos)."""
        p = self.p
        return p <= DENSE_EIGEN_LIMIT or (self.n >= p and p <= DENSE_GRAM_LIMIT) or r >= p - 1

    def _lanczos(self, r: int, vectors: bool) -> Any:
        return operator_lanczos(self.matmat, self.p, r, vectors=vectors)

    def top_eigenpairs(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        r"""The ``r`` leading eigenpairs: LAPACK on the explicit covariance when ``p`` is small (see
        :meth:`_explicit_eigen`), else ARPACK's Lanczos (``eigsh``) on the products, from a fixed start vector.

        Kept per ``r`` (the PCA start and the metrics of a run ask for the same pairs); copies are returned.
        """
        key = ("pairs", r)
        if key not in self._spectra:
            if self._explicit_eigen(r):
                self._spectra[key] = _eigh_top(self._small_covariance(), r)
            else:
                self._spectra[key] = self._lanczos(r, vectors=True)
        values, vectors = self._spectra[key]
        return values.copy(), vectors.copy()

    def top_eigenvalues(self, r: int) -> np.ndarray:
        r = min(r, self.p)
        if ("pairs", r) in self._spectra:
            values = self._spectra[("pairs", r)][0]
        else:
            key = ("values", r)
            if key not in self._spectra:
                if self._explicit_eigen(r):
                    self._spectra[key] = leading_eigenpairs(self._small_covariance(), r, vectors=False)
                else:
                    self._spectra[key] = self._lanczos(r, vectors=False)
            values = self._spectra[key]
        return np.clip(np.asarray(values, dtype=float), 0.0, None)

    def columns(self, index: np.ndarray) -> np.ndarray:
        r""":math:`C_{:,I}` by products with coordinate vectors, a block of columns at a time
        (:math:`O(\mathrm{nnz}\,|I|)`; the ``n x block`` scores stay within :data:`SPARSE_BLOCK_BYTES`)."""
        index = np.asarray(index, dtype=int)
        out = np.empty((self.p, index.size))
        width = max(1, SPARSE_BLOCK_BYTES // (8 * max(self.n, self.p)))
        for start in range(0, index.size, width):
            chunk = index[start : start + width]
            selector = np.zeros((self.p, chunk.size))
            selector[chunk, np.arange(chunk.size)] = 1.0
            out[:, start : start + chunk.size] = self.matmat(selector)
        return out

    def submatrix(self, index: np.ndarray) -> np.ndarray:
        r""":math:`C_{II}` from the columns :math:`X_{:,I}` alone, :math:`O(m|I|^2)` for the :math:`m` rows
        holding an entry of them: :math:`\sum_i (x_{iI} - \mu_I)(x_{iI} - \mu_I)^\top` over those rows (densified
        a block at a time, centred, multiplied), plus :math:`(n - m)\,\mu_I\mu_I^\top` for the others."""
        index = np.asarray(index, dtype=int)
        k = index.size
        picked = self.data[:, index]
        rows = np.flatnonzero(np.diff(picked.indptr))
        picked = picked[rows]
        mean = np.zeros(k) if self.mean is None else self.mean[index]
        gram = (self.n - rows.size) * np.outer(mean, mean)
        height = max(1, SPARSE_BLOCK_BYTES // (8 * max(k, 1)))
        for start in range(0, rows.size, height):
            block = picked[start : start + height].toarray() - mean
            gram += block.T @ block
        gram /= self.scale
        if self.column_scale is not None:
            scales = self.column_scale[index]
            gram /= np.outer(scales, scales)
        return (gram + gram.T) / 2

    def restrict(self, index: np.ndarray) -> CenteredSparseGram:
        """The covariance of the variables ``index`` alone: of those columns of the data (their stored entries
        copied), with their means and scales."""
        index = np.asarray(index, dtype=int)
        return CenteredSparseGram(
            self.data[:, index], None if self.mean is None else self.mean[index], self.scale,
            None if self.column_scale is None else self.column_scale[index],
        )  # fmt: skip

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CenteredSparseGram):
            return False
        a, b = self.data, other.data
        same_data = a is b or (
            a.shape == b.shape and _array_eq(a.indptr, b.indptr) and _array_eq(a.indices, b.indices)
            and _array_eq(a.data, b.data)
        )  # fmt: skip
        return (
            same_data and self.scale == other.scale and _optional_array_eq(self.mean, other.mean)
            and _optional_array_eq(self.column_scale, other.column_scale)
        )  # fmt: skip

    __hash__ = None  # type: ignore[assignment]
