r"""Deflations of Mackey, *Deflation Methods for Sparse PCA* (NIPS 2008), §2.3 and §3.

For a loading :math:`x_t` (unit length) and the covariance :math:`A_{t-1}`:

* ``schur`` (eq. 5): :math:`A_t = A_{t-1} - \dfrac{A_{t-1}x_t x_t^\top A_{t-1}}{x_t^\top A_{t-1} x_t}`;
* ``orthogonalized-hotelling`` (eq. 6):
  :math:`q_t = (I - Q_{t-1}Q_{t-1}^\top)x_t / \|\cdot\|`,
  :math:`A_t = A_{t-1} - (q_t^\top A_{t-1} q_t)\, q_t q_t^\top`;
* ``orthogonalized-projection``:
  :math:`A_t = (I - q_t q_t^\top) A_{t-1} (I - q_t q_t^\top)`;
* ``generalized`` (Alg. 1): :math:`q_t = B_{t-1}x_t/\|B_{t-1}x_t\|`,
  :math:`A_t = (I - q_t q_t^\top) A_{t-1} (I - q_t q_t^\top)`,
  :math:`B_t = B_{t-1}(I - q_t q_t^\top)`; the next rank-one problem is
  :math:`\max x^\top A_t x` s.t. :math:`x^\top B_t x = 1`, :math:`\operatorname{card}(x) \le k`.
  :math:`B_t = I - Q_t Q_t^\top` is carried as :math:`Q_t` (``Problem.constraint``).

Properties (Table 1): all annihilate the variance :math:`x_t^\top A_t x_t = 0`;
Schur, projection and orthogonalized projection also give :math:`A_t x_t = 0`
and keep :math:`A_t` positive semi-definite; only Schur and orthogonalized
projection keep :math:`A_s x_t = 0` for every later :math:`s > t`.
Orthogonalized Schur deflation equals Schur deflation (Prop. 2.2).

Each is a rank-one (Schur, orthogonalized Hotelling) or rank-two (projections)
update of an explicit covariance, and a wrapped low-rank correction of a
matrix-free one: nothing :math:`p\times p` is formed from data with :math:`n < p`.
"""

from __future__ import annotations

import attrs
import numpy as np

from spcakit.operators import project_out, rank_one_downdate
from spcakit.problem import Problem

#: Below this (relative) norm a direction is considered already explained: nothing is deflated.
NEGLIGIBLE = 1e-10


def residual_direction(x: np.ndarray, previous: np.ndarray) -> np.ndarray | None:
    r""":math:`q = (I - P)x/\|(I - P)x\|` with :math:`P` the projection onto the earlier loadings.

    ``previous`` holds the loadings found so far, ``x`` last. Returns ``None``
    when ``x`` lies in their span.
    """
    unit = x / np.linalg.norm(x)
    earlier = previous[:, :-1]
    if earlier.shape[1] == 0:
        return unit
    basis, sing, _ = np.linalg.svd(earlier, full_matrices=False)
    basis = basis[:, sing > sing[0] * 1e-12]
    q = unit - basis @ (basis.T @ unit)
    q = q - basis @ (basis.T @ q)
    norm = float(np.linalg.norm(q))
    return None if norm <= NEGLIGIBLE else q / norm


@attrs.frozen
class SchurDeflation:
    """Schur complement deflation: the conditional covariance given the component :math:`x^\\top W`."""

    def __call__(self, problem: Problem, x: np.ndarray, previous: np.ndarray) -> Problem:
        op = problem.covariance
        cx = op.matmat(x)
        variance = float(x @ cx)
        if variance <= NEGLIGIBLE * max(op.trace(), 1e-300):
            return attrs.evolve(problem, data=None)  # x carries no variance: nothing to remove
        return attrs.evolve(problem, covariance=rank_one_downdate(op, cx, 1.0 / variance), data=None)


@attrs.frozen
class OrthogonalizedHotellingDeflation:
    """Hotelling's deflation with the part of :math:`x_t` orthogonal to the earlier loadings."""

    def __call__(self, problem: Problem, x: np.ndarray, previous: np.ndarray) -> Problem:
        q = residual_direction(x, previous)
        if q is None:
            return attrs.evolve(problem, data=None)
        op = problem.covariance
        weight = float(q @ op.matmat(q))
        return attrs.evolve(problem, covariance=rank_one_downdate(op, q, weight), data=None)


@attrs.frozen
class OrthogonalizedProjectionDeflation:
    """Projection deflation with the part of :math:`x_t` orthogonal to the earlier loadings."""

    def __call__(self, problem: Problem, x: np.ndarray, previous: np.ndarray) -> Problem:
        q = residual_direction(x, previous)
        if q is None:
            return attrs.evolve(problem, data=None)
        return attrs.evolve(problem, covariance=project_out(problem.covariance, q), data=None)


@attrs.frozen
class GeneralizedDeflation:
    """Mackey's Algorithm 1: deflate :math:`A` by :math:`q_t = B_{t-1}x_t` and carry :math:`B_t`."""

    def __call__(self, problem: Problem, x: np.ndarray, previous: np.ndarray) -> Problem:
        bx = problem.constraint_matmat(x / np.linalg.norm(x))
        bx = problem.constraint_matmat(bx)  # a second Gram-Schmidt pass keeps Q orthonormal
        norm = float(np.linalg.norm(bx))
        if norm <= NEGLIGIBLE:
            return attrs.evolve(problem, data=None)
        q = bx / norm
        basis = q[:, None] if problem.constraint is None else np.column_stack([problem.constraint, q])
        return attrs.evolve(problem, covariance=project_out(problem.covariance, q), constraint=basis, data=None)


def make_schur() -> SchurDeflation:
    return SchurDeflation()


def make_orthogonalized_hotelling() -> OrthogonalizedHotellingDeflation:
    return OrthogonalizedHotellingDeflation()


def make_orthogonalized_projection() -> OrthogonalizedProjectionDeflation:
    return OrthogonalizedProjectionDeflation()


def make_generalized() -> GeneralizedDeflation:
    return GeneralizedDeflation()
