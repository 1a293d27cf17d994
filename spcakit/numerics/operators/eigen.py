r"""The eigen policy: the leading eigenpairs of an explicit matrix, of an operator given by its products, or of data
through their small Gram matrix; every iterative solver from a fixed start, so that every run gives the same digits.

The thresholds between solvers are the constants below; the measurements behind them are in
``docs/benchmarks.md`` ("The eigen policy").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from spcakit.numerics.linalg import interruptible, leading_subset
from spcakit.numerics.operators.base import CovarianceOperator

#: Above this dimension an operator is never densified to find eigenvectors.
DENSE_EIGEN_LIMIT = 600


#: Up to this dimension the leading eigenpairs of an explicit matrix come from NumPy's ``eigh`` (all of them);
#: above it, from SciPy's subset driver (``scipy.linalg.eigh`` with ``subset_by_index``), whose import costs
#: 0.3 s (docs/benchmarks.md, "The eigen policy").
NUMPY_EIGH_LIMIT = 500


#: A data matrix whose smaller side is at most this uses a dense eigensolver on its small Gram matrix.
DENSE_GRAM_LIMIT = 2000

#: Data with n >= p and p at most this get an explicit covariance (:mod:`spcakit.inputs.dense`, and sparse data
#: by :func:`~spcakit.numerics.operators.sparse.explicit_covariance`); otherwise it is applied matrix-free.
DENSE_COVARIANCE_LIMIT = 4000


#: An explicit covariance larger than this uses Lanczos for its ``r <= p/20`` leading eigenpairs.
LANCZOS_LIMIT = 2000


#: Residual :math:`\|Cy - \theta y\| \le` this times :math:`\theta_1` ends :func:`block_krylov_top`.
KRYLOV_TOL = 1e-10


#: Blocks in :func:`block_krylov_top`'s basis before it restarts, the first one included (docs/benchmarks.md,
#: "The eigen policy").
KRYLOV_DEPTH = 16


#: Columns of :func:`block_krylov_top`'s blocks (at least ``r``): wider blocks take more columns of products to
#: converge, but each column costs less (docs/benchmarks.md, "The eigen policy").
KRYLOV_BLOCK = 12


#: After a restart whose residuals are within this factor of :data:`KRYLOV_TOL`, :func:`block_krylov_top`
#: checks convergence after every block rather than at the next restart (docs/benchmarks.md, "The eigen policy").
KRYLOV_NEAR = 1e3


#: Restarts of :func:`block_krylov_top` before it hands over to ARPACK (never reached in the tests).
KRYLOV_CYCLES = 200

#: Smallest Lanczos basis of :func:`operator_lanczos` (ARPACK's default is ``2r + 1``, at least 20;
#: docs/benchmarks.md, "The eigen policy").
LANCZOS_BASIS = 40
#: :func:`operator_lanczos` stops when each Ritz pair's residual is at most this times its value (ARPACK's
#: ``tol``), the tolerance :data:`KRYLOV_TOL` sets for the block method (ARPACK's default, 0, iterates to
#: machine precision: on 100 000 x 50 000 sparse Gaussian data at density 0.001, r = 10, 807 products against 595).
LANCZOS_TOL = 1e-10


#: The solvers :func:`top_eigenpairs` can be asked for.
SOLVERS = ("auto", "dense", "lanczos", "krylov")


def top_eigenpairs(source: CovarianceOperator | np.ndarray, r: int, solver: str = "auto", *, vectors: bool = True) -> Any:
    r"""The ``r`` leading eigenpairs :math:`(\lambda_i, u_i)` of a covariance, eigenvalues descending: the package's
    one entry point to its eigen policy.

    Parameters
    ----------
    source
        An explicit symmetric matrix, or a :class:`~spcakit.numerics.operators.CovarianceOperator` (data, a sparse
        matrix, a deflated or padded covariance) known by its products :math:`CV`.
    r
        How many pairs, :math:`1 \le r \le p`.
    solver
        ``"auto"`` (the default) lets the source choose the cheapest solver that is exact to rounding: LAPACK
        on an explicit matrix up to :data:`LANCZOS_LIMIT` variables (or ``r > p/20``) and Lanczos beyond
        (:func:`leading_eigenpairs`); for data, the small Gram matrix when one side is at most
        :data:`DENSE_GRAM_LIMIT`, else restarted block Krylov on the products (:func:`block_krylov_top`); for
        other operators, dense up to :data:`DENSE_EIGEN_LIMIT` variables, else Lanczos. ``"dense"`` forms the
        :math:`p \times p` matrix and calls LAPACK; ``"lanczos"`` runs ARPACK on the products;
        ``"krylov"`` runs :func:`block_krylov_top` on them. Every iterative solver starts from a fixed
        vector, so that every run gives the same digits. The measurements behind the thresholds are in
        ``docs/benchmarks.md`` ("The eigen policy").
    vectors
        With ``False``, only the eigenvalues.

    Returns
    -------
    values, vectors
        ``(r,)`` and ``(p, r)``, or the values alone without ``vectors``.
    """
    if solver not in SOLVERS:
        raise ValueError(f"solver must be one of {', '.join(SOLVERS)}; got {solver!r}")
    explicit = isinstance(source, np.ndarray)
    if solver == "auto":
        if explicit:
            return leading_eigenpairs(source, r, vectors=vectors)
        return source.top_eigenpairs(r) if vectors else source.top_eigenvalues(r)  # type: ignore[union-attr]
    if solver == "dense":
        matrix = source if explicit else getattr(source, "matrix", None)
        if matrix is None:
            dense = source.matmat(np.eye(source.p))  # type: ignore[union-attr]
            matrix = (dense + dense.T) / 2
        pairs = eigh_top(matrix, r)
        return pairs if vectors else pairs[0]
    p = source.shape[0] if explicit else source.p  # type: ignore[union-attr]
    matmat = (lambda v: source @ v) if explicit else source.matmat  # type: ignore[union-attr]
    if solver == "lanczos":
        return operator_lanczos(matmat, p, r, vectors=vectors)
    pairs = block_krylov_top(matmat, p, r)
    return pairs if vectors else pairs[0]


def explicit_is_direct(p: int, r: int) -> bool:
    """Whether :func:`leading_eigenpairs` takes the ``r`` leading pairs of an explicit ``p x p`` matrix from LAPACK
    (exact to rounding) rather than Lanczos: up to :data:`LANCZOS_LIMIT` variables, or for ``r > p/20``."""
    return p <= LANCZOS_LIMIT or 20 * r > p


def operator_is_direct(p: int, r: int) -> bool:
    """Whether :func:`operator_top` densifies the operator (LAPACK, exact to rounding) rather than run Lanczos."""
    return p <= DENSE_EIGEN_LIMIT or r >= p - 1


def leading_eigenpairs(matrix: np.ndarray, r: int, *, vectors: bool = True) -> Any:
    r"""The ``r`` leading eigenpairs (eigenvalues only without ``vectors``) of an explicit symmetric matrix.

    The package's one policy: LAPACK's subset driver (``eigh``, :math:`O(p^3)`)
    up to :data:`LANCZOS_LIMIT` variables or for ``r > p/20``; Lanczos
    (:func:`lanczos_top`, :math:`O(p^2 r)` per restart, from a fixed start so
    that every run gives the same digits) beyond: 50 s against 1.6 s at
    :math:`p = 5000`, :math:`r = 10`.
    """
    p = matrix.shape[0]
    if not explicit_is_direct(p, r):
        return lanczos_top(matrix, r, vectors=vectors)
    if not vectors:
        if p <= NUMPY_EIGH_LIMIT:
            return interruptible(lambda: np.linalg.eigvalsh(matrix), p)[p - r :][::-1]
        return np.sort(interruptible(lambda: leading_subset(matrix, r, vectors=False), p))[::-1]  # SciPy: above the limit
    return eigh_top(matrix, r)


def eigh_top(matrix: np.ndarray, r: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``r`` leading eigenpairs of a symmetric ``matrix`` (values descending), by :data:`NUMPY_EIGH_LIMIT`'s
    rule."""
    p = matrix.shape[0]
    if p <= NUMPY_EIGH_LIMIT:
        values, vectors = interruptible(lambda: np.linalg.eigh(matrix), p)
        return values[p - r :][::-1], vectors[:, p - r :][:, ::-1]
    values, vectors = interruptible(lambda: leading_subset(matrix, r), p)  # SciPy: see NUMPY_EIGH_LIMIT
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


def orthonormal_completion(basis: np.ndarray, r: int) -> np.ndarray:
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
    r"""The ``r`` leading eigenvalues (descending) of a symmetric ``p x p`` operator given by its products
    ``matmat`` and, with ``vectors``, eigenvectors: ARPACK's Lanczos (``eigsh``) with a basis of
    :data:`LANCZOS_BASIS` vectors (at least ``2r + 1``), from a fixed start vector so that every run gives
    the same digits, until every residual :math:`\|Cy_i - \theta_i y_i\|` is at most :data:`LANCZOS_TOL`
    :math:`\cdot\,\theta_i` (each eigenvalue then exact to :math:`\|r_i\|^2/\mathrm{gap}`, each eigenvector to
    :math:`\|r_i\|/\mathrm{gap}`)."""
    from scipy.sparse.linalg import LinearOperator, eigsh  # noqa: PLC0415 - scipy.sparse takes 0.1 s to import

    linear = LinearOperator((p, p), matvec=matmat, matmat=matmat, rmatvec=matmat, dtype=float)
    start = np.random.default_rng(0).standard_normal(p)
    ncv = min(p, max(2 * r + 1, LANCZOS_BASIS))
    if not vectors:
        return np.sort(eigsh(linear, k=r, which="LA", v0=start, ncv=ncv, tol=LANCZOS_TOL, return_eigenvectors=False))[::-1]
    values, vecs = eigsh(linear, k=r, which="LA", v0=start, ncv=ncv, tol=LANCZOS_TOL)
    order = np.argsort(values)[::-1]
    return values[order], vecs[:, order]


def operator_top(op: CovarianceOperator, r: int) -> tuple[np.ndarray, np.ndarray]:
    """Leading eigenpairs of any operator: dense when small, Lanczos otherwise (from a fixed start, so that
    every run gives the same digits: ARPACK's default start is random)."""
    p = op.p
    if operator_is_direct(p, r):
        dense = op.matmat(np.eye(p))
        return eigh_top((dense + dense.T) / 2, r)
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
        return eigh_top((dense + dense.T) / 2, r)
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
    values, left = eigh_top(small_gram, min(r, n))
    values = np.clip(values, 0.0, None)
    good = values > max(float(values[0]), 0.0) * n * np.finfo(float).eps * 10
    right = transpose_product(left[:, good]) / np.sqrt(values[good])
    full_values = np.concatenate([values[good], np.zeros(r - int(good.sum()))])
    return full_values, orthonormal_completion(right, r)
