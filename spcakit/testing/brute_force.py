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

__all__ = ["MAX_SUPPORTS", "brute_force_optimum", "left_by", "reference_rounding", "support_values"]

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


def left_by(c: np.ndarray, previous: np.ndarray) -> np.ndarray:
    r""":math:`C_t = (I - P)C(I - P)`, :math:`P` the projection onto the span of ``previous`` (``p x (t-1)``): the
    covariance the previous loadings leave, which :func:`spcakit.analysis.bounds.component_bounds` bounds."""
    if previous.shape[1] == 0:
        return c
    u, sing, _ = np.linalg.svd(previous, full_matrices=False)
    q = u[:, sing > sing[0] * 1e-10]
    residual = np.eye(c.shape[0]) - q @ q.T
    return residual @ c @ residual
