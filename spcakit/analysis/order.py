r"""The order of a result's loadings: by the variance each adds, as PCA orders its components
(:func:`variance_order`), which :func:`spcakit.fit` applies unless asked for the method's own order."""

from __future__ import annotations

import numpy as np

#: Added variances within this share of the largest are tied in :func:`variance_order`: the earlier loading goes first,
#: so that rounding (another BLAS) never reorders loadings that add the same variance.
ORDER_RTOL = 1e-9


def variance_order(products: np.ndarray, gram: np.ndarray) -> np.ndarray:
    r"""The order of the loadings by the variance each adds: first the loading of largest variance, then at each step
    the one that adds most to the span of those before it (Mackey's additional variance, §2.3.3).

    ``products`` is :math:`U^\top C U` (:func:`loading_products`) and ``gram`` :math:`U^\top U`, both ``r x r``: the
    computation stays in the loadings' coefficients. With :math:`A` the coefficients of an orthonormal basis of the
    chosen loadings' span (:math:`Q = UA`), a candidate :math:`u_j` leaves :math:`w = e_j - AA^\top G e_j` and adds
    :math:`w^\top M w / w^\top G w` (0 when it adds no direction). Added variances within :data:`ORDER_RTOL` of
    the largest are tied, and the earlier loading in the method's order wins. Returns the permutation.
    """
    r = products.shape[0]
    remaining = list(range(r))
    basis = np.zeros((r, 0))
    order = []
    scale = max(float(np.max(np.abs(np.diagonal(products)), initial=0.0)), np.finfo(float).tiny)
    for _ in range(r):
        added = []
        residuals = []
        for j in remaining:
            w = -basis @ (basis.T @ gram[:, j])
            w[j] += 1.0
            length = float(w @ gram @ w)
            ok = length > 1e-24 * max(float(gram[j, j]), np.finfo(float).tiny)
            added.append(float(w @ products @ w) / length if ok else 0.0)
            residuals.append(w / np.sqrt(length) if ok else None)
        best = max(added)
        position = next(i for i, value in enumerate(added) if value >= best - ORDER_RTOL * scale)
        chosen = remaining.pop(position)
        order.append(chosen)
        if residuals[position] is not None:
            basis = np.column_stack([basis, residuals[position]])
    return np.asarray(order, dtype=np.intp)
