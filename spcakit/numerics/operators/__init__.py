r"""Covariance operators: what every part needs of :math:`C`, without forming it.

Sparse PCA only ever touches the covariance :math:`C \in \mathbb{R}^{p\times p}`
through products :math:`CV`, its diagonal, its trace and (for the PCA start)
its leading eigenvectors. An operator provides exactly these, so that

* an explicit covariance is used as it is (:class:`DenseCovariance`);
* a data matrix :math:`A \in \mathbb{R}^{n\times p}` gives
  :math:`C = A^\top A / s` applied as :math:`A^\top (A V) / s`
  (:class:`GramCovariance`), centred and scaled implicitly when it holds the
  caller's array as given (so the data are held once): when :math:`n < p` no
  :math:`p\times p` array is ever allocated;
* a ``scipy.sparse`` data matrix :math:`X` gives the covariance of its
  centred (and optionally standardised) copy without forming it, nor
  densifying :math:`X` (:class:`CenteredSparseGram`);
* deflations are low-rank corrections wrapped around another operator
  (:class:`RankOneCorrected` for Hotelling's and the Schur complement
  deflation, :class:`ProjectionDeflated` for projections);
* data with constant columns give the covariance of the columns that vary
  (each operator's ``restrict``) padded with zero rows and columns
  (:class:`PaddedCovariance`).

All operators are frozen: a deflation returns a new operator.

The package's modules: :mod:`~spcakit.numerics.operators.base` (the protocol), :mod:`~spcakit.numerics.operators.eigen` (the
eigen policy), :mod:`~spcakit.numerics.operators.dense`, :mod:`~spcakit.numerics.operators.gram`,
:mod:`~spcakit.numerics.operators.sparse` and :mod:`~spcakit.numerics.operators.deflated`; every public name is importable
from ``spcakit.numerics.operators``. :mod:`~spcakit.numerics.operators.screen` computes a product only where a truncation to the
``k`` largest entries looks (the power steps of TPower on data).
"""

from __future__ import annotations

from spcakit.numerics.operators.base import CovarianceOperator, OperatorAccess, array_eq, sparse_product
from spcakit.numerics.operators.deflated import (
    PaddedCovariance,
    ProjectionDeflated,
    RankOneCorrected,
    densify,
    project_out,
    rank_one_downdate,
)
from spcakit.numerics.operators.dense import DenseCovariance
from spcakit.numerics.operators.eigen import (
    DENSE_EIGEN_LIMIT,
    DENSE_COVARIANCE_LIMIT,
    DENSE_GRAM_LIMIT,
    KRYLOV_BLOCK,
    KRYLOV_CYCLES,
    KRYLOV_DEPTH,
    KRYLOV_NEAR,
    KRYLOV_TOL,
    LANCZOS_BASIS,
    LANCZOS_LIMIT,
    NUMPY_EIGH_LIMIT,
    SOLVERS,
    block_krylov_top,
    eigenpairs_through_small_gram,
    eigh_top,
    lanczos_top,
    leading_eigenpairs,
    operator_lanczos,
    operator_top,
    orthonormal_completion,
    top_eigenpairs,
)
from spcakit.numerics.operators.gram import (
    DENSE_BLOCK_BYTES,
    OFFSET_LIMIT,
    ROW_BLOCK_BYTES,
    ROW_BLOCK_MIN_ROWS,
    ROW_BLOCK_WIDTH,
    GramCovariance,
    ImplicitCentring,
    centred_column_blocks,
)
from spcakit.numerics.operators.sparse import (
    SPARSE_BLOCK_BYTES,
    SPARSE_BLOCK_ENTRIES,
    CenteredSparseGram,
    canonical_csr,
    centred_submatrix,
    explicit_covariance,
    sparse_gram,
    stored_per_column,
)

__all__ = [
    "CenteredSparseGram",
    "CovarianceOperator",
    "DENSE_BLOCK_BYTES",
    "DENSE_EIGEN_LIMIT",
    "DENSE_COVARIANCE_LIMIT",
    "DENSE_GRAM_LIMIT",
    "DenseCovariance",
    "GramCovariance",
    "ImplicitCentring",
    "KRYLOV_BLOCK",
    "KRYLOV_CYCLES",
    "KRYLOV_DEPTH",
    "KRYLOV_NEAR",
    "KRYLOV_TOL",
    "LANCZOS_BASIS",
    "LANCZOS_LIMIT",
    "NUMPY_EIGH_LIMIT",
    "OFFSET_LIMIT",
    "OperatorAccess",
    "PaddedCovariance",
    "ProjectionDeflated",
    "ROW_BLOCK_BYTES",
    "ROW_BLOCK_MIN_ROWS",
    "ROW_BLOCK_WIDTH",
    "RankOneCorrected",
    "SPARSE_BLOCK_BYTES",
    "SOLVERS",
    "SPARSE_BLOCK_ENTRIES",
    "array_eq",
    "block_krylov_top",
    "canonical_csr",
    "centred_submatrix",
    "explicit_covariance",
    "sparse_gram",
    "sparse_product",
    "centred_column_blocks",
    "densify",
    "eigenpairs_through_small_gram",
    "eigh_top",
    "lanczos_top",
    "leading_eigenpairs",
    "operator_lanczos",
    "operator_top",
    "orthonormal_completion",
    "project_out",
    "rank_one_downdate",
    "stored_per_column",
    "top_eigenpairs",
]
