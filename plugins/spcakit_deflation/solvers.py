r"""Rank-one cardinality-constrained solvers for the generalized problem

.. math::

    \max_x\; x^\top A x \quad\text{s.t.}\quad x^\top B x = 1,\ \operatorname{card}(x) \le k,

the subproblem of every round of Mackey's generalized deflation (Alg. 1;
:math:`B = I` for the other deflations). For a support :math:`S` the
best value is the largest generalized eigenvalue of the pencil
:math:`(A_{SS}, B_{SS})`, computed on the range of :math:`B_{SS}` (directions
with :math:`Bv = 0` carry no variance, since :math:`A = BA_0B`).

* ``greedy`` - forward selection in the spirit of GSLDA (Moghaddam, Weiss &
  Avidan): start from the best single variable (the best pair when several
  tie), add the variable that raises the value most until :math:`|S| = k`;
  with ``backward = true`` also eliminate from the full set down to ``k`` and
  keep the better support. Each step scores all candidates at once through
  the secular equation of a bordered (added variable) or constrained (removed
  variable) eigenproblem (:mod:`spcakit_deflation.secular`).
* ``exhaustive`` - every support of size ``k`` (exact; the value is monotone
  in :math:`S`, so size exactly ``k`` suffices). Refuses problems with more
  than :data:`EXHAUSTIVE_LIMIT` supports.

Both are updaters that solve the rank-one problem in one step: they ignore
the current iterate, so their methods run one iteration per component.
:math:`B = I - QQ^\top` comes from the run's carry (the orthonormal
:math:`Q` that ``generalized`` deflation keeps under
:data:`spcakit.core.records.CONSTRAINT`; :math:`B = I` when it holds none): ``init``
returns the carry, and it is the solvers' state.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import attrs
import numpy as np

from spcakit.plugin_api import (
    CONSTRAINT,
    RANGE_TOL,
    Carry,
    InvalidParameterError,
    IterState,
    Problem,
    Stopper,
    Updater,
    boolean,
    check_cardinality,
    constraint_submatrix,
    generalized_top,
    one_of,
    part,
    raised_for_rounding,
    ties,
    to_int,
    with_proved_bound,
)
from spcakit_deflation.secular import addition_values, deletion_values, reduce_pencil

PAPER = "Mackey - Deflation Methods for Sparse PCA (NIPS 2008)"

#: Largest number of supports ``exhaustive`` enumerates.
EXHAUSTIVE_LIMIT = 200_000
#: Largest p for which ``greedy`` runs the backward elimination (it forms A; its cost grows like p^4).
BACKWARD_LIMIT = 100
#: Ratios A_ii/B_ii within this distance of the largest (relative to it) tie for greedy's start.
TIE_RTOL = ties.RTOL
#: Entries of greedy's pair-start working arrays: the columns A e_i of about this / p tied variables at a time.
PAIR_ENTRIES = 1 << 14
#: How greedy's forward selection starts (see :class:`GreedySolver`).
START_RULES = ("best-pair", "each-tied", "max-ratio", "leading")
#: Largest p for which ``exhaustive`` forms the full covariance.
EXHAUSTIVE_P_LIMIT = 2000


def _unit(p: int, index: int) -> np.ndarray:
    e = np.zeros((p, 1))
    e[index, 0] = 1.0
    return e


def _value_scale(problem: Problem) -> float:
    """The scale of the values compared (variances of ``C``): its largest diagonal entry, 1 where there is none. The
    tolerances below are relative to it, so that a choice is the same for ``C`` and ``C`` times any positive
    factor (the data at 1e-6 once chose another support: a tolerance of 1e-12 absolute)."""
    largest = float(np.max(np.abs(np.asarray(problem.covariance.diagonal(), dtype=float)), initial=0.0))
    return largest if np.isfinite(largest) and largest > 0 else 1.0


def _better(value: float, incumbent: float, *, scale: float) -> bool:
    """Strictly better by more than rounding, ``1e-12`` of the larger of ``|incumbent|`` and ``scale`` (ties keep the
    earlier, smaller-index candidate)."""
    if not np.isfinite(incumbent):
        return True
    return value > incumbent + 1e-12 * max(scale, abs(incumbent))


def _near_best(values: np.ndarray, *, scale: float) -> np.ndarray:
    """Indices of the values within :func:`_better`'s tolerance of the largest (``2e-12`` relative; the winner
    of a scan lies among them)."""
    top = float(values.max())
    return np.flatnonzero(values >= top - 2e-12 * max(scale, abs(top)))


def _scan_best(values: np.ndarray, incumbent: float = -np.inf, *, scale: float) -> tuple[int, float]:
    """The candidate a scan of ``values`` in order keeps under :func:`_better`, and its value.

    The incumbent changes only when a later value beats it by more than
    :math:`10^{-12}` (relative), so a tie keeps the earlier candidate. The
    scan jumps from one change of incumbent to the next with NumPy.
    Returns ``(-1, incumbent)`` when nothing replaces the given ``incumbent``.
    """
    best, start, n = -1, 0, len(values)
    if n and not np.isfinite(incumbent):
        # the winner lies within 1e-12 (relative) of the maximum: a maximum alone there wins
        top = float(values.max())
        near = _near_best(values, scale=scale)
        if near.size == 1:
            return int(near[0]), top
    while start < n:
        if not np.isfinite(incumbent):
            best, incumbent, start = start, float(values[start]), start + 1
            continue
        later = np.flatnonzero(values[start:] > incumbent + 1e-12 * max(scale, abs(incumbent)))
        if later.size == 0:
            break
        best = start + int(later[0])
        incumbent, start = float(values[best]), best + 1
    return best, incumbent


def _embed(p: int, support: list[int] | np.ndarray, y: np.ndarray) -> np.ndarray:
    """The unit ``p``-vector equal (up to scale) to ``y`` on ``support`` and zero elsewhere."""
    z = np.zeros(p)
    z[np.asarray(support, dtype=int)] = y
    norm = np.linalg.norm(z)
    return z / norm if norm > 0 else z


def _support_value(a: np.ndarray, carry: Carry, support: list[int]) -> tuple[float, np.ndarray]:
    """:func:`generalized_top` of :math:`(A_{SS}, B_{SS})` for the explicit ``a`` and the carry's :math:`B`."""
    idx = np.asarray(support)
    return generalized_top(a[np.ix_(idx, idx)], constraint_submatrix(carry, idx))


def _outermost(problem: Problem, carry: Carry, supports: list[np.ndarray]) -> int:
    r"""Of candidate ``supports`` whose values tie, the one whose loading lies most outside the earlier loadings'
    span: the largest :math:`y^\top B_{SS} y / y^\top y` (ties: the first).

    With the generalized deflation several supports often reach the same value: adding a multiple of an
    earlier loading zeroes any one of its entries without changing the additional variance, so a variable
    of its support can be removed (or left out) at no loss. The loadings then span the same space but
    differ, and what follows (more rounds, a refiner) depends on which one is kept; this rule is a property
    of the values, not of the variables' order.
    """
    keys = []
    for support in supports:
        _, y = generalized_top(problem.covariance.submatrix(support), constraint_submatrix(carry, support))
        b_ss = constraint_submatrix(carry, support)
        keys.append(float(y @ b_ss @ y) / max(float(y @ y), np.finfo(float).tiny))
    return int(ties.order(np.array(keys))[0])


def _dense_covariance(problem: Problem) -> np.ndarray:
    a = problem.covariance.matmat(np.eye(problem.p))
    return (a + a.T) / 2


def _constraint_columns(q: np.ndarray, support: list[int]) -> np.ndarray:
    r""":math:`B_{:,S} = I_{:,S} - QQ_S^\top` (``p x m``)."""
    columns = -(q @ q[support].T)
    columns[support, np.arange(len(support))] += 1.0
    return columns


def _tied_best(ratios: np.ndarray) -> np.ndarray:
    r"""The variables whose ratio :math:`A_{ii}/B_{ii}` is within :data:`TIE_RTOL` of the largest (relative to it), ascending."""
    best = float(ratios.max())
    if not np.isfinite(best):
        return np.array([int(np.argmax(ratios))])
    return np.flatnonzero(ratios >= best - TIE_RTOL * abs(best))


def _pair_values(
    rows: np.ndarray, block: np.ndarray, diag_a: np.ndarray, diag_b: np.ndarray, q: np.ndarray | None
) -> np.ndarray:
    r""":math:`\lambda(\{i, j\})` for every :math:`i` in ``block`` (rows) and every variable :math:`j` (columns).

    ``rows`` holds :math:`A_{i,:}`. The :math:`2\times 2` case of
    :func:`addition_values` in closed form: from :math:`S = \{i\}`
    (:math:`B_{ii} > 0`), :math:`h = B_{ij}/B_{ii}`,
    :math:`\gamma = B_{jj} - B_{ij}h`,
    :math:`c = (A_{ij} - A_{ii}h)/\sqrt{B_{ii}\gamma}`,
    :math:`\delta = (A_{jj} - 2A_{ij}h + A_{ii}h^2)/\gamma` and the value is the
    top eigenvalue of :math:`[[A_{ii}/B_{ii}, c], [c, \delta]]`
    (:math:`A_{ii}/B_{ii}` when :math:`\gamma \le` :data:`RANGE_TOL`).
    """
    a_ii = diag_a[block][:, None]
    if q is None:
        lam, c, delta = a_ii, rows, np.broadcast_to(diag_a, rows.shape)
        gamma = None
    else:
        b_ii = diag_b[block][:, None]
        b_ij = -(q[block] @ q.T)
        h = b_ij / b_ii
        gamma = diag_b[None, :] - b_ij * h
        safe = np.where(gamma > RANGE_TOL, gamma, 1.0)
        lam = a_ii / b_ii
        c = (rows - a_ii * h) / np.sqrt(b_ii * safe)
        delta = (diag_a[None, :] - 2 * rows * h + a_ii * h * h) / safe
    values = (lam + delta) / 2 + np.hypot((lam - delta) / 2, c)
    if gamma is not None:
        values = np.where(gamma > RANGE_TOL, values, lam)
    values[np.arange(block.size), block] = -np.inf  # {i, i} is not a pair
    return values


def _bordered_support_matrix(columns: np.ndarray, support: list[int], diag_a: np.ndarray) -> np.ndarray:
    r""":math:`A_{SS}` assembled as the last forward step bordered it.

    :math:`A_{S',S'}` and :math:`A_{S',i}` come from the columns of the first
    variables :math:`S'`, :math:`A_{ii}` of the last one from the diagonal
    (the bits of the dense computation this solver used to make).
    """
    idx = np.asarray(support)
    m = idx.size
    if m == 1:
        return columns[idx][:, :1]
    a = np.empty((m, m))
    a[:-1, :-1] = columns[idx[:-1], : m - 1]
    a[-1, :-1] = a[:-1, -1] = columns[idx[-1], : m - 1]
    a[-1, -1] = diag_a[idx[-1]]
    return a


@part("exhaustive", paper=PAPER, k="k")
class ExhaustiveSolver(Updater):
    r"""rank-one solver: exact search over all supports of size k (small p only)

    The best of the :math:`\binom{p}{k}` supports by :func:`generalized_top`;
    refuses more than :data:`EXHAUSTIVE_LIMIT` supports or
    :math:`p >` :data:`EXHAUSTIVE_P_LIMIT` (it forms :math:`A` explicitly).
    Supports whose values tie (within :math:`2\cdot 10^{-12}` of the best, relative) are ranked by the
    sum of :math:`|u_1|` over the support (:func:`spcakit.numerics.ties.leading_magnitudes`), so the choice
    does not depend on the order of the variables; still tied (a symmetry of :math:`A`), the
    lexicographically first.

    Parameters
    ----------
    k
        The cardinality, an integer in ``[1, p]`` (required; checked against ``p`` when run).
    """

    k: int | None = attrs.field(default=None, converter=to_int)

    def init(self, problem: Problem, x0: np.ndarray, carry: Carry) -> Carry:
        return carry

    def propose(self, problem: Problem, x: np.ndarray, state: Carry) -> tuple[np.ndarray, float, Carry]:
        p = problem.p
        k = check_cardinality(self.k, p, "exhaustive")
        count = math.comb(p, k)
        if p > EXHAUSTIVE_P_LIMIT or count > EXHAUSTIVE_LIMIT:
            raise InvalidParameterError(
                f"exhaustive search over C({p}, {k}) = {count:,} supports with p = {p} is too large "
                f"(limits: {EXHAUSTIVE_LIMIT:,} supports, p <= {EXHAUSTIVE_P_LIMIT}); "
                "use the greedy or tpower solver, or a smaller p or k"
            )
        a = _dense_covariance(problem)
        supports = list(itertools.combinations(range(p), k))
        values = np.array([_support_value(a, state, list(support))[0] for support in supports])
        tied = _near_best(values, scale=_value_scale(problem))
        chosen = int(tied[0])
        if tied.size > 1:  # equal values: the support weighing most in PC 1, whatever the order of the variables
            weights = ties.leading_magnitudes(problem.covariance)
            chosen = int(tied[ties.argmax(np.array([weights[list(supports[i])].sum() for i in tied]))])
        value, y = _support_value(a, state, list(supports[chosen]))
        # every support's value is known: the largest (raised for rounding) bounds the optimum; `enumerated` reports it
        best = raised_for_rounding(float(values.max()), p, float(np.abs(np.diag(a)).max(initial=0.0)))
        return _embed(p, list(supports[chosen]), y)[:, None], value, state.set(ENUMERATED_KEY, best)


#: The ``exhaustive`` solver's carry key for the optimum it found, raised for rounding (read by ``enumerated``).
ENUMERATED_KEY = "exhaustive.optimum"


@part("enumerated", paper=PAPER)
class Enumerated(Stopper):
    """stop after the solver's one step: every support was enumerated, so the loading is optimal (its value the bound)

    The ``exhaustive`` method's stopper. Its reason carries the optimum as a proved bound
    (:func:`spcakit.core.records.with_proved_bound`), which the result's ``bound`` and ``gap`` metrics take where it bounds
    their problem: the first loading, and every loading under the generalized deflation (the method's default).
    """

    def __call__(self, state: IterState) -> str | None:
        if state.iteration < 1:
            return None
        carry = state.updater_state
        optimum = carry.get(ENUMERATED_KEY) if isinstance(carry, Carry) else None
        if optimum is None:  # another solver: one step all the same
            return "one step"
        return with_proved_bound("optimal (every support enumerated)", optimum,
                                 given_earlier=carry.get(CONSTRAINT) is not None)  # fmt: skip


@part("greedy", paper=PAPER, k="k")
class GreedySolver(Updater):
    r"""rank-one solver: greedy forward support selection (GSLDA-like), k = cardinality; backward = true adds elimination

    Forward selection starts from the best single variable (largest
    :math:`A_{ii}/B_{ii}`, the value :math:`\lambda(\{i\})`) and adds, one at a
    time, the variable whose support has the largest value
    (:func:`generalized_top`) until :math:`|S| = k`; it needs only the ``k``
    columns :math:`A_{:,S}`, so it runs matrix-free. With ``backward = true``
    it also removes variables from the full set down to ``k`` (explicit
    :math:`A`, :math:`p \le` :data:`BACKWARD_LIMIT`), each time the one whose
    removal loses least, and keeps the better of the two supports (GSLDA's
    bidirectional search).

    **Start.** Ratios :math:`A_{ii}/B_{ii}` within :data:`TIE_RTOL` of the
    largest (relative to it) tie: on a correlation matrix or standardised
    data every variable ties, and in later rounds the variables that no
    loading has touched often still do. When one variable has the best ratio,
    every rule starts from it; at :math:`k = 1`, where every tied variable
    alone has the same value, from the tied variable of largest
    :math:`|u_1|` (:func:`spcakit.numerics.ties.leading_magnitudes`: a property of the
    values, not of the order; still tied, the smaller index). Otherwise, by ``start``:

    * ``"best-pair"`` (default): from the best pair :math:`\{i, j\}` with
      :math:`i` tied and :math:`j` any other variable, i.e. one forward step
      from every tied start, the best kept (ties: the lexicographically first
      :math:`(i, j)`). The :math:`2\times 2` values are closed-form
      (:func:`_pair_values`). The cost is one product :math:`Ae_i` and
      :math:`O(p)` per tied variable (``p`` products on a correlation matrix),
      a block of about :data:`PAIR_ENTRIES` entries at a time: never a
      ``p x p`` array.
    * ``"each-tied"``: a whole forward pass from every tied variable, the best
      kept (ties: the smallest start): the best of these rules, at
      :math:`|T|` times the cost of one pass for :math:`|T|` tied variables.
    * ``"max-ratio"``: the first exact maximum of the ratio (variable 1 on a
      correlation matrix), the rule before ties were recognised.
    * ``"leading"``: the tied variable of largest :math:`|u_1|`
      (:func:`spcakit.numerics.ties.leading_magnitudes`, as at :math:`k = 1`): one
      eigenpair instead of ``"best-pair"``'s product per tied variable, for
      large ``p``.

    **Cost.** A forward step scores every candidate at once: with the
    eigendecomposition of the current support's pencil, the value of
    :math:`S + \{i\}` is the largest root of a secular equation
    (:func:`addition_values`, :func:`bordered_top`), so a step costs one
    :math:`m\times m` eigendecomposition and :math:`O(m^2p)` for
    :math:`|S| = m`: :math:`O(k^3p)` a component besides the ``k`` products
    :math:`Ae_i` (before: one dense generalized eigenproblem per candidate,
    :math:`O(k^4p)` in ``p k`` Python-level calls). Candidates whose secular
    bounds cannot reach the best are not iterated. A backward step scores
    every removal with one eigendecomposition of the current support
    (:func:`deletion_values`, :func:`constrained_top`), :math:`O(p^4)` in all
    (before: :math:`O(p^5)`). The scores equal :func:`generalized_top` of each
    candidate support to rounding (:math:`10^{-14}` of :math:`\max|A_{ij}|`
    for :math:`B = I`; for :math:`B \ne I` the error grows with the condition
    of :math:`B` on the support, as :func:`generalized_top`'s own does).
    Candidates are compared as before: one must beat the incumbent by more
    than :math:`10^{-12}` (relative, :func:`_scan_best`), so ties keep the
    smaller index, except under a constraint (Mackey's generalized
    deflation) with any start but ``"max-ratio"``: there supports that tie
    on the value (adding a multiple of an earlier loading zeroes any entry
    of its support at no loss, so several candidates often tie exactly) go
    to the loading lying most outside the earlier loadings' span,
    :func:`_outermost`, a property of the values; so do tied forward and
    backward results. ``"max-ratio"`` keeps the rule of the papers'
    reproductions. The value and loading returned are
    :func:`generalized_top` of the chosen support.

    Parameters
    ----------
    k
        The cardinality, an integer in ``[1, p]`` (required; checked against ``p`` when run).
    backward
        Also run the backward elimination.
    start
        How forward selection starts when the best ratio is tied:
        ``"best-pair"``, ``"each-tied"``, ``"max-ratio"`` or ``"leading"`` (see above).
    """

    k: int | None = attrs.field(default=None, converter=to_int)
    backward: bool = attrs.field(default=False, validator=boolean)
    start: str = attrs.field(default="best-pair", validator=one_of(*START_RULES))

    def init(self, problem: Problem, x0: np.ndarray, carry: Carry) -> Carry:
        return carry

    def _best_pair(
        self, problem: Problem, tied: np.ndarray, diag_a: np.ndarray, diag_b: np.ndarray, q: np.ndarray | None
    ) -> list[int]:
        """The best pair ``[i, j]`` with ``i`` in ``tied`` (ties: the lexicographically first)."""
        p = problem.p
        best, incumbent = [-1, -1], -np.inf
        width = max(1, PAIR_ENTRIES // p)
        for begin in range(0, tied.size, width):
            block = tied[begin : begin + width]
            units = np.zeros((p, block.size))
            units[block, np.arange(block.size)] = 1.0
            rows = problem.covariance.matmat(units).T  # A_{i,:} for i in the block
            position, value = _scan_best(_pair_values(rows, block, diag_a, diag_b, q).ravel(), incumbent,
                                         scale=_value_scale(problem))  # fmt: skip
            if position >= 0:
                best, incumbent = [int(block[position // p]), int(position % p)], value
        return best

    def _forward(self, problem: Problem, carry: Carry, k: int) -> tuple[float, list[int], np.ndarray]:
        p = problem.p
        diag_a = problem.covariance.diagonal()
        q = carry.get(CONSTRAINT)
        diag_b = np.ones(p) if q is None else 1.0 - np.einsum("ij,ij->i", q, q)
        ratios = np.where(diag_b > RANGE_TOL, diag_a / np.where(diag_b > RANGE_TOL, diag_b, 1.0), -np.inf)
        if self.start == "max-ratio":
            return self._grow(problem, carry, [int(np.argmax(ratios))], k, diag_a, diag_b)
        tied = _tied_best(ratios)
        if tied.size == 1:
            return self._grow(problem, carry, [int(tied[0])], k, diag_a, diag_b)
        if k == 1 or self.start == "leading":  # the tied variable weighing most in PC 1 (spcakit.numerics.ties); at k = 1
            # every tied variable alone has the same value
            weights = ties.leading_magnitudes(problem.covariance)[tied]
            return self._grow(problem, carry, [int(tied[ties.argmax(weights)])], k, diag_a, diag_b)
        if self.start == "best-pair":
            return self._grow(problem, carry, self._best_pair(problem, tied, diag_a, diag_b, q), k, diag_a, diag_b)
        best: tuple[float, list[int], np.ndarray] = (-np.inf, [], np.zeros(0))
        for first in tied:  # "each-tied": a forward pass from every tied variable, the best kept
            grown = self._grow(problem, carry, [int(first)], k, diag_a, diag_b)
            if _better(grown[0], best[0], scale=_value_scale(problem)):
                best = grown
        return best

    def _grow(
        self, problem: Problem, carry: Carry, support: list[int], k: int, diag_a: np.ndarray, diag_b: np.ndarray
    ) -> tuple[float, list[int], np.ndarray]:
        """Forward selection from ``support`` until it has ``k`` variables: the value, the support, the vector."""
        p = problem.p
        q = carry.get(CONSTRAINT)
        # A[:, S], one product per chosen variable, and B[:, S] = (I - QQ^T)[:, S]
        columns = np.column_stack([problem.covariance.matmat(_unit(p, i)) for i in support])
        b_columns = None if q is None else _constraint_columns(q, support)
        outside = np.ones(p, dtype=bool)
        outside[support] = False
        while len(support) < k:
            idx = np.asarray(support)
            candidates = np.flatnonzero(outside)
            a_ss = columns[idx]
            if b_columns is None:
                b_ss = b_rows = None
            else:
                b_ss, b_rows = b_columns[idx], b_columns[candidates].T
            values = addition_values(
                reduce_pencil(a_ss, b_ss), columns[candidates].T, diag_a[candidates],
                b_rows, diag_b[candidates], prune=True,
            )  # fmt: skip
            position = self._pick(problem, carry, values, lambda i: np.sort(np.append(idx, candidates[i])))
            chosen = int(candidates[position])
            support.append(chosen)
            outside[chosen] = False
            columns = np.column_stack([columns, problem.covariance.matmat(_unit(p, chosen))])
            if b_columns is not None:
                b_columns = np.column_stack([b_columns, _constraint_columns(q, [chosen])])
        final = _bordered_support_matrix(columns, support, diag_a)
        value, y = generalized_top(final, constraint_submatrix(carry, np.asarray(support)))
        return value, support, y

    def _backward(self, problem: Problem, carry: Carry, k: int) -> tuple[float, list[int], np.ndarray]:
        p = problem.p
        if p > BACKWARD_LIMIT:
            raise InvalidParameterError(
                f"greedy backward elimination costs about p^4 operations; it is limited to p <= {BACKWARD_LIMIT} "
                f"(got p = {p}); use backward=false (forward selection only)"
            )
        a = _dense_covariance(problem)
        q = carry.get(CONSTRAINT)
        support = np.arange(p)
        while support.size > k:
            a_ss = a[np.ix_(support, support)]
            b_ss = None if q is None else constraint_submatrix(carry, support)
            diag_b = np.ones(support.size) if b_ss is None else np.diag(b_ss)
            values = deletion_values(reduce_pencil(a_ss, b_ss), diag_b)
            position = self._pick(problem, carry, values, lambda i, support=support: np.delete(support, i))
            support = np.delete(support, position)
        kept = [int(i) for i in support]
        value, y = _support_value(a, carry, kept)
        return value, kept, y

    def _ties_by_values(self, carry: Carry) -> bool:
        """Whether supports tying on the value go to the outermost loading (:func:`_outermost`): under a
        constraint (generalized deflation), unless the start is the papers' ``"max-ratio"``."""
        return carry.get(CONSTRAINT) is not None and self.start != "max-ratio"

    def _pick(self, problem: Problem, carry: Carry, values: np.ndarray, support_of: Callable[[int], np.ndarray]) -> int:
        """The candidate a step keeps: the scan's winner (:func:`_scan_best`), or, when several tie on the value
        and :meth:`_ties_by_values`, the one whose support (``support_of(position)``) gives the outermost loading."""
        scale = _value_scale(problem)
        position, _ = _scan_best(values, scale=scale)
        near = _near_best(values, scale=scale)
        if near.size > 1 and self._ties_by_values(carry):
            position = int(near[_outermost(problem, carry, [support_of(int(i)) for i in near])])
        return position

    def propose(self, problem: Problem, x: np.ndarray, state: Carry) -> tuple[np.ndarray, float, Carry]:
        k = check_cardinality(self.k, problem.p, "greedy")
        value, support, y = self._forward(problem, state, k)
        if self.backward:
            back_value, back_support, back_y = self._backward(problem, state, k)
            scale = _value_scale(problem)
            tied = not _better(back_value, value, scale=scale) and not _better(value, back_value, scale=scale)
            if tied and self._ties_by_values(state):
                back_wins = _outermost(problem, state, [np.sort(support), np.sort(back_support)]) == 1
            else:
                back_wins = back_value > value
            if back_wins:
                value, support, y = back_value, back_support, back_y
        return _embed(problem.p, support, y)[:, None], value, state


UPDATERS = [GreedySolver, ExhaustiveSolver]
STOPPERS = [Enumerated]
