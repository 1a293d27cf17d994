r"""Generic updaters: how a method turns the current loadings :math:`X` into the dense :math:`Z` it truncates.

* ``power`` (rSVD-GP, Alg. 2 line 6 of Hu, Pan, Wang & Wu; TPower): :math:`Z = C X`;
* ``identity``: :math:`Z = X` (PCA and simple thresholding: one truncation of the start).

The SPCArt paper's own updaters (``rotation``, ``gpower``) are its plugin's (:mod:`spcakit_spcart.updaters`).
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from spcakit.numerics.operators.base import sparse_product
from spcakit.numerics.operators.screen import screened_product
from spcakit.inputs.problem import Problem
from spcakit.core.protocols import Updater, part
from spcakit.core.records import CONSTRAINT, TRUNCATION_KEEPS, Carry, constraint_matmat
from spcakit.core.fields import integer, to_int

PAPER = "Hu, Pan, Wang, Wu - Sparse Principal Component Analysis via Rotation and Truncation"


@part("identity", paper=PAPER)
class IdentityUpdater(Updater):
    """Z = X (PCA, simple thresholding); its objective is not defined (NaN)."""

    def propose(self, problem: Problem, x: np.ndarray, state: Any) -> tuple[np.ndarray, float, Any]:
        return x, float("nan"), state


#: The power updater's carry key for the supports of the last iterates and for how many steps they held.
SUPPORT_KEY = "power.support"
#: ... and for its last finish the eigenvectors and their product with C: finishing again on the same fixed point
#: (the step that confirms it) reuses the product instead of another pass over the data.
FINISH_KEY = "power.finish"
#: ... and for the full products a screened step bounds the next ones by (:class:`spcakit.numerics.operators.screen.Screen`).
SCREEN_KEY = "power.screen"
#: The power updater finishes on supports of at most this many variables each (an eigenproblem of that size).
FINISH_LIMIT = 1000
#: ... and only once the last step moved each unit column by less than this (in absolute values).
FINISH_TOL = 1e-2


@part("power", paper=PAPER)
class PowerUpdater(Updater):
    r"""Power step Z = C X (rSVD-GP, TPower; Alg. 2); on supports that stopped changing, their fixed point.

    The step acts on the unit columns :math:`\hat X`; the objective is
    :math:`\sum_i \hat x_i^\top C \hat x_i`. On a generalized problem (the
    run's carry holds a constraint :math:`B = I - QQ^\top`, as after Mackey's
    generalized deflation) the objective is the generalized Rayleigh quotient
    :math:`\hat x^\top C \hat x / \hat x^\top B \hat x`; the step itself is
    unchanged, as :math:`C = B A_0 B` already lives in the range of :math:`B`.

    **Sparse iterates** (issue 27): when the columns' nonzero rows :math:`S` are at most half of the variables
    (after a truncation to ``k`` nonzeros, ``k`` of them), the step is
    :math:`C_{:,S}\hat X_S` (:meth:`~spcakit.numerics.operators.CovarianceOperator.matmat_rows`): for data
    :math:`B^\top(B_{:,S}\hat X_S)/s`, one pass over the data where a dense product makes two; the same
    numbers, to rounding.

    **Finishing on the support** (``finish_after``, 2 by default, 0 for never; issue 27). Once the
    supports have held for ``finish_after`` steps in a row and the last step moved no unit column by
    :data:`FINISH_TOL`, the truncated power iteration is the power method on :math:`C_{SS}`, whose limit
    is :math:`C_{SS}`'s leading eigenvector :math:`v` (for a start not orthogonal to it). The step then
    returns :math:`Z = C_{:,S}\,v` at once, from the principal submatrix :math:`C_{SS}` (for data,
    :math:`|S|` of its columns), an eigenproblem of :math:`|S|` variables and one product with
    :math:`C` (a pass over the data, as a power step): if the truncation keeps :math:`S`, :math:`v` is a
    fixed point of the iteration and the next step, finishing again, finds the same :math:`v` and reuses its
    product (no second pass over the data), so the relative-change rule stops the run (relative change
    exactly 0); if not, the iteration goes on from there. It is skipped on a generalized problem, for
    supports of more than :data:`FINISH_LIMIT` variables, and when their union holds more than half the
    variables. The carry keeps the supports under :data:`SUPPORT_KEY` and the last finish under
    :data:`FINISH_KEY`.

    **Screened steps** (issue 27). When the run's truncation keeps the ``k`` largest entries of a single column
    (the driver hands ``k`` in the carry, :data:`spcakit.core.records.TRUNCATION_KEEPS`) the step is
    :func:`~spcakit.numerics.operators.screen.screened_product`: on data, exact on the entries that truncation can keep
    and on the iterate's rows, bounded elsewhere by the last full products (kept under :data:`SCREEN_KEY`); the
    truncation keeps the same entries with the same values, to rounding.

    Why wait: the finished point is a fixed point of the iteration, but a support that has just formed
    can still change on the way there, and finishing early may then stop at another fixed point. On 800
    random problems (tpower and rSVD-GP, p up to 60, standardised or not) finishing after one step on a
    support ended at a lower CPEV in 16 (by up to 9 %), after three in 4, after five in none; with
    :data:`FINISH_TOL` as well, after two or three steps in none (and 30 % fewer iterations in all). The
    default was three steps until 780 further random problems of the same kinds (p from 8 to 60, half of them
    standardised, some with a shared factor) ended at the same CPEV (to 1e-7) after one, two or three steps with
    :data:`FINISH_TOL`, as did TPower at k = 5, 20 and 100 (r = 5) on the colon, lymphoma, Golub, NUS-WIDE and
    numerical-numbers data, raw and standardised (30 fits, 6.5 % fewer iterations at two than at three); on
    500 x 100 000 Gaussian data (r = 20, k = 100) two steps take 350 iterations instead of 370, the same CPEV.
    """

    finish_after: int = attrs.field(default=2, converter=to_int, validator=integer(0))

    def init(self, problem: Problem, x0: np.ndarray, carry: Carry) -> Carry:
        for key in (SUPPORT_KEY, FINISH_KEY, SCREEN_KEY):
            carry = carry.without(key)
        return carry

    def propose(self, problem: Problem, x: np.ndarray, state: Carry) -> tuple[np.ndarray, float, Carry]:
        unit = x / np.linalg.norm(x, axis=0)  # lengths are irrelevant; unit columns keep Z bounded
        if self.finish_after and state.get(CONSTRAINT) is None:
            support = x != 0
            held = state.get(SUPPORT_KEY)  # (supports, steps they held, unit columns, finished on them)
            same = held is not None and np.array_equal(held[0], support)
            steps = held[1] + 1 if same else 0
            # settled: the last step moved no column by FINISH_TOL, or it was a finish on these supports (then
            # finishing again repeats the same computation, so a fixed point shows a relative change of exactly 0)
            settled = same and (held[3] or float(np.max(np.linalg.norm(np.abs(unit) - np.abs(held[2]), axis=0))) < FINISH_TOL)
            union = np.flatnonzero(support.any(axis=1))
            finish = (steps >= self.finish_after and settled and int(support.sum(axis=0).max()) <= FINISH_LIMIT
                      and 2 * union.size <= problem.p)  # fmt: skip
            state = state.set(SUPPORT_KEY, (support, steps, unit, finish))
            if finish:
                w, objective = _support_vectors(problem, unit, support)
                last = state.get(FINISH_KEY)
                if last is not None and np.array_equal(last[0], w):
                    z = last[1]  # the same fixed point as the last finish: the same product, not taken again
                else:
                    z = problem.covariance.matmat_rows(w, union)
                    state = state.set(FINISH_KEY, (w, z))
                return z, objective, state
        keeps = state.get(TRUNCATION_KEEPS) if isinstance(state, Carry) else None
        if keeps is not None and unit.shape[1] == 1:  # exact where the truncation looks (spcakit.numerics.operators.screen)
            z, screen, _ = screened_product(problem.covariance, unit, keeps, state.get(SCREEN_KEY))
            state = state.set(SCREEN_KEY, screen)
        else:
            z = sparse_product(problem.covariance, unit)  # sparse columns: C_{:,S} X_S, for data one pass
        quotients = np.einsum("ij,ij->j", unit, z)
        if state.get(CONSTRAINT) is not None:  # generalized Rayleigh quotient x^T A x / x^T B x
            bnorm = np.einsum("ij,ij->j", unit, constraint_matmat(state, unit))
            quotients = np.where(bnorm > 1e-12, quotients / np.where(bnorm > 1e-12, bnorm, 1.0), 0.0)
        return z, float(np.sum(quotients)), state

    def loading_product(self, problem: Problem, unit: np.ndarray, state: Carry) -> np.ndarray | None:
        r"""The finish's :math:`Cv` when the run's last step was a finish (the one that confirms a fixed point) on a
        single column: the loading is then the truncation of :math:`Cv` normalised, :math:`v` itself to rounding
        (:math:`(Cv)_S = \lambda v_S` for the leading eigenvector :math:`v` of :math:`C_{SS}`), so :math:`C` times the
        loading is :math:`Cv`; checked: the same support and entries within :data:`PRODUCT_TOL`."""
        held, last = state.get(SUPPORT_KEY), state.get(FINISH_KEY)
        if held is None or last is None or not held[3] or last[0].shape[1] != 1 or unit.ndim != 1:
            return None
        w = last[0][:, 0]
        if not np.array_equal(w != 0, unit != 0) or float(np.max(np.abs(w - unit))) > PRODUCT_TOL:
            return None
        return np.asarray(last[1][:, 0])


#: :meth:`PowerUpdater.loading_product` gives the finish's product for a loading within this of the finish's vector
#: (largest entry; both unit vectors, equal up to the rounding of one product and normalisation).
PRODUCT_TOL = 1e-12


def _support_vectors(problem: Problem, unit: np.ndarray, support: np.ndarray) -> tuple[np.ndarray, float]:
    r"""The columns :math:`v_j`, the leading eigenvectors of :math:`C_{S_jS_j}` (signed like the unit columns, zero off
    their supports), and the objective :math:`\sum_j \hat x_j^\top C \hat x_j` of the unit columns, from the principal
    submatrices alone; the finish's :math:`Z` is then :math:`CV`, one product with :math:`C`."""
    covariance = problem.covariance
    w = np.zeros_like(unit)
    objective = 0.0
    for j in range(unit.shape[1]):
        rows = np.flatnonzero(support[:, j])
        block = covariance.submatrix(rows)
        values, vectors = np.linalg.eigh(block)
        v = vectors[:, -1]
        w[rows, j] = -v if float(v @ unit[rows, j]) < 0 else v
        objective += float(unit[rows, j] @ block @ unit[rows, j])
    return w, objective


UPDATERS = [IdentityUpdater, PowerUpdater]
