r"""Refiners: improve finished loadings without changing their supports.

``support-refit`` is the post-processing of Journée, Nesterov, Richtárik & Sepulchre's GPower
("pattern filling": once the sparsity pattern is found, the loading on it is re-computed without
the penalty), generalised so that it suits loadings found one after the other. For loadings
:math:`x_1, \dots, x_r` with supports :math:`S_1, \dots, S_r`, in order,

.. math::

    \hat x_t = \arg\max_{\operatorname{supp}(x) \subseteq S_t}
        \frac{x^\top B_t C B_t\, x}{x^\top B_t\, x},
    \qquad B_t = I - Q_tQ_t^\top,

with :math:`Q_t` an orthonormal basis of :math:`\operatorname{span}(\hat x_1, \dots, \hat x_{t-1})`:
the variance :math:`\hat x_t` adds to the loadings before it (Mackey's additional variance, whose
sum over :math:`t` is CPEV times :math:`\operatorname{tr} C`). For :math:`t = 1` this is the
leading eigenvector of :math:`C_{S_1S_1}`, exactly GPower's pattern filling; later loadings differ
from re-fitting each on a deflated covariance only by how the earlier ones are removed. Each step
is the top eigenpair of a :math:`|S_t|\times|S_t|` pencil (:func:`spcakit.numerics.linalg.generalized_top`)
built from :math:`C_{:,S_t}` and :math:`CQ_t`: :math:`O(p\,|S_t|)` products with the covariance,
nothing :math:`p\times p`.

A loading keeps its support (its entries on :math:`S_t` may change, its zeros stay zero). If the
re-fitted loadings explain less variance than the input (possible in principle, since each step is
greedy), the input is returned unchanged, so CPEV never decreases. "Less" is decided by the tie rule
of :mod:`spcakit.numerics.ties` at the tolerance :data:`KEEP_RTOL`: when the input is already the re-fit (a
converged loading on a full support), the two CPEVs differ only by rounding, and the re-fit is kept
whatever that rounding is, so the choice does not depend on the order or the scale of the variables.
"""

from __future__ import annotations

import numpy as np

from spcakit.plugin_api import (
    Problem,
    Refiner,
    added_variance_problem,
    cpev,
    generalized_top,
    part,
    ties,
)

PAPER = "Journee, Nesterov, Richtarik, Sepulchre - Generalized Power Method for Sparse Principal Component Analysis (JMLR 2010)"
#: A direction whose part outside the earlier loadings' span is below this (relative) adds nothing.
NEGLIGIBLE = 1e-10
#: The input is kept only when its CPEV exceeds the re-fit's by more than this (relative): rounding ties.
KEEP_RTOL = 1e-12


@part("support-refit", paper=PAPER)
class SupportRefit(Refiner):
    """re-fit each loading on its support: the direction adding the most variance to the earlier ones (GPower's pattern filling)"""

    def __call__(self, problem: Problem, loadings: np.ndarray) -> np.ndarray:
        op = problem.covariance
        p, r = loadings.shape
        basis, c_basis = np.zeros((p, 0)), np.zeros((p, 0))
        refitted = np.array(loadings, dtype=float, copy=True)
        for t in range(r):
            support = np.flatnonzero(loadings[:, t])
            a_ss, b_ss = added_variance_problem(op.columns(support), support, basis, c_basis, basis.T @ c_basis)
            value, y = generalized_top(a_ss, b_ss)
            if value > 0:
                x = np.zeros(p)
                x[support] = y
                x /= np.linalg.norm(x)
                refitted[:, t] = x if float(x @ loadings[:, t]) >= 0 else -x
            q = refitted[:, t] - basis @ (basis.T @ refitted[:, t])
            q -= basis @ (basis.T @ q)  # twice is enough (Kahan-Parlett)
            norm = float(np.linalg.norm(q))
            if norm > NEGLIGIBLE:
                q /= norm
                basis, c_basis = np.column_stack([basis, q]), np.column_stack([c_basis, op.matmat(q)])
        if ties.improves(cpev(loadings, op), cpev(refitted, op), rtol=KEEP_RTOL):
            return np.array(loadings, dtype=float, copy=True)
        return refitted


REFINERS = [SupportRefit]
