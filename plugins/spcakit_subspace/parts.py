r"""Parts of Xu, Yang & Zhang, *Fast Deflation Sparse Principal Component Analysis via
Subspace Projections* (SPCA-SP, Alg. 1).

Round :math:`t` seeks the loading in the span of an orthonormal
:math:`P_{t-1} \in \mathbb{R}^{d\times m}`:

.. math::

    \alpha_t = \arg\max_{\|\alpha\| = 1} \alpha^\top (P_{t-1}^\top A_0 P_{t-1})\alpha,
    \qquad \tilde z_t = T_\lambda(P_{t-1}\alpha_t) / \|T_\lambda(P_{t-1}\alpha_t)\|,

then :math:`P_t = [q_{t+1}, \dots, q_{t+m}]` from the Householder QR
:math:`[\tilde z_1, \dots, \tilde z_t, P_{t-1}] = QR` (eq. 10), so that
:math:`P_t^\top \tilde z_i = 0` for every :math:`i \le t` (eq. 11).

* ``linear-time-svd`` (initializer): :math:`P_0` from LinearTimeSVD (Drineas,
  Kannan & Mahoney): sample ``c`` rows :math:`x_{(i)}` with probability
  :math:`\|x_{(i)}\|^2/\|X\|_F^2`, rescale by :math:`1/\sqrt{c\,\xi_i}`, and take
  :math:`p_i = X_c^\top u_i / \sigma_i` from the SVD of :math:`X_c X_c^\top`;
  ``exact = true`` (and always for a covariance input) uses the ``m``
  leading eigenvectors of :math:`A_0` instead.
* ``subspace-power`` (updater): :math:`\alpha` by the power method on the
  :math:`m\times m` matrix :math:`P^\top A_0 P`, formed through ``m`` products
  with the covariance operator (:math:`X^\top(XP)` for data: never
  :math:`X^\top X`), and :math:`z = P\alpha`.
* ``householder-subspace`` (deflator): the QR update of :math:`P` above, with
  Remark 2's edge case (fewer than ``m`` directions left when :math:`t + m > d`).
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from spcakit.errors import InvalidParameterError
from spcakit.problem import Problem, SearchSubspace

PAPER = "Xu, Yang, Zhang - Fast Deflation Sparse Principal Component Analysis via Subspace Projections"


def _positive_int(value: Any, name: str, part: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InvalidParameterError(f"{part}: {name} must be a positive integer; got {value!r}")
    return int(value)


def linear_time_svd(x: np.ndarray, m: int, c: int, rng: np.random.Generator) -> np.ndarray:
    r"""LinearTimeSVD's right factor :math:`P_0 = [X_c^\top u_1/\sigma_1, \dots, X_c^\top u_m/\sigma_m]`.

    Rows of ``x`` (``n x d``) are drawn with replacement with probability
    :math:`\xi_i = \|x_{(i)}\|^2 / \|X\|_F^2` and rescaled by :math:`1/\sqrt{c\xi_i}`.
    Cost :math:`O(nd + c^2 d + c^3)`. The columns are orthonormalised once more
    (they are orthonormal in exact arithmetic).
    """
    row_energy = np.einsum("ij,ij->i", x, x)
    probabilities = row_energy / row_energy.sum()
    rows = rng.choice(x.shape[0], size=c, replace=True, p=probabilities)
    xc = x[rows] / np.sqrt(c * probabilities[rows])[:, None]
    values, u = np.linalg.eigh(xc @ xc.T)
    order = np.argsort(values)[::-1][:m]
    values, u = np.clip(values[order], 0.0, None), u[:, order]
    keep = values > values[0] * c * np.finfo(float).eps * 10
    p0 = xc.T @ u[:, keep] / np.sqrt(values[keep])
    q, _ = np.linalg.qr(p0)
    return q


@attrs.frozen
class LinearTimeSVDInitializer:
    """The initial subspace projection :math:`P_0` (``d x m``), stored with its image :math:`AP_0` as ``problem.subspace``."""

    m: int | None = None
    c: int | None = None
    exact: bool = False

    def _dimensions(self, problem: Problem) -> tuple[int, int]:
        rank = problem.max_rank
        m = min(10, rank) if self.m is None else _positive_int(self.m, "m", "linear-time-svd")
        if m > rank:
            raise InvalidParameterError(f"linear-time-svd: m={m} exceeds the rank bound of the data ({rank}); valid: 1 <= m <= {rank}")
        if problem.data is None:
            return m, m
        n, d = problem.data.shape
        c = min(n, d) if self.c is None else _positive_int(self.c, "c", "linear-time-svd")
        if not m <= c <= min(n, d):
            raise InvalidParameterError(
                f"linear-time-svd: the number of sampled rows c={c} must satisfy m <= c <= min(n, d) = {min(n, d)} (m={m})"
            )
        return m, c

    def prepare(self, problem: Problem, r: int, rng: np.random.Generator) -> Problem:
        m, c = self._dimensions(problem)
        if self.exact or problem.data is None:
            values, vectors = problem.covariance.top_eigenpairs(m)
            keep = values > max(values[0], 0.0) * problem.p * 1e-12
            basis, image = vectors[:, keep], vectors[:, keep] * values[keep]  # C P0 = P0 diag(values)
        else:
            basis = linear_time_svd(problem.data, m, c, rng)
            image = problem.covariance.matmat(basis)
        return attrs.evolve(problem, subspace=SearchSubspace(basis, image, problem.covariance))

    def __call__(self, problem: Problem, r: int, rng: np.random.Generator) -> np.ndarray:
        subspace = problem.subspace
        if subspace is None:
            raise InvalidParameterError("linear-time-svd: the problem has no search subspace; its prepare step was not run")
        if subspace.dimension == 0:
            found = 0 if subspace.explained is None else subspace.explained.shape[1]
            raise InvalidParameterError(
                f"linear-time-svd: the search subspace is used up after {found} loadings (a loading that the "
                f"truncation leaves inside P takes one of its directions away); use a larger m (now {self.m or 'default'}), "
                "a stronger truncation, or fewer loadings"
            )
        basis = subspace.basis
        return basis[:, :r] if basis.shape[1] >= r else np.column_stack([basis] * r)[:, :r]


@attrs.frozen
class SubspacePowerUpdater:
    r"""SPCA-SP's step: :math:`z = P\alpha` with :math:`\alpha` the leading eigenvector of :math:`P^\top A P`.

    :math:`P^\top A P` (``m x m``) comes from the carried image :math:`AP`
    (one product with the covariance operator otherwise: :math:`X^\top(XP)`
    for data, never :math:`X^\top X`). ``solver = "power"`` runs the paper's
    power method on it, stopping when :math:`\|\alpha_{j+1} - \alpha_j\| <`
    ``tol`` or after ``max_iter`` steps; ``solver = "eigh"`` (default) takes the
    leading eigenvector from LAPACK's dense symmetric eigensolver, which is the
    power method's limit, exact, and cheaper (:math:`O(m^3)` once against
    :math:`O(m^2)` per power step; on random data the top two eigenvalues of
    :math:`P^\top A P` are close and 1000 power steps do not reach ``tol``).
    Objective: :math:`\alpha^\top P^\top A P \alpha`.
    """

    solver: str = "eigh"
    tol: float = 1e-10
    max_iter: int = 1000

    def init(self, problem: Problem, x0: np.ndarray) -> None:
        return None

    def propose(self, problem: Problem, x: np.ndarray, context: Any) -> tuple[np.ndarray, float]:
        subspace = problem.subspace
        if subspace is None:
            raise InvalidParameterError(
                "subspace-power needs a search subspace P: use it with the linear-time-svd initializer (method spca-sp)"
            )
        basis = subspace.basis
        small = basis.T @ subspace.image_for(problem.covariance)
        small = (small + small.T) / 2
        alpha = self._leading_eigenvector(small)
        return (basis @ alpha)[:, None], float(alpha @ small @ alpha)

    def _leading_eigenvector(self, small: np.ndarray) -> np.ndarray:
        size = small.shape[0]
        if self.solver == "eigh":
            _, vectors = np.linalg.eigh(small)
            return vectors[:, -1]
        alpha = np.ones(size) / np.sqrt(size)
        # start on the largest diagonal entry's axis plus a little of every axis: never orthogonal to the top eigenvector
        alpha = alpha + np.eye(size)[int(np.argmax(np.diag(small)))]
        alpha /= np.linalg.norm(alpha)
        for _ in range(self.max_iter):
            nxt = small @ alpha
            norm = np.linalg.norm(nxt)
            if norm == 0:
                break
            nxt /= norm
            done = np.linalg.norm(nxt - alpha) < self.tol
            alpha = nxt
            if done:
                break
        return alpha


@attrs.frozen
class HouseholderSubspaceDeflation:
    r""":math:`P_t = [q_{t+1}, \dots, q_{t+m}]` from the Householder QR of :math:`B_t = [\tilde z_1, \dots, \tilde z_t, P_{t-1}]` (eq. 10).

    Remark 1: the first :math:`t-1` columns of :math:`B_t` were reduced in
    earlier rounds, so only :math:`[\tilde z_t, P_{t-1}]` is treated, in the
    coordinates those reflections leave. :math:`\tilde z_t` is stripped of
    its part in :math:`\operatorname{span}(\tilde z_1, \dots, \tilde z_{t-1})`
    (an orthonormal basis :math:`E_{t-1}` of it is carried in
    ``problem.subspace``; :math:`P_{t-1}` is already orthogonal to it),
    giving the unit :math:`w_t = q_t`, and the QR's next columns span
    :math:`(I - w_t w_t^\top) P_{t-1}`. They are computed with one
    :math:`m \times m` Householder reflection :math:`H` taking
    :math:`u = P_{t-1}^\top w_t` to :math:`\pm\|u\| e_1`:

    .. math::

        P_{t-1} H = [\,p,\; N\,], \qquad N^\top w_t = 0 \text{ exactly}, \qquad
        P_t = [\,\operatorname{unit}((I - w_t w_t^\top)\,p),\; N\,], \qquad E_t = [E_{t-1}, w_t],

    the same subspace as eq. (10) (the columns differ by a rotation inside it,
    which the subspace power step does not see) and
    :math:`P_t^\top \tilde z_i = 0` for every :math:`i \le t` (eq. 11), at
    :math:`O(dm + dt)` per round. The images :math:`AP_t` and :math:`AE_t`
    are updated by the same operations, so that a round costs one product
    :math:`A\tilde z_t` (:math:`O(nd)` through the data) instead of the
    :math:`m` products a fresh :math:`AP_t` would need. Unlike a QR of :math:`[w_t, P_{t-1}]` without
    pivoting, this stays exact when :math:`w_t` is (nearly) inside
    :math:`\operatorname{span}(P_{t-1})`: when the sine of the angle between
    them is below ``tol`` (the truncation removed nothing), the first column is
    dropped and the subspace loses one dimension, as PCA's deflation would,
    instead of being completed by an arbitrary direction outside
    :math:`\operatorname{span}(B_t)`. When :math:`t + m > d` fewer than ``m``
    directions are then left (Remark 2). The covariance is not deflated.
    """

    tol: float = 1e-8

    def __call__(self, problem: Problem, x: np.ndarray, previous: np.ndarray) -> Problem:
        sub = problem.subspace
        if sub is None:
            raise InvalidParameterError("householder-subspace deflation needs a search subspace P (linear-time-svd initializer)")
        cov = problem.covariance
        basis, image = sub.basis, sub.image_for(cov)
        explained, explained_image = sub.explained, sub.explained_image
        if explained is None and previous.shape[1] > 1:  # earlier rounds were deflated by something else
            explained, _ = np.linalg.qr(previous[:, :-1] / np.linalg.norm(previous[:, :-1], axis=0))
        if explained is not None and (explained_image is None or sub.image_of is not cov):
            explained_image = cov.matmat(explained)
        w = x / np.linalg.norm(x)
        w_image = cov.matmat(w)  # the round's only product with the covariance
        if explained is not None:
            for _ in range(2):  # twice is enough (Kahan-Parlett)
                coefficients = explained.T @ w
                w, w_image = w - explained @ coefficients, w_image - explained_image @ coefficients
        w_norm = float(np.linalg.norm(w))
        if w_norm <= self.tol:  # z_t lies in the span of the earlier loadings: P_{t-1} is already orthogonal to it
            return problem
        w, w_image = w / w_norm, w_image / w_norm
        new_explained = w[:, None] if explained is None else np.column_stack([explained, w])
        new_explained_image = w_image[:, None] if explained is None else np.column_stack([explained_image, w_image])
        u = basis.T @ w
        size = float(np.linalg.norm(u))
        if size == 0.0:  # w is orthogonal to P: the QR keeps P as it is
            rest, rest_image = basis, image
        else:
            v = u.copy()
            v[0] += math.copysign(size, u[0])
            scaled = 2.0 * v / float(v @ v)
            reflected, reflected_image = basis - np.outer(basis @ v, scaled), image - np.outer(image @ v, scaled)  # P H, A P H
            rest, rest_image = reflected[:, 1:], reflected_image[:, 1:]
            first, first_image = reflected[:, 0], reflected_image[:, 0]
            along = float(w @ first)
            residual, residual_image = first - along * w, first_image - along * w_image
            if float(np.linalg.norm(residual)) > self.tol:
                for against, against_image in ((w[:, None], w_image[:, None]), (rest, rest_image),
                                               (new_explained[:, :-1], new_explained_image[:, :-1])):
                    coefficients = against.T @ residual
                    residual, residual_image = residual - against @ coefficients, residual_image - against_image @ coefficients
                scale = float(np.linalg.norm(residual))
                rest = np.column_stack([residual / scale, rest])
                rest_image = np.column_stack([residual_image / scale, rest_image])
        return attrs.evolve(problem, subspace=SearchSubspace(rest, rest_image, cov, new_explained, new_explained_image))


def make_linear_time_svd(m: int | None = None, c: int | None = None, exact: bool = False) -> LinearTimeSVDInitializer:
    if not isinstance(exact, bool):
        raise InvalidParameterError(f"linear-time-svd: exact must be true or false; got {exact!r}")
    return LinearTimeSVDInitializer(m, c, exact)


def make_subspace_power(solver: str = "eigh", tol: float = 1e-10, max_iter: int = 1000) -> SubspacePowerUpdater:
    if solver not in ("eigh", "power"):
        raise InvalidParameterError(f"subspace-power: solver must be 'eigh' or 'power'; got {solver!r}")
    return SubspacePowerUpdater(solver, float(tol), _positive_int(max_iter, "max_iter", "subspace-power"))


def make_householder_subspace() -> HouseholderSubspaceDeflation:
    return HouseholderSubspaceDeflation()
