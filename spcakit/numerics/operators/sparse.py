"""The covariance of a ``scipy.sparse`` data matrix, centred and scaled implicitly, never densified
(:class:`CenteredSparseGram`), and the canonical CSR form it holds (:func:`canonical_csr`)."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from spcakit.core.errors import InvalidDataError
from spcakit.numerics.operators.base import OperatorAccess, array_eq, optional_array_eq
from spcakit.numerics.operators.eigen import (
    DENSE_COVARIANCE_LIMIT,
    DENSE_EIGEN_LIMIT,
    DENSE_GRAM_LIMIT,
    eigh_top,
    leading_eigenpairs,
    operator_lanczos,
)
from spcakit.numerics.operators.gram import ImplicitCentring

#: Stored entries of a sparse matrix visited at a time by :class:`CenteredSparseGram` (4 MiB of float64):
#: column sums over the stored entries make temporaries of this size, never of the size of the data.
SPARSE_BLOCK_ENTRIES = 1 << 19


#: Dense bytes a block of :meth:`CenteredSparseGram.columns` or :meth:`CenteredSparseGram.submatrix` may take.
SPARSE_BLOCK_BYTES = 1 << 22




def canonical_csr(matrix: Any, what: str = "the data matrix", *, owned: bool = False) -> Any:
    """``matrix`` as a canonical ``scipy.sparse.csr_array`` of float64: sorted indices, no duplicates, no
    explicit zeros.

    The caller's arrays are never changed: a float64 CSR matrix already
    canonical is wrapped without a copy (its arrays are shared); any other is
    converted to a new CSR array (one copy of the stored entries), which is
    then canonicalised in place. ``owned=True`` says that ``matrix`` is the
    caller's own temporary, which may be canonicalised in place. Complex or
    non-numeric values and shapes other than 2-D are refused
    (:class:`~spcakit.core.errors.InvalidDataError`).
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



#: Bytes of one densified block of rows when :func:`sparse_gram` forms a covariance by dense products.
GRAM_DENSE_BLOCK_BYTES = 1 << 23
#: The cost of one pair of stored entries in scipy's sparse product :math:`B^\top B`, in terms of
#: (row, column, column) terms of the dense one (BLAS ``syrk``): 4.4 ns against 0.037 ns (single-threaded
#: OpenBLAS, 20 000 x 2000 log-normalised counts, 18 % stored). :func:`sparse_gram` uses the cheaper, block by
#: block.
SPARSE_PAIR_COST = 100.0


def _entry_blocks(block: Any) -> Any:
    """``block``'s rows (CSR) in pieces of about :data:`SPARSE_BLOCK_ENTRIES` stored entries."""
    rows = block.shape[0]
    if block.nnz <= SPARSE_BLOCK_ENTRIES:
        yield block
        return
    bounds = np.searchsorted(block.indptr, np.arange(0, block.nnz, SPARSE_BLOCK_ENTRIES), side="right") - 1
    edges = sorted({int(b) for b in bounds} | {rows})
    for first, last in zip(edges[:-1], edges[1:]):
        if last > first:
            yield block[first:last]


def explicit_covariance(x: Any, columns: np.ndarray | None = None) -> bool:
    r"""Whether a sparse data matrix (``n x p``, CSR; or its ``columns`` alone) gets an explicit ``p x p``
    covariance rather than the matrix-free :class:`~spcakit.numerics.operators.CenteredSparseGram`: when :math:`p^2` is
    at most its stored entries
    (so the covariance takes no more memory than the data, and a product with it costs no more than one with
    the data; then also :math:`n \ge p`) and :math:`p` is at most
    :data:`~spcakit.numerics.operators.DENSE_COVARIANCE_LIMIT`, as for dense data. Single-cell matrices (many cells,
    a few thousand genes, 5 to 30 % stored) are such: on 10 000 x 1000 data with 20 % stored, ``auto``
    took 59 s matrix-free and 8.7 s on the explicit covariance (what the dense copy gets)."""
    p = x.shape[1] if columns is None else len(columns)
    if p > DENSE_COVARIANCE_LIMIT:
        return False
    stored = x.nnz if columns is None else int(np.bincount(x.indices, minlength=x.shape[1])[columns].sum())
    return p * p <= stored


def sparse_gram(
    x: Any, mean: np.ndarray | None, columns: np.ndarray | None = None, row_weights: np.ndarray | None = None
) -> np.ndarray:
    r"""The centred Gram matrix :math:`(X - \mathbf 1\mu^\top)^\top (X - \mathbf 1\mu^\top)` (``p x p``) of a CSR
    matrix (of any dtype; ``columns``: those columns only, in that order), never densified whole; with
    ``row_weights`` :math:`w`, :math:`\sum_i w_i (x_i - \mu)(x_i - \mu)^\top`.

    It is summed over blocks of rows, each by the cheaper of two products: the sparse product
    :math:`B^\top B` (work: the pairs of stored entries within a row, :math:`\sum_i \mathrm{nnz}_i^2`),
    centred at the end by :math:`\sum (x - \mu)(x - \mu)^\top = \sum x x^\top - s\mu^\top - \mu s^\top + m\mu\mu^\top`
    over its rows, ``m`` of them (their weights' sum) of sum ``s`` (their weighted sum) (rounding :math:`\epsilon\|X^\top X\|`), or the block densified (at most
    :data:`GRAM_DENSE_BLOCK_BYTES`), centred and multiplied by BLAS (``syrk``: work :math:`b\,p^2` for ``b``
    rows, no cancellation), by :data:`SPARSE_PAIR_COST`. Memory: two ``p x p`` arrays and one block. Computed
    in float64 whatever the data's dtype (a block is converted at a time). ``mean`` ``None``: uncentred.
    """
    from scipy.linalg import blas  # noqa: PLC0415 - scipy.linalg only when a Gram matrix is formed

    n = x.shape[0]
    p = x.shape[1] if columns is None else len(columns)
    centre = np.zeros(p) if mean is None else np.asarray(mean, dtype=float)
    upper = np.zeros((p, p), order="F")  # the dense products' part: its upper triangle (syrk)
    gram = np.zeros((p, p))  # the sparse products' part: the sum of x x^T over their rows, uncentred
    sparse_rows, sparse_sums = 0.0, np.zeros(p)
    roots = None if row_weights is None else np.sqrt(np.asarray(row_weights, dtype=float))
    buffer = None
    height = max(1, GRAM_DENSE_BLOCK_BYTES // (8 * max(p, 1)))
    for start in range(0, n, height):
        stop = min(n, start + height)
        block = x[start:stop] if columns is None else x[start:stop][:, columns]
        pairs = float(np.square(np.diff(block.indptr).astype(np.float64)).sum())
        if pairs * SPARSE_PAIR_COST < (stop - start) * float(p) * p:
            first = start
            for piece in _entry_blocks(block):
                part = piece.astype(np.float64)
                if roots is None:
                    sparse_rows += part.shape[0]
                    sparse_sums += np.asarray(part.sum(axis=0)).ravel()
                else:  # sqrt(w_i) x_i: their products are w_i x_i x_i^T
                    root = roots[first : first + part.shape[0]]
                    first += part.shape[0]
                    sparse_rows += float(root @ root)
                    sparse_sums += np.asarray(part.T @ (root * root)).ravel()
                    part = part.multiply(root[:, None]).tocsr()
                gram += (part.T @ part).toarray()
        else:
            if buffer is None:  # one dense block, reused
                buffer = np.empty((height, p))
            dense = block.astype(np.float64).toarray(out=buffer[: stop - start])
            dense -= centre
            if roots is not None:
                dense *= roots[start:stop, None]
            # a C-ordered (b x p) block is the Fortran (p x b) matrix B^T: syrk forms B^T B in its upper triangle
            upper = blas.dsyrk(1.0, dense.T, beta=1.0, c=upper, trans=0, lower=0, overwrite_c=1)
    covariance = np.triu(upper) + np.triu(upper, 1).T + gram
    if mean is not None and sparse_rows:
        cross = np.outer(sparse_sums, centre)
        covariance += sparse_rows * np.outer(centre, centre) - cross - cross.T
    return (covariance + covariance.T) / 2


def centred_submatrix(
    data: Any, index: np.ndarray, mean: np.ndarray | None, scale: float, column_scale: np.ndarray | None,
    row_weights: np.ndarray | None = None,
) -> np.ndarray:
    r""":math:`C_{II}` of the CSR ``data`` from its columns :math:`X_{:,I}` alone, :math:`O(m|I|^2)` for the
    :math:`m` rows holding an entry of them: :math:`\sum_i w_i (x_{iI} - \mu_I)(x_{iI} - \mu_I)^\top` over those
    rows (densified a block at a time, centred, multiplied), plus the other rows' weight times
    :math:`\mu_I\mu_I^\top` (:math:`w_i = 1` without ``row_weights``: :math:`n - m` times), divided by ``scale``
    and by the columns' scales. Shared by :class:`CenteredSparseGram` and the weighted
    :class:`~spcakit.inputs.sparse.WeightedSparseGram`."""
    index = np.asarray(index, dtype=int)
    k = index.size
    picked = data[:, index]
    rows = np.flatnonzero(np.diff(picked.indptr))
    picked = picked[rows]
    centre = np.zeros(k) if mean is None else mean[index]
    if row_weights is None:
        weights, rest = None, float(data.shape[0] - rows.size)
    else:
        weights = row_weights[rows]
        rest = float(row_weights.sum()) - float(weights.sum())
    gram = rest * np.outer(centre, centre)
    height = max(1, SPARSE_BLOCK_BYTES // (8 * max(k, 1)))
    for start in range(0, rows.size, height):
        block = picked[start : start + height].toarray() - centre
        gram += block.T @ (block if weights is None else block * weights[start : start + height, None])
    gram /= scale
    if column_scale is not None:
        scales = column_scale[index]
        gram /= np.outer(scales, scales)
    return (gram + gram.T) / 2


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
    #: what the operator computed once and keeps: its spectra by key, and its diagonal under "diagonal"
    _spectra: dict[Any, Any] = attrs.field(factory=dict, init=False, repr=False)

    def matmat(self, v: np.ndarray) -> np.ndarray:
        return self._implicit_product(v)

    def _stored_blocks(self) -> Any:
        """``(columns, values)`` of the stored entries, :data:`SPARSE_BLOCK_ENTRIES` at a time."""
        indices, values = self.data.indices, self.data.data
        for start in range(0, values.size, SPARSE_BLOCK_ENTRIES):
            yield indices[start : start + SPARSE_BLOCK_ENTRIES], values[start : start + SPARSE_BLOCK_ENTRIES]

    def diagonal(self) -> np.ndarray:
        """The centred sums of squares (see the class), computed once and kept (every deflation of the operator
        reads them; one pass over the stored entries took 44 ms at 5 million): a copy each time."""
        if "diagonal" not in self._spectra:
            self._spectra["diagonal"] = self._diagonal()
        return self._spectra["diagonal"].copy()  # type: ignore[no-any-return]

    def _diagonal(self) -> np.ndarray:
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

    def direct_spectrum(self, r: int) -> bool:
        """Whether the eigenpairs come from the explicit covariance: ``p`` at most :data:`DENSE_EIGEN_LIMIT`,
        or at most :data:`DENSE_GRAM_LIMIT` with ``n >= p`` (then ``p x p`` is no more than ``n x p``), or
        ``r >= p - 1`` (beyond Lanczos)."""
        p = self.p
        return p <= DENSE_EIGEN_LIMIT or (self.n >= p and p <= DENSE_GRAM_LIMIT) or r >= p - 1

    def _lanczos(self, r: int, vectors: bool) -> Any:
        return operator_lanczos(self.matmat, self.p, r, vectors=vectors)

    def top_eigenpairs(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        r"""The ``r`` leading eigenpairs: LAPACK on the explicit covariance when ``p`` is small (see
        :meth:`direct_spectrum`), else ARPACK's Lanczos (``eigsh``) on the products, from a fixed start vector.

        Kept per ``r`` (the PCA start and the metrics of a run ask for the same pairs); copies are returned.
        """
        key = ("pairs", r)
        if key not in self._spectra:
            if self.direct_spectrum(r):
                self._spectra[key] = eigh_top(self._small_covariance(), r)
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
                if self.direct_spectrum(r):
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
        r""":math:`C_{II}` from the columns :math:`X_{:,I}` alone (:func:`centred_submatrix`)."""
        return centred_submatrix(self.data, index, self.mean, self.scale, self.column_scale)

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
            a.shape == b.shape and array_eq(a.indptr, b.indptr) and array_eq(a.indices, b.indices)
            and array_eq(a.data, b.data)
        )  # fmt: skip
        return (
            same_data and self.scale == other.scale and optional_array_eq(self.mean, other.mean)
            and optional_array_eq(self.column_scale, other.column_scale)
        )  # fmt: skip

    __hash__ = None  # type: ignore[assignment]
