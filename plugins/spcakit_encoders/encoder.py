r"""The black-box sparse linear encoder from a column subset (CSSP).

Magdon-Ismail & Boutsidis, *Optimal Sparse Linear Encoders and Sparse PCA*
(NIPS 2016), §2.1. Given :math:`X \in \mathbb{R}^{n\times d}`, columns
:math:`C = X\Omega \in \mathbb{R}^{n\times r}` with
:math:`\Omega = [e_{i_1}, \dots, e_{i_r}]` and :math:`k \le r`:

1. :math:`C = QR` (thin QR, :math:`Q \in \mathbb{R}^{n\times r}`, :math:`R \in \mathbb{R}^{r\times r}`);
2. the SVD :math:`R^{-1}(Q^\top X)_k = U_R\Sigma_R V_R^\top`
   (:math:`U_R \in \mathbb{R}^{r\times k}`), with :math:`(\cdot)_k` the best rank-``k`` approximation;
3. :math:`H = \Omega U_R \in \mathbb{R}^{d\times k}`.

:math:`H` is ``r``-sparse with every column on the same ``r`` rows, and
:math:`H^\top H = U_R^\top\Omega^\top\Omega U_R = I`. Theorem 5:

.. math::

    \ell(H, X) = \|X - XH(XH)^+X\|_F^2 \le \|X - X_{C,k}\|_F^2 ,

with equality in exact arithmetic: :math:`\operatorname{span}(XH)` is the
top-``k`` left singular subspace of :math:`QQ^\top X`, so
:math:`XH(XH)^+X = X_{C,k}`. Cost :math:`O(ndr + (n + d)r^2)`: one product
:math:`Q^\top X`, the SVD of the :math:`r\times d` matrix :math:`Q^\top X`
(:math:`O(dr^2)`), and since :math:`(Q^\top X)_k = U_k\Sigma_kV_k^\top` has
orthonormal :math:`V_k^\top`, :math:`U_R` is the left factor of the
:math:`r\times k` matrix :math:`R^{-1}U_k\Sigma_k`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from spcakit.plugin_api import Carry, InvalidParameterError, Problem, Updater, part
from spcakit_encoders.linalg import data_matrix

#: The paper every part of this plugin comes from.
PAPER = "Magdon-Ismail, Boutsidis - Optimal Sparse Linear Encoders and Sparse PCA (NIPS 2016)"

#: C counts as rank-deficient when sigma_min(R) <= sigma_max(R) * max(n, r) * eps * RANK_FACTOR.
RANK_FACTOR = 10.0


def cssp_encoder(x: np.ndarray, columns: Sequence[int] | np.ndarray, k: int,
                 names: Sequence[str] | None = None) -> tuple[np.ndarray, float]:
    r"""The encoder :math:`H = \Omega U_R` of the columns ``columns`` of ``x`` (§2.1).

    Parameters
    ----------
    x
        The data :math:`X`, ``n x d``.
    columns
        The indices :math:`i_1, \dots, i_r` of :math:`C = X\Omega`.
    k
        Number of features, :math:`k \le r`.
    names
        Variable names, for error messages.

    Returns
    -------
    h
        ``d x k`` with orthonormal columns, nonzero only on the rows ``columns``.
    explained
        :math:`\|(Q^\top X)_k\|_F^2 = \|X_{C,k}\|_F^2 = \|X\|_F^2 - \ell(H, X)`.

    Raises
    ------
    InvalidParameterError
        When :math:`r < k`, or :math:`C` does not have full column rank.
    """
    n, d = x.shape
    idx = np.asarray(columns, dtype=int)
    r = idx.size
    if r < k:
        raise InvalidParameterError(
            f"encoder: {r} column(s) for k = {k} features; the encoder needs at least k columns (sparsity r >= k)"
        )
    label = (lambda j: f"{j} ({names[j]})") if names is not None else str
    if r > n:
        raise InvalidParameterError(
            f"encoder: C = X Omega has r = {r} columns but X has only n = {n} rows, so C is rank-deficient; "
            f"valid: r <= {n} (at most the rank of X)"
        )
    c = x[:, idx]
    q, rr = np.linalg.qr(c)
    sing = np.linalg.svd(rr, compute_uv=False)
    if sing[0] == 0 or sing[-1] <= sing[0] * max(n, r) * np.finfo(float).eps * RANK_FACTOR:
        # name a column that lies in the span of the others
        dependent = next(
            (int(idx[j]) for j in range(r) if abs(rr[j, j]) <= sing[0] * max(n, r) * np.finfo(float).eps * RANK_FACTOR),
            int(idx[-1]),
        )
        raise InvalidParameterError(
            f"encoder: the chosen columns C = X Omega are linearly dependent (rank-deficient; smallest singular "
            f"value {sing[-1]:.3g} vs largest {sing[0]:.3g}), e.g. column {label(dependent)} is in the span of the "
            "others; the black-box encoder needs r linearly independent columns (use distinct, non-collinear "
            "variables, or a smaller sparsity)"
        )
    b = q.T @ x
    u, s, _ = np.linalg.svd(b, full_matrices=False)
    import scipy.linalg  # noqa: PLC0415 - imported when used: 0.3 s and its own BLAS

    m = scipy.linalg.solve_triangular(rr, u[:, :k] * s[:k], lower=False)
    u_r, _, _ = np.linalg.svd(m, full_matrices=False)
    h = np.zeros((d, k))
    h[idx] = u_r[:, :k]
    return h, float(np.sum(s[:k] ** 2))


@part("encoder", paper=PAPER)
class EncoderUpdater(Updater):
    r"""black-box encoder on the iterate's row support: C = QR, SVD of R^-1 (Q^T X)_k, H = Omega U_R

    :math:`Z = H`, the CSSP black-box encoder on the row support
    :math:`S = \{j : X_{j\cdot} \ne 0\}` of the current iterate, which gives
    :math:`\Omega`; with a column-selection initializer it is the selected
    columns. It solves its problem in one step (stop after one iteration):
    the encoder of an encoder's support is itself. Objective
    :math:`\|X_{C,k}\|_F^2 = \|X\|_F^2 - \ell(H, X)`, on the problem's data
    (:math:`C^{1/2}` for a covariance). The state is that data matrix
    :math:`X`, found once by ``init`` (the run's carry holds :math:`C^{1/2}`
    when a column selector prepared it).
    """

    def init(self, problem: Problem, x0: np.ndarray, carry: Carry) -> np.ndarray:
        return data_matrix(problem, "encoder", carry)

    def propose(self, problem: Problem, x: np.ndarray, state: np.ndarray) -> tuple[np.ndarray, float, np.ndarray]:
        support = np.flatnonzero(np.any(x != 0, axis=1))
        k = x.shape[1]
        if support.size < k:
            raise InvalidParameterError(
                f"encoder: the current iterate uses {support.size} variable(s) for k = {k} features; the encoder "
                "needs at least k (start it from a column selector such as dual-set-columns with --param sparsity=R >= k)"
            )
        h, explained = cssp_encoder(state, support, k, problem.feature_names)
        return h, explained, state


UPDATERS = [EncoderUpdater]
