r"""The ``residual`` deflator of the iterative sparse linear encoder.

Magdon-Ismail & Boutsidis, *Optimal Sparse Linear Encoders and Sparse PCA*
(NIPS 2016), §3, line 5 of the iterative algorithm: after the encoder
:math:`H_t = [h_1, \dots, h_t]`, the next feature is sought for the residual

.. math::

    \Delta_t = X - XH_t(XH_t)^+X = (I - P_t)X,

with :math:`P_t` the orthogonal projection onto :math:`\operatorname{span}(XH_t)`.
Since :math:`w = \Delta_{t-1}h_t = (I - P_{t-1})Xh_t` is orthogonal to
:math:`\operatorname{span}(XH_{t-1})`, :math:`P_t = P_{t-1} + ww^\top/\|w\|^2`
and, with :math:`w^\top X = w^\top\Delta_{t-1}`,

.. math::

    \Delta_t = \Delta_{t-1} - \frac{w\,(w^\top\Delta_{t-1})}{\|w\|_2^2}, \qquad w = \Delta_{t-1}h_t ,

a rank-one update in :math:`O(nd)` that needs only the current residual.
On the covariance :math:`C \propto \Delta^\top\Delta` it is
:math:`C' = C - Chh^\top C/(h^\top Ch)`: Mackey's Schur complement deflation,
whatever the scale of :math:`C`. Unlike ``schur``, ``residual`` keeps the data
(the new residual) on the problem, so the encoder of the next round works on
:math:`\Delta_t` itself. It annihilates every earlier feature
(:math:`\Delta_t h_i = 0`, :math:`i \le t`) and never increases the loss:
:math:`\|\Delta_t\|_F^2 = \|\Delta_{t-1}\|_F^2 - \|w^\top\Delta_{t-1}\|^2/\|w\|^2`.
"""

from __future__ import annotations

import attrs
import numpy as np

from spcakit.operators import CovarianceOperator, rank_one_downdate
from spcakit.problem import Problem
from spcakit_encoders.linalg import data_matrix

#: A feature whose image :math:`\|\Delta h\|^2` is below this fraction of :math:`\|\Delta\|_F^2` explains nothing left.
NEGLIGIBLE = 1e-14


@attrs.frozen(eq=False)
class ResidualCovariance:
    r"""The covariance of a residual :math:`\Delta_t` and the encoder :math:`H_t` (``p x t``) it is the residual of.

    Every product is ``base``'s (the Schur-complement-deflated covariance);
    ``encoder`` tells the next round how many features were found, so that
    per-feature sparsities :math:`r_1, \dots, r_k` can be applied.
    """

    base: CovarianceOperator
    encoder: np.ndarray

    @property
    def p(self) -> int:
        return self.base.p

    def matmat(self, v: np.ndarray) -> np.ndarray:
        return self.base.matmat(v)

    def diagonal(self) -> np.ndarray:
        return self.base.diagonal()

    def trace(self) -> float:
        return self.base.trace()

    def top_eigenpairs(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        return self.base.top_eigenpairs(r)


@attrs.frozen
class ResidualDeflation:
    r"""Replace the data by the residual :math:`\Delta - ww^\top\Delta/\|w\|^2`, :math:`w = \Delta x`, and :math:`C` by its Schur complement."""

    def __call__(self, problem: Problem, x: np.ndarray, previous: np.ndarray) -> Problem:
        delta = data_matrix(problem, "residual deflation")
        op = problem.covariance
        base = op.base if isinstance(op, ResidualCovariance) else op
        encoder = np.array(previous, dtype=float, copy=True)
        w = delta @ x
        energy = float(w @ w)
        total = float(np.vdot(delta, delta)) * float(x @ x)
        if energy <= NEGLIGIBLE * total or energy == 0.0:  # x explains nothing of the residual
            return attrs.evolve(problem, data=delta, covariance=ResidualCovariance(base, encoder))
        residual = delta - np.outer(w, (w @ delta) / energy)
        cx = base.matmat(x)
        variance = float(x @ cx)
        if variance > 0:
            base = rank_one_downdate(base, cx, 1.0 / variance)
        return attrs.evolve(problem, data=residual, covariance=ResidualCovariance(base, encoder))


def make_residual() -> ResidualDeflation:
    return ResidualDeflation()
