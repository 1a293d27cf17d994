r"""The held-out criterion: the error of predicting each entry of a held-out row from its other entries through
the loadings' span (:func:`held_out_error`), and of a row with missing entries from its other *observed* entries
(:func:`observed_residuals`).

Rows with missing entries
-------------------------
A held-out row :math:`x` (centred and scaled by the training rows' completed means and scales) whose entries
:math:`O` are observed is scored on :math:`O` only, each observed entry predicted from the row's *other
observed* entries: :math:`\hat x_j = v_j^\top t`, :math:`t = \arg\min_t \|x_{O \setminus j} - V_{O \setminus
j}\, t\|`. This is the complete row's problem with the loadings :math:`V_O` (the rows of :math:`V` on
:math:`O`) in place of :math:`V` - the missing variables simply are not there - so the same Sherman-Morrison
step gives

.. math::

    x_j - \hat x_j = \frac{x_j - (H_O x_O)_j}{1 - h_{jj}}, \qquad
    H_O = V_O (V_O^\top V_O)^+ V_O^\top, \quad j \in O,

with :math:`h_{jj}` the diagonal of :math:`H_O`, the projection onto the span of :math:`V_O` (computed from an
orthonormal basis of that span, so rank-deficient :math:`V_O` are covered); an entry with :math:`1 - h_{jj} \le`
:data:`UNPREDICTABLE` is predicted by the training mean (its residual is :math:`x_j`), and a row whose observed
loadings are all zero is predicted by the means throughout. A fold's error is then the sum of the squared
residuals over the sum of squares of the observed centred entries. Rows with the same pattern of missing
entries share :math:`H_O` and are scored together; complete rows take the complete rows' path
(:func:`residual_sums`), unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from spcakit.core.errors import InvalidDataError, InvalidParameterError

#: An entry whose ``1 - h_j`` is at most this cannot be predicted from its row's other variables (its
#: unit vector lies in the loadings' span, up to rounding): it is predicted by the training mean. ``h_j``
#: is computed to about ``r`` units of rounding (``1e-16``), so ``1 - h_j`` above this bound has at least
#: 7 correct digits and the division by it is accurate.
UNPREDICTABLE = 1e-8


def leave_one_variable_out_residuals(rows: Any, loadings: Any) -> np.ndarray:
    r"""The residual of every entry of ``rows`` predicted from the same row's other variables.

    For a row :math:`x` and loadings :math:`V` (``p x r``), entry ``j`` is predicted by
    :math:`v_j^\top t` with :math:`t` the least-squares scores of the other entries,
    :math:`\min_t \|x_{-j} - V_{-j} t\|`; by Sherman-Morrison the residual is

    .. math::

        x_j - \hat x_j = \frac{x_j - (Hx)_j}{1 - h_j}, \qquad H = V (V^\top V)^{-1} V^\top,
        \quad h_j = H_{jj}

    (derived in the module's description), computed for all entries at once from an orthonormal
    basis of the loadings' span. An entry with :math:`1 - h_j \le` :data:`UNPREDICTABLE` - its
    variable lies in the span on its own, so its row's other entries do not determine it - is
    predicted by 0, the training mean of centred rows: its residual is the entry itself.

    Parameters
    ----------
    rows
        Held-out rows (``m x p``), centred (and scaled) as the loadings' training data were.
    loadings
        The loadings :math:`V` (``p x r``); only their span matters.

    Returns
    -------
    numpy.ndarray
        The residuals, ``m x p``.
    """
    x = np.asarray(rows, dtype=float)
    v = np.asarray(loadings, dtype=float)
    _check_shapes(x, v)
    return _residuals(x, loadings_span(v))


def _check_shapes(x: np.ndarray, v: np.ndarray) -> None:
    if x.ndim != 2 or v.ndim != 2 or x.shape[1] != v.shape[0]:
        raise InvalidParameterError(
            f"rows (m x p) and loadings (p x r) must share p; got rows of shape {x.shape} and loadings of shape {v.shape}"
        )


def loadings_span(loadings: Any) -> tuple[np.ndarray, np.ndarray] | None:
    r"""An orthonormal basis :math:`U` of the span of the loadings (``p x r``) and :math:`1 - h_j` per
    variable (:math:`h_j = \|u_j\|^2`); ``None`` when they span nothing. What :func:`residual_sums` takes,
    computed once for many blocks of rows."""
    v = np.asarray(loadings, dtype=float)
    basis, singular, _ = np.linalg.svd(v, full_matrices=False)
    if singular.size == 0 or not singular[0] > 0:
        return None
    rank = int(np.count_nonzero(singular > singular[0] * max(v.shape) * np.finfo(float).eps))
    basis = basis[:, :rank]
    return basis, 1.0 - np.einsum("jl,jl->j", basis, basis)


def _residuals(x: np.ndarray, span: tuple[np.ndarray, np.ndarray] | None) -> np.ndarray:
    """The leave-one-variable-out residuals of the rows ``x`` for the loadings' :func:`loadings_span`."""
    if span is None:
        return x.copy()  # no loading: nothing predicts anything
    basis, free = span
    predictable = free > UNPREDICTABLE
    residuals = (x @ basis) @ basis.T  # the fitted values, made the residuals in place: one array of x's size
    np.subtract(x, residuals, out=residuals)
    np.divide(residuals, np.where(predictable, free, 1.0), out=residuals)
    if not predictable.all():
        residuals[:, ~predictable] = x[:, ~predictable]
    return residuals


def residual_sums(rows: np.ndarray, span: tuple[np.ndarray, np.ndarray] | None) -> tuple[float, float]:
    r"""``(residual, total)`` for a block of held-out ``rows`` (``m x p``, centred and scaled): the sum of their
    squared leave-one-variable-out residuals for the :func:`loadings_span` ``span``, and their total sum of
    squares. Both add up over blocks of rows; :func:`held_out_error` is their ratio over all the blocks."""
    x = np.asarray(rows, dtype=float)
    errors = _residuals(x, span)
    return float(np.einsum("ij,ij->", errors, errors)), float(np.einsum("ij,ij->", x, x))


def held_out_error(rows: Any, loadings: Any) -> float:
    r"""The held-out error of ``rows`` for ``loadings``: the sum of their squared
    leave-one-variable-out residuals over their total sum of squares.

    .. math::

        e = \frac{\sum_i \sum_j (x_{ij} - \hat x_{ij})^2}{\sum_i \sum_j x_{ij}^2},

    with :math:`\hat x_{ij}` predicted from row ``i``'s other variables
    (:func:`leave_one_variable_out_residuals`). This is the error of one fold in
    :func:`cross_validate` and, negated, :meth:`spcakit.SparsePCA.score`: 0 when
    every entry is predicted exactly, 1 when the predictions are no better than
    the training means (as at ``k = 1``, ``r = 1``); it can exceed 1 when the
    loadings predict worse than the means.

    Parameters
    ----------
    rows
        The held-out rows (``m x p``), centred (and scaled) as the loadings' training
        data were; or an iterator (a generator) of such blocks of rows, whose sums add up,
        so that rows too large to hold densified at once are scored a block at a time
        (the loadings' span is computed once).
    loadings
        The loadings (``p x r``); only their span matters.

    Returns
    -------
    float
        The error :math:`e \ge 0`.

    Raises
    ------
    InvalidDataError
        The rows' total sum of squares is 0 (every row equals the training means): the
        error is undefined.
    """
    v = np.asarray(loadings, dtype=float)
    blocks = rows if isinstance(rows, Iterator) else [rows]
    span = None
    spanned = False
    total = residual = 0.0
    for block in blocks:
        x = np.asarray(block, dtype=float)
        _check_shapes(x, v)
        if not spanned:
            span, spanned = loadings_span(v), True
        squares, total_squares = residual_sums(x, span)
        residual += squares
        total += total_squares
    if not total > 0:
        raise InvalidDataError(
            "the held-out rows have no variance about the training means (every row equals them, or there are "
            "none): their error, a fraction of that variance, is undefined"
        )
    return residual / total


def observed_residuals(rows: Any, loadings: Any, span: tuple[np.ndarray, np.ndarray] | None | bool = False) -> np.ndarray:
    r"""The leave-one-variable-out residual of every *observed* entry of ``rows`` (``m x p``, centred and scaled,
    NaN where missing), predicted from the same row's other observed entries through the loadings' rows on
    them (the module's "Rows with missing entries"):
    :math:`(x_j - (H_O x_O)_j)/(1 - h_{jj})`, :math:`H_O = V_O (V_O^\top V_O)^+ V_O^\top`.

    Complete rows are scored by :func:`leave_one_variable_out_residuals`' computation (with ``span``, the
    loadings' :func:`loadings_span`, when given), the others one pattern of missing entries at a time.

    Returns
    -------
    numpy.ndarray
        The residuals, ``m x p``, NaN at the missing entries.
    """
    x = np.asarray(rows, dtype=float)
    v = np.asarray(loadings, dtype=float)
    _check_shapes(x, v)
    missing = np.isnan(x)
    incomplete = missing.any(axis=1)
    out = np.full(x.shape, np.nan)
    if not incomplete.all():
        whole = loadings_span(v) if span is False else span
        out[~incomplete] = _residuals(x[~incomplete], whole)  # type: ignore[arg-type]
    if incomplete.any():
        which = np.flatnonzero(incomplete)
        patterns, inverse = np.unique(missing[which], axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        for index, pattern in enumerate(patterns):
            observed = np.flatnonzero(~pattern)
            if observed.size == 0:
                continue  # nothing observed: nothing to score
            members = which[inverse == index]
            block = x[np.ix_(members, observed)]
            out[np.ix_(members, observed)] = _residuals(block, loadings_span(v[observed]))
    return out


def observed_residual_sums(rows: np.ndarray, loadings: Any, span: tuple[np.ndarray, np.ndarray] | None) -> tuple[float, float]:
    r"""``(residual, total)`` of a block of held-out ``rows`` with missing entries (NaN; centred and scaled): the
    sum of the squared :func:`observed_residuals` and the sum of squares of the observed entries. Complete
    rows go through :func:`residual_sums` (``span``: the loadings' :func:`loadings_span`) exactly as without
    missing values; both sums add up over blocks of rows."""
    x = np.asarray(rows, dtype=float)
    incomplete = np.isnan(x).any(axis=1)
    if not incomplete.any():
        return residual_sums(x, span)
    residual = total = 0.0
    if not incomplete.all():
        residual, total = residual_sums(x[~incomplete], span)
    part = x[incomplete]
    errors = observed_residuals(part, loadings, span)
    residual += float(np.nansum(errors * errors))
    total += float(np.nansum(part * part))
    return residual, total
