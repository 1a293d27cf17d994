r"""Initializers: the starting loadings :math:`X_0` (``p x r``).

* ``pca`` - the ``r`` leading eigenvectors of :math:`C` (SPCArt Alg. 1 line 3,
  rSVD-GPB Alg. 3 line 3), by the cheapest sufficient eigensolver;
* ``max-diagonal`` - unit vectors on the variables of largest variance
  :math:`\arg\max_k C_{kk}` (rSVD-GP Alg. 2 line 4; ties go to the smaller index);
* ``max-norm-column`` - unit vectors on the data columns of largest norm
  :math:`\arg\max_k \|A_k\|_2` (GPower's published start, Journée et al.). For
  centred data :math:`\|A_k\|^2 = (n-1) C_{kk}`, so it selects the same
  variables as ``max-diagonal``; it reads the data when the problem has it;
* ``random`` - an orthonormalised standard Gaussian ``p x r`` matrix drawn
  from the explicit generator.
"""

from __future__ import annotations

import attrs
import numpy as np

from spcakit.errors import InvalidParameterError
from spcakit.problem import Problem


def _unit_vectors(p: int, indices: np.ndarray) -> np.ndarray:
    x = np.zeros((p, len(indices)))
    x[indices, np.arange(len(indices))] = 1.0
    return x


def _top_indices(scores: np.ndarray, r: int, tie_order: tuple[int, ...] | None = None) -> np.ndarray:
    """Indices of the ``r`` largest scores; ties (within 1e-12 relative) go to the smaller index,
    or to the earlier variable in ``tie_order`` when one is given."""
    if tie_order is None:
        return np.argsort(-scores, kind="stable")[:r]
    rank = np.full(scores.shape[0], len(tie_order), dtype=float)
    rank[list(tie_order)] = np.arange(len(tie_order))
    scale = max(float(np.abs(scores).max()), 1e-300)
    rounded = np.round(scores / scale, 12)
    return np.lexsort((np.arange(scores.shape[0]), rank, -rounded))[:r]


def _check_tie_order(tie_order: object) -> tuple[int, ...] | None:
    if tie_order is None:
        return None
    try:
        order = tuple(int(i) for i in tie_order)  # type: ignore[union-attr]
    except (TypeError, ValueError):
        raise InvalidParameterError(f"tie_order must be a list of variable indices (0-based); got {tie_order!r}") from None
    if len(set(order)) != len(order) or any(i < 0 for i in order):
        raise InvalidParameterError(f"tie_order must list distinct non-negative variable indices; got {list(order)}")
    return order


@attrs.frozen
class PCAInitializer:
    """Leading ``r`` eigenvectors of the covariance; refuses ``r`` above its numerical rank."""

    def __call__(self, problem: Problem, r: int, rng: np.random.Generator) -> np.ndarray:
        values, vectors = problem.covariance.top_eigenpairs(r)
        tol = max(values[0], 0.0) * problem.p * 1e-12
        rank = int(np.sum(values > tol))
        if rank < r:
            raise InvalidParameterError(
                f"r={r} exceeds the numerical rank of the covariance ({rank}); valid: 1 <= r <= {rank}"
            )
        return vectors


@attrs.frozen
class MaxDiagonalInitializer:
    """Unit vectors on the ``r`` largest diagonal entries of :math:`C`.

    ``tie_order`` (0-based variable indices, highest priority first) breaks
    ties between equal variances - as in a correlation matrix, where every
    variance is 1 and the start is decided by tie-breaking alone.
    """

    tie_order: tuple[int, ...] | None = None

    def __call__(self, problem: Problem, r: int, rng: np.random.Generator) -> np.ndarray:
        return _unit_vectors(problem.p, _top_indices(problem.covariance.diagonal(), r, self.tie_order))


@attrs.frozen
class MaxNormColumnInitializer:
    """Unit vectors on the ``r`` data columns of largest norm (the diagonal of :math:`C` without data).

    ``tie_order`` breaks ties as for ``max-diagonal``.
    """

    tie_order: tuple[int, ...] | None = None

    def __call__(self, problem: Problem, r: int, rng: np.random.Generator) -> np.ndarray:
        if problem.data is not None:
            scores = np.einsum("ij,ij->j", problem.data, problem.data)
        else:
            scores = problem.covariance.diagonal()
        return _unit_vectors(problem.p, _top_indices(scores, r, self.tie_order))


@attrs.frozen
class RandomInitializer:
    """Orthonormalised Gaussian start, from the generator the driver passes."""

    def __call__(self, problem: Problem, r: int, rng: np.random.Generator) -> np.ndarray:
        q, _ = np.linalg.qr(rng.standard_normal((problem.p, r)))
        return q


def make_pca() -> PCAInitializer:
    return PCAInitializer()


def make_max_diagonal(tie_order: list[int] | None = None) -> MaxDiagonalInitializer:
    return MaxDiagonalInitializer(_check_tie_order(tie_order))


def make_max_norm_column(tie_order: list[int] | None = None) -> MaxNormColumnInitializer:
    return MaxNormColumnInitializer(_check_tie_order(tie_order))


def make_random() -> RandomInitializer:
    return RandomInitializer()


