r"""Deflators of the SPCArt paper's deflation methods (rSVD, rSVD-GP, TPower).

* ``hotelling``: :math:`C \leftarrow C - (x^\top C x)\, x x^\top`;
* ``projection``: :math:`C \leftarrow (I - xx^\top) C (I - xx^\top)`
  (Alg. 2 line 10; on data, :math:`A \leftarrow A(I - xx^\top)`).

An explicit covariance is deflated explicitly (``p x p``, cheap for the
small ``p`` it is used with); a matrix-free one gets a rank-one correction
wrapped around it, so nothing ``p x p`` is formed.
"""

from __future__ import annotations

import attrs
import numpy as np

from spcakit.operators import DenseCovariance, HotellingDeflated, ProjectionDeflated
from spcakit.problem import Problem


@attrs.frozen
class HotellingDeflation:
    """Hotelling's deflation: :math:`x^\top C' x = 0`; :math:`C'x = 0` and PSD only when x is an eigenvector."""

    def __call__(self, problem: Problem, x: np.ndarray, previous: np.ndarray) -> Problem:
        op = problem.covariance
        cx = op.matmat(x)
        weight = float(x @ cx)
        if isinstance(op, DenseCovariance):
            new = DenseCovariance(op.matrix - weight * np.outer(x, x))
        else:
            new = HotellingDeflated(op, x, weight)
        return attrs.evolve(problem, covariance=new, data=None)


@attrs.frozen
class ProjectionDeflation:
    """Projection deflation (keeps C PSD and annihilates x)."""

    def __call__(self, problem: Problem, x: np.ndarray, previous: np.ndarray) -> Problem:
        op = problem.covariance
        x = x / np.linalg.norm(x)
        if isinstance(op, DenseCovariance):
            # (I - xx^T) C (I - xx^T) = C - x (Cx)^T - (Cx) x^T + (x^T C x) x x^T: O(p^2), not O(p^3)
            cx = op.matrix @ x
            m = op.matrix - np.outer(x, cx) - np.outer(cx, x) + float(x @ cx) * np.outer(x, x)
            new = DenseCovariance((m + m.T) / 2)
        else:
            new = ProjectionDeflated(op, x)
        return attrs.evolve(problem, covariance=new, data=None)


def make_hotelling() -> HotellingDeflation:
    return HotellingDeflation()


def make_projection() -> ProjectionDeflation:
    return ProjectionDeflation()
