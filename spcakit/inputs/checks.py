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
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spcakit.errors import SHOWN, InvalidDataError, format_size
from spcakit.problem import default_feature_names, zero_variance_text

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


def _frame_array(frame: Any, what: str) -> tuple[np.ndarray, tuple[str, ...]]:
    """A DataFrame's values as floats and its column names; non-numeric columns are refused by name."""
    labels = list(frame.columns)
    bad = [(label, dtype) for label, dtype in zip(labels, frame.dtypes) if getattr(dtype, "kind", "O") not in "biuf"]
    if bad:
        shown = ", ".join(f"{label_text(label)!r} ({dtype})" for label, dtype in bad[:SHOWN])
        more = f" and {len(bad) - SHOWN} more" if len(bad) > SHOWN else ""
        textual = any(getattr(dtype, "kind", "O") in "OSU" for _, dtype in bad)
        as_text = "; numbers stored as text convert with pandas.to_numeric" if textual else ""
        raise InvalidDataError(
            f"{what} is a DataFrame with {len(bad)} non-numeric column{'s' if len(bad) > 1 else ''}: {shown}{more}; "
            f"sparse PCA needs numbers: drop them (df.drop(columns={[label for label, _ in bad]!r}), or "
            f"drop={[label_text(label) for label, _ in bad]!r} in spcakit.fit) or keep the numeric ones "
            f"(df.select_dtypes('number'), or columns=[...] in spcakit.fit){as_text}"
        )
    with np.errstate(over="ignore"):
        return frame.to_numpy(dtype=float, na_value=np.nan), tuple(label_text(label) for label in labels)


def numeric_array(data: object, what: str) -> tuple[np.ndarray, tuple[str, ...] | None]:
    """``data`` as a float array, and its column names when it is a DataFrame.

    Accepts what the module's description lists; refuses the rest with an
    :class:`~spcakit.errors.InvalidDataError` that says what to do.
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
            "dense array fits in memory: it "
            f"would take {format_size(8 * math.prod(shape))}"
        )
    if isinstance(data, np.ma.MaskedArray) and np.ma.getmaskarray(data).any():
        raise InvalidDataError(
            f"{what} is a masked array with {int(np.ma.getmaskarray(data).sum())} masked entries, which sparse PCA "
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
    try:
        with np.errstate(over="ignore"):
            return arr.astype(float, copy=False), None
    except OverflowError:
        raise InvalidDataError(f"{what} holds integers too large for double precision (above 1.8e308)") from None
    except (TypeError, ValueError) as exc:
        raise InvalidDataError(
            f"{what} must be numeric; it holds Python objects that are not numbers ({type(data).__name__}: {exc})"
        ) from None


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
    the data (about 0.7 ms per MB); rows are copied to C order a block of
    :data:`BLOCK_BYTES` at a time, never the whole matrix.

    A ``scipy.sparse`` data matrix is hashed by
    :func:`spcakit.inputs.sparse.sparse_content_sha256` instead (its canonical
    CSR form, whatever its format), which differs from this hash of the same
    matrix made dense.
    """
    digest = hashlib.sha256(np.asarray(matrix.shape, dtype="<u8").tobytes())
    rows = block_rows(int(np.prod(matrix.shape[1:], dtype=np.int64)))
    for start in range(0, matrix.shape[0], rows):
        digest.update(np.ascontiguousarray(matrix[start : start + rows], dtype="<f8"))
    return digest.hexdigest()


#: Matrices of at least this many bytes are hashed on a second thread while the checks and the Gram
#: product run (hashlib and NumPy release the GIL); smaller ones are hashed before (a thread costs more).
BACKGROUND_HASH_BYTES = 1 << 20


_hash_pool: Any = None


def start_sha256(matrix: np.ndarray) -> Callable[[], str]:
    """Begin :func:`content_sha256` of ``matrix``; the returned function waits for the digest.

    ``matrix`` must not change until then: it is the caller's array (or a private copy), which
    the problem's construction only reads.
    """
    global _hash_pool
    if matrix.nbytes < BACKGROUND_HASH_BYTES:
        digest = content_sha256(matrix)
        return lambda: digest
    if _hash_pool is None:
        from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415 - only for large data

        _hash_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spcakit-sha256")
    return _hash_pool.submit(content_sha256, matrix).result


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
    matrix: object, what: str, names: Sequence[str] | None = None
) -> tuple[np.ndarray, tuple[str, ...] | None, tuple[np.ndarray, np.ndarray]]:
    """:func:`check_matrix`, and the columns' largest and smallest values, found by the finiteness check."""
    arr, frame_names = numeric_array(matrix, what)
    if arr.ndim != 2:
        raise InvalidDataError(
            f"{what} must be a 2-D array (rows x columns); got {arr.ndim} dimension(s) "
            f"with shape {arr.shape}"
        )
    if arr.size == 0 or min(arr.shape) == 0:
        raise InvalidDataError(f"{what} is empty (shape {arr.shape}); it needs at least one row and one column")
    high, low = column_extremes(arr)  # NaN and ±inf show in the extremes: no boolean copy of the data
    if not (np.isfinite(high).all() and np.isfinite(low).all()):
        bad = ~np.isfinite(arr)
        names = tuple(names) if names is not None else frame_names
        named = names is not None and len(names) == arr.shape[1]

        def column(j: int) -> str:
            return f"{j} ({names[j]!r})" if named else str(j)  # type: ignore[index]

        row, col = np.unravel_index(int(np.argmax(bad)), bad.shape)
        kind = "NaN" if np.isnan(arr[row, col]) else "infinite"
        count = int(bad.sum())
        per_column = bad.sum(axis=0)
        columns = np.nonzero(per_column)[0]
        listed = ", ".join(f"{column(j)}: {per_column[j]}" for j in columns[:SHOWN])
        more = f" and {columns.size - SHOWN} more" if columns.size > SHOWN else ""
        advice = " (e.g. df.dropna())" if frame_names is not None else ""
        raise InvalidDataError(
            f"{what} has {count} NaN or infinite entr{'y' if count == 1 else 'ies'} "
            f"(first: {kind} at row {row}, column {column(col)}; by column: {listed}{more}); all entries must be "
            f"finite numbers - drop or fill in the missing values{advice}"
        )
    return arr, frame_names, (high, low)


def check_names(names: Sequence[str] | None, p: int) -> tuple[str, ...]:
    if names is None:
        return default_feature_names(p)
    names = tuple(str(n) for n in names)
    if len(names) != p:
        raise InvalidDataError(f"got {len(names)} feature names for {p} variables; give exactly one name per column")
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise InvalidDataError(f"feature names must be unique; repeated: {', '.join(dup)}")
    return names


def refuse_zero_variance(indices: np.ndarray, names: tuple[str, ...], what: str) -> None:
    """Raise when no variable has variance (``indices``, those without, are all of them), naming the first few.

    Fewer are welcome: :func:`with_constant_columns` leaves them out of the fit.
    """
    if indices.size < len(names):
        return
    raise InvalidDataError(
        f"{zero_variance_text(indices, names, what)}: every one of them, so there is no variance to analyse; "
        "sparse PCA needs at least r variables that vary"
    )


#: Column magnitudes between which squares and their sums over any realistic n stay normal doubles.
SQUARES_SAFE = (1e-100, 1e100)


def column_extremes(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each column's largest and smallest value, by two reductions (NaN where the column has one)."""
    with np.errstate(invalid="ignore"):
        return a.max(axis=0), a.min(axis=0)


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
        small = np.setdiff1d(small, constant)
    if small.size:
        shown = ", ".join(f"{j} ({names[j]}): {norms[j] / math.sqrt(scale):.3g}" for j in small[:SHOWN])
        more = f" and {small.size - SHOWN} more" if small.size > SHOWN else ""
        raise InvalidDataError(
            f"{small.size} column(s) have standard deviations below {math.sqrt(TINY):.3g}, too small for a "
            f"covariance in double precision (their variances underflow): {shown}{more}; rescale them, e.g. "
            "multiply by a power of 10"
        )


def block_rows(p: int) -> int:
    """Rows of ``p`` doubles in a block of :data:`BLOCK_BYTES`."""
    return max(1, BLOCK_BYTES // max(1, 8 * p))
