r"""SPCArt's bounds (Hu, Pan, Li & Zhang, *Sparse Principal Component Analysis via Rotation and Truncation*,
IEEE TNNLS 2016): Props. 6-11 on the non-orthogonality, sparsity and deviation of truncated loadings, and
Thms. 12-13 on their explained variance. The property tests check each against the truncations.
"""

from __future__ import annotations

import math

import numpy as np


def nonorthogonality_bound(theta_i: float, theta_j: float) -> float:
    """Prop. 6: :math:`|\\cos\\theta(x_i,x_j)| \\le \\sin(\\theta_i+\\theta_j)` if the sum is at most :math:`\\pi/2`, else 1."""
    total = theta_i + theta_j
    return math.sin(total) if total <= math.pi / 2 else 1.0


def hard_sparsity_bounds(threshold: float, p: int) -> tuple[float, float]:
    """Prop. 7 (also T-l1, Prop. 8): bounds on :math:`s(x)`.

    :math:`0 \\le s \\le 1 - 1/p` when :math:`\\lambda < 1/\\sqrt p`; otherwise
    :math:`1 - 1/(p\\lambda^2) < s \\le 1` (the lower bound is strict).
    """
    if threshold < 1 / math.sqrt(p):
        return 0.0, 1.0 - 1.0 / p
    return 1.0 - 1.0 / (p * threshold**2), 1.0


def hard_deviation_bound(threshold: float, p: int) -> float:
    """Prop. 7: :math:`\\sin\\theta(x,z) \\le \\sqrt{p-1}\\,\\lambda` when :math:`\\lambda < 1/\\sqrt p`, else 1."""
    return math.sqrt(p - 1) * threshold if threshold < 1 / math.sqrt(p) else 1.0


def soft_deviation_bounds(z: np.ndarray, x: np.ndarray, threshold: float) -> tuple[float, float]:
    """Prop. 8: :math:`\\|\\bar z\\|_2 \\le \\sin\\theta(x,z) < \\sqrt{\\|\\bar z\\|^2 + \\lambda^2\\|x\\|_0}` for unit ``z``."""
    truncated = np.where(x == 0, z, 0.0)
    tz = float(truncated @ truncated)
    return math.sqrt(tz), math.sqrt(tz + threshold**2 * np.count_nonzero(x))


def sparsity_truncation_bounds(n_zeros: int, p: int) -> tuple[float, float]:
    """Prop. 10: :math:`\\lambda/p \\le s(x) < 1` and :math:`\\sin\\theta \\le \\sqrt{\\lambda/p}`.

    Returns ``(min sparsity, max deviation)``.
    """
    return n_zeros / p, math.sqrt(n_zeros / p)


def energy_truncation_bounds(energy: float, p: int) -> tuple[float, float, float]:
    """Prop. 11: :math:`\\lfloor\\lambda p\\rfloor/p \\le s(x) \\le 1-1/p`, :math:`\\sin\\theta \\le \\sqrt\\lambda`.

    Returns ``(min sparsity, max sparsity, max deviation)``.
    """
    return math.floor(energy * p) / p, 1.0 - 1.0 / p, math.sqrt(energy)


def ev_dmin(x: np.ndarray, pca_loadings: np.ndarray, pca_ev: float) -> float:
    """Thm. 12 lower bound :math:`d_{\\min}^2\\,EV(V) \\le EV(X)`.

    ``d_min`` is the smallest singular value of :math:`X^\\top V`; ``pca_ev``
    is :math:`EV(V) = \\sum_i \\Sigma_{ii}^2`.
    """
    d = np.linalg.svd(x.T @ pca_loadings, compute_uv=False)
    return float(d.min() ** 2 * pca_ev)


def ev_cos(theta: float, r: int, pca_ev: float) -> float:
    """Thm. 13 lower bound :math:`(\\cos^2\\theta - \\sqrt{r-1}\\sin 2\\theta)\\,EV(V) \\le EV(X)`.

    Valid at a fixed point of SPCArt when every loading deviates by the same
    angle :math:`\\theta` and :math:`\\sum_j C_{ij}^2 \\le 1` (see the paper).
    """
    return float((math.cos(theta) ** 2 - math.sqrt(r - 1) * math.sin(2 * theta)) * pca_ev)
