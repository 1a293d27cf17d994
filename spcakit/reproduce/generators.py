r"""Named pieces that experiment specs refer to: generators of random problems, starts, and references.

* :data:`GENERATORS` - ``generator = { name = ..., <parameter> = ... }`` of a ``realizations`` case: a
  function of a :class:`numpy.random.Generator` and the parameters that returns a covariance matrix.
  ``fspca-scheme``: the synthetic covariances of Table 1 of Tian, Wang, Nie & Li, *Learning Feature Sparse
  Principal Subspace* (NeurIPS 2020), schemes A-F (:func:`scheme_covariance`).
* :data:`STARTS` - ``start = ...`` of a row: a user-given :math:`W_0` computed from each problem.
  ``fantope``: that paper's "Convex Relaxation" start, Fantope projection and selection (Vu, Cho, Lei &
  Rohe, 2013) by ADMM with its :math:`\ell_1` weight tuned to the target row sparsity (:func:`fantope_start`).
* The references a ``curve`` scores its rows by: the :math:`r` leading eigenvectors on a run's row support
  (:func:`refine_on_support`) and Thm. 5.1 of the same paper, the bound on how far Go is from the optimum
  (:func:`fspca_bound`).

These are written with NumPy and the core's operators only, so that the core runs them whichever plugins
are enabled; the methods themselves always run through :func:`spcakit.fit`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from spcakit import ties
from spcakit.metrics import explained_variance, top_eigenvalues
from spcakit.operators import CovarianceOperator, DenseCovariance

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


# -- eigenvectors with fixed signs, and the refinement on a support ------------------------------------------
def leading_eigenvectors(matrix: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``m`` largest eigenvalues (descending) of a small symmetric matrix and their eigenvectors.

    Each vector's entry of largest magnitude is positive (of entries tied by :mod:`spcakit.ties`, the first),
    so the same matrix always gives the same vectors. Up to 32 rows (or ``m`` of them all) by
    :func:`numpy.linalg.eigh`, else LAPACK's subset driver.
    """
    k = matrix.shape[0]
    if m >= k or k <= 32:
        values, vectors = np.linalg.eigh(matrix)
        values, vectors = values[::-1][:m], vectors[:, ::-1][:, :m]
    else:
        import scipy.linalg  # only for large supports: 0.3 s to import

        values, vectors = scipy.linalg.eigh(matrix, subset_by_index=[k - m, k - 1])
        if values.shape[0] != m:  # the subset driver can return fewer pairs on clustered spectra
            values, vectors = np.linalg.eigh(matrix)
            values, vectors = values[k - m:], vectors[:, k - m:]
        values, vectors = values[::-1], vectors[:, ::-1]
    pivots = ties.argmax_columns(np.abs(vectors))
    signs = np.sign(vectors[pivots, np.arange(vectors.shape[1])])
    signs[signs == 0] = 1.0
    return values, vectors * signs


def row_support(x: np.ndarray) -> np.ndarray:
    """The rows of ``x`` with a nonzero entry, ascending."""
    return np.flatnonzero(np.any(np.asarray(x).reshape(np.shape(x)[0], -1) != 0, axis=1))


def refine_on_support(covariance: CovarianceOperator, support: np.ndarray, m: int) -> np.ndarray:
    r""":math:`W = S_I V` (``p x m``): :math:`V` the ``m`` leading eigenvectors of :math:`C_{II}`, zero off the support."""
    _, vectors = leading_eigenvectors(covariance.submatrix(np.asarray(support, dtype=int)), m)
    w = np.zeros((covariance.p, m))
    w[support] = vectors
    return w


def normalized_explained_variance(x: np.ndarray, covariance: CovarianceOperator) -> float:
    r""":math:`\operatorname{tr}(X^\top CX) / \operatorname{tr}(C_m)`, ``m`` the columns of ``x`` (NaN when the trace is 0)."""
    total = float(np.sum(top_eigenvalues(covariance, x.shape[1])))
    return explained_variance(x, covariance) / total if total > 0 else float("nan")


def fspca_bound(eigenvalues: Any, m: int, k: int) -> float:
    r"""Thm. 5.1 of Tian et al.: :math:`\epsilon = \min\{dG_1/k,\ dG_2/m,\ 1-\kappa^{-1},\ 1-k/d\}`.

    With :math:`r = \min\{\operatorname{rank} A, 2m\}` (the numerical rank counts eigenvalues above
    :math:`d\,\epsilon_{\text{mach}}\lambda_1`), :math:`G_1 = \sum_{m<i\le r}\lambda_i / \sum_{i\le m}\lambda_i`,
    :math:`G_2 = \sum_{m<i\le r}\lambda_i / \sum_i\lambda_i`, :math:`\kappa = \lambda_1/\lambda_d`. Go on
    :math:`A_m` reaches at least :math:`(1-\epsilon)` of the optimum.
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
    terms = (d * (tail / top) / k, d * (tail / float(lam.sum())) / m, 1.0 - float(lam[-1] / lam[0]), 1.0 - k / d)
    return float(min(terms))


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
        if row_support(state[0]).size <= k:
            hi, best = mid, state[0]
        else:
            lo = mid
    if row_support(best).size < m:  # too sparse to span m directions: the relaxed solution instead
        best = fantope_selection(s, m, lo, start=state)[0]
    _, vectors = leading_eigenvectors((best + best.T) / 2, m)
    return vectors


def _fantope(a: np.ndarray, m: int, params: Mapping[str, Any]) -> np.ndarray:
    if "k" not in params:
        raise ValueError("the fantope start needs the row sparsity k among the row's parameters")
    return fantope_start(a, m, int(params["k"]))


#: Generators of a ``realizations`` case's problems, by name: ``f(rng, **parameters) -> covariance``.
GENERATORS: dict[str, Callable[..., np.ndarray]] = {"fspca-scheme": scheme_covariance}
#: Starts a row may name, by name: ``f(covariance, m, fit keywords) -> W0`` (passed to fit as ``w0``).
STARTS: dict[str, Callable[[np.ndarray, int, Mapping[str, Any]], np.ndarray]] = {"fantope": _fantope}


def dense(a: np.ndarray) -> DenseCovariance:
    """``a`` as a covariance operator (for :func:`refine_on_support` and :func:`normalized_explained_variance`)."""
    return DenseCovariance(a)
