r"""The covariance of a search read from its data: :math:`A = F^\top F` for a factor :math:`F` of ``n < p`` rows,
never formed whole.

Gene-expression covariances have far fewer samples than variables (Golub: 72 x 7129): :math:`A` then needs
:math:`p^2` numbers (0.4 GB for Golub; 3.2 GB at 20 000 genes) where :math:`F` needs :math:`np` (4 MB). Every bound
of the branch and bound but the thresholded spectrum reads :math:`A` through blocks of rows, submatrices and stacks
of small principal submatrices (:mod:`spcakit.analysis.search.nodes`); :class:`GramMatrix` computes exactly those from
:math:`F`, and the whole spectrum from the ``n x n`` :math:`FF^\top`. Each entry is a dot product of two columns of
:math:`F` (``n`` terms), so it may differ from another grouping of the same sum in the last bits: the search's
tolerances (:data:`~spcakit.analysis.search.tree.PRUNE_RTOL`) are many orders above that.
"""

from __future__ import annotations

import numpy as np

from spcakit.numerics.operators import eigenpairs_through_small_gram

__all__ = ["GramMatrix"]


class GramMatrix:
    r""":math:`A = F^\top F` (``p x p``) of the factor ``factor`` :math:`F` (``n x p``), read by the entries asked.

    ``a[rows]`` (a slice or index array: a block of rows), ``a[np.ix_(rows, columns)]``, ``a[:, columns]``,
    ``a[s[:, :, None], s[:, None, :]]`` (the principal submatrices of a stack of supports, one per row of ``s``) and
    ``a @ v`` are computed from :math:`F`; :meth:`diagonal` and :meth:`spectrum` too.
    """

    def __init__(self, factor: np.ndarray) -> None:
        self.factor = np.asarray(factor, dtype=float)
        if self.factor.ndim != 2:
            raise ValueError(f"a Gram matrix's factor is a 2-D array (n x p); got shape {self.factor.shape}")
        self._columns = np.ascontiguousarray(self.factor.T)  # F^T (p x n): a variable's column is a contiguous row
        p = self.factor.shape[1]
        self.shape = (p, p)
        self.dtype = np.dtype(float)
        self.ndim = 2

    def diagonal(self) -> np.ndarray:
        """:math:`a_{jj} = \\|F_{:,j}\\|^2`."""
        return np.einsum("ij,ij->i", self._columns, self._columns)

    def spectrum(self) -> tuple[np.ndarray, np.ndarray]:
        """The ``n`` eigenpairs of :math:`A` that may be nonzero (descending; the others are 0), from :math:`FF^\\top`."""
        n = self.factor.shape[0]
        return eigenpairs_through_small_gram(self.factor @ self.factor.T, lambda u: self.factor.T @ u, n)

    def __matmul__(self, other: np.ndarray) -> np.ndarray:
        return self.factor.T @ (self.factor @ other)

    def __getitem__(self, key: object) -> np.ndarray:
        if not isinstance(key, tuple):  # a block of rows
            return self._columns[key] @ self.factor
        rows, columns = key
        if isinstance(rows, slice):
            if rows != slice(None):
                raise TypeError("a Gram matrix is read by whole columns (a[:, columns]), not a slice of them")
            return self.factor.T @ self.factor[:, np.asarray(columns)]
        rows, columns = np.asarray(rows), np.asarray(columns)
        if rows.ndim == 3 and columns.ndim == 3 and rows.shape[2] == 1 and columns.shape[1] == 1:  # stacked supports
            return np.matmul(self._columns[rows[:, :, 0]], self._columns[columns[:, 0, :]].transpose(0, 2, 1))
        if rows.ndim == 2 and columns.ndim == 2 and rows.shape[1] == 1 and columns.shape[0] == 1:  # np.ix_
            return self._columns[rows[:, 0]] @ self._columns[columns[0]].T
        raise TypeError(f"a Gram matrix is not read by an index of shapes {rows.shape} and {columns.shape}")
