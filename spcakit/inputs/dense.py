r"""Dense inputs: a data matrix (:func:`data_problem`) or a covariance matrix (:func:`covariance_problem`,
:class:`Covariance`) held as NumPy arrays.

The covariance of data is formed explicitly when :math:`n \ge p` and :math:`p \le`
:data:`DENSE_COVARIANCE_LIMIT`, a block of rows at a time, and applied matrix-free otherwise; the
centred copy is made only when a part reads it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs
import numpy as np

from spcakit.core.errors import InvalidDataError, listed
from spcakit.inputs.checks import (
    GRAM_LIMIT,
    SQUARES_SAFE,
    block_rows,
    centred_extremes,
    check_double_range,
    check_frame_order,
    check_names,
    finite_matrix,
    gram_from_scan,
    hash_skipped_text,
    is_dask_array,
    is_scipy_sparse,
    names_converter,
    numeric_array,
    refuse_zero_variance,
    row_blocks,
)
from spcakit.inputs.weights import check_weights, weights_summary
from spcakit.numerics.operators import (
    DENSE_COVARIANCE_LIMIT,
    CovarianceOperator,
    DenseCovariance,
    GramCovariance,
    centred_column_blocks,
)
from spcakit.inputs.problem import CONSTANT_WORDS, ZERO_VARIANCE_WORDS, DeferredData, Problem, with_constant_columns
from spcakit.inputs.records import InputRecord

#: Largest dimension for which a covariance is checked for PSD by eigenvalues.
PSD_CHECK_LIMIT = 3000




@attrs.frozen(eq=False)
class Covariance:
    """Mark a matrix as a covariance (or correlation) matrix, not data.

    ``spcakit.fit(spcakit.Covariance(C, feature_names=names), ...)``. ``C``
    is any numeric 2-D array, or a DataFrame whose column names become the
    variables' names (its index, when it lists them too, in the same order).
    Anything else is refused here, with :class:`~spcakit.core.errors.InvalidDataError`.
    """

    matrix: np.ndarray
    feature_names: tuple[str, ...] | None = attrs.field(default=None, converter=names_converter)

    def __attrs_post_init__(self) -> None:
        check_frame_order(self.matrix)
        matrix, names = numeric_array(self.matrix, "the covariance matrix")
        object.__setattr__(self, "matrix", matrix)
        if self.feature_names is None and names is not None:
            object.__setattr__(self, "feature_names", names)


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
    check_frame_order(matrix)
    c, frame_names, scan = finite_matrix(matrix, "the covariance matrix", feature_names, sha256=True)
    if c.shape[0] != c.shape[1]:
        raise InvalidDataError(
            f"a covariance matrix must be square (p x p); got shape {c.shape}. "
            "If this is a data matrix (samples x variables), drop --covariance / Covariance()."
        )
    largest = float(max(scan.high.max(), -scan.low.min()))  # max |c_ij|, from the pass's extremes
    if largest * c.shape[0] > GRAM_LIMIT:
        raise InvalidDataError(
            f"the covariance matrix's entries (up to {largest:.3g}) are too large for double precision: products "
            f"with it could overflow (p times the largest entry must stay below {GRAM_LIMIT:.3g}); rescale it, "
            "e.g. divide by a power of 10"
        )
    scale = max(largest, 1e-300)
    asymmetry = np.abs(c - c.T)
    asym = float(asymmetry.max())
    if asym > 1e-8 * scale:
        i, j = np.unravel_index(np.argmax(asymmetry), c.shape)
        raise InvalidDataError(
            f"a covariance matrix must be symmetric; entry ({i}, {j}) = {c[i, j]:.6g} but "
            f"({j}, {i}) = {c[j, i]:.6g} (largest asymmetry {asym:.3g})"
        )
    del asymmetry
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
    names = check_names(feature_names if feature_names is not None else frame_names, c.shape[0])
    constant = np.nonzero(np.diag(c) <= 1e-12 * scale)[0]
    refuse_zero_variance(constant, names, ZERO_VARIANCE_WORDS["covariance"])
    deviations = None
    if standardize:
        deviations = np.sqrt(np.diag(c))
        deviations[constant] = 1.0  # a variable without variance is left out of the fit (with_constant_columns)
        c /= np.outer(deviations, deviations)  # d_i d_j = d_j d_i: R stays exactly symmetric
        np.fill_diagonal(c, 1.0)
    record = InputRecord(kind="covariance", shape=c.shape, sha256=scan.sha256, center=None, standardize=standardize,
                         scale=deviations, sha256_skipped=None if scan.sha256 else hash_skipped_text(c.nbytes))  # fmt: skip
    return with_constant_columns(Problem(DenseCovariance(c), names, None, source, record), constant)


def _centred_sum_of_squares(a: np.ndarray, mean: np.ndarray | None, divisors: np.ndarray | None) -> np.ndarray:
    r""":math:`\sum_i ((a_{ij} - \mu_j)/d_j)^2` for each column, a block of columns at a time
    (:func:`~spcakit.numerics.operators.centred_column_blocks`: no copy of the data; ``None`` for no mean, no divisors)."""
    total = np.empty(a.shape[1])
    for cols, block in centred_column_blocks(a, mean, divisors):
        total[cols] = np.einsum("ij,ij->j", block, block)
    return total


def _centred_gram(
    a: np.ndarray, mean: np.ndarray | None, weights: np.ndarray | None, row_weights: np.ndarray | None = None
) -> np.ndarray:
    r""":math:`B^\top B` for :math:`B = \operatorname{diag}(\sqrt{\omega})(A - \mathbf 1\mu^\top)\,\operatorname{diag}(w)`,
    a block of :data:`BLOCK_BYTES` of rows at a time in one reused buffer: no copy of the data (``mean``,
    column ``weights`` :math:`w` and observation weights ``row_weights`` :math:`\omega` ``None`` for none).
    Each block's product is a symmetric rank-k update (NumPy calls BLAS ``syrk`` for ``block.T @ block``).
    """
    n, p = a.shape
    if mean is None and weights is None and row_weights is None:
        return a.T @ a
    rows = min(n, block_rows(p))
    buffer = np.empty((rows, p))
    gram = np.zeros((p, p))
    for start in range(0, n, rows):
        block = buffer[: min(rows, n - start)]
        if mean is None:
            np.multiply(a[start : start + rows], 1.0 if weights is None else weights, out=block)
        else:
            np.subtract(a[start : start + rows], mean, out=block)
            if weights is not None:
                block *= weights
        if row_weights is not None:
            block *= np.sqrt(row_weights[start : start + rows])[:, None]
        gram += block.T @ block
    return gram


def _centred_copy_maker(
    a: np.ndarray, mean: np.ndarray | None, divisors: np.ndarray, standardize: bool,
    row_weights: np.ndarray | None = None,
) -> Callable[[], np.ndarray]:
    """A function making the centred copy of ``a`` (columns divided by ``divisors`` when standardising; rows
    multiplied by the square roots of ``row_weights``, the observation weights, when given)."""

    def make() -> np.ndarray:
        with np.errstate(over="ignore", invalid="ignore"):
            data = a - mean if mean is not None else np.array(a, dtype=float, copy=True)
        if standardize:
            np.divide(data, divisors, out=data)
        if row_weights is not None:
            data *= np.sqrt(row_weights)[:, None]
        return data

    return make


def _column_means(a: np.ndarray, sums: np.ndarray, magnitude: np.ndarray) -> np.ndarray:
    """Column means from the pass's column ``sums``, without overflow: a column whose plain sum overflowed
    (values within a factor n of the largest double) is summed again, alone with the others that did,
    scaled to at most 1, a block of rows at a time."""
    n = a.shape[0]
    mean = sums / n
    overflowed = np.nonzero(~np.isfinite(mean))[0]
    if overflowed.size:
        scale = magnitude[overflowed]
        scaled = np.zeros(overflowed.size)
        for _, block, _ in row_blocks(a, c_order=False):
            scaled += (block[:, overflowed] / scale).sum(axis=0)
        mean[overflowed] = scale * (scaled / n)
    return mean  # type: ignore[no-any-return]


def _weighted_pass(
    a: np.ndarray, w: np.ndarray, magnitude: np.ndarray, center: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    r"""The extremes of the rows with positive weight (those of the data the weights stand for) and, when
    ``center``, the weighted column means :math:`\sum_i w_i a_i / \sum_i w_i`, a block of rows at a time,
    the columns scaled to at most 1 so that nothing overflows."""
    p = a.shape[1]
    high, low = np.full(p, -np.inf), np.full(p, np.inf)
    safe = np.where(magnitude > 0, magnitude, 1.0)
    scaled = np.zeros(p)
    for first, block, _ in row_blocks(a, c_order=False):
        weights = w[first : first + block.shape[0]]
        kept = block[weights > 0]
        if kept.shape[0]:
            np.maximum(high, kept.max(axis=0), out=high)
            np.minimum(low, kept.min(axis=0), out=low)
        if center:
            scaled += weights @ (block / safe)
    mean = safe * (scaled / float(w.sum())) if center else None
    return high, low, mean


def data_problem(
    matrix: object,
    feature_names: Sequence[str] | None = None,
    *,
    center: bool = True,
    standardize: bool = False,
    source: str = "",
    weights: object = None,
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
    block of :data:`BLOCK_BYTES` of rows at a time in the same pass as the
    checks (a symmetric rank-k update per block, of the rows shifted by the
    first block's means when they are far from zero; the mean's part is then
    subtracted, :func:`~spcakit.inputs.checks.gram_from_scan`), so the data
    are read once; where that subtraction would lose more than three digits
    (a mean far from the first block's, in units of the spread) a second pass
    forms it from the centred blocks. The centred copy :math:`A` is made only if
    a part reads ``problem.data`` (:class:`DeferredData`): building the
    problem then takes the Gram matrix and one block beyond the data. The
    problem keeps a reference to the caller's array until then: do not change
    the array while the problem is in use. Otherwise (wide data, or more than
    :data:`DENSE_COVARIANCE_LIMIT` variables) the operator is a
    :class:`~spcakit.numerics.operators.GramCovariance` of the caller's array itself,
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
    (the :class:`~spcakit.numerics.operators.GramCovariance` of the caller's array) the
    columns that vary are then copied. Data whose columns are all constant are
    refused.

    Observation weights
    -------------------
    ``weights`` (``n`` finite numbers :math:`w_i \ge 0`, checked by
    :func:`~spcakit.inputs.weights.check_weights`) are frequency weights: an
    integer weight counts its row that many times, so integer weights give
    exactly the result of the data with repeated rows (a zero weight leaves
    the row out). The mean is :math:`\mu = \sum_i w_i a_i / W`,
    :math:`W = \sum_i w_i`, the covariance
    :math:`C = \sum_i w_i (a_i - \mu)(a_i - \mu)^\top / (W - 1)` (:math:`/W`
    when ``center=False``, about 0), and ``standardize`` divides by the
    weighted standard deviations :math:`\sqrt{C_{jj}}`. The covariance is the
    Gram matrix of :math:`B = \operatorname{diag}(\sqrt w)(A - \mathbf 1\mu^\top)`
    over :math:`W - 1`, formed a block of rows at a time (the checks' pass does
    not form it: a second pass does, once the weighted mean is known); the
    matrix-free path keeps :math:`B` (one copy of the data) in a
    :class:`~spcakit.numerics.operators.GramCovariance`, and ``problem.data`` is
    :math:`B` (scaled when standardising). The record's ``mean`` and ``scale``
    are the weighted ones and ``weights`` summarises the weights.
    """
    if is_scipy_sparse(matrix) or is_dask_array(matrix):
        raise InvalidDataError(
            f"data_problem builds dense data; {type(matrix).__name__} data go through spcakit.as_problem (or "
            "spcakit.fit), which keeps scipy.sparse data sparse and reads Dask arrays in chunks"
        )
    # one pass over the data: finite, each column's extremes and sum, and the content hash (HASH_LIMIT)
    shape = tuple(getattr(matrix, "shape", ()))  # arrays and frames; nested lists form it in the second pass
    formed = len(shape) == 2 and shape[0] >= shape[1] and shape[1] <= DENSE_COVARIANCE_LIMIT  # the Gram matrix is formed
    weighted = weights is not None
    a, frame_names, scan = finite_matrix(matrix, "the data matrix", feature_names, sums=center and not weighted,
                                         sha256=True, gram=formed and not weighted, shift=center)  # fmt: skip
    n, p = a.shape
    high, low = scan.high, scan.low
    names = check_names(feature_names if feature_names is not None else frame_names, p)
    magnitude = np.maximum(high, -low)  # each column's largest magnitude as given (finite)
    mean = None
    w = None
    if weighted:
        w = check_weights(weights, n, center=center)
        high, low, mean = _weighted_pass(a, w, magnitude, center)
        magnitude = np.maximum(high, -low)
    elif center:
        if n < 2:
            raise InvalidDataError(
                f"the data matrix has {n} row; centring needs at least 2 samples (rows)"
            )
        mean = _column_means(a, scan.sums, magnitude)  # type: ignore[arg-type]
    count = float(w.sum()) if w is not None else float(n)  # the number of observations the rows stand for
    record_mean = mean  # what transform centres by (the weighted mean with weights)
    # each column against its own magnitude: a constant column keeps only rounding noise (~1e-16 of its
    # values) after centring, while data of any scale (1e-13 or 1e150) keep variance of their own size;
    # the norms are taken on columns scaled to at most 1, so that huge values cannot overflow
    largest = centred_extremes(high, low, mean, magnitude) if mean is not None else magnitude
    _refuse_subnormal(largest, names)  # before dividing by it: 1 / 1e-310 overflows
    safe = np.where(largest > 0, largest, 1.0)
    # plain: no square (nor a sum of n of them) can over- or underflow, the plain sums of squares are exact enough
    squares_safe = SQUARES_SAFE[0] <= float(safe.min()) and float(largest.max()) <= SQUARES_SAFE[1]
    plain = not standardize and squares_safe
    scale = count - 1.0 if center else count
    # with weights the rows stand for count observations: the same choice as the repeated rows would get
    if count >= p and p <= DENSE_COVARIANCE_LIMIT:
        # the data already take n*p >= p*p numbers: the Gram matrix makes every later product O(p^2); it is
        # formed a block of rows at a time from the caller's array, and the centred copy is made only if a
        # part reads the data
        # from the checks' own pass when exact enough (gram_from_scan), else a second pass, centred a block at a time
        gram = gram_from_scan(scan, n, mean) if squares_safe and not weighted else None
        if gram is not None and not plain:  # standardising: the Gram matrix of the columns scaled to at most 1
            gram /= safe[:, None]
            gram /= safe
        if gram is None:
            with np.errstate(over="ignore", invalid="ignore"):  # a column below 1e-308 is refused below, by name
                gram = _centred_gram(a, mean, None if plain else 1.0 / safe, w)
        sum_of_squares = np.diag(gram).copy()  # of the centred columns (scaled to at most 1 unless plain)
        with np.errstate(over="ignore"):
            norms = np.sqrt(sum_of_squares) if plain else largest * np.sqrt(sum_of_squares)
        data: np.ndarray | DeferredData = DeferredData((n, p), _centred_copy_maker(a, mean, safe, standardize, w))
    else:
        # the operator centres (and scales) the caller's array in its products: the data are held once; the
        # sums of squares are taken a block of columns at a time (scaled to at most 1 unless plain)
        gram = None
        if w is not None:  # the weighted centred rows sqrt(w_i) (a_i - mu): one copy, then centred (mean None)
            a = _centred_copy_maker(a, mean, safe, False, w)()
            mean = None
        sum_of_squares = _centred_sum_of_squares(a, mean, None if plain else safe)
        with np.errstate(over="ignore"):
            norms = np.sqrt(sum_of_squares) if plain else largest * np.sqrt(sum_of_squares)
        data = DeferredData((n, p), _centred_copy_maker(a, mean, safe, standardize))
    constant = np.nonzero(norms <= 1e-12 * magnitude * np.sqrt(count))[0]
    offset = refuse_zero_variance(constant, names, CONSTANT_WORDS, high, low)
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
        data = DeferredData((n, p), _centred_copy_maker(a, mean, divisors, True, w if gram is not None else None))
    else:
        check_double_range(norms, largest, scale, names, constant)
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
    summary = None if w is None else weights_summary(w, sha256=scan.sha256 is not None)
    record = InputRecord(kind="data", shape=(n, p), sha256=scan.sha256, center=center, standardize=standardize,
                         mean=record_mean, scale=deviations, weights=summary,
                         sha256_skipped=None if scan.sha256 else hash_skipped_text(a.nbytes))  # fmt: skip
    return with_constant_columns(Problem(covariance, names, data, source, record), constant, offset)


def _refuse_subnormal(largest: np.ndarray, names: Sequence[str]) -> None:
    """Refuse the columns whose largest magnitude (centred) is subnormal, before anything divides by it (its
    reciprocal overflows), as :func:`check_double_range` refuses variances that underflow."""
    tiny = np.flatnonzero((largest > 0) & (largest < 1.0 / float(np.finfo(float).max)))
    if tiny.size:
        shown = listed(tiny, lambda j: f"{j} ({names[j]}): values at most {largest[j]:.3g}")
        floor = float(np.sqrt(np.finfo(float).tiny))
        raise InvalidDataError(f"{tiny.size} column(s) have standard deviations below {floor:.3g}, too small for a "
                               f"covariance in double precision (their variances underflow): {shown}; rescale them, "
                               "e.g. multiply by a power of 10")
