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
  :math:`B_t = I - Q_t Q_t^\top` is carried as the orthonormal :math:`Q_t`
  in the run's carry, under :data:`spcakit.core.records.CONSTRAINT`.

Properties (Table 1): all annihilate the variance :math:`x_t^\top A_t x_t = 0`;
Schur, projection and orthogonalized projection also give :math:`A_t x_t = 0`
and keep :math:`A_t` positive semi-definite; only Schur and orthogonalized
projection keep :math:`A_s x_t = 0` for every later :math:`s > t`.
Orthogonalized Schur deflation equals Schur deflation (Prop. 2.2).

Each is a rank-one (Schur, orthogonalized Hotelling) or rank-two (projections)
update of an explicit covariance, and a wrapped low-rank correction of a
matrix-free one: nothing :math:`p\times p` is formed from data with :math:`n < p`.
Hotelling's and projection deflation come with the SPCArt plugin.
"""

from __future__ import annotations

import attrs
import numpy as np

from spcakit.plugin_api import (
    CONSTRAINT,
    Carry,
    Deflator,
    Problem,
    constraint_matmat,
    known_product,
    part,
    project_out,
    rank_one_downdate,
    sparse_product,
)

PAPER = "Mackey - Deflation Methods for Sparse PCA (NIPS 2008)"

#: Below this (relative) norm a direction is considered already explained: nothing is deflated.
NEGLIGIBLE = 1e-10


def residual_direction(x: np.ndarray, previous: np.ndarray) -> np.ndarray | None:
    r""":math:`q = (I - P)x/\|(I - P)x\|` with :math:`P` the projection onto the earlier loadings.

    Parameters
    ----------
    x
        The loading just found, shape ``(p,)``.
    previous
        The loadings found so far (``p x t``), ``x`` last.

    Returns
    -------
    numpy.ndarray or None
        The unit residual :math:`q`, or ``None`` when ``x`` lies in the span
        of the earlier loadings (to :data:`NEGLIGIBLE`).
    """
    unit = x / np.linalg.norm(x)
    earlier = previous[:, :-1]
    if earlier.shape[1] == 0:
        return unit
    basis, sing, _ = np.linalg.svd(earlier, full_matrices=False)
    basis = basis[:, sing > sing[0] * 1e-12]
    q = unit - basis @ (basis.T @ unit)
    q = q - basis @ (basis.T @ q)  # a second Gram-Schmidt pass for a nearly dependent x
    norm = float(np.linalg.norm(q))
    return None if norm <= NEGLIGIBLE else q / norm


def _without_data(problem: Problem) -> Problem:
    """The problem unchanged but for its data, which no longer matches a deflated covariance."""
    return attrs.evolve(problem, data=None)


@part("schur", paper=PAPER)
class SchurDeflation(Deflator):
    r"""Schur complement C - Cx x^T C / x^T C x (keeps PSD, annihilates x for all later rounds)

    Mackey eq. (5): :math:`A_t = A_{t-1} - A_{t-1}x_t x_t^\top A_{t-1} / x_t^\top A_{t-1} x_t`,
    the conditional covariance of the variables given the component
    :math:`x_t^\top W`. A loading without variance
    (:math:`x^\top A x \le` :data:`NEGLIGIBLE` :math:`\operatorname{tr} A`)
    deflates nothing. The carry passes through unchanged.
    """

    def __call__(self, problem: Problem, x: np.ndarray, previous: np.ndarray, carry: Carry) -> tuple[Problem, Carry]:
        op = problem.covariance
        known = known_product(carry, x, op)  # C x, when the loading's run made it
        cx = sparse_product(op, x) if known is None else known
        variance = float(x @ cx)
        if variance <= NEGLIGIBLE * max(op.trace(), 1e-300):
            return _without_data(problem), carry  # x carries no variance: nothing to remove
        return attrs.evolve(problem, covariance=rank_one_downdate(op, cx, 1.0 / variance), data=None), carry


@part("orthogonalized-hotelling", paper=PAPER)
class OrthogonalizedHotellingDeflation(Deflator):
    r"""Hotelling's deflation with q = (I - P)x / ||(I - P)x||

    Mackey eq. (6): :math:`A_t = A_{t-1} - (q_t^\top A_{t-1} q_t)\, q_t q_t^\top`
    with :math:`q_t` the part of :math:`x_t` orthogonal to the earlier
    loadings (:func:`residual_direction`); a loading in their span deflates
    nothing. The carry passes through unchanged.
    """

    def __call__(self, problem: Problem, x: np.ndarray, previous: np.ndarray, carry: Carry) -> tuple[Problem, Carry]:
        q = residual_direction(x, previous)
        if q is None:
            return _without_data(problem), carry
        op = problem.covariance
        weight = float(q @ sparse_product(op, q))
        return attrs.evolve(problem, covariance=rank_one_downdate(op, q, weight), data=None), carry


@part("orthogonalized-projection", paper=PAPER)
class OrthogonalizedProjectionDeflation(Deflator):
    r"""(I - qq^T) C (I - qq^T) with q = (I - P)x / ||(I - P)x||

    Mackey §2.3: :math:`A_t = (I - q_t q_t^\top) A_{t-1} (I - q_t q_t^\top)`
    with :math:`q_t` the part of :math:`x_t` orthogonal to the earlier
    loadings (:func:`residual_direction`); a loading in their span deflates
    nothing. The carry passes through unchanged.
    """

    def __call__(self, problem: Problem, x: np.ndarray, previous: np.ndarray, carry: Carry) -> tuple[Problem, Carry]:
        q = residual_direction(x, previous)
        if q is None:
            return _without_data(problem), carry
        return attrs.evolve(problem, covariance=project_out(problem.covariance, q), data=None), carry


@part("generalized", paper=PAPER)
class GeneralizedDeflation(Deflator):
    r"""Alg. 1: deflate by q = Bx, carry B = I - QQ^T; next round max x^T A x s.t. x^T B x = 1

    Mackey's Algorithm 1. With :math:`B_{t-1} = I - Q_{t-1}Q_{t-1}^\top`
    read from the carry (:data:`spcakit.core.records.CONSTRAINT`; :math:`B_0 = I`
    when it holds none):

    .. math::

        q_t = B_{t-1}x_t / \|B_{t-1}x_t\|,\quad
        A_t = (I - q_t q_t^\top) A_{t-1} (I - q_t q_t^\top),\quad
        Q_t = [Q_{t-1}\ q_t],

    so :math:`B_t = B_{t-1}(I - q_t q_t^\top) = I - Q_t Q_t^\top`. The
    returned carry holds :math:`Q_t`; the rank-one solvers of the next round
    (``greedy``, ``exhaustive``) maximise :math:`x^\top A_t x` s.t.
    :math:`x^\top B_t x = 1`. A loading already in :math:`\operatorname{span}(Q_{t-1})`
    deflates nothing and leaves the carry as it is.
    """

    def __call__(self, problem: Problem, x: np.ndarray, previous: np.ndarray, carry: Carry) -> tuple[Problem, Carry]:
        bx = constraint_matmat(carry, x / np.linalg.norm(x))
        bx = constraint_matmat(carry, bx)  # a second Gram-Schmidt pass keeps Q orthonormal
        norm = float(np.linalg.norm(bx))
        if norm <= NEGLIGIBLE:
            return _without_data(problem), carry
        q = bx / norm
        explained = carry.get(CONSTRAINT)
        basis = q[:, None] if explained is None else np.column_stack([explained, q])
        deflated = attrs.evolve(problem, covariance=project_out(problem.covariance, q), data=None)
        return deflated, carry.set(CONSTRAINT, basis)


#: Where the disjoint supports come from as a structure for several sparse components.
DISJOINT_PAPER = "Asteris, Papailiopoulos, Kyrillidis, Dimakis - Sparse PCA via Bipartite Matchings (NIPS 2015)"


@part("disjoint", paper=DISJOINT_PAPER)
class DisjointDeflation(Deflator):
    r"""(I - E_S E_S^T) C (I - E_S E_S^T): the loading's variables removed

    With :math:`S` the loading's support and :math:`E_S` its columns of the identity, the variables of :math:`S` get
    zero variance and covariance, so every later loading takes its support among the others: the supports are
    disjoint, and the loadings orthogonal whatever they are (Asteris et al. fit several components on disjoint
    supports). Unlike the projections, it keeps every direction of the variables left, so a later loading is valued by
    its own variance :math:`u^\top C u`, the criterion of orthogonal loadings (``constraint="orthogonal"``), even where
    its variables are correlated with the earlier ones'. One projection deflation per variable of :math:`S`
    (orthogonal unit vectors: in any order). The carry passes through unchanged.
    """

    def __call__(self, problem: Problem, x: np.ndarray, previous: np.ndarray, carry: Carry) -> tuple[Problem, Carry]:
        covariance = problem.covariance
        for j in np.flatnonzero(x):
            unit = np.zeros(covariance.p)
            unit[j] = 1.0
            covariance = project_out(covariance, unit)
        return attrs.evolve(problem, covariance=covariance, data=None), carry


DEFLATORS = [SchurDeflation, OrthogonalizedHotellingDeflation, OrthogonalizedProjectionDeflation, GeneralizedDeflation,
             DisjointDeflation]
