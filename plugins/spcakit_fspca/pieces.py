r"""The pieces of the paper's experiments that experiment specs name (``spcakit reproduce fspca-...``).

Registered through :func:`~spcakit.core.hookspecs.spcakit_register_experiment_pieces`, so that the experiments
themselves are data (``specs/experiments/fspca-*.toml``):

* generator ``fspca-scheme``: the synthetic covariances of Table 1, schemes A-F (:func:`scheme_covariance`);
* start ``fantope``: the "Convex Relaxation" start of Tables 2-3, Fantope projection and selection (Vu,
  Cho, Lei & Rohe, 2013) by ADMM, its :math:`\ell_1` weight tuned to the row sparsity (:func:`fantope_start`);
* score ``fspca-refined``: the normalized explained variance of the :math:`m` leading eigenvectors on a run's
  row support (Fig. 2's TPower (G));
* score ``fspca-bound``: Thm. 5.1's upper bound on the optimum's normalized explained variance, from a Go
  run (Fig. 2's bound).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from spcakit.plugin_api import DenseCovariance
from spcakit_fspca import algorithms as alg
from spcakit_fspca import metrics

#: Table 1: the leading eigenvalues of schemes A-D and the value of all the others.
SPECTRA: dict[str, tuple[tuple[float, ...], float]] = {
    "A": ((100.0, 100.0, 4.0), 1.0),
    "B": ((300.0, 180.0, 60.0), 1.0),
    "C": ((300.0, 180.0, 60.0), 0.0),
    "D": ((160.0, 80.0, 40.0, 20.0, 10.0, 5.0, 2.0), 1.0),
}
SCHEMES = ("A", "B", "C", "D", "E", "F")


def scheme_covariance(rng: np.random.Generator, scheme: str, d: int = 20) -> np.ndarray:
    r"""One realization of a Table 1 scheme (``d x d``), drawn from ``rng``.

    A-D: :math:`A = Q\operatorname{diag}(\lambda)Q^\top` with the published leading eigenvalues, the others
    equal to the floor (1, or 0 for C), and a uniformly random eigenbasis. Only the leading eigenvectors
    matter (the floor's eigenspace is their orthocomplement), so
    :math:`A = cI + Q_r(\operatorname{diag}(\lambda_r) - cI)Q_r^\top` with :math:`Q_r` the Q factor (signs
    fixed by R's diagonal) of a Gaussian ``d x r`` matrix: the distribution of a Haar-random :math:`Q`, in
    :math:`O(d^2 r)`. E / F: :math:`A = XX^\top` with :math:`X` ``d x d``, entries i.i.d. uniform on [0, 1] /
    standard normal (the paper does not give the second dimension of :math:`X`; we take ``d``).
    """
    if scheme in SPECTRA:
        lead, floor = SPECTRA[scheme]
        q, upper = np.linalg.qr(rng.standard_normal((d, len(lead))))
        q = q * np.where(np.diag(upper) < 0, -1.0, 1.0)
        a = floor * np.eye(d) + (q * (np.asarray(lead) - floor)) @ q.T
    elif scheme in ("E", "F"):
        x = rng.uniform(0.0, 1.0, size=(d, d)) if scheme == "E" else rng.standard_normal((d, d))
        a = x @ x.T
    else:
        raise ValueError(f"unknown scheme {scheme!r}; valid: {', '.join(SCHEMES)}")
    return (a + a.T) / 2


# -- the convex-relaxation start (Vu et al. 2013) ------------------------------------------------------------
def fantope_projection(a: np.ndarray, m: int) -> np.ndarray:
    r"""Projection onto the Fantope :math:`\{H: 0 \preceq H \preceq I, \operatorname{tr} H = m\}`.

    Each eigenvalue :math:`\gamma_i` becomes :math:`\min(\max(\gamma_i - \theta, 0), 1)`, with :math:`\theta`
    the root of the piecewise-linear, non-increasing :math:`\sum_i \min(\max(\gamma_i - \theta, 0), 1) = m`
    (breakpoints :math:`\gamma_i` and :math:`\gamma_i - 1`), found between two breakpoints.
    """
    values, vectors = np.linalg.eigh((a + a.T) / 2)
    points = np.sort(np.concatenate([values, values - 1.0]))
    sums = np.clip(values[None, :] - points[:, None], 0.0, 1.0).sum(axis=1)
    j = int(np.flatnonzero(sums >= m)[-1])
    if j + 1 < points.size and sums[j] > sums[j + 1]:
        theta = points[j] + (sums[j] - m) * (points[j + 1] - points[j]) / (sums[j] - sums[j + 1])
    else:
        theta = points[j]
    return (vectors * np.clip(values - theta, 0.0, 1.0)) @ vectors.T


def fantope_selection(s: np.ndarray, m: int, lam: float, rho: float = 1.0, max_iter: int = 300, tol: float = 1e-4,
                      start: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    r"""Fantope projection and selection by ADMM (Vu et al. 2013, Alg. 1).

    Maximises :math:`\langle S, H\rangle - \lambda\|H\|_{1,1}` over the Fantope:
    :math:`H = \mathcal P_F(Y - U + S/\rho)`, :math:`Y = \mathrm{soft}_{\lambda/\rho}(H + U)`,
    :math:`U \mathrel{+}= H - Y`, until both residuals are below ``tol`` (at most ``max_iter`` steps).
    Returns the sparse iterate :math:`Y` and the scaled dual :math:`U`: a warm ``start`` for a nearby :math:`\lambda`.
    """
    d = s.shape[0]
    y, u = (np.zeros((d, d)), np.zeros((d, d))) if start is None else start
    for _ in range(max_iter):
        h = fantope_projection(y - u + s / rho, m)
        y_new = np.sign(h + u) * np.maximum(np.abs(h + u) - lam / rho, 0.0)
        u = u + h - y_new
        done = np.linalg.norm(h - y_new) < tol and np.linalg.norm(y_new - y) < tol
        y = y_new
        if done:
            break
    return y, u


def fantope_start(a: np.ndarray, m: int, k: int, steps: int = 10) -> np.ndarray:
    r"""The "Convex Relaxation" start: the ``m`` leading eigenvectors of the Fantope solution on :math:`A/\lambda_1(A)`.

    The :math:`\ell_1` weight is the smallest (``steps`` bisection steps on [0, 1], each ADMM run warm-started
    from the last) for which the solution has at most ``k`` nonzero rows; when that solution has fewer than ``m``
    rows, the last denser one is used. The paper does not give its weight; tuning it to the sparsity is ours.
    """
    s = a / np.linalg.eigvalsh(a)[-1]
    lo, hi = 0.0, 1.0
    state = fantope_selection(s, m, hi)
    best = state[0]
    for _ in range(steps):
        mid = (lo + hi) / 2
        state = fantope_selection(s, m, mid, start=state)
        if metrics.row_support(state[0]).size <= k:
            hi, best = mid, state[0]
        else:
            lo = mid
    if metrics.row_support(best).size < m:  # too sparse to span m directions: the relaxed solution instead
        best = fantope_selection(s, m, lo, start=state)[0]
    _, vectors = alg.leading_eigenvectors((best + best.T) / 2, m)
    return vectors


def _fantope(a: np.ndarray, m: int, params: Mapping[str, Any]) -> np.ndarray:
    if "k" not in params:
        raise ValueError("the fantope start needs the row sparsity k among the row's parameters")
    return fantope_start(a, m, int(params["k"]))


# -- scores of a curve's rows --------------------------------------------------------------------------------
def _refined(op: DenseCovariance, loadings: np.ndarray, m: int) -> float:
    """The normalized explained variance of the ``m`` leading eigenvectors on the row support of ``loadings``."""
    w, _ = alg.refine(op, metrics.row_support(loadings), m)
    return metrics.normalized_explained_variance(w, op)


def refined_score(result: Any, *, covariance: np.ndarray, m: int, **_: Any) -> float:
    """Score ``fspca-refined``: the NEV of the spec's ``m`` leading eigenvectors on the run's row support."""
    return _refined(DenseCovariance(covariance), result.loadings, m)


def bound_score(result: Any, *, covariance: np.ndarray, eigenvalues: np.ndarray, r: int, value: Any, **_: Any) -> float:
    r"""Score ``fspca-bound``: :math:`\min(1, \mathrm{NEV}(W)/(1-\epsilon))` with :math:`\epsilon` Thm. 5.1's bound for
    cardinality ``value`` and :math:`W` a Go run's loadings (recomputed on the covariance as given: the
    refinement on its row support)."""
    exact = _refined(DenseCovariance(covariance), result.loadings, r)
    eps = metrics.fspca_approximation_bound(eigenvalues, r, int(value))
    return min(1.0, exact / (1.0 - eps)) if eps < 1 else 1.0


#: ``(kind, name, function)`` of every piece, registered in this order.
PIECES = (
    ("generator", "fspca-scheme", scheme_covariance),
    ("start", "fantope", _fantope),
    ("score", "fspca-refined", refined_score),
    ("score", "fspca-bound", bound_score),
)
