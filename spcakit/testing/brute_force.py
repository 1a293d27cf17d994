r"""The sparse eigenvalue by enumeration: the reference every bound and every exact search is checked against.

For a symmetric :math:`A` (``p x p``), a cardinality ``k`` and optionally the constraint
:math:`B = I - QQ^\top` of a generalized deflation (``Q`` orthonormal, ``p x t``),

.. math::

    \lambda^{(k)}(A, B) = \max_{|S| = k} \lambda_{\max}(A_{SS}, B_{SS}),

which with :math:`B = I` is :math:`\max_{\|x\|_2 = 1,\ \|x\|_0 \le k} x^\top A x`: a unit loading with
fewer than ``k`` nonzeros lies on some support of exactly ``k`` variables, so supports of size ``k``
cover those of size at most ``k`` (equivalently, by Cauchy interlacing :math:`\lambda_{\max}(A_{TT}) \le
\lambda_{\max}(A_{SS})` for :math:`T \subseteq S`, for any symmetric :math:`A`). The pencil's value is
:func:`spcakit.numerics.linalg.generalized_top`'s: the top of :math:`W^\top A_{SS} W` for the whitening :math:`W` of
:math:`B_{SS}` on its range, as the exact search defines it.

Every support is evaluated: ``C(p, k)`` principal submatrices, stacked and handed to one batched
:func:`numpy.linalg.eigvalsh` (``C(16, 8) = 12 870`` matrices of ``8 x 8`` take a few milliseconds), so the
reference is cheap up to ``p = 16`` and exponential beyond: :data:`MAX_SUPPORTS` refuses more.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from spcakit.numerics.linalg import RANGE_TOL, generalized_top

__all__ = ["MAX_SUPPORTS", "PAIR_ANGLES", "best_nonredundant_pair", "bound_allowance", "brute_force_optimum", "left_by",
           "reference_rounding", "support_values"]

#: The most supports one call evaluates (``C(20, 10)`` is 184 756): a guard against an accidental
#: exponential run, not a limit of the method.
MAX_SUPPORTS = 200_000


def support_values(a: np.ndarray, supports: np.ndarray, constraint: np.ndarray | None = None) -> np.ndarray:
    r""":math:`\lambda_{\max}(A_{SS}, B_{SS})` for each row ``S`` of ``supports`` (``m x k`` variable indices).

    Parameters
    ----------
    a
        The symmetric ``p x p`` matrix (symmetrised as :math:`(A + A^\top)/2`).
    supports
        Integer array ``m x k``: one support per row.
    constraint
        ``Q`` (``p x t``, orthonormal) for :math:`B = I - QQ^\top`, or ``None`` for :math:`B = I`.

    Returns
    -------
    numpy.ndarray
        ``m`` values, in one batch; where :math:`B_{SS}` is singular (an eigenvalue at most
        :data:`spcakit.numerics.linalg.RANGE_TOL`) and the value is not positive, one at a time by
        :func:`~spcakit.numerics.linalg.generalized_top`.
    """
    a = np.asarray(a, dtype=float)
    a = (a + a.T) / 2
    s = np.asarray(supports, dtype=np.intp)
    blocks = a[s[:, :, None], s[:, None, :]]  # m x k x k
    if constraint is None or constraint.shape[1] == 0:
        return np.linalg.eigvalsh(blocks)[:, -1]
    qs = np.asarray(constraint, dtype=float)[s]  # m x k x t
    b = np.eye(s.shape[1]) - qs @ qs.transpose(0, 2, 1)
    values, vectors = np.linalg.eigh((b + b.transpose(0, 2, 1)) / 2)
    # W = V_+ Lambda_+^{-1/2}, the null space's columns zero: W^T A W = diag(M_+, 0), whose top is M_+'s when
    # that is positive; supports where it is not (0 or below, B_SS singular) are redone one at a time
    keep = values > RANGE_TOL
    w = vectors * np.where(keep, 1.0 / np.sqrt(np.where(keep, values, 1.0)), 0.0)[:, None, :]
    m = w.transpose(0, 2, 1) @ blocks @ w
    out = np.linalg.eigvalsh((m + m.transpose(0, 2, 1)) / 2)[:, -1]
    for i in np.flatnonzero(~np.all(keep, axis=1) & (out <= 0.0)):
        out[i] = generalized_top(blocks[i], b[i])[0]
    return out


def brute_force_optimum(
    a: np.ndarray, k: int, *, constraint: np.ndarray | None = None, chunk: int = 20_000
) -> tuple[float, tuple[int, ...]]:
    r"""The sparse eigenvalue :math:`\lambda^{(k)}(A, B)` and a support that attains it, by enumeration.

    Parameters
    ----------
    a
        The symmetric ``p x p`` matrix.
    k
        The cardinality, ``1 <= k <= p``.
    constraint
        ``Q`` of :math:`B = I - QQ^\top` (``None``: :math:`B = I`, the plain sparse eigenvalue).
    chunk
        Supports evaluated per batch (bounds the memory: ``chunk * k * k`` floats).

    Returns
    -------
    value, support
        The largest value over all ``C(p, k)`` supports and the first support (in lexicographic order)
        that attains it.

    Examples
    --------
    >>> import numpy as np
    >>> value, support = brute_force_optimum(np.diag([1.0, 3.0, 2.0]), 2)
    >>> round(value, 12), support
    (3.0, (0, 1))
    """
    a = np.asarray(a, dtype=float)
    p = a.shape[0]
    if a.ndim != 2 or a.shape[1] != p:
        raise ValueError(f"brute_force_optimum needs a square matrix; got shape {a.shape}")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= p:
        raise ValueError(f"k must be an integer in [1, p] = [1, {p}]; got {k!r}")
    if math.comb(p, int(k)) > MAX_SUPPORTS:
        raise ValueError(f"C({p}, {k}) = {math.comb(p, int(k))} supports is more than MAX_SUPPORTS = {MAX_SUPPORTS}")
    best, best_support = -np.inf, ()
    combinations = itertools.combinations(range(p), int(k))
    while batch := list(itertools.islice(combinations, chunk)):
        supports = np.array(batch, dtype=np.intp)
        values = support_values(a, supports, constraint)
        i = int(np.argmax(values))
        if values[i] > best:
            best, best_support = float(values[i]), tuple(int(j) for j in supports[i])
    return best, best_support


def reference_rounding(c: np.ndarray) -> float:
    r"""How far the brute-force optimum itself may sit above the true one by rounding: ``eigvalsh`` is backward
    stable, so the computed top eigenvalue of a ``k x k`` submatrix is within a small multiple of
    :math:`k\,\epsilon\,\|C_{SS}\|` of the true one; :math:`p\,\epsilon\,\lambda_{\max}(C)` covers every
    :math:`k \le p` (and every :math:`C_t` below, whose :math:`\lambda_{\max}` is at most :math:`C`'s). Far tighter
    than a real error, and below what :func:`spcakit.analysis.bounds.raised_for_rounding` adds to every bound."""
    return c.shape[0] * np.finfo(float).eps * max(float(np.linalg.eigvalsh(c)[-1]), 0.0)


def bound_allowance(c: np.ndarray) -> float:
    """What a bound checked against :func:`best_nonredundant_pair` may sit below it by rounding alone: the reference's
    own rounding (:func:`reference_rounding`) and :math:`10^{-12}` of the largest entry."""
    return reference_rounding(c) + 1e-12 * max(float(np.abs(c).max()), 1e-300)


def left_by(c: np.ndarray, previous: np.ndarray) -> np.ndarray:
    r""":math:`C_t = (I - P)C(I - P)`, :math:`P` the projection onto the span of ``previous`` (``p x (t-1)``): the
    covariance the previous loadings leave, which :func:`spcakit.analysis.bounds.component_bounds` bounds."""
    if previous.shape[1] == 0:
        return c
    u, sing, _ = np.linalg.svd(previous, full_matrices=False)
    q = u[:, sing > sing[0] * 1e-10]
    residual = np.eye(c.shape[0]) - q @ q.T
    return residual @ c @ residual


#: :func:`best_nonredundant_pair` tries this many angles for the first loading on each support of two variables.
PAIR_ANGLES = 720


def best_nonredundant_pair(c: np.ndarray, k1: int, k2: int, constraint: str) -> float:
    r"""A lower bound, within :math:`O(\lambda_{\max}/\text{PAIR\_ANGLES}^2)` of the truth, on
    :math:`\max u_1^\top C u_1 + u_2^\top C u_2` over unit :math:`u_1, u_2` with at most ``k1`` and ``k2`` nonzeros,
    ``"orthogonal"`` (:math:`u_1^\top u_2 = 0`) or ``"uncorrelated"`` (:math:`u_1^\top C u_2 = 0`): the reference the
    bounds under a constraint (:func:`spcakit.analysis.certificate.cumulative_bounds`) are checked against.

    Every support :math:`S_1` of ``k1`` variables and every unit :math:`u_1` on it is tried (``k1 = 1``: the
    coordinate vector; ``k1 = 2``: :data:`PAIR_ANGLES` angles), and for each the best :math:`u_2` on every support
    :math:`S_2` of ``k2`` variables given :math:`u_1`: the top eigenvalue of :math:`C_{S_2S_2}` on the null space of
    :math:`w_{S_2}^\top` (:math:`w = u_1` or :math:`Cu_1`), exact. Only the angle of :math:`u_1` is sampled, so the
    value is at most the optimum and, the objective being smooth in it, within the grid's square of it.
    """
    p = c.shape[0]
    if k1 not in (1, 2):
        raise ValueError("best_nonredundant_pair samples u_1 on supports of one or two variables (k1 = 1 or 2)")
    firsts: list[np.ndarray] = []
    for support in itertools.combinations(range(p), k1):
        if k1 == 1:
            u = np.zeros((1, p))
            u[0, support[0]] = 1.0
        else:
            angles = np.linspace(0.0, np.pi, PAIR_ANGLES, endpoint=False)
            u = np.zeros((PAIR_ANGLES, p))
            u[:, support[0]], u[:, support[1]] = np.cos(angles), np.sin(angles)
        firsts.append(u)
    u1 = np.vstack(firsts)  # m x p
    first_values = np.einsum("mi,ij,mj->m", u1, c, u1)
    w = u1 if constraint == "orthogonal" else u1 @ c  # m x p: the condition on u_2
    best = -np.inf
    for support in itertools.combinations(range(p), k2):
        s = list(support)
        c_ss = c[np.ix_(s, s)]
        w_s = w[:, s]  # m x k2
        norms = np.linalg.norm(w_s, axis=1, keepdims=True)
        unit = np.divide(w_s, norms, out=np.zeros_like(w_s), where=norms > 1e-12)
        projector = np.eye(k2)[None] - unit[:, :, None] * unit[:, None, :]
        if k2 == 1:
            feasible = norms[:, 0] <= 1e-12
            second = np.where(feasible, c_ss[0, 0], -np.inf)
        else:
            second = np.linalg.eigvalsh(projector @ c_ss @ projector - (np.eye(k2)[None] - projector) * (np.abs(c_ss).sum() + 1))[:, -1]
        best = max(best, float(np.max(first_values + second)))
    return best
