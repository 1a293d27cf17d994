r"""Observation (row) weights: checked against the data (:func:`check_weights`), summarised for a result's
input record (:func:`weights_summary`), and applied lazily to Dask data (:func:`weighted_dask_rows`).

They are frequency weights: an integer weight counts its row that many times, so that integer weights give
exactly the result of the data with repeated rows. The mean is :math:`\mu = \sum_i w_i x_i / W`,
:math:`W = \sum_i w_i`, the covariance :math:`\sum_i w_i (x_i - \mu)(x_i - \mu)^\top / (W - 1)` (the
:math:`-1` of the unweighted :math:`n - 1`; :math:`/W` uncentred). Dense data apply them in
:func:`spcakit.inputs.dense.data_problem`, ``scipy.sparse`` data in
:class:`spcakit.inputs.sparse.WeightedSparseGram`, Dask data here.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from spcakit.core.errors import InvalidDataError
from spcakit.inputs.checks import is_scipy_sparse, pandas_class

__all__ = ["check_weights", "weighted_dask_rows", "weights_summary"]


def check_weights(weights: object, n: int, *, center: bool) -> np.ndarray:
    r"""Observation (row) weights ``weights`` checked against ``n`` rows: a 1-D float array of ``n`` finite,
    non-negative numbers, not all zero, with at least 2 positive ones when centring and a total above 1
    (the covariance divides by :math:`\sum_i w_i - 1`, as by :math:`n - 1` without weights); else
    :class:`~spcakit.core.errors.InvalidDataError` saying what is wrong. A column vector (``n x 1``) is taken."""
    if is_scipy_sparse(weights) or pandas_class(weights) == "DataFrame":
        weights = np.asarray(weights.toarray() if is_scipy_sparse(weights) else weights.to_numpy())  # type: ignore[attr-defined]
    try:
        w = np.asarray(weights, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InvalidDataError(f"sample_weight must be {n} non-negative numbers, one per row; got {type(weights).__name__}: {exc}") from None
    if w.ndim == 2 and w.shape[1] == 1:
        w = w[:, 0]
    if w.ndim != 1:
        raise InvalidDataError(f"sample_weight must be a 1-D array of {n} numbers, one per row; got shape {w.shape}")
    if w.shape[0] != n:
        raise InvalidDataError(f"sample_weight has {w.shape[0]} weights but the data have {n} rows; give one weight per row")
    bad = np.nonzero(~np.isfinite(w))[0]
    if bad.size:
        raise InvalidDataError(
            f"sample_weight has {bad.size} NaN or infinite weight(s) (first at row {int(bad[0])}); weights must be finite"
        )
    negative = np.nonzero(w < 0)[0]
    if negative.size:
        raise InvalidDataError(
            f"sample_weight has {negative.size} negative weight(s) (first: {w[negative[0]]:.6g} at row "
            f"{int(negative[0])}); weights must be >= 0 (0 leaves a row out)"
        )
    positive = int(np.count_nonzero(w))
    if positive == 0:
        raise InvalidDataError("sample_weight is all zero: at least one row must have a positive weight")
    if center and positive < 2:
        raise InvalidDataError(
            f"sample_weight has {positive} positive weight; centring needs at least 2 rows with positive weight"
        )
    with np.errstate(over="ignore"):
        total = float(w.sum())
    if not np.isfinite(total):
        raise InvalidDataError(
            f"sample_weight sums to more than double precision holds (the largest weight is {float(w.max()):.6g}); "
            "divide them all by a constant (frequency weights: that changes no loading and no CPEV, only the "
            "variances through the sum), e.g. so that they sum to the number of rows"
        )
    if total <= (1.0 if center else 0.0):
        raise InvalidDataError(
            f"sample_weight sums to {total:.6g}; they are frequency weights (an integer weight counts a row that "
            f"many times) and the covariance divides by their sum{' - 1' if center else ''}, so the sum must exceed "
            f"{1 if center else 0}; scale them up (e.g. so that they sum to the number of rows)"
        )
    return np.array(w, dtype=float)  # type: ignore[no-any-return]


def weights_summary(w: np.ndarray, *, sha256: bool = True) -> dict[str, Any]:
    """What an input record keeps of the weights: their count, sum, number of zeros and SHA-256 (of the
    float64 little-endian values, with their length, as :func:`content_sha256` of one column)."""
    digest = None
    if sha256:
        digest = hashlib.sha256(np.asarray((w.shape[0], 1), dtype="<u8").tobytes())
        digest.update(np.ascontiguousarray(w, dtype="<f8").tobytes())
    return {"count": int(w.shape[0]), "sum": float(w.sum()), "zeros": int(np.count_nonzero(w == 0)),
            "sha256": None if digest is None else digest.hexdigest()}


def weighted_dask_rows(x: Any, w: np.ndarray, center: bool) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray | None]:
    r"""With observation weights ``w``: the lazy weighted centred rows :math:`B = \operatorname{diag}(\sqrt w)
    (X - \mathbf 1\mu^\top)` (:math:`\mu = 0` without ``center``), the extremes of the rows with positive
    weight and the weighted means :math:`\mu = \sum_i w_i x_i / \sum_i w_i` (two passes over the data: the
    extremes, then the means of the columns scaled to at most 1)."""
    import dask  # noqa: PLC0415 - dask only for dask input
    import dask.array as da  # noqa: PLC0415

    x = x.astype(np.float64)
    weights = da.from_array(w, chunks=(x.chunks[0],))
    positive = (weights > 0)[:, None]
    high, low = dask.compute(da.where(positive, x, -np.inf).max(axis=0), da.where(positive, x, np.inf).min(axis=0))
    if not (np.isfinite(high).all() and np.isfinite(low).all()):
        return x, high, low, None  # refused by the caller, naming the first NaN or infinite entry
    mean = None
    if center:
        magnitude = np.maximum(high, -low)
        safe = np.where(magnitude > 0, magnitude, 1.0)
        mean = safe * (np.asarray((weights @ (x / safe)).compute()) / float(w.sum()))
        x = x - mean
    return x * da.sqrt(weights)[:, None], high, low, mean
