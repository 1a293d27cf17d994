r"""Generic updaters: how a method turns the current loadings :math:`X` into the dense :math:`Z` it truncates.

* ``power`` (rSVD-GP, Alg. 2 line 6 of Hu, Pan, Wang & Wu; TPower): :math:`Z = C X`;
* ``identity``: :math:`Z = X` (PCA and simple thresholding: one truncation of the start).

The SPCArt paper's own updaters (``rotation``, ``gpower``) are its plugin's (:mod:`spcakit_spcart.updaters`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spcakit.problem import Problem
from spcakit.protocols import Updater, part
from spcakit.state import CONSTRAINT, Carry, constraint_matmat

PAPER = "Hu, Pan, Wang, Wu - Sparse Principal Component Analysis via Rotation and Truncation"


@part("identity", paper=PAPER)
class IdentityUpdater(Updater):
    """Z = X (PCA, simple thresholding); its objective is not defined (NaN)."""

    def propose(self, problem: Problem, x: np.ndarray, state: Any) -> tuple[np.ndarray, float, Any]:
        return x, float("nan"), state


@part("power", paper=PAPER)
class PowerUpdater(Updater):
    r"""Power step Z = C X (rSVD-GP, TPower; Alg. 2).

    The step acts on the unit columns :math:`\hat X`; the objective is
    :math:`\sum_i \hat x_i^\top C \hat x_i`. On a generalized problem (the
    run's carry holds a constraint :math:`B = I - QQ^\top`, as after Mackey's
    generalized deflation) the objective is the generalized Rayleigh quotient
    :math:`\hat x^\top C \hat x / \hat x^\top B \hat x`; the step itself is
    unchanged, as :math:`C = B A_0 B` already lives in the range of :math:`B`.
    The state is the carry.
    """

    def init(self, problem: Problem, x0: np.ndarray, carry: Carry) -> Carry:
        return carry

    def propose(self, problem: Problem, x: np.ndarray, state: Carry) -> tuple[np.ndarray, float, Carry]:
        unit = x / np.linalg.norm(x, axis=0)  # lengths are irrelevant; unit columns keep Z bounded
        z = problem.covariance.matmat(unit)
        quotients = np.einsum("ij,ij->j", unit, z)
        if state.get(CONSTRAINT) is not None:  # generalized Rayleigh quotient x^T A x / x^T B x
            bnorm = np.einsum("ij,ij->j", unit, constraint_matmat(state, unit))
            quotients = np.where(bnorm > 1e-12, quotients / np.where(bnorm > 1e-12, bnorm, 1.0), 0.0)
        return z, float(np.sum(quotients)), state


UPDATERS = [IdentityUpdater, PowerUpdater]
