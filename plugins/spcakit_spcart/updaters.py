r"""Updaters: how a method turns the current loadings :math:`X` into the dense :math:`Z` it truncates.

From Hu, Pan, Wang & Wu, *Sparse Principal Component Analysis via Rotation
and Truncation*:

* ``rotation`` (SPCArt, Alg. 1 lines 6 and 8):
  :math:`R = \mathrm{Polar}(X^\top V)`, :math:`Z = V R^\top`;
* ``gpower`` (GPower / rSVD-GPB, Alg. 3 lines 5 and 7):
  :math:`Y = \mathrm{Polar}(AX)`, :math:`Z = A^\top Y`, computed from the
  covariance alone as :math:`Z = C X (X^\top C X)^{-1/2}` (since
  :math:`A^\top\mathrm{Polar}(AX) = A^\top A X (X^\top A^\top A X)^{-1/2}`),
  so it runs on a covariance, on data, and on any deflated operator; for
  one column it is GPower's single-unit step :math:`z = Cx/\sqrt{x^\top C x}`.

The generic ``power`` and ``identity`` updaters are the core's (:mod:`spcakit.parts.updaters`).
"""

from __future__ import annotations

import attrs
import numpy as np

from spcakit.plugin_api import Carry, Problem, Updater, boolean, part
from spcakit_spcart.linalg import inverse_sqrt_psd, polar

PAPER = "Hu, Pan, Wang, Wu - Sparse Principal Component Analysis via Rotation and Truncation"


@part("rotation", paper=PAPER)
class RotationUpdater(Updater):
    r"""SPCArt: R = Polar(X^T V), Z = V R^T (Alg. 1).

    ``init`` keeps :math:`V` (the orthonormal factor of the start) as the
    updater's state. With :math:`X_0 = V`, the first proposal is :math:`V`
    itself (:math:`R = I`, Alg. 1 line 4). The objective is
    :math:`\|X^\top V\|_*` (sum of singular values, at most ``r``): how close
    :math:`X` is to a rotation of :math:`V`.
    """

    fresh_proposal = True  # Z = V R^T is made by propose

    def init(self, problem: Problem, x0: np.ndarray, carry: Carry) -> np.ndarray:
        return polar(x0)  # in Fortran order

    def propose(self, problem: Problem, x: np.ndarray, state: np.ndarray) -> tuple[np.ndarray, float, np.ndarray]:
        # V and Z in Fortran order, each column contiguous: Z = (R V^T)^T is one product in V's layout, and the driver
        # ranks, truncates and measures Z (and so X) column by column without strided gathers (on 100 000 x 20 a step
        # took 24 ms at k = 100 and 37 ms at k = 15 000, against 44 and 56 ms in C order).
        v = state
        # X^T V of the unit columns of X, scaled after the product, over the rows where X has a nonzero (a
        # truncated X has few: k per column); no p x r temporary beyond X's rows in one layout: a dense X is taken
        # in Fortran order (copied only when it comes in another, on the first step), so that the product rounds
        # the same whatever the caller passes, and the copy goes before Z is made. The rows are found by their
        # sums of squares (twice as fast as np.any over rows of r entries): a row whose squares all underflow
        # (entries below 1e-154) is left out, its share of X^T V being below the rounding of the rest (a column of
        # such entries alone has no length either way: the drivers refuse it as a zero loading before it gets here)
        live = np.flatnonzero(np.einsum("ij,ij->i", x, x))
        rows, v_rows = (x[live], v[live]) if 2 * live.size < x.shape[0] else (np.asfortranarray(x), v)
        b = (rows.T @ v_rows) / np.sqrt(np.einsum("ij,ij->j", rows, rows))[:, None]
        del rows, v_rows
        w, d, qt = np.linalg.svd(b, full_matrices=False)
        rotation = w @ qt
        z = np.empty(v.shape, order="F")
        np.matmul(rotation, v.T, out=z.T)  # Z^T = R V^T, written in place as Z in Fortran order
        return z, float(d.sum()), v


@part("gpower", paper=PAPER)
class GPowerUpdater(Updater):
    r"""GPower: Z = A^T Polar(A X) = C X (X^T C X)^(-1/2) (block: rSVD-GPB, Alg. 3); relative: divide by max column norm

    With ``relative=True`` (Journée et al.'s code), :math:`Z` is divided by
    the largest column norm :math:`\max_i \|a_i\|_2 = \sqrt{\max_i C_{ii}}`
    of the current (deflated) data, so that an absolute truncation at γ
    acts as GPower's relative threshold: :math:`z_i^2 > \gamma \max_i\|a_i\|^2`
    (ℓ0) or :math:`|z_i| > \gamma \max_i\|a_i\|` (ℓ1). The direction of
    every column, hence the loadings, is unchanged by this scaling; the
    scale is the updater's state.

    The objective is :math:`\|AX\|_* = \operatorname{tr}(X^\top C X)^{1/2}`,
    the unpenalised GPower objective :math:`\operatorname{tr}(Y^\top A X)`.
    """

    fresh_proposal = True  # Z = C X (X^T C X)^(-1/2) / scale is made by propose

    relative: bool = attrs.field(default=False, validator=boolean)

    def init(self, problem: Problem, x0: np.ndarray, carry: Carry) -> float:
        if not self.relative:
            return 1.0
        return float(np.sqrt(max(float(problem.covariance.diagonal().max()), 0.0))) or 1.0

    def propose(self, problem: Problem, x: np.ndarray, state: float) -> tuple[np.ndarray, float, float]:
        cx = problem.covariance.matmat(x)
        gram = x.T @ cx
        z = cx @ inverse_sqrt_psd(gram) / state
        objective = float(np.sum(np.sqrt(np.clip(np.linalg.eigvalsh((gram + gram.T) / 2), 0, None))))
        return z, objective, state


UPDATERS = [RotationUpdater, GPowerUpdater]
