"""Small dense linear algebra shared by the SPCArt parts."""

from __future__ import annotations

import numpy as np


def polar(b: np.ndarray) -> np.ndarray:
    r"""Orthonormal factor of the polar decomposition: :math:`\mathrm{Polar}(B) = WQ^\top` for :math:`B = WDQ^\top`.

    Hu et al., Table 2. Solves the Procrustes problem
    :math:`\min_R \|V - XR\|_F` s.t. :math:`R^\top R = I` with :math:`B = X^\top V`.

    A tall ``p x r`` :math:`B` with orthonormal columns up to
    :math:`\|B^\top B - I\|_2 \le 1/2` (a PCA start, say) takes
    :math:`\mathrm{Polar}(B) = B\,(B^\top B)^{-1/2}` from its ``r x r`` Gram
    matrix, whose condition number is then at most 3: the result is the only
    ``p x r`` array made, where the SVD copies :math:`B` and makes :math:`W`. The result is in Fortran order
    (each column contiguous: the layout of :class:`~spcakit_spcart.updaters.RotationUpdater`'s products).
    """
    if b.ndim == 2 and b.shape[0] > 4 * b.shape[1]:
        gram = b.T @ b
        if np.linalg.norm(gram - np.eye(b.shape[1]), 2) <= 0.5:
            result = np.empty(b.shape, order="F")
            np.matmul(inverse_sqrt_psd(gram).T, b.T, out=result.T)  # (B M)^T = M^T B^T, written as B M
            return result
    w, _, qt = np.linalg.svd(b, full_matrices=False)
    return np.asfortranarray(w @ qt)


def inverse_sqrt_psd(m: np.ndarray) -> np.ndarray:
    """:math:`M^{-1/2}` of a symmetric PSD matrix (pseudo-inverse on its null space)."""
    values, vectors = np.linalg.eigh((m + m.T) / 2)
    keep = values > values.max(initial=0.0) * m.shape[0] * np.finfo(float).eps
    inv = np.zeros_like(values)
    inv[keep] = 1.0 / np.sqrt(values[keep])
    return (vectors * inv) @ vectors.T
