r"""Feature-sparse PCA as pure functions: Tian, Wang, Nie & Li, *Learning Feature
Sparse Principal Subspace* (NeurIPS 2020).

The problem (3.1) is the :math:`\ell_{2,0}`-constrained principal subspace

.. math::

    \max_{W \in \mathbb{R}^{d\times m}} \operatorname{tr}(W^\top A W)
    \quad\text{s.t.}\quad W^\top W = I_m,\quad \|W\|_{2,0} \le k ,

with :math:`m \le k \le d` and :math:`A \succeq 0`: every column of :math:`W`
uses the same :math:`k` variables (rows). For a fixed support :math:`I`
(:math:`|I| = k`) the best :math:`W` is :math:`S_I V` with :math:`V` the
:math:`m` leading eigenvectors of :math:`A_{II}`, worth the sum of their
eigenvalues; the problem is the choice of :math:`I` (NP-hard in general).

* :func:`go` - Algorithm 1 on the best rank-:math:`m` approximation
  :math:`A_m = U_m\Lambda_m U_m^\top`: :math:`I` = the :math:`k` largest
  entries of :math:`\operatorname{diag}(A_m) = (U_m \circ U_m)\lambda`, then the
  eigen-refinement on :math:`A_{II}` (eq. 4.2). Globally optimal when
  :math:`\operatorname{rank}(A) \le m` (Thm. 4.2), within the factor of
  Thm. 5.1 otherwise. Cost :math:`O(dm + k^3)` after the :math:`m` leading
  eigenpairs.
* :func:`ipu_step` - one iteration of Algorithm 2: the support is Go on the
  proxy :math:`P_t = A W_t (W_t^\top A W_t)^\dagger W_t^\top A`
  (:math:`\operatorname{rank} P_t \le m`, so Go is exact on it), formed only
  through its diagonal (footnote 3):
  :math:`\operatorname{diag}(P_t)_i = [AW]_i (W^\top A W)^\dagger [AW]_i^\top`,
  :math:`O(dkm)` for a :math:`k`-row-sparse :math:`W_t`; then the refinement
  on :math:`A_{II}`, :math:`O(k^3)`. The objective never decreases
  (Thm. 5.5, an MM scheme through von Neumann's trace inequality).
* :func:`exhaustive_search` - every support of size :math:`k` (the reference
  for Table 2; small :math:`d` only).

:math:`A_\varepsilon = A + \varepsilon I` (Remark 5.10) has the same
eigenvectors and the same maximisers (the objective moves by
:math:`\varepsilon m`); it keeps :math:`W_t^\top A W_t` invertible
(Claim 5.9). Objectives returned here are always on :math:`A` itself.

The covariance is reached only through the operator (its columns
:math:`A_{:,I}`, principal submatrix :math:`A_{II}`, leading eigenpairs):
nothing :math:`d\times d` is formed from data with :math:`n < d`.
"""

from __future__ import annotations

import itertools
import math

import attrs
import numpy as np

from spcakit.plugin_api import (
    CovarianceOperator,
    InvalidParameterError,
    densify,
    leading_subset,
    ties,
    top_eigenpairs,
)

PAPER = "Tian, Wang, Nie, Li - Learning Feature Sparse Principal Subspace (NeurIPS 2020)"

#: Largest number of supports :func:`exhaustive_search` enumerates (C(20, 7) = 77,520 for Table 2).
EXHAUSTIVE_SUPPORT_LIMIT = 2_000_000
#: Largest d for which :func:`exhaustive_search` forms the covariance.
EXHAUSTIVE_D_LIMIT = 500
#: Supports scored per batch by the exhaustive search (bounded memory: batch * k^2 floats).
_BATCH = 16_384



def _eq_arrays(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.array_equal(a, b))


@attrs.frozen(kw_only=True)
class SubspaceEstimate:
    """A feasible point of problem (3.1) and how it was chosen.

    Attributes
    ----------
    loadings
        :math:`W = S_I V` (``d x m``), orthonormal columns, nonzero only on ``support``.
    support
        The selected rows :math:`I`, ascending (``k`` of them).
    objective
        :math:`\\operatorname{tr}(W^\\top A W)` on :math:`A` (without :math:`\\varepsilon`).
    scores
        The row scores the support was selected by (``diag(A_m)`` for Go,
        ``diag(P_t)`` for IPU, with :math:`\\varepsilon`), or ``None``.
    """

    loadings: np.ndarray = attrs.field(eq=attrs.cmp_using(eq=_eq_arrays))
    support: np.ndarray = attrs.field(eq=attrs.cmp_using(eq=_eq_arrays))
    objective: float
    scores: np.ndarray | None = attrs.field(default=None, eq=False)


# -- selection ---------------------------------------------------------------------
def top_k_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest ``scores``, ascending; ties go to the smaller index.

    Algorithm 1, line 2: "prefer smaller indices if tied", by the tie rule of
    :mod:`spcakit.numerics.ties`: scores within :data:`spcakit.numerics.ties.RTOL` of the
    largest magnitude are tied, so values equal in exact arithmetic but
    different by rounding (``diag(A_m)`` of a matrix with equal variances)
    still go to the smaller index, whatever the scale of :math:`A`.
    :math:`O(d)` (one ``numpy.partition``) unless there is a tie at the
    boundary.
    """
    scores = np.asarray(scores, dtype=float)
    d = scores.shape[0]
    if not 0 <= k <= d:
        raise ValueError(f"k must be in [0, {d}]; got {k}")
    return np.sort(ties.top_k(scores, k))


def row_scores(z: np.ndarray) -> np.ndarray:
    r"""Squared row norms :math:`\|z_i\|_2^2` of a ``d x m`` matrix (or squares of a vector)."""
    matrix = z.reshape(z.shape[0], -1)
    return np.einsum("ij,ij->i", matrix, matrix)


def truncate_rows(z: np.ndarray, k: int) -> np.ndarray:
    r"""The :math:`\ell_{2,0}` truncation: keep the ``k`` rows of largest :math:`\ell_2` norm, zero the rest.

    This is the Euclidean projection of :math:`Z` onto
    :math:`\{X : \|X\|_{2,0} \le k\}` (it keeps the most energy
    :math:`\|X\|_F^2`); every column keeps the same support. Ties go to the
    smaller row index.
    """
    matrix = z.reshape(z.shape[0], -1)
    keep = top_k_indices(row_scores(matrix), k)
    out = np.zeros_like(matrix, dtype=float)
    out[keep] = matrix[keep]
    return out.reshape(z.shape)


def nonzero_rows(w: np.ndarray) -> np.ndarray:
    """Indices of the rows of ``w`` with a nonzero entry (the row support), ascending."""
    return np.flatnonzero(np.any(w.reshape(w.shape[0], -1) != 0, axis=1))


# -- access to the covariance --------------------------------------------------------
def covariance_columns(op: CovarianceOperator, index: np.ndarray) -> np.ndarray:
    r"""The columns :math:`A_{:,I}` (``d x |I|``): a slice of an explicit covariance, :math:`X^\top X_{:,I}/s`
    (:math:`O(nd|I|)`) for data, :math:`|I|` products with any other operator (the operator decides)."""
    return op.columns(np.asarray(index, dtype=int))


def principal_submatrix(op: CovarianceOperator, index: np.ndarray) -> np.ndarray:
    r"""The principal submatrix :math:`A_{II}` (symmetrised), :math:`O(k^2)` explicit, :math:`O(nk^2)` from data."""
    return op.submatrix(np.asarray(index, dtype=int))


def covariance_times(op: CovarianceOperator, w: np.ndarray) -> np.ndarray:
    r""":math:`AW`, using only the nonzero rows of :math:`W`: :math:`A_{:,I}W_I` in :math:`O(dkm)` (footnote 3)."""
    rows = nonzero_rows(w)
    if rows.size == op.p:
        return op.matmat(w)
    return op.matmat_rows(w, rows)


def leading_eigenvectors(matrix: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``m`` largest eigenvalues (descending) and eigenvectors of a small symmetric matrix.

    Signs are fixed (each vector's largest-magnitude entry positive; of
    entries tied in magnitude by :mod:`spcakit.numerics.ties`, the first), so the
    same matrix always gives the same vectors - Algorithm 2 stops when
    :math:`W_t = W_{t-1}`.
    """
    k = matrix.shape[0]
    if m >= k or k <= 32:
        values, vectors = np.linalg.eigh(matrix)
        values, vectors = values[::-1][:m], vectors[:, ::-1][:, :m]
    else:
        values, vectors = leading_subset(matrix, m)
        values, vectors = values[::-1], vectors[:, ::-1]
    pivots = ties.argmax_columns(np.abs(vectors))
    signs = np.sign(vectors[pivots, np.arange(vectors.shape[1])])
    signs[signs == 0] = 1.0
    return values, vectors * signs


def refine(op: CovarianceOperator, support: np.ndarray, m: int) -> tuple[np.ndarray, float]:
    r"""Eigen-refinement (4.2): :math:`W = S_I V`, :math:`V` the ``m`` leading eigenvectors of :math:`A_{II}`.

    Returns :math:`W` (``d x m``, orthonormal) and
    :math:`\operatorname{tr}(W^\top A W)`, the sum of those eigenvalues.
    """
    values, vectors = leading_eigenvectors(principal_submatrix(op, support), m)
    w = np.zeros((op.p, m))
    w[support] = vectors
    return w, float(np.sum(values))


# -- Algorithm 1 -------------------------------------------------------------------
def low_rank_diagonal(op: CovarianceOperator, m: int, epsilon: float = 0.0) -> np.ndarray:
    r""":math:`\operatorname{diag}((A+\varepsilon I)_m) = (U_m\circ U_m)(\lambda + \varepsilon)`, from the ``m`` leading eigenpairs."""
    values, vectors = top_eigenpairs(op, m)
    return (vectors * vectors) @ (np.asarray(values, dtype=float) + epsilon)


def go(op: CovarianceOperator, m: int, k: int, epsilon: float = 0.0) -> SubspaceEstimate:
    r"""Go (Algorithm 1) on :math:`(A + \varepsilon I)_m`, with the eigen-refinement on :math:`A`.

    .. math::

        I = \operatorname{top}_k \operatorname{diag}\big((A+\varepsilon I)_m\big),
        \qquad W = S_I\, \operatorname{eig}_m(A_{II}).

    With :math:`\operatorname{rank}(A) \le m` and :math:`\varepsilon = 0`,
    :math:`A_m = A` and :math:`W` is globally optimal (Thm. 4.2). For a spiked
    :math:`B = A + \sigma I` with :math:`\operatorname{rank} A \le m`, run it
    with :math:`\varepsilon = -\sigma`: Go on :math:`B - \sigma I` is globally
    optimal for :math:`B` (Remark 4.4). In general it is within the factor
    :math:`1 - \epsilon` of Thm. 5.1
    (:func:`spcakit_fspca.metrics.fspca_approximation_bound`). The refinement never
    lowers the objective of Alg. 1's :math:`S_I\operatorname{eig}_m((A_m)_{II})`.
    """
    scores = low_rank_diagonal(op, m, epsilon)
    support = top_k_indices(scores, k)
    w, value = refine(op, support, m)
    return SubspaceEstimate(loadings=w, support=support, objective=value, scores=scores)


# -- Algorithm 2 -------------------------------------------------------------------
def proxy_diagonal(aw: np.ndarray, gram: np.ndarray) -> np.ndarray:
    r""":math:`\operatorname{diag}(AW (W^\top A W)^\dagger W^\top A)` without forming the ``d x d`` proxy.

    With :math:`G^\dagger = Q_+ \Lambda_+^{-1} Q_+^\top` (eigenvalues above
    :math:`10^{-12}\lambda_{\max}\,m`), :math:`B = AW Q_+\Lambda_+^{-1/2}` and
    :math:`\operatorname{diag}(P) = ` the squared row norms of :math:`B`:
    :math:`O(dm^2)` (footnote 3). :math:`P = BB^\top \succeq 0` has rank
    :math:`\le m` (Claim 4.5).
    """
    gram = (gram + gram.T) / 2
    values, vectors = np.linalg.eigh(gram)
    top = max(float(values[-1]), 0.0)
    keep = values > top * gram.shape[0] * 1e-12
    if not np.any(keep):
        return np.zeros(aw.shape[0])
    b = aw @ (vectors[:, keep] / np.sqrt(values[keep]))
    return np.einsum("ij,ij->i", b, b)


def ipu_step(op: CovarianceOperator, w: np.ndarray, k: int, epsilon: float = 0.1) -> SubspaceEstimate:
    r"""One iteration of IPU (Algorithm 2, lines 4-7) on :math:`A_\varepsilon = A + \varepsilon I`.

    .. math::

        P_t = A_\varepsilon W_t (W_t^\top A_\varepsilon W_t)^\dagger W_t^\top A_\varepsilon,\quad
        I = \operatorname{top}_k \operatorname{diag}(P_t),\quad
        W_{t+1} = S_I\,\operatorname{eig}_m(A_{II}).

    :math:`P_t` depends only on :math:`\operatorname{span}(W_t)`, so ``w``
    need not be orthonormal (any full-column-rank start works). For a
    ``k``-row-sparse :math:`W_t` the cost is :math:`O(dkm + k^3)`: the
    product :math:`A_{:,I_t}W_{I_t}`, the ``m x m`` Gram matrix on the
    support, the proxy diagonal (:func:`proxy_diagonal`), the selection
    (:func:`top_k_indices`) and a ``k x k`` eigenproblem. A dense start (the
    first step from a random or PCA subspace) costs one full product
    :math:`AW`.

    From the ``m`` leading eigenvectors :math:`U_m` of :math:`A`,
    :math:`P_0 = (A_\varepsilon)_m` and this step *is* Go on
    :math:`(A_\varepsilon)_m` with the refinement.
    """
    rows = nonzero_rows(w)
    aw = covariance_times(op, w)
    if epsilon:
        aw = aw + epsilon * w
    gram = w[rows].T @ aw[rows]
    scores = proxy_diagonal(aw, gram)
    support = top_k_indices(scores, k)
    new, value = refine(op, support, w.shape[1])
    return SubspaceEstimate(loadings=new, support=support, objective=value, scores=scores)


def ipu(
    op: CovarianceOperator,
    w0: np.ndarray,
    k: int,
    epsilon: float = 0.1,
    max_iter: int = 100,
) -> tuple[SubspaceEstimate, tuple[float, ...]]:
    """Algorithm 2 from ``w0`` until :math:`W_t = W_{t-1}` (same support) or ``max_iter`` steps.

    Returns the last estimate and the objective after every step. The
    method ``fspca-ipu`` runs the same steps through the block driver; this
    loop is for experiments and benchmarks.
    """
    w = np.asarray(w0, dtype=float)
    history: list[float] = []
    estimate = None
    for _ in range(max_iter):
        estimate = ipu_step(op, w, k, epsilon)
        history.append(estimate.objective)
        if np.array_equal(estimate.loadings, w):
            break
        w = estimate.loadings
    assert estimate is not None
    return estimate, tuple(history)


# -- exhaustive reference -----------------------------------------------------------
def exhaustive_search(op: CovarianceOperator, m: int, k: int) -> SubspaceEstimate:
    r"""The global optimum of (3.1): every support of size ``k``, scored by the sum of the ``m`` largest eigenvalues of :math:`A_{II}`.

    The value is monotone in the support, so size exactly ``k`` suffices.
    Supports are enumerated in lexicographic order and scored in batches
    (``numpy.linalg.eigvalsh`` on stacks of ``k x k`` matrices); of values
    tied with the best (:mod:`spcakit.numerics.ties`: within :data:`~spcakit.numerics.ties.RTOL`,
    relative), the one with the largest sum of :math:`|u_1|` over its rows is kept
    (:func:`spcakit.numerics.ties.leading_magnitudes`: the choice does not depend on the order of the
    variables), and, still tied, the first.
    Refuses more than :data:`EXHAUSTIVE_SUPPORT_LIMIT` supports or
    :math:`d >` :data:`EXHAUSTIVE_D_LIMIT`.
    """
    d = op.p
    count = math.comb(d, k)
    if d > EXHAUSTIVE_D_LIMIT or count > EXHAUSTIVE_SUPPORT_LIMIT:
        raise InvalidParameterError(
            f"fspca-exhaustive enumerates all C(d, k) = C({d}, {k}) = {count:,} row supports; the limits are "
            f"{EXHAUSTIVE_SUPPORT_LIMIT:,} supports and d <= {EXHAUSTIVE_D_LIMIT}. Use fspca-ipu (monotone, local) "
            "or fspca-go (certified by Thm. 5.1), or a smaller d or k (or k close to d)"
        )
    a = densify(op)
    a = (a + a.T) / 2
    combos = itertools.combinations(range(d), k)
    best_value: float | None = None
    tied: list[np.ndarray] = []  # the supports tied with the best so far
    while True:
        chunk = np.fromiter(itertools.chain.from_iterable(itertools.islice(combos, _BATCH)), dtype=int)
        if chunk.size == 0:
            break
        idx = chunk.reshape(-1, k)
        subs = a[idx[:, :, None], idx[:, None, :]]
        values = np.linalg.eigvalsh(subs)[:, k - m:].sum(axis=1)
        first = ties.argmax(values)  # the first support of the batch among those tied with its best
        if best_value is None or ties.improves(float(values[first]), best_value):
            best_value, tied = float(values[first]), []
        if not ties.improves(best_value, float(values[first])):  # tied with the best: keep every tied support
            tied.extend(idx[values >= best_value - ties.tolerance(np.array([best_value]))])
    best_support = tied[0] if tied else np.arange(k)
    if len(tied) > 1:  # equal values: the support weighing most in PC 1, whatever the order of the variables
        weights = ties.leading_magnitudes(op)
        best_support = tied[ties.argmax(np.array([weights[support].sum() for support in tied]))]
    w, value = refine(op, best_support, m)
    return SubspaceEstimate(loadings=w, support=best_support, objective=value)
