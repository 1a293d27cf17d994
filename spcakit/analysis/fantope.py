r"""A bound on what orthogonal sparse loadings explain together: the Fantope relaxation with an :math:`\ell_1` budget.

For orthonormal :math:`u_1, \dots, u_m` with :math:`\sum_t \|u_t\|_0 \le K`, :func:`fantope_threshold_bounds` bounds
:math:`\sum_t u_t^\top C u_t` by dual points of the relaxation of Vu, Cho, Lei & Rohe (*Fantope projection and
selection*, NIPS 2013): the soft-threshold of :math:`C`'s off-diagonal entries, on a grid of thresholds, then improved by
projected subgradient steps. It is the joint bound of the certificate under ``constraint="orthogonal"``
(:func:`spcakit.analysis.certificate.cumulative_bounds`); for ``m = 1`` it is the threshold bound
(:func:`spcakit.analysis.bounds.threshold_bound`) without its knapsack.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from spcakit.analysis.bounds import as_operator, raised_for_rounding
from spcakit.numerics.operators import densify
from spcakit.numerics.thresholding import RHO_GRID, thresholded_blocks

__all__ = ["FANTOPE_LIMIT", "FANTOPE_POLISH_LIMIT", "FANTOPE_POLISH_STEPS", "FANTOPE_REFINEMENTS",
           "fantope_threshold_bounds"]

#: :func:`fantope_threshold_bounds` runs up to this many variables (each :math:`\rho` decomposes :math:`M_\rho`).
FANTOPE_LIMIT = 1000
#: ... and refines each pair's best :math:`\rho` this many times.
FANTOPE_REFINEMENTS = 3
#: Up to this many variables each pair's dual point is polished by :data:`FANTOPE_POLISH_STEPS` subgradient steps
#: (one ``p x p`` eigen-decomposition each: 100 steps take about 0.1 s at ``p = 64``).
FANTOPE_POLISH_LIMIT = 200
FANTOPE_POLISH_STEPS = 100


def fantope_threshold_bounds(covariance: object, groups: Sequence[tuple[int, ...]], rhos: Any = None, *,
                             orthonormal: bool = True) -> dict[tuple[int, ...], float]:
    r"""For each group of cardinalities :math:`(k_1, \dots, k_m)` of ``groups``, an upper bound on
    :math:`\sum_{t \le m} u_t^\top C u_t` over **orthonormal** :math:`u_1, \dots, u_m` with :math:`\|u_t\|_0 \le k_t`:
    the least over ``rhos`` of

    .. math::

        F_\rho = \max\Big\{\sum_i \lambda_i w_i :\ 0 \le w_i \le \min\big(1, \textstyle\sum_t c_i(k_t)\big),\
        \sum_i w_i \le m\Big\} + \rho\,(K - m), \qquad K = \textstyle\sum_t k_t,

    for the eigenpairs :math:`(\lambda_i, v_i)` of :math:`M_\rho`, ``c`` with its off-diagonal entries soft-thresholded
    by :math:`\rho` (:func:`~spcakit.numerics.thresholding.thresholded_blocks`), and :math:`c_i(k)` the sum of the ``k``
    largest squared entries of :math:`v_i`. Proof: :math:`C = M_\rho + R_\rho` with :math:`R_\rho` zero on the diagonal
    and :math:`|R_{ij}| \le \rho`, so :math:`u_t^\top R_\rho u_t \le \rho(\|u_t\|_1^2 - 1) \le \rho(k_t - 1)`; and
    :math:`\sum_t u_t^\top M_\rho u_t = \sum_i \lambda_i w_i` with :math:`w_i = \sum_t (v_i^\top u_t)^2`, where
    :math:`w_i \le 1` (the :math:`u_t` are orthonormal), :math:`(v_i^\top u_t)^2 \le c_i(k_t)` (Cauchy-Schwarz on the
    support of :math:`u_t`) and :math:`\sum_i w_i = m`. The maximum is a fractional knapsack of unit weights: the
    largest :math:`\lambda_i` filled to their caps. Without the caps it is Ky Fan's :math:`\Lambda_m(M_\rho)`, the
    Fantope-with-:math:`\ell_1` relaxation of Vu, Cho, Lei & Rohe (*Fantope projection and selection*, NIPS 2013) at
    the soft-threshold's dual point; for ``m = 1`` the threshold bound (:func:`~spcakit.analysis.bounds.threshold_bound`)
    in its simplest form. Eigenpairs a large block does not compute (it keeps its
    :data:`~spcakit.numerics.thresholding.PARTIAL_PAIRS` leading ones) count as one item of the smallest computed
    eigenvalue, of cap ``m``. At :math:`\rho = 0` the bound is at most :math:`\Lambda_m(C)`. ``rhos`` defaults to
    :data:`~spcakit.numerics.thresholding.RHO_GRID` times the largest diagonal entry, and 0; with the default grid each
    group's best :math:`\rho` is then refined :data:`FANTOPE_REFINEMENTS` times (its two neighbours at half the
    previous step in :math:`\log\rho`), and up to :data:`FANTOPE_POLISH_LIMIT` variables its Ky Fan form is improved
    by projected subgradient steps (:func:`_polished_fantope`). Each value is raised for rounding
    (:func:`~spcakit.analysis.bounds.raised_for_rounding`); one decomposition of :math:`M_\rho` per :math:`\rho` serves
    every group.

    With ``orthonormal=False`` the value bounds :math:`\operatorname{tr}(CP)` for the projector :math:`P` on any
    ``m``-dimensional span of loadings with those cardinalities (what loadings with uncorrelated scores explain at
    most, :func:`spcakit.analysis.certificate.cumulative_bounds`): the same knapsack (:math:`w_i = \|Pv_i\|^2` is at
    most the squares of :math:`v_i` on the union of the supports, at most :math:`\sum_t c_i(k_t)`), but the
    soft-threshold's term is :math:`\rho\,(K\sqrt m - m)`: the projector on a span of non-orthogonal sparse loadings
    can have more off-diagonal mass than :math:`K - m`, and :math:`\sum_{ij}|P_{ij}| \le K\|P\|_F = K\sqrt m` on the
    union. No subgradient polish (its steps assume the orthonormal form).
    """
    c = densify(as_operator(covariance))
    p = c.shape[0]
    scale = float(np.abs(np.diag(c)).max(initial=0.0))
    given = rhos
    if rhos is None:
        rhos = [0.0, *(share * scale for share in RHO_GRID)]
    groups = [tuple(int(k) for k in group) for group in groups]
    best = {group: (np.inf, 0.0) for group in groups}
    cardinalities = sorted({k for group in groups for k in group})

    def evaluate(rho: float) -> None:
        values, caps, left_out = _capped_spectrum(thresholded_blocks(c, rho), cardinalities)
        order = np.argsort(-values, kind="stable")
        values, left_out = values[order], left_out[order]
        for group in groups:
            m = len(group)
            limit = np.where(left_out > 0, np.minimum(left_out, m), np.minimum(1.0, sum(caps[k] for k in group)[order]))
            spread = sum(group) * (1.0 if orthonormal else float(np.sqrt(m))) - m  # the off-diagonal mass allowed
            value = _knapsack(values, limit, m) + rho * max(spread, 0.0)
            if value < best[group][0]:
                best[group] = (value, rho)

    for rho in rhos:
        evaluate(float(rho))
    if given is None and len(RHO_GRID) > 1:  # each group's best rho refined: its neighbours at half the step, thrice
        step = np.log(RHO_GRID[1] / RHO_GRID[0]) / 2
        for _ in range(FANTOPE_REFINEMENTS):
            for center in sorted({rho for _, rho in best.values() if rho > 0}):
                evaluate(float(center * np.exp(-step)))
                evaluate(float(center * np.exp(step)))
            step /= 2
    best_values = {group: value for group, (value, _) in best.items()}
    if p <= FANTOPE_POLISH_LIMIT and orthonormal:
        for group, (value, rho) in best.items():
            if rho > 0:
                best_values[group] = min(value, _polished_fantope(c, len(group), sum(group), rho))
    return {group: raised_for_rounding(value, p, scale) for group, value in best_values.items()}


def _capped_spectrum(blocks: Any, cardinalities: Sequence[int]
                     ) -> tuple[np.ndarray, dict[int, np.ndarray], np.ndarray]:
    r"""The eigenvalues of :math:`M_\rho` from its ``blocks``, per cardinality ``k`` each eigenvector's :math:`c_i(k)`,
    and per item the number of eigenpairs it stands for when a partial block left them out (else 0). A variable alone
    is an eigenvector of its own (:math:`c = 1`); a block's computed pairs give theirs; the pairs a partial block
    leaves out are one item of its smallest computed eigenvalue (each is at most that), whose weight may reach the
    smaller of their number and the group's size."""
    values = [blocks.diagonal[blocks.alone]]
    caps: dict[int, list[np.ndarray]] = {k: [np.ones(blocks.alone.size)] for k in cardinalities}
    left_out = [np.zeros(blocks.alone.size)]
    for index, (members, block_values, vectors) in enumerate(blocks.blocks):
        squares = np.sort(vectors**2, axis=0)[::-1]  # each eigenvector's squared entries, descending
        prefix = np.cumsum(squares, axis=0)
        values.append(block_values)
        left_out.append(np.zeros(block_values.size))
        for k in cardinalities:
            caps[k].append(np.minimum(prefix[min(k, members.size) - 1], 1.0))
        left = members.size - block_values.size
        if not blocks.is_complete(index) and left > 0:
            values.append(np.array([float(block_values.min())]))
            left_out.append(np.array([float(left)]))
            for k in cardinalities:
                caps[k].append(np.array([1.0]))
    return (np.concatenate(values), {k: np.concatenate(parts) for k, parts in caps.items()},
            np.concatenate(left_out))


def _knapsack(values: np.ndarray, limits: np.ndarray, m: int) -> float:
    r""":math:`\max \sum_i \lambda_i w_i` s.t. :math:`0 \le w_i \le` ``limits`` and :math:`\sum_i w_i \le m`, for ``values``
    in descending order: the largest positive ones filled to their limits until ``m`` is spent (an indefinite
    :math:`M_\rho`: negative values get nothing)."""
    positive = values > 0
    taken = np.minimum(np.cumsum(limits[positive]), float(m))
    weights = np.diff(np.concatenate([[0.0], taken]))
    return float(np.dot(values[positive], weights))


def _polished_fantope(c: np.ndarray, m: int, total: int, rho: float) -> float:
    r"""The least of :math:`\Lambda_m(C - Z) + \rho(K - m)` (``K`` = ``total``) over the :data:`FANTOPE_POLISH_STEPS`
    points of a projected subgradient descent on :math:`Z` (zero diagonal, :math:`|Z_{ij}| \le \rho`), from the
    soft-threshold's :math:`Z = C - M_\rho`. Each point is a dual point of the relaxation, so each value is a bound
    (the proof of :func:`fantope_threshold_bounds` holds for any such :math:`Z`); the descent only decides how tight.
    A subgradient of :math:`\Lambda_m(C - Z)` in :math:`Z` is :math:`-V_mV_m^\top` (the top ``m`` eigenvectors);
    the steps are :math:`2\rho/\sqrt{i + 1}`. A fixed count, so that the bound is the same on every machine up to
    rounding."""
    z = np.clip(c, -rho, rho)
    np.fill_diagonal(z, 0.0)
    least = np.inf
    for step in range(FANTOPE_POLISH_STEPS):
        values, vectors = np.linalg.eigh(c - z)
        least = min(least, float(values[-m:].sum()) + rho * max(total - m, 0))
        direction = vectors[:, -m:] @ vectors[:, -m:].T
        np.fill_diagonal(direction, 0.0)
        z = np.clip(z + 2.0 * rho / np.sqrt(step + 1.0) * direction, -rho, rho)
    return least
