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

from spcakit.numerics.operators import project_out, rank_one_downdate
from spcakit.inputs.problem import Problem
from spcakit.core.protocols import Deflator, part
from spcakit.core.records import Carry, known_product

PAPER = "Hu, Pan, Wang, Wu - Sparse Principal Component Analysis via Rotation and Truncation"


@part("hotelling")
class HotellingDeflation(Deflator):
    """C - (x^T C x) x x^T

    Hotelling's deflation: :math:`x^\top C' x = 0`; :math:`C'x = 0` and PSD
    only when x is an eigenvector.
    """

    def __call__(self, problem: Problem, x: np.ndarray, previous: np.ndarray, carry: Carry) -> tuple[Problem, Carry]:
        op = problem.covariance
        known = known_product(carry, x, op)  # C x, when the loading's run made it
        weight = float(x @ (op.matmat(x) if known is None else known))
        return attrs.evolve(problem, covariance=rank_one_downdate(op, x, weight), data=None), carry


#: :class:`ProjectionDeflation` takes a loading whose length is within this of 1 as the unit vector it is (to
#: rounding) instead of dividing it by its length.
UNIT_RTOL = 4 * float(np.finfo(float).eps)


@part("projection", paper=PAPER)
class ProjectionDeflation(Deflator):
    """(I - x x^T) C (I - x x^T) (Alg. 2)

    Projection deflation keeps C positive semi-definite and annihilates x.
    """

    def __call__(self, problem: Problem, x: np.ndarray, previous: np.ndarray, carry: Carry) -> tuple[Problem, Carry]:
        length = float(np.linalg.norm(x))
        # a loading that is unit to rounding (every driver's) is kept as it is: dividing it by its length changed an
        # ulp at most and copied it and its product at every level (29 MB over TPower's twenty levels on 100 000
        # variables, the fit's peak memory)
        unit = x if abs(length - 1.0) <= UNIT_RTOL else x / length
        product = known_product(carry, x, problem.covariance)  # C x, when the loading's run made it (x is unit then)
        if product is not None and unit is not x:
            product = product / length
        covariance = project_out(problem.covariance, unit, product=product)
        return attrs.evolve(problem, covariance=covariance, data=None), carry


DEFLATORS = [HotellingDeflation, ProjectionDeflation]
