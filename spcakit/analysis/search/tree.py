r"""Branch and bound for the sparse eigenvalue problem, with a certificate.

For a covariance :math:`A` (``p x p``, positive semi-definite), optionally a constraint
:math:`B = I - QQ^\top` (Mackey's generalized deflation), and a cardinality ``k``, the search finds

.. math::

    \max_{|S| = k}\; \lambda_{\max}(A_{SS}, B_{SS})
    = \max_{\|x\|_0 \le k,\ x^\top B x = 1} x^\top A x

(with :math:`B = I`: the best unit loading with ``k`` nonzeros), or, when a time or node limit stops
it, the best support found and an upper bound on the optimum. With a constraint, :math:`A` must vanish
on the span of :math:`Q` (:math:`AQ = 0`), as the generalized deflation leaves it
(:math:`A = (I - QQ^\top) C (I - QQ^\top)`): only then is :math:`\lambda_{\max}(A_{UU}, B_{UU})` (on the
range of a singular :math:`B_{UU}`) a bound for every support within :math:`U`; any other :math:`A` is
refused.

A **node** fixes some variables in (:math:`I`) and some out; the others are free. Every support of
the node lies in the allowed set :math:`U` (all but the excluded) and contains :math:`I`. Its bound
is never below the value of any of them (Berk & Bertsimas, *Certifiably optimal sparse principal
component analysis*, Math. Prog. Comp. 2019, use bounds of the same kinds):

* ``eigenvalue``: :math:`\lambda_{\max}(A_{UU}, B_{UU})` (a support's best vector is one on
  :math:`U`); taken while :math:`|U|` is at most :data:`EIGEN_NODE_LIMIT`;
* with :math:`B = I`, ``gershgorin``: :math:`\max_{i \in U} \big(A_{ii} + \sum_{j \in I, j \ne i}
  |A_{ij}| + \text{the } k - |I| - [i \notin I] \text{ largest } |A_{ij}|,\ j \in U \setminus I \setminus
  \{i\}\big)`, Gershgorin's circles of any :math:`A_{SS}`;
* with :math:`B = I`, ``diagonal``: :math:`\sum_{i \in I} A_{ii}` plus the :math:`k - |I|` largest
  :math:`A_{ii}` of the free variables (:math:`\lambda_{\max} \le \operatorname{tr}`);
* with :math:`B = I`, ``spectral``: with :math:`A_{UU} = \sum_i \lambda_i u_iu_i^\top` (or the whole
  :math:`A`'s eigenvectors restricted to :math:`U`, for nodes of any size), :math:`x^\top Ax = \sum_i
  \lambda_i (u_i^\top x)^2` with the squares summing to at most 1, each at most :math:`u_i`'s weight on
  :math:`I` plus its :math:`k - |I|` largest squared entries on the free variables: the fractional
  knapsack that fills the largest :math:`\lambda_i` first;
* with :math:`B = I`, ``threshold`` (the dual of d'Aspremont et al.'s DSPCA relaxation, *A direct
  formulation for sparse PCA using semidefinite programming*, SIAM Review 2007, at one feasible dual
  point): for any :math:`\rho \ge 0`, write :math:`A = M_\rho + R_\rho` with :math:`M_\rho` the
  matrix whose off-diagonal entries are soft-thresholded by :math:`\rho` (its diagonal that of
  :math:`A`) and :math:`|R_{ij}| \le \rho`, zero on the diagonal. A unit :math:`x` with ``k`` nonzeros
  has :math:`x^\top R_\rho x \le \rho (\|x\|_1^2 - 1) \le \rho (k - 1)`, so :math:`x^\top A x \le
  x^\top M_\rho x + \rho (k - 1)`, and :math:`x^\top M_\rho x` is bounded by the spectral knapsack of
  :math:`(M_\rho)_{UU}`. :math:`M_\rho` falls apart into the connected components of the entries above
  :math:`\rho`, each decomposed on its own (a large one in part, its leading eigenpairs and one knapsack item for
  the rest, completed when the knapsack reaches that item: :func:`spcakit.numerics.thresholding.threshold_knapsack`, the
  same value); :math:`\rho` is chosen on a grid at the root; a child that excludes a variable (a new
  allowed set) takes the least of its parent's :math:`\rho` and one a factor :data:`RHO_STEP` up or down,
  and a child that fixes a variable in takes its parent's :math:`\rho` alone (the decompositions of recent
  allowed sets are kept, and it has its parent's: its bound costs no eigensolve; trying the step there too
  explored a quarter fewer nodes in the same time and left a larger gap, 5.55 % against 5.35 % after 60 s on
  the colon's 500 genes at k = 10). On low-rank covariances of many variables (gene expression) this is by
  far the tightest of the bounds at the root;
* with :math:`B = I` and variables fixed in, ``split``: a support's vector split into its part on :math:`I` and
  its part on the free variables, the former on the eigenvectors of :math:`A_{II}`, each coupled to the free part
  by at most the norm of its ``k - |I|`` largest couplings, the free part worth at most a bound on ``k - |I|``
  free variables (:meth:`SearchProblem.split_bound`: an arrow matrix's top eigenvalue). Once :math:`A_{II}` holds most
  of a support's variance it is far tighter than the threshold bound;
* with :math:`B = I` and variables fixed in, ``schur``: a value :math:`\lambda` (the incumbent's, which prunes the
  node, or one a few bisection steps above it) at which a Frobenius, Gershgorin or trace bound on the Schur
  complement's free block :math:`A_{FF} + C^\top(\lambda I - \Lambda)^{-1}C` over any ``k - |I|`` free variables is
  at most :math:`\lambda` (:meth:`SearchProblem.schur_bound`): the coupling and the free part bounded together. With
  the split bound it certifies the colon's 500 genes at k = 10 in 0.4 s and at k = 20 in 5 s, where ten minutes
  had left gaps of 3.9 % and 13.2 %.

The trace bounds (``diagonal``, and the trace in the split and Schur bounds' free part) hold for a positive
semi-definite :math:`A` only, and are taken only when the matrix's least eigenvalue is above rounding
(:data:`spcakit.analysis.bounds.PSD_RTOL`): a Hotelling deflation by a loading that is not an eigenvector leaves an indefinite matrix.

A node with one free place is solved outright: every support :math:`I \cup \{j\}` is evaluated at once (a
stack of bordered matrices); one with two free places too when the pairs whose 2 x 2 bound
(:meth:`SearchProblem.completed`) is above the incumbent are at most :data:`PAIR_LIMIT`. Before, such nodes were
branched one free variable at a time, a chain of hundreds of nodes each with its eigen-decompositions.

The search is best-first (the open node of largest bound next), so the largest bound among the open
nodes is always an upper bound on the optimum; it starts from the best support of a greedy forward
selection and of truncated power runs from the matrix's :data:`POWER_STARTS` leading eigenvectors,
followed by single swaps (the incumbent), and each node proposes one more support, the
``k`` variables of largest weight in the leading eigenvector of :math:`U` that contain :math:`I`. It
branches on the free variable of largest weight there. A child node enters the queue with its parent's
bound; the node's own bounds (split, Schur, eigenvalue, spectral on :math:`A_{UU}`, threshold) are computed only
when it comes first in the queue, and it goes back into the queue with the tighter bound. The cheap bounds
(Gershgorin, diagonal, spectral on the whole matrix's eigenvectors) bound the root alone: below the root they
were under the parent's bound for 1 child in 1202 (colon, 500 genes, k = 10) and 73 in 19 638 (digits,
k = 10), while they took a quarter of the colon search's time. A node whose bound is not above the
incumbent by more than :data:`PRUNE_RTOL` (relative) is dropped: the reported optimum is then
exact to that tolerance.

While it runs, the search reports its progress through :func:`spcakit.output.progress.report` once before the warm
start, after every node and once at the end (task ``"branch and bound"``: the nodes explored, the best
value found and the bound, so the gap), which
does nothing unless a front end listens (the command line's progress line on a terminal): the search
needs no import of the command line, and ``spcakit.fit`` stays silent. The reported bound is the
smallest upper bound seen so far, so it never increases (the largest open bound alone may: a child's
spectral bound, from its own eigenvectors, can exceed its parent's), and the best value never decreases.
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections.abc import Callable, Sequence

import attrs
import numpy as np

from spcakit.analysis.bounds import raised_for_rounding
from spcakit.analysis.search.gram import GramMatrix
from spcakit.analysis.search.nodes import (
    EIGEN_NODE_LIMIT,
    RHO_STEP,
    THRESHOLD_GAIN,
    SearchProblem,
)
from spcakit.numerics import ties
from spcakit.numerics.linalg import DeadlinePassed, deadline_scope
from spcakit.numerics.operators.deflated import ProjectionDeflated
from spcakit.numerics.operators.eigen import eigenpairs_through_small_gram
from spcakit.numerics.operators.gram import GramCovariance
from spcakit.numerics.thresholding import RHO_GRID
from spcakit.output import progress

#: A node whose bound is at most the incumbent plus this times its magnitude is not searched further
#: (:func:`prune_level`).
PRUNE_RTOL = 1e-9
#: The share of the time limit the warm start's swaps may take.
WARM_START_SHARE = 0.25
#: Steps of one truncated power run at most.
POWER_STEPS = 200
#: What the search calls itself in its progress reports (:func:`spcakit.output.progress.report`).
TASK = "branch and bound"


@attrs.frozen(kw_only=True)
class Search:
    r"""What a search found: the best support, its value and vector, and how far from the optimum at most.

    Attributes
    ----------
    support
        The best support found (ascending indices).
    value
        Its value :math:`\lambda_{\max}(A_{SS}, B_{SS})`.
    vector
        The maximising ``p``-vector (unit length; :math:`x^\top B x = 1` direction), zero off the support.
    bound
        An upper bound on the optimum (``value`` times ``1 +`` :data:`PRUNE_RTOL` when ``optimal``; when a
        limit stopped the search, the smallest of the bounds it had along the way, never below ``value``).
    optimal
        Whether the search finished: no open node could beat the incumbent.
    nodes
        Nodes explored (bounded in full, a support proposed, branched; or, with one or two free places, solved
        by enumeration).
    seconds
        Wall-clock time of the search.
    stopped
        ``""`` when it finished, else what stopped it (``"time limit"``, ``"node limit"``).
    generalized
        Whether it solved the generalized problem (a constraint :math:`B = I - QQ^\top`): ``value`` and ``bound`` are
        then those of the variance added to the loadings :math:`Q` spans.
    """

    support: tuple[int, ...]
    value: float
    vector: np.ndarray = attrs.field(eq=False)
    bound: float
    optimal: bool
    nodes: int
    seconds: float
    stopped: str = ""
    generalized: bool = False

    @property
    def gap(self) -> float:
        """``(bound - value) / bound``: at least how far the support is from the optimum (about
        :data:`PRUNE_RTOL` when the search finished)."""
        if self.bound <= 0:
            return 0.0
        return max(0.0, (self.bound - self.value) / self.bound)


def _truncated_power(problem: SearchProblem, start: np.ndarray) -> np.ndarray:
    r"""The support a truncated power run from ``start`` ends on (``B = I``): :math:`x \leftarrow T_k(Ax)` (the ``k``
    entries of largest magnitude, :func:`spcakit.numerics.ties.top_k`), normalised, until the support repeats; then the
    leading eigenvector of :math:`A_{SS}` continues it, until that repeats the support too (a fixed point), or after
    :data:`POWER_STEPS` steps. The starts (the leading eigenvectors of :math:`A`) are properties of the matrix, so
    a permutation of the variables permutes the supports found."""
    k = problem.k
    x = np.asarray(start, dtype=float)
    support = np.sort(ties.top_k(np.abs(x), k))
    for _ in range(POWER_STEPS):
        y = problem.a[:, support] @ x[support]
        following = np.sort(ties.top_k(np.abs(y), k))
        if np.array_equal(following, support):
            _, vector = problem.value(support)
            following = np.sort(ties.top_k(np.abs(problem.a[:, support] @ vector), k))
            if np.array_equal(following, support):
                break
            y = problem.a[:, support] @ vector
        x = y / max(float(np.linalg.norm(y[following])), np.finfo(float).tiny)  # unit on its support: no overflow
        support = following
    return support


def _warm_start(problem: SearchProblem, deadline: float = np.inf) -> tuple[float, np.ndarray]:
    """The best support of the greedy forward selection and of truncated power runs from the leading eigenvectors
    (``B = I``), then single swaps (one in, one out) from it while one improves and time is left (the greedy
    selection, too, stops at ``deadline``; the power runs, at most :data:`POWER_STEPS` steps each, always run)."""
    value, support = _greedy(problem, deadline)
    if problem.q is None:
        for start in problem.leading.T:
            found = _truncated_power(problem, start)
            found_value = problem.value(found)[0]
            if ties.improves(found_value, value):
                value, support = found_value, found
    return _swapped(problem, value, support, deadline)


def _greedy(problem: SearchProblem, deadline: float = np.inf) -> tuple[float, np.ndarray]:
    """Forward selection by value: the variable that raises the best value most, ``k`` times (the first of those
    within a relative 1e-12 of the most). With ``B = I`` each step evaluates every candidate at once
    (:meth:`SearchProblem.completions`). At ``deadline`` the variables of largest variance complete the support (each
    step solves ``p`` eigenproblems of up to ``k`` variables: p = 300, k = 290 took 17 s)."""
    p, k = problem.p, problem.k
    included = np.zeros(p, dtype=bool)
    for _ in range(k):
        if time.perf_counter() >= deadline:
            rest = np.flatnonzero(~included)
            included[rest[np.argsort(-problem.diagonal[rest], kind="stable")[: k - int(included.sum())]]] = True
            break
        candidates = np.flatnonzero(~included)
        if problem.q is None:
            values = problem.completions(included, candidates)
        else:
            values = np.array([problem.value(np.flatnonzero(included | (np.arange(p) == j)))[0] for j in candidates])
        most = float(values.max())
        included[candidates[np.flatnonzero(values >= most - 1e-12 * abs(most))[0]]] = True
    support = np.flatnonzero(included)
    return problem.value(support)[0], support


def _swapped(problem: SearchProblem, value: float, start: np.ndarray, deadline: float) -> tuple[float, np.ndarray]:
    """Single swaps (one in, one out), the first that improves each time (the variables out in ascending order,
    each with the variables in ascending order), from the support ``start`` of value ``value`` while one improves
    and time is left. With ``B = I`` all swaps of one variable out are evaluated at once."""
    p = problem.p
    support = [int(i) for i in start]
    improved = True
    while improved and time.perf_counter() < deadline:
        improved = False
        for out in list(support):
            if time.perf_counter() >= deadline:
                break
            kept = np.zeros(p, dtype=bool)
            kept[[v for v in support if v != out]] = True
            candidates = np.flatnonzero(~kept)
            candidates = candidates[candidates != out]
            if problem.q is None:
                values = problem.completions(kept, candidates)
            else:
                values = np.array([problem.value(np.flatnonzero(kept | (np.arange(p) == j)))[0] for j in candidates])
            better = np.flatnonzero(values > value + 1e-12 * abs(value))  # the magnitude: values may be negative
            if better.size:
                into = int(candidates[better[0]])
                support = sorted([v for v in support if v != out] + [into])
                value, improved = problem.value(np.array(support))[0], True
                break
    return value, np.array(sorted(support))


#: A covariance of at most this share of ``p`` rows gets its eigenpairs from its Gram matrix (:func:`low_rank_spectrum`).
LOW_RANK_SHARE = 0.5


def low_rank_spectrum(covariance: object) -> tuple[np.ndarray, np.ndarray] | None:
    r"""The eigenpairs of a covariance :math:`C = B^\top B/s` that may have nonzero eigenvalues, when it says it has rank
    at most ``n`` with ``n`` at most :data:`LOW_RANK_SHARE` of ``p`` and its solver is direct: the ``n`` leading pairs
    through the ``n x n`` :math:`BB^\top` (:math:`O(n^2 p)`; the other ``p - n`` eigenvalues are 0), for
    :func:`branch_and_bound`'s ``spectrum``; ``None`` otherwise (the search then decomposes the ``p x p`` matrix)."""
    projected = _projected_gram_spectrum(covariance)
    if projected is not None:
        return projected
    p = int(getattr(covariance, "p", 0))
    rank = int(getattr(covariance, "rank_at_most", lambda: p)())
    direct = getattr(covariance, "direct_spectrum", None)
    if not p or rank > LOW_RANK_SHARE * p or direct is None or not direct(rank):
        return None
    values, vectors = covariance.top_eigenpairs(rank)  # type: ignore[attr-defined]
    return np.asarray(values, dtype=float), np.asarray(vectors, dtype=float)


def _projected_gram_spectrum(covariance: object) -> tuple[np.ndarray, np.ndarray] | None:
    r"""The same for a chain of projection deflations of a Gram covariance (the ``exact`` method's later loadings):
    :math:`P_t \cdots P_1 C P_1 \cdots P_t = F^\top F/s` with :math:`F = BP_1 \cdots P_t` (``n x p``,
    :math:`P_i = I - x_ix_i^\top`), so its ``n`` eigenpairs come from the ``n x n`` :math:`FF^\top/s`; ``None`` for
    any other operator."""
    chain = _gram_chain(covariance, projected=True)
    if chain is None:
        return None
    f, scale = chain
    values, vectors = eigenpairs_through_small_gram(f @ f.T, lambda u: f.T @ u, f.shape[0])
    return values / scale, vectors


def _gram_chain(covariance: object, projected: bool = False) -> tuple[np.ndarray, float] | None:
    r""":math:`F` and :math:`s` with ``covariance`` :math:`= F^\top F/s`: a Gram covariance of ``n`` at most
    :data:`LOW_RANK_SHARE` of ``p`` rows, or a chain of projection deflations of one (:math:`F = BP_1 \cdots P_t`);
    ``None`` for any other operator (with ``projected``, for a Gram covariance itself too)."""
    units: list[np.ndarray] = []
    inner = covariance
    while isinstance(inner, ProjectionDeflated):
        units.append(np.asarray(inner.vector, dtype=float).ravel())
        inner = inner.base
    if (projected and not units) or not isinstance(inner, GramCovariance):
        return None
    n, p = inner.data.shape
    if n > LOW_RANK_SHARE * p:
        return None
    f = inner.centred_data()
    for unit in reversed(units):  # B P_1 first: the innermost projection
        f = f - np.outer(f @ unit, unit)
    return f, float(inner.scale)


#: From this many variables a covariance of few rows (:data:`LOW_RANK_SHARE`) is searched from its data
#: (:func:`gram_search_matrix`) instead of formed ``p x p`` (formed, C and its decompositions take about
#: :math:`5p^2` numbers: 0.36 GB here, 2.07 GB at Golub's 7129 genes). Read from the data, the search does without the
#: thresholded spectrum's bound: on the colon data (2000 genes, one thread) 28 s instead of 121 s standardised, but
#: 19 s instead of 5.3 s on the log2 expression, where that bound certifies.
GRAM_SEARCH_P = 3000


def gram_search_matrix(covariance: object) -> GramMatrix | None:
    r"""The covariance as :func:`branch_and_bound` reads it from its data, :class:`GramMatrix` of
    :math:`F/\sqrt s`, when it has at least :data:`GRAM_SEARCH_P` variables and is a Gram covariance of few rows or a
    chain of projection deflations of one (:func:`low_rank_spectrum`'s cases); ``None`` otherwise (form it whole)."""
    if int(getattr(covariance, "p", 0)) < GRAM_SEARCH_P:
        return None
    chain = _gram_chain(covariance)
    return None if chain is None else GramMatrix(chain[0] / np.sqrt(chain[1]))


def prune_level(incumbent: float) -> float:
    """The level at or below which a node's bound cannot beat ``incumbent``: it plus :data:`PRUNE_RTOL` times its
    magnitude. So also the bound of a finished search. The magnitude, not the value: an indefinite matrix (a
    Hotelling-deflated covariance, the :math:`C - W` of :mod:`spcakit.analysis.lagrangian`) can have a negative
    optimum, and its value times ``1 +`` :data:`PRUNE_RTOL` would be below it."""
    return incumbent + PRUNE_RTOL * abs(incumbent) if np.isfinite(incumbent) else incumbent


def branch_and_bound(
    a: np.ndarray | GramMatrix,
    k: int,
    *,
    constraint: np.ndarray | None = None,
    time_limit: float | None = None,
    node_limit: int | None = None,
    on_node: Callable[[int, float, float], None] | None = None,
    starts: Sequence[np.ndarray] = (),
    warm_start: bool = True,
    task: str | None = TASK,
    spectrum: tuple[np.ndarray, np.ndarray] | None = None,
) -> Search:
    """The best support of ``k`` variables of ``a`` (under ``B = I - QQ^T`` with ``constraint`` ``Q``), certified.

    Parameters
    ----------
    a
        The covariance, an explicit symmetric ``p x p`` matrix, or a :class:`~spcakit.analysis.search.gram.GramMatrix`
        (:func:`gram_search_matrix`): read from its ``n x p`` factor, never formed whole; the thresholded spectrum's
        bound, which needs the whole thresholded matrix, is then not taken.
    k
        The cardinality, ``1 <= k <= p``.
    constraint
        The orthonormal ``p x t`` :math:`Q` of a generalized problem (``None``: :math:`B = I`).
    time_limit, node_limit
        Stop after this many seconds or nodes with the best support found and a bound (:attr:`Search.bound`).
    starts
        Supports of at most ``k`` variables to start from besides the warm start (another method's, e.g. the default's:
        the result is never worse than the best of them).
    warm_start
        Whether to run the warm start (greedy selection, power runs, swaps; at most :data:`WARM_START_SHARE` of the time
        limit). Without it and with ``starts``, the search only tightens the bound around them (the budgeted certificate
        of every result, :mod:`spcakit.analysis.certificate`).
    on_node
        Called as ``on_node(nodes, best_value, bound)`` every 256 nodes, with the same numbers as the
        progress reports (:func:`spcakit.output.progress.report`, after every node and at the end, to whoever
        listens): the node count and the best value never decrease, the bound never increases.
    task
        The progress reports' name (``None``: no reports; a short budgeted search inside another computation, such as
        the certificate's, draws no progress line of its own).
    spectrum
        The eigenpairs of ``a`` with the eigenvalues that may be nonzero (descending), every other one 0: for the
        covariance of ``n < p`` rows, from the ``n x n`` Gram matrix (:func:`low_rank_spectrum`) instead of a
        ``p x p`` decomposition (Golub's 7129 genes: milliseconds against about 50 s). Without a constraint only.
    """
    start = time.perf_counter()
    deadline = np.inf if time_limit is None else start + time_limit
    if task is not None:
        progress.report(f"{task} (warm start)", 0, unit="nodes")
    problem = SearchProblem(a if isinstance(a, GramMatrix) else np.asarray(a, dtype=float), int(k), constraint,
                            spectrum=spectrum)
    p = problem.p
    # the warm start's swaps take at most a quarter of the time limit: the search needs the rest
    incumbent, support = -np.inf, np.arange(0)
    if warm_start or not starts:
        incumbent, support = _warm_start(problem, np.inf if time_limit is None else start + WARM_START_SHARE * time_limit)
    for given in starts:  # the best of the warm start and the supports given (the first of equals kept)
        given = np.sort(np.asarray(given, dtype=int))
        value = problem.value(given)[0]
        if value > incumbent:
            incumbent, support = value, given
    nodes = 0
    counter = itertools.count()
    root_rhos = [share * max(float(np.abs(problem.diagonal).max(initial=0.0)), 1e-300) for share in RHO_GRID]

    def refined(included: np.ndarray, allowed: np.ndarray, rho: float | None,
                step: bool) -> tuple[float, np.ndarray | None, float | None]:  # fmt: skip
        """The eigen-decomposition bounds of a node, the weights to branch on and the threshold's rho (the parent's,
        and with ``step`` one step from it as well); once one bound prunes the node (not above the incumbent), the
        others are not computed."""
        bound, weights = np.inf, None
        enough = prune_level(incumbent)
        split_weights, split = None, np.inf
        if problem.q is None and included.any():
            bound, split_weights = problem.split_bound(included, allowed, rho)
            split = bound
            if bound > enough:
                bound = min(bound, problem.schur_bound(included, allowed, enough, bound))
            if bound <= enough:
                return bound, split_weights, rho
        eigen = np.inf  # the bounds of U's own decomposition, the threshold's yardstick
        if allowed.sum() <= EIGEN_NODE_LIMIT or problem.q is not None:
            eigen, weights = problem.top(allowed, included)
            bound = min(bound, eigen)
        if problem.q is None and bound > enough and not problem.from_data:
            if rho is None or rho > 0:
                if rho is None:
                    rhos = root_rhos
                elif step:  # the parent's rho and one step from it, up at odd depths and down at even ones
                    depth = int(included.sum()) + int(p - allowed.sum())
                    rhos = (rho, rho * RHO_STEP if depth % 2 else rho / RHO_STEP)
                else:  # the parent's allowed set: its decomposition at the parent's rho is kept
                    rhos = (rho,)
                threshold, rho, threshold_weights = problem.threshold(allowed, included, rhos, enough, deadline)
                if weights is None:
                    weights = threshold_weights
                # of little use here (not below the eigenvalue bounds by THRESHOLD_GAIN, or not below the split bound,
                # the Schur bound aside): its descendants do without. Before the Schur bound, colon 500 genes, k = 20,
                # 40 s: a gap of 6.2 % with the split bound in the rule, 6.8 % without; with the Schur bound counted
                # in the yardstick too, k = 10 took 307 nodes (2.8 s) where it takes 26 (0.5 s) so
                if threshold >= eigen * (1 - THRESHOLD_GAIN) or threshold >= split:
                    rho = 0.0
                bound = min(bound, threshold)
        return bound, split_weights if weights is None else weights, rho

    def push(bound: float, included: np.ndarray, allowed: np.ndarray, weights: np.ndarray | None, rho: float | None,
             step: bool, done: bool) -> None:  # fmt: skip
        heapq.heappush(heap, (-bound, next(counter), included, allowed, weights, rho, step, done))

    def explored(bound: float, proposal: np.ndarray | None) -> None:
        """Count a node whose bound (the largest open one) was ``bound``, evaluate the support it proposes (if any)
        and report."""
        nonlocal nodes, best_bound, incumbent, support
        nodes += 1
        best_bound = min(best_bound, max(incumbent, bound))
        if proposal is not None:
            value = problem.value(proposal)[0]
            if value > incumbent:
                incumbent, support = value, proposal
        if task is not None:
            progress.report(task, nodes, unit="nodes", best=incumbent, bound=best_bound)
        if on_node is not None and nodes % 256 == 0:
            on_node(nodes, incumbent, best_bound)

    heap: list[tuple[float, int, np.ndarray, np.ndarray, np.ndarray | None, float | None, bool, bool]] = []
    included0, allowed0 = np.zeros(p, dtype=bool), np.ones(p, dtype=bool)
    root_bound = problem.cheap_bounds(included0, allowed0)
    push(root_bound, included0, allowed0, None, None, True, False)
    # the smallest upper bound on the optimum seen so far: each popped node's bound is the largest open one
    best_bound = max(incumbent, root_bound)
    stopped = ""
    while heap:
        negative, _, included, allowed, weights, rho, step, done = heapq.heappop(heap)
        bound = -negative
        if bound <= prune_level(incumbent) + 1e-300:
            heap.clear()
            break
        if time_limit is not None and time.perf_counter() - start > time_limit:
            push(bound, included, allowed, weights, rho, step, done)
            stopped = "time limit"
            break
        if node_limit is not None and nodes >= node_limit:
            push(bound, included, allowed, weights, rho, step, done)
            stopped = "node limit"
            break
        need = problem.k - int(included.sum())
        if need in (1, 2) and problem.q is None and not done:  # one or two free places: solved by enumeration?
            solved, value, chosen = problem.completed(included, allowed & ~included, prune_level(incumbent))
            if solved:
                better = chosen is not None and value > incumbent
                explored(bound, np.sort(np.concatenate([np.flatnonzero(included), chosen])) if better else None)
                continue
        if not done:  # first in the queue with its parent's bound (the root: the cheap ones): refine, queue again
            try:
                with deadline_scope(deadline):  # a decomposition running past the limit is given up
                    tighter, weights, rho = refined(included, allowed, rho, step)
            except DeadlinePassed:  # the node keeps the bound it was queued with
                push(bound, included, allowed, weights, rho, step, done)
                stopped = "time limit"
                break
            bound = min(bound, tighter)
            if bound > prune_level(incumbent):
                push(bound, included, allowed, weights, rho, step, True)
            continue
        # a support this node proposes: I and the free variables of largest weight (then of largest variance)
        candidates = np.flatnonzero(allowed & ~included)
        weights = np.zeros(p) if weights is None else weights
        order = candidates[np.lexsort((-problem.diagonal[candidates], -weights[candidates]))]
        explored(bound, np.sort(np.concatenate([np.flatnonzero(included), order[:need]])))
        if allowed.sum() == problem.k or need == 0:
            continue  # its only support is evaluated
        if bound <= prune_level(incumbent):
            continue  # its proposal was the best it can hold
        branch = int(order[0])
        for child_included, child_allowed in ((included.copy(), allowed), (included, allowed.copy())):
            if child_included is not included:
                child_included[branch] = True
            else:
                child_allowed[branch] = False
            if child_included.sum() > problem.k or child_allowed.sum() < problem.k:
                continue
            # the child that fixes the variable in keeps its parent's allowed set and rho; the one that excludes it
            # has a new allowed set (new decompositions in any case) and also tries a step from the parent's rho
            push(bound, child_included, child_allowed, None, rho, child_allowed is not allowed, False)
    open_bound = max((-entry[0] for entry in heap), default=-np.inf)
    value, y = problem.value(support)
    vector = np.zeros(p)
    vector[support] = y
    norm = np.linalg.norm(vector)
    vector = vector / norm if norm > 0 else vector
    optimal = not stopped
    # finished: every pruned node's bound was at most prune_level(incumbent)
    bound = max(value, min(open_bound, best_bound)) if stopped else prune_level(value)
    if task is not None:
        progress.report(task, nodes, unit="nodes", best=value, bound=min(best_bound, bound))  # the outcome (gap ~0 if finished)
    bound = raised_for_rounding(bound, p, float(np.abs(problem.diagonal).max(initial=0.0)))
    return Search(support=tuple(int(i) for i in support), value=float(value), vector=vector, bound=bound,
                  optimal=optimal, nodes=nodes, seconds=time.perf_counter() - start, stopped=stopped,
                  generalized=problem.q is not None)  # fmt: skip
