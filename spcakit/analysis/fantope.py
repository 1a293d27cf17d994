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
from spcakit.numerics.thresholding import PARTIAL_PAIRS, RHO_GRID, thresholded_blocks

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


def fantope_threshold_bounds(covariance: object, pairs: Sequence[tuple[int, int]], rhos: Any = None
                             ) -> dict[tuple[int, int], float]:
    r"""For each ``(m, K)`` of ``pairs``, an upper bound on :math:`\sum_{t \le m} u_t^\top C u_t` over **orthonormal**
    :math:`u_1, \dots, u_m` with :math:`\sum_t \|u_t\|_0 \le K`: the least over ``rhos`` of

    .. math::

        F_\rho(m, K) = \Lambda_m(M_\rho) + \rho\,(K - m),

    :math:`\Lambda_m(M_\rho)` the sum of the ``m`` largest eigenvalues of :math:`M_\rho`, ``c`` with its off-diagonal
    entries soft-thresholded by :math:`\rho` (:func:`~spcakit.numerics.thresholding.thresholded_blocks`). Proof:
    :math:`C = M_\rho + R_\rho` with :math:`R_\rho` zero on the diagonal and :math:`|R_{ij}| \le \rho`; the orthonormal
    :math:`u_t` give :math:`\sum_t u_t^\top M_\rho u_t \le \Lambda_m(M_\rho)` (Ky Fan), and
    :math:`u_t^\top R_\rho u_t \le \rho(\|u_t\|_1^2 - 1) \le \rho(\|u_t\|_0 - 1)`. It is the Fantope-with-:math:`\ell_1`
    relaxation of Vu, Cho, Lei & Rohe (*Fantope projection and selection*, NIPS 2013) at the dual point the
    soft-threshold gives, and the threshold bound (:func:`~spcakit.analysis.bounds.threshold_bound`) for ``m = 1`` without
    its knapsack. At
    :math:`\rho = 0` it is :math:`\Lambda_m(C)`, Ky Fan's. ``rhos`` defaults to
    :data:`~spcakit.numerics.thresholding.RHO_GRID` times the largest diagonal entry, and 0. Each value is raised for
    rounding (:func:`~spcakit.analysis.bounds.raised_for_rounding`). One decomposition of :math:`M_\rho` per :math:`\rho` serves every pair; with
    the default grid, each pair's best :math:`\rho` is then refined :data:`FANTOPE_REFINEMENTS` times (its two
    neighbours at half the previous step in :math:`\log\rho`). Up to :data:`FANTOPE_POLISH_LIMIT` variables each pair's
    dual point is then improved by projected subgradient steps (:func:`_polished_fantope`).
    """
    c = densify(as_operator(covariance))
    p = c.shape[0]
    scale = float(np.abs(np.diag(c)).max(initial=0.0))
    given = rhos
    if rhos is None:
        rhos = [0.0, *(share * scale for share in RHO_GRID)]
    most = max((m for m, _ in pairs), default=0)
    best = {pair: (np.inf, 0.0) for pair in pairs}

    def evaluate(rho: float) -> None:
        blocks = thresholded_blocks(c, rho, complete=most > PARTIAL_PAIRS)
        values = np.concatenate([blocks.diagonal[blocks.alone], *(block[1] for block in blocks.blocks)])
        sums = np.maximum.accumulate(np.cumsum(np.sort(values)[::-1][:most]))  # indefinite M: fewer may explain more
        for m, total in pairs:
            value = float(sums[min(m, sums.shape[0]) - 1]) + rho * max(total - m, 0)
            if value < best[(m, total)][0]:
                best[(m, total)] = (value, rho)

    for rho in rhos:
        evaluate(float(rho))
    if given is None and len(RHO_GRID) > 1:  # each pair's best rho refined: its neighbours at half the step, thrice
        step = np.log(RHO_GRID[1] / RHO_GRID[0]) / 2
        for _ in range(FANTOPE_REFINEMENTS):
            for center in sorted({rho for _, rho in best.values() if rho > 0}):
                evaluate(float(center * np.exp(-step)))
                evaluate(float(center * np.exp(step)))
            step /= 2
    best_values = {pair: value for pair, (value, _) in best.items()}
    if p <= FANTOPE_POLISH_LIMIT:
        for (m, total), (value, rho) in best.items():
            if rho > 0:
                best_values[(m, total)] = min(value, _polished_fantope(c, m, total, rho))
    return {pair: raised_for_rounding(value, p, scale) for pair, value in best_values.items()}


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
