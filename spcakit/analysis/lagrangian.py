r"""A bound on what orthogonal sparse loadings explain together: the Lagrangian dual of the orthogonality constraint.

For orthonormal :math:`u_1, \dots, u_r` with :math:`\|u_t\|_0 \le k_t`, the projection :math:`P = \sum_t u_t u_t^\top`
has rank ``r``, so for **any** symmetric :math:`W`

.. math::

    \sum_t u_t^\top C u_t = \sum_t u_t^\top (C - W) u_t + \operatorname{tr}(WP)
        \le \sum_t \lambda^{(k_t)}(C - W) + \Lambda_r(W) =: D(W),

with :math:`\lambda^{(k)}(A)` the largest value of :math:`x^\top A x` over unit ``x`` with at most ``k`` nonzeros and
:math:`\Lambda_r(W)` the sum of the ``r`` largest eigenvalues of ``W`` (Ky Fan: :math:`\operatorname{tr}(WP) \le
\Lambda_r(W)` for a rank-``r`` orthogonal projection). :math:`D` is the Lagrangian dual of the constraint
:math:`\sum_t u_t u_t^\top \preceq I`, a relaxation of orthonormality: at :math:`W = 0` it is the sum of the sparse
eigenvalues (each loading on its own), at :math:`W = C` Ky Fan's :math:`\Lambda_r(C)` (PCA, no sparsity); in between it
uses both. Its minimum over :math:`W` is the relaxation in which each :math:`u_tu_t^\top` becomes a mixture of
matrices on supports of :math:`k_t` variables and their sum stays in the Fantope :math:`\{0 \preceq X \preceq I,
\operatorname{tr} X = r\}`.

:func:`orthogonal_dual_bound` bounds each :math:`\lambda^{(k)}(C - W)` by the branch and bound of
:mod:`spcakit.analysis.search` (its bound: the optimum when it finishes, an upper bound when its node limit stops it),
so every :math:`W` it evaluates gives a valid bound, and it keeps the least. It looks for a good :math:`W` by cutting
planes (Kelley's method): the supports the searches found so far give the model
:math:`\hat D(W) = \Lambda_r(W) + \sum_t \max_{S} \lambda_{\max}((C - W)_{SS})`, a lower estimate of :math:`D`
that costs ``k x k`` eigenvalues only; subgradient steps with Polyak's step length (Polyak, *Introduction to
Optimization*, 1987, §5.3; aimed at the variance the loadings explain) minimise it over :math:`W = QMQ^\top`, ``Q`` an
orthonormal basis of the loadings and the leading eigenvectors of :math:`C`; the searches at the model's best ``W``
give the bound there and the next supports. It stops when they find no new support (the model's minimum is then
:math:`D`'s on that subspace) or after :data:`DUAL_ROUNDS` rounds. It is the joint bound of ``bound="certify"`` under ``constraint="orthogonal"``
(:func:`spcakit.analysis.certificate.certify`), where the Fantope bound of :mod:`spcakit.analysis.fantope` leaves
5-13 % on the quality panel.
"""

from __future__ import annotations

import numpy as np

from spcakit.analysis.bounds import as_operator, raised_for_rounding
from spcakit.numerics.operators import densify
from spcakit.output import progress

__all__ = ["DUAL_LIMIT", "DUAL_NODES", "DUAL_ROUNDS", "orthogonal_dual_bound"]

#: :func:`orthogonal_dual_bound` runs up to this many variables (each round forms and searches the ``p x p`` C - W).
DUAL_LIMIT = 1000
#: Most rounds (each one branch and bound per distinct cardinality): counts, not times, so that the bound is the same
#: on every machine.
DUAL_ROUNDS = 30
#: Subgradient steps on the model per round.
MODEL_STEPS = 200
#: Each round's branch and bound explores at most this many nodes (a bound all the same where it stops).
DUAL_NODES = 2000
#: The share of Polyak's step taken (its full length overshoots: the target is below the model's minimum).
POLYAK_SHARE = 0.5
#: ``Q`` holds the loadings and this many leading eigenvectors of C per loading (all of them on small problems).
#: Measured on the 500-gene lymphoma covariance (r = 3, k = 10): 2 per loading left 9.9 %, 10 left 8.5 %, 30 7.6 %.
EIGENVECTORS_PER_LOADING = 10
#: Rounds after which a dual still above the ``ceiling`` it was given, with searches stopped by their node limit,
#: gives up: on the digits (p = 64, r = 5, k = 10) they stop there and it stays above the Fantope bound (5 rounds:
#: 19.7 % against 11.8 %); on Pitprops (p = 13, r = 5) the searches finish and it passes the Fantope bound at round 14.
PATIENCE = 5
TASK = "orthogonal bound"


def orthogonal_dual_bound(covariance: object, loadings: np.ndarray, *, rounds: int = DUAL_ROUNDS,
                          nodes: int = DUAL_NODES, ceiling: float = np.inf) -> float | None:  # fmt: skip
    r"""An upper bound on :math:`\sum_t u_t^\top C u_t` over orthonormal ``u_1..u_r`` with the ``loadings``' cardinalities
    (the least :math:`D(W)` of the module the cutting planes met, raised for rounding); ``None`` above
    :data:`DUAL_LIMIT` variables, for loadings with a zero column or a covariance with a zero diagonal, and when it
    is still above ``ceiling`` after :data:`PATIENCE` rounds with a search stopped by its node limit.

    Parameters
    ----------
    covariance
        A symmetric ``p x p`` matrix (not necessarily positive semi-definite) or a
        :class:`~spcakit.numerics.operators.CovarianceOperator` (formed).
    loadings
        ``p x r`` loadings: their cardinalities set the problem; their supports are the first cutting planes and the
        variance they explain together aims the steps.
    rounds, nodes
        Most rounds, and the node limit of each round's branch and bound.
    ceiling
        A bound already known (e.g. the certificate's): where the dual is still above it after :data:`PATIENCE` rounds
        and a round's search stopped at its node limit (a loose :math:`\lambda^{(k)}(C - W)`), it gives up.
    """
    from spcakit.analysis.search import branch_and_bound

    c = densify(as_operator(covariance))  # an array: checked square and symmetrised
    c = (c + c.T) / 2  # an operator's dense form, as the search needs it (an array's: unchanged, exactly)
    x = np.asarray(loadings, dtype=float)
    p, r = x.shape
    cardinalities = np.count_nonzero(x, axis=0)
    if p > DUAL_LIMIT or r == 0 or not np.all(cardinalities):
        return None
    scale = float(np.abs(np.diagonal(c)).max(initial=0.0))
    if scale == 0.0:  # a zero diagonal: the search's scale is undefined, and the other bounds say all there is
        return None
    exponent = int(np.frexp(scale)[1])  # the search squares entries: it runs on C / 2^e (exact), its bound times 2^e
    c = np.ldexp(c, -exponent)
    largest = float(np.abs(c).max())
    u = x / np.linalg.norm(x, axis=0)
    target = float(np.einsum("ij,ij->", u, c @ u))
    vectors = np.linalg.eigh(c)[1][:, ::-1]
    basis, singular, _ = np.linalg.svd(np.hstack([u, vectors[:, : min(p, EIGENVECTORS_PER_LOADING * r)]]),
                                       full_matrices=False)  # fmt: skip
    basis = basis[:, singular > singular[0] * p * np.finfo(float).eps]
    counts = {int(k): int(np.count_nonzero(cardinalities == k)) for k in np.unique(cardinalities)}
    cuts = {k: [np.flatnonzero(u[:, t]) for t in range(r) if cardinalities[t] == k] for k in counts}
    weights = np.zeros((basis.shape[1], basis.shape[1]))
    least = np.inf
    for round_ in range(rounds):
        weights = _model_minimum(c, basis, weights, cuts, counts, r, target)
        # the searches bound the computed A = C - W, whose W differs from QMQ^T by the rounding of forming both
        slack = 8 * (p + basis.shape[1]) * np.finfo(float).eps * r * (largest + float(np.linalg.norm(weights, 2)))
        total = _top_sum(weights, r, p)[0] + slack
        a = c - basis @ weights @ basis.T
        new, limited = 0, False
        for k, count in counts.items():
            found = branch_and_bound(a, k, starts=[cuts[k][-1]], node_limit=nodes, task=None)
            limited = limited or not found.optimal
            total += count * float(found.bound)
            support = np.asarray(found.support, dtype=int)
            if not any(np.array_equal(support, cut) for cut in cuts[k]):
                cuts[k].append(support)
                new += 1
        least = min(least, total)
        progress.report(TASK, round_ + 1, unit="rounds", best=float(np.ldexp(target, exponent)),
                        bound=float(np.ldexp(least, exponent)))  # fmt: skip
        if new == 0 or least <= target:
            break
        if (limited and round_ + 1 >= PATIENCE
                and raised_for_rounding(float(np.ldexp(least, exponent)), p, scale, factor=16) >= ceiling):
            return None
    return raised_for_rounding(float(np.ldexp(least, exponent)), p, scale, factor=16)


def _top_sum(weights: np.ndarray, r: int, p: int) -> tuple[float, np.ndarray]:
    r""":math:`\Lambda_r(QMQ^\top)` for ``M`` = ``weights`` (its eigenvalues and ``p - m`` zeros) and a subgradient in
    ``M``: :math:`E E^\top` for the eigenvectors ``E`` of ``M`` among the ``r`` largest."""
    m = weights.shape[0]
    values, vectors = np.linalg.eigh(weights)
    spectrum = np.concatenate([values, np.zeros(min(r, p - m))])
    top = np.argsort(-spectrum, kind="stable")[:r]
    inside = top[top < m]
    return float(spectrum[top].sum()), vectors[:, inside] @ vectors[:, inside].T


def _model_minimum(c: np.ndarray, basis: np.ndarray, weights: np.ndarray, cuts: dict[int, list[np.ndarray]],
                   counts: dict[int, int], r: int, target: float) -> np.ndarray:  # fmt: skip
    r"""The best ``M`` of :data:`MODEL_STEPS` Polyak steps on the model :math:`\hat D` from ``weights``: per
    cardinality, every cut's ``k x k`` block :math:`C_{SS} - Q_SMQ_S^\top` at once (one batched eigen-decomposition)."""
    blocks = {k: (np.stack([c[np.ix_(cut, cut)] for cut in cuts[k]]), np.stack([basis[cut] for cut in cuts[k]]))
              for k in counts}  # fmt: skip
    best, best_value = weights, np.inf
    for _ in range(MODEL_STEPS):
        value, gradient = _top_sum(weights, r, c.shape[0])
        for k, count in counts.items():
            c_blocks, q_blocks = blocks[k]
            shifted = c_blocks - q_blocks @ weights @ q_blocks.transpose(0, 2, 1)
            block_values, block_vectors = np.linalg.eigh((shifted + shifted.transpose(0, 2, 1)) / 2)
            winner = int(np.argmax(block_values[:, -1]))
            value += count * float(block_values[winner, -1])
            coordinates = q_blocks[winner].T @ block_vectors[winner, :, -1]
            gradient = gradient - count * np.outer(coordinates, coordinates)
        if value < best_value:
            best, best_value = weights, value
        norm2 = float(np.sum(gradient * gradient))
        if norm2 == 0.0 or value <= target:
            break
        weights = weights - POLYAK_SHARE * (value - target) / norm2 * gradient
        weights = (weights + weights.T) / 2
    return best
