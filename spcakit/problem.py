r"""The input of every method: a covariance operator, its variables' names, and
(when given) the centred data matrix it came from.

:func:`as_problem` checks what users pass and says precisely what is wrong:
NaN or infinite entries (naming the column), an empty matrix, data whose
columns are all constant, a covariance that is not square, not symmetric, or
not positive semi-definite, values outside what double precision can square.

What counts as numbers
----------------------
Arrays (or nested lists) of floats, integers or booleans - ``True`` is 1 and
``False`` 0, as in NumPy - and pandas DataFrames whose columns are all numeric
or boolean: their column names become the variables' names (unless
``feature_names`` is given) and their index is ignored. Refused, each with a
message saying what to do instead: arrays of text, dates, times, records or
Python objects that are not numbers; a DataFrame's non-numeric columns (by
name); a pandas Series (one variable); masked arrays with masked entries;
complex numbers; a ``scipy.sparse`` covariance matrix (the message gives
the size ``.toarray()`` would take). A ``scipy.sparse`` *data* matrix (any
format, matrix or array) is accepted and never densified: see
:mod:`spcakit.sparse_data`; so is a ``dask.array.Array`` data matrix, read in
chunks: see :mod:`spcakit.dask_data`. spcakit never imports pandas: a DataFrame is
recognised by its class, a sparse matrix by ``scipy.sparse`` being imported.

Double precision
----------------
Data :math:`A` (``n x p``) give the covariance :math:`C = A_c^\top A_c / s` of
their centred copy :math:`A_c` (:math:`s = n - 1`, or :math:`n` uncentred).
The Gram matrix's entries are bounded by
:math:`|a_j^\top a_k| \le \|a_j\|\|a_k\| \le \|A_c\|_F^2`, and every product a
method forms, :math:`A_c^\top (A_c v)` for a unit :math:`v`, by
:math:`\|A_c\|_F^2` as well. So data are refused, before anything of size
:math:`p \times p` is formed or any product taken, when
:math:`\|A_c\|_F^2 >` :data:`GRAM_LIMIT` (the norms are computed from columns
scaled to at most 1, so they do not overflow themselves), and when a column's
variance :math:`\|a_j\|^2/s` is below the smallest normal double (its square
underflows). The column means are formed without overflow; values so close to
the largest double that centring overflows are refused. An explicit covariance
is refused when :math:`p \max_{ij}|c_{ij}| >` :data:`GRAM_LIMIT`, which bounds
:math:`\|Cv\|` for unit :math:`v`. Rescaling by a power of 10 brings such data
into range; so does ``standardize=True``, which divides every data column by
its standard deviation measured on the column scaled to at most 1, so that
nothing that could overflow is ever squared (see :func:`data_problem`).

Constant columns
----------------
A column with zero variance - constant relative to its own magnitude (its
centred values at most :math:`10^{-12}` of its largest value, so that data of
any scale, :math:`10^{-13}` or :math:`10^{150}`, are not called constant), an
all-zero column of ``scipy.sparse`` data, a zero diagonal entry of a
covariance - is welcome, as in scikit-learn: it gets a zero loading in every
component, and :func:`spcakit.fit` names it in a
:class:`~spcakit.errors.ConstantColumnWarning` (and in ``Result.warnings``).
The method runs on the columns that vary alone (:attr:`Problem.varying`,
:func:`with_constant_columns`), exactly as if they had been the data, and the
loadings are re-embedded into all ``p`` rows; so every parameter that depends
on ``p`` (the default threshold :math:`1/\sqrt p`, λ as a number of zeros
for ``sparsity``) refers to the :math:`p'` columns that vary, ``k`` above
:math:`p'` is lowered to :math:`p'` (with a warning), and ``r`` must be at
most :math:`p'`. With ``standardize=True`` such a column is divided by 1 (its
recorded scale), not by zero. Data whose columns are all constant are refused.

Choosing columns
----------------
``columns=`` keeps the named columns and ``drop=`` removes some (an ID or
label column): a DataFrame is cut before its values are read, so the
non-numeric columns it drops never need to be numbers. A misspelt name is
refused with the closest names (:func:`column_positions`).

The record
----------
Every problem built here carries an :class:`~spcakit.state.InputRecord`
(``problem.input``): the kind and shape of the matrix, its content hash
(:func:`content_sha256`), the centring and standardisation applied, the
column means and scales. :func:`spcakit.fit` puts it in the result.
"""

from __future__ import annotations

import difflib
import hashlib
import math
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from spcakit.csv_files import csv_layout
from spcakit.datasets import load_source
from spcakit.errors import SHOWN, InvalidDataError, InvalidParameterError, format_size
from spcakit.operators import (
    CovarianceOperator, DenseCovariance, GramCovariance, PaddedCovariance, centred_column_blocks,
)  # fmt: skip
from spcakit.state import InputRecord

#: Largest dimension for which a covariance is checked for PSD by eigenvalues.
PSD_CHECK_LIMIT = 3000
#: Data with n >= p and p at most this get an explicit covariance; otherwise it is applied matrix-free.
DENSE_COVARIANCE_LIMIT = 4000
#: Largest sum of squares of the centred data (and p times the largest entry of a covariance): the
#: largest double with 16 bits of headroom for the sums the parts form.
GRAM_LIMIT = float(np.finfo(float).max) * 2.0**-16
_TINY = float(np.finfo(float).tiny)
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


def _names_converter(names: Sequence[str] | None) -> tuple[str, ...] | None:
    return None if names is None else tuple(str(n) for n in names)


def _pandas_class(data: object) -> str | None:
    """``"DataFrame"`` or ``"Series"`` when ``data`` is one (or a subclass); pandas itself is never imported."""
    for cls in type(data).__mro__:
        if cls.__module__.split(".")[0] == "pandas" and cls.__name__ in ("DataFrame", "Series"):
            return cls.__name__
    return None


def _label_text(label: object) -> str:
    return "/".join(str(part) for part in label) if isinstance(label, tuple) else str(label)  # MultiIndex: a/b


def _frame_array(frame: Any, what: str) -> tuple[np.ndarray, tuple[str, ...]]:
    """A DataFrame's values as floats and its column names; non-numeric columns are refused by name."""
    labels = list(frame.columns)
    bad = [(label, dtype) for label, dtype in zip(labels, frame.dtypes) if getattr(dtype, "kind", "O") not in "biuf"]
    if bad:
        shown = ", ".join(f"{_label_text(label)!r} ({dtype})" for label, dtype in bad[:SHOWN])
        more = f" and {len(bad) - SHOWN} more" if len(bad) > SHOWN else ""
        textual = any(getattr(dtype, "kind", "O") in "OSU" for _, dtype in bad)
        as_text = "; numbers stored as text convert with pandas.to_numeric" if textual else ""
        raise InvalidDataError(
            f"{what} is a DataFrame with {len(bad)} non-numeric column{'s' if len(bad) > 1 else ''}: {shown}{more}; "
            f"sparse PCA needs numbers: drop them (df.drop(columns={[label for label, _ in bad]!r}), or "
            f"drop={[_label_text(label) for label, _ in bad]!r} in spcakit.fit) or keep the numeric ones "
            f"(df.select_dtypes('number'), or columns=[...] in spcakit.fit){as_text}"
        )
    with np.errstate(over="ignore"):
        return frame.to_numpy(dtype=float, na_value=np.nan), tuple(_label_text(label) for label in labels)


def numeric_array(data: object, what: str) -> tuple[np.ndarray, tuple[str, ...] | None]:
    """``data`` as a float array, and its column names when it is a DataFrame.

    Accepts what the module's description lists; refuses the rest with an
    :class:`~spcakit.errors.InvalidDataError` that says what to do.
    """
    kind = _pandas_class(data)
    if kind == "Series":
        raise InvalidDataError(
            f"{what} is a pandas Series: one variable, but sparse PCA needs a 2-D table of samples x variables; "
            "pass a DataFrame (series.to_frame() for a single column) or a 2-D array"
        )
    if kind == "DataFrame":
        return _frame_array(data, what)
    if _is_scipy_sparse(data):
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


def _check_frame_order(frame: object) -> None:
    """A square DataFrame's index, when it lists the columns' labels, must list them in the same order."""
    if _pandas_class(frame) != "DataFrame":
        return
    rows, columns = list(frame.index), list(frame.columns)  # type: ignore[attr-defined]
    if rows != columns and len(rows) == len(columns) and set(map(repr, rows)) == set(map(repr, columns)):
        raise InvalidDataError(
            "the covariance DataFrame lists its variables in one order along the rows and another along the "
            "columns; reorder it, e.g. df.loc[df.columns, df.columns]"
        )


@attrs.frozen(eq=False)
class Covariance:
    """Mark a matrix as a covariance (or correlation) matrix, not data.

    ``spcakit.fit(spcakit.Covariance(C, feature_names=names), ...)``. ``C``
    is any numeric 2-D array, or a DataFrame whose column names become the
    variables' names (its index, when it lists them too, in the same order).
    Anything else is refused here, with :class:`~spcakit.errors.InvalidDataError`.
    """

    matrix: np.ndarray
    feature_names: tuple[str, ...] | None = attrs.field(default=None, converter=_names_converter)

    def __attrs_post_init__(self) -> None:
        _check_frame_order(self.matrix)
        matrix, names = numeric_array(self.matrix, "the covariance matrix")
        object.__setattr__(self, "matrix", matrix)
        if self.feature_names is None and names is not None:
            object.__setattr__(self, "feature_names", names)


@attrs.frozen(eq=False)
class Problem:
    """What a sparse PCA method works on.

    Attributes
    ----------
    covariance
        The covariance operator :math:`C` (explicit or matrix-free).
    feature_names
        One name per variable, in column order.
    data
        The centred data matrix :math:`A` (``n x p``), or ``None`` when only a
        covariance was given; made on first use when the covariance was formed
        without it (:class:`DeferredData`).
    source
        Where the problem came from, for reports (``builtin:pitprops``, a path).
    input
        What the problem was built from and how (kind, shape, content hash,
        centring, standardisation, the column means and scales), for the
        record of a result; ``None`` for a problem built by hand.
    constant_columns
        The positions of the columns (variables) with zero variance, in
        increasing order; empty when every column varies. Such a problem's
        covariance is zero in their rows and columns
        (:class:`~spcakit.operators.PaddedCovariance`), its data matrix zero in
        their columns, and :attr:`varying` is the problem of the other columns
        alone (see :func:`with_constant_columns`).

    Notes
    -----
    A deflator returns a new problem (a deflated covariance, a residual data
    matrix); what a method carries between rounds besides is in the run's
    :class:`~spcakit.state.Carry`, never here.
    """

    covariance: CovarianceOperator
    feature_names: tuple[str, ...]
    _data: np.ndarray | DeferredData | None = attrs.field(default=None, alias="data")
    source: str = ""
    input: InputRecord | None = None
    constant_columns: tuple[int, ...] = attrs.field(
        default=(), kw_only=True, converter=lambda columns: tuple(int(j) for j in columns)
    )
    _varying: Problem | None = attrs.field(default=None, kw_only=True, alias="varying", repr=False)

    @property
    def varying(self) -> Problem:
        """The problem of the columns that vary alone (the problem itself when none is constant): what
        :func:`spcakit.fit` runs a method on."""
        return self if self._varying is None else self._varying

    @property
    def varying_columns(self) -> np.ndarray:
        """The positions of the columns that vary (the rows of :attr:`varying`'s loadings in the full ones)."""
        return np.setdiff1d(np.arange(self.p), np.asarray(self.constant_columns, dtype=int))

    @property
    def data(self) -> np.ndarray | None:
        """The centred (scaled) data matrix, made on first use when the problem was built without it."""
        if isinstance(self._data, DeferredData):
            object.__setattr__(self, "_data", self._data.make())
        return self._data  # type: ignore[return-value]

    @property
    def data_in_memory(self) -> bool:
        """Whether the data matrix is held as an array: reading :attr:`data` then makes no copy."""
        return isinstance(self._data, np.ndarray)

    @property
    def p(self) -> int:
        return self.covariance.p

    @property
    def n_samples(self) -> int | None:
        if self._data is None:  # data held in the operator only (sparse input): the record knows n
            return self.input.shape[0] if self.input is not None and self.input.kind == "data" else None
        return self._data.shape[0]

    @property
    def max_rank(self) -> int:
        """An upper bound on rank(C): ``p``, or ``n - 1`` for centred data (``n`` for sparse data not centred)."""
        if self._data is None:
            if self.input is not None and self.input.kind == "data":
                n = self.input.shape[0]
                return min(self.p, n - 1 if self.input.center else n)
            return self.p
        return min(self.p, self._data.shape[0] - 1)


@attrs.frozen(eq=False)
class DeferredData:
    """A data matrix that :attr:`Problem.data` makes on first use (``make()``), of a known ``shape``.

    A problem whose covariance was formed in one pass over the caller's array
    (:func:`data_problem`) needs its centred copy only for the parts that read
    the data themselves; the others never pay for it. ``make()`` returns a new
    array each time, which its caller owns.
    """

    shape: tuple[int, int]
    make: Callable[[], np.ndarray]


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
    :func:`spcakit.sparse_data.sparse_content_sha256` instead (its canonical
    CSR form, whatever its format), which differs from this hash of the same
    matrix made dense.
    """
    digest = hashlib.sha256(np.asarray(matrix.shape, dtype="<u8").tobytes())
    rows = _block_rows(int(np.prod(matrix.shape[1:], dtype=np.int64)))
    for start in range(0, matrix.shape[0], rows):
        digest.update(np.ascontiguousarray(matrix[start : start + rows], dtype="<f8"))
    return digest.hexdigest()


#: Matrices of at least this many bytes are hashed on a second thread while the checks and the Gram
#: product run (hashlib and NumPy release the GIL); smaller ones are hashed before (a thread costs more).
BACKGROUND_HASH_BYTES = 1 << 20
_hash_pool: Any = None


def _start_sha256(matrix: np.ndarray) -> Callable[[], str]:
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


def default_feature_names(p: int) -> tuple[str, ...]:
    width = len(str(p))
    return tuple(f"x{j + 1:0{width}d}" for j in range(p))


def _is_scipy_sparse(data: object) -> bool:
    """Whether ``data`` is a ``scipy.sparse`` matrix or array, without importing scipy.sparse (0.1 s) when
    nothing has: a sparse matrix cannot exist before its module is imported."""
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and bool(sparse.issparse(data))


def _is_dask_array(data: object) -> bool:
    """Whether ``data`` is a ``dask.array.Array``, without importing dask: one cannot exist before its module
    is imported (see :mod:`spcakit.dask_data`)."""
    array = sys.modules.get("dask.array")
    return array is not None and isinstance(data, array.Array)


def _check_matrix(
    matrix: object, what: str, names: Sequence[str] | None = None
) -> tuple[np.ndarray, tuple[str, ...] | None]:
    """``matrix`` as a finite 2-D float array with at least one entry, and a DataFrame's column names.

    ``names`` (else the DataFrame's) name the columns in the message about NaN or infinite entries.
    """
    arr, frame_names, _ = _finite_matrix(matrix, what, names)
    return arr, frame_names


def _finite_matrix(
    matrix: object, what: str, names: Sequence[str] | None = None
) -> tuple[np.ndarray, tuple[str, ...] | None, tuple[np.ndarray, np.ndarray]]:
    """:func:`_check_matrix`, and the columns' largest and smallest values, found by the finiteness check."""
    arr, frame_names = numeric_array(matrix, what)
    if arr.ndim != 2:
        raise InvalidDataError(
            f"{what} must be a 2-D array (rows x columns); got {arr.ndim} dimension(s) "
            f"with shape {arr.shape}"
        )
    if arr.size == 0 or min(arr.shape) == 0:
        raise InvalidDataError(f"{what} is empty (shape {arr.shape}); it needs at least one row and one column")
    high, low = _column_extremes(arr)  # NaN and ±inf show in the extremes: no boolean copy of the data
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


def _check_names(names: Sequence[str] | None, p: int) -> tuple[str, ...]:
    if names is None:
        return default_feature_names(p)
    names = tuple(str(n) for n in names)
    if len(names) != p:
        raise InvalidDataError(f"got {len(names)} feature names for {p} variables; give exactly one name per column")
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise InvalidDataError(f"feature names must be unique; repeated: {', '.join(dup)}")
    return names


#: How the columns without variance of each kind of input are called in messages.
ZERO_VARIANCE_WORDS = {"covariance": "variable(s) have zero variance"}
_CONSTANT_WORDS = "column(s) are constant (zero variance)"


def zero_variance_text(indices: Sequence[int] | np.ndarray, names: Sequence[str], what: str = _CONSTANT_WORDS) -> str:
    """``"2 column(s) are constant (zero variance): 0 (x1), 4 (x5)"``: the first five named, the rest counted."""
    indices = np.asarray(indices, dtype=int)
    shown = ", ".join(f"{j} ({names[j]})" for j in indices[:5])
    more = f" and {indices.size - 5} more" if indices.size > 5 else ""
    return f"{indices.size} {what}: {shown}{more}"


def _refuse_zero_variance(indices: np.ndarray, names: tuple[str, ...], what: str) -> None:
    """Raise when no variable has variance (``indices``, those without, are all of them), naming the first few.

    Fewer are welcome: :func:`with_constant_columns` leaves them out of the fit.
    """
    if indices.size < len(names):
        return
    raise InvalidDataError(
        f"{zero_variance_text(indices, names, what)}: every one of them, so there is no variance to analyse; "
        "sparse PCA needs at least r variables that vary"
    )


def constant_columns_note(problem: Problem) -> str:
    """The warning of a fit to ``problem`` with constant columns: which they are and what becomes of them."""
    words = ZERO_VARIANCE_WORDS.get(problem.input.kind if problem.input is not None else "data", _CONSTANT_WORDS)
    text = zero_variance_text(problem.constant_columns, problem.feature_names, words)
    return (
        f"{text}; they get zero loadings in every component (the method runs on the {problem.varying.p} of the "
        f"{problem.p} that vary)"
    )


def _take_columns(data: np.ndarray | DeferredData | None, index: np.ndarray) -> np.ndarray | DeferredData | None:
    """The columns ``index`` of a data matrix (made on first use when it is)."""
    if isinstance(data, DeferredData):
        return DeferredData((data.shape[0], index.size), lambda: np.take(data.make(), index, axis=1))
    return None if data is None else np.take(data, index, axis=1)


def _zero_columns(data: np.ndarray | DeferredData | None, index: np.ndarray) -> np.ndarray | DeferredData | None:
    """A data matrix with the columns ``index`` set to 0: made on first use when it is (a deferred matrix is
    made afresh, and zeroed in place), else a copy."""

    def zeroed(matrix: np.ndarray) -> np.ndarray:
        matrix[:, index] = 0.0
        return matrix

    if isinstance(data, DeferredData):
        return DeferredData(data.shape, lambda: zeroed(data.make()))
    return None if data is None else zeroed(np.array(data, dtype=float, copy=True))


def with_constant_columns(problem: Problem, constant: Sequence[int] | np.ndarray) -> Problem:
    r"""``problem`` with its columns ``constant`` (zero variance) left out of every fit.

    Returns a problem of all the ``p`` columns whose :attr:`~Problem.varying`
    is the problem of the other :math:`p'` alone: its covariance is the
    operator's restriction to them (``restrict``: the same kind of operator,
    :math:`C_{II}`; for dense wide data and ``scipy.sparse`` data a copy of
    those columns), its data matrix their columns, its record their means and
    scales. The problem's own covariance is that restriction padded with zero
    rows and columns (:class:`~spcakit.operators.PaddedCovariance`: exactly
    zero, whatever rounding the constant columns kept after centring), its data
    matrix zero in the constant columns, its record that of all the columns.
    :func:`spcakit.fit` runs the method on :attr:`~Problem.varying`, re-embeds
    the loadings with zero rows for the constant columns, and takes the metrics
    on this problem: the trace, hence CPEV, is unchanged (constant columns add
    no variance) and the sparsities count all ``p`` variables. ``problem``
    itself is returned when ``constant`` is empty.
    """
    constant = np.unique(np.asarray(constant, dtype=int))
    if constant.size == 0:
        return problem
    p = problem.p
    keep = np.setdiff1d(np.arange(p), constant)
    operator = problem.covariance
    restrict = getattr(operator, "restrict", None)
    base = restrict(keep) if callable(restrict) else DenseCovariance(operator.submatrix(keep))
    record = problem.input
    sub_record = None
    if record is not None:
        shape = (record.shape[0], keep.size) if record.kind == "data" else (keep.size, keep.size)
        sub_record = attrs.evolve(
            record, shape=shape, mean=None if record.mean is None else record.mean[keep],
            scale=None if record.scale is None else record.scale[keep],
        )  # fmt: skip
    names = tuple(problem.feature_names[j] for j in keep)
    varying = Problem(base, names, _take_columns(problem._data, keep), problem.source, sub_record)
    return Problem(PaddedCovariance(base, keep, p), problem.feature_names, _zero_columns(problem._data, constant),
                   problem.source, record, constant_columns=constant, varying=varying)  # fmt: skip


def covariance_problem(
    matrix: object, feature_names: Sequence[str] | None = None, source: str = "", *, standardize: bool = False
) -> Problem:
    r"""Check a covariance matrix (an array or a square DataFrame) and wrap it as a :class:`Problem`.

    With ``standardize=True`` it becomes its correlation matrix
    :math:`R = D^{-1/2} C D^{-1/2}`, :math:`D = \operatorname{diag}(C)`
    (:math:`r_{ij} = c_{ij}/\sqrt{c_{ii}c_{jj}}`, unit diagonal): what
    standardised data give (see :func:`data_problem`).

    Variables whose variance :math:`c_{jj}` is zero (at most :math:`10^{-12}`
    of the largest entry) are left out of the fit with zero loadings
    (:func:`with_constant_columns`; their scale is recorded as 1); a matrix
    whose variables all have zero variance is refused.
    """
    _check_frame_order(matrix)
    c, frame_names = _check_matrix(matrix, "the covariance matrix", feature_names)
    digest = content_sha256(c)
    if c.shape[0] != c.shape[1]:
        raise InvalidDataError(
            f"a covariance matrix must be square (p x p); got shape {c.shape}. "
            "If this is a data matrix (samples x variables), drop --covariance / Covariance()."
        )
    largest = float(np.abs(c).max())
    if largest * c.shape[0] > GRAM_LIMIT:
        raise InvalidDataError(
            f"the covariance matrix's entries (up to {largest:.3g}) are too large for double precision: products "
            f"with it could overflow (p times the largest entry must stay below {GRAM_LIMIT:.3g}); rescale it, "
            "e.g. divide by a power of 10"
        )
    scale = max(largest, 1e-300)
    asym = float(np.abs(c - c.T).max())
    if asym > 1e-8 * scale:
        i, j = np.unravel_index(np.argmax(np.abs(c - c.T)), c.shape)
        raise InvalidDataError(
            f"a covariance matrix must be symmetric; entry ({i}, {j}) = {c[i, j]:.6g} but "
            f"({j}, {i}) = {c[j, i]:.6g} (largest asymmetry {asym:.3g})"
        )
    c = (c + c.T) / 2
    if c.shape[0] <= PSD_CHECK_LIMIT:
        smallest = float(np.linalg.eigvalsh(c)[0])
        if smallest < -1e-8 * scale * c.shape[0]:
            raise InvalidDataError(
                f"a covariance matrix must be positive semi-definite; its smallest eigenvalue is "
                f"{smallest:.6g} (valid: >= 0 up to rounding)"
            )
    if np.any(np.diag(c) < 0):
        raise InvalidDataError("a covariance matrix must have a non-negative diagonal (variances)")
    names = _check_names(feature_names if feature_names is not None else frame_names, c.shape[0])
    constant = np.nonzero(np.diag(c) <= 1e-12 * scale)[0]
    _refuse_zero_variance(constant, names, ZERO_VARIANCE_WORDS["covariance"])
    deviations = None
    if standardize:
        deviations = np.sqrt(np.diag(c))
        deviations[constant] = 1.0  # a variable without variance is left out of the fit (with_constant_columns)
        c /= np.outer(deviations, deviations)  # d_i d_j = d_j d_i: R stays exactly symmetric
        np.fill_diagonal(c, 1.0)
    record = InputRecord(kind="covariance", shape=c.shape, sha256=digest, center=None, standardize=standardize,
                         scale=deviations)  # fmt: skip
    return with_constant_columns(Problem(DenseCovariance(c), names, None, source, record), constant)


def _block_rows(p: int) -> int:
    """Rows of ``p`` doubles in a block of :data:`BLOCK_BYTES`."""
    return max(1, BLOCK_BYTES // max(1, 8 * p))


#: Column magnitudes between which squares and their sums over any realistic n stay normal doubles.
_SQUARES_SAFE = (1e-100, 1e100)


def _column_extremes(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


def _centred_sum_of_squares(a: np.ndarray, mean: np.ndarray | None, divisors: np.ndarray | None) -> np.ndarray:
    r""":math:`\sum_i ((a_{ij} - \mu_j)/d_j)^2` for each column, a block of columns at a time
    (:func:`~spcakit.operators.centred_column_blocks`: no copy of the data; ``None`` for no mean, no divisors)."""
    total = np.empty(a.shape[1])
    for cols, block in centred_column_blocks(a, mean, divisors):
        total[cols] = np.einsum("ij,ij->j", block, block)
    return total


def _centred_gram(a: np.ndarray, mean: np.ndarray | None, weights: np.ndarray | None) -> np.ndarray:
    r""":math:`B^\top B` for :math:`B = (A - \mathbf 1\mu^\top)\,\operatorname{diag}(w)`, a block of
    :data:`BLOCK_BYTES` of rows at a time in one reused buffer: no copy of the data (``mean`` and ``weights``
    ``None`` for none). Each block's product is a symmetric rank-k update (NumPy calls BLAS ``syrk`` for
    ``block.T @ block``).
    """
    n, p = a.shape
    if mean is None and weights is None:
        return a.T @ a
    rows = min(n, _block_rows(p))
    buffer = np.empty((rows, p))
    gram = np.zeros((p, p))
    for start in range(0, n, rows):
        block = buffer[: min(rows, n - start)]
        if mean is None:
            np.multiply(a[start : start + rows], weights, out=block)
        else:
            np.subtract(a[start : start + rows], mean, out=block)
            if weights is not None:
                block *= weights
        gram += block.T @ block
    return gram


def _centred_copy_maker(
    a: np.ndarray, mean: np.ndarray | None, divisors: np.ndarray, standardize: bool
) -> Callable[[], np.ndarray]:
    """A function making the centred copy of ``a`` (columns divided by ``divisors`` when standardising)."""

    def make() -> np.ndarray:
        with np.errstate(over="ignore", invalid="ignore"):
            data = a - mean if mean is not None else np.array(a, dtype=float, copy=True)
        if standardize:
            np.divide(data, divisors, out=data)
        return data

    return make


def _column_means(a: np.ndarray, magnitude: np.ndarray) -> np.ndarray:
    """Column means that cannot overflow: a column whose plain sum overflows is averaged scaled to at most 1."""
    with np.errstate(over="ignore", invalid="ignore"):
        mean = a.mean(axis=0)
    overflowed = np.nonzero(~np.isfinite(mean))[0]
    if overflowed.size:
        scale = magnitude[overflowed]
        mean[overflowed] = scale * (a[:, overflowed] / scale).mean(axis=0)
    return mean


def _check_double_range(
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
    floor = math.sqrt(_TINY * scale)
    small = np.nonzero(norms < floor)[0]
    if constant is not None:
        small = np.setdiff1d(small, constant)
    if small.size:
        shown = ", ".join(f"{j} ({names[j]}): {norms[j] / math.sqrt(scale):.3g}" for j in small[:SHOWN])
        more = f" and {small.size - SHOWN} more" if small.size > SHOWN else ""
        raise InvalidDataError(
            f"{small.size} column(s) have standard deviations below {math.sqrt(_TINY):.3g}, too small for a "
            f"covariance in double precision (their variances underflow): {shown}{more}; rescale them, e.g. "
            "multiply by a power of 10"
        )


def data_problem(
    matrix: object,
    feature_names: Sequence[str] | None = None,
    *,
    center: bool = True,
    standardize: bool = False,
    source: str = "",
) -> Problem:
    r"""Check a data matrix (``n`` samples x ``p`` variables; an array or a DataFrame) and wrap it.

    The covariance is the sample covariance :math:`A^\top A/(n-1)` of the
    centred data :math:`A` (or :math:`A^\top A / n` when ``center=False``):
    formed explicitly when :math:`n \ge p` and :math:`p \le`
    :data:`DENSE_COVARIANCE_LIMIT` (at most 128 MiB, and never more than the
    data themselves take), applied matrix-free otherwise, so that a wide data
    set never costs :math:`p^2` memory. Data whose covariance over- or
    underflows double precision are refused (see the module's description).

    When the covariance is formed, it is formed from the caller's array a
    block of :data:`BLOCK_BYTES` of rows at a time (centred, scaled, then a
    symmetric rank-k update), and the centred copy :math:`A` is made only if
    a part reads ``problem.data`` (:class:`DeferredData`): building the
    problem then takes the Gram matrix and one block beyond the data. The
    problem keeps a reference to the caller's array until then: do not change
    the array while the problem is in use. Otherwise (wide data, or more than
    :data:`DENSE_COVARIANCE_LIMIT` variables) the operator is a
    :class:`~spcakit.operators.GramCovariance` of the caller's array itself,
    centred (and standardised) implicitly in its products, and the checks
    run a block of columns at a time: the data are held once, and the
    centred copy is again made only if a part reads ``problem.data``.

    With ``standardize=True`` each column is divided by its standard deviation
    :math:`s_j = \|a_j\|/\sqrt{n-1}` (the root mean square
    :math:`\|a_j\|/\sqrt n` when ``center=False``), so the covariance of the
    scaled data is the correlation matrix :math:`R = D^{-1/2} C D^{-1/2}`,
    :math:`D = \operatorname{diag}(C)`, with unit diagonal. Each column
    :math:`a_j` is first divided by its largest magnitude :math:`m_j` (as for
    the range checks), the Gram matrix :math:`G` of these columns gives
    :math:`\|a_j/m_j\|^2 = G_{jj}` and :math:`R_{ij} = G_{ij}/\sqrt{G_{ii}G_{jj}}`,
    and the centred copy (when made) is divided by
    :math:`m_j\|a_j/m_j\|/\sqrt{n-1} = s_j`; nothing can overflow: values of
    any magnitude that can be centred are accepted (the range checks are then
    moot: every scaled column has norm :math:`\sqrt{n-1}`).
    The column means and the :math:`s_j` are kept in the problem's ``input``
    record.

    Constant columns (see the module's description) are left out of the fit
    (:func:`with_constant_columns`): with ``standardize=True`` they are
    divided by 1 (their recorded :math:`s_j`) and stay at zero; for wide data
    (the :class:`~spcakit.operators.GramCovariance` of the caller's array) the
    columns that vary are then copied. Data whose columns are all constant are
    refused.
    """
    if _is_scipy_sparse(matrix):  # kept sparse: the covariance centres and scales it implicitly
        from spcakit.sparse_data import sparse_problem  # noqa: PLC0415 - scipy.sparse only for sparse input

        return sparse_problem(matrix, feature_names, center=center, standardize=standardize, source=source)
    if _is_dask_array(matrix):  # read in chunks, never brought into memory whole
        from spcakit.dask_data import dask_problem  # noqa: PLC0415 - dask only for dask input

        return dask_problem(matrix, feature_names, center=center, standardize=standardize, source=source)
    a, frame_names, (high, low) = _finite_matrix(matrix, "the data matrix", feature_names)
    n, p = a.shape
    names = _check_names(feature_names if feature_names is not None else frame_names, p)
    digest = _start_sha256(a)  # hashed while the data are checked, centred and multiplied
    magnitude = np.maximum(high, -low)  # each column's largest magnitude as given (finite)
    mean = None
    if center:
        if n < 2:
            raise InvalidDataError(
                f"the data matrix has {n} row; centring needs at least 2 samples (rows)"
            )
        mean = _column_means(a, magnitude)
    # each column against its own magnitude: a constant column keeps only rounding noise (~1e-16 of its
    # values) after centring, while data of any scale (1e-13 or 1e150) keep variance of their own size;
    # the norms are taken on columns scaled to at most 1, so that huge values cannot overflow
    largest = centred_extremes(high, low, mean, magnitude) if mean is not None else magnitude
    safe = np.where(largest > 0, largest, 1.0)
    # plain: no square (nor a sum of n of them) can over- or underflow, the plain sums of squares are exact enough
    plain = not standardize and _SQUARES_SAFE[0] <= float(safe.min()) and float(largest.max()) <= _SQUARES_SAFE[1]
    scale = float(n - 1) if center else float(n)
    if n >= p and p <= DENSE_COVARIANCE_LIMIT:
        # the data already take n*p >= p*p numbers: the Gram matrix makes every later product O(p^2); it is
        # formed a block of rows at a time from the caller's array, and the centred copy is made only if a
        # part reads the data
        gram = _centred_gram(a, mean, None if plain else 1.0 / safe)
        sum_of_squares = np.diag(gram).copy()  # of the centred columns (scaled to at most 1 unless plain)
        with np.errstate(over="ignore"):
            norms = np.sqrt(sum_of_squares) if plain else largest * np.sqrt(sum_of_squares)
        data: np.ndarray | DeferredData = DeferredData((n, p), _centred_copy_maker(a, mean, safe, standardize))
    else:
        # the operator centres (and scales) the caller's array in its products: the data are held once; the
        # sums of squares are taken a block of columns at a time (scaled to at most 1 unless plain)
        gram = None
        sum_of_squares = _centred_sum_of_squares(a, mean, None if plain else safe)
        with np.errstate(over="ignore"):
            norms = np.sqrt(sum_of_squares) if plain else largest * np.sqrt(sum_of_squares)
        data = DeferredData((n, p), _centred_copy_maker(a, mean, safe, standardize))
    constant = np.nonzero(norms <= 1e-12 * magnitude * np.sqrt(n))[0]
    _refuse_zero_variance(constant, names, _CONSTANT_WORDS)
    if constant.size:  # left out of the fit: their rounding noise must not overflow below
        largest = largest.copy()
        largest[constant] = 0.0
        if gram is not None:
            gram[constant, :] = gram[:, constant] = 0.0
    deviations = None
    if standardize:
        unit = np.sqrt(sum_of_squares / scale)  # s_j / m_j, in (0, sqrt(n / scale)]
        unit[constant] = 1.0  # their rows of the Gram matrix are zero
        with np.errstate(over="ignore"):
            deviations = largest * unit
        deviations[constant] = 1.0  # as scikit-learn's StandardScaler reports a column without variance
        if gram is not None:  # the correlation matrix, from the Gram matrix of the columns scaled to at most 1
            gram = gram / np.outer(unit, unit) / scale
        divisors = safe * unit
        divisors[constant] = 1.0  # divided by 1: a constant column stays at (about) zero
        data = DeferredData((n, p), _centred_copy_maker(a, mean, divisors, True))
    else:
        _check_double_range(norms, largest, scale, names, constant)
        if gram is not None:
            with np.errstate(over="ignore", invalid="ignore"):
                gram = gram / scale if plain else gram * np.outer(largest, largest) / scale
    if gram is None:  # the caller's array itself, centred and standardised in the products
        column_scale = divisors if standardize else None
        covariance: CovarianceOperator = GramCovariance(a, scale, mean=mean, column_scale=column_scale)
    else:
        if not np.all(np.isfinite(gram)):  # excluded by the range check; kept as the last guard
            raise InvalidDataError(
                f"the data's values (up to {float(largest.max()):.3g} after centring) are too large for a covariance "
                "in double precision (its entries overflow); rescale the data, e.g. divide by a power of 10"
            )
        covariance = DenseCovariance((gram + gram.T) / 2)
    record = InputRecord(kind="data", shape=(n, p), sha256=digest(), center=center, standardize=standardize,
                         mean=mean, scale=deviations)  # fmt: skip
    return with_constant_columns(Problem(covariance, names, data, source, record), constant)


# -- choosing columns -----------------------------------------------------------------------------------
#: Column names a message lists before "and N more".
LISTED_NAMES = 12


def _name_list(items: object, option: str) -> tuple[str, ...] | None:
    """``columns=``/``drop=`` as a tuple of names: one name (a string) or a sequence of them."""
    if items is None:
        return None
    if isinstance(items, (str, int, np.integer)) and not isinstance(items, bool):
        return (str(items),)
    if isinstance(items, Iterable) and not isinstance(items, (bytes, Mapping)):
        values = list(items)
        if all(isinstance(v, (str, int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in values):
            return tuple(str(v) for v in values)
    raise InvalidParameterError(
        f"{option} takes column names: a name or a list of names, e.g. {option}=['age', 'income']; got {items!r}"
    )


def unknown_column_message(name: str, names: Sequence[str], option: str) -> str:
    """``option`` named ``name``, which is not among ``names``: say so, suggest close names, list the valid ones."""
    folded = [n for n in names if n.casefold() == name.casefold()]
    close = folded or difflib.get_close_matches(name, list(names), n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    listed = ", ".join(names[:LISTED_NAMES]) + (f" and {len(names) - LISTED_NAMES} more" if len(names) > LISTED_NAMES else "")
    return f"{option}: the data have no column {name!r}{hint} (the {len(names)} columns: {listed})"


def column_positions(
    names: Sequence[str], columns: Sequence[str] | None = None, drop: Sequence[str] | None = None
) -> list[int]:
    """The positions of the columns to use: those named in ``columns`` (all by default), in that
    order, less those named in ``drop``.

    Every name must be a column's (a misspelt one is refused with the closest
    names); a name given twice in ``columns``, and a selection that leaves no
    column, are refused too (:class:`~spcakit.errors.InvalidParameterError`).
    """
    position = {name: j for j, name in enumerate(names)}
    for option, given in (("columns", columns), ("drop", drop)):
        for name in given or ():
            if name not in position:
                raise InvalidParameterError(unknown_column_message(name, names, option))
    if columns is not None:
        twice = sorted(name for name, count in Counter(columns).items() if count > 1)
        if twice:
            raise InvalidParameterError(f"columns: {', '.join(map(repr, twice))} named more than once; name each column once")
    kept = list(columns) if columns is not None else list(names)
    dropped = set(drop or ())
    chosen = [position[name] for name in kept if name not in dropped]
    if not chosen:
        raise InvalidParameterError(
            f"no column is left after {'columns= and drop=' if columns is not None and drop else 'drop=' if drop else 'columns='}"
            f" ({len(names)} column(s): {', '.join(names[:LISTED_NAMES])}); keep at least one"
        )
    return chosen


def unread_columns(
    source: str | os.PathLike[str], columns: Sequence[str] | None, drop: Sequence[str] | None
) -> frozenset[str]:
    """The columns of a CSV/TSV ``source`` that need not be read as numbers: those dropped and those not kept.

    :func:`~spcakit.datasets.load_source` leaves their cells unread, so that they may hold text (labels,
    IDs); other sources need no such care (they hold numbers only).
    """
    unread = set(drop or ())
    path = Path(source)
    if columns is not None and path.suffix.lower() in (".csv", ".tsv") and path.is_file():
        try:
            unread |= set(csv_layout(path).names) - set(columns)
        except OSError:
            pass  # load_source says what is wrong with the file
    return frozenset(unread)


def _table_names(data: object, feature_names: Sequence[str] | None, p: int) -> tuple[str, ...]:
    """The names ``columns=``/``drop=`` refer to: ``feature_names``, a DataFrame's labels, or the default names."""
    if feature_names is None and _pandas_class(data) == "DataFrame":
        feature_names = [_label_text(label) for label in data.columns]  # type: ignore[attr-defined]
    return _check_names(feature_names, p)  # unique, one per column


def _selected(
    data: object, covariance: bool, feature_names: Sequence[str] | None, columns: tuple[str, ...] | None,
    drop: tuple[str, ...] | None,
) -> tuple[object, tuple[str, ...] | None]:
    """The table with only the chosen columns (rows too, for a covariance), and their names.

    A DataFrame holding data is cut before its values are read, so that the
    non-numeric columns it drops (labels, IDs) never need to be numbers.
    """
    if _pandas_class(data) == "DataFrame" and not covariance:
        names = _table_names(data, feature_names, data.shape[1])  # type: ignore[attr-defined]
        chosen = column_positions(names, columns, drop)
        return data.iloc[:, chosen], tuple(names[j] for j in chosen)  # type: ignore[attr-defined]
    if covariance:
        _check_frame_order(data)
    what = "the covariance matrix" if covariance else "the data matrix"
    matrix, _ = numeric_array(data, what)
    if matrix.ndim != 2 or (covariance and matrix.shape[0] != matrix.shape[1]):
        return data, None  # not a table: the builder says what is wrong
    names = _table_names(data, feature_names, matrix.shape[1])
    chosen = column_positions(names, columns, drop)
    picked = matrix[np.ix_(chosen, chosen)] if covariance else matrix[:, chosen]
    return picked, tuple(names[j] for j in chosen)


def as_problem(
    data: object,
    *,
    covariance: bool = False,
    center: bool = True,
    standardize: bool = False,
    feature_names: Sequence[str] | None = None,
    columns: Sequence[str] | str | None = None,
    drop: Sequence[str] | str | None = None,
    source: str = "",
) -> Problem:
    """Turn what a user passed into a :class:`Problem`.

    ``data`` may be a :class:`Problem`, a :class:`Covariance`, a
    :class:`~spcakit.operators.CovarianceOperator`, a source as the CLI's
    ``--data`` takes (``"builtin:pitprops"``, a ``.npy``/``.npz``/``.csv``/
    ``.tsv`` path, as a string or a :class:`pathlib.Path`), or a table: a
    NumPy array, nested lists or a pandas DataFrame (whose column names become
    the variables' names) - a data matrix by default, a covariance matrix when
    ``covariance=True``. Booleans count as 0 and 1; text, dates, Python objects,
    a pandas Series and ``scipy.sparse`` covariance matrices are refused with
    :class:`~spcakit.errors.InvalidDataError` (see the module's description);
    a ``scipy.sparse`` data matrix (or a sparse ``.npz``/``.mtx`` file) is
    taken as it is, never densified (:func:`spcakit.sparse_data.sparse_problem`),
    and a ``dask.array.Array`` data matrix (or a ``.zarr`` store) is read in
    chunks, never whole (:func:`spcakit.dask_data.dask_problem`).

    ``standardize=True`` works on the correlation scale: data columns are
    scaled to unit variance, a covariance becomes its correlation matrix
    (see :func:`data_problem`, :func:`covariance_problem`).

    ``columns`` keeps only the named columns (in that order), ``drop`` removes
    the named ones - an ID or label column, say; a DataFrame's non-numeric
    columns must be dropped so. Names are a DataFrame's column labels (as
    text), ``feature_names``, a file's header, or the default names (``x1``,
    ``x2``, ..., zero-padded to one width: ``x01`` from ten columns on); for a
    covariance matrix the rows go with the columns.
    A Problem or an operator is used as it is: it takes neither.
    """
    column_names, dropped = _name_list(columns, "columns"), _name_list(drop, "drop")
    selecting = column_names is not None or dropped is not None
    if isinstance(data, Problem) or (
        not isinstance(data, np.ndarray) and _pandas_class(data) is None and isinstance(data, CovarianceOperator)
    ):
        if selecting or standardize:
            given = ", ".join(k for k, v in (("columns", column_names), ("drop", dropped), ("standardize", standardize)) if v)
            kind = "spcakit.Problem" if isinstance(data, Problem) else "covariance operator"
            raise InvalidParameterError(
                f"a {kind} is used as it is, so {given} cannot apply to it; pass the data matrix or the covariance "
                "matrix itself (as an array, DataFrame, spcakit.Covariance or file) to have it standardised or its "
                "columns chosen"
            )
        if isinstance(data, Problem):
            return data
        record = InputRecord(kind="operator", shape=(data.p, data.p), sha256=None, center=None)
        return Problem(data, _check_names(feature_names, data.p), None, source, record)
    if isinstance(data, (str, os.PathLike)):
        dataset = load_source(data, unread_columns(data, column_names, dropped))
        covariance = covariance or dataset.is_covariance
        matrix: object = dataset.matrix
        names = feature_names or dataset.feature_names
        source = dataset.source
    elif isinstance(data, Covariance):
        covariance, matrix, names = True, data.matrix, feature_names or data.feature_names
    else:
        matrix, names = data, feature_names
    if not covariance and _is_scipy_sparse(matrix):
        from spcakit.sparse_data import sparse_problem  # noqa: PLC0415 - scipy.sparse only for sparse input

        return sparse_problem(matrix, names, center=center, standardize=standardize, source=source,
                              columns=column_names, drop=dropped)  # fmt: skip
    if not covariance and _is_dask_array(matrix):
        from spcakit.dask_data import dask_problem  # noqa: PLC0415 - dask only for dask input

        return dask_problem(matrix, names, center=center, standardize=standardize, source=source,
                            columns=column_names, drop=dropped)  # fmt: skip
    if selecting:
        matrix, chosen = _selected(matrix, covariance, names, column_names, dropped)
        names = chosen if chosen is not None else names
    if covariance:
        return covariance_problem(matrix, names, source, standardize=standardize)
    return data_problem(matrix, names, center=center, standardize=standardize, source=source)
