r"""The checks every kind of input shares: numbers only, finite, in double precision's range, named.

Arrays (or nested lists) of floats, integers or booleans and pandas DataFrames whose columns are all
numeric or boolean are numbers (:func:`numeric_array`); everything else is refused with a message
saying what to do instead. :func:`finite_matrix` names the column of a NaN or infinite entry;
:func:`check_double_range` refuses data whose covariance would over- or underflow; :func:`content_sha256`
is what a result's ``input.sha256`` records. The module description of :mod:`spcakit.inputs` says
what counts as numbers and why the range limits are what they are.
"""

from __future__ import annotations

import hashlib
import math
import sys
import warnings
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np

from spcakit.numerics import index_sets
from spcakit.core.errors import ConstantColumnWarning, InvalidDataError, MissingValuesError, format_size, listed
from spcakit.inputs.limits import MAX_VARIABLES
from spcakit.inputs.names import unique_names
from spcakit.inputs.problem import default_feature_names, zero_variance_text

#: Largest sum of squares of the centred data (and p times the largest entry of a covariance): the
#: largest double with 16 bits of headroom for the sums the parts form.
GRAM_LIMIT = float(np.finfo(float).max) * 2.0**-16


TINY = float(np.finfo(float).tiny)


#: Bytes of a block of rows: the data are hashed, and measured column by column, this much at a time, so
#: that no temporary the size of the data is made.
BLOCK_BYTES = 1 << 22


_KIND_WORDS = {
    "U": ("text", "convert numbers stored as text with numpy.asarray(x, dtype=float)"),
    "S": ("bytes", "convert numbers stored as text with numpy.asarray(x, dtype=float)"),
    "M": ("dates or times", "turn them into numbers first if they are meant as variables (e.g. days since a date)"),
    "m": ("time spans", "turn them into numbers first (e.g. x / numpy.timedelta64(1, 's') for seconds)"),
    "V": ("structured records", "select the numeric fields into a 2-D float array"),
}


def names_converter(names: Sequence[str] | None) -> tuple[str, ...] | None:
    return None if names is None else tuple(str(n) for n in names)


def pandas_class(data: object) -> str | None:
    """``"DataFrame"`` or ``"Series"`` when ``data`` is one (or a subclass); pandas itself is never imported."""
    for cls in type(data).__mro__:
        if cls.__module__.split(".")[0] == "pandas" and cls.__name__ in ("DataFrame", "Series"):
            return cls.__name__
    return None


def label_text(label: object) -> str:
    return "/".join(str(part) for part in label) if isinstance(label, tuple) else str(label)  # MultiIndex: a/b


def check_frame_columns(data: object, what: str) -> None:
    """Refuse a DataFrame with non-numeric columns (text, categories, dates), naming them and saying how to leave
    them out; anything else passes. What a caller that converts the frame itself (scikit-learn's
    ``validate_data``) calls first, so that the message names the columns."""
    if pandas_class(data) != "DataFrame":
        return
    frame: Any = data
    bad = [(label, dtype) for label, dtype in zip(frame.columns, frame.dtypes) if getattr(dtype, "kind", "O") not in "biuf"]
    if bad:
        shown = listed(bad, lambda item: f"{label_text(item[0])!r} ({item[1]})")
        textual = any(getattr(dtype, "kind", "O") in "OSU" and str(dtype) != "category" for _, dtype in bad)
        as_text = "; numbers stored as text convert with pandas.to_numeric" if textual else ""
        raise InvalidDataError(
            f"{what} is a DataFrame with {len(bad)} non-numeric column{'s' if len(bad) > 1 else ''}: {shown}; "
            f"sparse PCA needs numbers: drop them (df.drop(columns={[label for label, _ in bad]!r}), or "
            f"drop={[label_text(label) for label, _ in bad]!r} in spcakit.fit) or keep the numeric ones "
            f"(df.select_dtypes('number'), or columns=[...] in spcakit.fit){as_text}"
        )


def _frame_array(frame: Any, what: str) -> tuple[np.ndarray, tuple[str, ...]]:
    """A DataFrame's values as floats and its column names; non-numeric columns are refused by name."""
    labels = list(frame.columns)
    check_frame_columns(frame, what)
    with np.errstate(over="ignore"):
        return frame.to_numpy(dtype=float, na_value=np.nan), tuple(label_text(label) for label in labels)


def numeric_array(data: object, what: str) -> tuple[np.ndarray, tuple[str, ...] | None]:
    """``data`` as a float array, and its column names when it is a DataFrame.

    Accepts what the module's description lists; refuses the rest with an
    :class:`~spcakit.core.errors.InvalidDataError` that says what to do.
    """
    kind = pandas_class(data)
    if kind == "Series":
        raise InvalidDataError(
            f"{what} is a pandas Series: one variable, but sparse PCA needs a 2-D table of samples x variables; "
            "pass a DataFrame (series.to_frame() for a single column) or a 2-D array"
        )
    if kind == "DataFrame":
        return _frame_array(data, what)
    if is_scipy_sparse(data):
        shape = tuple(int(d) for d in data.shape)  # type: ignore[attr-defined]
        raise InvalidDataError(
            f"{what} is a scipy.sparse {type(data).__name__} of shape {shape} with {int(data.nnz):,} stored entries, "  # type: ignore[attr-defined]
            "which must be dense here (sparse matrices are taken only as the data matrix a method is fitted to: "
            "spcakit.fit, spcakit.SparsePCA, spcakit run/compose/path --data); convert it with .toarray() if the "
            f"dense array fits in memory: it would take {format_size(8 * math.prod(shape))}"
        )
    masked = sys.modules.get("numpy.ma")  # a masked array exists only once it is imported (np.ma would: 36 ms)
    if masked is not None and isinstance(data, masked.MaskedArray) and (hidden := masked.getmaskarray(data).sum()):
        raise InvalidDataError(
            f"{what} is a masked array with {int(hidden)} masked entries, which sparse PCA "
            "cannot skip; fill them in (x.filled(value)) or drop the rows that hold them"
        )
    try:
        arr = np.asarray(data)
    except (TypeError, ValueError) as exc:
        raise InvalidDataError(
            f"{what} must be a rectangular array of numbers (every row as long as the others); got a "
            f"{type(data).__name__} that is not: {exc}"
        ) from None
    if arr.dtype.kind == "c":
        raise InvalidDataError(f"{what} is complex; sparse PCA here needs real numbers")
    if arr.dtype.kind in _KIND_WORDS:
        words, advice = _KIND_WORDS[arr.dtype.kind]
        raise InvalidDataError(f"{what} must be numeric; got an array of {words} (dtype {arr.dtype}): {advice}")
    if arr.dtype.kind in "iu" and arr.dtype.itemsize >= 8 and arr.ndim == 2 and arr.size:
        _refuse_lost_precision(arr, what)
    try:
        with np.errstate(over="ignore"):
            return arr.astype(float, copy=False), None
    except OverflowError:
        raise InvalidDataError(f"{what} holds integers too large for double precision (above 1.8e308)") from None
    except (TypeError, ValueError) as exc:
        raise InvalidDataError(
            f"{what} must be numeric; it holds Python objects that are not numbers ({type(data).__name__}: {exc})"
        ) from None


#: Integers above this magnitude are not all exact in double precision.
EXACT_INTEGERS = 2.0**53


def _refuse_lost_precision(arr: np.ndarray, what: str) -> None:
    """Refuse 64-bit integer columns whose values differ but, beyond 2**53, become (all but) equal as doubles:
    they would be called constant, when the cause is the precision lost in the conversion."""
    high, low = arr.max(axis=0), arr.min(axis=0)
    top, bottom = high.astype(float), low.astype(float)
    beyond = np.maximum(np.abs(top), np.abs(bottom)) > EXACT_INTEGERS
    if not beyond.any():
        return
    lost = np.nonzero(beyond & (high != low) & (top - bottom <= 1e-12 * np.maximum(np.abs(top), np.abs(bottom))))[0]
    if lost.size:
        shown = listed(lost, lambda j: f"column {j}: from {low[j]} to {high[j]}")
        raise InvalidDataError(
            f"{what} holds {arr.dtype} integers beyond 2**53 that differ but are (all but) equal in double "
            f"precision, where spcakit computes ({shown}): converted, their variation would be lost "
            "(lost precision, not constant columns); subtract an offset as integers first, e.g. x - x.min(axis=0)"
        )


def check_frame_order(frame: object) -> None:
    """A square DataFrame's index, when it lists the columns' labels, must list them in the same order."""
    if pandas_class(frame) != "DataFrame":
        return
    rows, columns = list(frame.index), list(frame.columns)  # type: ignore[attr-defined]
    if rows != columns and len(rows) == len(columns) and set(map(repr, rows)) == set(map(repr, columns)):
        raise InvalidDataError(
            "the covariance DataFrame lists its variables in one order along the rows and another along the "
            "columns; reorder it, e.g. df.loc[df.columns, df.columns]"
        )


def content_sha256(matrix: np.ndarray) -> str:
    r"""The SHA-256 (hex) of a matrix's shape and values: what a result's ``input.sha256`` records.

    The digest covers the shape as two little-endian unsigned 64-bit integers,
    then the values as little-endian float64 in row-major (C) order: for an
    ``n x p`` array ``a`` of floats it equals ::

        h = hashlib.sha256(np.array(a.shape, dtype="<u8").tobytes())
        h.update(np.ascontiguousarray(a, dtype="<f8").tobytes())
        h.hexdigest()

    So it identifies the numbers, whatever file format, text formatting or
    memory layout they came in (a CSV written with other digits for the same
    doubles, or the same table as ``.npy``, hash alike). It is one pass over
    the data, fed to the hash a block of :data:`BLOCK_BYTES` of rows at a time
    (copied to C order only when they are not already, never the whole
    matrix); SHA-256 runs at about 1.5 GB/s on a CPU with SHA instructions
    (0.5 s for 800 MB; about a third of that speed without them). Building a
    problem computes it within :func:`scan_rows`'s pass over the data, and not
    at all for a matrix of more than :data:`HASH_LIMIT` bytes (see there);
    this function hashes a matrix of any size.

    A ``scipy.sparse`` data matrix is hashed by :func:`spcakit.inputs.sparse.sparse_content_sha256`
    instead (its canonical CSR form, whatever its format), which differs from this hash of it made dense.
    """
    digest = _start_digest(matrix.shape)
    for _, _, block in row_blocks(matrix):
        digest.update(block)
    return digest.hexdigest()


#: Dense matrices (data or covariance) of more bytes than this, as float64, are not hashed when a problem is
#: built: ``input.sha256`` is ``None`` and ``input.sha256_skipped`` says why. SHA-256 (about 1.5 GB/s with
#: SHA instructions, 0.5 GB/s without; ``hashlib.blake2b`` is no faster: 0.6 GB/s) reads far below memory
#: speed (above 10 GB/s), so beyond this size the hash would cost more than the rest of the checks
#: together; 256 MiB take about 0.17 s. Call :func:`content_sha256` to hash larger data.
HASH_LIMIT = 1 << 28


def hash_skipped_text(nbytes: int) -> str:
    """Why a matrix of ``nbytes`` was not hashed: what ``input.sha256_skipped`` records."""
    return (
        f"the matrix takes {format_size(nbytes)}, more than spcakit.inputs.checks.HASH_LIMIT "
        f"({format_size(HASH_LIMIT)}); spcakit.inputs.checks.content_sha256(x) computes its hash"
    )


def _start_digest(shape: tuple[int, ...]) -> Any:
    return hashlib.sha256(np.asarray(shape, dtype="<u8").tobytes())


def row_blocks(
    matrix: np.ndarray, start: int = 0, *, c_order: bool = True, min_rows: int = 1
) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """``(first row, block, c_block)`` for consecutive blocks of :data:`BLOCK_BYTES` of rows from row
    ``start`` on: ``block`` is a view of ``matrix``, ``c_block`` the same rows as C-ordered little-endian
    float64 (the bytes :func:`content_sha256` hashes): ``block`` itself when it is already so, else (with
    ``c_order``) a copy into one buffer reused for the next block (use it before asking for the next);
    without ``c_order`` it is ``block`` always. Blocks that are views have at least ``min_rows`` rows (a taller
    view costs no memory; a copied block keeps to :data:`BLOCK_BYTES`)."""
    n = matrix.shape[0]
    rows = min(max(n, 1), block_rows(int(np.prod(matrix.shape[1:], dtype=np.int64))))
    copied = c_order and not (matrix.dtype == np.dtype("<f8") and matrix.flags.c_contiguous)
    if not copied:
        rows = max(rows, min(max(n, 1), min_rows))
    buffer = np.empty((rows, *matrix.shape[1:]), dtype="<f8") if copied else None
    for first in range(start, n, rows):
        block = matrix[first : first + rows]
        if buffer is None:
            yield first, block, block
        else:
            np.copyto(buffer[: block.shape[0]], block)
            yield first, block, buffer[: block.shape[0]]


class RowScan(NamedTuple):
    """What :func:`scan_rows` finds in its one pass over a matrix's rows."""

    #: Each column's largest and smallest value; NaN or infinite where the column has a non-finite entry
    #: (only the blocks up to the first such entry are read).
    high: np.ndarray
    low: np.ndarray
    #: Each column's sum (``None`` unless asked for), summed as described in :func:`scan_rows`; infinite or
    #: NaN where it overflows double precision.
    sums: np.ndarray | None
    #: :func:`content_sha256` of the matrix, when asked for (``None`` otherwise).
    sha256: str | None
    #: Whether every entry is finite (when not, the other fields are partial: the pass stopped).
    finite: bool
    #: The first row of the block where the pass stopped at a non-finite entry (``n`` when it did not).
    stopped_at: int
    #: :math:`\sum_i (a_i - s)(a_i - s)^\top` over the rows :math:`a_i`, when asked for (``None`` otherwise):
    #: the Gram matrix of the rows less :attr:`shift` (see :func:`scan_rows`).
    gram: np.ndarray | None = None
    #: The shift :math:`s` of :attr:`gram`: ``None`` for none (the plain Gram matrix), else the first block's means.
    shift: np.ndarray | None = None


#: :func:`scan_rows` adds the checked rows to the Gram matrix this many bytes of them at a time (several blocks of
#: :data:`BLOCK_BYTES`, read again while recent ones are in the cache): each update writes a ``p x p`` product, so
#: fewer of them cost less. On 200 000 x 500 (one BLAS thread, median CPU time of 8), the scan with the Gram matrix
#: took 1.31 s against 1.40 s with an update per block, and NumPy's ``X.T @ X`` alone 1.19 s.
GRAM_BLOCK_BYTES = 1 << 25


#: :func:`scan_rows` shifts the rows by the first block's means when some column's mean there exceeds this
#: many of its standard deviations (for the Gram matrix; see :func:`gram_from_scan`).
SHIFT_RATIO = 4.0


#: :func:`scan_rows` reads blocks of at least this many rows (views of the data, no copy): each block's extremes and
#: sums cost about ten operations on ``p``-vectors besides reading it, which dominate for wide data in blocks of
#: :data:`BLOCK_BYTES` (5 rows of 100 000 columns). On 500 x 100 000 (one thread, best of 5) the scan with sums took
#: 395 ms in blocks of 5 rows, 182 ms of 32, 130 ms of 64 and 105 ms of 128; one ``sum(axis=0)`` alone 27 ms. Tall
#: data's blocks of 4 MiB already hold more rows (1048 of 500 columns).
SCAN_MIN_ROWS = 64


def scan_rows(
    matrix: np.ndarray, *, sums: bool = False, sha256: bool = False, gram: bool = False, shift: bool = True
) -> RowScan:
    r"""One pass over a 2-D float ``matrix``, a block of :data:`BLOCK_BYTES` of rows at a time
    (:func:`row_blocks`: no copy beyond one block): its finiteness, each column's extremes, and when asked
    its column sums, :func:`content_sha256` (each block is fed to the hash, in order, while it is in the
    cache) and the Gram matrix of its rows (``gram``; issue 27: the covariance of tall data is then formed
    in the same pass as the checks, which read the data once instead of twice).

    The Gram matrix is :math:`G_s = \sum_i (a_i - s)(a_i - s)^\top` (a symmetric rank-k update per
    :data:`GRAM_BLOCK_BYTES` of checked rows, or per block when shifted), with :math:`s = 0` unless a column's mean in the first block exceeds :data:`SHIFT_RATIO` of its standard
    deviation there (and ``shift`` allows it: for data that will be centred), in which case :math:`s` is the first block's means (the block shifted into one reused
    buffer): the centred Gram matrix is then :math:`G_s - n(\mu - s)(\mu - s)^\top`
    (:func:`gram_from_scan`), whose subtraction loses little when :math:`s` is near :math:`\mu`.

    NaN and :math:`\pm\infty` show in the extremes (``numpy.maximum`` propagates NaN), so no boolean copy is
    made; at the first block holding one the pass stops (:func:`nonfinite_error` then says where and how
    many). The statistics are taken on the blocks as laid out in ``matrix``; only the hash needs them in C
    order (copied, a block at a time, when they are not). The sums add each block's rows with ``numpy.sum``
    over axis 0 (in order for C-ordered data, pairwise for Fortran-ordered), and the blocks' sums with
    Neumaier's compensated summation: the error of a column's sum is at most about
    :math:`(b + 2)\,\varepsilon \sum_i |a_{ij}|` for blocks of :math:`b` rows (:data:`BLOCK_BYTES` of them, at least
    :data:`SCAN_MIN_ROWS` when the blocks are views), against
    :math:`(n - 1)\,\varepsilon \sum_i |a_{ij}|` for ``numpy.sum`` of a C-ordered matrix over axis 0;
    data of one block get ``numpy.sum``'s own sums.
    """
    n, p = matrix.shape
    high = np.full(p, -np.inf)
    low = np.full(p, np.inf)
    total = np.zeros(p) if sums else None
    carry = np.zeros(p) if sums else None
    digest = _start_digest(matrix.shape) if sha256 else None
    gram_sum = np.zeros((p, p)) if gram else None
    gram_rows = max(1, GRAM_BLOCK_BYTES // (8 * max(p, 1)))
    pending = 0  # the first row not yet in gram_sum
    offset: np.ndarray | None = None
    shifted: np.ndarray | None = None
    with np.errstate(over="ignore", invalid="ignore"):
        for first, block, c_block in row_blocks(matrix, c_order=digest is not None, min_rows=SCAN_MIN_ROWS):
            block_high, block_low = block.max(axis=0), block.min(axis=0)
            if not (np.isfinite(block_high).all() and np.isfinite(block_low).all()):
                np.maximum(high, block_high, out=high)
                np.minimum(low, block_low, out=low)
                return RowScan(high, low, None, None, finite=False, stopped_at=first)
            np.maximum(high, block_high, out=high)
            np.minimum(low, block_low, out=low)
            if total is not None and carry is not None:
                part = block.sum(axis=0)
                added = total + part  # Neumaier: carry what the addition rounded away
                carry += np.where(np.abs(total) >= np.abs(part), (total - added) + part, (part - added) + total)
                total = added
            if digest is not None:
                digest.update(c_block)
            if gram_sum is not None:
                if first == 0 and shift and block.shape[0] > 1:
                    means, spread = block.mean(axis=0), block.std(axis=0)
                    if np.any(np.abs(means) > SHIFT_RATIO * spread):
                        offset, shifted = means, np.empty(block.shape)
                if offset is None or shifted is None:
                    # the rows checked so far, GRAM_BLOCK_BYTES at a time (and the last ones at the end)
                    end = first + block.shape[0]
                    if end - pending >= gram_rows or end == n:
                        rows = matrix[pending:end]
                        gram_sum += rows.T @ rows  # BLAS syrk: NumPy sees the transpose of one operand
                        pending = end
                else:
                    rows = shifted[: block.shape[0]]
                    np.subtract(block, offset, out=rows)
                    gram_sum += rows.T @ rows
        column_sums = None if total is None or carry is None else total + carry
    return RowScan(high, low, column_sums, None if digest is None else digest.hexdigest(), finite=True, stopped_at=n,
                   gram=gram_sum, shift=offset)


#: :func:`gram_from_scan` keeps the scan's Gram matrix when no column's rounding grows by more than this factor
#: (three of the sixteen digits) over what the centred second pass would make.
GRAM_LOSS = 2.0**10


def gram_from_scan(scan: RowScan, n: int, mean: np.ndarray | None) -> np.ndarray | None:
    r"""The centred Gram matrix :math:`\sum_i (a_i - \mu)(a_i - \mu)^\top` from the scan's :math:`G_s`, or
    ``None`` where the subtraction would lose too much (then form it again, centred a block at a time).

    :math:`G = G_s - n\,d d^\top` with :math:`d = \mu - s` (``mean=None``: :math:`G_s` itself, no
    subtraction). Two roundings grow in it, relative to :math:`G_{jj}`:

    * :math:`G_s`'s, relative to :math:`(G_s)_{jj} = G_{jj} + n d_j^2`: a factor :math:`(G_s)_{jj}/G_{jj}`;
    * the mean's: :math:`\mu_j` is exact to about :math:`\varepsilon m_j` (:math:`m_j` the column's largest
      magnitude), and that error :math:`\delta` enters :math:`n d_j d_k` linearly, :math:`n d_j \delta_k`,
      where the centred pass sees it only squared (:math:`\sum_i (a_{ij} - \mu_j) = 0`): a factor
      :math:`n |d_j| m_j / G_{jj}`.

    If their sum exceeds :data:`GRAM_LOSS` for any column the result is ``None``, except for columns that
    are exactly constant (their extremes equal), whose rows and columns are exactly zero.

    The subtraction is made in place, in :math:`G_s` itself (a block of rows at a time: no other
    :math:`p \times p` array), so the scan's matrix is spent either way.
    """
    gram = scan.gram
    if gram is None:
        return None
    if mean is None:
        return gram if scan.shift is None else None
    offset = mean if scan.shift is None else mean - scan.shift
    squares = np.diag(gram).copy()
    magnitude = np.maximum(np.abs(scan.high), np.abs(scan.low))
    with np.errstate(over="ignore", invalid="ignore"):
        step = max(1, BLOCK_BYTES // (8 * gram.shape[0]))
        for start in range(0, gram.shape[0], step):
            gram[start : start + step] -= (n * offset[start : start + step])[:, None] * offset
        constant = scan.high == scan.low
        gram[constant, :] = 0.0
        gram[:, constant] = 0.0
        centred = np.diag(gram)
        kept = squares + n * np.abs(offset) * magnitude <= GRAM_LOSS * centred
    if not np.all(kept | constant) or not np.all(np.isfinite(gram)):
        return None
    return gram


def is_scipy_sparse(data: object) -> bool:
    """Whether ``data`` is a ``scipy.sparse`` matrix or array, without importing scipy.sparse (0.1 s) when
    nothing has: a sparse matrix cannot exist before its module is imported."""
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and bool(sparse.issparse(data))


def is_dask_array(data: object) -> bool:
    """Whether ``data`` is a ``dask.array.Array``, without importing dask: one cannot exist before its module
    is imported (see :mod:`spcakit.inputs.dask_arrays`)."""
    array = sys.modules.get("dask.array")
    return array is not None and isinstance(data, array.Array)


def check_matrix(
    matrix: object, what: str, names: Sequence[str] | None = None
) -> tuple[np.ndarray, tuple[str, ...] | None]:
    """``matrix`` as a finite 2-D float array with at least one entry, and a DataFrame's column names.

    ``names`` (else the DataFrame's) name the columns in the message about NaN or infinite entries.
    """
    arr, frame_names, _ = finite_matrix(matrix, what, names)
    return arr, frame_names


def finite_matrix(
    matrix: object, what: str, names: Sequence[str] | None = None, *, sums: bool = False, sha256: bool = False,
    gram: bool = False, shift: bool = True,
) -> tuple[np.ndarray, tuple[str, ...] | None, RowScan]:
    """:func:`check_matrix`, and what its one pass over the data (:func:`scan_rows`) found: the columns'
    extremes, and when asked their sums (``sums``), the content hash (``sha256``: computed when the
    matrix takes at most :data:`HASH_LIMIT` bytes, else ``None``) and the Gram matrix of the rows (``gram``, shifted when ``shift`` allows: :func:`scan_rows`)."""
    arr, frame_names = numeric_array(matrix, what)
    if arr.ndim != 2:
        raise InvalidDataError(
            f"{what} must be a 2-D array (rows x columns); got {arr.ndim} dimension(s) "
            f"with shape {arr.shape}"
        )
    if arr.size == 0 or min(arr.shape) == 0:
        raise InvalidDataError(f"{what} is empty (shape {arr.shape}); it needs at least one row and one column")
    scan = scan_rows(arr, sums=sums, sha256=sha256 and arr.nbytes <= HASH_LIMIT, gram=gram, shift=shift)
    if not scan.finite:
        raise nonfinite_error(arr, what, names if names is not None else frame_names, scan.stopped_at,
                              frame=frame_names is not None)  # fmt: skip
    return arr, frame_names, scan


def nonfinite_error(
    a: np.ndarray, what: str, names: Sequence[str] | None, start: int, *, frame: bool = False
) -> InvalidDataError:
    """The error naming ``a``'s first NaN or infinite entry and how many each column holds, counted a block
    of rows at a time from row ``start`` (the rows before it are finite): no boolean copy of the data."""
    names = tuple(names) if names is not None else None
    named = names is not None and len(names) == a.shape[1]

    def column(j: int) -> str:
        return f"{j} ({names[j]!r})" if named else str(j)  # type: ignore[index]

    per_column = np.zeros(a.shape[1], dtype=np.int64)
    first: tuple[int, int, str] | None = None
    infinite = 0
    for row, block, _ in row_blocks(a, start, c_order=False):
        bad = ~np.isfinite(block)
        if first is None and bad.any():
            i, j = np.unravel_index(int(np.argmax(bad)), bad.shape)  # row-major: the first row's first column
            first = (row + int(i), int(j), "NaN" if np.isnan(block[i, j]) else "infinite")
        per_column += bad.sum(axis=0)
        infinite += int(np.isinf(block).sum())
    assert first is not None, "nonfinite_error on a finite matrix"
    count = int(per_column.sum())
    columns = np.nonzero(per_column)[0]
    by_column = listed(columns, lambda j: f"{column(j)}: {per_column[j]}")
    advice = " (e.g. df.dropna())" if frame else ""
    row, col, kind = first
    error = InvalidDataError if infinite else MissingValuesError  # NaN only: missing values, which fit can impute
    return error(
        f"{what} has {count} NaN or infinite entr{'y' if count == 1 else 'ies'} "
        f"(first: {kind} at row {row}, column {column(col)}; by column: {by_column}); all entries must be "
        f"finite numbers - drop or fill in the missing values{advice}"
    )


def check_names(names: Sequence[str] | None, p: int) -> tuple[str, ...]:
    """``names`` checked (one per column, unique), or the default names of ``p`` columns - never built for
    more than :data:`~spcakit.inputs.limits.MAX_VARIABLES` columns."""
    if names is None:
        if p > MAX_VARIABLES:
            raise InvalidDataError(
                f"the data have {p:,} columns, more than spcakit takes ({MAX_VARIABLES:,}, "
                "spcakit.inputs.limits.MAX_VARIABLES); select the variables to analyse first"
            )
        return default_feature_names(p)
    names = tuple(str(n) for n in names)
    if len(names) != p:
        raise InvalidDataError(f"got {len(names)} feature names for {p} variables; give exactly one name per column")
    if len(set(names)) != len(names):
        names = unique_names(names)  # repeated names (probes of one gene) are welcome: made unique, with a warning
    return names


def refuse_zero_variance(
    indices: np.ndarray,
    names: tuple[str, ...],
    what: str,
    high: np.ndarray | None = None,
    low: np.ndarray | None = None,
) -> np.ndarray:
    """Raise when no variable has variance (``indices``, those without, are all of them), naming the first few.

    Fewer are welcome: :func:`with_constant_columns` leaves them out of the fit. With the columns' extremes
    (``high``, ``low``), the columns among ``indices`` whose values differ - by less than double precision
    resolves once they are centred, a large offset - are told apart from constant ones: the refusal says so,
    and when other columns vary a :class:`~spcakit.core.errors.ConstantColumnWarning` names them. Returns those
    columns (a large offset; empty without the extremes), which
    :func:`~spcakit.inputs.problem.with_constant_columns` records so that no message calls them constant.
    """
    offset = np.empty(0, dtype=int)
    if high is not None and low is not None and indices.size:
        with np.errstate(over="ignore", invalid="ignore"):
            offset = indices[high[indices] > low[indices]]
    if indices.size < len(names):
        if offset.size:
            warnings.warn(ConstantColumnWarning(_offset_text(offset, names, high, low)), stacklevel=4)  # type: ignore[arg-type]
        return offset
    if offset.size:
        constant = indices.size - offset.size
        others = f"with the {constant} constant one(s), " if constant else ""
        raise InvalidDataError(
            f"{_offset_text(offset, names, high, low)}; {others}no column is left with variance to analyse"  # type: ignore[arg-type]
        )
    raise InvalidDataError(
        f"{zero_variance_text(indices, names, what)}: every one of them, so there is no variance to analyse; "
        "sparse PCA needs at least r variables that vary"
    )


def _offset_text(offset: np.ndarray, names: tuple[str, ...], high: np.ndarray, low: np.ndarray) -> str:
    """What columns whose values differ, but too little for their magnitude, are: a large offset, not constant."""
    shown = listed(offset, lambda j: f"{j} ({names[j]}): from {low[j]:.17g} to {high[j]:.17g}")
    return (
        f"{offset.size} column(s) vary by less than 1e-12 of their magnitude ({shown}): a large offset, or precision "
        "lost before the data reached spcakit; once centred in double precision such variation cannot be told from "
        "rounding, so they count as having zero variance. If their variation is real, subtract the offset first "
        "(e.g. x - x.min(axis=0))"
    )


#: Column magnitudes between which squares and their sums over any realistic n stay normal doubles.
SQUARES_SAFE = (1e-100, 1e100)


def centred_extremes(high: np.ndarray, low: np.ndarray, mean: np.ndarray, magnitude: np.ndarray) -> np.ndarray:
    """Each column's largest magnitude after centring, from its extremes as given (rounding is monotone: the
    centred extremes are the extremes centred, no pass over the data); :class:`InvalidDataError` when a
    difference overflows."""
    with np.errstate(over="ignore", invalid="ignore"):
        largest = np.maximum(high - mean, mean - low)
    if not np.all(np.isfinite(largest)):
        raise InvalidDataError(
            f"the data's values (up to {float(magnitude.max()):.3g}) are too large to centre in double precision "
            "(differences between them overflow); rescale the data, e.g. divide by a power of 10"
        )
    return largest  # type: ignore[no-any-return]


def check_double_range(
    norms: np.ndarray, largest: np.ndarray, scale: float, names: tuple[str, ...], constant: np.ndarray | None = None
) -> None:
    """Refuse data whose covariance over- or underflows (see the module's description).

    ``norms`` are the centred columns' Euclidean norms, ``largest`` their largest magnitudes; the columns
    ``constant`` (zero variance, left out of the fit) count for neither check: their norms are rounding noise.
    """
    if constant is not None and len(constant):
        norms = norms.copy()
        norms[constant] = 0.0
    with np.errstate(over="ignore", invalid="ignore"):
        top = float(norms.max())
        frobenius = top * math.sqrt(float(np.sum((norms / top) ** 2))) if math.isfinite(top) else math.inf
    if not frobenius <= math.sqrt(GRAM_LIMIT):
        raise InvalidDataError(
            f"the data's values (up to {float(largest.max()):.3g} after centring) are too large for a covariance in "
            f"double precision: its entries would overflow (the centred data's sum of squares must stay below "
            f"{GRAM_LIMIT:.3g}); rescale the data, e.g. divide by a power of 10"
        )
    floor = math.sqrt(TINY * scale)
    small = np.nonzero(norms < floor)[0]
    if constant is not None:
        small = index_sets.difference(small, constant)
    if small.size:
        shown = listed(small, lambda j: f"{j} ({names[j]}): {norms[j] / math.sqrt(scale):.3g}")
        raise InvalidDataError(
            f"{small.size} column(s) have standard deviations below {math.sqrt(TINY):.3g}, too small for a "
            f"covariance in double precision (their variances underflow): {shown}; rescale them, e.g. "
            "multiply by a power of 10"
        )


def block_rows(p: int) -> int:
    """Rows of ``p`` doubles in a block of :data:`BLOCK_BYTES`."""
    return max(1, BLOCK_BYTES // max(1, 8 * p))
