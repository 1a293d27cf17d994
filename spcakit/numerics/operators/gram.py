r"""The covariance of a dense data matrix applied through products, :math:`C = A^\top A / s`
(:class:`GramCovariance`), centred and scaled implicitly (:class:`ImplicitCentring`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
import numpy as np

from spcakit.numerics.operators.base import OperatorAccess, array_eq, optional_array_eq
from spcakit.numerics.operators.screen import Factor
from spcakit.numerics.operators.eigen import (
    DENSE_GRAM_LIMIT,
    KRYLOV_BLOCK,
    KRYLOV_DEPTH,
    block_krylov_top,
    eigenpairs_through_small_gram,
    eigh_top,
)

#: Bytes of one block of a dense data matrix centred (and scaled) into a reused buffer.
DENSE_BLOCK_BYTES = 1 << 22


#: A product :math:`B^\top(Bv)` with a dense C-ordered data matrix reads its rows in blocks of this many
#: bytes, each block's two products taken while it is in the cache (:meth:`GramCovariance._row_block_product`;
#: docs/benchmarks.md, "The eigen policy").
ROW_BLOCK_BYTES = 1 << 22


#: Fewest rows in a block of :data:`ROW_BLOCK_BYTES` for which the one-pass product is used (p <= 32 768).
ROW_BLOCK_MIN_ROWS = 16


#: Widest ``v`` for which the one-pass product is used (wider products are bound by arithmetic, not memory).
ROW_BLOCK_WIDTH = 32
#: :meth:`GramCovariance.matmat_rows` gathers the data's columns when they are at most this share of them. The
#: columns of C-ordered data are strided: gathering 2 % of them touches 15 % of the cache lines, 3 % about a
#: quarter. On 500 x 100 000 (one vector, one thread) the gather and one pass took 16.5 ms for 100 columns and
#: 20.1 ms for 1000 against 31-34 ms for the two passes of a whole product, 36.6 ms for 3000 and 75.6 ms for 15 000.
ROWS_GATHER_SHARE = 1 / 64


#: A dense data matrix is centred implicitly in products while every column's mean is at most this many
#: times its root mean square deviation (the products then lose at most ~2 of 16 digits against the
#: centred copy's); beyond, each product centres the data a block of columns at a time.
OFFSET_LIMIT = 100.0


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

    def rank_at_most(self) -> int:
        """At most ``min(n, p)``: :math:`C = B^\top B / s` with ``n`` rows in :math:`B`."""
        return int(min(self.data.shape))

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
        if self.mean is not None:  # the centred data times w
            # one vector (ARPACK's Lanczos): einsum's own loop, not BLAS. NumPy and SciPy load separate OpenBLAS
            # libraries, each with its worker threads; a BLAS dot here between ARPACK's BLAS calls kept both pools
            # spinning on two cores, and SciPy's sparse products ran at half speed (the default sparse fit took
            # 27-29 s at two threads against 16-18 s at one)
            z -= np.einsum("i,i->", self.mean, w) if w.ndim == 1 else self.mean @ w
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
        r""":math:`B^\top z` (``z`` of shape ``(n, k)``): :math:`D^{-1}(X^\top z - \mu\,\mathbf 1^\top z)` in one pass
        over the data when centring is implicit (:meth:`_implicit`), else a centred block of columns at a time."""
        if not self._centred():
            return self.data.T @ z
        if self._implicit():
            out = np.asarray(self.data.T @ z)  # the one p x k array made: the rest is done in place
            if self.mean is not None:
                for j, total in enumerate(z.sum(axis=0)):
                    out[:, j] -= self.mean * total
            if self.column_scale is not None:
                out /= self.column_scale[:, None]
            return out
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

    def centred_data(self) -> np.ndarray:
        r""":math:`B` (``n x p``): the data centred and scaled as the products use them, a copy (:math:`C = B^\top B/s`)."""
        return self._centred_columns(np.arange(self.p))

    def _centred_columns(self, index: np.ndarray) -> np.ndarray:
        """:math:`B_{:,I}` (``n x |I|``): the chosen columns centred and scaled, a copy of them alone."""
        index = np.asarray(index, dtype=int)
        cols = self.data[:, index]
        if self.mean is not None:
            cols = cols - self.mean[index]
        if self.column_scale is not None:
            cols = cols / self.column_scale[index]
        return cols

    def direct_spectrum(self, r: int) -> bool:
        """The small Gram matrix by LAPACK when one side is at most :data:`DENSE_GRAM_LIMIT` (or ``r`` is close
        to it); block Krylov otherwise."""
        small = min(self.data.shape)
        return small <= DENSE_GRAM_LIMIT or r >= small - 1

    def top_eigenpairs(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        n, p = self.data.shape
        if self.direct_spectrum(r):
            if n < p:  # eigenvectors of B B^T (n x n), mapped back: cheaper than SVD when n << p
                values, vectors = eigenpairs_through_small_gram(self._small_gram(), self._transpose_product, r)
            else:
                values, vectors = eigh_top(self._small_gram(), r)
            values = values / self.scale
            kept = self._kept.get("top_values")
            if kept is None or kept.shape[0] < r:
                self._kept["top_values"] = values.copy()
            return values, vectors
        # the Krylov basis and its products take at most a tenth of the data's memory (and 12 blocks)
        block = max(r, KRYLOV_BLOCK)
        return block_krylov_top(self.matmat, p, r, block=block, depth=max(3, min(KRYLOV_DEPTH, n // (20 * block))))

    def top_eigenvalues(self, r: int) -> np.ndarray:
        """The ``r`` leading eigenvalues: those a direct :meth:`top_eigenpairs` of at least ``r`` pairs found,
        kept (forming the small Gram matrix again costs :math:`\\min(n, p)/(2r)` passes over the data: on
        500 x 100 000 data, r = 20, twelve), else from :meth:`top_eigenpairs` (the same values, to rounding)."""
        kept = self._kept.get("top_values")
        if kept is not None and kept.shape[0] >= r and self.direct_spectrum(r):
            return np.clip(kept[:r], 0.0, None)
        return super().top_eigenvalues(r)

    def kept_top_eigenvalues(self, r: int) -> np.ndarray | None:
        kept = self._kept.get("top_values")  # kept by a direct top_eigenpairs alone
        wanted = min(r, self.data.shape[1])
        return None if kept is None or kept.shape[0] < wanted else np.clip(kept[:wanted], 0.0, None)

    def columns(self, index: np.ndarray) -> np.ndarray:
        return self._transpose_product(self._centred_columns(index)) / self.scale

    def submatrix(self, index: np.ndarray) -> np.ndarray:
        cols = self._centred_columns(index)
        sub = cols.T @ cols / self.scale
        return (sub + sub.T) / 2

    def matmat_rows(self, w: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """:math:`C_{:,I}W_I`: the data's columns ``rows`` gathered (``n x |I|``), then one pass for :math:`B^\top z`;
        a product with all of ``w`` when they are more than :data:`ROWS_GATHER_SHARE` of the variables of C-ordered
        data (gathering them then reads most of the data: a pass of its own)."""
        z = self._gathered(w, rows)
        if z is None:
            return self.matmat(w)
        if not self._centred():
            return self.data.T @ z / self.scale
        return (self._transpose_product(z if z.ndim == 2 else z[:, None]) / self.scale).reshape(w.shape)

    def _gathered(self, w: np.ndarray, rows: np.ndarray) -> np.ndarray | None:
        """:math:`B_{:,I}W_I` from the data's columns ``rows`` (centred and scaled), or ``None`` when they are more
        than :data:`ROWS_GATHER_SHARE` of the variables of C-ordered data (:meth:`matmat_rows` then takes the whole
        product)."""
        if np.size(rows) > ROWS_GATHER_SHARE * self.p and not self.data.flags.f_contiguous:
            return None
        if not self._centred():
            return np.asarray(self.data[:, rows] @ w[rows])
        return np.asarray(self._centred_columns(rows) @ w[rows])

    def factor(self) -> GramFactor:
        r"""This covariance as :math:`Cw = B^\top(B_{:,S}w_S)/s` for :func:`~spcakit.numerics.operators.screen.screened_product`
        (kept)."""
        if "factor" not in self._kept:  # its bounds (the factor itself refers to this operator: not kept, no cycle)
            self._kept["factor"] = GramFactor.scales(self)
        return GramFactor(self, *self._kept["factor"])

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
            and array_eq(self.data, other.data)
            and optional_array_eq(self.mean, other.mean)
            and optional_array_eq(self.column_scale, other.column_scale)
        )

    __hash__ = None  # type: ignore[assignment]


class GramFactor(Factor):
    r""":class:`GramCovariance` as a :class:`~spcakit.numerics.operators.screen.Factor`: :math:`z = B_{:,S}w_S` and
    :math:`(Gz)_J = B_{:,J}^\top z/s` (the data's columns :math:`J`, centred and scaled), with
    :math:`g_j = \|B_{:,j}\|/s = \sqrt{C_{jj}/s}` and, for the rounding of the implicit centring
    :math:`D^{-1}(X^\top z - \mu\,\mathbf 1^\top z)/s`, :math:`\rho_j = (\|X_{:,j}\| + \sqrt n\,|\mu_j|)/(s d_j)`
    with :math:`\|X_{:,j}\|^2 = d_j^2 s C_{jj} + n\mu_j^2`."""

    def __init__(self, op: GramCovariance, bounds: np.ndarray, rounding: np.ndarray) -> None:
        self.op, self.n, self.bounds, self.rounding = op, op.n, bounds, rounding

    @staticmethod
    def scales(op: GramCovariance) -> tuple[np.ndarray, np.ndarray]:
        """:math:`g` and :math:`\rho` of ``op`` (see the class)."""
        diagonal = np.clip(op.diagonal(), 0.0, None)
        d = np.ones(op.p) if op.column_scale is None else np.asarray(op.column_scale, dtype=float)
        mu = np.zeros(op.p) if op.mean is None else np.abs(np.asarray(op.mean, dtype=float))
        raw = np.sqrt(d * d * op.scale * diagonal + op.n * mu * mu)
        return np.sqrt(diagonal / op.scale), (raw + np.sqrt(op.n) * mu) / (op.scale * d)

    def inner(self, w: np.ndarray, rows: np.ndarray) -> np.ndarray | None:
        return self.op._gathered(w, rows)

    def full(self, z: np.ndarray) -> np.ndarray:
        return self.op._transpose_product(z) / self.op.scale

    def outer(self, z: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return np.asarray(self.op._centred_columns(rows).T @ z) / self.op.scale

    def adjoint(self, w: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return np.asarray(self.op._centred_columns(rows) @ w[rows]) / self.op.scale
