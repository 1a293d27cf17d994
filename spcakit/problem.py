r"""The input of every method: a covariance operator, its variables' names, and
(when given) the centred data matrix it came from.

:func:`as_problem` checks what users pass and says precisely what is wrong:
NaN or infinite entries, an empty matrix, constant columns, a covariance that
is not square, not symmetric, or not positive semi-definite.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np

from spcakit.datasets import load_source
from spcakit.errors import InvalidDataError
from spcakit.operators import CovarianceOperator, DenseCovariance, GramCovariance

#: Largest dimension for which a covariance is checked for PSD by eigenvalues.
PSD_CHECK_LIMIT = 3000
#: Data with n >= p and p at most this get an explicit covariance; otherwise it is applied matrix-free.
DENSE_COVARIANCE_LIMIT = 4000


def _names_converter(names: Sequence[str] | None) -> tuple[str, ...] | None:
    return None if names is None else tuple(str(n) for n in names)


@attrs.frozen(eq=False)
class Covariance:
    """Mark a matrix as a covariance (or correlation) matrix, not data.

    ``spcakit.fit(spcakit.Covariance(C, feature_names=names), ...)``.
    """

    matrix: np.ndarray = attrs.field(converter=lambda m: np.asarray(m, dtype=float))
    feature_names: tuple[str, ...] | None = attrs.field(
        default=None, converter=_names_converter
    )


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


def _check_matrix(matrix: np.ndarray, what: str) -> np.ndarray:
    if np.iscomplexobj(matrix):
        raise InvalidDataError(f"{what} is complex; sparse PCA here needs real numbers")
    try:
        arr = np.asarray(matrix, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InvalidDataError(f"{what} must be numeric: {exc}") from None
    if arr.ndim != 2:
        raise InvalidDataError(
            f"{what} must be a 2-D array (rows x columns); got {arr.ndim} dimension(s) "
            f"with shape {arr.shape}"
        )
    if arr.size == 0 or min(arr.shape) == 0:
        raise InvalidDataError(f"{what} is empty (shape {arr.shape}); it needs at least one row and one column")
    bad = ~np.isfinite(arr)
    if bad.any():
        rows, cols = np.nonzero(bad)
        kind = "NaN" if np.isnan(arr[rows[0], cols[0]]) else "infinite"
        raise InvalidDataError(
            f"{what} has {int(bad.sum())} NaN or infinite entr{'y' if bad.sum() == 1 else 'ies'} "
            f"(first: {kind} at row {rows[0]}, column {cols[0]}); all entries must be finite numbers"
        )
    return arr


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
    matrix: np.ndarray, feature_names: Sequence[str] | None = None, source: str = ""
) -> Problem:
    """Check a covariance matrix and wrap it as a :class:`Problem`."""
    c = _check_matrix(matrix, "the covariance matrix")
    if c.shape[0] != c.shape[1]:
        raise InvalidDataError(
            f"a covariance matrix must be square (p x p); got shape {c.shape}. "
            "If this is a data matrix (samples x variables), drop --covariance / Covariance()."
        )
    scale = max(float(np.abs(c).max()), 1e-300)
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
    names = _check_names(feature_names, c.shape[0])
    _refuse_zero_variance(np.nonzero(np.diag(c) <= 1e-12 * scale)[0], names, "variable(s) have zero variance")
    return Problem(DenseCovariance(c), names, None, source)


def data_problem(
    matrix: np.ndarray,
    feature_names: Sequence[str] | None = None,
    *,
    center: bool = True,
    source: str = "",
) -> Problem:
    r"""Check a data matrix (``n`` samples x ``p`` variables) and wrap it.

    The covariance is the sample covariance :math:`A^\top A/(n-1)` of the
    centred data :math:`A` (or :math:`A^\top A / n` when ``center=False``):
    formed explicitly when :math:`n \ge p` (and ``p`` is moderate), applied
    matrix-free otherwise, so that a wide data set never costs :math:`p^2` memory.
    """
    a = _check_matrix(matrix, "the data matrix")
    n, p = a.shape
    if center:
        if n < 2:
            raise InvalidDataError(
                f"the data matrix has {n} row; centring needs at least 2 samples (rows)"
            )
        a = a - a.mean(axis=0)
    names = _check_names(feature_names, p)
    # each column against its own magnitude: a constant column keeps only rounding noise (~1e-16 of its
    # values) after centring, while data of any scale (1e-13 or 1e150) keep variance of their own size;
    # the norms are taken on columns scaled to at most 1, so that huge values cannot overflow
    largest = np.abs(a).max(axis=0)
    safe = np.where(largest > 0, largest, 1.0)
    norms = largest * np.sqrt(np.einsum("ij,ij->j", a / safe, a / safe))
    magnitude = np.abs(np.asarray(matrix, dtype=float)).max(axis=0)
    constant = np.nonzero(norms <= 1e-12 * magnitude * np.sqrt(n))[0]
    _refuse_zero_variance(constant, names, "column(s) are constant (zero variance)")
    scale = float(n - 1) if center else float(n)
    if n >= p and p <= DENSE_COVARIANCE_LIMIT:
        # the data already take n*p >= p*p numbers: one Gram product makes every later product O(p^2)
        with np.errstate(over="ignore", invalid="ignore"):
            gram = a.T @ a / scale
        if not np.all(np.isfinite(gram)):
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
    :class:`~spcakit.operators.CovarianceOperator`, a source string as the CLI's
    ``--data`` takes (``"builtin:pitprops"``, a ``.npy``/``.npz``/``.csv``
    path), or an array: a data matrix by default, a covariance matrix when
    ``covariance=True``.
    """
    if isinstance(data, Problem):
        return data
    if isinstance(data, str):
        dataset = load_source(data)
        if dataset.is_covariance or covariance:
            return covariance_problem(dataset.matrix, feature_names or dataset.feature_names, dataset.source)
        return data_problem(dataset.matrix, feature_names or dataset.feature_names, center=center, source=dataset.source)
    if isinstance(data, Covariance):
        return covariance_problem(data.matrix, feature_names or data.feature_names, source)
    if not isinstance(data, np.ndarray) and isinstance(data, CovarianceOperator):
        return Problem(data, _check_names(feature_names, data.p), None, source)
    if covariance:
        return covariance_problem(data, feature_names, source)  # type: ignore[arg-type]
    return data_problem(data, feature_names, center=center, source=source)  # type: ignore[arg-type]


#: The former name of :func:`as_problem`, kept so that existing code keeps working.
make_problem = as_problem
