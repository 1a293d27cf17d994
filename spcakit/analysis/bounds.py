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
says little); the threshold bound (:func:`threshold_bound`, :func:`refined_threshold_bound`) is far tighter
there, at the cost of eigen-decompositions of ``p x p`` matrices, and the bound metrics of a run take it too
with ``spcakit.fit(bound="threshold")`` (:data:`RELAXATIONS`).

References: d'Aspremont, Bach & El Ghaoui, *Optimal solutions for sparse principal component analysis*
(JMLR 2008) for the sparse eigenvalue problem and its bounds; Berk & Bertsimas, *Certifiably optimal
sparse principal component analysis* (Math. Prog. Comp. 2019) for the Gershgorin-type bound.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import attrs
import numpy as np

from spcakit.numerics import index_sets
from spcakit.numerics.linalg import interruptible, sum_of_largest
from spcakit.core.errors import InvalidParameterError
from spcakit.analysis.metrics import LoadingSpan, loading_span
from spcakit.numerics.operators import CovarianceOperator, DenseCovariance, densify, top_eigenpairs
from spcakit.core.records import column_norms
from spcakit.numerics.thresholding import RHO_GRID, threshold_knapsack, threshold_search

__all__ = ["BOUNDS", "PSD_RTOL", "SETTLED_MARGIN", "as_operator", "bound_inputs", "positive_semidefinite", "spectrum_lower_bounds", "spectrum_positive_semidefinite", "EIGEN_LIMIT", "GERSHGORIN_EVERY_LIMIT", "GERSHGORIN_LIMIT", "ComponentBounds", "SparseBound",
           "component_bounds", "gershgorin_bound", "raised_for_rounding", "relative_gap",
           "sparse_variance_bound", "threshold_bound", "RELAXATIONS", "THRESHOLD_LIMIT", "CERTIFY_LIMIT", "check_relaxation",
           "refined_threshold_bound"]

#: The bounds :func:`sparse_variance_bound` takes the smallest of, in the order that decides ties.
BOUNDS = ("eigenvalue", "diagonal", "gershgorin")
#: A matrix-free operator's entries are fetched for the Gershgorin bound up to this many variables.
GERSHGORIN_LIMIT = 5000
#: The eigenvalue bound is taken (from a dense eigensolver) up to this many variables.
EIGEN_LIMIT = 2000
#: With an explicit covariance and :math:`p^2 r` at most this, every loading gets Gershgorin's bound by default
#: (:math:`O(p^2 r^2)`); above it the first alone (:math:`O(p^2)`). Pitprops with 6 loadings: 1014; 13 x 13
#: image patches with 20 loadings: 571 220 (Gershgorin for all would add 7 ms to a 32 ms fit).
GERSHGORIN_EVERY_LIMIT = 200_000
#: Columns fetched at once for the Gershgorin bound.
COLUMN_BLOCK = 256
#: The relaxations of the bound metrics (``spcakit.fit(bound=...)``): ``"fast"`` (the default), the bounds above and a
#: branch and bound of at most 256 nodes from the first loading's support (up to 64 variables)
#: (:func:`spcakit.analysis.certificate.searched_bound`; up to 1000 variables); ``"threshold"``, the bounds above and the
#: threshold bound (:func:`refined_threshold_bound`: a fraction of a second to seconds per cardinality at ``p = 1000``);
#: ``"certify"``, the search to its end: the first loading's bound is the optimum (seconds to hours, up to 8000 variables).
RELAXATIONS = ("fast", "threshold", "certify")
#: The ``"threshold"`` relaxation forms ``p x p`` matrices (and decomposes them): refused above this many variables.
THRESHOLD_LIMIT = 5000
#: ``bound="certify"`` takes up to this many variables, as many as the ``exact`` method does (its ``p x p`` matrix and
#: the search's caches: about 5 GB at ``p = 7129``).
CERTIFY_LIMIT = 8000


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


def as_operator(covariance: object) -> CovarianceOperator:
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


#: A symmetric matrix counts as positive semi-definite (the trace bounds taken) when its least eigenvalue is at least
#: ``-`` this times ``p`` times its largest magnitude (rounding).
PSD_RTOL = 64 * np.finfo(float).eps


def spectrum_positive_semidefinite(values: np.ndarray, p: int) -> bool:
    """Whether the eigenvalues ``values`` of a ``p x p`` symmetric matrix are those of a positive semi-definite one, to
    rounding (:data:`PSD_RTOL`): only then do the trace bounds hold."""
    scale = max(float(np.abs(values).max(initial=0.0)), np.finfo(float).tiny)
    return bool(float(np.min(values, initial=0.0)) >= -PSD_RTOL * p * scale)


def positive_semidefinite(matrix: np.ndarray) -> bool:
    """:func:`spectrum_positive_semidefinite` of a symmetric ``matrix`` (an operator of data is so by construction; a
    raw array is checked)."""
    values = interruptible(lambda: np.linalg.eigvalsh(matrix), matrix.shape[0])
    return spectrum_positive_semidefinite(values, matrix.shape[0])


def bound_inputs(covariance: object, loadings: object, relaxation: str) -> tuple[CovarianceOperator, np.ndarray, bool]:
    """``(operator, p x r loadings, positive semi-definite)`` for the per-loading bounds: the loadings' shape and the
    ``relaxation`` checked (:func:`check_relaxation`); a raw array is checked for the trace bounds, an operator of data
    is positive semi-definite by construction."""
    op = as_operator(covariance)
    x = np.asarray(loadings, dtype=float)
    if x.ndim != 2 or x.shape[0] != op.p:
        raise InvalidParameterError(f"loadings must be a p x r array with p = {op.p}; got shape {x.shape}")
    check_relaxation(relaxation, x.shape[0])
    return op, x, not isinstance(covariance, np.ndarray) or positive_semidefinite(densify(op))


def _checked_k(k: object, p: int) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= p:
        raise InvalidParameterError(f"k must be an integer in [1, p] = [1, {p}]; got {k!r}")
    return int(k)


def sparse_variance_bound(covariance: object, k: int) -> SparseBound:
    r"""An upper bound on the variance :math:`x^\top C x` of any unit ``x`` with at most ``k`` nonzeros.

    Parameters
    ----------
    covariance
        A covariance matrix (a square, positive semi-definite array) or a covariance operator
        (:class:`~spcakit.numerics.operators.CovarianceOperator`, e.g. ``spcakit.as_problem(X).covariance``).
    k
        The cardinality, an integer in ``[1, p]``.

    Returns
    -------
    SparseBound
        The smallest of the bounds described in :mod:`spcakit.analysis.bounds` (the eigenvalue bound up to
        :data:`EIGEN_LIMIT` variables, the Gershgorin bound when the operator holds :math:`C` or
        :math:`p \le` :data:`GERSHGORIN_LIMIT`, the diagonal bound always).
    """
    op = as_operator(covariance)
    p = op.p
    k = _checked_k(k, p)
    diagonal = np.asarray(op.diagonal(), dtype=float)
    bounds: dict[str, float] = {}
    if p <= EIGEN_LIMIT:
        bounds["eigenvalue"] = float(np.asarray(top_eigenpairs(densify(op), 1, vectors=False))[0])
    if not isinstance(covariance, np.ndarray) or positive_semidefinite(densify(op)):  # the trace bound needs it
        bounds["diagonal"] = sum_of_largest(diagonal, k)
    if op.explicit() is not None or p <= GERSHGORIN_LIMIT:
        bounds["gershgorin"] = gershgorin_bound(op, k)
    which = min(bounds, key=lambda name: (bounds[name], BOUNDS.index(name)))
    # the bounds hold in exact arithmetic; the computed eigenvalue may sit below the true one by rounding
    # (a relative ~p * eps), so the reported value is raised by that much: a bound is never below the optimum
    value = raised_for_rounding(bounds[which], p, float(np.abs(diagonal).max(initial=0.0)), factor=4)
    return SparseBound(value=float(value), which=which, k=k, bounds=bounds)


def relative_gap(loading: np.ndarray, covariance: object, bound: SparseBound | None = None) -> float:
    r"""How far a loading is at most from the best one of its cardinality: :math:`(b - x^\top C x/x^\top x)/b`.

    ``b`` is :func:`sparse_variance_bound` of the loading's number of nonzeros (or the ``bound`` given). At
    least the loading's true distance from the optimum (relative); 0 proves it optimal (to rounding). A
    matrix whose bound is 0 has every loading optimal: the gap is 0.
    """
    op = as_operator(covariance)
    x = np.asarray(loading, dtype=float).ravel()
    if x.shape[0] != op.p or not np.any(x):
        raise InvalidParameterError(f"the loading must be a nonzero vector of length p = {op.p}; got shape {x.shape}")
    if bound is None:
        bound = sparse_variance_bound(op, int(np.count_nonzero(x)))
    achieved = float(x @ op.matmat(x[:, None])[:, 0]) / float(x @ x)
    if bound.value <= 0:
        return 0.0
    return max(0.0, (bound.value - achieved) / bound.value)


# -- one bound per component -----------------------------------------------------------------------------------
@attrs.frozen(kw_only=True)
class ComponentBounds:
    r"""Per loading :math:`x_t` (unit, :math:`k_t` nonzeros): an upper bound on the variance any unit vector
    with :math:`k_t` nonzeros can reach on the covariance left by the previous loadings, the variance
    :math:`x_t` reaches there, and the relative gap between them (see :func:`component_bounds`)."""

    bound: tuple[float, ...]
    achieved: tuple[float, ...]
    gap: tuple[float, ...]
    which: tuple[str, ...]


def raised_for_rounding(value: float, p: int, scale: float, factor: int = 8) -> float:
    """A bound ``value`` raised by the rounding its computation may have cost (``factor`` :math:`p\\,\\epsilon`,
    relative and times ``scale``, the largest :math:`|C_{ii}|`): the reported bound stays above the optimum."""
    eps = np.finfo(float).eps
    return float(value * (1 + factor * p * eps) + factor * p * eps * scale)


def _gap(bound: float, achieved: float, nothing_left: bool) -> float:
    """``(bound - achieved) / bound`` in [0, 1]: 0 when the bound, before its rounding allowance, is within that
    allowance of 0 (``nothing_left``: every loading is optimal), and a variance below 0 by rounding counted as 0."""
    if nothing_left or bound <= 0:
        return 0.0
    return min(1.0, max(0.0, (bound - max(achieved, 0.0)) / bound))


def component_bounds(
    covariance: object,
    loadings: np.ndarray,
    *,
    top_eigenvalue: float | Callable[[], float | None] | None = None,
    gershgorin: bool | None = None,
    span: LoadingSpan | None = None,
    relaxation: str = "fast",
    proved: Sequence[float | None] | None = None,
) -> ComponentBounds:
    r"""For each loading, how far it is at most from the best loading of its cardinality, given the ones before.

    With :math:`P_{t-1}` the orthogonal projection onto the span of the previous loadings
    :math:`x_1, \dots, x_{t-1}` and :math:`C_t = (I - P_{t-1})\,C\,(I - P_{t-1})` (:math:`C_1 = C`: Mackey's
    orthogonalized projection deflation, the same matrix whatever deflation the method used, so that numbers
    compare across methods), ``bound[t]`` is an upper bound on

    .. math::

        \max_{\|x\|_2 = 1,\ \|x\|_0 \le k_t} x^\top C_t x, \qquad k_t = \|x_t\|_0,

    ``achieved[t]`` is :math:`x_t^\top C_t x_t` for the unit :math:`x_t` (its additional variance times
    :math:`\|(I - P_{t-1})x_t\|^2`), and ``gap[t]`` is :math:`(\mathrm{bound} - \mathrm{achieved}) /
    \mathrm{bound}`: at least how far :math:`x_t` is from the best :math:`k_t`-sparse direction in what the
    previous loadings leave (0 proves it optimal there), in [0, 1]: 0 when the bound is within rounding of 0
    (the previous loadings leave nothing), a variance below 0 by rounding counted as 0. For the first loading this is the plain sparse
    eigenvalue problem of :func:`sparse_variance_bound`.

    Each bound is the smallest of: :math:`\lambda_{\max}(C) \ge \lambda_{\max}(C_t)` (``top_eigenvalue``,
    when given: it must come from a direct solver, never an iterative one); the sum of the :math:`k_t` largest
    diagonal entries of :math:`C_t`; and Gershgorin's bound on :math:`C_t`'s entries, for every loading with
    ``gershgorin=True`` (:math:`O(p^2 r^2)`), by default when the operator holds :math:`C` for every loading
    while :math:`p^2 r` is at most :data:`GERSHGORIN_EVERY_LIMIT` and for the first alone above
    (:math:`O(p^2)`), never with ``False``. Besides that, one product of :math:`C` with an orthonormal
    basis of the loadings (``span``, :func:`~spcakit.analysis.metrics.loading_span`, shared with the additional
    variances) and :math:`O(p\,r^2)`.

    With ``relaxation="threshold"`` each bound is also taken, and the least kept, from the threshold bound of
    the explicit :math:`C_t` (:func:`refined_threshold_bound`: for every :math:`\rho \ge 0`,
    :math:`x^\top C_t x \le \operatorname{knapsack}(M_\rho, k_t) + \rho (k_t - 1)`, :math:`M_\rho` the
    off-diagonal soft-threshold of :math:`C_t`, at the best :math:`\rho` found), and ``which`` says
    ``"threshold"`` where it is the least: :math:`C` is formed (``p x p``, up to :data:`THRESHOLD_LIMIT`
    variables), then each :math:`C_t = C - QG^\top - GQ^\top + QMQ^\top` from the same basis :math:`Q`,
    :math:`G = CQ` and :math:`M = Q^\top CQ` as the other bounds, and a handful of eigen-decompositions of
    thresholded ``p x p`` matrices per loading (those of many weakly linked variables split into small blocks).
    Far tighter on covariances of many weakly correlated variables (gene expression), where the others sit
    near :math:`\lambda_{\max}(C)`.

    Parameters
    ----------
    covariance
        A covariance matrix or a :class:`~spcakit.numerics.operators.CovarianceOperator`.
    loadings
        The ``p x r`` loadings, in their order (their scale does not matter; a zero column gets bound 0).
    top_eigenvalue
        :math:`\lambda_{\max}(C)` from a direct eigensolver, or ``None`` to leave that bound out; or a function that
        returns one of those, called only when some loading's other bounds are not already below a lower bound on
        :math:`\lambda_{\max}(C)` (then the eigenvalue bound could not be the least, and the result is the same
        without it): the largest diagonal entry, :math:`\lambda_{\max}(Q^\top CQ)`, and the Rayleigh quotient of
        :math:`Cv` for the best unit :math:`v` in the loadings' span, which costs one product with :math:`C`
        (:func:`spectrum_lower_bounds`). The run's metrics pass such a function: on data of many more variables
        than samples the spectrum is a Gram matrix of the rows, about as costly as several passes over the data.
    gershgorin
        Gershgorin's bound for every loading (``True``), where it is cheap when :math:`C` is explicit
        (``None``: see above), or never (``False``).
    span
        The loadings' :class:`~spcakit.analysis.metrics.LoadingSpan`, when already taken.
    relaxation
        ``"fast"`` (the bounds above) or ``"threshold"`` (those and the threshold bound), see :data:`RELAXATIONS`.
    proved
        Per loading, an upper bound the method itself proved on that loading's problem, or ``None`` (the ``exact``
        search's certificate: :func:`spcakit.core.records.proved_bound`); the least is kept, and ``which`` says
        ``"method"`` where it is that one.
    """
    op, x, psd = bound_inputs(covariance, loadings, relaxation)
    p, r = x.shape
    explicit = op.explicit()
    dense = None if relaxation != "threshold" else (explicit if explicit is not None else densify(op))
    diagonal = np.asarray(op.diagonal(), dtype=float)
    scale = float(np.abs(diagonal).max(initial=0.0))
    span = loading_span(x, op) if span is None else span
    basis, c_basis, achieved, before = _spanned(span) if span.independent else _gram_schmidt(op, x)
    m = basis.T @ c_basis
    m = (m + m.T) / 2  # Q^T C Q
    nonzeros = np.count_nonzero(x, axis=0)
    rows = _diagonal_candidates(diagonal, basis, int(nonzeros.max(initial=0)))
    # the sum of the k_t largest entries of diag(C_t), per loading, from the rows where they can be
    top = _diagonal_sums(diagonal[rows], basis[rows], c_basis[rows], m, before, nonzeros)
    taken: list[dict[str, float] | None] = []
    for t in range(r):
        k = int(nonzeros[t])
        if k == 0:
            taken.append(None)
            continue
        bounds = {"diagonal": float(top[t])} if psd else {}
        if gershgorin or (gershgorin is None and explicit is not None and (t == 0 or p * p * r <= GERSHGORIN_EVERY_LIMIT)):
            j = int(before[t])  # the basis columns that span the loadings before t
            bounds["gershgorin"] = gershgorin_bound(op, k, basis[:, :j], c_basis[:, :j], m[:j, :j])
        if not bounds:  # an indefinite matrix and Gershgorin asked never: it is the one bound left that holds
            j = int(before[t])
            bounds["gershgorin"] = gershgorin_bound(op, k, basis[:, :j], c_basis[:, :j], m[:j, :j])
        if dense is not None:
            j = int(before[t])
            left = _left_matrix(dense, basis[:, :j], c_basis[:, :j], m[:j, :j])
            bounds["threshold"] = threshold_search(left, k)[0]
        if proved is not None and t < len(proved) and proved[t] is not None:
            bounds["method"] = float(proved[t])  # type: ignore[arg-type]
        taken.append(bounds)
    eigenvalue = _top_eigenvalue_if_it_can_be_least(top_eigenvalue, taken, op, diagonal, c_basis, m)
    out: dict[str, list[Any]] = {"bound": [], "achieved": [], "gap": [], "which": []}
    for t, bounds in enumerate(taken):
        if bounds is None:
            out["bound"].append(0.0), out["achieved"].append(0.0), out["gap"].append(0.0), out["which"].append("zero")
            continue
        if eigenvalue is not None:
            bounds["eigenvalue"] = eigenvalue
        which = min(bounds, key=lambda name: (bounds[name], _COMPONENT_ORDER.index(name)))
        bound = raised_for_rounding(bounds[which], p, scale)
        out["bound"].append(bound)
        out["achieved"].append(float(achieved[t]))
        out["gap"].append(_gap(bound, float(achieved[t]), bounds[which] <= raised_for_rounding(0.0, p, scale)))
        out["which"].append(which)
    return ComponentBounds(bound=tuple(out["bound"]), achieved=tuple(out["achieved"]), gap=tuple(out["gap"]),
                           which=tuple(out["which"]))  # fmt: skip


#: A lower bound on :math:`\lambda_{\max}(C)` settles that the eigenvalue bound is not the least only when the other
#: bounds are below it by more than this share (rounding in the lower bound never changes which bound is reported).
SETTLED_MARGIN = 1e-9


def _top_eigenvalue_if_it_can_be_least(
    top_eigenvalue: float | Callable[[], float | None] | None, taken: list[dict[str, float] | None],
    op: CovarianceOperator, diagonal: np.ndarray, c_basis: np.ndarray, m: np.ndarray,
) -> float | None:
    r""":math:`\lambda_{\max}(C)` for the eigenvalue bound: ``top_eigenvalue`` itself when a number (or ``None``); when a
    function, its value, or ``None`` without calling it when every loading's other bounds are below a lower bound on
    :math:`\lambda_{\max}(C)` (:func:`spectrum_lower_bounds`), so that the eigenvalue bound could not be the least."""
    if not callable(top_eigenvalue):
        return None if top_eigenvalue is None else float(top_eigenvalue)
    least = max((min(bounds.values()) for bounds in taken if bounds is not None), default=None)
    if least is None:
        return None
    for lower in spectrum_lower_bounds(op, diagonal, c_basis, m):
        if least < lower * (1 - SETTLED_MARGIN):
            return None
    value = top_eigenvalue()
    return None if value is None else float(value)


def spectrum_lower_bounds(op: CovarianceOperator, diagonal: np.ndarray, c_basis: np.ndarray, m: np.ndarray) -> Iterator[float]:
    r"""Lower bounds on :math:`\lambda_{\max}(C)`, each a Rayleigh quotient (Courant-Fischer), cheapest first: the largest
    diagonal entry and :math:`\lambda_{\max}(M)`, :math:`M = Q^\top CQ` (Rayleigh-Ritz on the loadings' span), for
    nothing; then :math:`u^\top Cu / u^\top u` for :math:`u = Cv`, :math:`v = Qg` the best unit vector of that span
    (:math:`g` the leading eigenvector of :math:`M`), at the cost of one product with :math:`C`. For a positive
    semi-definite :math:`C` the power step raises the quotient (:math:`v^\top C^3v / v^\top C^2v \ge v^\top Cv`), and on a
    spectrum spread over many directions (data of more variables than samples) it is near its mean, far above a
    sparse loading's variance."""
    yield float(diagonal.max(initial=0.0))
    if m.shape[0] == 0:
        return
    values, vectors = np.linalg.eigh(m)
    yield float(values[-1])
    u = c_basis @ vectors[:, -1]
    largest = float(np.max(np.abs(u), initial=0.0))
    if largest > 0 and np.isfinite(largest):
        u = u / largest  # the quotient does not depend on u's length: near the largest covariances u.u would overflow
        with np.errstate(over="ignore", invalid="ignore"):
            quotient = float(u @ np.asarray(op.matmat(u), dtype=float).reshape(-1)) / float(u @ u)
        if np.isfinite(quotient):  # a bound that overflows is no bound: the cheaper ones above stand
            yield quotient


def _spanned(span: LoadingSpan) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    r"""The loadings' orthonormal basis :math:`Q` (``p x r``, :math:`X = QR` with independent loadings),
    :math:`CQ`, each loading's :math:`x_t^\top C_t x_t = R_{tt}^2\,q_t^\top Cq_t`, and how many of :math:`Q`'s
    columns span the loadings before each (``t``)."""
    q, cq, triangle = span.full_q(), span.cq, span.triangle
    achieved = np.diagonal(triangle) ** 2 * np.einsum("ij,ij->j", q, cq)
    return q, cq, achieved, np.arange(q.shape[1])


def _gram_schmidt(op: CovarianceOperator, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """As :func:`_spanned` when some loading adds no new direction: the basis grows by Gram-Schmidt (twice),
    skipping those, from one product of :math:`C` with the unit loadings."""
    p, r = x.shape
    norms = column_norms(x)
    unit = np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)
    c_unit = op.matmat(unit)
    basis, c_basis = np.zeros((p, 0)), np.zeros((p, 0))
    achieved, before = np.zeros(r), np.zeros(r, dtype=int)
    for t in range(r):
        coefficients = basis.T @ unit[:, t]
        y, cy = unit[:, t] - basis @ coefficients, c_unit[:, t] - c_basis @ coefficients  # (I - P) x_t, C (I - P) x_t
        achieved[t], before[t] = float(y @ cy), basis.shape[1]
        if float(np.linalg.norm(y)) > 1e-10:
            again = basis.T @ y
            y, cy = y - basis @ again, cy - c_basis @ again
            norm = float(np.linalg.norm(y))
            basis, c_basis = np.column_stack([basis, y / norm]), np.column_stack([c_basis, cy / norm])
    return basis, c_basis, achieved, before


def _diagonal_candidates(diagonal: np.ndarray, basis: np.ndarray, k: int) -> np.ndarray | slice:
    r"""Rows holding the ``k`` largest entries of every projected diagonal of :func:`_diagonal_sums`: the rows where the
    basis :math:`Q` is nonzero, and the ``k + |S|`` largest :math:`C_{ii}` (``|S|`` those rows). Off the basis's
    rows every column equals :math:`C_{ii}` (each term of the projection has a factor :math:`Q_{il}`), so a
    column's ``k`` largest are among its rows on the basis and the ``k`` largest :math:`C_{ii}` off it, which are
    among the ``k + |S|`` largest of all. All rows (a slice) when that is half of them or more; else the bound
    costs :math:`O(p)` where the whole ``p x r`` diagonals cost a sort of each column."""
    p = diagonal.shape[0]
    support = np.flatnonzero(np.any(basis != 0, axis=1))
    wanted = k + support.size
    if 2 * wanted >= p:
        return slice(None)
    largest = np.argpartition(diagonal, p - wanted)[p - wanted :]
    return index_sets.union(support, largest)


def _diagonal_sums(diagonal: np.ndarray, basis: np.ndarray, c_basis: np.ndarray, m: np.ndarray, before: np.ndarray,
                   nonzeros: np.ndarray) -> np.ndarray:  # fmt: skip
    r"""Per loading ``t``: the sum of the ``nonzeros[t]`` largest entries (negative ones as 0) of the diagonal of
    :math:`(I - Q_jQ_j^\top)C(I - Q_jQ_j^\top)`, :math:`Q_j` the first ``j = before[t]`` columns of ``basis``:
    :math:`C_{ii} - 2\sum_{l<j} Q_{il}G_{il} + \sum_{l,l'<j} Q_{il}M_{ll'}Q_{il'}` with :math:`G = CQ` and
    :math:`M = Q^\top CQ`. The projected diagonals are summed up a basis column at a time (``p``-vectors only, where
    all of them at once held several ``p x r`` arrays: 48 MB on 100 000 variables, ``r = 20``; the cross terms too,
    whose ``p x r`` array set the metrics' peak memory on dense loadings)."""
    squares = np.diagonal(m)  # M_ll, the weight of Q_il^2
    added = np.zeros(diagonal.shape[0])  # what the first j basis columns add to the diagonal
    sums = np.zeros(before.shape[0])
    for j in range(int(before.max(initial=0)) + 1):
        if j:  # what basis column l = j - 1 adds; cross: the sum over l' < l of Q_{i l'} M_{l' l}
            l = j - 1
            q, cross = basis[:, l], basis[:, :l] @ m[:l, l]
            added += -2 * q * c_basis[:, l] + 2 * q * cross + q**2 * squares[l]
        for t in np.flatnonzero(before == j):
            k = int(nonzeros[t])
            if k:  # the k largest, added in decreasing order
                sums[t] = np.cumsum(-np.sort(-np.clip(diagonal + added, 0.0, None))[:k])[-1]
    return sums


def gershgorin_bound(
    op: CovarianceOperator, k: int, basis: np.ndarray | None = None, c_basis: np.ndarray | None = None,
    m: np.ndarray | None = None,
) -> float:
    r"""Gershgorin's bound :math:`\max_i (D_{ii} + \text{the } k - 1 \text{ largest } |D_{ij}|, j \ne i)` on
    :math:`D = C`, or with ``basis`` :math:`Q` (``c_basis`` :math:`G = CQ`, ``m`` :math:`M = Q^\top CQ`) on
    :math:`D = C - QG^\top - GQ^\top + QMQ^\top`, the covariance the span of :math:`Q` leaves; a block of
    columns at a time (fetched from the operator when it holds no explicit matrix)."""
    p = op.p
    explicit = op.explicit()
    best = -np.inf
    projected = basis is not None and basis.shape[1] > 0
    qm = basis @ m if projected else None
    for start in range(0, p, COLUMN_BLOCK):
        index = np.arange(start, min(p, start + COLUMN_BLOCK))
        block = explicit[:, index] if explicit is not None else op.columns(index)
        if projected:
            block = block - basis @ c_basis[index].T - c_basis @ basis[index].T + qm @ basis[index].T
        block = np.abs(block)
        diagonal = block[index, np.arange(index.size)].copy()
        block[index, np.arange(index.size)] = -np.inf  # j != i
        rows = diagonal + (np.partition(block, p - (k - 1), axis=0)[p - (k - 1):].sum(axis=0) if k > 1 else 0.0)
        best = max(best, float(rows.max()))
    return best


# -- the threshold bound (a feasible point of the DSPCA relaxation's dual) ---------------------------------------
def threshold_bound(covariance: object, k: int, rhos: Any = None) -> tuple[float, float]:
    r"""The threshold bound on the sparse eigenvalue :math:`\lambda^{(k)}(C)`, the least over ``rhos``, and the
    :math:`\rho` that gave it.

    For :math:`\rho \ge 0` write :math:`C = M_\rho + R_\rho` with :math:`M_\rho` as in
    :func:`~spcakit.numerics.thresholding.thresholded_spectrum` and :math:`|R_{ij}| \le \rho`, zero on the diagonal. A unit :math:`x` with
    ``k`` nonzeros has :math:`x^\top R_\rho x \le \rho (\|x\|_1^2 - 1) \le \rho (k - 1)`, so

    .. math::

        x^\top C x \le \operatorname{knapsack}(M_\rho, k) + \rho (k - 1),

    the spectral knapsack (:func:`~spcakit.numerics.thresholding.spectral_knapsack`) at most :math:`\lambda_{\max}(M_\rho)`. With
    :math:`\rho = 0` it is the spectral bound of :math:`C`. :math:`\lambda_{\max}(C - U) + k \max|U_{ij}|` is
    the dual of d'Aspremont, El Ghaoui, Jordan & Lanckriet's DSPCA relaxation (*A direct formulation for
    sparse PCA using semidefinite programming*, SIAM Review 2007) at any symmetric :math:`U`; the
    soft-threshold is one such point, and it is tight on covariances of many weakly linked variables
    (gene expression), where the other bounds are near :math:`\lambda_{\max}(C)`. Needs the entries of
    :math:`C` (``p x p``); ``rhos`` defaults to :data:`~spcakit.numerics.thresholding.RHO_GRID` times the largest diagonal entry.
    """
    c = densify(as_operator(covariance))
    p = c.shape[0]
    k = _checked_k(k, p)
    scale = float(np.abs(np.diag(c)).max(initial=0.0))
    if rhos is None:
        rhos = [share * scale for share in RHO_GRID]
    best, best_rho = np.inf, 0.0
    for rho in rhos:
        value = threshold_knapsack(c, float(rho), k)[0] + float(rho) * (k - 1)
        if value < best:
            best, best_rho = value, float(rho)
    return raised_for_rounding(best, p, scale), best_rho


def refined_threshold_bound(covariance: object, k: int) -> tuple[float, float]:
    r"""The threshold bound of :func:`threshold_bound` at a :math:`\rho` found by a short search instead of the
    29 points of :data:`~spcakit.numerics.thresholding.RHO_GRID`, and that :math:`\rho`.

    Every :math:`\rho \ge 0` gives a bound, so the search decides how tight the bound is, never whether it
    holds. It scans :data:`~spcakit.numerics.thresholding.COARSE_RHO_GRID` (times the largest diagonal entry) from the largest :math:`\rho`
    down, where the thresholded matrix falls apart into small blocks and costs little, and stops after two
    values in a row above the least so far (the value is near unimodal in :math:`\log\rho`: it rises to the
    spectral bound as :math:`\rho \to 0` and as :math:`\rho (k - 1)` for large :math:`\rho`), so the dense
    decompositions of the smallest :math:`\rho` are mostly skipped; a :math:`\rho` with :math:`\rho (k - 1)`
    above the least value found cannot do better and is skipped too. Then :data:`RHO_REFINEMENTS` times it
    tries the two neighbours of the best :math:`\rho` at half the previous step (in :math:`\log\rho`). At
    most 14 evaluations (each one eigen-decomposition of :math:`M_\rho`'s blocks), usually 8 to 11; the bound
    is within a few percent of the grid's and often below it (a finer :math:`\rho` near the best).
    """
    c = densify(as_operator(covariance))
    p = c.shape[0]
    k = _checked_k(k, p)
    best, rho = threshold_search(c, k)
    return raised_for_rounding(best, p, float(np.abs(np.diag(c)).max(initial=0.0))), rho


def _left_matrix(c: np.ndarray, basis: np.ndarray, c_basis: np.ndarray, m: np.ndarray) -> np.ndarray:
    r""":math:`C_t = (I - QQ^\top)C(I - QQ^\top) = C - QG^\top - GQ^\top + QMQ^\top` (``basis`` :math:`Q`, ``c_basis``
    :math:`G = CQ`, ``m`` :math:`M = Q^\top CQ`), explicit and symmetric; ``c`` itself when :math:`Q` is empty."""
    if basis.shape[1] == 0:
        return (c + c.T) / 2
    cross = basis @ c_basis.T
    left = c - cross - cross.T + basis @ m @ basis.T
    return (left + left.T) / 2


def check_relaxation(relaxation: object, p: int | None = None) -> str:
    """``relaxation`` if it names one of :data:`RELAXATIONS` (and ``"threshold"`` has at most :data:`THRESHOLD_LIMIT`
    variables ``p``, ``"certify"`` at most :data:`CERTIFY_LIMIT`), else :class:`~spcakit.core.errors.InvalidParameterError` saying what would be valid."""
    if not isinstance(relaxation, str) or relaxation not in RELAXATIONS:
        raise InvalidParameterError(
            f"unknown bound relaxation {relaxation!r}; choose one of: {', '.join(RELAXATIONS)} (fast: the cheap bounds and "
            "a short search; threshold: the threshold bound too, tighter on many weakly correlated variables; certify: "
            "the search to its end, the first loading's optimum)"
        )
    limit = {"threshold": THRESHOLD_LIMIT, "certify": CERTIFY_LIMIT}.get(relaxation)
    if limit is not None and p is not None and p > limit:
        raise InvalidParameterError(
            f"bound='{relaxation}' forms and decomposes p x p matrices, up to p = {limit} variables; these data "
            f"have p = {p}: use bound='fast' (the default)"
        )
    return relaxation


#: The order that decides ties between the bounds of :func:`component_bounds`.
_COMPONENT_ORDER = (*BOUNDS, "threshold", "method")
