r"""Upper bounds on the variance a sparse loading can explain: how far a loading is from the best possible.

For a covariance :math:`C` (positive semi-definite, ``p x p``) and a cardinality ``k``, the best a unit
loading with at most ``k`` nonzeros can do is the sparse eigenvalue

.. math::

    \lambda^{(k)}(C) = \max_{\|x\|_2 = 1,\ \|x\|_0 \le k} x^\top C x = \max_{|S| = k} \lambda_{\max}(C_{SS}).

Computing it is NP-hard in general; :func:`sparse_variance_bound` gives a number that is never below
it, the smallest of three cheap bounds, each valid for every support :math:`S` of ``k`` variables:

* ``eigenvalue``: :math:`\lambda_{\max}(C_{SS}) \le \lambda_{\max}(C)` (Cauchy interlacing); exact at
  :math:`k = p`. Taken from a dense eigensolver (LAPACK, accurate to rounding) up to
  :data:`EIGEN_LIMIT` variables, never from an iterative one: a Lanczos or Krylov estimate of
  :math:`\lambda_{\max}` is a Rayleigh quotient, below the true value until it converges, so it is no
  bound;
* ``diagonal``: :math:`\lambda_{\max}(C_{SS}) \le \operatorname{tr} C_{SS} \le` the sum of the ``k``
  largest diagonal entries (the eigenvalues of a PSD matrix are nonnegative); exact at :math:`k = 1`;
* ``gershgorin``: :math:`\lambda_{\max}(C_{SS}) \le \max_{i \in S} \big(C_{ii} + \sum_{j \in S, j \ne i}
  |C_{ij}|\big) \le \max_i \big(C_{ii} + \text{the } k - 1 \text{ largest } |C_{ij}|,\ j \ne i\big)`
  (Gershgorin's circles of :math:`C_{SS}`); needs the entries of :math:`C`, so it is taken when the
  operator holds :math:`C` or ``p`` is at most :data:`GERSHGORIN_LIMIT` (the columns are then fetched a
  block at a time).

So for a unit loading :math:`x` with ``k`` nonzeros, :math:`(\mathrm{bound} - x^\top C x)/\mathrm{bound}`
(:func:`relative_gap`) is at least how far it is from the best loading of its cardinality; 0 proves it
optimal. The bounds are loose on matrices whose variance is spread over many variables (their gap then
says little); tighter bounds (semidefinite relaxations, branch and bound) are issue 26's next steps.

References: d'Aspremont, Bach & El Ghaoui, *Optimal solutions for sparse principal component analysis*
(JMLR 2008) for the sparse eigenvalue problem and its bounds; Berk & Bertsimas, *Certifiably optimal
sparse principal component analysis* (Math. Prog. Comp. 2019) for the Gershgorin-type bound.
"""

from __future__ import annotations

import attrs
import numpy as np

from spcakit.errors import InvalidParameterError
from spcakit.operators import CovarianceOperator, DenseCovariance, densify, top_eigenpairs

__all__ = ["BOUNDS", "EIGEN_LIMIT", "GERSHGORIN_LIMIT", "SparseBound", "relative_gap", "sparse_variance_bound"]

#: The bounds :func:`sparse_variance_bound` takes the smallest of, in the order that decides ties.
BOUNDS = ("eigenvalue", "diagonal", "gershgorin")
#: A matrix-free operator's entries are fetched for the Gershgorin bound up to this many variables.
GERSHGORIN_LIMIT = 5000
#: The eigenvalue bound is taken (from a dense eigensolver) up to this many variables.
EIGEN_LIMIT = 2000
#: Columns fetched at once for the Gershgorin bound.
COLUMN_BLOCK = 256


@attrs.frozen(kw_only=True)
class SparseBound:
    """An upper bound on :math:`\\max_{\\|x\\| = 1, \\|x\\|_0 \\le k} x^\\top C x`.

    Attributes
    ----------
    value
        The bound (the smallest of ``bounds``).
    which
        The name of the bound that gave it (see :data:`BOUNDS`).
    k
        The cardinality it bounds.
    bounds
        Every bound taken, by name.
    """

    value: float
    which: str
    k: int
    bounds: dict[str, float]


def _operator(covariance: object) -> CovarianceOperator:
    if isinstance(covariance, np.ndarray):
        matrix = np.asarray(covariance, dtype=float)
        if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
            raise InvalidParameterError(f"a covariance matrix must be square; got shape {matrix.shape}")
        return DenseCovariance((matrix + matrix.T) / 2)
    if not isinstance(covariance, CovarianceOperator):
        raise InvalidParameterError(
            f"sparse_variance_bound takes a covariance matrix (a square array) or a covariance operator; got "
            f"{type(covariance).__name__}"
        )
    return covariance


def _gershgorin(op: CovarianceOperator, k: int) -> float:
    """:math:`\\max_i (C_{ii} + \\text{the } k - 1 \\text{ largest } |C_{ij}|, j \\ne i)`, a block of columns at a time."""
    p = op.p
    explicit = op.explicit()
    best = -np.inf
    for start in range(0, p, COLUMN_BLOCK):
        index = np.arange(start, min(p, start + COLUMN_BLOCK))
        block = np.abs(explicit[:, index] if explicit is not None else op.columns(index))  # |C_{:, I}|
        diagonal = block[index, np.arange(index.size)].copy()
        block[index, np.arange(index.size)] = -np.inf  # j != i
        if k > 1:
            off = np.partition(block, p - (k - 1), axis=0)[p - (k - 1):]  # the k - 1 largest of each column
            rows = diagonal + off.sum(axis=0)
        else:
            rows = diagonal
        best = max(best, float(rows.max()))
    return best


def sparse_variance_bound(covariance: object, k: int) -> SparseBound:
    r"""An upper bound on the variance :math:`x^\top C x` of any unit ``x`` with at most ``k`` nonzeros.

    Parameters
    ----------
    covariance
        A covariance matrix (a square, positive semi-definite array) or a covariance operator
        (:class:`~spcakit.operators.CovarianceOperator`, e.g. ``spcakit.as_problem(X).covariance``).
    k
        The cardinality, an integer in ``[1, p]``.

    Returns
    -------
    SparseBound
        The smallest of the bounds described in :mod:`spcakit.bounds` (the eigenvalue bound up to
        :data:`EIGEN_LIMIT` variables, the Gershgorin bound when the operator holds :math:`C` or
        :math:`p \le` :data:`GERSHGORIN_LIMIT`, the diagonal bound always).
    """
    op = _operator(covariance)
    p = op.p
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= p:
        raise InvalidParameterError(f"k must be an integer in [1, p] = [1, {p}]; got {k!r}")
    k = int(k)
    diagonal = np.asarray(op.diagonal(), dtype=float)
    bounds: dict[str, float] = {}
    if p <= EIGEN_LIMIT:
        bounds["eigenvalue"] = float(np.asarray(top_eigenpairs(densify(op), 1, vectors=False))[0])
    bounds["diagonal"] = float(np.sort(diagonal)[::-1][:k].sum())
    if op.explicit() is not None or p <= GERSHGORIN_LIMIT:
        bounds["gershgorin"] = _gershgorin(op, k)
    which = min(bounds, key=lambda name: (bounds[name], BOUNDS.index(name)))
    # the bounds hold in exact arithmetic; the computed eigenvalue may sit below the true one by rounding
    # (a relative ~p * eps), so the reported value is raised by that much: a bound is never below the optimum
    value = bounds[which] * (1 + 4 * p * np.finfo(float).eps) + 4 * p * np.finfo(float).eps * float(np.abs(diagonal).max(initial=0.0))
    return SparseBound(value=float(value), which=which, k=k, bounds=bounds)


def relative_gap(loading: np.ndarray, covariance: object, bound: SparseBound | None = None) -> float:
    r"""How far a loading is at most from the best one of its cardinality: :math:`(b - x^\top C x/x^\top x)/b`.

    ``b`` is :func:`sparse_variance_bound` of the loading's number of nonzeros (or the ``bound`` given). At
    least the loading's true distance from the optimum (relative); 0 proves it optimal (to rounding). A
    matrix whose bound is 0 has every loading optimal: the gap is 0.
    """
    op = _operator(covariance)
    x = np.asarray(loading, dtype=float).ravel()
    if x.shape[0] != op.p or not np.any(x):
        raise InvalidParameterError(f"the loading must be a nonzero vector of length p = {op.p}; got shape {x.shape}")
    if bound is None:
        bound = sparse_variance_bound(op, int(np.count_nonzero(x)))
    achieved = float(x @ op.matmat(x[:, None])[:, 0]) / float(x @ x)
    if bound.value <= 0:
        return 0.0
    return max(0.0, (bound.value - achieved) / bound.value)
