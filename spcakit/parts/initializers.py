r"""Initializers: the starting loadings :math:`X_0` (``p x r``).

* ``pca`` - the ``r`` leading eigenvectors of :math:`C` (SPCArt Alg. 1 line 3,
  rSVD-GPB Alg. 3 line 3), by the cheapest sufficient eigensolver;
* ``max-diagonal`` - unit vectors on the variables of largest variance
  :math:`\arg\max_k C_{kk}` (rSVD-GP Alg. 2 line 4);
* ``max-norm-column`` - unit vectors on the data columns of largest norm
  :math:`\arg\max_k \|A_k\|_2` (GPower's published start, Journée et al.). For
  centred data :math:`\|A_k\|^2 = (n-1) C_{kk}`, so it selects the same
  variables as ``max-diagonal``; it reads the data when the problem holds them
  (:attr:`~spcakit.inputs.problem.Problem.data_in_memory`), the diagonal otherwise
  (data held once by the operator are never copied for it);
* ``random`` - an orthonormalised standard Gaussian ``p x r`` matrix drawn
  from the explicit generator.

``max-diagonal`` and ``max-norm-column`` rank the variables by the tie rule of
:mod:`spcakit.numerics.ties`: scores within :math:`10^{-10}` of the largest are tied
(the variances of a correlation matrix, all 1 up to rounding, are one tie),
and ties go to the earlier variable in ``tie_order`` when one is given, else
to the smaller index. So standardised data start at variable 1 however the
standardisation was computed, and a scaling of the data changes nothing.
"""

from __future__ import annotations

import attrs
import numpy as np

from spcakit.numerics import ties
from spcakit.numerics.linalg import refuse_beyond_rank
from spcakit.numerics.operators import top_eigenpairs
from spcakit.inputs.problem import Problem
from spcakit.core.protocols import Initializer, part
from spcakit.core.records import Carry
from spcakit.core.fields import index_list, optional, to_tuple

PAPER = "Hu, Pan, Wang, Wu - Sparse Principal Component Analysis via Rotation and Truncation"


def _unit_vectors(p: int, indices: np.ndarray) -> np.ndarray:
    x = np.zeros((p, len(indices)))
    x[indices, np.arange(len(indices))] = 1.0
    return x


def _top_indices(
    problem: Problem, scores: np.ndarray, r: int, tie_order: tuple[int, ...] | None = None
) -> np.ndarray:
    r"""Indices of the ``r`` largest scores, best first, by :mod:`spcakit.numerics.ties`, whatever the order of the variables.

    Tied scores (see :mod:`spcakit.numerics.ties`) are ranked by the next criterion, the magnitude of the
    variable's entry in the leading eigenvector :math:`|u_1|` of the problem's (in a deflation round,
    the deflated) covariance, computed only when the top ``r + 1`` scores hold a tie: of the variables
    of equal variance, the one that weighs most in the next principal component starts. This is a
    property of the values, not of the positions, so a permutation of the variables permutes the
    start. (On standardised data every round of a deflation method ties: the variables no loading has
    touched keep variance 1; the eigenpair costs about as much as a few power steps.)
    Variables still tied (in exact arithmetic equal on both keys, e.g. duplicated columns: a genuine
    symmetry, the results from either are the same up to relabelling them) go to the smaller index.
    A ``tie_order`` (the experiments' pinning of a paper's choice) takes the eigenvector's place:
    tied scores go to the earlier variable in it (variables it does not list come after those it
    lists), then to the smaller index.
    """
    p = scores.shape[0]
    if tie_order is not None:
        rank = np.full(p, len(tie_order), dtype=float)
        rank[list(tie_order)] = np.arange(len(tie_order))
        return ties.order(scores, -rank)[:r]
    leading = ties.top_k(scores, min(r + 1, p))
    band = ties.tolerance(scores)
    if leading.size < 2 or np.all(-np.diff(scores[leading]) > band):
        return leading[:r]
    return ties.order(scores, ties.leading_magnitudes(problem.covariance))[:r]


_tie_order_field = attrs.field(default=None, converter=to_tuple, validator=optional(index_list))


@part("pca", paper=PAPER)
class PCAInitializer(Initializer):
    """r leading eigenvectors of C; refuses r above its numerical rank."""

    def __call__(self, problem: Problem, r: int, rng: np.random.Generator, carry: Carry) -> np.ndarray:
        values, vectors = top_eigenpairs(problem.covariance, r)
        refuse_beyond_rank(r, values, problem.n_samples, problem.p)
        return vectors


@part("max-diagonal", paper=PAPER)
class MaxDiagonalInitializer(Initializer):
    """unit vectors on the largest variances argmax C_kk (Alg. 2)

    Variances equal within :data:`spcakit.numerics.ties.RTOL` of the largest are tied
    (:mod:`spcakit.numerics.ties`) and go to the smaller index, or to the earlier
    variable in ``tie_order`` (0-based variable indices, highest priority
    first) - as in a correlation matrix, where every variance is 1 up to
    rounding and the start is decided by tie-breaking alone.
    """

    tie_order: tuple[int, ...] | None = _tie_order_field

    def __call__(self, problem: Problem, r: int, rng: np.random.Generator, carry: Carry) -> np.ndarray:
        return _unit_vectors(problem.p, _top_indices(problem, problem.covariance.diagonal(), r, self.tie_order))


@part("max-norm-column", paper=PAPER)
class MaxNormColumnInitializer(Initializer):
    """unit vectors on the largest-norm data columns (GPower's start)

    The diagonal of :math:`C` when the problem has no data; ``tie_order``
    breaks ties as for ``max-diagonal``.
    """

    tie_order: tuple[int, ...] | None = _tie_order_field

    def _scores(self, problem: Problem) -> np.ndarray:
        if problem.data_in_memory:
            return np.einsum("ij,ij->j", problem.data, problem.data)
        return problem.covariance.diagonal()

    def __call__(self, problem: Problem, r: int, rng: np.random.Generator, carry: Carry) -> np.ndarray:
        return _unit_vectors(problem.p, _top_indices(problem, self._scores(problem), r, self.tie_order))


@part("random")
class RandomInitializer(Initializer):
    """orthonormalised Gaussian p x r (seeded), from the generator the driver passes"""

    def __call__(self, problem: Problem, r: int, rng: np.random.Generator, carry: Carry) -> np.ndarray:
        q, _ = np.linalg.qr(rng.standard_normal((problem.p, r)))
        return q


INITIALIZERS = [PCAInitializer, MaxDiagonalInitializer, MaxNormColumnInitializer, RandomInitializer]
