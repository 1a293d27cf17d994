r"""The pure pieces of a stability analysis: the resamples' rows, the matching of components across resamples,
selection probabilities, percentile intervals, Jaccard indices and Meinshausen & Bühlmann's error bound.

Nothing here fits: :func:`spcakit.workflows.stability.run.stability` hands these functions the loadings of each
resample's fit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment

#: The resampling schemes: half-size subsamples without replacement (Meinshausen & Bühlmann 2010, the scheme their
#: error bound is proved for) and bootstrap samples of ``n`` rows with replacement (Efron).
SCHEMES = ("subsample", "bootstrap")


def resample_rows(n: int, n_resamples: int, scheme: str, seed: int) -> list[np.ndarray]:
    r"""The rows of each resample, sorted: ``n_resamples`` index arrays into ``range(n)``.

    ``"subsample"`` draws :math:`\lfloor n/2 \rfloor` distinct rows, ``"bootstrap"`` ``n`` rows with replacement
    (a row drawn twice appears twice). Resample ``s`` is drawn by its own generator,
    ``numpy.random.default_rng(numpy.random.SeedSequence(seed).spawn(n_resamples)[s])``, so it depends only on
    ``seed`` and ``s``: the same seed gives the same resamples whatever the number of workers and whichever of
    them draws it, and the first 50 resamples of a run of 100 are those of a run of 50.
    """
    children = np.random.SeedSequence(seed).spawn(n_resamples)
    out = []
    for child in children:
        rng = np.random.default_rng(child)
        if scheme == "subsample":
            rows = rng.choice(n, size=n // 2, replace=False)
        else:
            rows = rng.integers(0, n, size=n)
        out.append(np.sort(rows))
    return out


def resample_seed(seed: int, index: int) -> int:
    """The seed of resample ``index``'s fit (for the methods with random parts): drawn from its own child of
    ``seed``'s :class:`numpy.random.SeedSequence`, so, like the rows, it does not depend on who fits it."""
    child = np.random.SeedSequence(seed, spawn_key=(index, 1))
    return int(child.generate_state(1)[0])


def matched(reference: np.ndarray, loadings: np.ndarray) -> np.ndarray:
    r"""``loadings`` (``p x r``) with their columns reordered and signs flipped to match ``reference``'s.

    The columns are assigned by the Hungarian algorithm (:func:`scipy.optimize.linear_sum_assignment`) on
    :math:`|U^\top V|`, the absolute inner products of the reference loadings :math:`U` (the fit on all rows)
    and the resample's :math:`V`, maximising their sum: components that swap order in a resample (close
    variances) are compared with the right one. Each matched column then gets the sign of positive inner
    product with its reference (a zero inner product keeps its sign).
    """
    if loadings.shape[1] == 1:
        order = np.array([0])
    else:
        _, order = linear_sum_assignment(-np.abs(reference.T @ loadings))
    out = loadings[:, order]
    signs = np.sign(np.einsum("ij,ij->j", reference, out))
    signs[signs == 0] = 1.0
    return out * signs


def false_selection_bound(average_size: float, threshold: float, p: int) -> float:
    r"""Meinshausen & Bühlmann's bound on the expected number of falsely selected variables.

    .. math:: \mathbb E[V] \le \frac{q^2}{(2\pi_{thr} - 1)\,p}

    (Meinshausen & Bühlmann 2010, Theorem 1), for a threshold :math:`\pi_{thr} \in (1/2, 1]`, :math:`q` the
    average number of variables selected per resample and :math:`p` the number of variables that can be
    selected. ``inf`` for a threshold of at most 1/2, where the theorem says nothing. It holds when the selection
    of the null variables is exchangeable and the procedure is no worse than random guessing, for subsamples of
    half the rows.
    """
    if threshold <= 0.5:
        return math.inf
    return average_size**2 / ((2.0 * threshold - 1.0) * p)


def threshold_for_bound(average_size: float, error_bound: float, p: int) -> float:
    r"""The least threshold :math:`\pi_{thr}` at which :func:`false_selection_bound` is at most ``error_bound``:
    :math:`\pi_{thr} = 1/2 + q^2 / (2 p\, \mathbb E[V])`; above 1 where no threshold achieves it."""
    return 0.5 + average_size**2 / (2.0 * p * error_bound)


def percentile_intervals(values: np.ndarray, level: float) -> np.ndarray:
    """``(lower, upper)`` percentile interval of ``values`` along the last axis, at ``level`` (0.95: the 2.5 and
    97.5 percentiles, linear interpolation); shape ``values.shape[:-1] + (2,)``."""
    tail = 100.0 * (1.0 - level) / 2.0
    return np.stack([np.percentile(values, tail, axis=-1), np.percentile(values, 100.0 - tail, axis=-1)], axis=-1)


def sparse_columns(loadings: np.ndarray) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """A resample's matched loadings kept as ``(rows, values)`` of each column's nonzeros: ``k`` numbers per
    loading instead of ``p``, so that a hundred resamples of 30 000 genes are held in kilobytes."""
    out = []
    for j in range(loadings.shape[1]):
        rows = np.flatnonzero(loadings[:, j])
        out.append((rows, loadings[rows, j].copy()))
    return tuple(out)


def summarise(
    reference: np.ndarray, resampled: Sequence[tuple[tuple[np.ndarray, np.ndarray], ...]], level: float
) -> dict[str, np.ndarray]:
    """The per-variable summaries of the resamples' matched loadings (each resample as :func:`sparse_columns` of
    its :func:`matched` loadings):

    * ``probabilities`` (``p x r``): the share of resamples whose loading selects the variable;
    * ``intervals`` (``p x r x 2``): the percentile interval of each loading's entry at ``level`` (a variable
      never selected has the interval ``[0, 0]``);
    * ``jaccard`` (``n_resamples x r``): each resample's support against the reference's;
    * ``sizes`` (``n_resamples x r``): each resample's number of selected variables.
    """
    p, r = reference.shape
    count = len(resampled)
    probabilities = np.zeros((p, r))
    intervals = np.zeros((p, r, 2))
    jaccards = np.zeros((count, r))
    sizes = np.zeros((count, r), dtype=np.intp)
    for j in range(r):
        own = np.flatnonzero(reference[:, j])
        ever = np.unique(np.concatenate([columns[j][0] for columns in resampled])) if count else own[:0]
        values = np.zeros((ever.size, count))  # the variables ever selected x the resamples; the rest stay 0
        for s, columns in enumerate(resampled):
            rows, entries = columns[j]
            values[np.searchsorted(ever, rows), s] = entries
            sizes[s, j] = rows.size
            union = np.union1d(rows, own).size
            jaccards[s, j] = 1.0 if union == 0 else np.intersect1d(rows, own, assume_unique=True).size / union
        if ever.size:
            probabilities[ever, j] = np.count_nonzero(values, axis=1) / count
            intervals[ever, j] = percentile_intervals(values, level)
    return {"probabilities": probabilities, "intervals": intervals, "jaccard": jaccards, "sizes": sizes}
