r"""The criteria and the approximation bound of Tian, Wang, Nie & Li, *Learning Feature Sparse
Principal Subspace* (FSPCA, NeurIPS 2020), §5.1 and §6.

Every run reports two of them, registered by this plugin
(:data:`METRICS`, through the ``spcakit_register_metrics`` hook):

* **objective** :math:`\operatorname{tr}(W^\top C W)`, the objective of problem (3.1);
* **NEV**, the normalized explained variance
  :math:`\operatorname{tr}(W^\top C W)/\operatorname{tr}(C_r)`, with :math:`\operatorname{tr}(C_r)`
  the sum of the ``r`` leading eigenvalues of :math:`C`, taken from the run's shared
  spectrum (:meth:`spcakit.analysis.metrics.MetricContext.top_eigenvalues`).

The rest (IR, RE, HF of Table 2 and the terms of Thm. 5.1) are functions the
experiments and tests call.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spcakit.plugin_api import (
    CovarianceOperator,
    Metric,
    MetricContext,
    Problem,
    explained_variance,
    format_general,
    format_number,
    top_eigenvalues,
)


def fspca_objective(x: np.ndarray, covariance: CovarianceOperator) -> float:
    r"""The objective of problem (3.1), :math:`\operatorname{tr}(W^\top A W)`.

    For orthonormal :math:`W` (every FSPCA solver's output) it is the variance
    of :math:`\operatorname{span}(W)`; for other loadings it is EV.
    """
    return explained_variance(x, covariance)


def low_rank_trace(covariance: CovarianceOperator, m: int) -> float:
    r""":math:`\operatorname{tr}(A_m)`, the sum of the ``m`` largest eigenvalues (the PCA optimum of (3.1) without sparsity).

    Through :func:`spcakit.analysis.metrics.top_eigenvalues`: the operator's own solver (Lanczos for an
    explicit covariance with more than :data:`spcakit.numerics.operators.LANCZOS_LIMIT` variables).
    """
    return float(np.sum(top_eigenvalues(covariance, m)))


def normalized_explained_variance(x: np.ndarray, covariance: CovarianceOperator) -> float:
    r"""Normalized explained variance :math:`\operatorname{tr}(W^\top A W)/\operatorname{tr}(A_m)`, :math:`m` = columns of ``x`` (§6.2).

    At most 1 for orthonormal :math:`W` (Ky Fan); loadings that are not
    orthogonal can exceed it (CPEV measures their span instead). NaN when
    :math:`\operatorname{tr}(A_m) = 0`.
    """
    total = low_rank_trace(covariance, x.shape[1])
    return fspca_objective(x, covariance) / total if total > 0 else float("nan")


def row_support(x: np.ndarray) -> np.ndarray:
    r"""The rows of ``x`` with a nonzero entry (the selected features), ascending; :math:`\|X\|_{2,0}` = its size."""
    return np.flatnonzero(np.any(np.asarray(x).reshape(np.shape(x)[0], -1) != 0, axis=1))


def intersection_ratio(estimated: np.ndarray, optimal: np.ndarray, k: int | None = None) -> float:
    r"""Intersection ratio IR :math:`= |\hat I \cap I_*| / k` between selected and optimal row supports (§6.1).

    ``k`` defaults to the size of ``optimal``.
    """
    k = len(optimal) if k is None else k
    return len(set(np.asarray(estimated).tolist()) & set(np.asarray(optimal).tolist())) / k


def relative_error(value: float, optimal_value: float) -> float:
    r"""Relative error RE :math:`= (\operatorname{tr}(W_*^\top A W_*) - \operatorname{tr}(W^\top A W)) / \operatorname{tr}(W_*^\top A W_*)` (§6.1)."""
    return (optimal_value - value) / optimal_value


def hit_frequency(relative_errors: Any, tol: float = 1e-3) -> float:
    r"""Hit frequency HF :math:`= \frac1N\sum_i \mathbf 1\{\mathrm{RE}_i \le 10^{-3}\}` over ``N`` runs (§6.1)."""
    errors = np.asarray(relative_errors, dtype=float)
    return float(np.mean(errors <= tol)) if errors.size else float("nan")


def fspca_bound_terms(eigenvalues: Any, m: int, k: int) -> dict[str, float]:
    r"""The four terms of Thm. 5.1 for the spectrum ``eigenvalues`` (all :math:`d` of them) of :math:`A`.

    With :math:`r = \min\{\operatorname{rank} A, 2m\}`,
    :math:`G_1 = \sum_{i=m+1}^r\lambda_i / \sum_{i\le m}\lambda_i` and
    :math:`G_2 = \sum_{i=m+1}^r\lambda_i / \sum_{i\le d}\lambda_i`:
    ``dG1/k``, ``dG2/m``, ``1 - 1/kappa`` (:math:`\kappa = \lambda_1/\lambda_d`,
    infinite for a singular :math:`A`) and ``1 - k/d``. The numerical rank
    counts eigenvalues above :math:`d\,\epsilon_{\text{mach}}\lambda_1`.
    """
    lam = np.sort(np.clip(np.asarray(eigenvalues, dtype=float), 0.0, None))[::-1]
    d = lam.size
    if not 1 <= m <= k <= d:
        raise ValueError(f"Thm. 5.1 needs 1 <= m <= k <= d; got m={m}, k={k}, d={d}")
    rank = int(np.sum(lam > lam[0] * d * np.finfo(float).eps)) if lam[0] > 0 else 0
    top = float(lam[:m].sum())
    if top <= 0:
        raise ValueError("Thm. 5.1 needs a nonzero covariance")
    tail = float(lam[m:min(rank, 2 * m)].sum())
    g1, g2 = tail / top, tail / float(lam.sum())
    inverse_kappa = float(lam[-1] / lam[0])
    return {"d_g1_over_k": d * g1 / k, "d_g2_over_m": d * g2 / m, "one_minus_inverse_kappa": 1.0 - inverse_kappa,
            "one_minus_k_over_d": 1.0 - k / d}


def fspca_approximation_bound(eigenvalues: Any, m: int, k: int) -> float:
    r"""Thm. 5.1: :math:`\epsilon = \min\{dG_1/k,\ dG_2/m,\ 1-\kappa^{-1},\ 1-k/d\}`.

    Go on :math:`A_m` (and IPU started there, Cor. 5.6) reaches at least
    :math:`(1-\epsilon)` of the optimum of (3.1):
    :math:`(1-\epsilon)\operatorname{tr}(W_*^\top A W_*) \le \operatorname{tr}(W_m^\top A W_m)`.
    0 when :math:`\operatorname{rank} A \le m` (Thm. 4.2). See :func:`fspca_bound_terms`.
    """
    return float(min(fspca_bound_terms(eigenvalues, m, k).values()))


# -- registered metrics ----------------------------------------------------------------------
def _objective(problem: Problem, loadings: np.ndarray, context: MetricContext) -> float:
    """:func:`fspca_objective` of the run's loadings, computed once per run (NEV divides it)."""
    return context.shared("fspca.objective", lambda: fspca_objective(loadings, problem.covariance))


def _normalized_explained_variance(problem: Problem, loadings: np.ndarray, context: MetricContext) -> float:
    r""":func:`normalized_explained_variance` with :math:`\operatorname{tr}(C_r)` from the run's shared spectrum."""
    total = float(np.sum(context.top_eigenvalues(loadings.shape[1])))
    return _objective(problem, loadings, context) / total if total > 0 else float("nan")


#: The FSPCA criteria every run reports (registered by the plugin, in this order).
METRICS = (
    Metric(name="objective", label="objective", description="FSPCA objective tr(W^T C W)",
           compute=_objective, format=format_general, default_for=("fspca",)),
    Metric(name="normalized_explained_variance", label="NEV",
           description="normalized explained variance tr(W^T C W) / tr(C_r)",
           compute=_normalized_explained_variance, format=format_number(4), default_for=("fspca",)),
)  # fmt: skip
