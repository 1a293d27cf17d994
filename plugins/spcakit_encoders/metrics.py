r"""The criteria of sparse linear encoders, reported for every run.

Magdon-Ismail & Boutsidis, *Optimal Sparse Linear Encoders and Sparse PCA*
(NIPS 2016), Definition 1 and §4. For loadings (an encoder)
:math:`H \in \mathbb{R}^{p\times k}` and a data matrix :math:`X`:

.. math::

    \ell(H, X) = \|X - XH(XH)^+X\|_F^2, \qquad
    \text{normalized loss} = \frac{\ell(H, X)}{\|X - X_k\|_F^2} \ge 1, \qquad
    \text{symmetric EV} = \frac{\|XHH^+\|_F^2}{\|X_k\|_F^2} \le 1,

with :math:`X_k` the best rank-``k`` approximation of :math:`X`. :math:`X` is
the problem's (centred) data, or any square root of its covariance
(:math:`X^\top X = C`): every quantity depends on :math:`X` only through
:math:`X^\top X`, so the symmetric root :math:`C^{1/2}` gives the same values
as any other. Nothing :math:`p\times p` is formed: the data path works with
:math:`XH` (``n x k``), the covariance path with :math:`CH` (``p x k``) and
``k x k`` matrices.

The registered metrics never read the data (:func:`run_criteria`): for data
:math:`X^\top X = sC` (:func:`data_divisor`: :math:`s = n - 1`, or :math:`n`
uncentred), so :math:`\|X\|_F^2 = s\operatorname{tr}C` and
:math:`\|XH(XH)^+X\|_F^2 = s\operatorname{tr}\big((U^\top CU)^+(CU)^\top CU\big)`:
the covariance path times :math:`s`, one product :math:`CU` and no centred
``n x p`` copy of the data. Both paths are exact formulas; they differ by
rounding, and in one respect: the covariance path works with
:math:`U^\top CU = (XU)^\top XU/s`, whose condition number is the square of
that of :math:`XU`. A direction of :math:`\operatorname{span}(XU)` counts
when its eigenvalue of :math:`U^\top CU` exceeds
:math:`\max(p, k)\,\epsilon` times the largest, i.e. when its singular value
of :math:`XU` exceeds :math:`\sqrt{\max(p, k)\,\epsilon}` (about
:math:`3\cdot 10^{-7}` for ``p = 500``) of the largest, where the data path
(:func:`~spcakit.analysis.metrics.orthonormal_basis` of :math:`XU`) keeps it down to
:math:`\max(n, k)\,\epsilon`. Loadings that lose rank in :math:`X` (more
loadings than the rank of the data, a loading in the null space of
:math:`X`, loadings that repeat a direction) give the same values on both
paths: rounding leaves such a direction of :math:`XU` near
:math:`\epsilon\|X\|_2`, below both thresholds. The paths tell loadings apart
only when :math:`\kappa(XU)` lies between about
:math:`1/\sqrt{\max(p, k)\,\epsilon}` and :math:`1/(\max(n, k)\,\epsilon)`
(a loading whose image :math:`Xh` is :math:`10^{-8}` of the others', say),
where the loss itself is barely determined: it jumps where :math:`XH` drops
rank, and a perturbation of :math:`H` of relative size :math:`1/\kappa(XU)`
moves it across. Otherwise the two agree to about
:math:`\epsilon\,\kappa(XU)^2\,\|X\|_F^2`.

:data:`METRICS` are registered by the plugin (``loss``, ``normalized_loss``,
``symmetric_explained_variance``); the three come from one
:func:`encoder_metrics` per run, which takes :math:`\|X_k\|_F^2` from the
leading eigenvalues of :math:`C` the run's metrics share
(:meth:`spcakit.analysis.metrics.MetricContext.top_eigenvalues`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from spcakit.plugin_api import (
    CovarianceOperator,
    Metric,
    MetricContext,
    Problem,
    format_general,
    format_number,
    orthonormal_basis,
    top_eigenvalues,
)

#: The names of the three encoder criteria in ``Result.metrics``.
ENCODER_METRICS = ("loss", "normalized_loss", "symmetric_explained_variance")
#: Loss and optimum below this fraction of ||X||_F^2 are rounding (they are differences of sums of squares): 0.
_NEGLIGIBLE_LOSS = 1e-10
#: Key of the three criteria in a run's :class:`~spcakit.analysis.metrics.MetricContext` (computed once for the three).
SHARED_KEY = "encoders.criteria"


def top_squared_singular_values(k: int, covariance: CovarianceOperator, data: np.ndarray | None = None) -> np.ndarray:
    r"""The ``k`` largest :math:`\sigma_i^2(X)`: of ``data`` (whose Gram matrix :math:`X^\top X` is
    proportional to :math:`C`), or of :math:`X = C^{1/2}` (the eigenvalues of :math:`C`).

    The eigenvalues of :math:`C` (:func:`spcakit.analysis.metrics.top_eigenvalues`)
    scaled by :math:`\|X\|_F^2/\operatorname{tr}C`; never a :math:`p\times p`
    matrix for :math:`n < p`.
    """
    return _scale_to_data(top_eigenvalues(covariance, k), covariance, data)


def _scale_to_data(spectrum: np.ndarray, covariance: CovarianceOperator, data: np.ndarray | None) -> np.ndarray:
    """Eigenvalues of :math:`C` as squared singular values of ``data`` (:math:`X^\\top X = sC`)."""
    if data is None:
        return spectrum
    trace = covariance.trace()
    return spectrum * (float(np.vdot(data, data)) / trace) if trace > 0 else spectrum


def encoder_metrics(
    h: np.ndarray, covariance: CovarianceOperator, data: np.ndarray | None = None, *, spectrum: np.ndarray | None = None
) -> dict[str, float]:
    r"""Loss, normalized loss and symmetric explained variance of the encoder :math:`H` (``p x k``).

    :math:`XHH^+ = XUU^\top` for an orthonormal basis :math:`U` of
    :math:`\operatorname{span}(H)`, so the symmetric explained variance is
    :math:`\operatorname{tr}(U^\top CU)/\sum_{i\le k}\lambda_i(C)`, CPEV
    renormalised by PCA's. With ``data`` (``n x p``) everything is computed
    on it, through :math:`XU` (``n x k``); without, :math:`X = C^{1/2}` and
    :math:`\|XH(XH)^+X\|_F^2 = \operatorname{tr}\big((U^\top CU)^+ (CU)^\top CU\big)`.
    ``loss`` is on the scale of that :math:`X` (the centred data; for a
    covariance, :math:`\operatorname{tr} C` is the total). The registered
    metrics take the covariance path and scale the loss to the data
    (:func:`run_criteria`); the data path is kept for checks, and is the more
    accurate where :math:`XU` is ill-conditioned (see the module's description).

    Parameters
    ----------
    h
        The encoder (loadings), ``p x k``.
    covariance
        :math:`C`.
    data
        The data :math:`X` (``n x p``, :math:`X^\top X \propto C`), or ``None``
        for :math:`X = C^{1/2}`.
    spectrum
        The ``k`` leading eigenvalues of :math:`C` when the caller has them
        (computed here otherwise).

    Returns
    -------
    dict
        ``loss``, ``normalized_loss``, ``symmetric_explained_variance``.
        Both the loss and :math:`\|X - X_k\|_F^2` are differences of sums of
        squares; below ``1e-10`` of :math:`\|X\|_F^2` they are rounding and
        reported as 0. When :math:`\|X - X_k\|_F = 0` (rank at most ``k``) the
        normalized loss is 1 if the loss is 0 too, else infinite.
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
    if spectrum is None:
        spectrum = top_eigenvalues(covariance, k)
    best = float(np.sum(_scale_to_data(np.asarray(spectrum)[:k], covariance, data)))
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


def data_divisor(problem: Problem) -> float:
    r""":math:`s` with :math:`X^\top X = sC` for the problem's data :math:`X` (1 without data: :math:`X = C^{1/2}`).

    From the input record when the problem was built from data (:math:`s = n - 1` centred, :math:`n`
    uncentred, as :mod:`spcakit.inputs` divides), so that the data are never read; for a problem built by
    hand with a data array, :math:`\|X\|_F^2/\operatorname{tr}C` (the array is read where it is: no copy),
    or :math:`n - 1` when its data would be made on first use (as :attr:`~spcakit.inputs.problem.Problem.max_rank`
    assumes).
    """
    record = problem.input
    if record is not None and record.kind == "data":
        n = record.shape[0]
        return float(n - 1 if record.center else n)
    if problem.data_in_memory:
        data = problem.data
        trace = problem.covariance.trace()
        return float(np.vdot(data, data)) / trace if trace > 0 else 1.0
    if problem.n_samples is not None:
        return float(problem.n_samples - 1)
    return 1.0


def run_criteria(problem: Problem, loadings: np.ndarray, context: MetricContext) -> dict[str, float]:
    r"""The three criteria of a run, on the scale of its data when it has some: computed once per run and shared.

    Computed from the covariance operator alone, never from ``problem.data`` (which would make the centred
    ``n x p`` copy of dense data): the criteria depend on :math:`X` only through :math:`X^\top X = sC`
    (:func:`data_divisor`), so the data are :math:`\sqrt{s}\,C^{1/2}` as far as they go; the loss is that of
    :math:`C^{1/2}` times :math:`s`, the ratios are those of :math:`C^{1/2}`. :func:`encoder_metrics` with the
    data computes the same on the data themselves (see the module's description for how the two differ).
    """
    def compute() -> dict[str, float]:
        criteria = encoder_metrics(loadings, problem.covariance, spectrum=context.top_eigenvalues(loadings.shape[1]))
        criteria["loss"] *= data_divisor(problem)
        return criteria

    return context.shared(SHARED_KEY, compute)


def _criterion(name: str) -> Callable[[Problem, np.ndarray, MetricContext], float]:
    """The metric function of one of :data:`ENCODER_METRICS`."""
    def compute(problem: Problem, loadings: np.ndarray, context: MetricContext) -> float:
        return run_criteria(problem, loadings, context)[name]

    compute.__name__ = name
    return compute


#: The metrics this plugin registers (in the order of the text table).
METRICS = (
    Metric(name="loss", label="loss", description="||X - XH(XH)^+X||_F^2 (X: data, or C^1/2)",
           compute=_criterion("loss"), format=format_general, default_for=("encoders",)),
    Metric(name="normalized_loss", label="norm.loss", description="loss / ||X - X_k||_F^2 (>= 1)",
           compute=_criterion("normalized_loss"), format=format_number(4), default_for=("encoders",)),
    Metric(name="symmetric_explained_variance", label="sym. EV",
           description="symmetric explained variance ||XHH^+||_F^2 / ||X_k||_F^2",
           compute=_criterion("symmetric_explained_variance"), format=format_number(4), default_for=("encoders",)),
)  # fmt: skip
