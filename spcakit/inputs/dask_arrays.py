r"""Dask arrays and Zarr stores: data larger than one machine's memory.

A ``dask.array.Array`` :math:`X` (``n x p``) given to :func:`spcakit.fit`
(or a Zarr store given to the CLI's ``--data store.zarr``, opened with
:func:`open_zarr`) becomes a :class:`~spcakit.inputs.problem.Problem` by
:func:`dask_problem`. Every product with the data is a dask computation: on
the local threaded scheduler by default, on a ``dask.distributed`` cluster
when a ``distributed.Client`` is active (:func:`connected`, the CLI's
``--scheduler ADDRESS``). spcakit imports dask only here, and this module
only when it is given a dask array or a Zarr store: ``import spcakit`` never
imports dask, distributed or zarr (install them with
``pip install -e '.[dask]'``).

Tall data: one pass
-------------------
When :math:`n \ge p` and :math:`p \le`
:data:`~spcakit.inputs.dense.DENSE_COVARIANCE_LIMIT` (as for NumPy data), one
``dask.compute`` reads every block of rows once and returns, merged over the
blocks, the column extremes (finiteness, constant columns), the column means
and the centred Gram matrix, all in float64 (:func:`data_moments`). Each
block :math:`B_b` (:math:`n_b` rows) gives its count, mean :math:`m_b` and
centred Gram matrix :math:`M_b = (B_b - \mathbf 1 m_b^\top)^\top(B_b - \mathbf 1 m_b^\top)`;
two sets merge exactly (Chan, Golub and LeVeque's pairwise update) as

.. math::

    n = n_a + n_b, \quad \delta = m_b - m_a, \quad
    m = m_a + \delta\,\frac{n_b}{n}, \quad
    M = M_a + M_b + \delta\delta^\top\,\frac{n_a n_b}{n},

in a tree of merges, so that no difference of large sums is ever taken (the
rounding error is that of centring with the exact mean, not
:math:`\epsilon\,\|X^\top X\|`). The covariance :math:`M/(n-1)` (``p x p``)
is then an in-memory :class:`~spcakit.numerics.operators.DenseCovariance`: the method
runs in memory, the data are read exactly once. Values so large or so small
that their squares leave double precision (beyond :math:`10^{\pm 100}`)
take a second pass with each column divided by its largest magnitude, as
NumPy data are (see :mod:`spcakit.inputs.problem`).

Wide data: a distributed operator
---------------------------------
Otherwise the data are converted to float64 and persisted on the workers
(``persist``: held in the cluster's memory, read from the source once); the
column moments come from them (the same merges, without the Gram matrix),
and the covariance is a :class:`DaskCovariance`, whose products are dask
reductions with implicit centring and scaling.

What is refused, and what is not computed
-----------------------------------------
The same checks and messages as for NumPy data: a dask array that is not
2-D, is empty, holds complex numbers or values that are not numbers (text,
dates, objects); NaN or infinite entries (naming the first one and the
columns holding them: a second pass, on that error only); columns that are
all constant; data whose covariance over- or underflows double precision.
Constant columns among others are welcome, as for NumPy data: they get zero
loadings, the method runs on the other columns (the Gram matrix's rows and
columns of those, or the wide operator's columns of the persisted array,
lazily: nothing is read again; see
:func:`spcakit.inputs.problem.with_constant_columns`). As for
``scipy.sparse`` input, the problem holds no data matrix
(``problem.data`` is ``None``): the parts that would read the data use the
covariance instead (the encoders its square root, SPCA-SP's start its
leading eigenvectors, GPower's start its diagonal); cross-validation takes
rows of the dask array itself (:mod:`spcakit.workflows.cv.held_out`). The content hash
(:func:`spcakit.inputs.checks.content_sha256`) is *not* computed for dask input
(``input.sha256`` is ``None``): it is a sequential pass over all the data
in row order, which would cost about as much as the fit.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from spcakit.core.errors import InvalidDataError, InvalidParameterError, install_hint, listed
from spcakit.numerics.operators import (
    DENSE_EIGEN_LIMIT,
    DENSE_GRAM_LIMIT,
    DenseCovariance,
    ImplicitCentring,
    OperatorAccess,
    eigh_top,
    eigenpairs_through_small_gram,
    operator_lanczos,
)
from spcakit.inputs.checks import SQUARES_SAFE, check_double_range, check_names, refuse_zero_variance, centred_extremes
from spcakit.inputs.weights import check_weights, weighted_dask_rows, weights_summary
from spcakit.inputs.dense import DENSE_COVARIANCE_LIMIT
from spcakit.inputs.problem import Problem, with_constant_columns
from spcakit.inputs.columns import column_positions
from spcakit.inputs.clusters import (  # noqa: F401 - re-exported: connected is used from here
    COMPUTE_TIMEOUT, SCHEDULER_TIMEOUT, BoundedScheduler, ClusterError, connected, probe_scheduler, scheduler_address,
)  # fmt: skip
from spcakit.inputs.records import InputRecord

#: The optional extra that installs dask, distributed and zarr.
DASK_EXTRA = "dask"
#: Block results merged by one task of the tree of merges.
MERGE_WIDTH = 8
#: NumPy dtype kinds a dask array or Zarr store may hold: booleans, integers, floats.
NUMERIC_KINDS = "biuf"


# -- the optional libraries ---------------------------------------------------------------------------
def _missing_extra(what: str, exc: ImportError) -> InvalidParameterError:
    return InvalidParameterError(
        f"{what} needs dask, distributed and zarr, which are not installed ({exc}); install them with "
        f"{install_hint('dask distributed zarr', DASK_EXTRA)}"
    )


def import_dask_array(what: str) -> Any:
    """``dask.array``, or an :class:`~spcakit.core.errors.InvalidParameterError` naming the extra to install."""
    try:
        import dask.array  # noqa: PLC0415 - the optional extra, imported only for dask input
    except ImportError as exc:
        raise _missing_extra(what, exc) from None
    return dask.array


def is_dask_array(data: object) -> bool:
    """Whether ``data`` is a ``dask.array.Array``, without importing dask when nothing has (a dask array
    cannot exist before its module is imported)."""
    array = sys.modules.get("dask.array")
    return array is not None and isinstance(data, array.Array)


# -- checking the array --------------------------------------------------------------------------------
def check_dask_array(x: Any, what: str = "the data matrix") -> None:
    """Refuse a dask array that is not a 2-D, non-empty array of numbers (booleans, integers, floats)."""
    if x.ndim != 2:
        raise InvalidDataError(f"{what} must be a 2-D array (rows x columns); got {x.ndim} dimension(s) with shape {x.shape}")
    if any(isinstance(d, float) and math.isnan(d) for d in x.shape):
        raise InvalidDataError(
            f"{what} is a dask array of unknown shape {x.shape}; compute its chunk sizes first "
            "(x.compute_chunk_sizes())"
        )
    kind = np.dtype(x.dtype).kind
    if kind == "c":
        raise InvalidDataError(f"{what} is complex (dtype {x.dtype}); sparse PCA here needs real numbers")
    if kind not in NUMERIC_KINDS:
        raise InvalidDataError(
            f"{what} must hold numbers (booleans, integers or floats); got dtype {x.dtype}: convert it, e.g. "
            "x.astype(float), or select the numeric fields"
        )
    if min(x.shape) == 0:
        raise InvalidDataError(f"{what} is empty (shape {x.shape}); it needs at least one row and one column")


def open_zarr(path: str | Path, *, allow_missing_chunks: bool = False) -> Any:
    """The 2-D array of the Zarr store at ``path`` (a directory), as a dask array chunked as the store is.

    A missing path, a store that is a group, not an array, and an array that
    is not a 2-D array of numbers are refused with an
    :class:`~spcakit.core.errors.InvalidDataError` naming the store. So is a store
    that lacks chunk files (:func:`~spcakit.inputs.zarr_stores.check_chunks`), unless
    ``allow_missing_chunks``: then they read as the array's fill value, as
    Zarr itself reads them (a store written with ``write_empty_chunks=False``
    leaves out the chunks that equal it). A chunk that cannot be read or
    decoded (a damaged file) is an :class:`~spcakit.core.errors.InvalidDataError`
    naming the store and the chunk, raised by the computation that reads it
    (:class:`~spcakit.inputs.zarr_stores.ZarrChunks`).
    """
    path = Path(path)
    if not path.exists():
        raise InvalidDataError(f"{path}: no such Zarr store; give the folder of a Zarr array (written e.g. by zarr.open_array or dask.array.to_zarr)")
    da = import_dask_array(f"reading the Zarr store {path}")
    try:
        import zarr  # noqa: PLC0415 - installed with dask by the extra
    except ImportError as exc:
        raise _missing_extra(f"reading the Zarr store {path}", exc) from None
    try:
        node = zarr.open(store=str(path), mode="r")
    except Exception as exc:  # zarr raises several kinds for a folder that is not a store
        raise InvalidDataError(
            f"{path}: not a readable Zarr store ({type(exc).__name__}: {exc}); give the folder of a Zarr array "
            "(written e.g. by zarr.open_array or dask.array.to_zarr)"
        ) from None
    if isinstance(node, zarr.Group):
        names = sorted(node.array_keys())
        raise InvalidDataError(
            f"{path}: a Zarr group ({listed(names) or 'no arrays'}), not an array; give the folder of the array itself "
            "(e.g. group.zarr/name.zarr saved alone), or open it with dask.array.from_zarr(path, component=NAME) "
            "and pass that to spcakit.fit"
        )
    check_dask_array(node, f"{path}: the Zarr array")
    from dask.base import tokenize  # noqa: PLC0415

    from spcakit.inputs.zarr_stores import ZarrChunks, check_chunks  # noqa: PLC0415 - zarr only for Zarr stores

    if not allow_missing_chunks:
        check_chunks(node, path)
    reader = ZarrChunks(node, str(path))
    return da.from_array(reader, chunks=node.chunks, name="zarr-checked-" + tokenize(node, str(path)), fancy=False)



# -- one pass of moments ---------------------------------------------------------------------------------
@attrs.frozen(eq=False)
class Moments:
    r"""Column moments of a set of rows: what one block gives and what :func:`merge_moments` combines.

    Attributes
    ----------
    count
        Rows :math:`n_b`.
    mean
        Column means :math:`m_b` (of the columns divided by the pass's divisors).
    second
        The centred Gram matrix :math:`M_b` (``p x p``), or only its diagonal
        (the centred sums of squares) when the pass forms no Gram matrix.
    high, low
        Each column's largest and smallest value as given (NaN or infinite
        when the column holds one).
    """

    count: int
    mean: np.ndarray
    second: np.ndarray
    high: np.ndarray
    low: np.ndarray


def block_moments(block: np.ndarray, divisors: np.ndarray | None, gram: bool) -> Moments:
    """The :class:`Moments` of one block of rows, in float64 (columns divided by ``divisors`` unless ``None``)."""
    values = np.asarray(block, dtype=np.float64)
    owned = not np.may_share_memory(values, block)  # converted (float32, integers): centred in place
    with np.errstate(all="ignore"):
        high, low = values.max(axis=0), values.min(axis=0)
        if divisors is not None:
            values, owned = (np.divide(values, divisors, out=values), True) if owned else (values / divisors, True)
        mean = values.mean(axis=0)
        centred = np.subtract(values, mean, out=values) if owned else values - mean
        second = centred.T @ centred if gram else np.einsum("ij,ij->j", centred, centred)
    return Moments(values.shape[0], mean, second, high, low)


def merge_moments(*parts: Moments) -> Moments:
    r"""The :class:`Moments` of the union of disjoint sets of rows (see the module's description)."""
    total = parts[0]
    for part in parts[1:]:
        count = total.count + part.count
        with np.errstate(all="ignore"):
            delta = part.mean - total.mean
            mean = total.mean + delta * (part.count / count)
            weight = total.count * part.count / count
            correction = np.outer(delta, delta) if total.second.ndim == 2 else delta * delta
            second = total.second + part.second + correction * weight
        total = Moments(count, mean, second, np.maximum(total.high, part.high), np.minimum(total.low, part.low))
    return total


def join_columns(*parts: Moments) -> Moments:
    """The :class:`Moments` of blocks of columns over the same rows, side by side (no Gram matrix)."""
    return Moments(parts[0].count, *(np.concatenate([getattr(m, f) for m in parts]) for f in ("mean", "second", "high", "low")))


def _merge_tree(parts: list[Any]) -> Any:
    """One delayed :class:`Moments` from many, by a tree of :data:`MERGE_WIDTH`-way merges."""
    from dask import delayed  # noqa: PLC0415 - dask only for dask input

    while len(parts) > 1:
        parts = [delayed(merge_moments, pure=True)(*parts[i : i + MERGE_WIDTH]) for i in range(0, len(parts), MERGE_WIDTH)]
    return parts[0]


def data_moments(x: Any, divisors: np.ndarray | None = None, *, gram: bool) -> Moments:
    r"""The column :class:`Moments` of the dask array ``x`` in one ``dask.compute``: each block of rows read once.

    With ``gram`` the blocks are whole rows (the column chunks are merged)
    and the centred Gram matrix is formed (``p x p``); row chunks shorter
    than ``p`` rows are merged too, so that no block's Gram matrix is larger
    than the block. Without it the array's chunks are used as they are and
    only the centred sums of squares are kept.
    """
    import dask  # noqa: PLC0415 - dask only for dask input

    n, p = x.shape
    if gram:
        rows = x.chunks[0]
        x = x.rechunk({0: max(p, max(rows)) if min(rows) < p else rows, 1: -1})
    blocks = x.to_delayed()  # a grid: row blocks x column blocks
    columns = []
    for j in range(blocks.shape[1]):
        moments = [dask.delayed(block_moments, pure=True)(blocks[i, j], divisors if divisors is None else
                   divisors[sum(x.chunks[1][:j]) : sum(x.chunks[1][: j + 1])], gram) for i in range(blocks.shape[0])]  # fmt: skip
        columns.append(_merge_tree(moments))
    if len(columns) == 1:
        (merged,) = dask.compute(columns[0])
    else:
        merged = join_columns(*dask.compute(*columns))
    return merged  # type: ignore[no-any-return]


def _refuse_non_finite(x: Any, what: str, names: tuple[str, ...]) -> None:
    """Raise for NaN or infinite entries: their count, the first (in row order) and the columns holding them."""
    import dask  # noqa: PLC0415
    import dask.array as da  # noqa: PLC0415

    bad = ~da.isfinite(x)
    per_column, first_rows = dask.compute(bad.sum(axis=0), da.argmax(bad, axis=0))
    columns = np.nonzero(per_column)[0]
    col = int(columns[np.argmin(first_rows[columns])])
    row = int(first_rows[col])
    kind = "NaN" if np.isnan(float(x[row, col].compute())) else "infinite"
    count = int(per_column.sum())

    def column(j: int) -> str:
        return f"{j} ({names[j]!r})"

    by_column = listed(columns, lambda j: f"{column(j)}: {per_column[j]}")
    raise InvalidDataError(
        f"{what} has {count} NaN or infinite entr{'y' if count == 1 else 'ies'} (first: {kind} at row {row}, "
        f"column {column(col)}; by column: {by_column}); all entries must be finite numbers - drop or fill in "
        "the missing values"
        + ("" if kind != "NaN" else
           "; spcakit imputes NaN (missing='auto' or 'em', see docs/missing.md) only in data held in memory, not in "
           "a Dask array: compute it first (x.compute(), or x.map_blocks(scipy.sparse.csr_matrix).compute() for "
           "sparse chunks) if it fits in memory, or fill the NaN before")
    )


# -- the problem -------------------------------------------------------------------------------------------
def is_tall(n: int, p: int) -> bool:
    """Whether data of shape ``(n, p)`` get an in-memory covariance: :math:`n \\ge p` and :math:`p \\le`
    :data:`~spcakit.inputs.dense.DENSE_COVARIANCE_LIMIT`, the rule for NumPy data."""
    return n >= p and p <= DENSE_COVARIANCE_LIMIT


def dask_problem(
    x: Any,
    feature_names: Sequence[str] | None = None,
    *,
    center: bool = True,
    standardize: bool = False,
    source: str = "",
    columns: Sequence[str] | None = None,
    drop: Sequence[str] | None = None,
    weights: object = None,
) -> Problem:
    r"""Check a dask data matrix (``n`` samples x ``p`` variables) and wrap it as a :class:`~spcakit.inputs.problem.Problem`.

    The covariance is that of NumPy data (:func:`spcakit.inputs.dense.data_problem`):
    :math:`A^\top A/(n-1)` for the centred data :math:`A = X - \mathbf 1\mu^\top`
    (:math:`X^\top X/n` with ``center=False``), the correlation matrix with
    ``standardize=True``. Tall data (:func:`is_tall`) are read once and give
    an in-memory :class:`~spcakit.numerics.operators.DenseCovariance`; wide data are
    persisted on the workers and give a :class:`DaskCovariance` (see the
    module's description). ``columns``/``drop`` choose columns by name (the
    default names ``x1``, ``x2``, ... unless ``feature_names`` are given) before
    anything is read. The problem holds no data matrix (``problem.data`` is
    ``None``); its ``input`` record has the shape, the means and the
    standard deviations, and no content hash.

    ``weights`` are observation (frequency) weights, as for NumPy data
    (:func:`spcakit.inputs.dense.data_problem`): the problem is then that of
    the lazy weighted centred rows :math:`\operatorname{diag}(\sqrt w)(X - \mathbf 1\mu^\top)`
    with the weighted means :math:`\mu`, uncentred, divided by :math:`W - 1`
    (two more passes over the data, for the extremes and the weighted means);
    the record's ``weights`` has no hash, as the data have none.
    """
    what = "the data matrix"
    check_dask_array(x, what)
    n, p = (int(d) for d in x.shape)
    names = check_names(feature_names, p)
    if columns is not None or drop is not None:
        chosen = column_positions(names, columns, drop)
        if chosen != list(range(p)):
            x = x[:, chosen]
            names = tuple(names[j] for j in chosen)
            p = len(chosen)
    w = None if weights is None else check_weights(weights, n, center=center)
    if w is None and center and n < 2:
        raise InvalidDataError(f"{what} has {n} row; centring needs at least 2 samples (rows)")
    weighted_mean = None
    if w is not None:
        x, given_high, given_low, weighted_mean = weighted_dask_rows(x, w, center)
        if not (np.isfinite(given_high).all() and np.isfinite(given_low).all()):
            _refuse_non_finite(x, what, names)
    count = float(n) if w is None else float(w.sum())  # the observations the rows stand for
    tall = is_tall(int(count), p) if w is not None else is_tall(n, p)
    if not tall:
        x = x.astype(np.float64).persist()  # read from the source once; every product reads the workers' copy
    moments = data_moments(x, gram=tall)
    if not (np.isfinite(moments.high).all() and np.isfinite(moments.low).all()):
        _refuse_non_finite(x, what, names)
    magnitude = np.maximum(moments.high, -moments.low)
    safe = np.where(magnitude > 0, magnitude, 1.0)
    plain = SQUARES_SAFE[0] <= float(safe.min()) and float(magnitude.max()) <= SQUARES_SAFE[1]
    divisors = np.ones(p)
    if not plain and tall:  # extreme magnitudes: a second pass with every column scaled to at most 1
        divisors = safe
        moments = data_moments(x, divisors, gram=True)
    centred = center and w is None  # weighted rows are centred already: their plain Gram matrix is wanted
    with np.errstate(over="ignore", invalid="ignore"):
        mean = divisors * moments.mean if centred else None
        if centred:
            largest = centred_extremes(moments.high, moments.low, mean, magnitude)
            second = moments.second
        else:
            largest = magnitude
            scaled_mean = moments.mean
            second = moments.second + n * (np.outer(scaled_mean, scaled_mean) if tall else scaled_mean**2)
        sum_of_squares = np.diag(second).copy() if tall else second  # of the columns divided by the divisors
        norms = divisors * np.sqrt(sum_of_squares)
    high, low = moments.high, moments.low
    if w is not None:  # constant columns and the messages go by the data as given (the rows with positive weight)
        high, low = given_high, given_low
        magnitude = np.maximum(high, -low)
        with np.errstate(over="ignore", invalid="ignore"):
            largest = centred_extremes(high, low, weighted_mean, magnitude) if center else magnitude
    constant = np.nonzero(norms <= 1e-12 * magnitude * math.sqrt(count))[0]
    offset = refuse_zero_variance(constant, names, "column(s) are constant (zero variance)", high, low)
    if tall and constant.size:  # left out of the fit: their rounding noise must not overflow below
        second = second.copy()
        second[constant, :] = second[:, constant] = 0.0
    scale = count - 1.0 if center else count
    deviations = None
    if standardize:
        unit = np.sqrt(sum_of_squares / scale)  # the standard deviations of the columns divided by the divisors
        unit[constant] = 1.0  # their rows of the Gram matrix are zero
        with np.errstate(over="ignore"):
            deviations = divisors * unit
        deviations[constant] = 1.0  # divided by 1, not by zero: the column is left out of the fit
    if not (standardize and tall):  # a wide problem multiplies with the data as given: they must stay in range
        check_double_range(norms, largest, scale, names, constant)
    if tall:
        with np.errstate(over="ignore", invalid="ignore"):
            if standardize:
                matrix = second / np.outer(unit, unit) / scale
            else:
                matrix = second / scale if plain else second * np.outer(divisors, divisors) / scale
        covariance: Any = DenseCovariance((matrix + matrix.T) / 2)
    else:
        variances = sum_of_squares / scale
        covariance = DaskCovariance(x, mean, scale, deviations, variances / deviations**2 if standardize else variances)
    record = InputRecord(kind="data", shape=(n, p), sha256=None, center=center, standardize=standardize,
                         mean=mean if w is None else weighted_mean, scale=deviations,
                         weights=None if w is None else weights_summary(w, sha256=False))  # fmt: skip
    return with_constant_columns(Problem(covariance, names, None, source, record), constant, offset)


# -- the distributed operator ------------------------------------------------------------------------------
@attrs.frozen(eq=False)
class DaskCovariance(ImplicitCentring, OperatorAccess):
    r"""The covariance of a dask data matrix kept on the workers, centred and standardised implicitly.

    For :math:`X` (``n x p``, a persisted dask array of float64), column means
    :math:`\mu` (``mean``; none when ``None``), the divisor :math:`s`
    (``scale``) and column scales :math:`D = \operatorname{diag}(d)`
    (``column_scale``; the identity when ``None``),

    .. math::

        C = D^{-1}\,\frac{(X - \mathbf 1\mu^\top)^\top (X - \mathbf 1\mu^\top)}{s}\,D^{-1},

    applied as in :class:`~spcakit.numerics.operators.CenteredSparseGram`: for a block
    ``V`` (``p x k``), :math:`W = D^{-1}V`,

    .. math::

        Z = XW - \mathbf 1\,\mu^\top W, \qquad
        CV = D^{-1}\big(X^\top Z - \mu\,(\mathbf 1^\top Z)\big)/s,

    which equals :math:`X^\top(XW)/s - \mu(\mu^\top W)\,n/s` (scaled by
    :math:`D^{-1}`) without the difference of large sums: one ``dask.compute``
    of two chunked reductions (:math:`XW` row block by row block, then
    :math:`X^\top Z` summed over the row blocks), :math:`O(npk)` work spread
    over the workers, :math:`O((n + p)k)` numbers sent back. ``variances`` is
    the diagonal of :math:`C`, known from the moments.

    The leading eigenpairs come from the ``n x n`` Gram matrix of the centred
    scaled data when :math:`n \le` :data:`~spcakit.numerics.operators.DENSE_GRAM_LIMIT`
    (as :class:`~spcakit.numerics.operators.GramCovariance` does for NumPy data), else
    from ARPACK's Lanczos on the products, from a fixed start vector.
    """

    data: Any
    mean: np.ndarray | None
    scale: float
    column_scale: np.ndarray | None
    variances: np.ndarray
    _spectra: dict[Any, Any] = attrs.field(factory=dict, init=False, repr=False)

    def _product(self, v: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
        """:math:`CV` for ``V`` zero outside ``rows`` (all rows when ``None``), given its rows ``v`` there."""
        import dask  # noqa: PLC0415

        v = np.asarray(v, dtype=float)
        vector = v.ndim == 1
        w = v[:, None] if vector else v
        if self.column_scale is not None:
            w = w / (self.column_scale if rows is None else self.column_scale[rows])[:, None]
        x = self.data if rows is None else self.data[:, rows]
        z = x @ w
        if self.mean is not None:
            z = z - (self.mean if rows is None else self.mean[rows]) @ w
        y, total = dask.compute(self.data.T @ z, z.sum(axis=0))
        if self.mean is not None:
            y = y - np.outer(self.mean, total)
        y = y / self.scale
        if self.column_scale is not None:
            y = y / self.column_scale[:, None]
        return y[:, 0] if vector else y  # type: ignore[no-any-return]

    def matmat(self, v: np.ndarray) -> np.ndarray:
        return self._product(v, None)

    def matmat_rows(self, w: np.ndarray, rows: np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, dtype=int)
        return self._product(np.asarray(w)[rows], rows)

    def columns(self, index: np.ndarray) -> np.ndarray:
        index = np.asarray(index, dtype=int)
        return self._product(np.eye(index.size), index)

    def submatrix(self, index: np.ndarray) -> np.ndarray:
        r""":math:`C_{II}` from the columns :math:`X_{:,I}` alone (``n x |I|``, brought into memory)."""
        index = np.asarray(index, dtype=int)
        picked = np.asarray(self.data[:, index].compute(), dtype=float)
        if self.mean is not None:
            picked = picked - self.mean[index]
        if self.column_scale is not None:
            picked = picked / self.column_scale[index]
        sub = picked.T @ picked / self.scale
        return (sub + sub.T) / 2

    def restrict(self, index: np.ndarray) -> DaskCovariance:
        """The covariance of the variables ``index`` alone: those columns of the data (lazily: nothing is
        read), with their means, scales and variances."""
        index = np.asarray(index, dtype=int)
        return DaskCovariance(
            self.data[:, index], None if self.mean is None else self.mean[index], self.scale,
            None if self.column_scale is None else self.column_scale[index], self.variances[index],
        )  # fmt: skip

    def diagonal(self) -> np.ndarray:
        return self.variances.copy()

    def trace(self) -> float:
        return float(self.variances.sum())

    def _centred(self) -> Any:
        """The centred, scaled data :math:`(X - \\mathbf 1\\mu^\\top)D^{-1}` as a lazy dask array."""
        x = self.data
        if self.mean is not None:
            x = x - self.mean
        return x if self.column_scale is None else x / self.column_scale

    def _gram_pairs(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        """Eigenpairs from the ``n x n`` Gram matrix :math:`ZZ^\\top` mapped back by :math:`Z^\\top`."""
        z = self._centred()
        values, vectors = eigenpairs_through_small_gram(
            np.asarray((z @ z.T).compute()), lambda u: np.asarray((z.T @ u).compute()), r
        )
        return values / self.scale, vectors

    def _lanczos(self, r: int, vectors: bool) -> Any:
        return operator_lanczos(self.matmat, self.p, r, vectors=vectors)

    def direct_spectrum(self, r: int) -> bool:
        """The ``n x n`` Gram matrix by LAPACK for few wide rows, the densified covariance up to
        :data:`~spcakit.numerics.operators.DENSE_EIGEN_LIMIT` variables; Lanczos otherwise."""
        return (self.n <= DENSE_GRAM_LIMIT and self.n < self.p) or self.p <= DENSE_EIGEN_LIMIT or r >= self.p - 1

    def top_eigenpairs(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``r`` leading eigenpairs (kept per ``r``; copies are returned)."""
        key = ("pairs", r)
        if key not in self._spectra:
            if not self.direct_spectrum(r):
                self._spectra[key] = self._lanczos(r, vectors=True)
            elif self.n <= DENSE_GRAM_LIMIT and self.n < self.p:
                self._spectra[key] = self._gram_pairs(r)
            else:
                dense = self.matmat(np.eye(self.p))
                self._spectra[key] = eigh_top((dense + dense.T) / 2, r)
        values, vectors = self._spectra[key]
        return values.copy(), vectors.copy()

    def top_eigenvalues(self, r: int) -> np.ndarray:
        r = min(r, self.p)
        if ("pairs", r) not in self._spectra and self.n > DENSE_GRAM_LIMIT and self.p > DENSE_EIGEN_LIMIT and r < self.p - 1:
            key = ("values", r)
            if key not in self._spectra:
                self._spectra[key] = self._lanczos(r, vectors=False)
            return np.clip(np.asarray(self._spectra[key], dtype=float), 0.0, None)
        return np.clip(self.top_eigenpairs(r)[0], 0.0, None)


__all__ = [
    "COMPUTE_TIMEOUT",
    "DASK_EXTRA",
    "SCHEDULER_TIMEOUT",
    "BoundedScheduler",
    "ClusterError",
    "DaskCovariance",
    "Moments",
    "block_moments",
    "check_dask_array",
    "connected",
    "dask_problem",
    "data_moments",
    "import_dask_array",
    "is_dask_array",
    "is_tall",
    "join_columns",
    "merge_moments",
    "open_zarr",
    "probe_scheduler",
    "scheduler_address",
]
