r"""TPower on many resamples at once: the resamples as row weights of the one data matrix, their iterates as
the columns of one array.

A resample of the rows is a vector of counts :math:`w` (0 or 1 for a subsample, how often each row was drawn for
a bootstrap sample), and its covariance is the weighted covariance of the data :math:`A` (``n x p``):

.. math::

    \mu = A^\top w / m, \qquad C_w v = \big(A^\top (w \circ (A v - \mu^\top v)) - \mu\,
    \mathbf 1^\top (w \circ (Av - \mu^\top v))\big) / (m - 1),

:math:`m = \sum_i w_i` (:math:`/m` and :math:`\mu = 0` uncentred; standardised, :math:`D^{-1} C_w D^{-1}` with
:math:`D` the resample's standard deviations). The data are never copied per resample: every resample reads
:math:`A` through its weights, and the products of a block of resamples' iterates :math:`V` (``p x S``, column
``s`` for resample ``s``) are two matrix products, :math:`AV` and :math:`A^\top Z`. For wide data
(:math:`n \ll p`) that is :math:`2nps` operations per step for the whole block, against a formed
``p x p`` covariance per resample.

The iteration is TPower's (Yuan & Zhang 2013; ``tpower``: the power step, truncation to the ``k`` entries of
largest magnitude, projection deflation :math:`C \leftarrow (I - uu^\top) C (I - uu^\top)`, its stopping rule)
with two differences that make it cheap, both stated in the record: each resample starts from the full fit's
loading (warm start) instead of the variable of largest variance, and once a resample's support holds for a
step the iterate jumps to the support's fixed point, the leading eigenvector of the deflated :math:`C_{SS}`,
formed from the ``n x k`` block of the weighted data (the ``power`` updater's finish, in the factor form). A
resample's loading is therefore a fixed point of TPower on that resample: it keeps its support under the power
step and is the leading eigenvector there.

Blocks of :data:`BLOCK` resamples are the unit of work, so that the numbers do not depend on how many threads or
Dask workers share the blocks.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: Resamples per block: the unit of work, fixed so that results do not depend on the number of workers.
BLOCK = 25

#: Relative change of the objective that ends a resample's iteration (``tpower``'s ``relative-change`` rule).
TOLERANCE = 1e-7

#: Most power steps per loading (``tpower``'s ``max-iterations``).
MAX_STEPS = 1000


class WeightedBlock:
    """The covariances of a block of resamples of ``data`` (``n x p``), given by their row counts ``weights``
    (``n x S``), applied to one iterate per resample."""

    def __init__(self, data: np.ndarray, weights: np.ndarray, *, center: bool, standardize: bool) -> None:
        self.data = data
        self.weights = weights
        self.mass = weights.sum(axis=0)  # m, per resample
        p, size = data.shape[1], weights.shape[1]
        self.mean = (data.T @ weights) / self.mass if center else np.zeros((p, size))
        self.denominator = self.mass - 1.0 if center else self.mass
        squares = (data * data).T @ weights  # sum_i w_i a_ij^2
        variance = (squares - self.mass * self.mean**2) / self.denominator
        # a column constant in a resample (its variance rounding of its mean square) is left out there, as spcakit.fit
        # leaves constant columns out: zero loadings
        varies = variance > 1e-12 * np.maximum(squares / self.mass, np.finfo(float).tiny)
        self.varies = varies
        self.variance = np.where(varies, variance, 0.0)
        if standardize:
            self.inverse_scale = np.where(varies, 1.0 / np.sqrt(np.where(varies, variance, 1.0)), 0.0)
        else:
            self.inverse_scale = varies.astype(float)

    def product(self, v: np.ndarray) -> np.ndarray:
        """:math:`C_s v_s` for every resample ``s`` (the columns of ``v``, ``p x S``)."""
        scaled = v * self.inverse_scale
        rows = np.flatnonzero(scaled.any(axis=1))
        if 2 * rows.size < scaled.shape[0]:  # sparse iterates: A v from the columns they touch
            scores = self.data[:, rows] @ scaled[rows] - np.einsum("ij,ij->j", self.mean[rows], scaled[rows])
        else:
            scores = self.data @ scaled - np.einsum("ij,ij->j", self.mean, scaled)
        weighted = self.weights * scores
        out = self.data.T @ weighted - self.mean * weighted.sum(axis=0)
        return out / self.denominator * self.inverse_scale

    def support_covariances(self, support: np.ndarray, earlier: Sequence[np.ndarray]) -> np.ndarray:
        r"""``S x k x k``: each resample's deflated covariance on its support (``support``: ``S x k`` row indices),
        :math:`(BR)^\top (BR) / (m - 1)` with :math:`B = \operatorname{diag}(\sqrt w)(A - \mathbf 1\mu^\top)D^{-1}`
        and :math:`R = P_1 \cdots P_{t-1} E_S` (the projections of the ``earlier`` loadings), :math:`R` kept as
        :math:`E_S` plus one rank-one term per earlier loading."""
        size, k = support.shape
        n = self.data.shape[0]
        columns = np.arange(size)[:, None]
        root = np.sqrt(self.weights).T[:, :, None]  # S x n x 1
        gathered = self.data[:, support.ravel()].reshape(n, size, k).transpose(1, 0, 2)  # S x n x k
        mean = self.mean.T[columns, support]  # S x k
        scale = self.inverse_scale.T[columns, support]
        factor = root * (gathered - mean[:, None, :]) * scale[:, None, :]
        coefficients: list[np.ndarray] = []  # c_j (S x k) of R = E_S + sum_j u_j c_j^T, in the order applied
        applied: list[np.ndarray] = []
        for u in reversed(earlier):  # P_{t-1} is applied to E_S first
            row = u.T[columns, support]  # u_j^T E_S
            for c, other in zip(coefficients, applied):
                row = row + np.einsum("ij,ij->j", u, other)[:, None] * c
            coefficients.append(-row)
            applied.append(u)
        for c, u in zip(coefficients, applied):
            scaled = u * self.inverse_scale
            scores = (self.data @ scaled - np.einsum("ij,ij->j", self.mean, scaled)).T  # S x n: B u_j (before sqrt w)
            factor = factor + (root[:, :, 0] * scores)[:, :, None] * c[:, None, :]
        return np.einsum("sni,snj->sij", factor, factor) / self.denominator[:, None, None]


def _deflated(block: WeightedBlock, v: np.ndarray, earlier: Sequence[np.ndarray]) -> np.ndarray:
    """:math:`P_{t-1}\\cdots P_1 C P_1 \\cdots P_{t-1} v`, each :math:`P_j = I - u_j u_j^\\top` (projection deflation)."""
    x = v
    for u in reversed(earlier):
        x = x - u * np.einsum("ij,ij->j", u, x)
    z = block.product(x)
    for u in earlier:
        z = z - u * np.einsum("ij,ij->j", u, z)
    return z


def _truncated(z: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` entries of largest magnitude of each column of ``z``, the rest zero, unit length; and their rows
    (``S x k``, sorted)."""
    magnitude = np.abs(z.T)  # S x p, each resample's row contiguous for the partition
    support = np.sort(np.argpartition(magnitude, magnitude.shape[1] - k, axis=1)[:, -k:], axis=1)
    columns = np.arange(z.shape[1])[None, :]
    out = np.zeros_like(z)
    out[support.T, columns] = z[support.T, columns]
    norms = np.linalg.norm(out, axis=0)
    return out / np.where(norms > 0, norms, 1.0), support


#: Variances within this share of the largest are tied (:data:`spcakit.numerics.ties.RTOL`, the ``max-diagonal``
#: start's rule).
TIE_RTOL = 1e-10


def _largest_variance(diagonal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per column of ``diagonal`` (``p x S``), the row of the largest entry, and whether another is tied with it
    (within :data:`TIE_RTOL` of the largest magnitude), where ``max-diagonal`` would break the tie by the leading
    eigenvector."""
    top_two = np.argpartition(-diagonal, 1, axis=0)[:2] if diagonal.shape[0] > 1 else np.zeros((2, diagonal.shape[1]), dtype=np.intp)
    columns = np.arange(diagonal.shape[1])
    first, second = diagonal[top_two[0], columns], diagonal[top_two[1], columns]
    best = np.where(first >= second, top_two[0], top_two[1])
    band = TIE_RTOL * np.max(np.abs(diagonal), axis=0)
    tied = (np.abs(first - second) <= band) & (diagonal.shape[0] > 1)
    return best, tied


def tpower_block(
    data: np.ndarray, weights: np.ndarray, starts: np.ndarray | None, ks: Sequence[int], *, center: bool,
    standardize: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """TPower's loadings on each resample of a block (``S x p x r``), with ``ks[t]`` nonzeros in loading ``t``, and
    which resamples' starts were tied (``S``; see the module's description).

    ``starts`` (``p x r``, the full fit's loadings) start every resample there; ``None`` starts each at its own
    variable of largest (deflated) variance, as ``tpower`` does. Where two variables tie for that (standardised
    data: every variance is 1) ``tpower`` breaks the tie by the leading eigenvector, which this does not compute:
    those resamples are marked, and their loadings are to be fitted one by one by the caller.
    """
    block = WeightedBlock(data, weights, center=center, standardize=standardize)
    p, size = data.shape[1], weights.shape[1]
    columns = np.arange(size)
    diagonal = block.variance * block.inverse_scale**2  # the (standardised) variances, deflated as the loadings come
    tied = np.zeros(size, dtype=bool)
    earlier: list[np.ndarray] = []
    for t, k in enumerate(ks):
        k = int(min(k, p))
        if starts is None:
            best, ties_now = _largest_variance(diagonal)
            tied |= ties_now
            first = np.zeros((p, size))
            first[best, columns] = 1.0
        else:
            first = np.repeat(starts[:, t : t + 1], size, axis=1) * block.varies
        v, support = _truncated(first, 1 if starts is None else k)
        v, support = _iterate(block, v, support, k, earlier)
        if starts is None:  # the next start's variances: diag((I - vv')C(I - vv')) = diag C - 2 v o Cv + (v'Cv) v o v
            z = _deflated(block, v, earlier)
            diagonal = diagonal - 2.0 * v * z + np.einsum("ij,ij->j", v, z) * v * v
        earlier.append(v.copy())
    return np.stack(earlier, axis=2).transpose(1, 0, 2), tied


def _step(z: np.ndarray, support: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The truncated step of each column of ``z`` (as :func:`_truncated`), and whether it kept the column's current
    ``support`` (``S x k``; rows of -1 for none yet). A support is kept when its smallest magnitude in ``z`` exceeds
    every other's, a maximum over the column instead of a partition: only the columns whose support moves are
    partitioned."""
    columns = np.arange(z.shape[1])
    known = support[:, 0] >= 0
    held = np.zeros(z.shape[1], dtype=bool)
    if known.any():
        magnitude = np.abs(z)
        inside = magnitude[support.T, columns].min(axis=0)
        magnitude[support.T, columns] = -1.0
        held = known & (inside > magnitude.max(axis=0))
    step_support = support.copy()
    step = np.zeros_like(z)
    if held.any():
        chosen = np.flatnonzero(held)
        rows = support[chosen].T
        step[rows, chosen] = z[rows, chosen]
    moving = np.flatnonzero(~held)
    if moving.size:
        step[:, moving], step_support[moving] = _truncated(z[:, moving], k)
    norms = np.linalg.norm(step, axis=0)
    return step / np.where(norms > 0, norms, 1.0), step_support, held


def _iterate(
    block: WeightedBlock, v: np.ndarray, support: np.ndarray, k: int, earlier: Sequence[np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """TPower's steps from ``v`` (``p x S``, its rows ``support``) on every resample of the block until each one's
    objective changes by at most :data:`TOLERANCE` (relative) or :data:`MAX_STEPS` steps; the steps take only the
    resamples still moving."""
    p, size = v.shape
    if support.shape[1] != k:  # the start had fewer than k nonzeros: no support has held yet
        support = np.full((size, k), -1, dtype=np.intp)
    previous = np.full(size, np.nan)
    active = np.arange(size)
    for _ in range(MAX_STEPS):
        sub = block if active.size == size else _sub_block(block, active)
        here = [u[:, active] for u in earlier]
        z = _deflated(sub, v[:, active], here)
        objective = np.einsum("ij,ij->j", v[:, active], z)
        moving = ~(np.abs(objective - previous[active]) <= TOLERANCE * np.abs(previous[active]))
        active, z, objective = active[moving], z[:, moving], objective[moving]
        if not active.size:
            break
        previous[active] = objective
        step, step_support, held = _step(z, support[active], k)
        moved = active[~held]
        v[:, moved] = step[:, ~held]
        support[moved] = step_support[~held]
        settled = active[held]
        if settled.size:  # the support held: the fixed point there, the top eigenvector of the deflated C_SS
            matrices = _sub_block(block, settled).support_covariances(support[settled], [u[:, settled] for u in earlier])
            _, vectors = np.linalg.eigh(matrices)
            top = vectors[:, :, -1]  # S' x k, signed as the iterate it replaces
            top = top * np.where(np.einsum("sk,sk->s", top, v[support[settled], settled[:, None]]) < 0, -1.0, 1.0)[:, None]
            fresh = np.zeros((p, settled.size))
            fresh[support[settled].T, np.arange(settled.size)] = top.T
            v[:, settled] = fresh
    return v, support


def _sub_block(block: WeightedBlock, chosen: np.ndarray) -> WeightedBlock:
    """The block restricted to the resamples ``chosen``, for products and support covariances (their statistics kept,
    nothing recomputed; the variances, needed only for the starts, are not carried)."""
    sub = WeightedBlock.__new__(WeightedBlock)
    sub.data = block.data
    sub.weights = block.weights[:, chosen]
    sub.mass = block.mass[chosen]
    sub.mean = block.mean[:, chosen]
    sub.denominator = block.denominator[chosen]
    sub.inverse_scale = block.inverse_scale[:, chosen]
    return sub
