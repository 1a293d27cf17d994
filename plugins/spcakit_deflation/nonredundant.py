r"""Non-redundant components: the ``orthogonal`` and ``uncorrelated`` refiners.

Sparse loadings :math:`u_1, \dots, u_r` (unit, :math:`k_t` nonzeros each) are **orthogonal** when
:math:`u_t^\top u_s = 0` and have **uncorrelated** scores when :math:`u_t^\top C u_s = 0` (:math:`s \ne t`). PCA's
loadings have both properties; sparse ones can have one at most, and deflation methods give neither in general.
Both are linear constraints on a loading given the others, :math:`W^\top u_t = 0` with :math:`W = U_{-t}`
(orthogonal) or :math:`W = C U_{-t}` (uncorrelated).

The objective is the variance the loadings explain, :math:`\sum_t u_t^\top C u_t` (FVE once divided by
:math:`\operatorname{tr} C`: the criterion of Cory-Wright & Pauphilet's msPCA). For orthogonal loadings it is the
variance of their span, :math:`\operatorname{tr}(U^\top C U)`, so FVE equals CPEV; for uncorrelated scores it is the
variance of the scores, each counted once.

The value of a support
----------------------
On a support :math:`S` with the others fixed, the best loading maximises :math:`y^\top C_{SS} y` over unit
:math:`y` with :math:`W_S^\top y = 0`: the top eigenvalue :math:`v(S)` of :math:`C_{SS}` on the null space of
:math:`W_S^\top` (:func:`~spcakit_deflation.null_space.null_space_tops`; :math:`-\infty` when only :math:`y = 0` is
feasible). Where the earlier loadings do not touch :math:`S`, :math:`W_S = 0` and :math:`v(S)` is :math:`C_{SS}`'s top
eigenvalue.

The refinement
--------------
Starting from the method's loadings (their supports and cardinalities):

Each loading keeps the size of its support: a variable the constraint sets to zero (one shared with a single other
loading, say) stays in it, for a swap to replace.

1. **In order** (the method's order), unless the loadings already meet the constraint (to
   :data:`FEASIBLE_TOLERANCE`): loading :math:`t` is fitted given loadings :math:`1, \dots, t-1`. Two first passes
   run (:data:`FIRST_PASSES`): one ascends :math:`v(S)` by swaps :math:`S \to S - \{i\} + \{j\}` (the best swap
   each time, below) and takes the maximiser on the final support; the other only re-fits the loading on its support,
   swapping only while the support admits no loading under the constraint. Each is followed by step 2, and the one
   that ends explaining more is kept.
2. **Sweeps**: each loading in turn, given all the others, ascends by swaps; the total never decreases (the other
   terms are fixed, and the constraint is symmetric, so they stay feasible). At most ``max_sweeps`` sweeps, until a
   sweep moves nothing by more than ``tol`` (relative). Loadings that already met the constraint therefore never end
   explaining less than they did.

**Orthogonal loadings together.** After the sweeps, orthogonal loadings that share variables are fitted all together
on their supports (:func:`spcakit_deflation.joint.jointly_orthogonal`) and swept again, while that raises the
total: one at a time each is optimal given the others, not the pair (``jointly``; diabetes, three loadings of four:
FVE 0.6457 -> 0.6496).

**All together.** Where uncorrelated scores leave some loading no room one at a time (loading ``t`` has fewer than
``t`` nonzeros: Pitprops' six loadings of four), the loadings are fitted all together on their supports instead
(:func:`spcakit_deflation.joint.jointly_uncorrelated`), and the refinement ends there.

The result satisfies the constraint to rounding: the violations :math:`\sum_{s<t}|u_t^\top u_s|` (or the score
correlations) are of the order of :math:`10^{-15}`, where msPCA's reach :math:`10^{-4}`.

**The swaps.** Adding a variable :math:`j` can only widen the feasible set, so :math:`v(S - \{i\} + \{j\}) \le
v(S + \{j\})` (the ``(k+1)``-variable problem) :math:`\le \lambda_{\max}(C_{S+j})`. The last bound costs
:math:`O(k)` per candidate (the secular equation of the bordered matrix,
:func:`~spcakit_deflation.secular.bordered_top`); the candidates it leaves get the constrained bound, and the
entering variables are then scored exactly, all :math:`k` removals at once, in decreasing order of their bound until
no bound beats the best swap found: the best swap, exactly. A variable whose conditions the support's imply
(:math:`W_j` in the row space of :math:`W_S`: every variable where :math:`W_S` has full column rank, and those the
conditions are silent on, :math:`W_j = 0`) borders the support's problem on its null space: its bound and swaps come
from one eigen-decomposition per visit by secular equations
(:class:`~spcakit_deflation.null_space.SupportOnNullSpace`, :math:`O(k^2)` per entering variable). The others get
one eigen-decomposition on the null space of their conditions each
(:func:`~spcakit_deflation.null_space.removal_scores`), and so do all where they are few (their number times
:math:`k^2` at most :data:`NULL_SPACE_ROUTE`: Pitprops' 13 variables, where the null-space route's fixed cost is
the larger). Measured with ``auto`` (five loadings of ten, standardised
gene data): under orthogonality colon 23 -> 3.7 s, lymphoma 42 -> 5.2 s, Golub 94 -> 9.5 s; with uncorrelated scores
48 -> 8.1 s, 65 -> 10 s, 132 -> 17 s; the same FVE to six digits. Swaps run while :math:`(p - k)(k+1)^3` is at most
:data:`SWAP_WORK`; above, the loadings are only re-fitted on their supports under the constraint (step 1 without
swaps), which needs a support on which the constraint leaves room (the refiner says so when it does not).

References
----------
R. Cory-Wright, J. Pauphilet, *Sparse PCA with multiple components*, Operations Research (2025): the criterion, and
orthogonality and zero correlation as the two constraints. L. Mackey, *Deflation Methods for Sparse PCA*, NIPS 2008
(§2.3: the variance a loading adds under orthogonalized deflation).
"""

from __future__ import annotations

import hashlib

import attrs
import numpy as np

from spcakit.plugin_api import (
    InvalidParameterError,
    Problem,
    Refined,
    Refiner,
    boolean,
    integer,
    number,
    one_of,
    part,
    ties,
    to_float,
    to_int,
)
from spcakit_deflation.joint import (
    JOINT_LIMIT,
    JOINT_SWAP_SOLVES,
    jointly_orthogonal,
    jointly_swapped,
    jointly_uncorrelated,
)
from spcakit_deflation.null_space import (
    SupportOnNullSpace,
    null_space_tops,
    removal_scores,
)
from spcakit_deflation.secular import bordered_top
from spcakit_deflation.swap import ColumnCache

PAPER = "Cory-Wright & Pauphilet - Sparse PCA with multiple components (Operations Research, 2025)"

#: The two constraints, by name (``spcakit.fit(constraint=...)``).
CONSTRAINTS = ("orthogonal", "uncorrelated")

#: Swaps run while :math:`(p - k)(k + 1)^3` (the constrained bounds of one visit) is at most this; above, re-fits only.
SWAP_WORK = 4e9

#: A visit scores its entering variables on the support's problem on the null space of its conditions
#: (:class:`~spcakit_deflation.null_space.SupportOnNullSpace`) when their number times :math:`k^2` is above this; at
#: or below, each on its own ``k x k`` problems, as :func:`~spcakit_deflation.null_space.removal_scores` does for a
#: batch at the same threshold (measured on Pitprops: the orthogonal default 1.52-1.63 s by the null-space route,
#: 1.01-1.10 s by their own problems).
NULL_SPACE_ROUTE = 400

#: The bordered matrices of one batch hold at most this many entries (32 MB).
BATCH_ENTRIES = 1 << 22

#: An input whose violation (:func:`_violation`) is at most this is feasible: the first pass keeps it.
FEASIBLE_TOLERANCE = 1e-12

#: The first passes over an infeasible input, each followed by the sweeps, the better result kept: each loading in
#: turn ascended by swaps given the earlier ones (``True``), or only re-fitted, swapping only while its support admits
#: no loading under the constraint (``False``). Measured on mtcars, Pitprops, wine, breast cancer, digits and two gene
#: covariances (``benchmarks/nonredundant.py``, every member of ``auto`` refined or not as the start), neither is
#: better everywhere: re-fitting gave the best orthogonal loadings (digits FVE 0.4520 against 0.4333, Pitprops 0.8048
#: against 0.7920), ascending the best uncorrelated ones on four of five (mtcars 0.5577 against 0.5459).
FIRST_PASSES = (True, False)

#: The refiners' ``first_pass`` parameter: both passes (the default), or one of them.
FIRST_PASS_CHOICES = {"both": FIRST_PASSES, "ascend": (True,), "refit": (False,)}

#: A refitted loading's entries below this times its largest are rounding of a coordinate the constraint sets to 0
#: (a variable shared with one other loading alone, say): they are made exactly 0, so that its number of nonzeros does
#: not depend on the last bits. The violation this adds is of the same order.
ZERO_RTOL = 1e-13

#: Most rounds of orthogonal loadings fitted together and swept again (:meth:`_NonRedundant._jointly_raised`). Measured
#: with ``auto``: the first round raised the total on diabetes, Pitprops and digits, the second nowhere.
JOINT_ROUNDS = 3

#: The secular bound is raised by this (relative) before it screens: its iterates approach the root from below.
SCREEN_MARGIN = 1e-9

#: A swap or a re-fit counts only when it raises a loading's value by more than this times the largest variance (and by
#: ``tol`` of the value): below, the difference is rounding (:func:`_raised`).
VALUE_RTOL = 1e-12



def _constraint_matrix(kind: str, others: np.ndarray, columns: ColumnCache) -> np.ndarray:
    """:math:`W`: the other loadings (orthogonal) or :math:`C` times them (uncorrelated), ``p x m``."""
    if others.shape[1] == 0 or kind == "orthogonal":
        return others
    products = np.zeros_like(others)
    for s in range(others.shape[1]):
        support = np.flatnonzero(others[:, s])
        products[:, s] = columns(support) @ others[support, s]
    return products


@attrs.frozen(kw_only=True)
class _Visit:
    """The outcome of one loading's ascent: its support, its value :math:`v(S)`, its loading and the swaps made."""

    support: np.ndarray
    value: float
    loading: np.ndarray
    swaps: int


@attrs.frozen
class _NonRedundant(Refiner):
    """Shared by the ``orthogonal`` and ``uncorrelated`` refiners (:attr:`kind`)."""

    kind = "orthogonal"

    max_sweeps: int = attrs.field(default=20, converter=to_int, validator=integer(0))
    tol: float = attrs.field(default=1e-9, converter=to_float, validator=number(0, 1, high_open=True))
    candidates: int = attrs.field(default=64, converter=to_int, validator=integer(1))
    first_pass: str = attrs.field(default="both", validator=one_of(*FIRST_PASS_CHOICES))
    #: ``uncorrelated`` only (orthogonal loadings are always fitted one at a time): the most joint fits of the swap
    #: search after loadings fitted all together (:func:`spcakit_deflation.joint.jointly_swapped`; 0: none)
    joint_swaps: int = attrs.field(default=JOINT_SWAP_SOLVES, converter=to_int, validator=integer(0))
    #: ``orthogonal`` only: after the sweeps, loadings that share variables are fitted all together on their supports
    #: and swept again, while that raises the total (:meth:`_jointly_raised`)
    jointly: bool = attrs.field(default=True, validator=boolean)

    def __call__(self, problem: Problem, loadings: np.ndarray, *, visits: dict | None = None) -> Refined:
        """The loadings made non-redundant (see the module). ``visits``: a dict this refiner fills with the outcome of
        every loading's visit (:meth:`_visit`, keyed by what decides it: the other loadings, the support, the pass and
        the parameters) and reuses, to be handed to calls on the same ``problem`` alone (the portfolio's starts often
        reach the same loadings: the rest of such an ascent is then read, not computed again)."""
        op = problem.covariance
        given = np.array(loadings, dtype=float, copy=True)
        columns = ColumnCache(op)
        diagonal = np.asarray(op.diagonal(), dtype=float)
        total = max(float(op.trace()), np.finfo(float).tiny)
        before = _explained(given, columns) / total
        # a feasible input is kept and ascended; else both first passes run, and the one that ends higher is kept (one
        # loading: no constraint binds it, it ascends by swaps)
        if given.shape[1] == 1:
            passes: tuple[bool | None, ...] = (True,)
        else:
            passes = (None,) if _violation(self.kind, given, columns) <= FEASIBLE_TOLERANCE else FIRST_PASS_CHOICES[self.first_pass]
        best: tuple[np.ndarray, float, int, int] | None = None
        refusal: InvalidParameterError | None = None
        for ascend in passes:  # a pass that finds no room for some loading leaves it to the other
            try:
                x, value, swaps, sweeps = self._ascended(given, ascend, columns, diagonal, {} if visits is None else visits)
            except InvalidParameterError as exc:
                refusal = refusal or exc
                continue
            if best is None or ties.improves(value, best[1], rtol=self.tol):
                best = (x, value, swaps, sweeps)
        if best is None:
            # one at a time, some loading had no room (k < r, say); the conditions may still be met all together
            rows = np.flatnonzero(np.any(given != 0, axis=1))  # the union of the supports: all it needs of C
            found = None
            if self.kind == "uncorrelated" and np.count_nonzero(given) <= JOINT_LIMIT:
                found = jointly_uncorrelated(columns(rows)[rows], given[rows], tolerance=FEASIBLE_TOLERANCE,
                                             zero_rtol=ZERO_RTOL)
            if found is None:
                raise refusal  # type: ignore[misc]
            joint = np.zeros_like(given)
            joint[rows] = found
            swaps = 0
            if self.joint_swaps:
                joint, _, swaps = jointly_swapped(columns, joint, solves=self.joint_swaps,
                                                  tolerance=FEASIBLE_TOLERANCE, zero_rtol=ZERO_RTOL)
            return Refined(loadings=joint, report={"fve_before": before, "fve_after": _explained(joint, columns) / total,
                                                   "swaps": swaps, "sweeps": 0, "jointly": 1})
        if self.kind == "orthogonal" and self.jointly:
            best = self._jointly_raised(best, columns, diagonal, {} if visits is None else visits)
        x, value, swaps, sweeps = best
        return Refined(loadings=x, report={"fve_before": before, "fve_after": value / total, "swaps": swaps,
                                           "sweeps": sweeps})

    def _jointly_raised(self, best: tuple[np.ndarray, float, int, int], columns: ColumnCache, diagonal: np.ndarray,
                        visits: dict) -> tuple[np.ndarray, float, int, int]:
        """Orthogonal loadings that share variables, fitted all together on their supports, then swept again, while
        that raises the total by more than ``tol`` (at most :data:`JOINT_ROUNDS` times).

        The sweeps fit one loading at a time given the others: where two loadings share variables, each is then
        optimal given the other, but the pair need not be (the multipliers of :math:`u_s^\top u_t = 0` in the two
        loadings' conditions differ). :func:`~spcakit_deflation.joint.jointly_orthogonal` moves them together.
        Measured on the diabetes data (three loadings of four): FVE 0.6457 -> 0.6496.
        """
        x, value, swaps, sweeps = best
        r = x.shape[1]
        for _ in range(JOINT_ROUNDS):
            overlap = np.count_nonzero(x, axis=1) > 1
            if r == 1 or not np.any(overlap) or np.count_nonzero(x) > JOINT_LIMIT:
                break
            rows = np.flatnonzero(np.any(x != 0, axis=1))
            found = jointly_orthogonal(columns(rows)[rows], x[rows], tolerance=FEASIBLE_TOLERANCE, zero_rtol=ZERO_RTOL)
            if found is None:
                break
            joint = np.zeros_like(x)
            joint[rows] = found
            if _explained(joint, columns) <= _raised(value, self.tol, diagonal):
                break
            x, raised, more_swaps, more_sweeps = self._ascended(joint, None, columns, diagonal, visits)
            value, swaps, sweeps = raised, swaps + more_swaps, sweeps + more_sweeps
        return x, value, swaps, sweeps

    def _ascended(self, given: np.ndarray, ascend: bool | None, columns: ColumnCache, diagonal: np.ndarray,
                  visits: dict) -> tuple[np.ndarray, float, int, int]:
        """The first pass (``ascend``: by swaps, ``False``: re-fits, swapping only for room; ``None``: none, the input
        is feasible), then the sweeps: the loadings, the variance they explain, the swaps and the sweeps made."""
        x = given.copy()
        r = x.shape[1]
        swaps = sweeps = 0
        values = np.zeros(r)
        # each loading's support keeps its size: a variable the constraint sets to 0 stays in it, to be swapped out
        supports = [np.flatnonzero(x[:, t]) for t in range(r)]
        for t in range(r):  # in order: each given the earlier ones
            if ascend is None:
                support = supports[t]
                values[t] = float(x[support, t] @ (columns(support)[support] @ x[support, t]))
                continue
            visit = self._remembered(visits, x, t, np.arange(t), supports[t], columns, diagonal, ascend=ascend)
            x[:, t], values[t], supports[t] = visit.loading, visit.value, visit.support
            swaps += visit.swaps
        while r > 1 and sweeps < self.max_sweeps:
            sweeps += 1
            moved = False
            for t in range(r):
                visit = self._remembered(visits, x, t, np.delete(np.arange(r), t), supports[t], columns, diagonal)
                if visit.value > _raised(values[t], self.tol, diagonal):
                    x[:, t], values[t], supports[t] = visit.loading, visit.value, visit.support
                    swaps += visit.swaps
                    moved = True
            if not moved:
                break
        return x, float(values.sum()), swaps, sweeps

    def _remembered(self, visits: dict, x: np.ndarray, t: int, others: np.ndarray, support: np.ndarray,
                    columns: ColumnCache, diagonal: np.ndarray, ascend: bool = True) -> _Visit:
        """:meth:`_visit`, read from ``visits`` when the same visit was made before (its outcome is a function of the
        other loadings, the support, the pass and the refiner's parameters on one problem), else made and kept there
        (a refusal too). The key is a digest of those bytes; the outcome is kept on its support alone."""
        digest = hashlib.blake2b(digest_size=20)
        for array in (x[:, others], others, support):
            digest.update(np.ascontiguousarray(array).tobytes())
        key = (self.kind, t, x.shape, bool(ascend), self.tol, self.candidates, digest.digest())
        kept = visits.get(key)
        if kept is None:
            try:
                visit = self._visit(x, t, others, support, columns, diagonal, ascend=ascend)
            except InvalidParameterError as exc:
                visits[key] = exc
                raise
            kept = visits[key] = (visit.support, visit.value, visit.loading[visit.support], visit.swaps)
        if isinstance(kept, InvalidParameterError):
            raise kept
        loading = np.zeros(x.shape[0])
        loading[kept[0]] = kept[2]
        return _Visit(support=kept[0], value=kept[1], loading=loading, swaps=kept[3])

    def _visit(self, x: np.ndarray, t: int, others: np.ndarray, support: np.ndarray, columns: ColumnCache,
               diagonal: np.ndarray, ascend: bool = True) -> _Visit:
        """Loading ``t`` ascended by swaps on its ``support`` given the loadings ``others`` (see the module); without
        ``ascend``, swaps are made only while the support admits no loading under the constraint."""
        p = x.shape[0]
        w = _constraint_matrix(self.kind, x[:, others], columns)
        scale = float(np.abs(w).max(initial=0.0)) or 1.0
        k = support.size
        swapping = (p - k) * (k + 1) ** 3 <= SWAP_WORK and k < p
        swaps = 0
        while True:
            c_s = columns(support)
            value, vector = null_space_tops(c_s[support][None], w[support][None], scale, vectors=True)
            needed = ascend or not np.isfinite(value[0])
            best = self._best_swap(support, float(value[0]), c_s, w, scale, diagonal) if swapping and needed else None
            if best is None:
                break
            support = np.sort(np.append(np.delete(support, best[0]), best[1]))
            swaps += 1
        if not np.isfinite(value[0]):
            raise InvalidParameterError(
                f"loading {t + 1} cannot be made {self.kind} to the other {others.size} on {k} variables"
                + ("" if swapping else " (the problem is too large for swaps, which could look for other variables)")
                + (": uncorrelated scores put one linear condition per other loading on each loading, which k nonzeros "
                   "meet one loading at a time in general only when k > r - 1 (all loadings fitted together, only "
                   "when the nonzeros less one per loading are at least the r(r - 1)/2 pairs, and none was found "
                   f"on these supports); raise k to at least {x.shape[1]} or lower r"
                   if self.kind == "uncorrelated" else
                   ": the others leave no room on any support within reach; raise k or lower r")
            )
        loading = np.zeros(p)
        # entries of rounding size are coordinates the constraint sets to zero: exactly zero, whatever the BLAS
        loading[support] = np.where(np.abs(vector[0]) > ZERO_RTOL * np.abs(vector[0]).max(), vector[0], 0.0)
        loading /= np.linalg.norm(loading)
        return _Visit(support=support, value=float(value[0]), loading=loading, swaps=swaps)

    def _best_swap(self, support: np.ndarray, value: float, c_s: np.ndarray, w: np.ndarray, scale: float,
                   diagonal: np.ndarray) -> tuple[int, int] | None:
        """The swap ``(position in support, entering variable)`` of largest value above ``value`` (by more than
        ``tol`` relative, and by more than :data:`VALUE_RTOL` times the largest variance), or ``None``."""
        p, k = c_s.shape
        outside = np.ones(p, dtype=bool)
        outside[support] = False
        entering = np.flatnonzero(outside)
        floor = _raised(value, self.tol, diagonal) if np.isfinite(value) else -np.inf
        # screen: the unconstrained bordered top bounds every swap bringing j in
        eig, vec = np.linalg.eigh(c_s[support])
        screen = _with_margin(bordered_top(eig, vec.T @ c_s[entering].T, diagonal[entering]))
        entering = entering[screen > floor]
        if not entering.size:
            return None
        # the entering variables whose conditions the support's already imply (W_j in the row space of W_S: all where
        # W_S has full column rank) are bordered on the support's problem on its null space, by secular equations
        # (SupportOnNullSpace); the others are scored on their own (k+1)-variable problems
        # (few entering variables, entering.size k^2 <= NULL_SPACE_ROUTE: their own k x k problems cost less)
        many = entering.size * k * k > NULL_SPACE_ROUTE
        on_null = SupportOnNullSpace.of(c_s[support], w[support], scale) if many else None
        if on_null is None or on_null.values.size < 2:  # no room, or one direction: every entering variable on its own
            on_null, shared = None, np.zeros(entering.size, dtype=bool)
        else:
            shared = on_null.bordered(w[entering])
        bounds = np.empty(entering.size)
        if on_null is not None:  # raised as the screen: the secular iterates approach the root from below
            j = entering[shared]
            bounds[shared] = _with_margin(on_null.bounds(c_s[j], diagonal[j], w[j]))
        alone = np.flatnonzero(~shared)
        chunk = max(1, BATCH_ENTRIES // (k + 1) ** 2)
        for start in range(0, alone.size, chunk):
            rows = alone[start : start + chunk]
            bounds[rows] = null_space_tops(*self._bordered(support, entering[rows], c_s, w, diagonal), scale)[0]
        keep = bounds > floor
        entering, bounds, shared = entering[keep], bounds[keep], shared[keep]
        ranked = ties.order(bounds)  # decreasing: the break below needs it
        entering, bounds, shared = entering[ranked], bounds[ranked], shared[ranked]
        best_value, best = floor, None
        per_batch = max(1, min(self.candidates, BATCH_ENTRIES // max(1, (k + 1) ** 2)))
        for start in range(0, entering.size, per_batch):
            if bounds[start] <= best_value:
                break  # sorted: no later entering variable can beat the best swap found
            j = entering[start : start + per_batch]
            scores = self._swap_scores(support, j, shared[start : start + per_batch], on_null, c_s, w, diagonal,
                                       scale, floor)
            # the first of the scores tied with the largest (ties.improves: rounding never decides): the entering
            # variable of larger bound, then the removal's position
            flat = int(np.argmax(scores))
            top = float(scores.flat[flat])
            if np.isfinite(top):
                flat = int(np.flatnonzero(~ties.improves_on_each(top, scores.ravel()))[0])
            if np.isfinite(scores.flat[flat]) and ties.improves(float(scores.flat[flat]), best_value) or (
                    best is None and scores.flat[flat] > best_value):
                best_value, best = float(scores.flat[flat]), (flat % k, int(j[flat // k]))
        return best

    def _swap_scores(self, support: np.ndarray, entering: np.ndarray, shared: np.ndarray,
                     on_null: SupportOnNullSpace | None, c_s: np.ndarray, w: np.ndarray, diagonal: np.ndarray,
                     scale: float, floor: float) -> np.ndarray:
        """The values of every swap bringing in each of ``entering`` (rows) for each position (columns): by
        :class:`~spcakit_deflation.null_space.SupportOnNullSpace` for the ``shared`` ones where it applies (values
        not above ``floor`` are ``floor`` there), else by :func:`~spcakit_deflation.null_space.removal_scores`."""
        scores = np.empty((entering.size, support.size))
        fast = None
        if on_null is not None and np.any(shared):
            j = entering[shared]
            fast = on_null.removals(c_s[j], diagonal[j], w[j], floor)
        if fast is None:
            shared = np.zeros(entering.size, dtype=bool)
        else:
            scores[shared] = fast
        if not np.all(shared):
            scores[~shared] = removal_scores(*self._bordered(support, entering[~shared], c_s, w, diagonal), scale)
        return scores

    @staticmethod
    def _bordered(support: np.ndarray, entering: np.ndarray, c_s: np.ndarray, w: np.ndarray,
                  diagonal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        r""":math:`C_{S+j}` and :math:`W_{S+j}` for every entering ``j`` (``S`` first, ``j`` last)."""
        k, n = support.size, entering.size
        a = np.empty((n, k + 1, k + 1))
        a[:, :k, :k] = c_s[support]
        a[:, :k, k] = c_s[entering]
        a[:, k, :k] = c_s[entering]
        a[:, k, k] = diagonal[entering]
        b = np.empty((n, k + 1, w.shape[1]))
        b[:, :k] = w[support]
        b[:, k] = w[entering]
        return a, b


def _with_margin(tops: np.ndarray) -> np.ndarray:
    """Secular roots raised by :data:`SCREEN_MARGIN` before they screen (their iterates approach the root from below)."""
    return tops * (1 + SCREEN_MARGIN) + SCREEN_MARGIN


def _raised(value: float, tol: float, diagonal: np.ndarray) -> float:
    r"""What a move must beat to count: ``value`` raised by ``tol`` of itself, and at least by :data:`VALUE_RTOL` times
    the largest variance (values of rounding size: a support in the null space of a rank-deficient covariance is worth
    :math:`\pm 10^{-16}` of it, and swaps between two such supports would otherwise go on forever)."""
    return value + max(tol * abs(value), VALUE_RTOL * float(np.abs(diagonal).max(initial=0.0)))


def _violation(kind: str, x: np.ndarray, columns: ColumnCache) -> float:
    r"""The largest :math:`|u_t^\top u_s|` (orthogonal) or :math:`|u_t^\top C u_s|/\max_t u_t^\top C u_t` (uncorrelated)
    over the pairs of unit loadings ``x``."""
    r = x.shape[1]
    w = _constraint_matrix(kind, x, columns)
    gram = x.T @ w
    off = np.abs(gram - np.diag(np.diagonal(gram)))
    scale = 1.0 if kind == "orthogonal" else max(float(np.abs(np.diagonal(gram)).max(initial=0.0)), np.finfo(float).tiny)
    return float(off.max(initial=0.0)) / scale if r > 1 else 0.0


def _explained(x: np.ndarray, columns: ColumnCache) -> float:
    r""":math:`\sum_t u_t^\top C u_t` (on each loading's support)."""
    total = 0.0
    for t in range(x.shape[1]):
        support = np.flatnonzero(x[:, t])
        if support.size:
            total += float(x[support, t] @ (columns(support)[support] @ x[support, t]))
    return total


@part("orthogonal", paper=PAPER)
class OrthogonalRefiner(_NonRedundant):
    r"""make the loadings orthogonal (u_t^T u_s = 0) at their cardinalities, ascending their explained variance by swaps

    See :mod:`spcakit_deflation.nonredundant`. The result's metrics record ``refiner_fve_before`` (the loadings as
    given, which may overlap), ``refiner_fve_after``, ``refiner_swaps`` and ``refiner_sweeps``.

    Parameters
    ----------
    max_sweeps
        Most sweeps over all loadings after the first pass (each given all the others).
    tol
        A move is made only when it raises a loading's variance by more than ``tol`` (relative).
    candidates
        Entering variables scored exactly per batch (all ``k`` removals each), in decreasing order of their bound.
    first_pass
        ``"both"`` first passes over loadings that do not meet the constraint (:data:`FIRST_PASSES`, the better
        kept), or only ``"ascend"`` or ``"refit"``.
    """

    kind = "orthogonal"


@part("uncorrelated", paper=PAPER)
class UncorrelatedRefiner(_NonRedundant):
    r"""make the scores uncorrelated (u_t^T C u_s = 0) at the loadings' cardinalities, ascending their variance by swaps

    See :mod:`spcakit_deflation.nonredundant` and :class:`OrthogonalRefiner` (the same parameters and report). Where
    some loading has no room one at a time (fewer nonzeros than loadings, say), the loadings are fitted all together on
    their supports (:func:`spcakit_deflation.joint.jointly_uncorrelated`), then raised by at most ``joint_swaps`` such
    fits of single swaps (:func:`spcakit_deflation.joint.jointly_swapped`; ``joint_swaps`` caps those fits, 0: none,
    the loadings stay on their supports), and the report adds ``jointly`` (1).
    """

    kind = "uncorrelated"


REFINERS = [OrthogonalRefiner, UncorrelatedRefiner]
