r"""Criteria and performance bounds of sparse PCA.

The criteria are those of Hu, Pan, Wang & Wu, *Sparse Principal Component
Analysis via Rotation and Truncation* (§3.4 and §6), for loadings
:math:`X = [x_1, \dots, x_r] \in \mathbb{R}^{p\times r}` and a covariance
:math:`C`:

* sparsity of a loading :math:`s(x) = 1 - \|x\|_0 / p` (Definition 2);
  **SP** is its mean, **STD** its sample standard deviation (``ddof=1``, as
  the paper's Table 4 numbers imply), **worst_sp** its minimum;
* **NZ** the total number of nonzeros, **pattern** the nonzeros per loading;
* **EV** :math:`\operatorname{tr}(X^\top C X)` and **CPEV**
  :math:`\operatorname{tr}(U^\top C U)/\operatorname{tr}(C)` with :math:`U`
  an orthonormal basis of :math:`\operatorname{span}(X)` (Definition 5);
* **NOR** :math:`\frac{1}{r(r-1)}\sum_{i\ne j} |\cos\theta(x_i, x_j)|`.

The bounds of Propositions 6-11 and Theorems 12-13 are functions here so
that tests and users can check a result against them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from spcakit.operators import CovarianceOperator, DenseCovariance, lanczos_top


# -- criteria --------------------------------------------------------------
def pattern(x: np.ndarray) -> list[int]:
    """Number of nonzero entries of each loading."""
    return [int(v) for v in np.count_nonzero(x, axis=0)]


def sparsity(x: np.ndarray) -> np.ndarray:
    """Per-loading sparsity :math:`s(x_i) = 1 - \\|x_i\\|_0/p`."""
    return 1.0 - np.count_nonzero(x, axis=0) / x.shape[0]


def sparsity_std(x: np.ndarray) -> float:
    """STD: sample standard deviation (``ddof=1``) of the per-loading sparsities."""
    s = sparsity(x)
    return float(np.std(s, ddof=1)) if s.size > 1 else 0.0


def orthonormal_basis(x: np.ndarray) -> np.ndarray:
    """An orthonormal basis of the column span of ``x`` (rank-revealing)."""
    u, sing, _ = np.linalg.svd(x, full_matrices=False)
    rank = int(np.sum(sing > sing[0] * max(x.shape) * np.finfo(float).eps)) if sing.size and sing[0] > 0 else 0
    return u[:, :rank]


def explained_variance(x: np.ndarray, covariance: CovarianceOperator) -> float:
    """EV :math:`\\operatorname{tr}(X^\\top C X)`."""
    return float(np.sum(x * covariance.matmat(x)))


def cpev(x: np.ndarray, covariance: CovarianceOperator) -> float:
    """CPEV: variance of the subspace spanned by ``x``, as a fraction of :math:`\\operatorname{tr} C`."""
    u = orthonormal_basis(x)
    return explained_variance(u, covariance) / covariance.trace()


def nonorthogonality(x: np.ndarray) -> float:
    """NOR: mean absolute cosine between distinct loadings (0 for one loading)."""
    r = x.shape[1]
    if r < 2:
        return 0.0
    unit = x / np.linalg.norm(x, axis=0)
    gram = np.abs(unit.T @ unit)
    return float((gram.sum() - np.trace(gram)) / (r * (r - 1)))


def orthogonality(x: np.ndarray) -> float:
    r"""Orthogonality :math:`1 - (|Z^\top Z| - \operatorname{tr} Z^\top Z)/(r(r-1))` of unit loadings.

    Xu, Yang & Zhang, *Fast Deflation Sparse PCA via Subspace Projections* (§4);
    :math:`|\cdot|` sums the absolute entries. For unit columns it is ``1 - NOR``;
    1 for a single loading.
    """
    return 1.0 - nonorthogonality(x)


def additional_variances(x: np.ndarray, covariance: CovarianceOperator) -> list[float]:
    r"""Additional variance of each loading given the previous ones (Mackey, §2.3.3).

    :math:`q_t = (I - P_{t-1}) x_t / \|(I - P_{t-1}) x_t\|` with :math:`P_{t-1}`
    the projection onto :math:`\operatorname{span}(x_1,\dots,x_{t-1})`, and the
    additional variance is :math:`q_t^\top C q_t` (0 when :math:`x_t` adds no new
    direction). They sum to :math:`\operatorname{tr}(U^\top C U)` of the span.
    """
    p, r = x.shape
    basis = np.zeros((p, 0))
    keep: list[int] = []
    for t in range(r):
        v = x[:, t] / max(np.linalg.norm(x[:, t]), 1e-300)
        q = v - basis @ (basis.T @ v)
        q = q - basis @ (basis.T @ q)  # re-orthogonalise once (Gram-Schmidt twice is enough)
        norm = np.linalg.norm(q)
        if norm > 1e-10:
            basis = np.column_stack([basis, q / norm])
            keep.append(t)
    out = [0.0] * r
    if keep:
        values = np.einsum("ij,ij->j", basis, covariance.matmat(basis))
        for t, value in zip(keep, values):
            out[t] = float(value)
    return out


def cumulative_variances(x: np.ndarray, covariance: CovarianceOperator) -> list[float]:
    r"""Cumulative additional variance after each loading, as a fraction of :math:`\operatorname{tr} C`."""
    return [float(v) for v in np.cumsum(additional_variances(x, covariance)) / covariance.trace()]


#: The metrics of every run, by name: ``f(loadings, covariance) -> value``.
METRICS: dict[str, Callable[[np.ndarray, CovarianceOperator], Any]] = {
    "nz": lambda x, c: int(np.count_nonzero(x)),
    "pattern": lambda x, c: pattern(x),
    "sp": lambda x, c: float(np.mean(sparsity(x))),
    "std": lambda x, c: sparsity_std(x),
    "worst_sp": lambda x, c: float(np.min(sparsity(x))),
    "cpev": cpev,
    "ev": explained_variance,
    "nor": lambda x, c: nonorthogonality(x),
    "orthogonality": lambda x, c: orthogonality(x),
    "additional_variance": additional_variances,
    "cumulative_variance": cumulative_variances,
    # FSPCA (Tian et al.): defined at the end of this module
    "objective": lambda x, c: fspca_objective(x, c),
    "normalized_explained_variance": lambda x, c: normalized_explained_variance(x, c),
}


def compute_metrics(x: np.ndarray, covariance: CovarianceOperator, data: np.ndarray | None = None) -> dict[str, Any]:
    r"""All of :data:`METRICS` for loadings ``x`` on ``covariance``, and the encoder criteria
    :data:`ENCODER_METRICS` on ``data`` (the centred data, :math:`X^\top X \propto C`;
    ``None``: :math:`X = C^{1/2}`).

    The ``r`` leading eigenvalues of :math:`C`, which the normalized explained
    variance and the encoder criteria both need, are computed once.
    """
    spectrum = top_eigenvalues(covariance, x.shape[1])
    shared = ENCODER_METRICS + ("normalized_explained_variance",)
    values = {name: fn(x, covariance) for name, fn in METRICS.items() if name not in shared}
    best = float(np.sum(spectrum))
    values["normalized_explained_variance"] = values["objective"] / best if best > 0 else float("nan")
    values.update(encoder_metrics(x, covariance, data, spectrum=spectrum))
    return {name: values[name] for name in METRICS}


#: Explicit covariances above this size get their leading eigenvalues from Lanczos, not a dense solver.
DENSE_SPECTRUM_LIMIT = 2000


def top_eigenvalues(covariance: CovarianceOperator, k: int) -> np.ndarray:
    r"""The ``k`` largest eigenvalues of :math:`C` (descending, clipped at 0), without eigenvectors.

    An explicit :math:`C` uses LAPACK's subset eigensolver up to
    ``DENSE_SPECTRUM_LIMIT`` variables and Lanczos (ARPACK, from a fixed start,
    so that every run gives the same digits) beyond, which is
    :math:`O(p^2 k)` per restart instead of :math:`O(p^3)`; other operators
    use their own ``top_eigenpairs`` (for data with :math:`n < p`, the
    :math:`n\times n` Gram matrix).
    """
    import scipy.linalg

    p = covariance.p
    k = min(k, p)
    if isinstance(covariance, DenseCovariance):
        if p <= DENSE_SPECTRUM_LIMIT or k >= p - 1:
            values = scipy.linalg.eigh(covariance.matrix, subset_by_index=[p - k, p - 1], eigvals_only=True)
            if values.shape[0] != k:  # the subset driver can return fewer values on clustered spectra
                values = scipy.linalg.eigvalsh(covariance.matrix)[p - k:]
        else:
            values = lanczos_top(covariance.matrix, k, vectors=False)
    else:
        values = covariance.top_eigenpairs(k)[0]
    return np.clip(np.sort(np.asarray(values, dtype=float))[::-1], 0.0, None)


# -- angles ----------------------------------------------------------------
def deviation(x: np.ndarray, z: np.ndarray) -> float:
    """Deviation :math:`\\sin\\theta(x, z)` (Definition 3); 1 when ``x`` is zero."""
    nx, nz = np.linalg.norm(x), np.linalg.norm(z)
    if nx == 0 or nz == 0:
        return 1.0
    ux, uz = x / nx, z / nz
    # the norm of the part of x orthogonal to z: accurate near 0, unlike sqrt(1 - cos^2)
    return min(1.0, float(np.linalg.norm(ux - (ux @ uz) * uz)))


def angle(x: np.ndarray, z: np.ndarray) -> float:
    """Included angle :math:`\\theta(x, z) \\in [0, \\pi/2]`."""
    return math.asin(min(1.0, deviation(x, z)))


# -- bounds (Props. 6-11, Thms. 12-13) -----------------------------------------
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


# -- SPCA-SP (Xu, Yang & Zhang, Prop. 3.2) ----------------------------------------
def pair_orthogonality(a: np.ndarray, b: np.ndarray) -> float:
    r""":math:`\langle a, b\rangle = 1 - |a^\top b| / (\|a\|\,\|b\|)` (larger is more orthogonal)."""
    return 1.0 - abs(float(a @ b)) / (float(np.linalg.norm(a)) * float(np.linalg.norm(b)))


def truncation_orthogonality_bound(kind: str, parameter: float, d: int, nonzeros: int | None = None) -> float:
    r"""Prop. 3.2: lower bound on :math:`\langle a, T(b)\rangle` for unit orthogonal :math:`a, b \in \mathbb{R}^d`.

    ``kind`` ``"sparsity"``: :math:`1 - \sqrt{\kappa_S/d}` (``parameter`` = zeros);
    ``"energy"``: :math:`1 - \sqrt{\kappa_E}`; ``"hard"``:
    :math:`1 - \sqrt{1 - \|T(b)\|_0 \kappa_H^2}` (needs ``nonzeros`` = :math:`\|T(b)\|_0`).
    """
    if kind == "sparsity":
        return 1.0 - math.sqrt(parameter / d)
    if kind == "energy":
        return 1.0 - math.sqrt(parameter)
    if kind == "hard":
        if nonzeros is None:
            raise ValueError("the hard-thresholding bound needs the number of nonzeros of T(b)")
        return 1.0 - math.sqrt(max(0.0, 1.0 - nonzeros * parameter**2))
    raise ValueError(f"unknown truncation kind {kind!r}; valid: sparsity, energy, hard")


# -- Sparse linear encoders (Magdon-Ismail & Boutsidis) -----------------------------------------
# Magdon-Ismail & Boutsidis, *Optimal Sparse Linear Encoders and Sparse PCA* (NIPS 2016), Def. 1
# and Sec. 4. X is the problem's data matrix, or any square root of its covariance (X^T X = C):
# every quantity below depends on X only through X^T X, so the symmetric root C^(1/2) gives the
# same values as any other. Nothing p x p is formed: the data path works with X H (n x k), the
# covariance path with C H (p x k) and k x k matrices.

#: Keys :func:`compute_metrics` adds for the sparse linear encoder criteria.
ENCODER_METRICS = ("loss", "normalized_loss", "symmetric_explained_variance")
#: Loss and optimum below this fraction of ||X||_F^2 are rounding (they are differences of sums of squares): 0.
_NEGLIGIBLE_LOSS = 1e-10


def top_squared_singular_values(k: int, covariance: CovarianceOperator, data: np.ndarray | None = None) -> np.ndarray:
    r"""The ``k`` largest :math:`\sigma_i^2(X)`: of ``data`` (whose Gram matrix :math:`X^\top X` is
    proportional to :math:`C`), or of :math:`X = C^{1/2}` (the eigenvalues of :math:`C`).

    The eigenvalues of :math:`C` (:func:`top_eigenvalues`) scaled by
    :math:`\|X\|_F^2/\operatorname{tr}C`; never a :math:`p\times p` matrix for
    :math:`n < p`.
    """
    return _scale_to_data(top_eigenvalues(covariance, k), covariance, data)


def _scale_to_data(spectrum: np.ndarray, covariance: CovarianceOperator, data: np.ndarray | None) -> np.ndarray:
    if data is None:
        return spectrum
    trace = covariance.trace()
    return spectrum * (float(np.vdot(data, data)) / trace) if trace > 0 else spectrum


def encoder_metrics(
    h: np.ndarray, covariance: CovarianceOperator, data: np.ndarray | None = None, *, spectrum: np.ndarray | None = None
) -> dict[str, float]:
    r"""Loss, normalized loss and symmetric explained variance of the encoder :math:`H` (``p x k``).

    .. math::

        \ell(H, X) = \|X - XH(XH)^+X\|_F^2, \qquad
        \text{normalized loss} = \frac{\ell(H, X)}{\|X - X_k\|_F^2} \ge 1, \qquad
        \text{symmetric EV} = \frac{\|XHH^+\|_F^2}{\|X_k\|_F^2} \le 1,

    with :math:`X_k` the best rank-``k`` approximation. :math:`XHH^+ = XUU^\top`
    for an orthonormal basis :math:`U` of :math:`\operatorname{span}(H)`, so the
    symmetric explained variance is :math:`\operatorname{tr}(U^\top CU)/\sum_{i\le k}\lambda_i(C)`,
    CPEV renormalised by PCA's. With ``data`` (``n x p``) everything is computed
    on it, through :math:`XU` (``n x k``); without, :math:`X = C^{1/2}` and
    :math:`\|XH(XH)^+X\|_F^2 = \operatorname{tr}\big((U^\top CU)^+ (CU)^\top CU\big)`.
    ``loss`` is on the scale of that :math:`X` (the centred data; for a
    covariance, :math:`\operatorname{tr} C` is the total). Both the loss and
    :math:`\|X - X_k\|_F^2` are differences of sums of squares; below
    ``1e-10`` of :math:`\|X\|_F^2` they are rounding and reported as 0. When
    :math:`\|X - X_k\|_F = 0` (rank at most ``k``) the normalized loss is 1 if
    the loss is 0 too, else infinite.
    """
    k = h.shape[1]
    u = orthonormal_basis(h)
    if data is not None:
        total = float(np.vdot(data, data))
        xu = data @ u
        kept = float(np.vdot(xu, xu))
        q = orthonormal_basis(xu)
        qx = q.T @ data
        projected = float(np.vdot(qx, qx))
    else:
        total = covariance.trace()
        cu = covariance.matmat(u)
        small = u.T @ cu
        values, vectors = np.linalg.eigh((small + small.T) / 2)
        kept = float(np.sum(values))
        keep = values > max(float(values.max(initial=0.0)), 0.0) * max(covariance.p, k) * np.finfo(float).eps
        m = cu @ vectors[:, keep]
        projected = float(np.sum(np.einsum("ij,ij->j", m, m) / values[keep]))
    if spectrum is None:  # the k leading eigenvalues of C, when the caller has them
        spectrum = top_eigenvalues(covariance, k)
    best = float(np.sum(_scale_to_data(np.asarray(spectrum)[:k], covariance, data)))
    # both are differences of sums of squares: below this they are rounding, and reported as 0
    negligible = _NEGLIGIBLE_LOSS * max(total, 1e-300)
    optimum = total - best if total - best > negligible else 0.0
    loss = total - projected if total - projected > negligible else 0.0
    if optimum > 0:
        normalized = loss / optimum
    else:
        normalized = 1.0 if loss == 0 else math.inf
    return {
        "loss": loss,
        "normalized_loss": normalized,
        "symmetric_explained_variance": kept / best if best > 0 else 0.0,
    }


def _encoder_metric(key: str) -> Callable[[np.ndarray, CovarianceOperator], float]:
    def metric(x: np.ndarray, covariance: CovarianceOperator) -> float:
        return encoder_metrics(x, covariance)[key]

    metric.__name__ = key
    return metric


# in METRICS too (on X = C^(1/2)); compute_metrics computes the three in one pass, on the data when given
METRICS.update({key: _encoder_metric(key) for key in ENCODER_METRICS})


# -- FSPCA (Tian et al.) -----------------------------------------------------------------------
# Tian, Wang, Nie & Li, *Learning Feature Sparse Principal Subspace* (NeurIPS 2020), §5.1 and §6.
def fspca_objective(x: np.ndarray, covariance: CovarianceOperator) -> float:
    r"""The objective of problem (3.1), :math:`\operatorname{tr}(W^\top A W)`.

    For orthonormal :math:`W` (every FSPCA solver's output) it is the variance
    of :math:`\operatorname{span}(W)`; for other loadings it is EV.
    """
    return explained_variance(x, covariance)


def low_rank_trace(covariance: CovarianceOperator, m: int) -> float:
    r""":math:`\operatorname{tr}(A_m)`, the sum of the ``m`` largest eigenvalues (the PCA optimum of (3.1) without sparsity).

    Through :func:`top_eigenvalues` (Lanczos for an explicit covariance with
    more than ``DENSE_SPECTRUM_LIMIT`` variables).
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
