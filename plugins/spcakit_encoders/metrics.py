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

:data:`METRICS` are registered by the plugin (``loss``, ``normalized_loss``,
``symmetric_explained_variance``); the three come from one
:func:`encoder_metrics` per run, which takes :math:`\|X_k\|_F^2` from the
leading eigenvalues of :math:`C` the run's metrics share
(:meth:`spcakit.metrics.MetricContext.top_eigenvalues`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from spcakit.metrics import Metric, MetricContext, format_general, format_number, orthonormal_basis, top_eigenvalues
from spcakit.operators import CovarianceOperator
from spcakit.problem import Problem

#: The names of the three encoder criteria in ``Result.metrics``.
ENCODER_METRICS = ("loss", "normalized_loss", "symmetric_explained_variance")
#: Loss and optimum below this fraction of ||X||_F^2 are rounding (they are differences of sums of squares): 0.
_NEGLIGIBLE_LOSS = 1e-10
#: Key of the three criteria in a run's :class:`~spcakit.metrics.MetricContext` (computed once for the three).
SHARED_KEY = "encoders.criteria"


def top_squared_singular_values(k: int, covariance: CovarianceOperator, data: np.ndarray | None = None) -> np.ndarray:
    r"""The ``k`` largest :math:`\sigma_i^2(X)`: of ``data`` (whose Gram matrix :math:`X^\top X` is
    proportional to :math:`C`), or of :math:`X = C^{1/2}` (the eigenvalues of :math:`C`).

    The eigenvalues of :math:`C` (:func:`spcakit.metrics.top_eigenvalues`)
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
    covariance, :math:`\operatorname{tr} C` is the total).

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


def _operator_data_divisor(problem: Problem) -> float:
    r""":math:`s` with :math:`X^\top X = sC` when the data are held only inside the covariance operator
    (``scipy.sparse`` input: ``problem.data`` is ``None`` but the record says data), else 1."""
    record = problem.input
    if record is None or record.kind != "data" or problem.data is not None:
        return 1.0
    n = record.shape[0]
    return float(n - 1 if record.center else n)


def run_criteria(problem: Problem, loadings: np.ndarray, context: MetricContext) -> dict[str, float]:
    """The three criteria of a run, on its data when it has some: computed once per run and shared.

    Data held only in the operator (sparse input) are :math:`X = \\sqrt{s}\\,C^{1/2}` as far as the
    criteria go (they depend on :math:`X^\\top X = sC` alone): the loss is that of :math:`C^{1/2}` times
    :math:`s`, equal to the loss on the same data given dense.
    """
    def compute() -> dict[str, float]:
        criteria = encoder_metrics(loadings, problem.covariance, problem.data,
                                   spectrum=context.top_eigenvalues(loadings.shape[1]))  # fmt: skip
        criteria["loss"] *= _operator_data_divisor(problem)
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
           compute=_criterion("loss"), format=format_general),
    Metric(name="normalized_loss", label="norm.loss", description="loss / ||X - X_k||_F^2 (>= 1)",
           compute=_criterion("normalized_loss"), format=format_number(4)),
    Metric(name="symmetric_explained_variance", label="sym. EV",
           description="symmetric explained variance ||XHH^+||_F^2 / ||X_k||_F^2",
           compute=_criterion("symmetric_explained_variance"), format=format_number(4)),
)  # fmt: skip
