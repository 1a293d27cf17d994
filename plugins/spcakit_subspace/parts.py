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

from typing import Any

import attrs
import numpy as np

from spcakit.errors import InvalidParameterError
from spcakit.problem import Problem

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
    """The initial subspace projection :math:`P_0` (``d x m``), stored as ``problem.search_basis``."""

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
            basis = vectors[:, values > max(values[0], 0.0) * problem.p * 1e-12]
        else:
            basis = linear_time_svd(problem.data, m, c, rng)
        return attrs.evolve(problem, search_basis=basis)

    def __call__(self, problem: Problem, r: int, rng: np.random.Generator) -> np.ndarray:
        basis = problem.search_basis
        if basis is None or basis.shape[1] == 0:
            raise InvalidParameterError("linear-time-svd: no search subspace is left (every direction is used)")
        return basis[:, :r] if basis.shape[1] >= r else np.column_stack([basis] * r)[:, :r]


@attrs.frozen
class SubspacePowerUpdater:
    r"""SPCA-SP's step: :math:`z = P\alpha` with :math:`\alpha` the leading eigenvector of :math:`P^\top A_0 P`.

    The power method on the :math:`m\times m` matrix stops when
    :math:`\|\alpha_{j+1} - \alpha_j\| <` ``tol`` or after ``max_iter`` steps.
    Objective: :math:`\alpha^\top P^\top A_0 P \alpha`.
    """

    tol: float = 1e-10
    max_iter: int = 1000

    def init(self, problem: Problem, x0: np.ndarray) -> None:
        return None

    def propose(self, problem: Problem, x: np.ndarray, context: Any) -> tuple[np.ndarray, float]:
        basis = problem.search_basis
        if basis is None:
            raise InvalidParameterError(
                "subspace-power needs a search subspace P: use it with the linear-time-svd initializer (method spca-sp)"
            )
        small = basis.T @ problem.covariance.matmat(basis)
        small = (small + small.T) / 2
        alpha = np.ones(small.shape[0]) / np.sqrt(small.shape[0])
        # start on the largest diagonal entry's axis plus a little of every axis: never orthogonal to the top eigenvector
        alpha = alpha + np.eye(small.shape[0])[int(np.argmax(np.diag(small)))]
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
        return (basis @ alpha)[:, None], float(alpha @ small @ alpha)


@attrs.frozen
class HouseholderSubspaceDeflation:
    r""":math:`P_t = [q_{t+1}, \dots, q_{t+m}]` from the Householder QR of :math:`B_t = [\tilde z_1, \dots, \tilde z_t, P_{t-1}]` (eq. 10).

    ``numpy.linalg.qr`` is LAPACK's Householder QR, on the thin ``d x (t+m)``
    matrix only (never the ``d x d`` :math:`Q`). Remark 1's saving - the
    reflections of the first :math:`t-1` columns are already known - is an
    implementation detail; QR of :math:`[\tilde z_t, P_{t-1}]` *alone* would
    not keep :math:`P_t^\top \tilde z_i = 0` for :math:`i < t` once the loadings
    are not orthogonal. Columns whose :math:`R_{jj}` vanishes are dropped
    (Remark 2: when :math:`t + m > d` fewer than ``m`` directions are left).
    The covariance itself is not deflated.
    """

    def __call__(self, problem: Problem, x: np.ndarray, previous: np.ndarray) -> Problem:
        basis = problem.search_basis
        if basis is None:
            raise InvalidParameterError("householder-subspace deflation needs a search subspace P (linear-time-svd initializer)")
        loadings = previous / np.linalg.norm(previous, axis=0)
        t, m = loadings.shape[1], basis.shape[1]
        q, r = np.linalg.qr(np.column_stack([loadings, basis]))
        diag = np.abs(np.diag(r))
        independent = diag > 1e-10
        new_basis = q[:, t:][:, independent[t:]]
        return attrs.evolve(problem, search_basis=new_basis[:, :m])


def make_linear_time_svd(m: int | None = None, c: int | None = None, exact: bool = False) -> LinearTimeSVDInitializer:
    if not isinstance(exact, bool):
        raise InvalidParameterError(f"linear-time-svd: exact must be true or false; got {exact!r}")
    return LinearTimeSVDInitializer(m, c, exact)


def make_subspace_power(tol: float = 1e-10, max_iter: int = 1000) -> SubspacePowerUpdater:
    return SubspacePowerUpdater(float(tol), _positive_int(max_iter, "max_iter", "subspace-power"))


def make_householder_subspace() -> HouseholderSubspaceDeflation:
    return HouseholderSubspaceDeflation()
