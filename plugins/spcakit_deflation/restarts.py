r"""``restarted-power``: truncated power iterations from several random starts drawn in the sample space.

Truncated power iterations (TPower, Yuan & Zhang 2013) end at a local optimum that depends on the
start; R's nsprcomp restarts each component from random starts and keeps the best. A start drawn
variable by variable would make the result depend on the order of the variables. This solver draws
its starts in the sample space instead: for data :math:`A` (``n x p``) with :math:`A = U\Sigma V^\top`,
:math:`A^\top g = V\Sigma U^\top g` with :math:`g \sim N(0, I_n)` has the distribution of
:math:`V\Sigma h`, :math:`h \sim N(0, I)`, so each start is

.. math::

    x_0 = \sum_{i \le m} \sqrt{\lambda_i}\, h_i\, v_i , \qquad h \sim N(0, I_m),

over the ``m`` leading eigenpairs :math:`(\lambda_i, v_i)` of the round's covariance that are uniquely
defined (distinct eigenvalues, each eigenvector's sign fixed by the values: :math:`\sum_j v_{ij}^3 > 0`),
with :math:`h` drawn from a generator seeded by the part's ``start_seed``. A permutation of the variables
permutes every start, so the result does not depend on the order of the variables. Each start runs
truncated power iterations (:func:`truncated_power`); every support
it ends on is scored by the best value on it, the largest generalized eigenvalue of
:math:`(A_{SS}, B_{SS})` (with Mackey's generalized deflation, the variance the loading adds to the
earlier ones), and the best is kept (ties: the earlier start). The first start is the truncated leading
eigenvector (Yuan & Zhang's recommended start).

Cost per round: ``m`` leading eigenpairs and ``starts`` power runs.
"""

from __future__ import annotations

import attrs
import numpy as np

from spcakit.plugin_api import (
    Carry,
    Problem,
    SparsityTruncation,
    Updater,
    boolean,
    check_cardinality,
    constraint_submatrix,
    generalized_top,
    integer,
    part,
    positive,
    positive_int,
    ties,
    to_float,
    to_int,
    top_eigenpairs,
    truncate_nonnegative,
)

PAPER = "Yuan & Zhang - Truncated Power Method for Sparse Eigenvalue Problems (JMLR 2013); restarts as nsprcomp's"

#: A power run jumps to the leading eigenvector on its support once the support has held this many steps ...
FINISH_AFTER = 3
#: ... and its last step moved it by less than this. Tighter than the ``power`` updater's 1e-2: with 40 starts per
#: round some start is always near a support it would still leave (1e-2 ended lower on random covariances).
FINISH_TOL = 1e-3

#: Eigenvalues closer than this (relative to the largest) count as repeated: their eigenvectors are not unique.
REPEATED_RTOL = 1e-8


def truncated_power(
    problem: Problem, x0: np.ndarray, k: int, tol: float = 1e-9, max_iter: int = 300, nonnegative: bool = False,
    finish_after: int = FINISH_AFTER,
) -> np.ndarray:
    r"""Truncated power iterations :math:`x \leftarrow T_k(Ax)/\|T_k(Ax)\|` from every column of ``x0`` at once,
    each until its support is fixed and its unit iterate moves less than ``tol`` (or after ``max_iter`` products).

    :math:`T_k` keeps the ``k`` entries of largest magnitude (ties by :mod:`spcakit.numerics.ties`); with
    ``nonnegative``, the ``k`` largest entries of the side of :math:`Ax` (:math:`+` or :math:`-`) whose
    kept part has the larger norm (:func:`spcakit.parts.nonnegative.truncate_nonnegative`). Returns the
    last unit iterates, one column per start (a start with :math:`Ax_0 = 0` returned normalised). The
    starts run side by side: one product :math:`AX` per step for the columns still moving (a ``p x s``
    product instead of ``s`` matrix-vector products), each column exactly the iteration it would run alone.

    **Finishing on the support** (as the ``power`` updater's ``finish_after``, issue 27): once a column's
    support has held for ``finish_after`` steps and its last step moved it by less than
    :data:`FINISH_TOL`, the iteration on that support is the power method on
    :math:`A_{SS}`, whose limit is :math:`A_{SS}`'s leading eigenvector :math:`v`; the column jumps there
    (signed like the iterate). The next product checks it: if the truncation keeps :math:`S`, :math:`v`
    is the fixed point and the column settles (it moves by rounding only); if not, the iteration goes on
    from the truncated product. ``finish_after=0`` never jumps, nor does a ``nonnegative`` run (the leading
    eigenvector on a support may have entries of both signs).
    """
    x = np.array(x0, dtype=float).reshape(x0.shape[0], -1)
    x /= np.linalg.norm(x, axis=0)
    support = x != 0
    held = np.zeros(x.shape[1], dtype=int)  # steps each column's support has held
    active = np.arange(x.shape[1])
    for _ in range(max_iter):
        if active.size == 0:
            break
        current = x[:, active]
        z = problem.covariance.matmat(current)
        if nonnegative:
            new = truncate_nonnegative(z, SparsityTruncation(k=k))
            keep = new != 0
        else:
            keep = ties.top_k_mask(np.abs(z), k)
            new = np.where(keep, z, 0.0)
        norms = np.linalg.norm(new, axis=0)
        alive = norms > 0  # else A x = 0 on the kept entries: the iterate stays as it is
        new[:, alive] /= norms[alive]
        new[:, ~alive] = current[:, ~alive]
        keep[:, ~alive] = support[:, active[~alive]]
        same = np.all(keep == support[:, active], axis=0)
        moved = np.linalg.norm(new - current, axis=0)
        settled = ~alive | (same & (moved < tol))
        held[active] = np.where(same, held[active] + 1, 0)
        if finish_after and not nonnegative:  # the non-negative iteration's fixed point is no eigenvector
            jump = alive & ~settled & (held[active] >= finish_after) & (moved < FINISH_TOL)
            for column in np.flatnonzero(jump):
                rows = np.flatnonzero(keep[:, column])
                vector = np.linalg.eigh(problem.covariance.submatrix(rows))[1][:, -1]
                signed = -vector if float(vector @ new[rows, column]) < 0 else vector
                new[:, column] = 0.0
                new[rows, column] = signed
                held[active[column]] = 0  # the next product checks the jump
        x[:, active], support[:, active] = new, keep
        active = active[~settled]
    return x


def unique_leading_pairs(problem: Problem, m: int) -> tuple[np.ndarray, np.ndarray]:
    """The leading eigenpairs of the problem's covariance, at most ``m``, down to the first repeated
    eigenvalue (exclusive) or the first that is not positive; each eigenvector's sign fixed so that the
    sum of the cubes of its entries is positive (a property of the values)."""
    values, vectors = top_eigenpairs(problem.covariance, min(m + 1, problem.p))
    top = max(float(values[0]), 0.0)
    count = 0
    while count < min(m, values.size) and values[count] > REPEATED_RTOL * top * problem.p:
        distinct_above = count == 0 or values[count - 1] - values[count] > REPEATED_RTOL * top
        distinct_below = count + 1 >= values.size or values[count] - values[count + 1] > REPEATED_RTOL * top
        if not (distinct_above and distinct_below):
            break
        count += 1
    vectors = vectors[:, :count] * np.where(np.sum(vectors[:, :count] ** 3, axis=0) < 0, -1.0, 1.0)
    return np.clip(values[:count], 0.0, None), vectors


def one_signed_top(a_ss: np.ndarray, b_ss: np.ndarray, end: np.ndarray) -> tuple[float, np.ndarray]:
    r"""The best loading of one sign on a support, of the two at hand: ``(value, y)`` with :math:`y \ge 0`.

    The largest generalized eigenpair :math:`(A_{SS}, B_{SS})` (:func:`~spcakit.numerics.linalg.generalized_top`) when its
    vector has one sign (it is then the optimum on the support, non-negative or not); else the power run's end
    ``end`` (its entries on the support, of one sign), valued by its generalized Rayleigh quotient
    :math:`y^\top A_{SS} y / y^\top B_{SS} y`.
    """
    value, y = generalized_top(a_ss, b_ss)
    y = y if float(np.sum(y)) >= 0 else -y
    if y.size and np.all(y >= -1e-12 * float(np.max(np.abs(y), initial=0.0))) and np.any(y > 0):
        return float(value), np.maximum(y, 0.0)
    y = np.abs(end)
    bnorm = float(y @ b_ss @ y)
    return (float(y @ a_ss @ y) / bnorm if bnorm > 1e-12 else 0.0), y


@part("restarted-power", paper=PAPER, k="k")
class RestartedPowerSolver(Updater):
    r"""rank-one solver: truncated power iterations from the truncated u_1 and from random sample-space starts; best support kept

    See :mod:`spcakit_deflation.restarts`. Order-free: the starts are drawn over the leading
    eigenpairs, not over the variables; reproducible: the draws come from ``start_seed`` (not the run's
    ``seed``: the same starts whatever the run's seed, so that ``auto`` is deterministic).

    Parameters
    ----------
    k
        The cardinality, an integer in ``[1, p]`` (checked against ``p`` when run).
    starts
        The number of starts: the truncated leading eigenvector and ``starts - 1`` random ones (40: on
        the quality panel's gene data more starts changed nothing, fewer lost variance).
    rank
        The most leading eigenpairs the random starts combine.
    start_seed
        Seed of the generator of the random combinations (the same draws in every round).
    tol, max_iter
        A power run stops once its support is fixed and the unit loading moves less than ``tol``, or
        after ``max_iter`` products.
    nonnegative
        Keep the loading of one sign (non-negative once :func:`spcakit.fit` fixes its sign;
        ``fit(nonnegative=True)`` sets it): every power step truncates as the ``nonnegative`` truncator
        does (:mod:`spcakit.parts.nonnegative`), and a support is scored by the best loading of one sign
        found on it (:func:`one_signed_top`).
    """

    k: int | None = attrs.field(default=None, converter=to_int)
    starts: int = attrs.field(default=40, converter=to_int, validator=positive_int)
    rank: int = attrs.field(default=20, converter=to_int, validator=positive_int)
    start_seed: int = attrs.field(default=0, converter=to_int, validator=integer(0))
    tol: float = attrs.field(default=1e-9, converter=to_float, validator=positive)
    max_iter: int = attrs.field(default=300, converter=to_int, validator=positive_int)
    nonnegative: bool = attrs.field(default=False, validator=boolean)

    def init(self, problem: Problem, x0: np.ndarray, carry: Carry) -> Carry:
        return carry

    def propose(self, problem: Problem, x: np.ndarray, state: Carry) -> tuple[np.ndarray, float, Carry]:
        p = problem.p
        k = check_cardinality(self.k, p, "restarted-power")
        values, vectors = unique_leading_pairs(problem, self.rank)
        starts: list[np.ndarray] = []
        if vectors.shape[1]:
            if self.nonnegative:
                first = truncate_nonnegative(vectors[:, 0], SparsityTruncation(k=k))
            else:
                first = np.zeros(p)
                kept = ties.top_k(np.abs(vectors[:, 0]), k)
                first[kept] = vectors[kept, 0]
            starts.append(first)
            draws = np.random.default_rng(self.start_seed).standard_normal((self.starts - 1, self.rank))
            scaled = vectors * np.sqrt(values)
            starts.extend(scaled @ h[: vectors.shape[1]] for h in draws)
        else:  # no uniquely defined eigenvector: the driver's start alone
            starts.append(np.asarray(x, dtype=float)[:, 0])
        best_value, best_support, best_y = -np.inf, np.zeros(0, dtype=int), np.zeros(0)
        seen: set[tuple[int, ...]] = set()
        starts = [start for start in starts if np.any(start)]
        ends = (truncated_power(problem, np.column_stack(starts), k, self.tol, self.max_iter, self.nonnegative)
                if starts else np.zeros((p, 0)))  # fmt: skip
        for end in ends.T:
            support = np.flatnonzero(end)
            if tuple(support) in seen:
                continue
            seen.add(tuple(support))
            a_ss, b_ss = problem.covariance.submatrix(support), constraint_submatrix(state, support)
            value, y = one_signed_top(a_ss, b_ss, end[support]) if self.nonnegative else generalized_top(a_ss, b_ss)
            if ties.improves(float(value), best_value):
                best_value, best_support, best_y = float(value), support, y
        out = np.zeros((p, 1))
        out[best_support, 0] = best_y
        return out, best_value, state


UPDATERS = [RestartedPowerSolver]
