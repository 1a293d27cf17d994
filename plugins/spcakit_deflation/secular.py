r"""The values of a support's neighbours by the secular equation: one variable added or removed, all at once.

For a support :math:`S` the pencil :math:`(A_{SS}, B_{SS})` is reduced once to a standard eigenproblem
(:func:`reduce_pencil`); then the largest eigenvalue of every support with one more variable (a bordered matrix:
:func:`bordered_top`, :func:`addition_values`) or one fewer (a constrained one: :func:`constrained_top`,
:func:`deletion_values`, and many supports at once, :func:`hyperplane_tops`) is a root of a secular equation,
found for every candidate together in :math:`O(|S|)` each. ``greedy`` (:mod:`spcakit_deflation.solvers`) and the
``swap`` refiner (:mod:`spcakit_deflation.swap`) score their candidates with them.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from spcakit.plugin_api import RANGE_TOL, range_basis


#: Eigenvalues this close to the largest (relative to the largest magnitude) count as equal in the secular equations.
POLE_RTOL = 1e-13


#: Greedy iterates only candidates whose value can come within this (relative) of the best one.
PRUNE_RTOL = 1e-9


#: Most iterations of a secular-equation solver (a handful suffice).
SECULAR_ITERATIONS = 100


class Reduced(NamedTuple):
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


def reduce_pencil(a_ss: np.ndarray, b_ss: np.ndarray | None) -> Reduced:
    """:class:`Reduced` of :math:`(A_{SS}, B_{SS})`; ``b_ss=None`` for :math:`B = I`."""
    m = a_ss.shape[0]
    if b_ss is None:
        whiten, null, matrix = np.eye(m), np.zeros((m, 0)), a_ss
    else:
        whiten, null = range_basis(b_ss)
        matrix = whiten.T @ a_ss @ whiten
    values, vectors = np.linalg.eigh((matrix + matrix.T) / 2)
    return Reduced(whiten, null, values, vectors if b_ss is None else whiten @ vectors)


def pole_split(values: np.ndarray) -> tuple[float, float, np.ndarray, np.ndarray]:
    r"""The top eigenvalue, the scale, the gaps :math:`\lambda_{\max} - \lambda_j` and which of them count as 0.

    Eigenvalues within :data:`POLE_RTOL` (relative to the largest magnitude)
    of the top one are treated as equal to it, a multiple pole of the secular
    equations; this moves their roots by at most a few times that tolerance.
    """
    top = float(values[-1])
    scale = max(float(np.abs(values).max()), np.finfo(float).tiny)
    gaps = top - values
    return top, scale, gaps, gaps <= POLE_RTOL * scale


def positive_root(a: np.ndarray | float, b: np.ndarray, s: np.ndarray) -> np.ndarray:
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
        upper bound (:func:`may_reach`; before the first step with
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
    top, scale, gaps, pole = pole_split(values)
    shift = top - delta
    s = np.sum(c[pole] ** 2, axis=0)
    tau = positive_root(1.0, shift, s)
    rest_c2, rest_gaps = c[~pole] ** 2, gaps[~pole]
    if rest_gaps.size == 0:
        return top + tau
    active = np.arange(tau.size)
    if prune:
        # phi(tau) <= |c_rest|^2 / (tau_0 + d_min) for tau >= tau_0: an upper bound before any iteration
        bound = rest_c2.sum(axis=0) / (tau + rest_gaps.min())
        best = top + float(tau.max())
        active = active[may_reach(top, shift, s, tau, bound, best, scale)]
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
        new = np.maximum(positive_root(1.0 + slope, shift[active] - phi - slope * t, s[active]), t)
        tau[active] = new
        moving = new - t > 4 * eps * np.maximum(np.abs(top + new), scale)
        if prune:
            best = max(best, top + float(new.max()))
            reach = may_reach(top, shift[active], s[active], t, phi, best, scale)
            alive -= int(np.count_nonzero(~reach))
            moving &= reach
        active = active[moving]
    return top + tau


def may_reach(
    top: float, shift: np.ndarray, s: np.ndarray, t: np.ndarray, phi: np.ndarray, best: float, scale: float
) -> np.ndarray:
    r"""Whether roots of :func:`bordered_top` can come within :data:`PRUNE_RTOL` of ``best``.

    ``t`` is a lower bound of the root :math:`\tau^*` and ``phi`` at least
    :math:`\varphi(t)`; since :math:`\varphi` decreases,
    :math:`g(\tau) \ge \tau + \lambda_{\max} - \delta - s/\tau - \varphi(t)` for
    :math:`\tau \ge t`, whose root (or ``t``) bounds :math:`\tau^*` from above.
    """
    upper = np.maximum(positive_root(1.0, shift - phi, s), t)
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
    top, scale, gaps, pole = pole_split(values)
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


def addition_values(
    reduced: Reduced,
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
        :func:`reduce_pencil` of the support.
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


def deletion_values(reduced: Reduced, diag_b: np.ndarray) -> np.ndarray:
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


def hyperplane_tops(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    r"""Largest eigenvalue of :math:`\operatorname{diag}(\nu_i)` on the hyperplane :math:`h_i^\perp`, for every row :math:`i`.

    The batched form of :func:`~spcakit_deflation.secular.constrained_top`:
    row :math:`i` has its own eigenvalues :math:`\nu_i` (ascending) and weights
    :math:`w_{il} = h_{il}^2/\|h_i\|^2`. The value is :math:`\nu_{\max} - \sigma`
    with :math:`\sigma \in [0, d_2]` (interlacing; :math:`d_l = \nu_{\max} - \nu_l`,
    :math:`d_2` the smallest positive one) the root of

    .. math::

        \frac{w_{\max}}{\sigma} = \varphi(\sigma) = \sum_{l:\,d_l > 0} \frac{w_l}{d_l - \sigma};

    :math:`\sigma = 0` when the top eigenvalue is repeated or :math:`w_{\max} = 0`,
    :math:`\sigma = d_2` when no root comes before it. Each step replaces
    :math:`\varphi` by the model :math:`s + S/(d_2 - \sigma)` with its value and
    slope at the current :math:`\sigma` (the nearest pole kept, the others
    folded into :math:`s \ge 0`), whose equation is a quadratic with one root
    in :math:`(0, d_2)` - the "middle way" of LAPACK's secular solvers; a step
    that leaves the bracket bisects it. A few steps reach rounding level; all
    rows are solved together.
    """
    n, m = values.shape
    if m == 0:
        return np.zeros(n)
    top = values[:, -1]
    scale = np.maximum(np.abs(values).max(axis=1), np.finfo(float).tiny)
    gaps = top[:, None] - values
    pole = gaps <= POLE_RTOL * scale[:, None]
    w_top = np.where(pole, weights, 0.0).sum(axis=1)
    rest_w = np.where(pole, 0.0, weights)
    rest_gaps = np.where(pole, np.inf, gaps)
    second = rest_gaps.min(axis=1)
    sigma = np.zeros(n)
    single = (pole.sum(axis=1) == 1) & (w_top > 0)
    lonely = single & ~np.isfinite(second)
    sigma[lonely] = top[lonely]  # one eigenvalue, and it is removed: nothing is left
    active = np.flatnonzero(single & np.isfinite(second))
    w, d, w_max, d2 = rest_w[active], rest_gaps[active], w_top[active], second[active]
    lo, hi = np.zeros(active.size), d2.copy()
    s = d2 / 2
    eps = np.finfo(float).eps
    for _ in range(SECULAR_ITERATIONS):
        if active.size == 0:
            break
        den = d - s[:, None]
        terms = w / den
        phi = terms.sum(axis=1)
        slope = (terms / den).sum(axis=1)
        h = w_max / s - phi
        right = h > 0  # the root lies above s
        lo, hi = np.where(right, s, lo), np.where(right, hi, s)
        sigma[active] = s
        # model phi by rest + big / (d2 - sigma), matching value and slope at s; solve w_max / sigma = model
        gap = d2 - s
        big = slope * gap * gap
        rest = np.maximum(phi - big / gap, 0.0)
        b = w_max + rest * d2 + big
        c = w_max * d2
        model = 2 * c / (b + np.sqrt(np.maximum(b * b - 4 * rest * c, 0.0)))
        done = (np.abs(model - s) <= 4 * eps * np.maximum(s, eps * scale[active])) | (hi - lo <= 4 * eps * scale[active])
        sigma[active] = np.where(done, np.clip(model, lo, hi), s)
        step = np.where((model > lo) & (model < hi), model, (lo + hi) / 2)
        keep = ~done
        active, w, d, w_max, d2 = active[keep], w[keep], d[keep], w_max[keep], d2[keep]
        s, lo, hi = step[keep], lo[keep], hi[keep]
    return top - sigma


def arrow_eigen(values: np.ndarray, border: np.ndarray, corner: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""The eigenvalues (ascending) and eigenvectors of every arrow matrix
    :math:`\begin{bmatrix}\operatorname{diag}(\mu) & b_j \\ b_j^\top & c_j\end{bmatrix}` (``values`` :math:`\mu`,
    ``border[:, j]``, ``corner[j]``), one batched decomposition."""
    k, n = values.size, border.shape[1]
    arrow = np.zeros((n, k + 1, k + 1))
    arrow[:, np.arange(k), np.arange(k)] = values
    arrow[:, :k, k] = border.T
    arrow[:, k, :k] = border.T
    arrow[:, k, k] = corner
    return np.linalg.eigh(arrow)  # type: ignore[no-any-return]


#: :func:`removal_tops` needs the support's top eigenvalue this far (relative to the largest magnitude) above the
#: second: nearer, its regrouped secular function loses the digits the arrow matrices' eigensolve keeps.
REMOVAL_GAP_RTOL = 1e-6

#: Most steps of :func:`removal_tops`' root finder (four or five suffice away from the lower pole); a root not
#: found by then is left to the arrow matrix's eigensolve.
REMOVAL_ITERATIONS = 24


def removal_tops(
    values: np.ndarray, basis: np.ndarray, border: np.ndarray, corner: np.ndarray, omega: np.ndarray,
    normal_last: np.ndarray, floor: float,
) -> np.ndarray | None:  # fmt: skip
    r"""The top eigenvalue of every arrow matrix on every hyperplane, where it is above ``floor``; ``floor`` elsewhere.

    Arrow matrix :math:`j` is :math:`M_j = \begin{bmatrix}\operatorname{diag}(\mu) & b_j \\ b_j^\top & c_j\end{bmatrix}`
    (``values`` :math:`\mu` ascending, ``border[:, j]`` :math:`b_j`, ``corner[j]`` :math:`c_j`), hyperplane
    :math:`(j, i)` has the normal :math:`h = (\omega_j z_i, \eta_{ij})` (:math:`z_i` row ``i`` of ``basis``,
    :math:`\eta` = ``normal_last``, ``positions x n``): the value of swapping variable ``j`` in for position ``i``
    (:meth:`spcakit_deflation.swap.SupportSwap._swap_values`), without an eigensolve of the arrow matrices.

    For :math:`\lambda` between the arrow's two largest eigenvalues :math:`\nu_2 < \lambda < \nu_1` the function
    :math:`g(\lambda) = h^\top (M - \lambda I)^{-1} h = \sum_m (h^\top v_m)^2/(\nu_m - \lambda)` increases from
    :math:`-\infty` to :math:`+\infty`, and its root is the top eigenvalue on :math:`h^\perp` (interlacing). With
    the Schur complement on the diagonal block, and the top pole :math:`\mu_1` regrouped so that it cancels
    exactly (:math:`\varepsilon = \mu_1 - \lambda`, sums over the other :math:`l`),

    .. math::

        g(\lambda) = \sum_{l} \frac{h_l^2}{\mu_l - \lambda}
            + \frac{h_1^2\sigma + \varepsilon t^2 - 2 t\, b_1 h_1}{\varepsilon\sigma - b_1^2},\quad
        \sigma = c - \lambda - \sum_{l} \frac{b_l^2}{\mu_l - \lambda},\quad
        t = \eta - \sum_{l} \frac{b_l h_l}{\mu_l - \lambda},

    :math:`O(k)` per evaluation. Only swaps that improve matter: ``floor`` is at least :math:`\mu_1`, which
    lies in :math:`[\nu_2, \nu_1]`, so the value is above ``floor`` exactly when :math:`g(\text{floor}) < 0`, and
    then it is the root in :math:`(\text{floor}, \nu_1)`: Newton's method safeguarded by bisection on that
    bracket, every pair together. :math:`\nu_1` is :func:`bordered_top`'s. ``None`` (the caller decomposes the arrow
    matrices instead) when ``floor`` is not above :math:`\mu_1`, for one value, or when :math:`\mu_1` is within
    :data:`REMOVAL_GAP_RTOL` of :math:`\mu_2` (the regrouped poles would lose digits).

    ``basis`` has a row per position: ``k`` in a support's own eigenbasis, or more where the support's loadings are
    confined to a subspace of dimension ``k`` (under linear conditions: :mod:`spcakit_deflation.null_space`).
    Returns the ``n x positions`` values (rows: arrow matrices, columns: positions).
    """
    k = values.size
    n = border.shape[1]
    if k < 2:
        return None
    positions = basis.shape[0]
    top = float(values[-1])
    scale = max(float(np.abs(values).max()), np.finfo(float).tiny)
    if not floor > top or top - float(values[-2]) <= REMOVAL_GAP_RTOL * scale:
        return None
    rest_mu, z_rest, z_top = values[:-1], basis[:, :-1], basis[:, -1]
    b_rest, b_top = border[:-1], border[-1]
    out = np.full((n, positions), float(floor))
    # the screen: g(floor) < 0, every pair at once (one lambda, so the sums are products)
    r = 1.0 / (rest_mu - floor)
    eps_f = top - floor
    sigma = corner - floor - (b_rest**2).T @ r  # n
    t = normal_last.T - omega[:, None] * ((b_rest * r[:, None]).T @ z_rest.T)  # n x k
    h_top = omega[:, None] * z_top[None, :]  # n x k
    first = omega[:, None] ** 2 * ((z_rest**2) @ r)[None, :]
    g = first + (h_top**2 * sigma[:, None] + eps_f * t**2 - 2 * t * b_top[:, None] * h_top) / (
        eps_f * sigma[:, None] - b_top[:, None] ** 2)
    rows, cols = np.nonzero(g < 0)
    if rows.size == 0:
        return out
    nu1 = bordered_top(values, border[:, rows], corner[rows])
    keep = nu1 > floor  # else no removal reaches above the floor (interlacing)
    rows, cols, nu1 = rows[keep], cols[keep], nu1[keep]
    hi, lo = nu1.copy(), np.full(rows.size, float(floor))
    zr, w, bt, ht, bl = z_rest[cols], omega[rows], b_top[rows], h_top[rows, cols], b_rest[:, rows].T
    c_j, eta = corner[rows], normal_last[cols, rows]
    f_lo, f_hi = (nu1 - floor) * g[rows, cols], np.full(rows.size, np.inf)  # psi at the bracket's ends
    lam = (lo + hi) / 2
    active = np.arange(rows.size)
    result = hi.copy()
    tiny = np.finfo(float).eps
    for it in range(REMOVAL_ITERATIONS):
        if active.size == 0:
            break
        x = lam[active]
        inv = 1.0 / (rest_mu[None, :] - x[:, None])
        inv2 = inv * inv
        hz = w[active, None] * zr[active]
        bz = bl[active]
        s_ = c_j[active] - x - np.sum(bz * bz * inv, axis=1)
        ds = -1.0 - np.sum(bz * bz * inv2, axis=1)
        t_ = eta[active] - np.sum(bz * hz * inv, axis=1)
        dt = -np.sum(bz * hz * inv2, axis=1)
        e = top - x
        h1, b1 = ht[active], bt[active]
        num = h1 * h1 * s_ + e * t_ * t_ - 2 * t_ * b1 * h1
        dnum = h1 * h1 * ds - t_ * t_ + 2 * e * t_ * dt - 2 * dt * b1 * h1
        den = e * s_ - b1 * b1
        dden = -s_ + e * ds
        g = np.sum(hz * hz * inv, axis=1) + num / den
        dg = np.sum(hz * hz * inv2, axis=1) + (dnum * den - num * dden) / (den * den)
        # g's pole at nu_1 taken out: psi = (nu_1 - x) g has the same root and is smooth up to nu_1
        gap = nu1[active] - x
        value, slope = gap * g, gap * dg - g
        right = value < 0  # the root lies above x
        lo[active] = np.where(right, x, lo[active])
        hi[active] = np.where(right, hi[active], x)
        f_lo[active] = np.where(right, value, f_lo[active])
        f_hi[active] = np.where(right, f_hi[active], value)
        result[active] = x
        magnitude = gap * (np.sum(np.abs(hz * hz * inv), axis=1) + np.abs(num / den))
        with np.errstate(divide="ignore", invalid="ignore"):
            newton = x - value / slope
        # converged: psi at rounding level, Newton's step at rounding level, or the bracket closed
        done = ((np.abs(value) <= 16 * tiny * magnitude) | (np.abs(newton - x) <= 4 * tiny * scale)
                | (hi[active] - lo[active] <= 4 * tiny * scale))
        # Newton's step where it stays in the bracket, else the secant through the bracket's ends (psi is nearly
        # linear there), else bisection; bisection every eighth step too, a safeguard against slow steps
        a, b, fa, fb = lo[active], hi[active], f_lo[active], f_hi[active]
        with np.errstate(divide="ignore", invalid="ignore"):
            secant = a - fa * (b - a) / (fb - fa)
        secant = np.where((secant > a) & (secant < b), secant, (a + b) / 2)
        inside = (newton > a) & (newton < b)
        lam[active] = (a + b) / 2 if it % 8 == 7 else np.where(inside, newton, secant)
        active = active[~done]
    out[rows, cols] = np.maximum(result, floor)
    if active.size:  # a root next to the lower pole (nu_2 near the floor): the arrow matrices' eigensolve
        hard_rows, hard_cols = rows[active], cols[active]
        arrows, index = np.unique(hard_rows, return_inverse=True)
        nu, vectors = arrow_eigen(values, border[:, arrows], corner[arrows])
        normal = np.concatenate([omega[hard_rows, None] * basis[hard_cols], normal_last[hard_cols, hard_rows, None]], axis=1)
        weights = np.einsum("pi,pim->pm", normal, vectors[index]) ** 2
        weights /= np.maximum(weights.sum(axis=1, keepdims=True), np.finfo(float).tiny)
        out[hard_rows, hard_cols] = np.maximum(hyperplane_tops(nu[index], weights), floor)
    return out
