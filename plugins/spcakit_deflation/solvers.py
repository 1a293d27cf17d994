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
  variable) eigenproblem, :func:`bordered_top` and :func:`constrained_top`.
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
from typing import NamedTuple

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
    range_basis,
    ties,
    to_int,
    with_proved_bound,
)

PAPER = "Mackey - Deflation Methods for Sparse PCA (NIPS 2008)"

#: Largest number of supports ``exhaustive`` enumerates.
EXHAUSTIVE_LIMIT = 200_000
#: Largest p for which ``greedy`` runs the backward elimination (it forms A; its cost grows like p^4).
BACKWARD_LIMIT = 100
#: Ratios A_ii/B_ii within this distance of the largest (relative to it) tie for greedy's start.
TIE_RTOL = ties.RTOL
#: Eigenvalues this close to the largest (relative to the largest magnitude) count as equal in the secular equations.
POLE_RTOL = 1e-13
#: Greedy iterates only candidates whose value can come within this (relative) of the best one.
PRUNE_RTOL = 1e-9
#: Most iterations of a secular-equation solver (a handful suffice).
SECULAR_ITERATIONS = 100
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


def _better(value: float, incumbent: float) -> bool:
    """Strictly better by more than rounding (ties keep the earlier, smaller-index candidate)."""
    if not np.isfinite(incumbent):
        return True
    return value > incumbent + 1e-12 * max(1.0, abs(incumbent))


def _near_best(values: np.ndarray) -> np.ndarray:
    """Indices of the values within :func:`_better`'s tolerance of the largest (``2e-12`` relative; the winner
    of a scan lies among them)."""
    top = float(values.max())
    return np.flatnonzero(values >= top - 2e-12 * max(1.0, abs(top)))


def _scan_best(values: np.ndarray, incumbent: float = -np.inf) -> tuple[int, float]:
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
        near = _near_best(values)
        if near.size == 1:
            return int(near[0]), top
    while start < n:
        if not np.isfinite(incumbent):
            best, incumbent, start = start, float(values[start]), start + 1
            continue
        later = np.flatnonzero(values[start:] > incumbent + 1e-12 * max(1.0, abs(incumbent)))
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


# -- the pencil of a support, reduced to a standard eigenproblem ----------------------------------
class _Reduced(NamedTuple):
    r"""The pencil :math:`(A_{SS}, B_{SS})` of a support as a standard eigenproblem.

    :math:`W^\top A_{SS} W = U\operatorname{diag}(\lambda)U^\top` with
    :math:`W` the whitening of :math:`B_{SS}` on its range
    (:func:`_range_basis`; :math:`W = I` when :math:`B = I`); the columns of
    :math:`WU` are the pencil's eigenvectors (:math:`(WU)^\top B_{SS} WU = I`).
    """

    whiten: np.ndarray  # W, m x m'
    null: np.ndarray  # N, m x (m - m'): the null space of B_SS
    values: np.ndarray  # lambda, ascending, m'
    basis: np.ndarray  # W U, m x m': the eigenvectors as vectors on the support

    @property
    def top(self) -> float:
        """:math:`\\lambda(S)`, the largest value (0 when :math:`B_{SS} = 0`)."""
        return float(self.values[-1]) if self.values.size else 0.0


def _reduce(a_ss: np.ndarray, b_ss: np.ndarray | None) -> _Reduced:
    """:class:`_Reduced` of :math:`(A_{SS}, B_{SS})`; ``b_ss=None`` for :math:`B = I`."""
    m = a_ss.shape[0]
    if b_ss is None:
        whiten, null, matrix = np.eye(m), np.zeros((m, 0)), a_ss
    else:
        whiten, null = range_basis(b_ss)
        matrix = whiten.T @ a_ss @ whiten
    values, vectors = np.linalg.eigh((matrix + matrix.T) / 2)
    return _Reduced(whiten, null, values, vectors if b_ss is None else whiten @ vectors)


def _pole_split(values: np.ndarray) -> tuple[float, float, np.ndarray, np.ndarray]:
    r"""The top eigenvalue, the scale, the gaps :math:`\lambda_{\max} - \lambda_j` and which of them count as 0.

    Eigenvalues within :data:`POLE_RTOL` (relative to the largest magnitude)
    of the top one are treated as equal to it, a multiple pole of the secular
    equations; this moves their roots by at most a few times that tolerance.
    """
    top = float(values[-1])
    scale = max(float(np.abs(values).max()), np.finfo(float).tiny)
    gaps = top - values
    return top, scale, gaps, gaps <= POLE_RTOL * scale


def _positive_root(a: np.ndarray | float, b: np.ndarray, s: np.ndarray) -> np.ndarray:
    r"""The root :math:`\tau \ge 0` of :math:`a\tau^2 + b\tau - s = 0` (:math:`a > 0`, :math:`s \ge 0`), without cancellation."""
    disc = np.sqrt(b * b + 4.0 * a * s)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b > 0, 2.0 * s / (b + disc), (disc - b) / (2.0 * a))


def bordered_top(values: np.ndarray, c: np.ndarray, delta: np.ndarray, *, prune: bool = False) -> np.ndarray:
    r"""Largest eigenvalue of the bordered matrix :math:`[[\operatorname{diag}(\lambda), c_i], [c_i^\top, \delta_i]]` for every :math:`i`.

    It is the largest root :math:`\mu = \lambda_{\max} + \tau` (:math:`\tau \ge 0`,
    interlacing) of the secular equation

    .. math::

        g(\tau) = \tau + \lambda_{\max} - \delta_i - \frac{s_i}{\tau}
                  - \varphi_i(\tau) = 0,\qquad
        \varphi_i(\tau) = \sum_{j:\,d_j > 0} \frac{c_{ij}^2}{\tau + d_j},

    with :math:`d_j = \lambda_{\max} - \lambda_j` and :math:`s_i = \sum_{j:\,d_j = 0} c_{ij}^2`;
    :math:`g` is increasing and concave on :math:`\tau > 0`. The iteration
    keeps the pole :math:`s_i/\tau` exact and replaces :math:`\varphi_i`
    (convex, decreasing) by its tangent at :math:`\tau_t`; the root of that
    quadratic model is :math:`\tau_{t+1}`. The model lies above :math:`g`, so
    the iterates increase monotonically to the root, quadratically like
    Newton's method. The first one, :math:`\tau_0`, is the root with
    :math:`\varphi_i = 0` (the :math:`2\times 2` Rayleigh-Ritz value on the top
    eigenvector and the new coordinate, a lower bound). All columns are solved
    together.

    Parameters
    ----------
    values
        :math:`\lambda`, ascending (``m``).
    c
        ``m x n``: column :math:`c_i` for each of ``n`` bordered matrices.
    delta
        ``n``: the new diagonal entries :math:`\delta_i`.
    prune
        Solve only for the best column. Every iterate is a lower bound, and
        :math:`\varphi_i(\tau) \le \varphi_i(t)` for :math:`\tau \ge t` gives an
        upper bound (:func:`_may_reach`; before the first step with
        :math:`\varphi_i(\tau_0) \le \|c_{i,\mathrm{rest}}\|^2/(\tau_0 + \min_j d_j)`).
        A column whose upper bound is below the best lower bound by more than
        :data:`PRUNE_RTOL` is no longer iterated, and the iteration stops when
        one column is left. Those columns keep lower bounds; the best column
        is then the only one within :data:`PRUNE_RTOL` of the maximum, so
        choosing with :func:`_scan_best` (ties within :math:`10^{-12}`) gives
        the same answer as with every root exact.
    """
    if values.size == 0:
        return np.array(delta, dtype=float)
    top, scale, gaps, pole = _pole_split(values)
    shift = top - delta
    s = np.sum(c[pole] ** 2, axis=0)
    tau = _positive_root(1.0, shift, s)
    rest_c2, rest_gaps = c[~pole] ** 2, gaps[~pole]
    if rest_gaps.size == 0:
        return top + tau
    active = np.arange(tau.size)
    if prune:
        # phi(tau) <= |c_rest|^2 / (tau_0 + d_min) for tau >= tau_0: an upper bound before any iteration
        bound = rest_c2.sum(axis=0) / (tau + rest_gaps.min())
        best = top + float(tau.max())
        active = active[_may_reach(top, shift, s, tau, bound, best, scale)]
        alive = active.size
    eps = np.finfo(float).eps
    for _ in range(SECULAR_ITERATIONS):
        if active.size == 0 or (prune and alive == 1):
            break
        t = tau[active]
        den = t + rest_gaps[:, None]
        terms = rest_c2[:, active] / den
        phi = terms.sum(axis=0)
        slope = (terms / den).sum(axis=0)  # -phi'(t) >= 0
        new = np.maximum(_positive_root(1.0 + slope, shift[active] - phi - slope * t, s[active]), t)
        tau[active] = new
        moving = new - t > 4 * eps * np.maximum(np.abs(top + new), scale)
        if prune:
            best = max(best, top + float(new.max()))
            reach = _may_reach(top, shift[active], s[active], t, phi, best, scale)
            alive -= int(np.count_nonzero(~reach))
            moving &= reach
        active = active[moving]
    return top + tau


def _may_reach(
    top: float, shift: np.ndarray, s: np.ndarray, t: np.ndarray, phi: np.ndarray, best: float, scale: float
) -> np.ndarray:
    r"""Whether roots of :func:`bordered_top` can come within :data:`PRUNE_RTOL` of ``best``.

    ``t`` is a lower bound of the root :math:`\tau^*` and ``phi`` at least
    :math:`\varphi(t)`; since :math:`\varphi` decreases,
    :math:`g(\tau) \ge \tau + \lambda_{\max} - \delta - s/\tau - \varphi(t)` for
    :math:`\tau \ge t`, whose root (or ``t``) bounds :math:`\tau^*` from above.
    """
    upper = np.maximum(_positive_root(1.0, shift - phi, s), t)
    return top + upper >= best - PRUNE_RTOL * max(1.0, abs(best), scale)


def constrained_top(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    r"""Largest eigenvalue of :math:`U\operatorname{diag}(\lambda)U^\top` on a hyperplane :math:`g^\perp`, for every row of ``weights``.

    With :math:`w_l = (u_l^\top g)^2/\|g\|^2` (a row of ``weights``), the
    eigenvalues on :math:`g^\perp` are the roots of
    :math:`\sum_l w_l/(\lambda_l - \mu) = 0` (and the :math:`\lambda_l` with
    :math:`w_l = 0`); the largest is :math:`\mu = \lambda_{\max} - \sigma` with
    :math:`\sigma \in [0, d_2]`, :math:`d_2` the gap to the second eigenvalue
    (interlacing), the root of

    .. math::

        h(\sigma) = \frac{w_{\max}}{\sigma} - \sum_{l:\,d_l > 0} \frac{w_l}{d_l - \sigma},

    decreasing on :math:`(0, d_2)`; :math:`\sigma = d_2` when :math:`h > 0`
    throughout, :math:`\sigma = 0` when :math:`w_{\max} = 0` or the top
    eigenvalue is repeated. Solved by Newton's method safeguarded by
    bisection on the bracket (bisection whenever a Newton step would leave it
    or fails to halve the previous move), until :math:`h` is at rounding
    level, all rows together. Deleting variable :math:`j`
    from a support is the case :math:`g = e_j` (principal submatrix).
    """
    n = weights.shape[0]
    if values.size == 0:
        return np.zeros(n)
    top, scale, gaps, pole = _pole_split(values)
    if np.count_nonzero(pole) >= 2 or values.size == 1:
        # a repeated top eigenvalue keeps an eigenvector on every hyperplane; m = 1 leaves nothing
        return np.full(n, top) if values.size > 1 else np.zeros(n)
    w_top = weights[:, pole].sum(axis=1)
    rest_w, rest_gaps = weights[:, ~pole], gaps[~pole]
    second = float(rest_gaps.min())
    sigma = np.zeros(n)
    active = np.flatnonzero(w_top > 0)
    lo, hi = np.zeros(active.size), np.full(active.size, second)
    # start from the root of the two-pole model w_top / s = w_2 / (d_2 - s), w_2 the weight at (about) d_2
    w_second = rest_w[active][:, rest_gaps <= second * (1 + 1e-9)].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        s = second * w_top[active] / (w_top[active] + w_second)
    s = np.where((s > 0.01 * second) & (s < 0.99 * second), s, second / 2)
    moved = hi - lo
    eps = np.finfo(float).eps
    for _ in range(SECULAR_ITERATIONS):
        if active.size == 0:
            break
        den = rest_gaps[None, :] - s[:, None]
        terms = rest_w[active] / den
        pole_term = w_top[active] / s
        h = pole_term - terms.sum(axis=1)
        dh = -pole_term / s - (terms / den).sum(axis=1)
        right = h > 0
        lo = np.where(right, s, lo)
        hi = np.where(right, hi, s)
        sigma[active] = s
        # converged: h is at rounding level, or the bracket has closed
        done = (np.abs(h) <= 16 * eps * (pole_term + terms.sum(axis=1))) | (hi - lo <= 4 * eps * scale)
        with np.errstate(invalid="ignore", divide="ignore"):
            newton = s - h / dh
        # Newton's step where it stays in the bracket and at least halves the previous move, else bisection
        use = (newton > lo) & (newton < hi) & (np.abs(2 * h) <= np.abs(moved * dh))
        step = np.where(use, newton, (lo + hi) / 2)
        moved = np.abs(step - s)
        keep = ~done
        active, s, lo, hi, moved = active[keep], step[keep], lo[keep], hi[keep], moved[keep]
    return top - sigma


def _addition_values(
    reduced: _Reduced,
    a_rows: np.ndarray,
    diag_a: np.ndarray,
    b_rows: np.ndarray | None,
    diag_b: np.ndarray,
    *,
    prune: bool = False,
) -> np.ndarray:
    r""":math:`\lambda(S + \{i\})` for every candidate variable :math:`i`, from the reduced pencil of :math:`S`.

    Bordering the pencil by :math:`a = A_{Si}`, :math:`\alpha = A_{ii}`,
    :math:`b = B_{Si}`, :math:`\beta = B_{ii}`: :math:`b` lies in the range of
    :math:`B_{SS}` (:math:`B` is positive semi-definite), so with
    :math:`h = B_{SS}^+ b = WW^\top b` and the Schur complement
    :math:`\gamma = \beta - b^\top h` the substitution :math:`y + sh = Wu`
    turns :math:`z = (y, s)` into coordinates in which
    :math:`z^\top B z = u^\top u + \gamma s^2`. For :math:`\gamma > 0` the
    value is therefore the top eigenvalue of the bordered matrix
    (:func:`bordered_top`)

    .. math::

        \begin{bmatrix} \operatorname{diag}(\lambda) & c \\ c^\top & \delta \end{bmatrix},\quad
        c = \frac{\tilde a - \lambda \circ \tilde b}{\sqrt\gamma},\quad
        \delta = \frac{\alpha - 2\tilde a^\top \tilde b + \tilde b^\top \operatorname{diag}(\lambda)\tilde b}{\gamma},\quad
        \gamma = \beta - \|\tilde b\|^2,

    with :math:`\tilde a = (WU)^\top a` and :math:`\tilde b = (WU)^\top b`
    (:math:`\tilde b = 0`, :math:`\gamma = 1` when :math:`B = I`: :math:`c` is
    :math:`a` in the eigenbasis of :math:`A_{SS}`, :math:`\delta = \alpha`).
    :math:`\gamma` is the squared distance of :math:`Be_i` from
    :math:`\operatorname{span}\{Be_j : j \in S\}`; at or below
    :data:`RANGE_TOL` the candidate adds no direction and, since
    :math:`A = BA_0B`, no variance: its value is :math:`\lambda(S)`.

    Parameters
    ----------
    reduced
        :func:`_reduce` of the support.
    a_rows, b_rows
        :math:`A_{S,C}` and :math:`B_{S,C}` for the candidates :math:`C`
        (``m x |C|``; ``b_rows=None`` for :math:`B = I`).
    diag_a, diag_b
        :math:`A_{ii}` and :math:`B_{ii}` of the candidates.
    prune
        Values that cannot be near the best are left at lower bounds (:func:`bordered_top`).
    """
    a_tilde = reduced.basis.T @ a_rows
    if b_rows is None:
        gamma = np.ones(a_rows.shape[1])
        c, delta = a_tilde, diag_a
    else:
        b_tilde = reduced.basis.T @ b_rows
        gamma = diag_b - np.einsum("ij,ij->j", b_tilde, b_tilde)
        weighted = reduced.values[:, None] * b_tilde
        c = a_tilde - weighted
        delta = diag_a - 2 * np.einsum("ij,ij->j", a_tilde, b_tilde) + np.einsum("ij,ij->j", weighted, b_tilde)
    values = np.full(a_rows.shape[1], reduced.top)
    new = gamma > RANGE_TOL
    if np.all(new):
        root = np.sqrt(gamma)
        values = bordered_top(reduced.values, c / root, delta / gamma, prune=prune)
    elif np.any(new):
        root = np.sqrt(gamma[new])
        values[new] = bordered_top(reduced.values, c[:, new] / root, delta[new] / gamma[new], prune=prune)
    return values


def _deletion_values(reduced: _Reduced, diag_b: np.ndarray) -> np.ndarray:
    r""":math:`\lambda(S - \{j\})` for every position :math:`j` of the support :math:`S`.

    In the coordinates :math:`u` of the reduced pencil (:math:`y = Wu`),
    dropping variable :math:`j` restricts :math:`u` to the hyperplane
    :math:`g_j^\perp`, :math:`g_j = W^\top e_j` (:func:`constrained_top`; for
    :math:`B = I` the principal submatrix without row and column :math:`j`).
    When :math:`Be_j` lies in the span of the other :math:`Be_l`
    (:math:`B_{jj} \le` :data:`RANGE_TOL`, or a null vector :math:`n` of
    :math:`B_{SS}` with :math:`n_j \ne 0`, which removing :math:`j` turns into
    a direction of :math:`B_{S-j}` with :math:`x^\top Bx = n_j^2 B_{jj}/(1 - n_j^2)`
    above :data:`RANGE_TOL`), nothing is lost: the value is :math:`\lambda(S)`
    (:math:`A = BA_0B`).
    """
    m = reduced.whiten.shape[0]
    if reduced.values.size == 0:
        return np.zeros(m)
    values = np.full(m, reduced.top)
    lost = diag_b > RANGE_TOL
    if reduced.null.shape[1]:
        n2 = np.minimum(np.einsum("ij,ij->i", reduced.null, reduced.null), 1.0)
        lost &= ~(n2 * diag_b > RANGE_TOL * (1.0 - n2))
    z = reduced.basis[lost]
    weights = z * z
    total = weights.sum(axis=1)
    where = np.flatnonzero(lost)[total > 0]
    values[where] = constrained_top(reduced.values, weights[total > 0] / total[total > 0, None])
    return values


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
    :func:`_addition_values` in closed form: from :math:`S = \{i\}`
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
        tied = _near_best(values)
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
    (:func:`_addition_values`, :func:`bordered_top`), so a step costs one
    :math:`m\times m` eigendecomposition and :math:`O(m^2p)` for
    :math:`|S| = m`: :math:`O(k^3p)` a component besides the ``k`` products
    :math:`Ae_i` (before: one dense generalized eigenproblem per candidate,
    :math:`O(k^4p)` in ``p k`` Python-level calls). Candidates whose secular
    bounds cannot reach the best are not iterated. A backward step scores
    every removal with one eigendecomposition of the current support
    (:func:`_deletion_values`, :func:`constrained_top`), :math:`O(p^4)` in all
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
            position, value = _scan_best(_pair_values(rows, block, diag_a, diag_b, q).ravel(), incumbent)
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
            if _better(grown[0], best[0]):
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
            values = _addition_values(
                _reduce(a_ss, b_ss), columns[candidates].T, diag_a[candidates],
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
            values = _deletion_values(_reduce(a_ss, b_ss), diag_b)
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
        position, _ = _scan_best(values)
        near = _near_best(values)
        if near.size > 1 and self._ties_by_values(carry):
            position = int(near[_outermost(problem, carry, [support_of(int(i)) for i in near])])
        return position

    def propose(self, problem: Problem, x: np.ndarray, state: Carry) -> tuple[np.ndarray, float, Carry]:
        k = check_cardinality(self.k, problem.p, "greedy")
        value, support, y = self._forward(problem, state, k)
        if self.backward:
            back_value, back_support, back_y = self._backward(problem, state, k)
            tied = not _better(back_value, value) and not _better(value, back_value)
            if tied and self._ties_by_values(state):
                back_wins = _outermost(problem, state, [np.sort(support), np.sort(back_support)]) == 1
            else:
                back_wins = back_value > value
            if back_wins:
                value, support, y = back_value, back_support, back_y
        return _embed(problem.p, support, y)[:, None], value, state


UPDATERS = [GreedySolver, ExhaustiveSolver]
STOPPERS = [Enumerated]
