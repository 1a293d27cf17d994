r"""The input of every method: a covariance operator, its variables' names, and
(when given) the centred data matrix it came from.

:func:`as_problem` checks what users pass and says precisely what is wrong:
NaN or infinite entries (naming the column), an empty matrix, constant
columns, a covariance that is not square, not symmetric, or not positive
semi-definite, values outside what double precision can square.

What counts as numbers
----------------------
Arrays (or nested lists) of floats, integers or booleans - ``True`` is 1 and
``False`` 0, as in NumPy - and pandas DataFrames whose columns are all numeric
or boolean: their column names become the variables' names (unless
``feature_names`` is given) and their index is ignored. Refused, each with a
message saying what to do instead: arrays of text, dates, times, records or
Python objects that are not numbers; a DataFrame's non-numeric columns (by
name); a pandas Series (one variable); masked arrays with masked entries;
complex numbers; ``scipy.sparse`` matrices (not supported yet: the message
gives the size ``.toarray()`` would take). spcakit never imports pandas: a
DataFrame is recognised by its class.

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
into range.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np
import scipy.sparse

from spcakit.datasets import load_source
from spcakit.errors import SHOWN, InvalidDataError, format_size
from spcakit.operators import CovarianceOperator, DenseCovariance, GramCovariance

#: Largest dimension for which a covariance is checked for PSD by eigenvalues.
PSD_CHECK_LIMIT = 3000
#: Data with n >= p and p at most this get an explicit covariance; otherwise it is applied matrix-free.
DENSE_COVARIANCE_LIMIT = 4000
#: Largest sum of squares of the centred data (and p times the largest entry of a covariance): the
#: largest double with 16 bits of headroom for the sums the parts form.
GRAM_LIMIT = float(np.finfo(float).max) * 2.0**-16
_TINY = float(np.finfo(float).tiny)

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
            f"sparse PCA needs numbers: drop them (df.drop(columns={[label for label, _ in bad]!r})) or keep the "
            f"numeric ones (df.select_dtypes('number')){as_text}"
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
    if scipy.sparse.issparse(data):
        shape = tuple(int(d) for d in data.shape)  # type: ignore[attr-defined]
        raise InvalidDataError(
            f"{what} is a scipy.sparse {type(data).__name__} of shape {shape} with {int(data.nnz):,} stored entries "  # type: ignore[attr-defined]
            "(sparse input is not supported yet); convert it with .toarray() if the dense array fits in memory: it "
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
        covariance was given.
    source
        Where the problem came from, for reports (``builtin:pitprops``, a path).

    A deflator returns a new problem (a deflated covariance, a residual data
    matrix); what a method carries between rounds besides is in the run's
    :class:`~spcakit.state.Carry`, never here.
    """

    covariance: CovarianceOperator
    feature_names: tuple[str, ...]
    data: np.ndarray | None = None
    source: str = ""

    @property
    def p(self) -> int:
        return self.covariance.p

    @property
    def n_samples(self) -> int | None:
        return None if self.data is None else self.data.shape[0]

    @property
    def max_rank(self) -> int:
        """An upper bound on rank(C): ``p``, or ``n - 1`` for centred data."""
        if self.data is None:
            return self.p
        return min(self.p, self.data.shape[0] - 1)


def default_feature_names(p: int) -> tuple[str, ...]:
    width = len(str(p))
    return tuple(f"x{j + 1:0{width}d}" for j in range(p))


def _check_matrix(
    matrix: object, what: str, names: Sequence[str] | None = None
) -> tuple[np.ndarray, tuple[str, ...] | None]:
    """``matrix`` as a finite 2-D float array with at least one entry, and a DataFrame's column names.

    ``names`` (else the DataFrame's) name the columns in the message about NaN or infinite entries.
    """
    arr, frame_names = numeric_array(matrix, what)
    if arr.ndim != 2:
        raise InvalidDataError(
            f"{what} must be a 2-D array (rows x columns); got {arr.ndim} dimension(s) "
            f"with shape {arr.shape}"
        )
    if arr.size == 0 or min(arr.shape) == 0:
        raise InvalidDataError(f"{what} is empty (shape {arr.shape}); it needs at least one row and one column")
    bad = ~np.isfinite(arr)
    if bad.any():
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
    return arr, frame_names


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


def _refuse_zero_variance(indices: np.ndarray, names: tuple[str, ...], what: str) -> None:
    """Raise for variables without variance, naming the first few."""
    if indices.size == 0:
        return
    shown = ", ".join(f"{j} ({names[j]})" for j in indices[:5])
    more = f" and {indices.size - 5} more" if indices.size > 5 else ""
    raise InvalidDataError(
        f"{indices.size} {what}: {shown}{more}; they carry no variance - remove them before sparse PCA"
    )


def covariance_problem(
    matrix: object, feature_names: Sequence[str] | None = None, source: str = ""
) -> Problem:
    """Check a covariance matrix (an array or a square DataFrame) and wrap it as a :class:`Problem`."""
    _check_frame_order(matrix)
    c, frame_names = _check_matrix(matrix, "the covariance matrix", feature_names)
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
    _refuse_zero_variance(np.nonzero(np.diag(c) <= 1e-12 * scale)[0], names, "variable(s) have zero variance")
    return Problem(DenseCovariance(c), names, None, source)


def _column_means(a: np.ndarray, magnitude: np.ndarray) -> np.ndarray:
    """Column means that cannot overflow: a column whose plain sum overflows is averaged scaled to at most 1."""
    with np.errstate(over="ignore", invalid="ignore"):
        mean = a.mean(axis=0)
    overflowed = np.nonzero(~np.isfinite(mean))[0]
    if overflowed.size:
        scale = magnitude[overflowed]
        mean[overflowed] = scale * (a[:, overflowed] / scale).mean(axis=0)
    return mean


def _check_double_range(norms: np.ndarray, largest: np.ndarray, scale: float, names: tuple[str, ...]) -> None:
    """Refuse data whose covariance over- or underflows (see the module's description).

    ``norms`` are the centred columns' Euclidean norms, ``largest`` their largest magnitudes.
    """
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
    """
    a, frame_names = _check_matrix(matrix, "the data matrix", feature_names)
    n, p = a.shape
    names = _check_names(feature_names if feature_names is not None else frame_names, p)
    magnitude = np.abs(a).max(axis=0)  # each column's largest value as given (finite)
    if center:
        if n < 2:
            raise InvalidDataError(
                f"the data matrix has {n} row; centring needs at least 2 samples (rows)"
            )
        with np.errstate(over="ignore", invalid="ignore"):
            a = a - _column_means(a, magnitude)
        if 2 * float(magnitude.max()) > np.finfo(float).max and not np.all(np.isfinite(a)):
            raise InvalidDataError(
                f"the data's values (up to {float(magnitude.max()):.3g}) are too large to centre in double precision "
                "(differences between them overflow); rescale the data, e.g. divide by a power of 10"
            )
    # each column against its own magnitude: a constant column keeps only rounding noise (~1e-16 of its
    # values) after centring, while data of any scale (1e-13 or 1e150) keep variance of their own size;
    # the norms are taken on columns scaled to at most 1, so that huge values cannot overflow
    largest = np.abs(a).max(axis=0)
    safe = np.where(largest > 0, largest, 1.0)
    scaled = a / safe
    with np.errstate(over="ignore"):
        norms = largest * np.sqrt(np.einsum("ij,ij->j", scaled, scaled))
    del scaled
    constant = np.nonzero(norms <= 1e-12 * magnitude * np.sqrt(n))[0]
    _refuse_zero_variance(constant, names, "column(s) are constant (zero variance)")
    scale = float(n - 1) if center else float(n)
    _check_double_range(norms, largest, scale, names)
    if n >= p and p <= DENSE_COVARIANCE_LIMIT:
        # the data already take n*p >= p*p numbers: one Gram product makes every later product O(p^2)
        with np.errstate(over="ignore", invalid="ignore"):
            gram = a.T @ a / scale
        if not np.all(np.isfinite(gram)):  # excluded by the range check; kept as the last guard
            raise InvalidDataError(
                f"the data's values (up to {float(largest.max()):.3g} after centring) are too large for a covariance "
                "in double precision (its entries overflow); rescale the data, e.g. divide by a power of 10"
            )
        return Problem(DenseCovariance((gram + gram.T) / 2), names, a, source)
    return Problem(GramCovariance(a, scale), names, a, source)


def as_problem(
    data: object,
    *,
    covariance: bool = False,
    center: bool = True,
    feature_names: Sequence[str] | None = None,
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
    a pandas Series and ``scipy.sparse`` matrices are refused with
    :class:`~spcakit.errors.InvalidDataError` (see the module's description).
    """
    if isinstance(data, Problem):
        return data
    if isinstance(data, (str, os.PathLike)):
        dataset = load_source(data)
        if dataset.is_covariance or covariance:
            return covariance_problem(dataset.matrix, feature_names or dataset.feature_names, dataset.source)
        return data_problem(dataset.matrix, feature_names or dataset.feature_names, center=center, source=dataset.source)
    if isinstance(data, Covariance):
        return covariance_problem(data.matrix, feature_names or data.feature_names, source)
    if not isinstance(data, np.ndarray) and _pandas_class(data) is None and isinstance(data, CovarianceOperator):
        return Problem(data, _check_names(feature_names, data.p), None, source)
    if covariance:
        return covariance_problem(data, feature_names, source)
    return data_problem(data, feature_names, center=center, source=source)


#: The former name of :func:`as_problem`, kept so that existing code keeps working.
make_problem = as_problem
