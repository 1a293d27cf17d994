r"""``scipy.sparse`` data matrices: checked, hashed and centred without ever being densified.

A sparse data matrix :math:`X` (``n x p``: CSR, CSC, COO or any other
``scipy.sparse`` format, as a ``*_matrix`` or a ``*_array``) given to
:func:`spcakit.fit`, :class:`spcakit.SparsePCA` or the CLI (a ``.npz`` file
written by :func:`scipy.sparse.save_npz`, a Matrix Market ``.mtx`` file)
becomes a :class:`~spcakit.inputs.problem.Problem` whose covariance is the
:class:`~spcakit.numerics.operators.CenteredSparseGram` of :math:`X`: the centring
(:math:`\mu`, the column means) and the standardisation (:math:`D`, the
column standard deviations) are applied inside its products, so :math:`X`
stays sparse and nothing ``n x p`` is ever allocated. When :math:`p^2` is at
most the stored entries (many rows, a few thousand columns or fewer:
single-cell matrices), the ``p x p`` covariance is formed instead, a block of
rows at a time (:func:`~spcakit.numerics.operators.explicit_covariance`, :func:`~spcakit.numerics.operators.sparse_gram`),
as for dense data with :math:`n \ge p`: it takes no more memory than the data,
and every later product costs :math:`p^2` instead of the stored entries.

Memory
------
:math:`X` is held once, as a canonical CSR array of float64
(:func:`canonical_csr`: sorted column indices, duplicates summed, explicit
zeros dropped). A float64 CSR array already in that form is used as it is
(no copy); anything else - CSC, COO, integers, ``float32``, unsorted
indices - is converted once, a copy of the stored entries only
(``12 nnz + 4 n`` bytes with 32-bit indices). The checks below walk the
stored entries in blocks of :data:`~spcakit.numerics.operators.SPARSE_BLOCK_ENTRIES`,
so their temporaries are a few MiB plus a few vectors of length ``p``.

Checks
------
As for dense data (see :mod:`spcakit.inputs.problem`): every stored value must be
finite (NaN and infinities are refused, naming their columns), centring needs
at least 2 rows, and data whose covariance would over- or underflow double
precision are refused. Constant columns (zero variance - among them the
columns with no stored entry, such as genes never counted) are welcome: they
get zero loadings and are named in a warning, the method runs on the other
columns (a copy of their stored entries;
:func:`spcakit.inputs.problem.with_constant_columns`), and with ``standardize=True``
they are divided by 1; data whose columns are all constant are refused.
Unlike dense data, whose columns ``standardize=True`` rescales before
anything is squared, sparse data are never rescaled, so these range checks
apply with ``standardize`` too: values beyond about :math:`10^{150}` (or standard deviations below
about :math:`10^{-154}`) are refused either way; rescale by a power of 10.

A covariance given as a sparse matrix is refused (covariance matrices are
dense: pass ``.toarray()``).

Content hash
------------
:func:`sparse_content_sha256` identifies the numbers of a sparse matrix,
whatever its format: the same matrix as CSR, CSC or COO (with duplicates,
unsorted, with explicit zeros) hashes alike. It differs from
:func:`spcakit.inputs.checks.content_sha256` of the same matrix made dense, which
would take hashing ``n x p`` doubles.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import scipy.sparse as sp

from spcakit.core.errors import InvalidDataError, MissingValuesError, format_size, listed
from spcakit.numerics.operators import (
    SPARSE_BLOCK_ENTRIES,
    CenteredSparseGram,
    CovarianceOperator,
    DenseCovariance,
    canonical_csr,
    centred_submatrix,
    explicit_covariance,
    sparse_gram,
    stored_per_column,
)
from spcakit.inputs.checks import SQUARES_SAFE, check_double_range, check_names, refuse_zero_variance, centred_extremes
from spcakit.inputs.weights import check_weights, weights_summary
from spcakit.numerics.operators.base import optional_array_eq
from spcakit.inputs.problem import Problem, with_constant_columns
from spcakit.inputs.columns import column_positions
from spcakit.inputs.missing import MissingData, refuse_infinite
from spcakit.inputs.limits import check_declared_size
from spcakit.inputs.records import InputRecord

#: The scipy.sparse formats a ``.npz`` archive may hold (those :func:`scipy.sparse.save_npz` writes).
NPZ_FORMATS = ("csr", "csc", "coo", "bsr", "dia")
#: The members that mark a ``.npz`` archive as written by :func:`scipy.sparse.save_npz`.
NPZ_SIGNATURE = frozenset({"format", "shape", "data"})


# -- the canonical form ------------------------------------------------------------------------------------


def sparse_content_sha256(matrix: Any) -> str:
    r"""The SHA-256 (hex) of a sparse matrix's shape and entries, whatever its format.

    The digest covers the ASCII bytes ``csr``, the shape as two little-endian
    unsigned 64-bit integers, then the canonical CSR form
    (:func:`canonical_csr`: indices sorted within each row, duplicates summed,
    explicit zeros dropped): the row pointers and the column indices as
    little-endian signed 64-bit integers, the stored values as little-endian
    float64. For a canonical CSR array ``x`` it equals ::

        h = hashlib.sha256(b"csr")
        h.update(np.array(x.shape, dtype="<u8").tobytes())
        for part, dtype in ((x.indptr, "<i8"), (x.indices, "<i8"), (x.data, "<f8")):
            h.update(part.astype(dtype).tobytes())
        h.hexdigest()

    So a matrix hashes alike as CSR, CSC or COO, with 32- or 64-bit indices,
    stored as float32 or float64 values of the same numbers; it does *not*
    equal :func:`spcakit.inputs.checks.content_sha256` of the dense matrix (that
    would take hashing ``n x p`` numbers). One pass over the stored entries,
    converted a block at a time.
    """
    x = canonical_csr(matrix)
    digest = hashlib.sha256(b"csr")
    digest.update(np.asarray(x.shape, dtype="<u8").tobytes())
    for part, dtype in ((x.indptr, "<i8"), (x.indices, "<i8"), (x.data, "<f8")):
        for start in range(0, part.size, SPARSE_BLOCK_ENTRIES):
            digest.update(np.ascontiguousarray(part[start : start + SPARSE_BLOCK_ENTRIES], dtype=dtype))
    return digest.hexdigest()


# -- the checks --------------------------------------------------------------------------------------------
def _blocks(x: Any) -> Any:
    """``(columns, values, start)`` of the stored entries of the CSR ``x``, a block at a time."""
    for start in range(0, x.data.size, SPARSE_BLOCK_ENTRIES):
        stop = start + SPARSE_BLOCK_ENTRIES
        yield x.indices[start:stop], x.data[start:stop], start


def _refuse_non_finite(x: Any, what: str, names: tuple[str, ...]) -> None:
    """Raise when a stored value is NaN or infinite, naming the first one and the columns that hold them."""
    bad = ~np.isfinite(x.data)
    count = int(bad.sum())
    first = int(np.argmax(bad))
    row = int(np.searchsorted(x.indptr, first, side="right")) - 1
    col = int(x.indices[first])
    per_column = np.bincount(x.indices[bad], minlength=x.shape[1])
    columns = np.nonzero(per_column)[0]

    def column(j: int) -> str:
        return f"{j} ({names[j]!r})"

    kind = "NaN" if np.isnan(x.data[first]) else "infinite"
    by_column = listed(columns, lambda j: f"{column(j)}: {per_column[j]}")
    error = MissingValuesError if bool(np.isnan(x.data[bad]).all()) else InvalidDataError  # NaN only: imputable
    raise error(
        f"{what} (scipy.sparse) has {count} NaN or infinite stored entr{'y' if count == 1 else 'ies'} "
        f"(first: {kind} at row {row}, column {column(col)}; by column: {by_column}); all entries must be "
        "finite numbers - drop or fill in the missing values"
    )


def _column_statistics(x: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, bool]:
    """Per column: stored entries, sum, largest and smallest value (the implicit zeros counted); and whether
    every stored value is finite. One pass over the stored entries."""
    n, p = x.shape
    stored = stored_per_column(x)
    sums, high, low = np.zeros(p), np.full(p, -np.inf), np.full(p, np.inf)
    finite = True
    with np.errstate(over="ignore", invalid="ignore"):
        for columns, values, _ in _blocks(x):
            finite = finite and bool(np.isfinite(values).all())
            sums += np.bincount(columns, weights=values, minlength=p)
            np.maximum.at(high, columns, values)
            np.minimum.at(low, columns, values)
    implicit = stored < n  # the column holds zeros that are not stored
    high[implicit] = np.maximum(high[implicit], 0.0)
    low[implicit] = np.minimum(low[implicit], 0.0)
    return stored, sums, high, low, finite


def _column_means(x: Any, sums: np.ndarray, magnitude: np.ndarray) -> np.ndarray:
    """Column means that cannot overflow: a column whose plain sum overflows is summed scaled to at most 1."""
    n, p = x.shape
    mean = sums / n
    overflowed = ~np.isfinite(mean)
    if overflowed.any():
        safe = np.where(magnitude > 0, magnitude, 1.0)
        scaled = np.zeros(p)
        for columns, values, _ in _blocks(x):
            scaled += np.bincount(columns, weights=values / safe[columns], minlength=p)
        mean[overflowed] = safe[overflowed] * (scaled[overflowed] / n)
    return mean


def centred_sum_of_squares(x: Any, mean: np.ndarray | None, stored: np.ndarray, divisors: np.ndarray | None) -> np.ndarray:
    r""":math:`\sum_i ((x_{ij} - \mu_j)/d_j)^2` per column, over the stored entries plus the
    :math:`n - \mathrm{nnz}_j` implicit zeros (:math:`\mu_j^2/d_j^2` each); no division when ``divisors``
    is ``None``."""
    n, p = x.shape
    total = np.zeros(p)
    for columns, values, _ in _blocks(x):
        deviations = values if mean is None else values - mean[columns]
        if divisors is not None:
            deviations = deviations / divisors[columns]
        total += np.bincount(columns, weights=deviations * deviations, minlength=p)
    if mean is not None:
        zero = mean if divisors is None else mean / divisors
        total += (n - stored) * zero * zero
    return total


def _entry_rows(x: Any) -> np.ndarray:
    """The row of each stored entry of the CSR ``x`` (``8 nnz`` bytes)."""
    return np.repeat(np.arange(x.shape[0]), np.diff(x.indptr))


@attrs.frozen(eq=False)
class WeightedSparseGram(CenteredSparseGram):
    r"""The weighted covariance of a ``scipy.sparse`` data matrix, centred and standardised implicitly:

    .. math::

        C = D^{-1}\,\frac{(X - \mathbf 1\mu^\top)^\top \Omega\,(X - \mathbf 1\mu^\top)}{s}\,D^{-1},
        \qquad \Omega = \operatorname{diag}(w),

    with the observation weights ``row_weights`` :math:`w`, the weighted means :math:`\mu` and
    :math:`s = \sum_i w_i - 1` (:func:`sparse_problem` with ``weights``). Products are those of
    :class:`~spcakit.numerics.operators.CenteredSparseGram` with the centred products :math:`z` multiplied by
    :math:`w` before :math:`X^\top z`; :math:`X` stays sparse.
    """

    row_weights: np.ndarray = attrs.field(kw_only=True)

    def matmat(self, v: np.ndarray) -> np.ndarray:
        v = np.asarray(v, dtype=float)
        u = self._unscale(v)
        z = np.asarray(self.data @ u)
        if self.mean is not None:
            z -= self.mean @ u
        z *= self.row_weights if z.ndim == 1 else self.row_weights[:, None]
        y = np.asarray(self.data.T @ z)
        return self._finish_product(y, None if self.mean is None else z.sum(axis=0))

    def diagonal(self) -> np.ndarray:
        x, p = self.data, self.p
        weights = self.row_weights[_entry_rows(x)]
        deviations = x.data if self.mean is None else x.data - self.mean[x.indices]
        squares = np.bincount(x.indices, weights=weights * deviations * deviations, minlength=p)
        if self.mean is not None:  # the implicit zeros, centred, with the weights of their rows
            unstored = float(self.row_weights.sum()) - np.bincount(x.indices, weights=weights, minlength=p)
            squares += np.maximum(unstored, 0.0) * self.mean**2
        diagonal = squares / self.scale
        return diagonal if self.column_scale is None else diagonal / self.column_scale**2

    def _small_covariance(self) -> np.ndarray:
        gram = np.asarray((self.data.T @ (sp.diags(self.row_weights) @ self.data)).toarray())
        if self.mean is not None:
            gram -= float(self.row_weights.sum()) * np.outer(self.mean, self.mean)
        gram /= self.scale
        if self.column_scale is not None:
            gram /= np.outer(self.column_scale, self.column_scale)
        return (gram + gram.T) / 2

    def submatrix(self, index: np.ndarray) -> np.ndarray:
        return centred_submatrix(self.data, index, self.mean, self.scale, self.column_scale, self.row_weights)

    def restrict(self, index: np.ndarray) -> WeightedSparseGram:
        index = np.asarray(index, dtype=int)
        return WeightedSparseGram(
            self.data[:, index], None if self.mean is None else self.mean[index], self.scale,
            None if self.column_scale is None else self.column_scale[index], row_weights=self.row_weights,
        )  # fmt: skip

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, WeightedSparseGram) and CenteredSparseGram.__eq__(self, other)
                and optional_array_eq(self.row_weights, other.row_weights))  # fmt: skip

    __hash__ = None  # type: ignore[assignment]


def _weighted_statistics(
    x: Any, w: np.ndarray, center: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, Callable[[np.ndarray | None, np.ndarray | None], np.ndarray]]:
    r"""With observation weights ``w``: the extremes of the rows with positive weight (implicit zeros
    included), the weighted means (``center``), and a function giving the weighted centred sums of squares
    :math:`\sum_i w_i ((x_{ij} - \mu_j)/d_j)^2` for a mean and divisors."""
    n, p = x.shape
    rows = _entry_rows(x)
    weights = w[rows]
    kept = weights > 0
    high, low = np.full(p, -np.inf), np.full(p, np.inf)
    np.maximum.at(high, x.indices[kept], x.data[kept])
    np.minimum.at(low, x.indices[kept], x.data[kept])
    positive = int(np.count_nonzero(w > 0))
    implicit = np.bincount(x.indices[kept], minlength=p) < positive  # a row with positive weight lacks an entry
    high[implicit] = np.maximum(high[implicit], 0.0)
    low[implicit] = np.minimum(low[implicit], 0.0)
    total = float(w.sum())
    stored_weight = np.bincount(x.indices, weights=weights, minlength=p)
    mean = None
    if center:
        safe = np.where(np.maximum(high, -low) > 0, np.maximum(high, -low), 1.0)
        mean = safe * (np.bincount(x.indices, weights=weights * (x.data / safe[x.indices]), minlength=p) / total)

    def squares(mean: np.ndarray | None, divisors: np.ndarray | None) -> np.ndarray:
        deviations = x.data if mean is None else x.data - mean[x.indices]
        if divisors is not None:
            deviations = deviations / divisors[x.indices]
        result = np.bincount(x.indices, weights=weights * deviations * deviations, minlength=p)
        if mean is not None:
            zero = mean if divisors is None else mean / divisors
            result += np.maximum(total - stored_weight, 0.0) * zero * zero
        return result

    return high, low, mean, squares


def sparse_problem(
    matrix: Any,
    feature_names: Sequence[str] | None = None,
    *,
    center: bool = True,
    standardize: bool = False,
    source: str = "",
    columns: Sequence[str] | None = None,
    drop: Sequence[str] | None = None,
    weights: object = None,
) -> Problem:
    r"""Check a ``scipy.sparse`` data matrix (``n`` samples x ``p`` variables) and wrap it, never densified.

    The covariance is :math:`(X - \mathbf 1\mu^\top)^\top (X - \mathbf 1\mu^\top)/(n-1)`
    (:math:`X^\top X/n` with ``center=False``) applied matrix-free by
    :class:`~spcakit.numerics.operators.CenteredSparseGram`, or formed when
    :func:`~spcakit.numerics.operators.explicit_covariance` says so; with ``standardize=True``
    it is divided on both sides by the columns' standard deviations
    :math:`s_j` (the correlation matrix), as for dense data
    (:func:`spcakit.inputs.dense.data_problem`). ``columns``/``drop`` choose columns
    by name (the default names ``x1``, ``x2``, ... unless ``feature_names``
    are given). The problem holds no dense data (``problem.data`` is
    ``None``); its ``input`` record has the shape, the hash
    (:func:`sparse_content_sha256`), the means and the :math:`s_j`. See the
    module's description for the memory taken and the checks made.

    ``weights`` are observation (frequency) weights, as for dense data
    (:func:`spcakit.inputs.dense.data_problem`): the weighted means, the
    covariance :math:`\sum_i w_i (x_i - \mu)(x_i - \mu)^\top/(W - 1)` applied by
    :class:`WeightedSparseGram` (or formed, as without weights), the weighted standard deviations; still never
    densified (the row of each stored entry is kept while the statistics are
    taken: ``8 nnz`` more bytes).
    """
    what = "the data matrix"
    shape = tuple(int(d) for d in getattr(matrix, "shape", ()))
    if len(shape) == 2:  # before the canonical copy: its row pointers alone take 8 (n + 1) bytes
        check_declared_size("the data matrix", *shape, stored=int(matrix.nnz), advice="pass fewer rows or columns", verb="is")
    x = canonical_csr(matrix, what)
    n, p = x.shape
    if n == 0 or p == 0:
        raise InvalidDataError(f"{what} is empty (shape {x.shape}); it needs at least one row and one column")
    names = check_names(feature_names, p)
    if columns is not None or drop is not None:
        chosen = column_positions(names, columns, drop)
        if chosen != list(range(p)):
            x = canonical_csr(x[:, chosen], what, owned=True)
            names = tuple(names[j] for j in chosen)
            p = len(chosen)
    stored, sums, high, low, finite = _column_statistics(x)
    if not finite:
        _refuse_non_finite(x, what, names)
    w = None if weights is None else check_weights(weights, n, center=center)
    if w is None and center and n < 2:
        raise InvalidDataError(f"{what} has {n} row; centring needs at least 2 samples (rows)")
    if w is None:
        magnitude = np.maximum(high, -low)  # each column's largest magnitude as given
        mean = _column_means(x, sums, magnitude) if center else None

        def sum_of_squares(mean: np.ndarray | None, divisors: np.ndarray | None) -> np.ndarray:
            return centred_sum_of_squares(x, mean, stored, divisors)
    else:
        high, low, mean, sum_of_squares = _weighted_statistics(x, w, center)
        magnitude = np.maximum(high, -low)
    count = float(n) if w is None else float(w.sum())  # the observations the rows stand for
    largest = centred_extremes(high, low, mean, magnitude) if mean is not None else magnitude
    safe = np.where(largest > 0, largest, 1.0)
    if SQUARES_SAFE[0] <= float(safe.min()) and float(largest.max()) <= SQUARES_SAFE[1]:
        norms = np.sqrt(sum_of_squares(mean, None))
    else:  # extreme magnitudes: each column scaled to at most 1 before squaring
        with np.errstate(over="ignore"):
            norms = largest * np.sqrt(sum_of_squares(mean, safe))
    constant = np.nonzero(norms <= 1e-12 * magnitude * math.sqrt(count))[0]
    offset = refuse_zero_variance(constant, names, "column(s) are constant (zero variance)", high, low)
    scale = count - 1.0 if center else count
    # the stored values are used as they are, standardised or not
    check_double_range(norms, largest, scale, names, constant)
    deviations = None
    if standardize:
        deviations = norms / math.sqrt(scale)
        deviations[constant] = 1.0  # divided by 1, not by zero: the column is left out of the fit
    covariance: CovarianceOperator
    if explicit_covariance(x):
        gram = sparse_gram(x, mean, row_weights=w)
        gram /= scale
        if deviations is not None:
            gram /= np.outer(deviations, deviations)
        gram[constant, :] = gram[:, constant] = 0.0  # rounding noise only: left out of the fit
        covariance = DenseCovariance(gram)
    elif w is None:
        covariance = CenteredSparseGram(x, mean, scale, deviations)
    else:
        covariance = WeightedSparseGram(x, mean, scale, deviations, row_weights=w)
    sha256 = sparse_content_sha256(x)
    record = InputRecord(kind="data", shape=(n, p), sha256=sha256, center=center,
                         standardize=standardize, mean=mean, scale=deviations,
                         weights=None if w is None else weights_summary(w, sha256=sha256 is not None))  # fmt: skip
    return with_constant_columns(Problem(covariance, names, None, source, record), constant, offset)


def sparse_missing(
    matrix: Any, names: Sequence[str] | None, columns: Sequence[str] | None = None, drop: Sequence[str] | None = None
) -> MissingData:
    """A ``scipy.sparse`` data matrix whose *stored* NaN are missing values (its implicit zeros are observed) as
    :class:`~spcakit.inputs.missing.MissingData`: a canonical float64 CSR copy, never densified, whose missing
    entries stay stored entries for :mod:`spcakit.workflows.imputation` to overwrite; columns chosen as
    :func:`sparse_problem` chooses them. Infinite entries are refused."""
    x = canonical_csr(matrix, "the data matrix")
    chosen_names = check_names(names, x.shape[1])
    if columns is not None or drop is not None:
        chosen = column_positions(chosen_names, columns, drop)
        x = x[:, chosen]
        chosen_names = tuple(chosen_names[j] for j in chosen)
    x = canonical_csr(x.copy(), "the data matrix", owned=True)  # ours to overwrite; NaN are stored, never dropped
    refuse_infinite(x.data)
    positions = np.flatnonzero(np.isnan(x.data))
    rows = np.searchsorted(x.indptr, positions, side="right") - 1
    return MissingData(matrix=x, names=chosen_names, rows=rows.astype(np.int64), cols=x.indices[positions].astype(np.int64),
                       positions=positions, sha256=sparse_content_sha256(x))  # fmt: skip


# -- files ---------------------------------------------------------------------------------------------
def sparse_from_npz(read: Callable[[str], np.ndarray], keys: Collection[str], path: Path) -> Any:
    """The sparse matrix of a ``.npz`` archive written by :func:`scipy.sparse.save_npz`.

    ``read(key)`` returns a member (checked against its declared size, never
    unpickled: :mod:`spcakit.inputs.numpy_files`), ``keys`` are the members. The
    index arrays are checked in full (bounds, order) before the matrix is
    used, so a damaged file is refused with
    :class:`~spcakit.core.errors.InvalidDataError` rather than read out of bounds.
    """
    label = read("format")
    if label.ndim != 0 or label.dtype.kind not in "SU":
        raise InvalidDataError(
            f"{path}: holds arrays 'format', 'shape' and 'data' as scipy.sparse.save_npz writes them, but 'format' "
            f"is not a format name (a {label.dtype} array of shape {label.shape}); for dense data name the matrix "
            "X (numpy.savez(path, X=matrix))"
        )
    fmt = label.item().decode("ascii", "replace") if label.dtype.kind == "S" else str(label.item())
    if fmt not in NPZ_FORMATS:
        raise InvalidDataError(
            f"{path}: a scipy.sparse archive of format {fmt!r}, which is not one of {', '.join(NPZ_FORMATS)}; "
            "save it with scipy.sparse.save_npz(path, matrix.tocsr())"
        )
    shape = read("shape")
    if shape.shape != (2,) or shape.dtype.kind not in "iu" or int(shape.min()) < 0:
        raise InvalidDataError(f"{path}: the scipy.sparse archive's 'shape' must be two non-negative integers; got {shape.tolist()!r}")
    dims = (int(shape[0]), int(shape[1]))
    data = read("data")  # its size is backed by the file (numpy_files checks each member against its header)
    check_declared_size(f"{path}: its 'shape'", *dims, stored=int(data.size))
    try:
        if fmt in ("csr", "csc", "bsr"):
            missing = {"indices", "indptr"} - set(keys)
            if missing:
                raise InvalidDataError(f"{path}: the {fmt} archive lacks {', '.join(sorted(missing))}; it is damaged")
            matrix = getattr(sp, f"{fmt}_array")((data, read("indices"), read("indptr")), shape=dims)
            matrix.check_format(full_check=True)
        elif fmt == "coo":
            if "coords" in keys:
                coords = read("coords")
                if coords.ndim != 2 or coords.shape[0] != 2:
                    raise InvalidDataError(f"{path}: the coo archive's 'coords' must be 2 rows of indices; got shape {coords.shape}")
                rows, cols = coords[0], coords[1]
            elif {"row", "col"} <= set(keys):
                rows, cols = read("row"), read("col")
            else:
                raise InvalidDataError(f"{path}: the coo archive has no 'row' and 'col' (or 'coords'); it is damaged")
            matrix = sp.coo_array((data, (rows, cols)), shape=dims)
        else:
            if "offsets" not in keys:
                raise InvalidDataError(f"{path}: the dia archive lacks 'offsets'; it is damaged")
            matrix = sp.dia_array((data, read("offsets")), shape=dims)
    except (ValueError, TypeError, IndexError, OverflowError) as exc:
        if isinstance(exc, InvalidDataError):
            raise
        raise InvalidDataError(f"{path}: a damaged scipy.sparse {fmt} archive ({exc})") from None
    return matrix


#: Fewest bytes a Matrix Market entry takes: ``"1 1\n"`` (pattern), ``"1 1 0\n"``, and a dense entry ``"0\n"``.
_MTX_ENTRY_BYTES = {"pattern": 4, "coordinate": 6, "array": 2}


def load_mtx(path: Path) -> Any:
    """A Matrix Market file (``.mtx``) as a sparse matrix (``coordinate``) or an array (``array``).

    The header is read first: a file too short for the entries it declares is
    refused before anything is allocated, as are complex values.
    """
    import scipy.io  # noqa: PLC0415 - only for .mtx files

    try:
        rows, cols, entries, layout, field, symmetry = scipy.io.mminfo(str(path))
    except (ValueError, IndexError, UnicodeDecodeError) as exc:
        raise InvalidDataError(
            f"{path}: not a Matrix Market file ({exc}); it must start with a line '%%MatrixMarket matrix "
            "coordinate real general' (or integer/pattern, symmetric) and a size line 'rows columns entries'"
        ) from None
    if field == "complex":
        raise InvalidDataError(f"{path}: holds complex numbers; sparse PCA here needs real numbers")
    minimum = _MTX_ENTRY_BYTES["pattern" if field == "pattern" else layout if layout == "array" else "coordinate"]
    size = path.stat().st_size
    if int(entries) * minimum > size:
        raise InvalidDataError(
            f"{path}: is cut short: its header declares a {rows} x {cols} matrix with {int(entries):,} entries, which "
            f"take at least {format_size(int(entries) * minimum)}, but the file has {format_size(size)}; the file is "
            "truncated or damaged"
        )
    stored = None if layout == "array" else int(entries) * (1 if symmetry == "general" else 2)
    check_declared_size(f"{path}: its size line", int(rows), int(cols), stored=stored)
    try:
        return scipy.io.mmread(str(path), spmatrix=False)
    except (ValueError, IndexError, OverflowError, UnicodeDecodeError) as exc:
        raise InvalidDataError(f"{path}: a damaged Matrix Market file ({exc})") from None
