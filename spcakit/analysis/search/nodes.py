r"""One search's problem: the matrix, its constraint and the cardinality, with the values of supports and the
bounds of nodes that :func:`spcakit.analysis.search.tree.branch_and_bound` prunes by.

:class:`SearchProblem` holds :math:`A`, the constraint :math:`B = I - QQ^\top` (when the deflation is
generalized) and :math:`k`; it evaluates supports (one, or stacks of them: a node's completions, its pairs) and
bounds a node (variables fixed in, fixed out, free) by the least of its bounds: the eigenvalue, Gershgorin and
diagonal bounds of the allowed set, the split bound (the fixed part on its eigenvectors, coupled to the free part),
the Schur bound and the threshold decomposition (:mod:`spcakit.numerics.thresholding`). The search's module
describes the whole method and its measurements.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from spcakit.analysis.bounds import spectrum_positive_semidefinite
from spcakit.analysis.search.gram import GramMatrix
from spcakit.core.errors import InvalidParameterError
from spcakit.numerics.linalg import generalized_top, interruptible_eigh, item_blocks, sum_of_largest
from spcakit.numerics.thresholding import (
    spectral_knapsack,
    support_capacities,
    threshold_knapsack,
    thresholded_blocks,
    thresholded_spectrum,
)

#: The warm start also runs truncated power iterations (Yuan & Zhang's TPower) from the leading this many
#: eigenvectors of the matrix: on the colon's 500 genes at k = 20 they reach in 0.1 s a value (4.62e7) that the
#: greedy selection's swaps had not reached after 150 s (4.39e7).
POWER_STARTS = 10



#: Nodes whose allowed set has at most this many variables get the eigenvalue bound (an eigenproblem
#: of that size); larger ones the Gershgorin and diagonal bounds alone.
EIGEN_NODE_LIMIT = 400


#: With a constraint :math:`Q`, the largest entry of :math:`|AQ|` may be at most this times the largest of
#: :math:`|A|` (rounding of the deflation); a larger one is refused.
ANNIHILATION_RTOL = 1e-8


#: Each node tries its parent's :math:`\rho` and that multiplied (odd depths) or divided (even depths) by this.
RHO_STEP = 1.25


#: The root's grid stops after this many values of :math:`\rho` in a row (largest first) that do not improve
#: on the best: every :math:`\rho` gives a valid bound, so stopping early only saves the largest blocks.
RHO_PATIENCE = 4


#: The eigen-decompositions of recent allowed sets are kept up to this many bytes (a child that fixes a
#: variable in has its parent's allowed set).
DECOMPOSITION_BYTES = 64 * 2**20


#: Supports evaluated at once (a node's completions, the greedy steps, the swaps) go in stacks of matrices of at
#: most this many bytes.
COMPLETION_BYTES = 8 * 2**20


#: A node with two free places is solved by evaluating its pairs when at most this many survive their bound.
PAIR_LIMIT = 20000


#: A node's sums of each row's largest free entries look this many entries beyond ``2 k`` down each row's sorted
#: prefix before they partition the row in full (the variables fixed in and out come first in few rows).
NEAR_SLACK = 32


#: ... and never more than this many entries a row (two p x this arrays are kept; a larger k partitions in full).
NEAR_WIDTH = 256


#: The Schur bound's bisection steps between the incumbent and the split bound, when the incumbent does not prune.
SCHUR_STEPS = 3


#: The pairs' bounds are taken this many at a time (a stripe of rows of the free variables' pairs).
PAIR_BOUND_ENTRIES = 2**20


#: A node's descendants compute the threshold bound only when it was at least this much (relative) below
#: the node's other bounds.
THRESHOLD_GAIN = 1e-3


class SearchProblem:
    """The matrix, the constraint and the cardinality of one search, with its value and bound functions."""

    def __init__(self, a: np.ndarray, k: int, constraint: np.ndarray | None,
                 spectrum: tuple[np.ndarray, np.ndarray] | None = None) -> None:  # fmt: skip
        """``spectrum``: the eigenpairs of ``a`` (values descending, vectors as columns) whose values may be nonzero,
        every other eigenvalue 0 to rounding: a Gram matrix :math:`B^\top B/s` of ``n < p`` rows, whose ``n`` pairs
        come from the ``n x n`` :math:`BB^\top` (positive semi-definite by construction); ``None``: ``a`` is
        decomposed here (:math:`O(p^3)`)."""
        #: whether ``a`` is read from its data (:class:`~spcakit.analysis.search.gram.GramMatrix`): every bound but the
        #: thresholded spectrum's, which needs the whole thresholded matrix
        self.from_data = isinstance(a, GramMatrix)
        if self.from_data or (a.dtype == np.float64 and _symmetric(a)):  # as it is (read only): no p x p copy
            self.a = a
        else:
            self.a = np.add(a, a.T, dtype=float)  # (a + a^T) / 2 with one p x p temporary, not two (halving is exact)
            self.a *= 0.5
        self.p = a.shape[0]
        self.k = k
        self.q = constraint if constraint is not None and constraint.shape[1] else None
        if self.q is not None and self.from_data:
            raise InvalidParameterError("a search under a constraint reads its matrix whole; got a Gram matrix's factor")
        if self.q is not None:
            leak = float(np.abs(self.a @ self.q).max(initial=0.0))
            if leak > ANNIHILATION_RTOL * max(float(np.abs(self.a).max(initial=0.0)), np.finfo(float).tiny):
                raise InvalidParameterError(
                    f"the matrix does not vanish on the constraint's span (largest |AQ| entry {leak:.3g}): the search "
                    "needs A = (I - QQ^T) C (I - QQ^T), as the generalized deflation leaves it; project A first"
                )
        self.abs = OffDiagonalMagnitudes(self.a)  # |a_ij|, 0 on the diagonal: taken by blocks, never p x p at once
        self.diagonal = self.a.diagonal() if self.from_data else np.diag(self.a).copy()
        self.psd = True  # under a constraint A = (I - QQ^T) C (I - QQ^T); the trace bounds are not taken there
        if self.q is None:  # the whole matrix's spectrum, for the spectral bound of nodes of any size
            if spectrum is None and self.from_data:
                spectrum = self.a.spectrum()  # from the n x n F F^T
            if spectrum is None:
                values, vectors = interruptible_eigh(self.a)  # Ctrl-C is not held for seconds at p = 5000
                # the trace bounds (a support's value at most its diagonal's sum) need A positive semi-definite; a
                # Hotelling deflation by a loading that is not an eigenvector leaves a negative eigenvalue, and rounding
                # tiny ones
                self.psd = spectrum_positive_semidefinite(values, self.p)
                values, vectors = values[::-1], vectors[:, ::-1]
            else:  # the eigenvalues left out are 0: they add nothing to the spectral knapsack
                values, vectors = np.asarray(spectrum[0], dtype=float), np.asarray(spectrum[1], dtype=float)
            self.values, self.squares = np.clip(values, 0.0, None), vectors**2
            self.leading = vectors[:, :POWER_STARTS]  # the truncated power method's starts
            # each row's largest off-diagonal |a_lj| and each eigenvector's largest squares, in descending order, as
            # far as a node's sums need them (its free ones first; see largest_free)
            width = min(self.p, 2 * self.k + NEAR_SLACK, NEAR_WIDTH)
            self.near_rows = descending_prefix(self.abs, width)
            self.near_squares = descending_prefix(self.squares.T, width)
        self._kept: collections.OrderedDict[tuple[Any, ...], Any] = collections.OrderedDict()
        self._kept_bytes = 0

    def _remembered(self, key: tuple[Any, ...], compute: Callable[[], Any], nbytes: Callable[[Any], int]) -> Any:
        """``compute()``, kept under ``key`` while the most recent ones fit in :data:`DECOMPOSITION_BYTES`: a node's
        child that fixes a variable in has the node's allowed set, so the same decompositions."""
        if key in self._kept:
            self._kept.move_to_end(key)
            return self._kept[key][0]
        value = compute()
        self._keep(key, value, nbytes(value))
        return value

    def _keep(self, key: tuple[Any, ...], value: Any, size: int) -> None:
        """Keep ``value`` under ``key`` (in place of what was there), the oldest dropped beyond the budget."""
        if key in self._kept:
            self._kept_bytes -= self._kept.pop(key)[1]
        if size <= DECOMPOSITION_BYTES:
            self._kept[key] = (value, size)
            self._kept_bytes += size
            while self._kept_bytes > DECOMPOSITION_BYTES:
                _, (_, dropped) = self._kept.popitem(last=False)
                self._kept_bytes -= dropped

    def knapsack(self, values: np.ndarray, squares: np.ndarray, fixed: np.ndarray) -> float:
        """The spectral bound: fill the largest eigenvalues first, each up to its vector's weight on a support
        (``squares`` the squared eigenvectors, rows the variables; ``fixed`` the rows of :math:`I`)."""
        return spectral_knapsack(values, support_capacities(squares, fixed, self.k - int(fixed.sum())))

    def _b(self, index: np.ndarray) -> np.ndarray:
        eye = np.eye(index.size)
        if self.q is None:
            return eye
        qs = self.q[index]
        return eye - qs @ qs.T

    def tops(self, supports: np.ndarray) -> np.ndarray:
        r""":math:`\lambda_{\max}(A_{SS})` for each row ``S`` of the integer array ``supports`` (``B = I``), the
        submatrices decomposed in stacks of at most :data:`COMPLETION_BYTES`."""
        count, size = supports.shape
        values = np.empty(count)
        batch = max(1, COMPLETION_BYTES // (8 * size**2))
        for first in range(0, count, batch):
            chosen = supports[first : first + batch]
            values[first : first + batch] = np.linalg.eigvalsh(self.a[chosen[:, :, None], chosen[:, None, :]])[:, -1]
        return values

    def completions(self, included: np.ndarray, candidates: np.ndarray) -> np.ndarray:
        r""":math:`\lambda_{\max}(A_{SS})` for each support :math:`S = I \cup \{j\}`, ``j`` in ``candidates`` (``B = I``)."""
        fixed = np.flatnonzero(included)
        return self.tops(np.concatenate([np.broadcast_to(fixed, (candidates.size, fixed.size)), candidates[:, None]], axis=1))

    def completed(self, included: np.ndarray, free: np.ndarray, floor: float) -> tuple[bool, float, np.ndarray | None]:
        r"""The best support of a node with one or two free places, by enumeration: whether it was found, its value
        (``-inf`` when no support is above ``floor``) and the free variables it adds.

        One free place: every support :math:`I \cup \{j\}` is evaluated (:meth:`completions`). Two: with
        :math:`T = I \cup \{j\}` and :math:`\lambda_T = \lambda_{\max}(A_{TT})`, a unit :math:`x` on
        :math:`T \cup \{l\}` is :math:`(y \cos\theta, \sin\theta)` with unit :math:`y`, and
        :math:`x^\top A x \le \cos^2\theta\,\lambda_T + 2 \sin\theta\cos\theta\,\|a_{Tl}\| + \sin^2\theta\,a_{ll}`,
        at most the top eigenvalue of :math:`\begin{pmatrix}\lambda_T & \|a_{Tl}\| \\ \|a_{Tl}\| & a_{ll}\end{pmatrix}`
        (and the same with ``j`` and ``l`` swapped); the pairs whose bound is above ``floor`` are evaluated, when at
        most :data:`PAIR_LIMIT` (else nothing is found: ``False``).
        """
        candidates = np.flatnonzero(free)
        if self.k - int(included.sum()) == 1:
            values = self.completions(included, candidates)
            best = int(np.argmax(values))
            return True, float(values[best]), candidates[best : best + 1]
        fixed = np.flatnonzero(included)
        tops = self.completions(included, candidates)  # lambda_T for T = I + j
        fixed_norms = np.einsum("ij,ij->j", self.a[np.ix_(fixed, candidates)], self.a[np.ix_(fixed, candidates)])
        diagonal = self.diagonal[candidates]
        rows, columns = [], []
        step = max(1, PAIR_BOUND_ENTRIES // max(candidates.size, 1))
        for first in range(0, candidates.size, step):  # the pairs (j, l), j < l, above the floor, a stripe of j at once
            j = np.arange(first, min(first + step, candidates.size))
            cross = self.a[np.ix_(candidates[j], candidates)] ** 2  # a_jl^2
            bound = np.minimum(two_by_two(tops[j, None], diagonal[None, :], fixed_norms[None, :] + cross),
                               two_by_two(tops[None, :], diagonal[j, None], fixed_norms[j, None] + cross))  # fmt: skip
            above = (bound > floor) & (np.arange(candidates.size)[None, :] > j[:, None])
            found_rows, found_columns = np.nonzero(above)
            rows.append(j[found_rows])
            columns.append(found_columns)
            if sum(r.size for r in rows) > PAIR_LIMIT:
                return False, -np.inf, None
        j, l = candidates[np.concatenate(rows)], candidates[np.concatenate(columns)]
        if not j.size:
            return True, -np.inf, None
        values = self.tops(np.concatenate([np.broadcast_to(fixed, (j.size, fixed.size)), j[:, None], l[:, None]], axis=1))
        at = int(np.argmax(values))
        return True, float(values[at]), np.array([j[at], l[at]])

    def split_bound(self, included: np.ndarray, allowed: np.ndarray, rho: float | None = None) -> tuple[float, np.ndarray]:
        r"""The split bound of a node with variables fixed in (``B = I``), and each free variable's coupling to them.

        A unit :math:`x` on :math:`S = I \cup J` (``J`` the :math:`m = k - |I|` free variables chosen) is
        :math:`(u, v)`, :math:`\|u\|^2 + \|v\|^2 = 1`, and with :math:`A_{II} = \sum_i \lambda_i e_ie_i^\top`,
        :math:`\alpha_i = e_i^\top u`,

        .. math::

            x^\top A x = \sum_i \lambda_i \alpha_i^2 + 2 \sum_i \alpha_i\, e_i^\top A_{IJ} v + v^\top A_{JJ} v
            \le \sum_i \lambda_i \alpha_i^2 + 2 \sum_i |\alpha_i| \sigma_i \|v\| + \mu \|v\|^2
            \le \lambda_{\max}\begin{pmatrix} \operatorname{diag}(\lambda) & \sigma \\ \sigma^\top & \mu
            \end{pmatrix}

        (the arrow matrix; the vector :math:`(|\alpha|, \|v\|)` is a unit one) where :math:`\sigma_i^2`, the sum of
        the ``m`` largest :math:`(e_i^\top a_{Il})^2` over the free ``l``, is at least :math:`\|A_{JI} e_i\|^2`, and
        :math:`\mu` is at least :math:`\lambda_{\max}(A_{JJ})` for any ``m`` free variables: the least of the sum of
        the ``m`` largest free :math:`a_{ll}`; Gershgorin's circles on them (each free row's diagonal plus its ``m - 1``
        largest free :math:`|a_{lj}|`); the Frobenius norm, :math:`\lambda_{\max}(A_{JJ})^2 \le \|A_{JJ}\|_F^2`, at
        most the sum over the ``m`` largest free rows of each row's ``m`` largest squares (on the colon's genes, whose
        covariance is nearly of rank one, it is within a few per cent of the best ``m`` free variables found, where
        Gershgorin's is 30 to 60 % above); the whole matrix's spectral knapsack on the free rows; and, with ``rho``,
        the threshold bound of ``m`` free variables from the decomposition kept for :math:`U` (:meth:`free_threshold`).
        The same with :math:`u` taken whole, :math:`\lambda_{\max}` of :math:`\begin{pmatrix} \lambda_1 & \sigma
        \\ \sigma & \mu \end{pmatrix}` with :math:`\sigma^2` the sum of the ``m`` largest :math:`\|a_{Il}\|^2`,
        is sometimes less; the least of the two is returned.

        Deep in the tree, where :math:`A_{II}` holds most of a support's variance, this is far tighter than the
        threshold bound (colon, 500 genes, k = 20: the 2 x 2 form alone 15 % below it at three free places, 8 % at
        seven; the arrow another 14 % below that at eight to ten). The couplings :math:`|a_{Il}^\top e_1|` are the
        first-order gain of adding ``l``: a node branches on the largest when no eigenvector gives weights.
        """
        fixed = np.flatnonzero(included)
        free = np.flatnonzero(allowed & ~included)
        m = self.k - fixed.size
        eigenvalues, eigenvectors = np.linalg.eigh(self.a[np.ix_(fixed, fixed)])
        lam = float(eigenvalues[-1])
        coupling = self.a[np.ix_(fixed, free)]
        weights = np.zeros(self.p)
        weights[free] = np.abs(eigenvectors[:, -1] @ coupling)
        if m <= 0 or free.size < m:
            return lam, weights
        norms = np.einsum("ij,ij->j", coupling, coupling)
        sigma2 = float(np.partition(norms, free.size - m)[free.size - m :].sum())
        is_free = allowed & ~included
        largest = largest_free(self.near_rows, self.abs, free, is_free, m - 1)  # each row's m - 1 largest
        mu = free_part_bound(self.diagonal[free], largest, m, self.psd)
        capacities = largest_free(self.near_squares, self.squares.T, np.arange(self.values.size), is_free, m).sum(axis=1)
        mu = min(mu, spectral_knapsack(self.values, np.minimum(capacities, 1.0)))
        if rho:
            mu = min(mu, self.free_threshold(allowed, included, rho, m))
        split = float(two_by_two(np.float64(lam), np.float64(mu), np.float64(sigma2)))
        # the arrow: the coupling to each eigenvector of A_II apart, sigma_i^2 the m largest (e_i' a_Il)^2
        along = (eigenvectors.T @ coupling) ** 2
        sigmas = np.sqrt(np.partition(along, free.size - m, axis=1)[:, free.size - m :].sum(axis=1))
        arrow = np.diag(np.append(eigenvalues, mu))
        arrow[:-1, -1] = arrow[-1, :-1] = sigmas
        return min(split, float(np.linalg.eigvalsh(arrow)[-1])), weights

    def schur_bound(self, included: np.ndarray, allowed: np.ndarray, floor: float, ceiling: float) -> float:
        r"""The Schur bound of a node with variables fixed in (``B = I``): ``floor`` when it prunes the node there, else
        the least of ``ceiling`` (an upper bound already known) and the values a few bisection steps between them
        certify.

        On a support :math:`S = I \cup J`, in the basis of :math:`A_{II}`'s eigenvectors :math:`E` on :math:`I`,
        :math:`A_{SS}` is :math:`W_J = \begin{pmatrix}\Lambda & C_J \\ C_J^\top & A_{JJ}\end{pmatrix}` with
        :math:`C = E^\top A_{IF}` (``F`` the free variables). For :math:`\lambda > \lambda_{\max}(\Lambda)`,
        :math:`\lambda I - W_J \succeq 0` exactly when its Schur complement is, that is when
        :math:`\lambda_{\max}(B_{JJ}(\lambda)) \le \lambda` for :math:`B(\lambda) = A_{FF} + C^\top(\lambda I -
        \Lambda)^{-1}C`, a positive semi-definite matrix on the free variables. So any :math:`\lambda` at which a bound
        on :math:`\lambda_{\max}(B_{JJ}(\lambda))` over every ``m`` free variables is at most :math:`\lambda` bounds
        every support of the node; the bound on ``m`` free variables is the least of the Frobenius norm's (the sum over
        the ``m`` largest rows of each row's ``m`` largest squares), Gershgorin's and the trace's. It treats the
        coupling to the fixed variables and the free part together, where the split bound bounds them apart: on the
        colon's genes (k = 20) it is below the best value found at most nodes the split bound leaves 6 to 11 %
        above it.
        """
        fixed = np.flatnonzero(included)
        free = np.flatnonzero(allowed & ~included)
        m = self.k - fixed.size
        if m < 1 or free.size < m:
            return ceiling
        eigenvalues, eigenvectors = np.linalg.eigh(self.a[np.ix_(fixed, fixed)])
        coupling = eigenvectors.T @ self.a[np.ix_(fixed, free)]
        top = float(eigenvalues[-1])
        lowest = top + max(abs(top) * 1e-12, np.finfo(float).tiny)  # above Lambda's largest: lambda I - Lambda > 0

        def certifies(lam: float) -> bool:
            # B = A_FF + C^T (lam I - Lambda)^{-1} C, a block of rows at a time: near the root F is nearly every
            # variable, and B, its magnitudes and their partition would be three p x p arrays (Golub's peak)
            scaled = coupling.T / (lam - eigenvalues)
            diagonal = self.diagonal[free] + np.einsum("ji,ij->j", scaled, coupling)
            largest = np.zeros((free.size, m - 1))
            for part in item_blocks(free.size, free.size) if m > 1 else ():
                rows = free[part]
                block = self.a[np.ix_(rows, free)]
                block += scaled[part] @ coupling
                np.abs(block, out=block)
                block[np.arange(rows.size), np.arange(free.size)[part]] = 0.0  # the diagonal
                block.partition(free.size - (m - 1), axis=1)
                largest[part] = block[:, free.size - (m - 1) :]
            return free_part_bound(diagonal, largest, m, self.psd) <= lam

        lo, hi = max(floor, lowest), ceiling
        if lo >= hi:
            return ceiling
        if certifies(lo):
            return lo
        for _ in range(SCHUR_STEPS):
            middle = (lo + hi) / 2
            if certifies(middle):
                hi = middle
            else:
                lo = middle
        return hi

    def free_threshold(self, allowed: np.ndarray, included: np.ndarray, rho: float, m: int) -> float:
        r"""The threshold bound at ``rho`` of ``m`` variables among the free ones, from the allowed set's kept
        decomposition of :math:`(M_\rho)_{UU}` (``inf`` when none is kept): each eigenvector's capacity is its ``m``
        largest squared entries on the free rows (a support within them has no weight on the fixed ones)."""
        cached = self._kept.get(("threshold", allowed.tobytes(), float(rho)))
        if cached is None:
            return np.inf
        spectrum = thresholded_spectrum(None, rho, m, blocks=cached[0], outside=included[np.flatnonzero(allowed)])
        return spectral_knapsack(spectrum.values, spectrum.capacities) + rho * (m - 1)

    def value(self, support: np.ndarray) -> tuple[float, np.ndarray]:
        r""":math:`\lambda_{\max}(A_{SS}, B_{SS})` and its vector on the support."""
        return generalized_top(self.a[np.ix_(support, support)], self._b(support))

    def top(self, allowed: np.ndarray, included: np.ndarray) -> tuple[float, np.ndarray]:
        r"""The spectral bounds of an allowed set and the weights of its variables in the maximiser.

        With :math:`B = I`: :math:`A_{UU} = \sum_i \lambda_i u_iu_i^\top` and a unit :math:`x` on a support
        :math:`S \subseteq U` with :math:`I \subseteq S`, :math:`|S| = k`, has :math:`x^\top Ax = \sum_i
        \lambda_i (u_i^\top x)^2` with :math:`\sum_i (u_i^\top x)^2 = 1` and :math:`(u_i^\top x)^2 \le
        \|u_{i,S}\|^2 \le c_i`, the weight of :math:`u_i` on :math:`I` plus its ``k - |I|`` largest squared
        entries on the free variables. So :math:`x^\top Ax` is at most the value of the fractional knapsack
        that fills the largest :math:`\lambda_i` first, each up to :math:`c_i` (``spectral``), never above
        :math:`\lambda_1` (``eigenvalue``).
        """
        index = np.flatnonzero(allowed)
        weights = np.zeros(self.p)
        if self.q is not None:
            value, y = self.value(index)
            weights[index] = np.abs(y)
            return value, weights
        def decompose() -> tuple[np.ndarray, np.ndarray]:
            values, vectors = interruptible_eigh(self.a[np.ix_(index, index)])
            return np.clip(values[::-1], 0.0, None), vectors[:, ::-1]

        values, vectors = self._remembered(("eigen", allowed.tobytes()), decompose, lambda d: d[0].nbytes + d[1].nbytes)
        weights[index] = np.abs(vectors[:, 0])
        spectral = self.knapsack(values, vectors**2, included[index])
        return min(float(values[0]), spectral), weights

    def threshold(self, allowed: np.ndarray, included: np.ndarray, rhos: Iterable[float],
                  enough: float = -np.inf, deadline: float = np.inf) -> tuple[float, float, np.ndarray]:  # fmt: skip
        r"""The threshold bound of the node, the least over ``rhos`` (largest first, until :data:`RHO_PATIENCE` in a
        row do not improve, or one is at most ``enough``: the search prunes the node then, or :func:`time.perf_counter`
        passes ``deadline`` after the first: every :math:`\rho` gives a bound): the spectral knapsack of
        :math:`(M_\rho)_{UU}` plus :math:`\rho (k - 1)`; with the :math:`\rho` that gave it and the
        weights of the variables in the top eigenvector of :math:`(M_\rho)_{UU}` (for branching)."""
        index = np.flatnonzero(allowed)
        fixed = included[index]
        key = allowed.tobytes()
        best, best_rho, best_weights = np.inf, 0.0, np.zeros(index.size)
        rising = 0
        subset = None if index.size == self.p else index  # A's allowed block is read where needed, never copied whole
        for rho in sorted(rhos, reverse=True):  # large rho first: small blocks, cheap
            cached = ("threshold", key, float(rho))
            blocks = self._remembered(cached, lambda rho=rho: thresholded_blocks(self.a, float(rho), index=subset),
                                      lambda b: b.nbytes)  # fmt: skip
            knapsack, spectrum, used = threshold_knapsack(self.a, float(rho), self.k, fixed, blocks=blocks, index=subset)
            if used is not blocks:  # a block completed: kept so for this allowed set's other nodes
                self._keep(cached, used, used.nbytes)
            bound = knapsack + rho * (self.k - 1)
            if bound < best:
                best, best_rho, best_weights, rising = bound, float(rho), spectrum.top, 0
                if best <= enough:
                    break
            else:
                rising += 1
                if rising == RHO_PATIENCE:  # past the best: smaller rho only builds larger blocks
                    break
            if time.perf_counter() >= deadline:
                break
        full = np.zeros(self.p)
        full[index] = best_weights
        return best, best_rho, full

    def cheap_bounds(self, included: np.ndarray, allowed: np.ndarray) -> float:
        """The Gershgorin and diagonal bounds (``B = I`` only; ``inf`` otherwise)."""
        if self.q is not None:
            return np.inf
        k, fixed = self.k, included.sum()
        free = allowed & ~included
        free_index = np.flatnonzero(free)
        diag_bound = float(self.diagonal[included].sum() + sum_of_largest(self.diagonal[free_index], k - fixed)) if self.psd else np.inf
        rows = np.flatnonzero(allowed)
        fixed_index = np.flatnonzero(included)
        # each row may take k - |I| free partners when it is in I itself, k - |I| - 1 when it is a free variable:
        # the sum of its t largest entries (t = k - |I|, a partition), less the t-th largest for the free rows
        width = free_index.size
        most = min(max(k - fixed, 0), width)
        fixed_part, free_part = np.zeros(rows.size), np.zeros(rows.size)
        for part in item_blocks(rows.size, width):  # blocks of rows: Ctrl-C between them
            these = rows[part]
            fixed_part[part] = self.abs[np.ix_(these, fixed_index)].sum(axis=1)  # sum over I (the diagonal is 0)
            if most:
                largest = np.partition(self.abs[np.ix_(these, free_index)], width - most, axis=1)[:, width - most :]
                sums = largest.sum(axis=1)
                fewer = ~included[these] if k - fixed - 1 < width else np.zeros(these.size, dtype=bool)
                sums[fewer] -= largest[fewer].min(axis=1)
                free_part[part] = sums
        gershgorin = float(np.max(self.diagonal[rows] + fixed_part + free_part))
        # the whole matrix's eigenvectors restricted to U: a unit x on S within U has x'Ax = sum_i lambda_i (u_i'x)^2
        spectral = self.knapsack(self.values, self.squares[rows], included[rows])
        return min(diag_bound, gershgorin, spectral)


def _symmetric(a: np.ndarray) -> bool:
    """Whether the square ``a`` equals its transpose exactly, compared by blocks of rows (no p x p temporary)."""
    return all(np.array_equal(a[block], a.T[block]) for block in item_blocks(a.shape[0], a.shape[1]))


class OffDiagonalMagnitudes:
    """The magnitudes :math:`|a_{ij}|` of a square matrix with its diagonal read as 0, made for the entries asked
    (``m[rows]`` or ``m[np.ix_(rows, cols)]``) instead of kept as a second ``p x p`` matrix (0.4 GB at Golub's 7129
    genes): every use takes a block of rows or a submatrix, which it copies anyway."""

    def __init__(self, a: np.ndarray) -> None:
        self.a = a
        self.shape = a.shape
        self.dtype = a.dtype

    def __getitem__(self, key: object) -> np.ndarray:
        p = self.shape[0]
        if isinstance(key, tuple):  # np.ix_(rows, cols)
            rows, cols = np.asarray(key[0]).ravel(), np.asarray(key[1]).ravel()
        else:  # a block of rows: a slice or an index array
            rows, cols = np.arange(p)[key], None
        block = np.abs(self.a[key])
        if cols is None:
            block[np.arange(rows.size), rows] = 0.0
        else:
            position = np.full(p, -1)
            position[cols] = np.arange(cols.size)
            hit = position[rows] >= 0
            block[np.flatnonzero(hit), position[rows[hit]]] = 0.0
        return block


def descending_prefix(matrix: np.ndarray | OffDiagonalMagnitudes, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row's ``width`` largest entries of the nonnegative ``matrix`` in descending order, and their columns."""
    rows, p = matrix.shape
    width = min(width, p)
    values, columns = np.empty((rows, width), dtype=matrix.dtype), np.empty((rows, width), dtype=np.intp)
    for block in item_blocks(rows, p):  # blocks of rows: Ctrl-C between them
        part = matrix[block]
        chosen = np.argpartition(-part, width - 1, axis=1)[:, :width] if width < p else np.tile(
            np.arange(p), (part.shape[0], 1))  # fmt: skip
        chosen_values = np.take_along_axis(part, chosen, axis=1)
        order = np.argsort(-chosen_values, axis=1, kind="stable")
        values[block] = np.take_along_axis(chosen_values, order, axis=1)
        columns[block] = np.take_along_axis(chosen, order, axis=1)
    return values, columns


def largest_free(prefix: tuple[np.ndarray, np.ndarray], matrix: np.ndarray | OffDiagonalMagnitudes, rows: np.ndarray,
                 free: np.ndarray, count: int) -> np.ndarray:  # fmt: skip
    """For each of ``rows`` of the nonnegative ``matrix``, its ``count`` largest entries in the columns where
    ``free`` (a ``count``-column array, in no particular order; zeros where a row has fewer).

    ``prefix`` holds each row's largest entries in descending order (:func:`descending_prefix`): a row whose
    prefix has ``count`` free columns takes the first of them; any other is partitioned in full.
    """
    if count == 0:
        return np.zeros((rows.size, 0))
    values, columns = prefix[0][rows], prefix[1][rows]
    usable = free[columns]
    taken = usable & (np.cumsum(usable, axis=1) <= count)
    result = np.zeros((rows.size, count))
    found = taken.sum(axis=1)
    full = found == count
    if full.any():
        result[full] = values[full][taken[full]].reshape(-1, count)
    short = np.flatnonzero(~full)
    if short.size:
        block = matrix[np.ix_(rows[short], np.flatnonzero(free))]
        width = block.shape[1]
        take = min(count, width)
        if take:
            result[short, :take] = np.partition(block, width - take, axis=1)[:, width - take :]
    return result


def free_part_bound(diagonal: np.ndarray, largest: np.ndarray, m: int, psd: bool) -> float:
    r"""An upper bound on :math:`\lambda_{\max}(B_{JJ})` over every ``m`` rows ``J`` of a symmetric ``B``, from its
    ``diagonal`` and each row's ``m - 1`` ``largest`` off-diagonal magnitudes among those rows: the least of the
    Frobenius norm's (the sum over the ``m`` largest rows of each row's diagonal square and ``m - 1`` largest
    off-diagonal squares), Gershgorin's and, when ``B`` is positive semi-definite (``psd``), the trace's."""
    width = diagonal.size
    bound = sum_of_largest(diagonal, m) if psd else np.inf
    if m == 1:
        return min(bound, float(diagonal.max()))
    bound = min(bound, float(np.max(diagonal + largest.sum(axis=1))))  # Gershgorin
    rows = diagonal**2 + np.einsum("ij,ij->i", largest, largest)  # each row's largest m squares
    return min(bound, float(np.sqrt(np.partition(rows, width - m)[width - m :].sum())))  # Frobenius


def two_by_two(corner: np.ndarray, other: np.ndarray, coupling2: np.ndarray) -> np.ndarray:
    r"""The top eigenvalue of :math:`\begin{pmatrix} a & b \\ b & c \end{pmatrix}` (``corner`` a, ``other`` c,
    ``coupling2`` :math:`b^2`), elementwise: :math:`(a + c)/2 + \sqrt{((a - c)/2)^2 + b^2}`."""
    half = (corner - other) / 2
    return (corner + other) / 2 + np.sqrt(half * half + coupling2)
