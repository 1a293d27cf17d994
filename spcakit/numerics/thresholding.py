r"""The threshold bound's pieces, on explicit matrices: soft-thresholding, block eigen-decompositions, knapsacks.

For a symmetric ``p x p`` matrix :math:`C` and :math:`\rho \ge 0`, :math:`M_\rho` is :math:`C` with its
off-diagonal entries soft-thresholded by :math:`\rho` (the diagonal kept), and :math:`C = M_\rho + R_\rho`
with :math:`|R_{ij}| \le \rho` off the diagonal, 0 on it. A unit :math:`x` with ``k`` nonzeros has
:math:`x^\top R_\rho x \le \rho(\|x\|_1^2 - 1) \le \rho(k - 1)`, so

.. math::

    x^\top C x \le \operatorname{knapsack}(M_\rho, k) + \rho (k - 1)

for every :math:`\rho`: the dual of d'Aspremont, El Ghaoui, Jordan & Lanckriet's DSPCA relaxation (*A direct
formulation for sparse PCA using semidefinite programming*, SIAM Review 2007) at one feasible point.
:func:`spcakit.analysis.bounds.threshold_bound` and :func:`spcakit.analysis.bounds.refined_threshold_bound` give it for a
covariance; the ``exact`` method's search takes it at every node. This module holds what they share and
needs nothing of spcakit but its errors: :func:`spectral_knapsack`, :func:`thresholded_blocks`
(:math:`M_\rho` decomposed, block by block), :func:`thresholded_spectrum` (with each eigenvector's capacity
on a support), and :func:`threshold_search` (a short search for a good :math:`\rho`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import attrs
import numpy as np

from spcakit.core.errors import InvalidParameterError
from spcakit.numerics import lapack
from spcakit.numerics.linalg import interruptible, item_blocks, leading_subset

__all__ = ["COARSE_RHO_GRID", "COMPONENT_SIZE", "PARTIAL_BLOCK", "PARTIAL_PAIRS", "RHO_GRID", "RHO_REFINEMENTS", "ThresholdedBlocks",
           "ThresholdedSpectrum", "completed", "knapsack_weights", "spectral_knapsack", "support_capacities", "threshold_knapsack", "threshold_search",
           "threshold_value", "thresholded_blocks", "thresholded_spectrum"]


def support_capacities(squares: np.ndarray, fixed: np.ndarray, need: int) -> np.ndarray:
    r"""Each eigenvector's capacity on a support: its squared weight on the ``fixed`` rows plus its ``need`` largest
    squared entries on the others (``squares``: the squared eigenvectors, one column each, rows the variables).
    :math:`(u^\top x)^2 \le \|u_S\|^2` for a unit :math:`x` on :math:`S`, and this is the most :math:`\|u_S\|^2`
    can be when :math:`S` holds the fixed rows and ``need`` others."""
    capacity = squares[fixed].sum(axis=0)
    free_rows = np.flatnonzero(~fixed)
    take = min(max(need, 0), free_rows.size)
    if take:
        cut = free_rows.size - take
        largest = np.empty_like(capacity)
        for block in item_blocks(squares.shape[1], free_rows.size):  # blocks of eigenvectors: Ctrl-C between them
            free = squares[free_rows, block]
            largest[block] = np.partition(free, cut, axis=0)[cut:].sum(axis=0)
        capacity = capacity + largest
    return capacity


def spectral_knapsack(values: np.ndarray, capacities: np.ndarray) -> float:
    r"""The fractional knapsack :math:`\max \sum_i \lambda_i w_i` over :math:`\sum_i w_i \le 1`,
    :math:`0 \le w_i \le c_i`: the largest values first, each up to its capacity (negative values count as 0,
    which only raises it).

    With :math:`M = \sum_i \lambda_i u_iu_i^\top` and :math:`w_i = (u_i^\top x)^2` for a unit :math:`x`, this
    bounds :math:`x^\top M x` whenever each :math:`(u_i^\top x)^2 \le c_i`; for ``x`` on a support of ``k``
    variables, :math:`c_i` = the sum of :math:`u_i`'s ``k`` largest squared entries will do.
    """
    values = np.asarray(values, dtype=float)
    order = np.argsort(-values, kind="stable")
    filled = np.minimum(np.cumsum(np.asarray(capacities, dtype=float)[order]), 1.0)
    return float(np.clip(values[order], 0.0, None) @ np.diff(filled, prepend=0.0))


@attrs.frozen(kw_only=True)
class ThresholdedSpectrum:
    r"""The spectrum of :math:`M_\rho` (see :func:`thresholded_spectrum`): ``values`` with their eigenvectors'
    ``capacities``, and ``top``, the absolute entries of the eigenvector of the largest value."""

    values: np.ndarray = attrs.field(eq=False)
    capacities: np.ndarray = attrs.field(eq=False)
    top: np.ndarray = attrs.field(eq=False)
    #: ``(position in values, block)`` of each block decomposed in part: the item that stands for the eigenpairs
    #: not computed (see :func:`thresholded_spectrum`).
    phantoms: tuple[tuple[int, int], ...] = ()


#: Blocks of more than this many variables are decomposed in part by :func:`thresholded_blocks`: their
#: :data:`PARTIAL_PAIRS` leading eigenpairs (LAPACK's ``syevr`` for a subset), where the knapsack is almost always
#: filled; :func:`threshold_knapsack` completes a block whose remaining eigenpairs the knapsack reaches. At 250
#: variables the leading 16 took 3.4 ms against 6.6 ms for all, at 400 8.4 against 19.7 ms; on the colon's 500
#: genes the search spent 45 % of its time in these decompositions.
PARTIAL_BLOCK = 128
PARTIAL_PAIRS = 16


#: Blocks of at least this many variables decomposed in full are decomposed in their own memory
#: (:func:`spcakit.numerics.lapack.syevd_in_place`, the driver NumPy's ``eigh`` calls, the same numbers): NumPy's
#: ``eigh`` copies its input beside the driver's workspace: that copy was the exact search's peak on gene data.
IN_PLACE_ORDER = 500

#: Matrices of at most this many variables are thresholded as one block, larger ones by connected components.
COMPONENT_SIZE = 128


@attrs.frozen(kw_only=True)
class ThresholdedBlocks:
    r""":math:`M_\rho` decomposed block by block (see :func:`thresholded_blocks`): the variables ``alone`` (their
    diagonal entries are eigenvalues), and per block its ``members``, eigenvalues (ascending) and eigenvectors;
    what :func:`thresholded_spectrum` needs besides the support's constraints, so it may be kept and reused."""

    rho: float
    diagonal: np.ndarray = attrs.field(eq=False)
    alone: np.ndarray = attrs.field(eq=False)
    blocks: tuple[tuple[np.ndarray, np.ndarray, np.ndarray], ...] = attrs.field(eq=False)
    #: Per block, whether all its eigenpairs are there (else its :data:`PARTIAL_PAIRS` leading ones).
    complete: tuple[bool, ...] = attrs.field(eq=False)

    def is_complete(self, block: int) -> bool:
        """Whether the block of that index has all its eigenpairs."""
        return self.complete[block]

    @property
    def nbytes(self) -> int:
        """The memory it holds (for caches)."""
        return int(self.diagonal.nbytes + self.alone.nbytes + sum(m.nbytes + v.nbytes + u.nbytes for m, v, u in self.blocks))


def thresholded_blocks(c: np.ndarray, rho: float, complete: bool = False, index: np.ndarray | None = None
                       ) -> ThresholdedBlocks:  # fmt: skip
    r""":math:`M_\rho`, ``c`` (or its submatrix on the variables ``index``, read where needed: never copied whole)
    with its off-diagonal entries soft-thresholded by ``rho``
    (:math:`\operatorname{sign}(c_{ij}) (|c_{ij}| - \rho)_+`, the diagonal kept), eigen-decomposed.

    :math:`M_\rho` is block diagonal on the connected components of the entries above ``rho``: above
    :data:`COMPONENT_SIZE` variables each block is decomposed on its own, and a variable alone is an
    eigenvalue (its diagonal entry). A block of more than :data:`PARTIAL_BLOCK` variables gets its
    :data:`PARTIAL_PAIRS` leading eigenpairs only, unless ``complete`` (:func:`completed` decomposes such a block
    in full later).
    """
    variables = np.arange(c.shape[0]) if index is None else np.asarray(index)
    m = variables.size
    if m <= COMPONENT_SIZE:  # small: one decomposition is cheaper than finding the components
        count, labels = 1, np.zeros(m, dtype=int)
    else:
        count, labels = _components(_linked(c, None if index is None else variables, rho))
    sizes = np.bincount(labels, minlength=count)
    blocks, whole = [], []
    for component in np.flatnonzero(sizes > 1):
        members = np.flatnonzero(labels == component)
        full = complete or members.size <= max(PARTIAL_BLOCK, PARTIAL_PAIRS)
        blocks.append((members, *_decomposed(c, variables[members], rho, full)))
        whole.append(bool(full))
    return ThresholdedBlocks(rho=float(rho), diagonal=c[variables, variables], alone=np.flatnonzero(sizes[labels] == 1),
                             blocks=tuple(blocks), complete=tuple(whole))  # fmt: skip


def _linked(c: np.ndarray, variables: np.ndarray | None, rho: float) -> np.ndarray:
    """:math:`|c_{ij}| > \rho` on the ``variables`` (all of them for ``None``), a block of rows at a time: one boolean
    matrix, never a float copy of ``c`` or of its submatrix."""
    m = c.shape[0] if variables is None else variables.size
    linked = np.empty((m, m), dtype=bool)
    for part in item_blocks(m, m):
        rows = c[part] if variables is None else c[np.ix_(variables[part], variables)]
        np.greater(np.abs(rows), rho, out=linked[part])
    return linked


def _components(linked: np.ndarray) -> tuple[int, np.ndarray]:
    """The connected components of the graph of the symmetric boolean matrix ``linked`` (its diagonal ignored): their
    count and each variable's label, the components numbered in the order of their first variables.

    SciPy's strong components of the graph in CSR form, built from the rows' nonzeros directly (a symmetric graph's
    strong components are its components; SciPy's undirected search would add the transpose, and its conversion
    of a dense matrix makes more copies: 0.47 ms against 1.8 ms at 500 variables), then numbered canonically.
    """
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    m = linked.shape[0]
    np.fill_diagonal(linked, False)
    flat = np.flatnonzero(linked)
    indptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(np.count_nonzero(linked, axis=1), out=indptr[1:])
    graph = csr_matrix((np.ones(flat.size), flat % m, indptr), shape=(m, m))
    count, labels = connected_components(graph, directed=True, connection="strong")
    _, first = np.unique(labels, return_index=True)  # each label's first variable
    canonical = np.empty(count, dtype=np.intp)
    canonical[np.argsort(first, kind="stable")] = np.arange(count)
    return int(count), canonical[labels]


def _decomposed(c: np.ndarray, members: np.ndarray, rho: float, full: bool) -> tuple[np.ndarray, np.ndarray]:
    """The eigenvalues (ascending) and eigenvectors of :math:`M_\rho` on the block ``members``: all of them, or
    (not ``full``) the :data:`PARTIAL_PAIRS` leading ones."""
    thresholded = _soft_thresholded(c, members, rho)
    order = thresholded.shape[0]  # Ctrl-C is not held for seconds by a block of thousands of variables
    if full:
        if order >= IN_PLACE_ORDER:  # decomposed in the copy's own memory: no second n x n array beside LAPACK's
            found = interruptible(lambda: lapack.syevd_in_place(thresholded), order)
            if found is not None:
                return found  # type: ignore[no-any-return]
            thresholded = _soft_thresholded(c, members, rho)  # possibly overwritten: made again
        return interruptible(lambda: np.linalg.eigh(thresholded), order)  # type: ignore[no-any-return]
    return interruptible(lambda: leading_subset(thresholded, PARTIAL_PAIRS, driver="evr"), order)  # type: ignore[no-any-return]


def _soft_thresholded(c: np.ndarray, members: np.ndarray, rho: float) -> np.ndarray:
    """:math:`M_\rho` on ``members``: sign(c) (|c| - rho)_+ off the diagonal, in place on one copy of the block (at
    the root of a search the block is all of c: one p x p copy, not two)."""
    thresholded = c[np.ix_(members, members)]
    negative = np.signbit(thresholded)
    diagonal = np.diag(thresholded).copy()
    np.abs(thresholded, out=thresholded)
    thresholded -= rho
    np.maximum(thresholded, 0.0, out=thresholded)
    np.negative(thresholded, out=thresholded, where=negative)
    del negative
    thresholded[np.diag_indices_from(thresholded)] = diagonal
    return thresholded


def completed(blocks: ThresholdedBlocks, c: np.ndarray, which: Iterable[int], index: np.ndarray | None = None
              ) -> ThresholdedBlocks:  # fmt: skip
    """``blocks`` (of ``c``, or of its submatrix on ``index``) with the blocks ``which`` decomposed in full; the others
    as they are."""
    parts, whole = list(blocks.blocks), list(blocks.complete)
    for block in which:
        members = parts[block][0]
        parts[block] = (members, *_decomposed(c, members if index is None else index[members], blocks.rho, True))
        whole[block] = True
    return attrs.evolve(blocks, blocks=tuple(parts), complete=tuple(whole))


def thresholded_spectrum(
    c: np.ndarray | None, rho: float, k: int, fixed: np.ndarray | None = None, *, blocks: ThresholdedBlocks | None = None,
    outside: np.ndarray | None = None,
) -> ThresholdedSpectrum:
    r"""The spectrum of :math:`M_\rho` (:func:`thresholded_blocks`, or the ``blocks`` given, for ``c`` and ``rho``):
    its eigenvalues, each eigenvector's capacity (its squared weight on the ``fixed`` variables plus its
    ``k - |fixed|`` largest squared entries on the others, at most 1; a variable alone has capacity 1), and
    the top eigenvector's absolute entries. Variables ``outside`` (a mask) are in no support: they add no weight
    to a capacity, and one alone is no item.
    """
    if blocks is None:
        if c is None:
            raise InvalidParameterError("thresholded_spectrum needs the matrix c or its blocks")
        blocks = thresholded_blocks(c, rho)
    diagonal = blocks.diagonal
    m = diagonal.shape[0]
    fixed = np.zeros(m, dtype=bool) if fixed is None else np.asarray(fixed, dtype=bool)
    inside = np.ones(m, dtype=bool) if outside is None else ~np.asarray(outside, dtype=bool)
    alone = blocks.alone[inside[blocks.alone]]
    values, capacities = [diagonal[alone]], [np.ones(alone.size)]
    top, best = np.zeros(m), -np.inf
    if alone.size:
        lone = int(alone[np.argmax(values[0])])
        best, top[lone] = float(diagonal[lone]), 1.0
    need = max(k - int(fixed.sum()), 0)
    phantoms, position = [], len(values[0])
    for index, (members, block_values, vectors) in enumerate(blocks.blocks):
        squares = vectors**2
        rest = np.clip(1.0 - squares.sum(axis=1), 0.0, 1.0)[:, None]  # each row's weight on the pairs not computed
        if outside is not None:
            squares[~inside[members]] = 0.0
            rest[~inside[members]] = 0.0
        values.append(block_values)
        capacities.append(np.minimum(support_capacities(squares, fixed[members], need), 1.0))
        position += block_values.size
        if not blocks.is_complete(index):  # the eigenpairs not computed, as one item (see above)
            values.append(block_values[:1])
            capacities.append(np.minimum(support_capacities(rest, fixed[members], need), 1.0))
            phantoms.append((position, index))
            position += 1
        if block_values[-1] > best:
            best, top[:] = float(block_values[-1]), 0.0
            top[members] = np.abs(vectors[:, -1])
    return ThresholdedSpectrum(values=np.concatenate(values), capacities=np.concatenate(capacities), top=top,
                               phantoms=tuple(phantoms))  # fmt: skip


def knapsack_weights(values: np.ndarray, capacities: np.ndarray) -> np.ndarray:
    """The weights :func:`spectral_knapsack` gives each item (the largest values first, each up to its capacity,
    1 in all; items of value at most 0 get none)."""
    values = np.asarray(values, dtype=float)
    order = np.argsort(-values, kind="stable")
    filled = np.minimum(np.cumsum(np.asarray(capacities, dtype=float)[order]), 1.0)
    weights = np.zeros(values.size)
    weights[order] = np.where(values[order] > 0, np.diff(filled, prepend=0.0), 0.0)
    return weights


def threshold_knapsack(
    c: np.ndarray | Callable[[], np.ndarray], rho: float, k: int, fixed: np.ndarray | None = None, *,
    blocks: ThresholdedBlocks | None = None, index: np.ndarray | None = None,
) -> tuple[float, ThresholdedSpectrum, ThresholdedBlocks]:
    r"""The spectral knapsack of :math:`M_\rho` (without :math:`\rho (k - 1)`), its spectrum and the blocks it
    used: those given (else :func:`thresholded_blocks` of ``c``), with every block decomposed in part whose
    remaining eigenpairs the knapsack reaches completed (from ``c``, a matrix or a function that makes it).

    A block decomposed in part enters the knapsack with its computed eigenpairs and one more item for the rest:
    the value of its smallest computed eigenvalue (no remaining one is larger) and the capacity of the rest on a
    support, its rows' remaining weight :math:`1 - \sum_{\text{computed } i} u_{ji}^2` summed as
    :func:`support_capacities` sums (:math:`\sum_{i \text{ rest}} (u_i^\top x)^2 \le \|U_{\text{rest}, S}\|_F^2`).
    That knapsack is never below the whole spectrum's, and equal to it when the knapsack is full before the item
    for the rest; when not, the block is decomposed in full and the knapsack taken again, so the value is the
    whole spectrum's (to rounding) either way. With ``index``, all of this is of ``c``'s submatrix on those variables.
    """
    matrix = c if isinstance(c, np.ndarray) else None
    if blocks is None:
        matrix = c() if matrix is None else matrix  # type: ignore[operator]
        blocks = thresholded_blocks(matrix, rho, index=index)
    while True:
        spectrum = thresholded_spectrum(None, rho, k, fixed, blocks=blocks)
        weights = knapsack_weights(spectrum.values, spectrum.capacities)
        reached = frozenset(block for position, block in spectrum.phantoms if weights[position] > 0)
        if not reached:
            return spectral_knapsack(spectrum.values, spectrum.capacities), spectrum, blocks
        matrix = c() if matrix is None else matrix  # type: ignore[operator]
        blocks = completed(blocks, matrix, reached, index)


#: The threshold bound's :math:`\rho` grid, as shares of the largest diagonal entry.
RHO_GRID = tuple(float(r) for r in np.geomspace(1e-4, 1.0, 29))


#: The refined search's first grid: every fourth share of :data:`RHO_GRID` (8, a factor :math:`10^{4/7} \approx 3.7`
#: apart), scanned from the largest down.
COARSE_RHO_GRID = RHO_GRID[::4]
#: How many times the refined search halves its step (in :math:`\log\rho`) around the best :math:`\rho`.
RHO_REFINEMENTS = 3


def threshold_value(c: np.ndarray, rho: float, k: int) -> float:
    r""":math:`\operatorname{knapsack}(M_\rho, k) + \rho (k - 1)`, before any allowance for rounding."""
    return threshold_knapsack(c, rho, k)[0] + rho * (k - 1)


def threshold_search(c: np.ndarray, k: int) -> tuple[float, float]:
    r"""The search of :func:`refined_threshold_bound` on the symmetric ``c``: the least value found (before any
    allowance for rounding) and its :math:`\rho`."""
    scale = float(np.abs(np.diag(c)).max(initial=0.0))
    if not scale > 0:  # C = 0 (a PSD matrix with a zero diagonal): nothing to threshold
        return threshold_value(c, 0.0, k), 0.0
    best, best_rho, rises = np.inf, 0.0, 0
    for share in sorted(COARSE_RHO_GRID, reverse=True):
        rho = share * scale
        if rho * (k - 1) >= best:  # the value is at least rho (k - 1): this rho cannot do better
            continue
        value = threshold_value(c, rho, k)
        if value < best:
            best, best_rho, rises = value, rho, 0
        else:
            rises += 1
            if rises == 2:
                break
    step = np.log(COARSE_RHO_GRID[1] / COARSE_RHO_GRID[0]) / 2
    for _ in range(RHO_REFINEMENTS):
        center = best_rho
        for rho in (center * np.exp(-step), center * np.exp(step)):
            if rho * (k - 1) < best:
                value = threshold_value(c, float(rho), k)
                if value < best:
                    best, best_rho = value, float(rho)
        step /= 2
    return float(best), float(best_rho)
