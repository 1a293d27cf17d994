r"""Data with missing values, read for imputation (:mod:`spcakit.workflows.imputation`): where the gaps are, what was seen.

A missing value is a NaN entry of a dense matrix or DataFrame, a *stored* NaN entry of a ``scipy.sparse``
matrix (its implicit zeros are observed zeros), or an empty or ``NA`` cell of a CSV file (read as NaN:
:func:`spcakit.inputs.csv_files.load_csv` with ``missing=True``, :func:`spcakit.inputs.loaded_source`). Infinite entries are never missing: they
are refused wherever they appear. :func:`read_missing` takes the matrix as :func:`spcakit.inputs.as_problem`
would (the same column choice and names; :func:`spcakit.inputs.read_missing`), as a float64 copy that the imputation may overwrite: a dense array,
or a CSR matrix whose missing entries stay stored entries (never densified); :func:`observed_means` gives the
first fill, :func:`set_missing` writes imputed values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from spcakit.core.errors import InvalidDataError
from spcakit.inputs.checks import HASH_LIMIT, check_names, content_sha256, numeric_array
from spcakit.inputs.columns import selected_columns


@attrs.frozen(kw_only=True, eq=False)
class MissingData:
    """A data matrix with missing entries, read for imputation.

    ``matrix`` is the caller's to overwrite (a float64 copy: C-ordered ``ndarray``, or canonical CSR whose
    ``data`` hold the missing entries as stored values); ``rows``/``cols`` locate the missing entries, and
    ``positions`` (CSR only) their indices in ``matrix.data``. ``sha256`` is the content hash of the data as
    given, with their NaN (``None`` when too large to hash, as for complete data).
    """

    matrix: Any
    names: tuple[str, ...]
    rows: np.ndarray
    cols: np.ndarray
    positions: np.ndarray | None
    sha256: str | None

    @property
    def sparse(self) -> bool:
        return self.positions is not None

    @property
    def count(self) -> int:
        return int(self.rows.size)

    @property
    def fraction(self) -> float:
        n, p = self.matrix.shape
        return self.count / (n * p)


def dense_missing(
    matrix: object, names: Sequence[str] | None, columns: Sequence[str] | None = None, drop: Sequence[str] | None = None
) -> MissingData:
    """A dense matrix or DataFrame (NaN where values are missing) as :class:`MissingData`, its columns chosen by
    ``columns``/``drop`` as :func:`~spcakit.inputs.as_problem` chooses them (reached through
    :func:`spcakit.inputs.read_missing`, which dispatches ``scipy.sparse`` data to
    :func:`spcakit.inputs.sparse.sparse_missing`). Infinite entries are refused: they are not missing values."""
    if columns is not None or drop is not None:
        matrix, chosen_names = selected_columns(matrix, False, names, tuple(columns or ()) or None, tuple(drop or ()) or None)
        names = chosen_names if chosen_names is not None else names
    arr, frame_names = numeric_array(matrix, "the data matrix")
    if arr.ndim != 2 or arr.size == 0:
        raise InvalidDataError(f"the data matrix must be a nonempty 2-D array; got shape {arr.shape}")
    a = np.array(arr, dtype=np.float64, order="C", copy=True)
    refuse_infinite(a)
    rows, cols = np.nonzero(np.isnan(a))
    return MissingData(matrix=a, names=check_names(names if names is not None else frame_names, a.shape[1]),
                       rows=rows.astype(np.int64), cols=cols.astype(np.int64), positions=None,
                       sha256=content_sha256(a) if a.nbytes <= HASH_LIMIT else None)  # fmt: skip


def refuse_infinite(values: np.ndarray) -> None:
    count = int(np.isinf(values).sum())
    if count:
        raise InvalidDataError(
            f"the data matrix has {count} infinite entr{'y' if count == 1 else 'ies'}; missing values (NaN) can be "
            "imputed, infinite ones cannot: replace them by finite numbers or by NaN"
        )


def missing_values(data: MissingData) -> np.ndarray:
    """The values now held at the missing entries (NaN before the first fill)."""
    if data.positions is not None:
        return data.matrix.data[data.positions].copy()  # type: ignore[no-any-return]
    return data.matrix[data.rows, data.cols]  # type: ignore[no-any-return]


def set_missing(data: MissingData, values: np.ndarray) -> None:
    """Write ``values`` (one per missing entry) into the matrix, in place (the matrix is the imputation's own)."""
    if data.positions is not None:
        data.matrix.data[data.positions] = values
    else:
        data.matrix[data.rows, data.cols] = values


def observed_means(data: MissingData, weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    r"""Each column's (weighted) mean over its observed entries, and which columns have none observed.

    :math:`\bar a_j = \sum_{i \in O_j} w_i a_{ij} / \sum_{i \in O_j} w_i`, :math:`O_j` the rows where column
    :math:`j` is observed (``weights`` ``None``: all :math:`w_i = 1`); a sparse matrix's implicit zeros are
    observed. A column with no observed entry (or only rows of weight 0) has mean 0 and is flagged.
    """
    n, p = data.matrix.shape
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    if data.positions is not None:
        x = data.matrix
        observed = ~np.isnan(x.data)
        row_of = np.repeat(np.arange(n), np.diff(x.indptr))
        sums = np.bincount(x.indices[observed], weights=x.data[observed] * w[row_of[observed]], minlength=p)
    else:
        filled = np.where(np.isnan(data.matrix), 0.0, data.matrix)
        sums = w @ filled
    total = np.full(p, w.sum()) - np.bincount(data.cols, weights=w[data.rows], minlength=p)
    empty = total <= 0
    means = np.divide(sums, total, out=np.zeros(p), where=~empty)
    return means, empty


def observed_deviations(data: MissingData) -> np.ndarray:
    """Each column's standard deviation over its observed entries (unweighted; 1 where it is 0 or undefined):
    the scale in which :mod:`spcakit.workflows.imputation` measures the change of the imputed values."""
    n, p = data.matrix.shape
    if data.positions is not None:
        x = data.matrix
        observed = ~np.isnan(x.data)
        counts = np.full(p, float(n)) - np.bincount(data.cols, minlength=p)
        sums = np.bincount(x.indices[observed], weights=x.data[observed], minlength=p)
        squares = np.bincount(x.indices[observed], weights=x.data[observed] ** 2, minlength=p)
        safe = np.maximum(counts, 1.0)
        variance = np.maximum(squares / safe - (sums / safe) ** 2, 0.0)
        deviations = np.sqrt(variance)
        deviations[counts < 2] = 0.0
    else:
        import warnings  # noqa: PLC0415

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: NaN, replaced below
            deviations = np.nanstd(data.matrix, axis=0)
    return np.where(np.isfinite(deviations) & (deviations > 0), deviations, 1.0)  # type: ignore[no-any-return]
