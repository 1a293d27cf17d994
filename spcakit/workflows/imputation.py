r"""Missing values: EM on the sparse low-rank model (iterative "hard" imputation), and scores of incomplete rows.

:func:`spcakit.fit`, :class:`spcakit.SparsePCA` and ``spcakit run``/``compose`` take data with missing
values - NaN entries of a dense matrix or DataFrame, stored NaN entries of a ``scipy.sparse`` matrix, empty or
``NA`` cells of a CSV file (:mod:`spcakit.inputs.missing`) - through their ``missing`` option:

* ``"auto"`` (the default): data without NaN are fitted exactly as before (bit for bit: nothing is looked at
  beyond the checks every input gets); data with NaN are imputed by the EM below, with a
  :class:`~spcakit.core.errors.MissingValueWarning` saying the fraction missing and the model;
* ``"em"``: the same, without the warning;
* ``"error"``: NaN are refused (:class:`~spcakit.core.errors.MissingValuesError`), as before this option existed.

Infinite entries are refused always; so are NaN in a covariance matrix and in a Dask array (compute it, or
fill the NaN, first).

The model
---------
Let :math:`O` be the observed entries of the ``n x p`` data :math:`A`. The sparse low-rank model of the
centred data is :math:`A \approx \mathbf 1 \mu^\top + T V^\top` with loadings :math:`V` (``p x r``, each column
supported on at most ``k`` variables) and scores :math:`T`; fitting it to the observed entries only means

.. math:: \min_{\mu, V, T} f(\mu, V, T) = \sum_{(i,j) \in O} \bigl(a_{ij} - \mu_j - (T V^\top)_{ij}\bigr)^2 .

The EM (hard-impute, EM-PCA) iteration is

1. fill every missing entry with its column's observed mean (weighted by ``sample_weight`` when given);
2. fit the sparse PCA method (the same method, ``r``, ``k`` and parts) to the completed matrix
   :math:`\tilde A` - from its usual start: spcakit's parts take no starting loadings, so the fits are not warm
   started (the imputation can be: :func:`impute_and_fit`'s ``start`` replaces the column means of step 1);
3. reconstruct :math:`\hat A = \mathbf 1 \mu^\top + (\tilde A - \mathbf 1 \mu^\top) V (V^\top V)^+ V^\top`,
   :math:`\mu` the completed matrix's (weighted) column means: the least-squares projection of each centred row
   onto the loadings' span (the loadings are not orthogonal in general; with ``standardize=True`` the
   projection is taken on the correlation scale, :math:`(\tilde a - \mu)/s`, and scaled back);
4. replace the missing entries, and only them, by :math:`\hat A`'s; the observed entries never change;
5. repeat from 2 until the root mean square change of the imputed entries, each over its column's observed
   standard deviation, is below ``tol`` (default :data:`DEFAULT_TOL`), or ``max_iter`` iterations
   (default :data:`DEFAULT_MAX_ITER`) were made.

Why this decreases the observed error (majorisation). Write
:math:`g(\mu, V, T \mid \tilde A) = \|\tilde A - \mathbf 1\mu^\top - T V^\top\|_F^2` for the error on the
completed matrix. It is :math:`f` plus the squared errors on the missing entries, so :math:`g \ge f`, with
equality at the current model, whose predictions are exactly the imputed values (step 4). Any
:math:`(\mu, V, T)` with a smaller :math:`g` therefore has a smaller :math:`f`: :math:`g` majorises
:math:`f`, and each iteration is a majorisation-minimisation (EM for a Gaussian noise model) step. For fixed
loadings :math:`V`, step 3 minimises :math:`g` exactly over :math:`T` (least squares) and :math:`\mu`
(the column means), so with the supports and loadings held fixed the iteration decreases :math:`f`
monotonically to its minimum over :math:`(\mu, T)`. And :math:`g` over :math:`V` is
:math:`(W - 1)\operatorname{tr}C\,(1 - \mathrm{CPEV}(V))` on the completed data, so a step 2 that finds
loadings of at least the previous CPEV on the new completed data keeps the decrease.

What is *not* guaranteed. The sparse PCA methods are heuristics for an NP-hard problem: step 2 need not
find loadings with at least the previous loadings' CPEV on the new completed data, and the supports it
chooses may change from one iteration to the next. So :math:`f` need not decrease monotonically, the
iteration is not guaranteed to converge (it stops at ``max_iter`` with a warning and
``converged=False`` in the record), and the limit, when reached, is a fixed point of the iteration, not a
global minimiser of :math:`f`. With ``standardize=True`` the error is weighted by :math:`1/s_j^2`, and the
scales :math:`s_j` are those of each completed matrix, so the objective itself moves a little between
iterations (the argument above holds for the scales of one iteration). As for complete data, the result is a local answer; with entries missing at
random and a moderate fraction missing, the supports agree with those from the complete data in the tests
(``tests/workflows/test_missing.py``) and the benchmark (``docs/benchmarks.md``, "Missing values").

The defaults. Every iteration is one full fit, so the cap is what bounds the cost: :data:`DEFAULT_MAX_ITER`
fits. The tolerance :data:`DEFAULT_TOL` stops when the imputed values move by less than 0.1 % of their
columns' spread (root mean square): far below the noise in any imputed value (its error is of the order of
the residual standard deviation), and small enough that the loadings' supports no longer change on the
planted data of the tests, where 5 to 30 % missing converge in 5 to 20 iterations.

The record. The result's ``input.missing`` (:class:`~spcakit.inputs.records.MissingRecord`) holds the count and
fraction missing, the iterations, whether the EM converged and its last change; ``input.sha256`` is the
hash of the data as given (with their NaN); ``input.mean`` and ``input.scale`` those of the completed data.
``Result.iterations`` and the metrics are those of the last fit, on the completed data; ``Result.seconds``
is the time of all the fits.

Special cases. A column with no observed value (or only rows of weight 0) is filled with 0 and stays
constant: it gets zero loadings (as every constant column: :mod:`spcakit.inputs.problem`), with a warning naming it -
refusing it would make users drop it by hand for the same result. A column with one observed value is
constant too. A row with no observed value is filled with the means and stays there (its projection is 0);
it still counts in :math:`n`. Observation weights (``sample_weight``) give the weighted means of step 1,
and the fits are weighted; the projection of step 3 is per row, so weights do not change it.

Scores of incomplete rows
-------------------------
:func:`observed_scores` scores a row :math:`a` with missing entries from its observed entries :math:`o`
alone, :math:`t = \arg\min_t \|(a_o - \mu_o)/s_o - V_o t\|` (least squares; the minimum-norm solution,
:math:`V_o^+ (a_o - \mu_o)/s_o`, when :math:`V_o` has rank below ``r``): for a complete row it is the usual
regression score :math:`a V (V^\top V)^+` of ``transform``. A row with no observed entry, or whose observed
entries all have zero loadings, gets scores 0 (the mean).

Cross-validation
----------------
:func:`spcakit.cross_validate` (``missing=``, as here) fits each fold's training rows by :func:`impute_and_fit`
at every level, from the training rows alone, each level's EM starting (``start=``) from the previous level's
completed training rows of that fold; it scores the held-out rows on their observed entries only, each
predicted from the row's other *observed* entries (the ``ekf`` scheme restricted to :math:`o`:
:func:`spcakit.workflows.cv.criterion.observed_residuals`).

Paths and targets
-----------------
:func:`spcakit.path` and :func:`spcakit.target_k` (``missing=``, as here) fit every level by :func:`impute_and_fit`,
the first level's EM from the columns' observed means and each later level's from the completed data the
previous level's EM left (:class:`spcakit.workflows.paths.sweep.WarmEM`); each level's CPEV, bounds and ratio to PCA's
CPEV are those of its own completed data.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from spcakit.core.errors import InvalidParameterError, MissingValueWarning, listed
from spcakit.inputs import as_problem
from spcakit.inputs.missing import (
    MissingData, missing_values, observed_deviations, observed_means, set_missing,
)  # fmt: skip
from spcakit.inputs.problem import Problem
from spcakit.core.records import IssuedWarning
from spcakit.inputs.records import MissingRecord
from spcakit.workflows.results import Result


#: Default tolerance of the EM: root mean square change of the imputed values over their columns' observed
#: standard deviations (see the module's description).
DEFAULT_TOL = 1e-3

#: Default cap on EM iterations (each a full fit of the method).
DEFAULT_MAX_ITER = 50


def means_filled_problem(
    data: MissingData, center: bool, standardize: bool, source: str = "", weights: np.ndarray | None = None
) -> Problem:
    """The problem of ``data`` with each missing entry at its column's observed mean (the EM's first fill), for what
    is decided before any EM: ``p``, the columns that vary, the check of ``r`` and the grid of levels (paths,
    targets, cross-validation). With observation ``weights`` (checked), the weighted means and the weighted
    problem. ``data`` is not changed: a copy is filled (a CSR copy keeps the gaps' positions)."""
    filled = attrs.evolve(data, matrix=data.matrix.copy())
    set_missing(filled, observed_means(data, weights)[0][data.cols])
    return as_problem(filled.matrix, center=center, standardize=standardize, feature_names=data.names, source=source,
                      weights=weights)  # fmt: skip


def reconstruct_missing(
    data: MissingData, loadings: np.ndarray, mean: np.ndarray | None, scale: np.ndarray | None
) -> np.ndarray:
    r"""The model's values at the missing entries: :math:`\mu_j + s_j\,(z_i V (V^\top V)^+ V^\top)_j`, with
    :math:`z_i = (\tilde a_i - \mu)/s` the completed row centred (``mean``, zero when ``None``) and scaled
    (``scale``, one when ``None``). Only the rows with a missing entry are multiplied; never densified."""
    p = data.matrix.shape[1]
    mean = np.zeros(p) if mean is None else mean
    v = np.asarray(loadings, dtype=float)
    scaled = v if scale is None else v / scale[:, None]  # z V = a (V / s) - (mu / s) V
    rows, inverse = np.unique(data.rows, return_inverse=True)
    products = np.asarray(data.matrix[rows] @ scaled, dtype=float) - mean @ scaled
    coefficients = products @ np.linalg.pinv(v.T @ v)  # each row's least-squares coordinates in span(V)
    fitted = np.einsum("er,er->e", coefficients[inverse], v[data.cols])
    if scale is not None:
        fitted *= scale[data.cols]
    return fitted + mean[data.cols]  # type: ignore[no-any-return]


@attrs.frozen(kw_only=True)
class Imputed:
    """What :func:`impute_and_fit` returns: the last fit's result (its ``input.missing`` set) and its record."""

    result: Result
    record: MissingRecord


def impute_and_fit(
    data: MissingData,
    fit_once: Callable[[Any], Result],
    *,
    weights: Any = None,
    announce: bool = True,
    tol: float = DEFAULT_TOL,
    max_iter: int = DEFAULT_MAX_ITER,
    stacklevel: int = 3,
    start: np.ndarray | None = None,
) -> Imputed:
    """EM on the sparse low-rank model (see the module's description): ``fit_once(matrix)`` fits the method to
    the completed matrix (dense or CSR, the same object each time, changed in place between calls) and returns
    its :class:`~spcakit.workflows.results.Result`. ``weights`` are observation weights already checked against the rows
    (:func:`~spcakit.inputs.weights.check_weights`: the callers check them before any warning of the EM).

    ``announce`` issues the :class:`~spcakit.core.errors.MissingValueWarning` of ``missing="auto"``; the warnings
    of the fits are collected and those of the last fit issued once (not once per iteration). On return the
    matrix holds the values the returned result was fitted to.

    ``start`` (a warm start) fills the missing entries first with these values (one per missing entry, in the
    order of ``data.rows``/``data.cols``, e.g. :func:`~spcakit.inputs.missing.missing_values` of a previous
    EM's matrix) instead of the columns' observed means (step 1); the iteration is otherwise the same, except
    that an entry of a column that gets no loading is then set to its column's observed mean (the model's
    value there at the fixed point) rather than kept. :func:`spcakit.cross_validate` starts each level's EM of
    a fold from the previous level's completed matrix: a start near the fixed point saves iterations.
    ``None`` (the default) is the EM described in the module, bit for bit. The matrix may be one completed by an
    earlier call (its missing entries are set to NaN again first: the columns' statistics are of the observed
    entries).
    """
    if not (isinstance(tol, (int, float)) and tol > 0 and math.isfinite(tol)):
        raise InvalidParameterError(f"the EM tolerance must be a positive number; got {tol!r}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise InvalidParameterError(f"the EM iteration cap must be a positive integer; got {max_iter!r}")
    n, p = data.matrix.shape
    w = None if weights is None else np.asarray(weights, dtype=float)  # checked by the caller (check_weights)
    set_missing(data, np.full(data.count, np.nan))  # a matrix completed by an earlier EM (a warm start): the
    means, empty = observed_means(data, w)  # statistics below are of the observed entries only
    notes: list[str] = []
    if announce:
        notes.append(
            f"the data have {data.count} missing entr{'y' if data.count == 1 else 'ies'} ({data.fraction:.1%} of the "
            f"{n} x {p}); they were imputed by EM on the sparse low-rank model (spcakit.workflows.imputation: each missing "
            "entry replaced by the loadings' least-squares reconstruction until it settles); pass missing='em' "
            "to impute without this warning, or missing='error' to refuse missing values"
        )
    empty_names = tuple(data.names[j] for j in np.flatnonzero(empty))
    if empty_names:
        notes.append(
            f"{len(empty_names)} column(s) have no observed value ({listed(empty_names)}): they are filled with 0 and, being "
            "constant, get zero loadings"
        )
    for note in notes:
        warnings.warn(note, MissingValueWarning, stacklevel=stacklevel)
    deviations = observed_deviations(data)[data.cols]
    current = means[data.cols]
    warm = start is not None
    if start is not None:
        current = np.array(start, dtype=float).reshape(-1)
        if current.shape != (data.count,) or not np.isfinite(current).all():
            raise InvalidParameterError(
                f"the EM's start must hold {data.count} finite values, one per missing entry; got "
                f"{np.shape(start)}{'' if np.isfinite(current).all() else ' with NaN or infinite values'}"
            )
    set_missing(data, current)
    seconds, change, converged = 0.0, math.inf, False
    iteration = 0
    result: Result | None = None
    caught: list[warnings.WarningMessage] = []
    for iteration in range(1, max_iter + 1):
        start = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = fit_once(data.matrix)
        seconds += time.perf_counter() - start
        record = result.input
        if data.count == 0 or record is None:
            change, converged = 0.0, True
            break
        updated = reconstruct_missing(data, result.loadings, record.mean, record.scale)
        unloaded = ~result.loadings[data.cols].any(axis=1)  # a column without loadings: the model's value is its
        updated[unloaded] = (means[data.cols] if warm else current)[unloaded]  # mean, which the current
        # fill already is without a start (exactly, not rounded anew); with one, the observed mean
        change = float(np.sqrt(np.mean(((updated - current) / deviations) ** 2)))
        if change < tol:
            converged = True
            break
        if iteration < max_iter:
            set_missing(data, updated)
            current = updated
    assert result is not None
    for message in caught:  # the last fit's warnings, once
        warnings.warn(message.message, stacklevel=stacklevel)  # type: ignore[arg-type]
    if not converged:
        notes.append(
            f"the EM imputation of the missing values stopped after {iteration} iterations before converging (the "
            f"imputed values still changed by {change:.3g} of their columns' standard deviations, above the "
            f"tolerance {tol:g}): the loadings are the last fit's, on imputed values still moving. Components "
            "that explain little variance settle slowly: fewer components (a smaller r) converge sooner"
        )
        warnings.warn(notes[-1], MissingValueWarning, stacklevel=stacklevel)
    record = MissingRecord(count=data.count, fraction=data.fraction, iterations=iteration, converged=converged,
                           change=change if math.isfinite(change) else 0.0, tol=float(tol), max_iter=int(max_iter),
                           empty_columns=empty_names)  # fmt: skip
    assert missing_values(data).size == data.count
    input_record = None if result.input is None else attrs.evolve(
        result.input, missing=record, sha256=data.sha256, sha256_skipped=None if data.sha256 else result.input.sha256_skipped,
    )  # fmt: skip
    result = attrs.evolve(result, input=input_record, seconds=seconds,
                          warnings=tuple(IssuedWarning(note) for note in notes) + tuple(result.warnings))  # fmt: skip
    return Imputed(result=result, record=record)


def observed_scores(
    rows: np.ndarray, loadings: np.ndarray, mean: np.ndarray | None, scale: np.ndarray | None
) -> np.ndarray:
    r"""Scores of dense ``rows`` (``m x p``, NaN where missing) from their observed entries only:
    :math:`t = \arg\min_t \|(a_o - \mu_o)/s_o - V_o t\|`, the minimum-norm least-squares solution
    (:func:`numpy.linalg.lstsq`, i.e. :math:`V_o^+`) when :math:`V_o` is rank-deficient; 0 for a row with no
    observed entry. Rows sharing a pattern of missing entries are solved together."""
    m, p = rows.shape
    r = loadings.shape[1]
    centred = rows - (0.0 if mean is None else mean)
    if scale is not None:
        centred = centred / scale
    scores = np.zeros((m, r))
    missing = np.isnan(rows)
    patterns, inverse = np.unique(missing, axis=0, return_inverse=True)
    for index, pattern in enumerate(patterns):
        members = np.flatnonzero(inverse.reshape(-1) == index)
        observed = ~pattern
        if not observed.any():
            continue  # nothing observed: the mean, scores 0
        solution, *_ = np.linalg.lstsq(loadings[observed], centred[np.ix_(members, np.flatnonzero(observed))].T, rcond=None)
        scores[members] = solution.T
    return scores
