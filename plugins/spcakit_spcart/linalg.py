"""Small dense linear algebra shared by the SPCArt parts."""

from __future__ import annotations

import numpy as np


def polar(b: np.ndarray) -> np.ndarray:
    r"""Orthonormal factor of the polar decomposition: :math:`\mathrm{Polar}(B) = WQ^\top` for :math:`B = WDQ^\top`.

    Hu et al., Table 2. Solves the Procrustes problem
    :math:`\min_R \|V - XR\|_F` s.t. :math:`R^\top R = I` with :math:`B = X^\top V`.
    """
    w, _, qt = np.linalg.svd(b, full_matrices=False)
    return w @ qt


def inverse_sqrt_psd(m: np.ndarray) -> np.ndarray:
    """:math:`M^{-1/2}` of a symmetric PSD matrix (pseudo-inverse on its null space)."""
    values, vectors = np.linalg.eigh((m + m.T) / 2)
    keep = values > values.max(initial=0.0) * m.shape[0] * np.finfo(float).eps
    inv = np.zeros_like(values)
    inv[keep] = 1.0 / np.sqrt(values[keep])
    return (vectors * inv) @ vectors.T
