r"""One tie policy for every decision a part makes by ranking variables.

Initializers pick the variables of largest variance, truncations keep the
entries of largest magnitude, feature selectors keep the rows of largest
score, exhaustive searches keep the best support. Scores that are equal in
exact arithmetic are rarely equal in floating point: the variances of
standardised data are :math:`1 \pm 10^{-16}`, and which of them is "largest"
would depend on how the standardisation was computed, on the BLAS, on the
order of the variables. Every part therefore ranks through this module, which
treats nearly equal scores as tied and breaks ties by one documented rule.

The rule
--------
Let :math:`s_1, \dots, s_p` be the scores of one decision (one vector, or one
column of a matrix) and

.. math::

    \tau = \mathrm{rtol}\cdot\max_i |s_i|, \qquad \mathrm{rtol} = 10^{-10}
    \;(:data:`RTOL`).

* **Ties.** Sorted in decreasing order, two neighbouring scores whose
  difference is at most :math:`\tau` are tied; ties chain, so a run of
  neighbours with gaps :math:`\le \tau` is one *tie group*. Scores equal in
  exact arithmetic but computed differently (rounding noise is
  :math:`\sim 10^{-16}` relative) are therefore tied, and the tolerance scales
  with the scores: multiplying every score by :math:`c > 0` changes no
  decision.
* **Order.** Groups come in decreasing order of their scores; within a group
  the **smaller variable index comes first**. :func:`order` is that order;
  :func:`top_k` keeps its first ``k`` (the ``k`` largest scores, a tie at the
  boundary going to the smaller indices); :func:`argmax` is its first element.
  With several keys (:func:`order` ``(primary, secondary, ...)``), ties of the
  primary key are ordered by the secondary key (with its own tolerance), and
  so on, the index coming last.
* **Comparisons.** A candidate *improves* on an incumbent
  (:func:`improves`) only when it exceeds it by more than
  :math:`\mathrm{rtol}\cdot\max(|a|, |b|)`; otherwise the incumbent (the
  earlier support, the earlier start) is kept.

Consequences: data with distinct scores are ranked as by an exact sort, so
a permutation of the variables permutes every decision. Scores that tie are
not left to the index where a part can do better: the parts that rank
variables by a score standardised data tie (the starts ``max-diagonal`` and
``max-norm-column``, greedy selection at ``k = 1``, the exhaustive searches'
tied supports) rank the tied ones by a second key of the values,
:func:`leading_magnitudes` (:math:`|u_1|`), so a correlation matrix starts
at the variable weighing most in the first principal component however the
columns are ordered. Only variables still tied on that key (equal in exact
arithmetic: duplicated columns, a symmetry of :math:`C`) go to the smaller
index; they are interchangeable, so the results differ only by relabelling
them.

Cost. :func:`order` sorts, :math:`O(p\log p)`. :func:`top_k`,
:func:`top_k_mask` and :func:`argmax` are :math:`O(p)` (one
``numpy.partition``) when the ``k``-th and ``(k+1)``-th largest scores are
more than :math:`\tau` apart, which is the case unless there is a tie at the
boundary; only then do they sort (the affected columns only).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "RTOL", "argmax", "argmax_columns", "improves", "improves_on_each", "leading_magnitudes", "order", "order_columns", "tolerance", "top_k",
    "top_k_mask", "top_k_mask_of_rows", "top_k_boundaries_of_rows", "top_k_mask_of_tied_row",
]

#: Scores within this fraction of the largest magnitude involved are tied.
RTOL = 1e-10


def tolerance(scores: np.ndarray, rtol: float = RTOL, axis: int | None = None) -> np.ndarray | float:
    r"""The tie tolerance :math:`\tau = \mathrm{rtol}\cdot\max|s|` (per column with ``axis=0``)."""
    magnitude = np.max(np.abs(scores), axis=axis, initial=0.0)
    return rtol * magnitude if axis is not None else float(rtol * magnitude)


def _ranked_groups(keys: tuple[np.ndarray, ...], rtol: float) -> np.ndarray:
    """Tie-group ids (0 = best) of each entry under the lexicographic, tie-aware comparison of ``keys``."""
    p = keys[0].shape[0]
    groups = np.zeros(p, dtype=np.int64)
    for key in keys:
        key = np.asarray(key, dtype=float)
        band = tolerance(key, rtol)
        perm = np.lexsort((-key, groups))  # by coarser group, then key descending (stable: index)
        ks, gs = key[perm], groups[perm]
        new = (gs[1:] != gs[:-1]) | ((ks[:-1] - ks[1:]) > band)
        ids = np.concatenate([[0], np.cumsum(new)])
        groups = np.empty(p, dtype=np.int64)
        groups[perm] = ids
    return groups


def order(scores: np.ndarray, *more: np.ndarray, rtol: float = RTOL) -> np.ndarray:
    """All indices, by decreasing score; tied scores (see the module) by increasing index.

    ``more`` are further keys, each ranking (decreasingly, with its own
    tolerance) the entries its predecessors tie; the index decides last.
    """
    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 1:
        raise ValueError(f"order ranks a vector; got shape {scores.shape} (use order_columns for a matrix)")
    if scores.size == 0:
        return np.zeros(0, dtype=np.int64)
    groups = _ranked_groups((scores, *more), rtol)
    return np.lexsort((np.arange(scores.shape[0]), groups))


def order_columns(matrix: np.ndarray, rtol: float = RTOL) -> np.ndarray:
    """:func:`order` of every column: a ``p x r`` array of row indices, column by column."""
    m = np.asarray(matrix, dtype=float)
    p = m.shape[0]
    if p == 0:
        return np.zeros(m.shape, dtype=np.int64)
    band = tolerance(m, rtol, axis=0)
    perm = np.argsort(-m, axis=0, kind="stable")
    ranked = np.take_along_axis(m, perm, axis=0)
    new = (ranked[:-1] - ranked[1:]) > band
    groups = np.concatenate([np.zeros((1,) + m.shape[1:], dtype=np.int64), np.cumsum(new, axis=0)], axis=0)
    # within a group, by index: sort the key (group, index) - an integer below p * p
    final = np.argsort(groups * p + perm, axis=0, kind="stable")
    return np.take_along_axis(perm, final, axis=0)


#: Slabs of a column whose element-wise maximum :func:`top_k_mask` partitions instead of the column.
SLABS = 16
#: Up to this many scores in all (rows times their length) :func:`_kth_and_next_largest` partitions the rows whole:
#: the slabs' fixed cost (a dozen NumPy calls, about 70 us) exceeds the partition's there. One thread, k = 20: one
#: row of 500 scores took 6 us partitioned and 72 us by the slabs, 10 rows of 500 31 and 127 us, one row of 10 000
#: 43 and 101 us; at 20 000 scores it depends on the shape (10 rows of 2000: 200 and 151 us; 40 of 500: 204 and 298).
WHOLE_PARTITION_SCORES = 1 << 14


def _kth_and_next_largest(rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    r"""The ``k``-th and ``(k+1)``-th largest entries of every row of ``rows`` (``c x p``, C order, ``k < p``).

    Each row is cut into :data:`SLABS` slabs of :math:`L = \lfloor p/S \rfloor` entries (and a tail
    of fewer than :math:`S`); the element-wise maximum of the slabs, :math:`m_i = \max_s x_{sL + i}`, and
    the tail are :math:`L + p - SL` entries of distinct positions, so the ``(k+1)``-th largest of them,
    :math:`t`, is at most the row's ``(k+1)``-th largest entry: every entry among the ``k + 1`` largest is
    :math:`\ge t`. Only these candidates (about ``k + 1`` for scores in no particular order, at most
    :math:`S(k+1)` without ties at :math:`t`) are sorted. One pass over the data and a partition of
    :math:`p/S` numbers per row, where partitioning the row takes :math:`O(p)` with a larger constant
    (the values found are the same numbers). Rows too short for the bound (:math:`L < k + 1`), and rows of
    :data:`WHOLE_PARTITION_SCORES` scores or fewer in all, are partitioned whole. Long rows and large ``k``
    (:data:`BAND_MIN_SCORES`, :data:`BAND_MIN_RANK`), where the candidates grow as :math:`S(k + 1)`, go through a
    band found from a sample instead (:func:`_kth_and_next_by_band`).
    """
    c, p = rows.shape
    if p >= BAND_MIN_SCORES and k + 1 > BAND_MIN_RANK:
        return _kth_and_next_by_band(rows, k)
    length = p // SLABS
    if c * p > WHOLE_PARTITION_SCORES and length + (p - SLABS * length) >= k + 1 and length > 0:
        maxima = rows[:, : SLABS * length].reshape(c, SLABS, length).max(axis=1)
        if p > SLABS * length:
            maxima = np.concatenate([maxima, rows[:, SLABS * length :]], axis=1)
        width = maxima.shape[1]
        bound = np.partition(maxima, width - k - 1, axis=1)[:, width - k - 1]
        candidates = rows >= bound[:, None]
        counts = np.count_nonzero(candidates, axis=1)
        if np.all(counts >= k + 1):  # always, unless NaN entries
            values = rows[candidates]
            ranked = values[np.lexsort((values, np.repeat(np.arange(c), counts)))]  # ascending, row by row
            ends = np.cumsum(counts)
            return ranked[ends - k], ranked[ends - k - 1]
    part = np.partition(rows, (p - k - 1, p - k), axis=1)
    return part[:, p - k], part[:, p - k - 1]


#: Rows of at least this many scores whose ``k + 1`` exceeds :data:`BAND_MIN_RANK` find their ``k``-th and
#: ``(k+1)``-th largest scores by :func:`_kth_and_next_by_band`: on 20 rows of 100 000 magnitudes it took 4.5 ms at
#: k = 1000 and 7.7 ms at k = 15 000, where the slabs took 8.8 ms and a whole partition 21.8 ms (the slabs' candidates
#: grow as ``S(k + 1)``: 72 ms at k = 5882); at k = 100 the slabs took 3.0 ms and the band 3.6 ms.
BAND_MIN_SCORES = 1 << 14
BAND_MIN_RANK = 256
#: The band's sample: every ``p // BAND_SAMPLE``-th score of the row.
BAND_SAMPLE = 4096
#: The band reaches this many standard deviations of the sample's rank either side of its expected rank.
BAND_DEVIATIONS = 4.0


def _kth_and_next_by_band(rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    r""":func:`_kth_and_next_largest` through a band found from a sample (``c x p`` rows, :math:`k < p`), as in
    Floyd & Rivest's selection (*Expected time bounds for selection*, Comm. ACM 18(3), 1975).

    Of a row's :math:`m` sampled scores (every :math:`\lfloor p/m \rfloor`-th, :data:`BAND_SAMPLE`), about
    :math:`qm` (:math:`q = k/p`) are at least its ``k``-th largest, give or take :math:`\sigma =
    \sqrt{mq(1-q)}`. The sample's scores of ranks :math:`qm \mp (4\sigma + 2)` (:data:`BAND_DEVIATIONS`) from
    the top are the band's ends :math:`h \ge l`. The band is exact whenever its counts say so: with :math:`a`
    scores above :math:`h`, if :math:`a < k` the ``k``-th largest is at most :math:`h`, and if at least
    :math:`k + 1` scores are :math:`\ge l` the ``(k+1)``-th largest is at least :math:`l`; both are then the
    :math:`(k - a)`-th and :math:`(k + 1 - a)`-th largest of the scores in :math:`[l, h]`, a partition of about
    :math:`2(4\sigma + 2)\,p/m` numbers instead of ``p``. A row whose counts fail (a sample far from the row's
    distribution, or NaN) is partitioned whole: the values found are the same numbers either way.
    """
    c, p = rows.shape
    step = max(1, p // BAND_SAMPLE)
    sample = rows[:, ::step]
    m = sample.shape[1]
    share = k / p
    reach = BAND_DEVIATIONS * math.sqrt(m * share * (1.0 - share)) + 2.0
    top_rank = max(0, math.floor(share * m - reach))  # ranks from the top: 0 is the largest
    bottom_rank = min(m - 1, math.ceil(share * m + reach))
    ends = np.partition(sample, (m - 1 - bottom_rank, m - 1 - top_rank), axis=1)
    highs, lows = ends[:, m - 1 - top_rank], ends[:, m - 1 - bottom_rank]
    kth, after = np.empty(c), np.empty(c)
    for i in range(c):
        row, high, low = rows[i], highs[i], lows[i]
        above = int(np.count_nonzero(row > high))
        band = row[(row >= low) & (row <= high)]
        if above < k and above + band.size >= k + 1:
            rank, size = k - above, band.size  # the k-th largest is the band's rank-th largest
            part = np.partition(band, (size - rank - 1, size - rank))
            kth[i], after[i] = part[size - rank], part[size - rank - 1]
        else:
            part = np.partition(row, (p - k - 1, p - k))
            kth[i], after[i] = part[p - k], part[p - k - 1]
    return kth, after


def top_k_mask(matrix: np.ndarray, k: int, rtol: float = RTOL) -> np.ndarray:
    """Boolean mask of the ``k`` entries each column of ``matrix`` keeps: the first ``k`` of its :func:`order`.

    :math:`O(p)` per column unless the column has a tie at its ``k``-th
    largest score; such columns are sorted. The columns are copied to
    contiguous rows once (a ``p x r`` matrix in C order has them strided)
    and ranked by :func:`top_k_mask_of_rows`; the mask is its transpose.
    """
    m = np.asarray(matrix, dtype=float)
    p = m.shape[0]
    if not 0 <= k <= p:
        raise ValueError(f"k must be in [0, {p}]; got {k}")
    rows = np.array(m.reshape(p, -1).T, order="C")
    return top_k_mask_of_rows(rows, k, rtol).T.reshape(m.shape)


def top_k_mask_of_rows(rows: np.ndarray, k: int, rtol: float = RTOL) -> np.ndarray:
    """:func:`top_k_mask` of ``rows.T``, for the scores already laid out one decision a row (``c x p``).

    The ``k``-th and ``(k+1)``-th largest scores of each row come from
    :func:`_kth_and_next_largest` (:math:`O(p)`); the mask is every score at
    least the ``k``-th largest, except in a row with a tie across that
    boundary, which is ranked by :func:`order`.
    """
    rows = np.asarray(rows, dtype=float)
    c, p = rows.shape
    if not 0 <= k <= p:
        raise ValueError(f"k must be in [0, {p}]; got {k}")
    if k == 0 or k == p:
        return np.full(rows.shape, k == p)
    kth, tied = top_k_boundaries_of_rows(rows, k, rtol)
    mask = rows >= kth[:, None]
    for row in tied:
        mask[row] = top_k_mask_of_tied_row(rows[row], k, rtol)
    return mask


def top_k_boundaries_of_rows(
    rows: np.ndarray, k: int, rtol: float = RTOL, *, nonnegative: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Each row's ``k``-th largest score (``0 < k < p``) and the rows tied across that boundary.

    A row not tied there keeps exactly its scores at least its ``k``-th largest (what :func:`top_k_mask_of_rows`
    keeps); a tied row (its ``k``-th and ``(k+1)``-th largest scores within ``rtol`` of its largest magnitude)
    keeps :func:`top_k_mask_of_tied_row`. :math:`O(p)` per row (:func:`_kth_and_next_largest`). ``nonnegative``
    says that no score is negative (magnitudes): the largest magnitude is then the largest score."""
    kth, after = _kth_and_next_largest(rows, k)
    largest = rows.max(axis=1) if nonnegative else np.maximum(rows.max(axis=1), -rows.min(axis=1))
    return kth, np.flatnonzero((kth - after) <= rtol * largest)


def top_k_mask_of_tied_row(row: np.ndarray, k: int, rtol: float = RTOL) -> np.ndarray:
    """The ``k`` scores of ``row`` a tied boundary keeps: the first ``k`` of :func:`order` (a sort)."""
    mask = np.zeros(row.shape, dtype=bool)
    mask[order(row, rtol=rtol)[:k]] = True
    return mask


def top_k(scores: np.ndarray, k: int, rtol: float = RTOL) -> np.ndarray:
    """The indices of the ``k`` largest scores, best first: the first ``k`` of :func:`order`.

    :math:`O(p + k\\log k)` unless there is a tie at the ``k``-th largest score.
    """
    s = np.asarray(scores, dtype=float)
    if s.ndim != 1:
        raise ValueError(f"top_k ranks a vector; got shape {s.shape} (use top_k_mask for columns)")
    p = s.shape[0]
    if not 0 <= k <= p:
        raise ValueError(f"k must be in [0, {p}]; got {k}")
    if k == 0:
        return np.zeros(0, dtype=np.int64)
    band = tolerance(s, rtol)
    if k < p:
        part = np.partition(s, (p - k - 1, p - k))
        if part[p - k] - part[p - k - 1] > band:  # no tie across the boundary: rank the k kept ones only
            kept = np.flatnonzero(s >= part[p - k])
            return kept[_order_with_band(s[kept], band)]
    return order(s, rtol=rtol)[:k]


def _order_with_band(s: np.ndarray, band: float) -> np.ndarray:
    perm = np.argsort(-s, kind="stable")
    ranked = s[perm]
    groups = np.concatenate([[0], np.cumsum((ranked[:-1] - ranked[1:]) > band)])
    return perm[np.argsort(groups * s.shape[0] + perm, kind="stable")]


def argmax(scores: np.ndarray, rtol: float = RTOL) -> int:
    """The index of the largest score; among scores tied with it, the smallest index. :math:`O(p)` without a tie."""
    return int(top_k(scores, 1, rtol)[0])


def argmax_columns(matrix: np.ndarray, rtol: float = RTOL) -> np.ndarray:
    """:func:`argmax` of every column of a ``p x r`` matrix."""
    mask = top_k_mask(matrix, 1, rtol)
    return np.argmax(mask, axis=0)


def improves(candidate: float, incumbent: float, rtol: float = RTOL) -> bool:
    r"""Whether ``candidate`` beats ``incumbent`` by more than the tie tolerance :math:`\mathrm{rtol}\max(|a|, |b|)`.

    A best-of search keeps its incumbent (the earlier support, the earlier
    start) on a tie. An incumbent of :math:`-\infty` (none yet) is beaten by
    any finite candidate.
    """
    if not np.isfinite(incumbent):
        return bool(candidate > incumbent)
    if not np.isfinite(candidate):
        return False
    return bool(candidate - incumbent > rtol * max(abs(candidate), abs(incumbent)))


def improves_on_each(candidate: float, incumbents: np.ndarray, rtol: float = RTOL) -> np.ndarray:
    r""":func:`improves` of one finite ``candidate`` on every entry of ``incumbents``, elementwise (a non-finite
    incumbent, :math:`-\infty`, is beaten)."""
    incumbents = np.asarray(incumbents, dtype=float)
    with np.errstate(invalid="ignore"):
        tied = np.isfinite(incumbents) & (candidate - incumbents <= rtol * np.maximum(abs(candidate), np.abs(incumbents)))
    return ~tied


def leading_magnitudes(covariance: object) -> np.ndarray:
    r"""The order-free second key for variables tied on their first: :math:`|u_1|`, the magnitudes of the
    entries of the leading eigenvector of ``covariance`` (a :class:`~spcakit.numerics.operators.CovarianceOperator`).

    Parts that rank variables by a score that standardised data tie (variances, single-variable
    objectives) rank the tied ones by how much each weighs in the first principal component: a property
    of the values, so a permutation of the variables permutes the decision. Variables still tied on it
    (equal in exact arithmetic: duplicated columns, or variables exchanged by a symmetry of :math:`C`) are
    interchangeable for every objective, and go to the smaller index. One leading eigenpair; callers
    compute it only when a tie has to be broken.
    """
    _, vectors = covariance.top_eigenpairs(1)  # type: ignore[attr-defined]
    return np.abs(np.asarray(vectors, dtype=float)[:, 0])
