r"""The top eigenvalue of a support's covariance under linear conditions, :math:`W^\top y = 0`, and of every swap.

The non-redundant refiners (:mod:`spcakit_deflation.nonredundant`) ascend each loading by swaps given the others:
the loading on a support :math:`S` is the top eigenvector of :math:`C_S` on the null space of :math:`W_S^\top`
(:math:`W` the other loadings, or :math:`C` times them). These functions give those values for stacks of supports
(:func:`null_space_tops`) and for every removal after an entering variable (:func:`removal_scores`). Where the
entering variable's conditions lie in the row space of the support's (always when :math:`W_S` has full column rank;
under orthogonality, the variables outside the other loadings' supports, nearly all of them on gene data), its swaps
come from one eigen-decomposition of the support's problem by secular equations (:class:`SupportOnNullSpace`).
"""

from __future__ import annotations

import attrs
import numpy as np

from spcakit_deflation.secular import bordered_top, hyperplane_tops, removal_tops

#: A direction of :math:`W_S` with singular value below this times :math:`W_S`'s largest is not a further condition
#: (the conditions are then dependent to rounding); a zero :math:`W_S` (loadings on other variables) is none.
CONSTRAINT_RTOL = 1e-13

#: A removed variable whose unit vector has at most this squared length in the null space of the constraint is one the
#: constraint sets to zero already (:func:`removal_scores`): removing it loses nothing.
NULL_RTOL = 1e-24

#: :func:`removal_scores` solves the ``k x k`` problems themselves when the batch has at most this many entering
#: variables times ``k^2`` (measured: below it they cost less than the secular route's fixed cost, above it more).
REMOVAL_DIRECT = 400


def _condition_directions(w: np.ndarray, floor: float, *, full: bool
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    r"""The left singular vectors of every :math:`W_b` and which of the first ``min(k, m)`` are conditions: singular
    values above :data:`CONSTRAINT_RTOL` times the largest and above ``floor``. From the SVD of :math:`W` itself: its
    Gram matrix :math:`W^\top W` resolves singular values only down to about :math:`\sqrt{\epsilon}` times the
    largest, so a rank-deficient :math:`W` (two other loadings that meet the support in one variable) would count a
    direction of rounding as a condition. ``full``: all ``k`` left singular vectors (the last ones span the null
    space of :math:`W^\top`). Also the singular values and right singular vectors (``full``: all ``m``)."""
    left, sing, right = np.linalg.svd(w, full_matrices=full)
    keep = sing > np.maximum(CONSTRAINT_RTOL * sing[:, :1], floor)
    return left, keep, sing, right


def null_space_tops(a: np.ndarray, w: np.ndarray, scale: float, *, vectors: bool = False
                    ) -> tuple[np.ndarray, np.ndarray | None]:
    r"""For stacked symmetric :math:`A_b` (``B x k x k``) and :math:`W_b` (``B x k x m``), the largest
    :math:`y^\top A_b y` over unit :math:`y` with :math:`W_b^\top y = 0`, and (``vectors``) the maximisers.

    The directions of :math:`W_b` with singular values above :data:`CONSTRAINT_RTOL` times its largest (and above
    zero, to ``scale`` times the smallest normal number) span
    :math:`R` (orthonormal); with :math:`P = I - RR^\top` the values are the top eigenvalues of
    :math:`PA_bP - \rho RR^\top`, :math:`\rho` above :math:`A_b`'s spectral radius, whose top eigenvector lies in the
    null space. Where :math:`R` has ``k`` columns only :math:`y = 0` is feasible: the value is :math:`-\infty` (and
    the vector zero).
    """
    k = a.shape[1]
    m = w.shape[2]
    if m == 0:
        if not vectors:
            return np.linalg.eigvalsh(a)[:, -1], None
        values, vecs = np.linalg.eigh(a)
        return values[:, -1], vecs[:, :, -1]
    floor = np.finfo(float).tiny * max(scale, 1.0)
    if m == 1:  # one condition: its unit direction, unless it is zero
        lengths = np.sqrt(np.sum(w[:, :, 0] ** 2, axis=1))
        keep = (lengths > floor)[:, None]
        basis = np.where(keep[:, :, None], w / np.where(keep, lengths[:, None], 1.0)[:, :, None], 0.0)
    else:
        left, keep, _, _ = _condition_directions(w, floor, full=False)
        basis = left * keep[:, None, :]  # orthonormal columns where kept, zero elsewhere
    rank = keep.sum(axis=1)
    projector = np.eye(k) - np.matmul(basis, np.swapaxes(basis, 1, 2))
    radius = np.abs(a).sum(axis=(1, 2)) + 1.0
    shifted = projector @ a @ projector - radius[:, None, None] * (np.eye(k) - projector)
    shifted = (shifted + np.swapaxes(shifted, 1, 2)) / 2
    if vectors:
        values, vecs = np.linalg.eigh(shifted)
        top, top_vectors = values[:, -1], vecs[:, :, -1]
    else:
        top, top_vectors = np.linalg.eigvalsh(shifted)[:, -1], None
    infeasible = rank >= k
    top = np.where(infeasible, -np.inf, top)
    if top_vectors is not None:
        top_vectors[infeasible] = 0.0
        # the eigenvector's component in the range of W is of rounding size: project it out once more
        top_vectors -= np.einsum("bki,bi->bk", basis, np.einsum("bki,bk->bi", basis, top_vectors))
        norms = np.linalg.norm(top_vectors, axis=1)
        top_vectors /= np.where(norms > 0, norms, 1.0)[:, None]
    return top, top_vectors


def removal_scores(a: np.ndarray, w: np.ndarray, scale: float) -> np.ndarray:
    r"""For stacked :math:`A_b` (``B x (k+1) x (k+1)``, the support with the entering variable) and :math:`W_b`
    (``B x (k+1) x m``), the values of all ``k`` removals: row ``b``, column ``i`` is :func:`null_space_tops` of
    :math:`A_b` and :math:`W_b` without row and column ``i`` (the last variable, the entering one, is never removed).

    Removing variable ``i`` leaves the unit :math:`y` with :math:`W_b^\top y = 0` and :math:`y_i = 0`: with
    :math:`N` an orthonormal basis of the null space of :math:`W_b^\top` (``d`` columns) and :math:`y = Nc`, the top
    eigenvalue of :math:`N^\top A_b N` on the hyperplane :math:`c \perp N^\top e_i`, which the secular equation gives
    (:func:`~spcakit_deflation.secular.hyperplane_tops`) from one eigen-decomposition of :math:`N^\top A_b N`: one
    ``d x d`` problem per entering variable instead of ``k`` of order ``k``. :math:`N^\top e_i = 0` (the constraint
    already sets :math:`y_i = 0`) leaves the top eigenvalue as it is; no room left (``d = 1`` and
    :math:`N^\top e_i \ne 0`, or ``d = 0``) gives :math:`-\infty`. The directions of :math:`W_b` are kept as in
    :func:`null_space_tops` (singular values above :data:`CONSTRAINT_RTOL` times the largest). Batches of at most
    :data:`REMOVAL_DIRECT` entering variables times :math:`k^2` solve the ``k x k`` problems directly.
    """
    count, size = a.shape[0], a.shape[1]
    k = size - 1
    if count * k * k <= REMOVAL_DIRECT:  # small batches: the k x k problems themselves cost less
        removals = np.array([np.delete(np.arange(size), i) for i in range(k)]).reshape(k, k)
        sub_a = a[:, removals[:, :, None], removals[:, None, :]].reshape(-1, k, k)
        sub_w = w[:, removals, :].reshape(count * k, k, w.shape[2])
        return null_space_tops(sub_a, sub_w, scale)[0].reshape(count, k)
    out = np.full((count, k), -np.inf)
    floor = np.finfo(float).tiny * max(scale, 1.0)
    if w.shape[2]:
        null, keep, _, _ = _condition_directions(w, floor, full=True)  # the last size - rank columns: the null space
        dims = size - keep.sum(axis=1)
    else:
        null = np.broadcast_to(np.eye(size), (count, size, size))
        dims = np.full(count, size)
    for d in np.unique(dims):
        rows = np.flatnonzero(dims == d)
        if d == 0:
            continue
        n_basis = null[rows][:, :, size - d :]  # B' x (k+1) x d
        reduced = np.matmul(np.swapaxes(n_basis, 1, 2), np.matmul(a[rows], n_basis))
        values, vectors = np.linalg.eigh((reduced + np.swapaxes(reduced, 1, 2)) / 2)
        normals = n_basis[:, :k, :]  # row i of N: the coordinates of e_i, for the k removable variables
        lengths = np.sum(normals**2, axis=2)  # B' x k
        free = lengths <= NULL_RTOL  # e_i (nearly) outside the null space: y_i is 0 already, nothing is lost
        coordinates = np.matmul(normals, vectors) ** 2  # B' x k x d, in the eigenbasis
        if d == 1:
            scores = np.where(free, values[:, -1:], -np.inf)
        else:
            weights = coordinates / np.maximum(coordinates.sum(axis=2, keepdims=True), np.finfo(float).tiny)
            tops = hyperplane_tops(np.repeat(values, k, axis=0), weights.reshape(-1, d)).reshape(rows.size, k)
            scores = np.where(free, values[:, -1:], tops)
        out[rows] = scores
    return out


#: An entering variable whose conditions' row :math:`W_j` lies in the row space of :math:`W_S` to this (relative) is
#: bordered on the support's null-space problem (:class:`SupportOnNullSpace`); else it adds a condition of its own.
ROW_SPACE_RTOL = 1e-12

#: ... and only while the particular solution :math:`P_j` has :math:`1 + \|P_j\|^2` at most this: the arrow's corner
#: subtracts terms that large times :math:`\|C_S\|`, so it keeps about 12 digits here; beyond, the variable is scored
#: on its own bordered problem. (Uncorrelated scores on the colon data, 1.3 million entering variables scored: at most
#: 935.)
PARTICULAR_LIMIT = 1e4


@attrs.frozen
class SupportOnNullSpace:
    r"""A support's covariance on the null space of its conditions, in its eigenbasis: what every swap bringing in a
    variable :math:`j` needs, where :math:`W_j` lies in the row space of :math:`W_S` (always when :math:`W_S` has full
    column rank; a variable the conditions are silent on, :math:`W_j = 0`, always).

    With :math:`W_S = R\Sigma V_r^\top` (rank :math:`\rho`), :math:`N` an orthonormal basis of the null space of
    :math:`W_S^\top` (``d`` columns) and :math:`N^\top C_S N = V\operatorname{diag}(\mu)V^\top`, the loadings on
    :math:`S + j` that meet the conditions :math:`W_S^\top y_S + W_j^\top y_j = 0` are :math:`y_S = NVc - P_j y_j`
    with :math:`P_j = R\Sigma^{-1}V_r^\top W_j^\top` (``solve`` times :math:`W_j^\top`, in the range of :math:`W_S`,
    orthogonal to :math:`N`). In the coordinates :math:`(c, t)` along the unit
    :math:`q_j = (-P_j, 1)/\omega_j`, :math:`\omega_j^2 = 1 + \|P_j\|^2`, the problem is the arrow matrix of
    :math:`\mu`, the border :math:`Z^\top(C_{Sj} - C_S P_j)/\omega_j` (:math:`Z = NV`, ``basis``) and the corner
    :math:`q_j^\top C_{S+j} q_j`. Its top eigenvalue (:func:`~spcakit_deflation.secular.bordered_top`) is the value of
    :math:`S + j`, the bound of every swap bringing :math:`j` in; removing variable :math:`i` sets
    :math:`y_i = z_i^\top c - P_{ij}t/\omega_j = 0`, the hyperplane normal to :math:`(\omega_j z_i, -P_{ij})`
    (:func:`~spcakit_deflation.secular.removal_tops`): :math:`O(kd)` per swap, where :func:`removal_scores`
    decomposes a ``k + 1`` matrix per entering variable. Where that normal is zero (the conditions set :math:`y_i`
    to zero on :math:`S + j` already, to :data:`NULL_RTOL`) the removal leaves the value of :math:`S + j`.
    """

    values: np.ndarray  # mu, ascending (d)
    basis: np.ndarray  # Z = N V (k x d): row i, the coordinates of e_i
    block: np.ndarray  # C_S (k x k)
    solve: np.ndarray  # R Sigma^-1 V_r^T (k x m): P_j = solve @ W_j
    outside: np.ndarray  # V_perp (m x (m - rho)): W_j outside the row space of W_S has a component here

    @classmethod
    def of(cls, a: np.ndarray, w: np.ndarray, scale: float) -> SupportOnNullSpace:
        """From :math:`C_S` (``k x k``) and :math:`W_S` (``k x m``); ``scale`` as :func:`null_space_tops`'."""
        k, m = w.shape
        left, sing, right, rank = np.eye(k), np.zeros(0), np.zeros((0, 0)), 0
        if m:  # the conditions kept as null_space_tops keeps them
            lefts, keep, sings, rights = _condition_directions(w[None], np.finfo(float).tiny * max(scale, 1.0), full=True)
            left, sing, right, rank = lefts[0], sings[0], rights[0], int(keep.sum())
        null = left[:, rank:]
        reduced = null.T @ a @ null
        values, vectors = np.linalg.eigh((reduced + reduced.T) / 2)
        solve = (left[:, :rank] / sing[:rank]) @ right[:rank]
        return cls(values=values, basis=null @ vectors, block=a, solve=solve, outside=right[rank:].T)

    def bordered(self, w_rows: np.ndarray) -> np.ndarray:
        r"""Which entering variables (their rows of :math:`W`, ``n x m``) this bordering serves: :math:`W_j` in the row
        space of :math:`W_S` (:data:`ROW_SPACE_RTOL`) and :math:`1 + \|P_j\|^2` at most :data:`PARTICULAR_LIMIT`."""
        norms = np.linalg.norm(w_rows, axis=1)
        inside = np.linalg.norm(w_rows @ self.outside, axis=1) <= ROW_SPACE_RTOL * norms
        return inside & (1.0 + np.sum((w_rows @ self.solve.T) ** 2, axis=1) <= PARTICULAR_LIMIT)

    def _arrows(self, cross: np.ndarray, corner: np.ndarray, w_rows: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        r"""Border (``d x n``), corner, :math:`\omega` and :math:`-P` (``k x n``) of the entering variables' arrows."""
        particular = w_rows @ self.solve.T  # n x k: P_j
        omega2 = 1.0 + np.sum(particular**2, axis=1)
        omega = np.sqrt(omega2)
        cp = particular @ self.block  # (C_S P_j)^T
        border = self.basis.T @ (cross - cp).T / omega
        corners = (np.sum(particular * cp, axis=1) - 2 * np.sum(particular * cross, axis=1) + corner) / omega2
        return border, corners, omega, -particular.T

    def bounds(self, cross: np.ndarray, corner: np.ndarray, w_rows: np.ndarray) -> np.ndarray:
        """The values of :math:`S + j`, for ``cross`` :math:`C_{jS}` (``n x k``), ``corner`` :math:`C_{jj}` and
        ``w_rows`` :math:`W_j` (``n x m``) of :meth:`bordered` variables."""
        border, corners, _, _ = self._arrows(cross, corner, w_rows)
        return bordered_top(self.values, border, corners)

    def removals(self, cross: np.ndarray, corner: np.ndarray, w_rows: np.ndarray, floor: float) -> np.ndarray | None:
        """The values of every swap (rows: entering variables, columns: positions) where above ``floor`` (``floor``
        elsewhere), or ``None`` where the secular route does not apply (fewer than two dimensions, or a top value
        not above ``floor`` or not simple: :func:`~spcakit_deflation.secular.removal_tops`)."""
        border, corners, omega, normal_last = self._arrows(cross, corner, w_rows)
        out = removal_tops(self.values, self.basis, border, corners, omega, normal_last, floor)
        if out is None:
            return None
        lengths = omega[:, None] ** 2 * np.sum(self.basis**2, axis=1)[None, :] + normal_last.T**2
        zeroed = lengths <= NULL_RTOL * omega[:, None] ** 2
        if np.any(zeroed):
            tops = np.maximum(bordered_top(self.values, border, corners), floor)
            out[zeroed] = np.broadcast_to(tops[:, None], out.shape)[zeroed]
        return out
