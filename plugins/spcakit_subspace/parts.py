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

The search subspace :math:`P` is the run's state: a
:class:`~spcakit_subspace.subspace.SearchSubspace` in the run's
:class:`~spcakit.core.records.Carry` under :data:`~spcakit_subspace.subspace.SUBSPACE`,
put there by the initializer's ``prepare``, read by the updater's ``init``
and replaced by the deflator.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from spcakit.plugin_api import (
    Carry,
    Deflator,
    Initializer,
    InvalidParameterError,
    Problem,
    Updater,
    boolean,
    number,
    one_of,
    optional,
    part,
    positive_int,
    ties,
    to_float,
    to_int,
    top_eigenpairs,
)
from spcakit_subspace.subspace import SUBSPACE, SearchSubspace

PAPER = "Xu, Yang, Zhang - Fast Deflation Sparse Principal Component Analysis via Subspace Projections"

#: Below this length the part of a loading outside the earlier ones (or outside :math:`P`) counts as zero.
DEPENDENCE_TOL = 1e-8


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


@part("linear-time-svd", paper=PAPER)
class LinearTimeSVDInitializer(Initializer):
    r"""SPCA-SP's P0 (d x m) by LinearTimeSVD row sampling (c rows, seeded); exact = true: top-m eigenvectors

    ``prepare`` computes :math:`P_0` once per run and puts it, with its
    image :math:`AP_0`, in the run's carry (:data:`~spcakit_subspace.subspace.SUBSPACE`);
    each round then starts from the first column(s) of the current :math:`P`.

    Parameters
    ----------
    m
        Dimension of the search subspace, :math:`1 \le m \le` the rank bound
        (``p``, or ``n - 1`` for centred data); default :math:`\min(10, \text{rank bound})`.
    c
        Number of rows LinearTimeSVD samples, :math:`m \le c \le \min(n, d)`
        (default :math:`\min(n, d)`); only read for data input.
    exact
        Use the ``m`` leading eigenvectors of :math:`A_0` (always so for a
        covariance input).
    """

    m: int | None = attrs.field(default=None, converter=to_int, validator=optional(positive_int))
    c: int | None = attrs.field(default=None, converter=to_int, validator=optional(positive_int))
    exact: bool = attrs.field(default=False, validator=boolean)

    def _dimensions(self, problem: Problem) -> tuple[int, int]:
        """``(m, c)`` for ``problem``, the defaults resolved and checked against its shape."""
        rank = problem.max_rank
        m = min(10, rank) if self.m is None else self.m
        if m > rank:
            raise InvalidParameterError(f"linear-time-svd: m={m} exceeds the rank bound of the data ({rank}); valid: 1 <= m <= {rank}")
        if problem.data is None:
            return m, m
        n, d = problem.data.shape
        c = min(n, d) if self.c is None else self.c
        if not m <= c <= min(n, d):
            raise InvalidParameterError(
                f"linear-time-svd: the number of sampled rows c={c} must satisfy m <= c <= min(n, d) = {min(n, d)} (m={m})"
            )
        return m, c

    def prepare(self, problem: Problem, r: int, rng: np.random.Generator, carry: Carry) -> Carry:
        """The carry with the initial search subspace :math:`P_0` and its image :math:`AP_0`."""
        m, c = self._dimensions(problem)
        if self.exact or problem.data is None:
            values, vectors = top_eigenpairs(problem.covariance, m)
            keep = values > max(values[0], 0.0) * problem.p * 1e-12
            basis, image = vectors[:, keep], vectors[:, keep] * values[keep]  # C P0 = P0 diag(values)
        else:
            basis = linear_time_svd(problem.data, m, c, rng)
            image = problem.covariance.matmat(basis)
        return carry.set(SUBSPACE, SearchSubspace(basis, image, problem.covariance))

    def __call__(self, problem: Problem, r: int, rng: np.random.Generator, carry: Carry) -> np.ndarray:
        subspace: SearchSubspace | None = carry.get(SUBSPACE)
        if subspace is None:
            raise InvalidParameterError("linear-time-svd: the run's carry has no search subspace; its prepare step was not run")
        if subspace.dimension == 0:
            found = 0 if subspace.explained is None else subspace.explained.shape[1]
            raise InvalidParameterError(
                f"linear-time-svd: the search subspace is used up after {found} loadings (a loading that the "
                f"truncation leaves inside P takes one of its directions away); use a larger m (now {self.m or 'default'}), "
                "a stronger truncation, or fewer loadings"
            )
        basis = subspace.basis
        return basis[:, :r] if basis.shape[1] >= r else np.column_stack([basis] * r)[:, :r]


@part("subspace-power", paper=PAPER)
class SubspacePowerUpdater(Updater):
    r"""z = P alpha, alpha = top eigenvector of P^T A P by the power method (through A P only)

    SPCA-SP's step: :math:`z = P\alpha` with :math:`\alpha` the leading
    eigenvector of :math:`P^\top A P`. ``init`` takes the search subspace
    :math:`P` from the run's carry as the updater's state (it needs the
    ``linear-time-svd`` initializer). :math:`P^\top A P` (``m x m``) comes from
    the carried image :math:`AP` (one product with the covariance operator
    otherwise: :math:`X^\top(XP)` for data, never :math:`X^\top X`).
    ``solver = "power"`` runs the paper's power method on it, stopping when
    :math:`\|\alpha_{j+1} - \alpha_j\| <` ``tol`` or after ``max_iter`` steps;
    ``solver = "eigh"`` (default) takes the leading eigenvector from LAPACK's
    dense symmetric eigensolver, which is the power method's limit, exact,
    and cheaper (:math:`O(m^3)` once against :math:`O(m^2)` per power step; on
    random data the top two eigenvalues of :math:`P^\top A P` are close and
    1000 power steps do not reach ``tol``). Objective:
    :math:`\alpha^\top P^\top A P \alpha`.
    """

    solver: str = attrs.field(default="eigh", validator=one_of("eigh", "power"))
    tol: float = attrs.field(default=1e-10, converter=to_float, validator=number(0))
    max_iter: int = attrs.field(default=1000, converter=to_int, validator=positive_int)

    def init(self, problem: Problem, x0: np.ndarray, carry: Carry) -> SearchSubspace:
        subspace: SearchSubspace | None = carry.get(SUBSPACE)
        if subspace is None:
            raise InvalidParameterError(
                "subspace-power needs a search subspace P: use it with the linear-time-svd initializer (method spca-sp)"
            )
        return subspace

    def propose(
        self, problem: Problem, x: np.ndarray, state: SearchSubspace
    ) -> tuple[np.ndarray, float, SearchSubspace]:
        basis = state.basis
        small = basis.T @ state.image_for(problem.covariance)
        small = (small + small.T) / 2
        alpha = self._leading_eigenvector(small)
        return (basis @ alpha)[:, None], float(alpha @ small @ alpha), state

    def _leading_eigenvector(self, small: np.ndarray) -> np.ndarray:
        size = small.shape[0]
        if self.solver == "eigh":
            _, vectors = np.linalg.eigh(small)
            return vectors[:, -1]
        alpha = np.ones(size) / np.sqrt(size)
        # start on the largest diagonal entry's axis plus a little of every axis: never orthogonal to the top eigenvector
        alpha = alpha + np.eye(size)[ties.argmax(np.diag(small))]  # ties: the first axis (spcakit.numerics.ties)
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


@part("householder-subspace", paper=PAPER)
class HouseholderSubspaceDeflation(Deflator):
    r"""next P from the Householder QR of [z_t, P] (Remarks 1-2): P_t^T z_i = 0 for i <= t

    :math:`P_t = [q_{t+1}, \dots, q_{t+m}]` from the Householder QR of
    :math:`B_t = [\tilde z_1, \dots, \tilde z_t, P_{t-1}]` (eq. 10); the
    search subspace is read from the run's carry and the carry is returned
    with the next one (it needs the ``linear-time-svd`` initializer).

    Remark 1: the first :math:`t-1` columns of :math:`B_t` were reduced in
    earlier rounds, so only :math:`[\tilde z_t, P_{t-1}]` is treated, in the
    coordinates those reflections leave. :math:`\tilde z_t` is stripped of
    its part in :math:`\operatorname{span}(\tilde z_1, \dots, \tilde z_{t-1})`
    (an orthonormal basis :math:`E_{t-1}` of it is carried in the
    :class:`~spcakit_subspace.subspace.SearchSubspace`; :math:`P_{t-1}` is
    already orthogonal to it), giving the unit :math:`w_t = q_t`, and the
    QR's next columns span :math:`(I - w_t w_t^\top) P_{t-1}`. They are
    computed with one :math:`m \times m` Householder reflection :math:`H`
    taking :math:`u = P_{t-1}^\top w_t` to :math:`\pm\|u\| e_1`:

    .. math::

        P_{t-1} H = [\,p,\; N\,], \qquad N^\top w_t = 0 \text{ exactly}, \qquad
        P_t = [\,\operatorname{unit}((I - w_t w_t^\top)\,p),\; N\,], \qquad E_t = [E_{t-1}, w_t],

    the same subspace as eq. (10) (the columns differ by a rotation inside it,
    which the subspace power step does not see) and
    :math:`P_t^\top \tilde z_i = 0` for every :math:`i \le t` (eq. 11), at
    :math:`O(dm + dt)` per round. The images :math:`AP_t` and :math:`AE_t`
    are updated by the same operations, so that a round costs one product
    :math:`A\tilde z_t` (:math:`O(nd)` through the data) instead of the
    :math:`m` products a fresh :math:`AP_t` would need. Unlike a QR of
    :math:`[w_t, P_{t-1}]` without pivoting, this stays exact when
    :math:`w_t` is (nearly) inside :math:`\operatorname{span}(P_{t-1})`: when
    the sine of the angle between them is below :data:`DEPENDENCE_TOL` (the
    truncation removed nothing), the first column is dropped and the
    subspace loses one dimension, as PCA's deflation would, instead of being
    completed by an arbitrary direction outside
    :math:`\operatorname{span}(B_t)`. When :math:`t + m > d` fewer than ``m``
    directions are then left (Remark 2). The covariance is not deflated.
    """

    def __call__(self, problem: Problem, x: np.ndarray, previous: np.ndarray, carry: Carry) -> tuple[Problem, Carry]:
        sub: SearchSubspace | None = carry.get(SUBSPACE)
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
        if w_norm <= DEPENDENCE_TOL:  # z_t lies in the span of the earlier loadings: P_{t-1} is already orthogonal to it
            return problem, carry
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
            if float(np.linalg.norm(residual)) > DEPENDENCE_TOL:
                for against, against_image in ((w[:, None], w_image[:, None]), (rest, rest_image),
                                               (new_explained[:, :-1], new_explained_image[:, :-1])):
                    coefficients = against.T @ residual
                    residual, residual_image = residual - against @ coefficients, residual_image - against_image @ coefficients
                scale = float(np.linalg.norm(residual))
                rest = np.column_stack([residual / scale, rest])
                rest_image = np.column_stack([residual_image / scale, rest_image])
        return problem, carry.set(SUBSPACE, SearchSubspace(rest, rest_image, cov, new_explained, new_explained_image))


PARTS = [LinearTimeSVDInitializer, SubspacePowerUpdater, HouseholderSubspaceDeflation]
