r"""Updaters: how a method turns the current loadings :math:`X` into the dense :math:`Z` it truncates.

From Hu, Pan, Wang & Wu, *Sparse Principal Component Analysis via Rotation
and Truncation*:

* ``rotation`` (SPCArt, Alg. 1 lines 6 and 8):
  :math:`R = \mathrm{Polar}(X^\top V)`, :math:`Z = V R^\top`;
* ``power`` (rSVD-GP, Alg. 2 line 6; TPower): :math:`Z = C X`;
* ``gpower`` (GPower / rSVD-GPB, Alg. 3 lines 5 and 7):
  :math:`Y = \mathrm{Polar}(AX)`, :math:`Z = A^\top Y`, computed from the
  covariance alone as :math:`Z = C X (X^\top C X)^{-1/2}` (since
  :math:`A^\top\mathrm{Polar}(AX) = A^\top A X (X^\top A^\top A X)^{-1/2}`),
  so it runs on a covariance, on data, and on any deflated operator; for
  one column it is GPower's single-unit step :math:`z = Cx/\sqrt{x^\top C x}`;
* ``identity``: :math:`Z = X` (PCA and simple thresholding: one truncation of the start).
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from spcakit.errors import InvalidParameterError
from spcakit.problem import Problem
from spcakit_spcart.linalg import inverse_sqrt_psd, polar


@attrs.frozen
class IdentityUpdater:
    """:math:`Z = X`; its objective is not defined (NaN)."""

    def init(self, problem: Problem, x0: np.ndarray) -> None:
        return None

    def propose(self, problem: Problem, x: np.ndarray, context: Any) -> tuple[np.ndarray, float]:
        return x, float("nan")


@attrs.frozen
class RotationUpdater:
    r"""SPCArt's rotation of the PCA loadings :math:`V` towards the sparse :math:`X`.

    ``init`` keeps :math:`V` (the orthonormal factor of the start). With
    :math:`X_0 = V`, the first proposal is :math:`V` itself (:math:`R = I`,
    Alg. 1 line 4). The objective is :math:`\|X^\top V\|_*` (sum of singular
    values, at most ``r``): how close :math:`X` is to a rotation of :math:`V`.
    """

    def init(self, problem: Problem, x0: np.ndarray) -> np.ndarray:
        return polar(x0)

    def propose(self, problem: Problem, x: np.ndarray, context: np.ndarray) -> tuple[np.ndarray, float]:
        v = context
        unit = x / np.linalg.norm(x, axis=0)
        b = unit.T @ v
        w, d, qt = np.linalg.svd(b, full_matrices=False)
        rotation = w @ qt
        return v @ rotation.T, float(d.sum())


@attrs.frozen
class PowerUpdater:
    r"""Power step :math:`Z = C\hat X` on the unit columns :math:`\hat X`; objective :math:`\sum_i \hat x_i^\top C \hat x_i`.

    On a generalized problem (Mackey's generalized deflation, :math:`B \ne I`)
    the objective is the generalized Rayleigh quotient
    :math:`\hat x^\top C \hat x / \hat x^\top B \hat x`; the step itself is
    unchanged, as :math:`C = B A_0 B` already lives in the range of :math:`B`.
    """

    def init(self, problem: Problem, x0: np.ndarray) -> None:
        return None

    def propose(self, problem: Problem, x: np.ndarray, context: Any) -> tuple[np.ndarray, float]:
        unit = x / np.linalg.norm(x, axis=0)  # lengths are irrelevant; unit columns keep Z bounded
        z = problem.covariance.matmat(unit)
        quotients = np.einsum("ij,ij->j", unit, z)
        if problem.constraint is not None:  # generalized Rayleigh quotient x^T A x / x^T B x
            bnorm = np.einsum("ij,ij->j", unit, problem.constraint_matmat(unit))
            quotients = np.where(bnorm > 1e-12, quotients / np.where(bnorm > 1e-12, bnorm, 1.0), 0.0)
        return z, float(np.sum(quotients))


@attrs.frozen
class GPowerUpdater:
    r"""GPower step :math:`Z = A^\top \mathrm{Polar}(AX) = CX(X^\top C X)^{-1/2}`.

    With ``relative=True`` (Journée et al.'s code), :math:`Z` is divided by
    the largest column norm :math:`\max_i \|a_i\|_2 = \sqrt{\max_i C_{ii}}`
    of the current (deflated) data, so that an absolute truncation at γ
    acts as GPower's relative threshold: :math:`z_i^2 > \gamma \max_i\|a_i\|^2`
    (ℓ0) or :math:`|z_i| > \gamma \max_i\|a_i\|` (ℓ1). The direction of
    every column, hence the loadings, is unchanged by this scaling.

    The objective is :math:`\|AX\|_* = \operatorname{tr}(X^\top C X)^{1/2}`,
    the unpenalised GPower objective :math:`\operatorname{tr}(Y^\top A X)`.
    """

    relative: bool = False

    def init(self, problem: Problem, x0: np.ndarray) -> float:
        if not self.relative:
            return 1.0
        return float(np.sqrt(max(float(problem.covariance.diagonal().max()), 0.0))) or 1.0

    def propose(self, problem: Problem, x: np.ndarray, context: float) -> tuple[np.ndarray, float]:
        cx = problem.covariance.matmat(x)
        gram = x.T @ cx
        z = cx @ inverse_sqrt_psd(gram) / context
        objective = float(np.sum(np.sqrt(np.clip(np.linalg.eigvalsh((gram + gram.T) / 2), 0, None))))
        return z, objective


def make_identity() -> IdentityUpdater:
    return IdentityUpdater()


def make_rotation() -> RotationUpdater:
    return RotationUpdater()


def make_power() -> PowerUpdater:
    return PowerUpdater()


def make_gpower(relative: bool = False) -> GPowerUpdater:
    if not isinstance(relative, bool):
        raise InvalidParameterError(f"gpower: relative must be true or false; got {relative!r}")
    return GPowerUpdater(relative)
