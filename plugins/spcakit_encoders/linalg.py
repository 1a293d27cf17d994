r"""Linear algebra shared by the encoder parts: the data matrix :math:`X`, its top
right singular vectors, and linearly independent column subsets.

Magdon-Ismail & Boutsidis work with a data matrix :math:`X \in \mathbb{R}^{n\times d}`.
A :class:`~spcakit.inputs.problem.Problem` holds the centred data when it was built from
data; when only a covariance :math:`C` was given, :math:`X` is its symmetric
square root :math:`C^{1/2}` (:math:`X^\top X = C`). Every quantity the paper uses
(the encoder, the loss, :math:`X_{C,k}`) depends on :math:`X` only through
:math:`X^\top X`, so any square root gives the same results.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from spcakit.plugin_api import (
    DENSE_EIGEN_LIMIT,
    Carry,
    GramCovariance,
    InvalidParameterError,
    Problem,
    densify,
    square_root,
)
from spcakit_encoders.carry import stored_square_root

#: Above this smaller dimension of X, V_k comes from Lanczos (svds) instead of a dense eigensolver.
DENSE_SPECTRUM_LIMIT = 200
#: A column whose part outside the span of the columns already chosen is below this
#: fraction of its norm counts as linearly dependent on them.
INDEPENDENCE_TOL = 1e-8


def data_matrix(problem: Problem, part: str = "encoder", carry: Carry | None = None) -> np.ndarray:
    r"""The data matrix :math:`X` of ``problem``: its data, or :math:`C^{1/2}` for a covariance.

    The square root the run's ``carry`` holds for this covariance
    (:data:`~spcakit_encoders.carry.SQUARE_ROOT`, computed once by the column
    selectors' ``prepare``) is used as it is. Otherwise an explicit covariance
    (or a matrix-free one with ``p`` at most
    :data:`~spcakit.numerics.operators.DENSE_EIGEN_LIMIT`) gives its symmetric square
    root. A large matrix-free operator without data (a deflation other than
    ``residual`` dropped the data) is refused: its square root would be a
    dense :math:`p\times p` matrix.
    """
    if problem.data is not None:
        return problem.data
    stored = None if carry is None else stored_square_root(carry, problem)
    if stored is not None:
        return stored
    op = problem.covariance
    matrix = op.explicit()
    if matrix is not None:
        return square_root(matrix)
    if op.p <= DENSE_EIGEN_LIMIT:
        return square_root(densify(op))
    raise InvalidParameterError(
        f"{part} needs the data matrix X (or an explicit covariance, whose square root is used); this problem "
        f"has only a matrix-free covariance operator with p = {op.p} (a deflator other than `residual` dropped the "
        "data). Use the residual deflator, which keeps the data."
    )


def top_right_singular(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    r"""The ``k`` largest squared singular values :math:`\sigma_i^2` of ``x`` and the right singular vectors :math:`V_k`.

    Through the smaller Gram matrix (:math:`XX^\top` when :math:`n < d`) when
    it has at most :data:`DENSE_SPECTRUM_LIMIT` rows, by Lanczos on :math:`X`
    (``svds``) otherwise; no :math:`d\times d` matrix is formed for wide data. Directions with a zero
    singular value (rank below ``k``) are dropped: the result may have fewer
    than ``k`` columns.
    """
    n, d = x.shape
    if min(n, d) <= DENSE_SPECTRUM_LIMIT or k >= min(n, d) - 1:
        values, vectors = GramCovariance(x, 1.0).top_eigenpairs(k)
    else:  # Lanczos on X itself, from a fixed start (reproducible to the last digit)
        from scipy.sparse.linalg import svds  # noqa: PLC0415 - scipy.sparse takes 0.1 s to import

        start = np.random.default_rng(0).standard_normal(min(n, d))
        _, sing, vt = svds(x, k=k, v0=start)
        order = np.argsort(sing)[::-1]
        values, vectors = sing[order] ** 2, vt[order].T
    values = np.clip(values, 0.0, None)
    top = float(values[0]) if values.size else 0.0
    keep = values > max(top, 0.0) * max(x.shape) * np.finfo(float).eps * 10
    return values[keep], vectors[:, keep]


def leverage_scores(v: np.ndarray) -> np.ndarray:
    r"""Leverage scores :math:`\ell_j = \|V_k^{(j)}\|_2^2` (squared row norms of :math:`V_k`); they sum to ``k``."""
    return np.einsum("ij,ij->i", v, v)


def independent_columns(x: np.ndarray, candidates: Iterable[int], r: int, part: str) -> list[int]:
    r"""The first ``r`` of ``candidates`` whose columns of ``x`` are linearly independent.

    A candidate is skipped when its part outside the span of the columns
    already taken is at most :data:`INDEPENDENCE_TOL` of its norm (a duplicate
    variable, or a variable the residual no longer holds). Gram-Schmidt twice
    on ``n``-vectors: :math:`O(nr)` per candidate. Skipping a dependent column
    leaves :math:`\operatorname{span}(C)`, hence :math:`X_{C,k}`, unchanged.

    Raises
    ------
    InvalidParameterError
        When fewer than ``r`` independent columns exist (``r`` above the rank).
    """
    n = x.shape[0]
    norms = np.sqrt(np.einsum("ij,ij->j", x, x))
    floor = INDEPENDENCE_TOL * float(norms.max(initial=0.0))
    basis = np.zeros((n, 0))
    chosen: list[int] = []
    seen: set[int] = set()
    for j in candidates:
        j = int(j)
        if j in seen:
            continue
        seen.add(j)
        if norms[j] <= floor:
            continue
        f = x[:, j]
        rest = f - basis @ (basis.T @ f)
        rest = rest - basis @ (basis.T @ rest)
        size = float(np.linalg.norm(rest))
        if size <= INDEPENDENCE_TOL * norms[j]:
            continue
        basis = np.column_stack([basis, rest / size])
        chosen.append(j)
        if len(chosen) == r:
            return chosen
    raise InvalidParameterError(
        f"{part}: only {len(chosen)} of the {x.shape[1]} columns are linearly independent (the rank of the data, or of "
        f"the residual, is {len(chosen)}), so sparsity {r} cannot be met; valid: sparsity <= {len(chosen)}"
    )
