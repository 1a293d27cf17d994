r"""A bound on what orthogonal sparse loadings explain together: the Lagrangian dual of the orthogonality constraint.

For orthonormal :math:`u_1, \dots, u_r` with :math:`\|u_t\|_0 \le k_t`, the projection :math:`P = \sum_t u_t u_t^\top`
has rank ``r`` and lives on the union of the supports, at most :math:`m = \sum_t k_t` variables, so for **any**
symmetric :math:`W`

.. math::

    \sum_t u_t^\top C u_t = \sum_t u_t^\top (C - W) u_t + \operatorname{tr}(WP)
        \le \sum_t \lambda^{(k_t)}(C - W) + \Lambda_r(W) =: D(W),

with :math:`\lambda^{(k)}(A)` the largest value of :math:`x^\top A x` over unit ``x`` with at most ``k`` nonzeros and
:math:`\Lambda_r(W)` the sum of the ``r`` largest eigenvalues of ``W`` (Ky Fan: :math:`\operatorname{tr}(WP) \le
\Lambda_r(W)` for a rank-``r`` orthogonal projection). For :math:`W \succeq 0` also :math:`\operatorname{tr}(WP) \le
\operatorname{tr} W_{TT} \le \sigma_m(W)`, the sum of the ``m`` largest diagonal entries of ``W`` (``T`` the union,
:math:`P_{TT} \preceq I`), which is smaller where ``W`` spreads over more than ``m`` variables; the bound takes the
least of the two. On the 500-gene lymphoma covariance (``r = 3``, ``k = 10``, so ``m = 30``) the rounds' ``W`` spreads
over 84 genes, and :math:`\sigma_{30}` took the gap (the bound's excess over what the default's loadings explain,
relative to the bound) from 5.28 % to 4.38 % (the same ``W``s: the model below keeps the trace). :math:`D` is the
Lagrangian dual of the constraint :math:`\sum_t u_t u_t^\top \preceq I`, a relaxation of orthonormality: at
:math:`W = 0` it is the sum of the sparse eigenvalues (each loading on its own), at :math:`W = C` Ky Fan's
:math:`\Lambda_r(C)` (PCA, no sparsity); in between it uses both. Its minimum over :math:`W` is the relaxation in
which each :math:`u_tu_t^\top` becomes a mixture of matrices on supports of :math:`k_t` variables and their sum stays
in the Fantope :math:`\{0 \preceq X \preceq I, \operatorname{tr} X = r\}`.

:func:`orthogonal_dual_bound` bounds each :math:`\lambda^{(k)}(C - W)` by the branch and bound of
:mod:`spcakit.analysis.search` (its bound: the optimum when it finishes, an upper bound when its node limit stops it),
so every :math:`W` it evaluates gives a valid bound, and it keeps the least. It looks for a good :math:`W` by column
generation (Kelley's cutting planes with the master problem solved in full): the supports found so far give the model

.. math::

    \hat D(W) = \operatorname{tr} W + \sum_t \max_{S} \lambda_{\max}((C - W)_{SS}), \qquad W \succeq 0,

a lower estimate of the dual in its trace form (:math:`\Lambda_r(W) \le \operatorname{tr} W` for :math:`W \succeq 0`;
dualising only :math:`\sum_t u_tu_t^\top \preceq I` gives the same minimum, since the mixtures already have trace
``r``), whose minimiser lives on the union ``U`` of the supports: the dual of the master problem, the best mixture of
loadings on those supports. It is minimised as :math:`W = LL^\top` on ``U`` (Burer & Monteiro, *Math. Programming* 95,
2003) with each maximum of eigenvalues smoothed to :math:`\mu \log\sum e^{\lambda/\mu}` (Nesterov, *Math. Programming*
103, 2005), by L-BFGS at three decreasing :math:`\mu`; the searches at its minimiser give the bound there, :math:`D(W)`
with the least of :math:`\Lambda_r` and :math:`\sigma_m`, and the next supports. Each round's searches are cheap
(:data:`PRICING_NODES`: their warm start finds the next supports); where they find none, or the model's value has
stalled, the same :math:`W` is evaluated: searched to :func:`evaluation_nodes` nodes, for a tighter bound there and the
supports the cheap searches missed. The first supports are the loadings' and those of the ``k`` largest entries of the
leading eigenvectors of :math:`C`. It stops when an evaluation finds no new support (the model's minimum is then
:math:`D`'s, as far as the searches' limit tells), when the bound reaches what the loadings explain, or after
:data:`DUAL_ROUNDS` rounds or :data:`EVALUATIONS` evaluations. It is the joint bound of ``bound="certify"`` under
``constraint="orthogonal"`` (:func:`spcakit.analysis.certificate.certify`).

**How tight the relaxation is.** The master problem's value, the most any mixture on the supports found explains, is a
lower bound on the relaxation with :math:`\Lambda_r` (it restricts the mixtures), so it says how far no :math:`W` can go
there. Solved with a conic solver after about 30 rounds (not part of spcakit: a measurement), it is 7.1 % above what the
default's loadings explain on the digits (``r = 5``, ``k = 10``) and 5.4 % above on the 500-gene lymphoma covariance
(``r = 3``, ``k = 10``): with :math:`\Lambda_r` alone no :math:`W` proves a gap below 6.6 % and 5.1 % there.
:math:`\sigma_m` is such a tighter relaxation (4.38 % on the lymphoma covariance); it does nothing on the digits, where
the supports found cover 45 variables, fewer than ``m = 50``. On the digits the evaluations' searches must finish to
approach that: many supports nearly tie at the rounds' ``W``, and a search proves its optimum only after about 17 000
nodes (:data:`DUAL_NODES`); stopped at 5000, the bound was 10.45 % above the loadings' variance where the model said
6.3 %, and finished it is 6.98 %.
"""

from __future__ import annotations

import numpy as np

from spcakit.analysis.bounds import as_operator, raised_for_rounding
from spcakit.numerics import ties
from spcakit.numerics.linalg import sum_of_largest
from spcakit.numerics.operators import densify
from spcakit.output import progress

__all__ = ["DUAL_LIMIT", "DUAL_NODES", "DUAL_ROUNDS", "PRICING_NODES", "evaluation_nodes", "orthogonal_dual_bound"]

#: :func:`orthogonal_dual_bound` runs up to this many variables (each round forms and searches the ``p x p`` C - W).
DUAL_LIMIT = 1000
#: Most rounds (each a master problem and one branch and bound per distinct cardinality): counts, not times, so that
#: the bound is the same on every machine.
DUAL_ROUNDS = 100
#: Each round's branch and bound explores at most this many nodes (its warm start, then a few nodes): the next
#: supports, found cheaply, and a bound all the same where it stops.
PRICING_NODES = 50
#: An evaluation's branch and bound explores at most this many nodes (up to :data:`DEEP_VARIABLES` variables; see
#: :func:`evaluation_nodes`): where a round's cheap searches find no new support, or the model has stalled (below), the
#: same W is searched this deep, for a tighter bound there and the supports the cheap searches missed. Measured on the
#: digits (r = 5, k = 10, the default's loadings, the gap relative to the bound): at 5000 nodes the evaluations
#: stopped at their limit and the bound stayed 10.45 % above what the loadings explain (231 s); their searches finish
#: in 16 860 nodes and more (70-115 s each), and at this limit, as at 50 000, all six finish and the bound leaves
#: 6.98 % (570-600 s). With every round searching 5000 nodes the digits were at 10.3 % after 15 rounds (330 s); with
#: every round searching 2000 nodes still above the Fantope bound's 11.6 % after 5 rounds.
DUAL_NODES = 20000
#: Up to this many variables an evaluation searches :data:`DUAL_NODES` nodes; above, a node costs more (it bounds
#: every free variable), and the limit falls in proportion to ``p``, to :data:`LEAST_DUAL_NODES`.
DEEP_VARIABLES = 64
#: The least node limit of an evaluation (from ``4 * DEEP_VARIABLES`` variables on). On the 500-gene lymphoma and
#: colon covariances every evaluation's search finishes below it.
LEAST_DUAL_NODES = 5000
#: The model has stalled when its value at W rose by at most this (relative) over the last :data:`STALL_ROUNDS`
#: rounds.
STALL_RTOL = 3e-4
STALL_ROUNDS = 3
#: Most evaluations.
EVALUATIONS = 6
#: The first supports: the loadings' and, per loading, this many of C's leading eigenvectors' ``k`` largest entries.
#: Measured on the 500-gene lymphoma covariance (r = 3, k = 10) while the master's W was still any symmetric matrix:
#: the loadings' supports alone gave a first model whose minimiser the searches rejected at once (the bound 42 % above
#: what the loadings explain after the first round, 25 % with these; 25 % with them for W = LL^T as well).
START_EIGENVECTORS = 3
#: The smoothing of the model's maxima, relative to the mean variance of a loading (see the code), in the order used
#: (each minimisation starts from the last one's minimiser).
SMOOTHING = (1e-2, 1e-3, 1e-4)
#: L-BFGS iterations per smoothing.
MASTER_ITERATIONS = 500
#: Evaluations after which a dual still above the ``ceiling`` it was given, with a search stopped by its node limit,
#: gives up (the other bounds are then kept).
PATIENCE = 2
TASK = "orthogonal bound"


def evaluation_nodes(p: int) -> int:
    """The node limit of an evaluation's branch and bound on ``p`` variables: :data:`DUAL_NODES` up to
    :data:`DEEP_VARIABLES`, then falling in proportion to ``p`` to :data:`LEAST_DUAL_NODES` (a count: the same bound on
    every machine)."""
    return int(max(LEAST_DUAL_NODES, min(DUAL_NODES, DUAL_NODES * DEEP_VARIABLES // max(p, 1))))


def orthogonal_dual_bound(covariance: object, loadings: np.ndarray, *, rounds: int = DUAL_ROUNDS,
                          nodes: int | None = None, ceiling: float = np.inf, diagonal: bool = True
                          ) -> float | None:  # fmt: skip
    r"""An upper bound on :math:`\sum_t u_t^\top C u_t` over orthonormal ``u_1..u_r`` with the ``loadings``' cardinalities
    (the least :math:`D(W)` of the module the rounds met, raised for rounding); ``None`` above
    :data:`DUAL_LIMIT` variables, for loadings with a zero column or a covariance with a zero diagonal, and when it
    is still above ``ceiling`` after :data:`PATIENCE` evaluations with a search stopped by its node limit.

    Parameters
    ----------
    covariance
        A symmetric ``p x p`` matrix (not necessarily positive semi-definite) or a
        :class:`~spcakit.numerics.operators.CovarianceOperator` (formed).
    loadings
        ``p x r`` loadings: their cardinalities set the problem; their supports are among the first, and the variance
        they explain together sets the smoothing's scale and ends the rounds where the bound reaches it.
    rounds, nodes
        Most rounds, and the node limit of an evaluation's branch and bound (each round's searches take at most
        :data:`PRICING_NODES` of them; ``None``: :func:`evaluation_nodes` of ``p``).
    ceiling
        A bound already known (e.g. the certificate's): where the dual is still above it after :data:`PATIENCE`
        evaluations and an evaluation's search stopped at its node limit (a loose :math:`\lambda^{(k)}(C - W)`), it
        gives up.
    diagonal
        Bound :math:`\operatorname{tr}(WP)` by the least of :math:`\Lambda_r(W)` and :math:`\sigma_m(W)` (the default);
        ``False``: by Ky Fan's :math:`\Lambda_r(W)` alone, the relaxation without the loadings' few variables (to
        measure what :math:`\sigma_m` adds).
    """
    c = densify(as_operator(covariance))  # an array: checked square and symmetrised
    c = (c + c.T) / 2  # an operator's dense form, as the search needs it (an array's: unchanged, exactly)
    x = np.asarray(loadings, dtype=float)
    p, r = x.shape
    cardinalities = np.count_nonzero(x, axis=0)
    if p > DUAL_LIMIT or r == 0 or not np.all(cardinalities):
        return None
    nodes = evaluation_nodes(p) if nodes is None else nodes
    scale = float(np.abs(np.diagonal(c)).max(initial=0.0))
    if scale == 0.0:  # a zero diagonal: the search's scale is undefined, and the other bounds say all there is
        return None
    exponent = int(np.frexp(scale)[1])  # the search squares entries: it runs on C / 2^e (exact), its bound times 2^e
    c = np.ldexp(c, -exponent)
    largest = float(np.abs(c).max())
    u = x / np.linalg.norm(x, axis=0)
    target = float(np.einsum("ij,ij->", u, c @ u))
    counts = {int(k): int(np.count_nonzero(cardinalities == k)) for k in np.unique(cardinalities)}
    room_size = int(cardinalities.sum())  # the loadings' supports together: at most this many variables
    cuts = {k: _first_supports(c, u, cardinalities, k, r) for k in counts}
    # at least r variables of the largest variances: the model's mixtures (with singletons, below) then fit in the
    # Fantope, and its minimum is finite
    padding = np.argsort(-np.diagonal(c), kind="stable")[:r]
    union = _union(cuts, padding)
    factor = np.zeros((union.size, union.size))
    # the smoothing's scale: a loading's mean variance (the largest variance over 1000 where that is smaller: loadings
    # that explain nothing)
    smoothing = max(abs(target) / r, 1e-3 * float(np.abs(np.diagonal(c)).max()))
    least = np.inf
    models: list[float] = []  # the model's value at each W since the last evaluation
    evaluations = 0
    for round_ in range(rounds):
        factor = _master_factor(c, union, cuts, counts, factor, smoothing)
        weights = factor @ factor.T
        # the searches bound the computed A = C - W, whose W differs from L L^T by the rounding of forming both: this
        # much per unit of tr(WP)'s bound
        slack = 8 * (p + union.size) * np.finfo(float).eps * (largest + float(np.linalg.norm(weights, 2)))
        # tr(WP) <= Lambda_r(W): W = LL^T is positive semi-definite (its rounding below 0 counted as 0), U holds r
        # variables at least; and <= the sum of W's m largest diagonal entries (P lives on at most m variables)
        ky_fan = float(np.clip(np.linalg.eigvalsh(weights)[::-1][:r], 0.0, None).sum()) + r * slack
        room = ky_fan
        if diagonal:
            room = min(room, sum_of_largest(np.diagonal(weights), room_size) + (room_size + r) * slack)
        a = c.copy()
        a[np.ix_(union, union)] -= weights
        models.append(_model_value(a, weights, union, cuts, counts))
        stalled = (len(models) > STALL_ROUNDS
                   and models[-1] - models[-1 - STALL_ROUNDS] <= STALL_RTOL * abs(models[-1]))  # fmt: skip
        pricing = min(PRICING_NODES, nodes)
        total, new, limited = _searched(a, cuts, counts, pricing)
        # an evaluation: the same W searched deeper (where the cheap searches stopped at their limit), for a tighter
        # bound and the supports they missed; with no deeper search left, every round is one
        evaluated = limited and (pricing == nodes or new == 0 or stalled or round_ == rounds - 1)
        if evaluated:
            evaluations += 1
            models.clear()
            if pricing < nodes:
                deeper, missed, limited = _searched(a, cuts, counts, nodes)
                total, new = min(total, deeper), new + missed
        least = min(least, room + total)
        progress.report(TASK, round_ + 1, unit="rounds", best=float(np.ldexp(target, exponent)),
                        bound=float(np.ldexp(least, exponent)))  # fmt: skip
        if least <= target or new == 0 or evaluations >= EVALUATIONS:
            break
        if (evaluated and limited and evaluations >= PATIENCE
                and raised_for_rounding(float(np.ldexp(least, exponent)), p, scale, factor=16) >= ceiling):
            return None
        grown = _union(cuts, padding)
        if grown.size > union.size:  # the factor on the larger union: zero rows for the new variables
            wider = np.zeros((grown.size, grown.size))
            wider[np.searchsorted(grown, union), : union.size] = factor
            union, factor = grown, wider
    return raised_for_rounding(float(np.ldexp(least, exponent)), p, scale, factor=16)


def _first_supports(c: np.ndarray, u: np.ndarray, cardinalities: np.ndarray, k: int, r: int) -> list[np.ndarray]:
    """The first supports of cardinality ``k``: those of the loadings with ``k`` nonzeros, then the ``k`` largest
    entries (in magnitude, ties by :mod:`spcakit.numerics.ties`) of :data:`START_EIGENVECTORS` leading eigenvectors of
    ``c`` per loading, each once."""
    supports = [np.flatnonzero(u[:, t]) for t in range(r) if cardinalities[t] == k]
    vectors = np.linalg.eigh(c)[1][:, ::-1]
    for i in range(min(c.shape[0], START_EIGENVECTORS * r)):
        support = np.sort(ties.top_k(np.abs(vectors[:, i]), k))
        if not any(np.array_equal(support, other) for other in supports):
            supports.append(support)
    return supports


def _searched(a: np.ndarray, cuts: dict[int, list[np.ndarray]], counts: dict[int, int], nodes: int
              ) -> tuple[float, int, bool]:  # fmt: skip
    """Each cardinality's branch and bound on ``a`` (at most ``nodes`` nodes, from its first support): the sum of their
    bounds times the counts, how many new supports they found (added to ``cuts``), and whether one stopped at its
    limit."""
    from spcakit.analysis.search import branch_and_bound

    total, new, limited = 0.0, 0, False
    for k, count in counts.items():
        found = branch_and_bound(a, k, starts=[cuts[k][0]], node_limit=nodes, task=None)
        limited = limited or not found.optimal
        total += count * float(found.bound)
        support = np.asarray(found.support, dtype=int)
        if not any(np.array_equal(support, cut) for cut in cuts[k]):
            cuts[k].append(support)
            new += 1
    return total, new, limited


def _model_value(a: np.ndarray, weights: np.ndarray, union: np.ndarray, cuts: dict[int, list[np.ndarray]],
                 counts: dict[int, int]) -> float:  # fmt: skip
    r"""The model at ``W`` (``a`` = C - W): :math:`\operatorname{tr} W + \sum_k n_k \max_S \lambda_{\max}(A_{SS})`
    over the supports found and the singletons of the union, a lower estimate of the dual there."""
    value = float(np.trace(weights))
    singletons = float(np.diagonal(a)[union].max())
    for k, count in counts.items():
        tops = np.linalg.eigvalsh(np.stack([a[np.ix_(cut, cut)] for cut in cuts[k]]))[:, -1]
        value += count * max(float(tops.max()), singletons)
    return value


def _union(cuts: dict[int, list[np.ndarray]], padding: np.ndarray) -> np.ndarray:
    return np.unique(np.concatenate([padding, *(cut for group in cuts.values() for cut in group)]))


def _master_factor(c: np.ndarray, union: np.ndarray, cuts: dict[int, list[np.ndarray]], counts: dict[int, int],
                   start: np.ndarray, smoothing: float) -> np.ndarray:  # fmt: skip
    r"""``L`` (``|U| x |U|``) minimising the smoothed model :math:`\operatorname{tr}(LL^\top) + \sum_k n_k\,\mu
    \log\sum_{S, i} \exp(\lambda_i((C - LL^\top)_{SS}) / \mu)` (the supports ``S`` of cardinality ``k`` found and
    the singletons of ``U``) from ``start`` (the identity times a third of the
    smoothing's scale where it is zero: ``L = 0`` is a stationary point), by L-BFGS at each :data:`SMOOTHING`."""
    from scipy.optimize import minimize
    from scipy.special import logsumexp

    m = union.size
    diagonal = np.diagonal(c)[union]  # the singletons {i}, i in U: supports of every cardinality
    blocks = {}
    for k in counts:  # per cardinality: every cut's position in U and its block of C (one batched decomposition)
        index = np.searchsorted(union, np.stack(cuts[k]))
        blocks[k] = (index, np.stack([c[np.ix_(cut, cut)] for cut in cuts[k]]))

    def model(flat: np.ndarray, mu: float) -> tuple[float, np.ndarray]:
        factor = flat.reshape(m, m)
        weights = factor @ factor.T
        value = float(np.sum(factor * factor))
        gradient = np.zeros((m, m))  # in W
        for k, count in counts.items():
            index, c_blocks = blocks[k]
            block_values, block_vectors = np.linalg.eigh(c_blocks - weights[index[:, :, None], index[:, None, :]])
            scaled = np.concatenate([block_values.ravel(), diagonal - np.diagonal(weights)]) / mu
            top = logsumexp(scaled)
            value += count * mu * top
            shares = np.exp(scaled - top)
            pieces = np.einsum("nik,nk,njk->nij", block_vectors, shares[: block_values.size].reshape(block_values.shape),
                               block_vectors)  # fmt: skip
            np.add.at(gradient, (index[:, :, None], index[:, None, :]), -count * pieces)
            gradient[np.diag_indices(m)] -= count * shares[block_values.size :]
        return value, (2 * gradient @ factor + 2 * factor).ravel()

    flat = (start if np.any(start) else np.sqrt(smoothing) / 3 * np.eye(m)).ravel()
    for share in SMOOTHING:
        flat = minimize(model, flat, args=(share * smoothing,), jac=True, method="L-BFGS-B",
                        options={"maxiter": MASTER_ITERATIONS}).x  # fmt: skip
    return flat.reshape(m, m)
