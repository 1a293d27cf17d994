r"""The ``swap`` refiner: block coordinate ascent on CPEV by support swaps.

The objective
-------------
For unit loadings :math:`x_1, \dots, x_r` with supports :math:`S_1, \dots, S_r`
(:math:`|S_t| = k_t`), CPEV is the variance of their span as a fraction of
:math:`\operatorname{tr} C`. Fix every loading but :math:`x_t`, let :math:`Q`
be an orthonormal basis of the others' span and :math:`P = I - QQ^\top`. The
variance of the span splits into what the others explain and what :math:`x_t`
adds to them,

.. math::

    \operatorname{tr}(U^\top C U) = \operatorname{tr}(Q^\top C Q)
        + \frac{x_t^\top PCP\, x_t}{x_t^\top P\, x_t},

Mackey's *additional variance*. Its maximiser on a support :math:`S` is the
top eigenvector of the pencil :math:`((PCP)_{SS}, P_{SS})` - the generalized
problem of Mackey's generalized deflation - with value :math:`\lambda(S)`. So
the best loading :math:`t` at cardinality :math:`k_t`, the others fixed, solves
:math:`\max_{|S| = k_t} \lambda(S)`, and the refiner ascends it by swaps
:math:`S \to S - \{i\} + \{j\}`, visiting the loadings in turn (cyclic block
coordinate ascent on CPEV).

The iteration
-------------
1. **Re-fit** on the supports as they are: each loading in turn becomes the top
   eigenvector of its pencil, kept when it raises the span's variance by more
   than :data:`REFIT_RTOL` (relative), for :data:`REFIT_SWEEPS` sweeps. This
   part lives on the union :math:`T` of the supports: it needs :math:`C_{TT}`
   only, whatever ``p`` is.
2. **Swap sweep**: each loading in turn, the others fixed, makes the best swap
   the screen finds (below) while one raises the span's variance by more than
   ``tol`` (relative), then the sweep goes on to the next loading.
3. Repeat from 1 while a sweep swaps, at most ``max_sweeps`` sweeps. After a
   sweep without a swap the re-fits run to convergence (at most
   :data:`POLISH_SWEEPS` sweeps, with Newton's method on all the loadings'
   values where the span's variance is strictly concave, :func:`_newton`:
   coordinate re-fits alone converge slowly when two loadings compete for one
   direction); if that moved the loadings, one more swap sweep checks them.

Every accepted move raises CPEV, so the result never explains less than the
input (checked at the end with the tie rule of :mod:`spcakit.numerics.ties`: the input
is returned if it explains more by more than rounding). Each loading keeps its
number of nonzeros: a move that would leave an exact zero on a support is
refused. No move may make the loadings nearly dependent (:data:`INDEPENDENCE`):
with overlapping supports, two loadings that become nearly equal span
directions neither is sparse in, and the variance of the span can creep up
that way without end. A result of the refiner is its own fixed point: refining
it again finds no move above the tolerances and returns it unchanged.

Scoring the swaps
-----------------
A visit has the eigendecomposition of the support's pencil. Adding a variable
:math:`j` borders it by a row and a column, so :math:`\lambda(S + \{j\})` is
the largest root of a secular equation
(:func:`~spcakit_deflation.secular.bordered_top`): :math:`O(k)` per candidate
after one :math:`O(k^2p)` product, all :math:`p - k` candidates at once. By
interlacing it bounds every swap that brings :math:`j` in,

.. math::

    \lambda(S - \{i\} + \{j\}) \le \lambda(S + \{j\}),

which is the screen: only entering variables whose bound beats the current
value can help, and the ``candidates`` of them with the largest bounds are
scored exactly. In the eigenbasis of :math:`S` the bordered pencil is an arrow
matrix; one batched eigendecomposition of these :math:`(k+1)\times(k+1)`
matrices and the secular equation of a hyperplane restriction
(:func:`~spcakit_deflation.secular.hyperplane_tops`) give the values of all :math:`k` removals of each
(:math:`O(k^3)` per entering variable, no eigensolve per swap), after a second
bound, :math:`\nu_1 - w_1(\nu_1 - \nu_2)`, has set aside the removals that
cannot win. Only improving swaps matter, so when the support's top value is simple the arrow matrices are not
decomposed at all: a removal's value is above the floor exactly when a secular function of the arrow is negative
there, and is then its root (:func:`~spcakit_deflation.secular.removal_tops`), :math:`O(k^2)` per entering variable
instead of :math:`O(k^3)`; the same swaps and values to rounding (on the colon data at :math:`k = 100`, ``r = 3``,
the default fit 5.7 s -> 3.3-3.9 s with the same loadings). The chosen swap is verified on a fresh :math:`k\times k` pencil
(:func:`spcakit.numerics.linalg.generalized_top`) before it is made. Swaps whose values
tie (:mod:`spcakit.numerics.ties`; swapping in either of two variables whose columns
differ only inside the others' span gives the same span) go to the loading with
the largest part outside the others' span, :math:`x^\top Px/x^\top x`: a
property of the loadings, not of the order of the variables, so that permuting
the variables permutes the result.

**Best or first improvement.** ``improvement="best"`` (default) makes the best
swap of those scored, ``"first"`` the improving swap whose entering variable
has the largest bound. Both score the same batch, so they cost the same per
step. Measured (``benchmarks/refine.py``, 33 runs on Pitprops, image patches,
three gene data sets and spiked data): they end at the same CPEV in 26 runs,
``"first"`` higher in 5 and lower in 2 (mean +0.003 %), in the same total time
(it makes 10 % more swaps); on 100 Wishart covariances (``p = 14``, one loading
of 4 from ``tpower``) they reach the exhaustive optimum in 80 and 81 cases.
``"best"`` is the default because its choice is a property of the problem (the
best swap, ties broken as above), which keeps the refiner
permutation-equivariant; ``"first"`` depends on the order in which the screen
ranks equal bounds.

Cost
----
The columns :math:`C_{:,S_t}` are fetched once and one more per swap
(:meth:`~spcakit.numerics.operators.CovarianceOperator.columns`: :math:`O(np)` each
for a data operator, nothing :math:`p\times p` is ever formed). A visit of the
swap sweep costs :math:`O(p\,|T|\,r)` for the other loadings' span and its
products, :math:`O(pkr + pk^2)` for the bounds and :math:`O(k^3)` per
entering variable examined; a re-fit visit costs :math:`O(|T|^2 r + k^3)`,
independent of ``p``.

One module, a little above the 600 lines the others keep to: the refiner and the numerics only it uses (the
span's value, the re-fit of a loading on its support by Newton steps, the pencil columns of a removal).

References
----------
L. Mackey, *Deflation Methods for Sparse PCA*, NIPS 2008 (§2.3 additional
variance, §3 generalized deflation).
"""

from __future__ import annotations

import attrs
import numpy as np

from spcakit.plugin_api import (
    RANGE_TOL,
    CovarianceOperator,
    Problem,
    Refined,
    Refiner,
    added_variance_problem,
    boolean,
    cpev,
    generalized_top,
    index_sets,
    integer,
    number,
    one_of,
    orthonormal_basis,
    part,
    ties,
    to_float,
    to_int,
)
from spcakit_deflation.secular import (
    Reduced,
    addition_values,
    arrow_eigen,
    deletion_values,
    hyperplane_tops,
    reduce_pencil,
    removal_tops,
)

PAPER = "Mackey - Deflation Methods for Sparse PCA (NIPS 2008)"
#: How the swap of a step is chosen (see the module).
IMPROVEMENTS = ("best", "first")
#: A re-fit replaces a loading only when it adds more than this (relative to the span's variance): the tie
#: tolerance of :mod:`spcakit.numerics.ties`. Gains below it are rounding (eigenvectors of a pencil whose :math:`P_{SS}` is
#: ill-conditioned are accurate to about :math:`10^{-6}`, their values to :math:`10^{-12}`), and a refined result is
#: returned exactly as it is when refined again.
REFIT_RTOL = ties.RTOL
#: Coordinate re-fit sweeps between two swap sweeps, and between two tries of Newton's method (each sweep costs
#: O(|T|^2 r) per loading, independent of p).
REFIT_SWEEPS = 3
#: Most re-fit sweeps before the last swap sweep, where the re-fits are taken to convergence.
POLISH_SWEEPS = 300
#: Newton's method is used where the Hessian's eigenvalues (on the tangent space) are all below -this times the
#: largest magnitude: strictly concave.
POLISH_CONCAVITY = 1e-9
#: Most Newton steps of the polish, and halvings of a step that does not raise the span's variance.
POLISH_ITERATIONS = 50
POLISH_HALVINGS = 10
#: Newton's method stops when its predicted gain (twice the quadratic model's) is below this, relative to the
#: span's variance: a step that small changes the loadings by about 1e-7, and the variance by rounding.
POLISH_RTOL = 1e-13
#: Most unknowns (nonzeros of all loadings) the polish takes on (it solves an N x N eigenproblem per step).
POLISH_LIMIT = 1500
#: Loadings whose condition number is above 1 / this are not polished (nearly dependent loadings).
POLISH_CONDITION = 1e-6
#: The input is kept when its CPEV exceeds the refined one's by more than this (relative): rounding ties.
KEEP_RTOL = 1e-12
#: No move may make the smallest singular value of the (unit) loadings fall below this (or below its value before
#: the move, when that is smaller already). CPEV credits the whole span, and two loadings that become nearly equal
#: span directions neither of them is sparse in: with overlapping supports the variance can creep up that way
#: without end (the supremum is not attained), a gain no user wants. 0.1 allows two loadings an angle down to about
#: 8 degrees (cosine 0.99).
INDEPENDENCE = 0.1


def _oriented(p: int, support: np.ndarray, y: np.ndarray, previous: np.ndarray) -> np.ndarray:
    """The unit loading equal to ``y`` on ``support`` (zero elsewhere), signed to agree with ``previous``."""
    x = np.zeros(p)
    x[support] = y
    x /= np.linalg.norm(x)
    agreement = float(x @ previous)
    if agreement < 0 or (agreement == 0 and x[ties.argmax(np.abs(x))] < 0):
        x = -x
    return x


def _rayleigh(a_ss: np.ndarray, b_ss: np.ndarray, y: np.ndarray) -> float:
    r""":math:`y^\top A y / y^\top B y` (0 when :math:`y^\top B y` is at rounding level)."""
    by = float(y @ b_ss @ y)
    return float(y @ a_ss @ y) / by if by > RANGE_TOL * float(y @ y) else 0.0


class ColumnCache:
    """The columns of :math:`C` fetched so far, by variable (fetched once each, in batches).

    They are kept side by side in one ``p x m`` array (its width doubled when full) with each variable's slot, so
    that the columns asked for are one fancy index, not a stack of columns.
    """

    def __init__(self, op: CovarianceOperator) -> None:
        self.op = op
        self.slot = np.full(op.p, -1)  # each variable's column in the store, -1 until fetched
        self.store = np.empty((op.p, 0))
        self.count = 0

    def __call__(self, index: np.ndarray) -> np.ndarray:
        index = np.asarray(index, dtype=int)
        missing = index[self.slot[index] < 0]
        if missing.size:
            fetched = self.op.columns(missing)
            if self.count + missing.size > self.store.shape[1]:
                grown = np.empty((self.op.p, max(2 * self.store.shape[1], self.count + missing.size, 16)))
                grown[:, : self.count] = self.store[:, : self.count]
                self.store = grown
            self.store[:, self.count : self.count + missing.size] = fetched
            self.slot[missing] = np.arange(self.count, self.count + missing.size)  # repeated: one of its copies
            self.count += missing.size
        return self.store[:, self.slot[index]]


@attrs.frozen(kw_only=True)
class _Span:
    r"""The span of the other loadings: orthonormal :math:`Q` (``p x m``), :math:`CQ` and :math:`Q^\top CQ`."""

    basis: np.ndarray
    c_basis: np.ndarray
    gram: np.ndarray

    @property
    def explained(self) -> float:
        return float(np.trace(self.gram))


def _span_of_others(x: np.ndarray, t: int, columns: ColumnCache) -> _Span:
    """The span of every loading but ``t``: its basis on the union of their supports, products from the cached columns."""
    p = x.shape[0]
    others = np.delete(x, t, axis=1)
    union = np.flatnonzero(np.any(others != 0, axis=1))
    q_union = orthonormal_basis(others[union]) if union.size else np.zeros((0, 0))
    basis = np.zeros((p, q_union.shape[1]))
    basis[union] = q_union
    c_basis = columns(union) @ q_union
    gram = q_union.T @ c_basis[union]
    return _Span(basis=basis, c_basis=c_basis, gram=(gram + gram.T) / 2)


@part("swap", paper=PAPER)
class SupportSwap(Refiner):
    r"""swap variables in and out of each loading's support while CPEV grows (block coordinate ascent, same cardinalities)

    The objective, the iteration, the screen and the cost are described in
    :mod:`spcakit_deflation.swap`. The result's metrics record
    ``refiner_cpev_before``, ``refiner_cpev_after``, ``refiner_swaps`` and
    ``refiner_sweeps``.

    Parameters
    ----------
    max_sweeps
        Most swap sweeps (each visits every loading once).
    tol
        A swap is made only when it raises the span's variance by more than
        ``tol`` times that variance (relative; default :math:`10^{-9}`).
    candidates
        Most entering variables scored exactly per swap: those with the largest
        bounds :math:`\lambda(S + \{j\})`, among those whose bound beats the
        current value (the others cannot help). Measured after ``spcart``,
        ``tpower``, ``rsvd-gpb`` and ``greedy`` on Pitprops, the image patches,
        Colon and three spiked sets: 16 reached the same CPEV as 64 in every
        run (so did 8); 4 fell short in 7 of 24, by up to 1.7 %.
    improvement
        ``"best"``: the best swap scored; ``"first"``: the improving swap whose
        entering variable has the largest bound (see the module for the
        measurements behind the default).
    polish
        Re-fit the loadings on their supports until they stop moving (at most
        :data:`POLISH_SWEEPS` sweeps, with Newton's method) once no swap is
        left, then sweep the swaps once more; ``False``: stop when no swap is
        left, for loadings that only start another refiner (``auto``'s members
        under a constraint: on 137 constrained fits of Pitprops, wine, breast
        cancer, diabetes, mtcars and digits the same FVE, higher on 2, and
        10 % less time in all, 25 % on Pitprops orthogonal).
    """

    max_sweeps: int = attrs.field(default=50, converter=to_int, validator=integer(1))
    tol: float = attrs.field(default=1e-9, converter=to_float, validator=number(0, 1, high_open=True))
    candidates: int = attrs.field(default=16, converter=to_int, validator=integer(1))
    improvement: str = attrs.field(default="best", validator=one_of(*IMPROVEMENTS))
    polish: bool = attrs.field(default=True, validator=boolean)

    def __call__(self, problem: Problem, loadings: np.ndarray) -> Refined:
        op = problem.covariance
        given = np.array(loadings, dtype=float, copy=True)
        before = cpev(given, op)
        if not np.all(np.any(given != 0, axis=0)):  # an empty loading has no support to swap on: nothing to do
            return Refined(loadings=given, report={"cpev_before": before, "cpev_after": before, "swaps": 0, "sweeps": 0})
        x = given.copy()
        columns = ColumnCache(op)
        diag_c = op.diagonal()
        swaps = sweeps = 0
        settled = False  # the last swap sweep made no swap
        while True:
            if settled and not self.polish:
                break
            x, moved = self._refit(x, columns, polish=settled)
            if (settled and not moved) or sweeps == self.max_sweeps:
                break
            sweeps += 1
            made = 0
            for t in range(x.shape[1]):
                x[:, t], count = self._swap(x, t, columns, diag_c)
                made += count
            swaps += made
            settled = made == 0
        after = cpev(x, op)
        if ties.improves(before, after, rtol=KEEP_RTOL):
            x, after, swaps = given, before, 0
        return Refined(loadings=x, report={"cpev_before": before, "cpev_after": after, "swaps": swaps, "sweeps": sweeps})

    # -- step 1: re-fit every loading on its support, on the union of the supports -------------------------------
    @staticmethod
    def _refit(x: np.ndarray, columns: ColumnCache, *, polish: bool) -> tuple[np.ndarray, bool]:
        """The loadings re-fitted on their supports, and whether they moved.

        Sweeps of coordinate re-fits (:func:`_refit_sweep`): at most :data:`REFIT_SWEEPS` between swap sweeps; with
        ``polish`` (before the last swap sweep) until they stop moving, at most :data:`POLISH_SWEEPS`, with Newton's
        method (:func:`_newton`) tried after every :data:`REFIT_SWEEPS` of them.
        """
        p, r = x.shape
        union = np.flatnonzero(np.any(x != 0, axis=1))
        c_uu = columns(union)[union]
        c_uu = (c_uu + c_uu.T) / 2
        xu = x[union]
        positions = [np.flatnonzero(xu[:, t]) for t in range(r)]
        moved = False
        for sweep in range(POLISH_SWEEPS if polish else REFIT_SWEEPS):
            if not _refit_sweep(c_uu, xu, positions):
                break
            moved = True
            if polish and r > 1 and (sweep + 1) % REFIT_SWEEPS == 0:
                xu = _newton(c_uu, xu)
        out = np.zeros((p, r))
        out[union] = xu
        return out, moved

    # -- step 2: swaps on one loading ----------------------------------------------------------------------------
    def _swap(self, x: np.ndarray, t: int, columns: ColumnCache, diag_c: np.ndarray) -> tuple[np.ndarray, int]:
        """Loading ``t`` after its swaps (the others fixed), and how many were made."""
        p = x.shape[0]
        loading = x[:, t]
        support = np.flatnonzero(loading)
        k = support.size
        if k == p:
            return loading, 0
        span = _span_of_others(x, t, columns)
        q, cq, gram = span.basis, span.c_basis, span.gram
        diag_a = diag_c - 2 * np.einsum("ij,ij->i", cq, q) + np.einsum("ij,ij->i", q @ gram, q)
        diag_b = 1.0 - np.einsum("ij,ij->i", q, q)
        count = 0
        independence = _smallest_singular(x, t, support, loading[support])
        while True:
            c_s = columns(support)
            a_cols, b_cols = _pencil_columns(c_s, support, q, cq, gram)
            a_ss = a_cols[support]
            b_ss = None if b_cols is None else b_cols[support]
            reduced = reduce_pencil((a_ss + a_ss.T) / 2, None if b_ss is None else (b_ss + b_ss.T) / 2)
            need = reduced.top + self.tol * abs(span.explained + reduced.top)
            options = self._choose(reduced, a_cols, b_cols, support, diag_a, diag_b, need)
            verified = []
            for out, entering in options:  # one swap, or several that tie (spcakit.numerics.ties) on the value
                new_support = np.sort(np.append(np.delete(support, out), entering))
                a_new, b_new = added_variance_problem(columns(new_support), new_support, q, cq, gram)
                value, y = generalized_top(a_new, b_new)
                # else rounding disagrees with the secular value, a weight would be 0, or the loadings would be
                # nearly dependent
                if value > need and np.count_nonzero(y) == k and _independent(
                        _smallest_singular(x, t, new_support, y), independence):  # fmt: skip
                    verified.append((value, _rayleigh(b_new, np.eye(k), y), new_support, y))
            if not verified:
                return loading, count
            # ties on the value (swaps giving the same span) go to the loading with the largest part outside the
            # others' span, x'Px / x'x: a property of the loadings, not of the variables' order
            best = ties.order(np.array([v[0] for v in verified]), np.array([v[1] for v in verified]))[0]
            _, _, support, y = verified[best]
            loading = _oriented(p, support, y, loading)
            independence = _smallest_singular(x, t, support, y)
            count += 1

    def _choose(
        self, reduced: Reduced, a_cols: np.ndarray, b_cols: np.ndarray | None, support: np.ndarray,
        diag_a: np.ndarray, diag_b: np.ndarray, need: float,
    ) -> list[tuple[int, int]]:  # fmt: skip
        """The swaps ``(position leaving, variable entering)`` the screen picks: none when none beats ``need``, one,
        or (best improvement) all those whose values tie with the best (:mod:`spcakit.numerics.ties`), by decreasing bound."""
        p = a_cols.shape[0]
        outside = np.ones(p, dtype=bool)
        outside[support] = False
        candidates = np.flatnonzero(outside)
        b_rows = None if b_cols is None else b_cols[candidates].T
        bounds = addition_values(reduced, a_cols[candidates].T, diag_a[candidates], b_rows, diag_b[candidates])
        hopeful = int(np.count_nonzero(bounds > need))
        if hopeful == 0:
            return []
        chosen = candidates[ties.top_k(bounds, min(hopeful, self.candidates))]  # by decreasing bound
        values = self._swap_values(reduced, a_cols, b_cols, support, diag_a, diag_b, chosen, need)
        if self.improvement == "first":
            leaving = ties.argmax_columns(values.T)
            improving = np.flatnonzero(values[np.arange(chosen.size), leaving] > need)
            return [(int(leaving[improving[0]]), int(chosen[improving[0]]))] if improving.size else []
        top = float(values.max())
        if not top > need:
            return []
        tied = np.argwhere(values >= top - ties.tolerance(values))
        return [(int(position), int(chosen[row])) for row, position in tied]

    @staticmethod
    def _swap_values(
        reduced: Reduced, a_cols: np.ndarray, b_cols: np.ndarray | None, support: np.ndarray,
        diag_a: np.ndarray, diag_b: np.ndarray, chosen: np.ndarray, floor: float,
    ) -> np.ndarray:  # fmt: skip
        r""":math:`\lambda(S - \{i\} + \{j\})` for every entering ``j`` in ``chosen`` (rows) and position ``i`` (columns).

        In the orthonormal eigenbasis :math:`u_l = P e_S z_l` of the support's
        pencil, adding :math:`j` appends the unit :math:`w` along the part of
        :math:`Pe_j` outside their span, :math:`Pe_j = \sum_l \beta_l u_l + \omega w`
        (:math:`\beta = Z^\top P_{Sj}`, :math:`\omega^2 = P_{jj} - \|\beta\|^2`):
        the bordered (arrow) matrix of :func:`~spcakit_deflation.secular.addition_values`.
        Removing variable :math:`i` then restricts these coordinates to the
        hyperplane orthogonal to :math:`h_i = (\omega z_i, -z_i^\top\beta)`
        (:math:`z_i` the row :math:`i` of :math:`Z`): the coefficient of
        :math:`e_i` must vanish. One batched eigendecomposition of the arrow
        matrices and :func:`~spcakit_deflation.secular.hyperplane_tops` score every removal. When
        :math:`P_{SS}` is singular (the support meets the other loadings'
        span) each entering variable is scored on its own bordered pencil
        (:func:`~spcakit_deflation.secular.deletion_values`) instead.
        """
        k = support.size
        z, mu = reduced.basis, reduced.values
        if reduced.null.shape[1] or z.shape[1] != k:
            return np.array([_bordered_removals(a_cols, b_cols, support, diag_a, diag_b, int(j)) for j in chosen]).reshape(
                chosen.size, k)
        a_tilde = z.T @ a_cols[chosen].T
        if b_cols is None:
            b_tilde, gamma = np.zeros_like(a_tilde), np.ones(chosen.size)
        else:
            b_tilde = z.T @ b_cols[chosen].T
            gamma = np.maximum(diag_b[chosen] - np.einsum("ij,ij->j", b_tilde, b_tilde), RANGE_TOL)
        omega = np.sqrt(gamma)
        border = (a_tilde - mu[:, None] * b_tilde) / omega
        corner = (diag_a[chosen] - 2 * np.einsum("ij,ij->j", a_tilde, b_tilde)
                  + np.einsum("ij,ij->j", mu[:, None] * b_tilde, b_tilde)) / gamma  # fmt: skip
        fast = removal_tops(mu, z, border, corner, omega, -(z @ b_tilde), floor)
        if fast is not None:  # the improving swaps' values without decomposing the arrow matrices
            return fast
        n = chosen.size
        nu, vectors = arrow_eigen(mu, border, corner)
        normal = np.empty((n, k, k + 1))
        normal[:, :, :k] = omega[:, None, None] * z[None, :, :]
        normal[:, :, k] = -(z @ b_tilde).T
        coordinates = normal @ vectors
        weights = coordinates**2
        weights /= np.maximum(weights.sum(axis=2, keepdims=True), np.finfo(float).tiny)
        # on h's hyperplane a unit c has c_top^2 <= 1 - w_top, so the value is at most nu_top - w_top (nu_top - nu_2):
        # only the pairs whose bound beats ``floor`` need the secular equation
        values = nu[:, -1:] - weights[:, :, -1] * (nu[:, -1:] - nu[:, -2:-1])
        open_pairs = np.argwhere(values > floor)
        if open_pairs.size:
            rows, cols = open_pairs[:, 0], open_pairs[:, 1]
            values[rows, cols] = hyperplane_tops(nu[rows], weights[rows, cols])
        return values


def _refit_sweep(c: np.ndarray, x: np.ndarray, positions: list[np.ndarray]) -> bool:
    """One sweep of re-fits of the loadings ``x`` (changed in place) on their supports; whether one moved.

    A re-fit is kept when the span's variance (:func:`_span_value`, the formula of CPEV) grows by more than
    :data:`REFIT_RTOL` (the pencil's own Rayleigh quotients are too noisy for that decision when :math:`P_{SS}`
    is ill-conditioned, a support nearly inside the others' span) and the loadings stay independent
    (:func:`_independent`).
    """
    n, r = x.shape
    moved = False
    current, independence = _span_value(c, x)
    for t in range(r):
        q = orthonormal_basis(np.delete(x, t, axis=1)) if r > 1 else np.zeros((n, 0))
        cq = c @ q
        gram = q.T @ cq
        pos = positions[t]
        a_ss, b_ss = added_variance_problem(c[:, pos], pos, q, cq, (gram + gram.T) / 2)
        value, y = generalized_top(a_ss, b_ss)
        if value <= 0 or np.count_nonzero(y) != pos.size:
            continue
        trial = x.copy()
        trial[:, t] = _oriented(n, pos, y, x[:, t])
        refitted, smallest = _span_value(c, trial)
        if ties.improves(refitted, current, rtol=REFIT_RTOL) and _independent(smallest, independence):
            x[:, t], current, independence, moved = trial[:, t], refitted, smallest, True
    return moved


def _span_value(c: np.ndarray, x: np.ndarray) -> tuple[float, float]:
    r"""The variance :math:`\operatorname{tr}(U^\top CU)` of the span of ``x`` and the smallest singular value of ``x``.

    :math:`U` is an orthonormal basis of the span, rank-revealing as for CPEV (:func:`spcakit.analysis.metrics.cpev`).
    """
    u, sing, _ = np.linalg.svd(x, full_matrices=False)
    rank = int(np.sum(sing > sing[0] * max(x.shape) * np.finfo(float).eps)) if sing.size and sing[0] > 0 else 0
    u = u[:, :rank]
    return float(np.sum(u * (c @ u))), float(sing[-1]) if sing.size else 0.0


def _independent(smallest: float, before: float) -> bool:
    """Whether loadings whose smallest singular value is ``smallest`` may replace loadings where it was ``before``.

    See :data:`INDEPENDENCE`: it may not fall below that floor, nor below ``before`` when that is below it already.
    """
    return smallest >= min(INDEPENDENCE, before)


def _gradient_hessian(c: np.ndarray, x: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""Gradient and Hessian of the span's variance :math:`F = \operatorname{tr}(G^{-1}H)` in the entries ``(rows, cols)``.

    With :math:`G = X^\top X`, :math:`H = X^\top CX`, :math:`L = G^{-1}`, the projector :math:`\Pi = XLX^\top`
    onto the span, :math:`\Pi_\perp = I - \Pi`, :math:`K = XL` and :math:`\Gamma = (CX - XLH)L`:
    :math:`\partial F/\partial X_{ia} = 2\Gamma_{ia}` and

    .. math::

        \frac{\partial^2 F}{\partial X_{ia}\,\partial X_{jb}} = 2\big[(\Pi_\perp C\Pi_\perp)_{ij} L_{ab}
            - (\Pi_\perp)_{ij} (LHL)_{ab} - K_{ib}\Gamma_{ja} - \Gamma_{ib}K_{ja}\big].
    """
    n = x.shape[0]
    inverse = np.linalg.inv(x.T @ x)
    cx = c @ x
    h = x.T @ cx
    k_mat = x @ inverse
    gamma = (cx - k_mat @ h) @ inverse
    outside = np.eye(n) - k_mat @ x.T
    outside = (outside + outside.T) / 2
    squeezed = outside @ c @ outside
    lhl = inverse @ h @ inverse
    ix = np.ix_
    k_ra, gamma_ra = k_mat[ix(rows, cols)], gamma[ix(rows, cols)]
    hessian = 2 * (squeezed[ix(rows, rows)] * inverse[ix(cols, cols)] - outside[ix(rows, rows)] * lhl[ix(cols, cols)]
                   - k_ra * gamma_ra.T - gamma_ra * k_ra.T)  # fmt: skip
    return 2 * gamma[rows, cols], (hessian + hessian.T) / 2


def _newton(c: np.ndarray, x: np.ndarray) -> np.ndarray:
    r"""The loadings after Newton's method on their span's variance on their supports, where it is concave.

    Coordinate re-fits converge linearly, slowly when two loadings compete for one direction (hundreds of sweeps
    on Pitprops). Near a strict local maximum Newton's method on the values of all loadings together
    (:math:`N = \sum_t k_t` unknowns, :math:`C_{TT}` only, :func:`_gradient_hessian`) converges quadratically.
    Its steps are taken in the tangent space of the unit columns (the scale of each loading changes nothing),
    only while the Hessian there is negative definite (else ``x`` is returned as it is, for more re-fits: a
    step that is not Newton's would depend on rounding), halved until the variance grows, until the predicted
    gain is rounding. Skipped above :data:`POLISH_LIMIT` unknowns or for nearly dependent loadings; kept only
    when the variance grows by more than :data:`REFIT_RTOL` and every loading keeps its number of nonzeros.
    """
    rows, cols = np.nonzero(x)
    r = x.shape[1]
    if rows.size > POLISH_LIMIT or rows.size <= r or np.linalg.cond(x) > 1 / POLISH_CONDITION:
        return x
    start, independence = _span_value(c, x)
    current = start
    polished = x.copy()
    for _ in range(POLISH_ITERATIONS):
        gradient, hessian = _gradient_hessian(c, polished, rows, cols)
        scale = np.zeros((rows.size, r))
        scale[np.arange(rows.size), cols] = polished[rows, cols]
        scale /= np.linalg.norm(scale, axis=0)
        tangent = np.linalg.svd(scale, full_matrices=True)[0][:, r:]  # orthonormal complement of the scalings
        values, vectors = np.linalg.eigh(tangent.T @ hessian @ tangent)
        if values[-1] >= -POLISH_CONCAVITY * max(float(np.abs(values).max()), np.finfo(float).tiny):
            break  # not (strictly) concave here
        step = tangent @ (vectors @ ((vectors.T @ (tangent.T @ gradient)) / -values))
        if float(gradient @ step) <= POLISH_RTOL * abs(current):
            break  # the predicted gain is at rounding level: converged
        for _ in range(POLISH_HALVINGS):
            trial = polished.copy()
            trial[rows, cols] += step
            trial /= np.linalg.norm(trial, axis=0)
            value, smallest = _span_value(c, trial)
            if value > current and _independent(smallest, independence):
                break
            step /= 2
        else:
            break
        polished, current = trial, value
    if np.any(np.count_nonzero(polished, axis=0) != np.count_nonzero(x, axis=0)):
        return x
    if not ties.improves(current, start, rtol=REFIT_RTOL):
        return x
    signs = np.where(np.einsum("ij,ij->j", polished, x) < 0, -1.0, 1.0)
    return polished * signs


def _smallest_singular(x: np.ndarray, t: int, support: np.ndarray, y: np.ndarray) -> float:
    """The smallest singular value of the unit loadings ``x`` with loading ``t`` replaced by ``y`` on ``support``."""
    others = np.delete(x, t, axis=1)
    rows = index_sets.union(np.flatnonzero(np.any(others != 0, axis=1)), support)
    trial = np.zeros((rows.size, x.shape[1]))
    trial[:, np.arange(x.shape[1]) != t] = others[rows]
    trial[np.searchsorted(rows, support), t] = y / np.linalg.norm(y)
    return float(np.linalg.svd(trial, compute_uv=False)[-1])


def _pencil_columns(
    c_s: np.ndarray, support: np.ndarray, q: np.ndarray, cq: np.ndarray, gram: np.ndarray
) -> tuple[np.ndarray, np.ndarray | None]:
    r""":math:`(PCP)_{:,S}` and :math:`P_{:,S}` (``None`` when :math:`P = I`), ``p x k`` each, from :math:`C_{:,S}`."""
    if q.shape[1] == 0:
        return c_s, None
    q_s, cq_s = q[support], cq[support]
    a_cols = c_s - cq @ q_s.T - q @ (cq_s.T - gram @ q_s.T)
    b_cols = -(q @ q_s.T)
    b_cols[support, np.arange(support.size)] += 1.0
    return a_cols, b_cols


def _bordered_removals(
    a_cols: np.ndarray, b_cols: np.ndarray | None, support: np.ndarray, diag_a: np.ndarray, diag_b: np.ndarray, j: int
) -> np.ndarray:
    r""":math:`\lambda(S - \{i\} + \{j\})` for every position ``i``, from the eigendecomposition of the bordered pencil."""
    k = support.size
    a_sj = a_cols[j]
    a_ss = a_cols[support]
    a2 = np.block([[a_ss, a_sj[:, None]], [a_sj[None, :], np.array([[diag_a[j]]])]])
    if b_cols is None:
        return deletion_values(reduce_pencil((a2 + a2.T) / 2, None), np.ones(k + 1))[:k]
    b_sj, b_ss = b_cols[j], b_cols[support]
    b2 = np.block([[b_ss, b_sj[:, None]], [b_sj[None, :], np.array([[diag_b[j]]])]])
    b2 = (b2 + b2.T) / 2
    return deletion_values(reduce_pencil((a2 + a2.T) / 2, b2), np.diag(b2).copy())[:k]


REFINERS = [SupportSwap]
