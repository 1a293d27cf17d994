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

It also records in the run's carry how many features were found
(:data:`~spcakit_encoders.carry.FEATURES_FOUND`), for the per-feature
sparsities :math:`r_1, \dots, r_k` of the column selectors.
"""

from __future__ import annotations

import attrs
import numpy as np

from spcakit.plugin_api import Carry, Deflator, Problem, part, rank_one_downdate
from spcakit_encoders.carry import FEATURES_FOUND, FeaturesFound
from spcakit_encoders.encoder import PAPER
from spcakit_encoders.linalg import data_matrix

#: A feature whose image :math:`\|\Delta h\|^2` is below this fraction of :math:`\|\Delta\|_F^2` explains nothing left.
NEGLIGIBLE = 1e-14


@part("residual", paper=PAPER)
class ResidualDeflation(Deflator):
    r"""data <- X - XH(XH)^+X (rank-one update of the residual); C <- Schur complement; keeps the data

    Replaces the data :math:`\Delta` by :math:`\Delta - ww^\top\Delta/\|w\|^2`,
    :math:`w = \Delta x`, and :math:`C` by its Schur complement
    :math:`C - Cxx^\top C/(x^\top Cx)`; a feature that explains nothing of the
    residual leaves both as they are. The returned carry says that
    ``previous.shape[1]`` features have been found, for the returned problem.
    """

    def __call__(self, problem: Problem, x: np.ndarray, previous: np.ndarray, carry: Carry) -> tuple[Problem, Carry]:
        delta = data_matrix(problem, "residual deflation", carry)
        covariance = problem.covariance
        w = delta @ x
        energy = float(w @ w)
        total = float(np.vdot(delta, delta)) * float(x @ x)
        if energy <= NEGLIGIBLE * total or energy == 0.0:  # x explains nothing of the residual
            residual = delta
        else:
            residual = delta - np.outer(w, (w @ delta) / energy)
            cx = covariance.matmat(x)
            variance = float(x @ cx)
            if variance > 0:
                covariance = rank_one_downdate(covariance, cx, 1.0 / variance)
        deflated = attrs.evolve(problem, data=residual, covariance=covariance)
        return deflated, carry.set(FEATURES_FOUND, FeaturesFound(int(previous.shape[1]), covariance))


DEFLATORS = [ResidualDeflation]
