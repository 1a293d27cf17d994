r"""Orthogonality of a truncated pair: Prop. 3.2 of Xu, Yang & Zhang.

*Fast Deflation Sparse Principal Component Analysis via Subspace
Projections* measures how orthogonal two loadings are by

.. math::

    \langle a, b\rangle = 1 - \frac{|a^\top b|}{\|a\|\,\|b\|}
    \qquad (1 \text{ for orthogonal vectors, } 0 \text{ for parallel ones}),

and bounds it from below when :math:`b` is truncated (Prop. 3.2): SPCA-SP's
search subspace keeps every untruncated loading orthogonal to the earlier
sparse ones (eq. 11), so the orthogonality of its loadings is controlled by
the truncation alone. For unit orthogonal :math:`a, b \in \mathbb{R}^d`,
:math:`\langle a, T(b)\rangle` is at least

* :math:`1 - \sqrt{\kappa_S/d}` for the truncation by sparsity :math:`T_S`
  (:math:`\kappa_S` zeros);
* :math:`1 - \sqrt{\kappa_E}` for the truncation by energy :math:`T_E`;
* :math:`1 - \sqrt{1 - \|T(b)\|_0\,\kappa_H^2}` for hard thresholding
  :math:`T_H` at :math:`\kappa_H`.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["pair_orthogonality", "truncation_orthogonality_bound"]


def pair_orthogonality(a: np.ndarray, b: np.ndarray) -> float:
    r""":math:`\langle a, b\rangle = 1 - |a^\top b| / (\|a\|\,\|b\|)` (larger is more orthogonal)."""
    return 1.0 - abs(float(a @ b)) / (float(np.linalg.norm(a)) * float(np.linalg.norm(b)))


def truncation_orthogonality_bound(kind: str, parameter: float, d: int, nonzeros: int | None = None) -> float:
    r"""Prop. 3.2: lower bound on :math:`\langle a, T(b)\rangle` for unit orthogonal :math:`a, b \in \mathbb{R}^d`.

    ``kind`` ``"sparsity"``: :math:`1 - \sqrt{\kappa_S/d}` (``parameter`` = zeros);
    ``"energy"``: :math:`1 - \sqrt{\kappa_E}`; ``"hard"``:
    :math:`1 - \sqrt{1 - \|T(b)\|_0 \kappa_H^2}` (needs ``nonzeros`` = :math:`\|T(b)\|_0`).
    """
    if kind == "sparsity":
        return 1.0 - math.sqrt(parameter / d)
    if kind == "energy":
        return 1.0 - math.sqrt(parameter)
    if kind == "hard":
        if nonzeros is None:
            raise ValueError("the hard-thresholding bound needs the number of nonzeros of T(b)")
        return 1.0 - math.sqrt(max(0.0, 1.0 - nonzeros * parameter**2))
    raise ValueError(f"unknown truncation kind {kind!r}; valid: sparsity, energy, hard")
