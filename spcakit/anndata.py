r"""Sparse PCA of single-cell data: :func:`sparse_pca` fits an AnnData and writes its results into it.

Needs anndata (``pip install -e '.[anndata]'`` in the repository; ``.[scanpy]`` adds scanpy for the
tutorial's normalisation and plots). ``import spcakit`` never imports this module; it imports anndata when
:func:`sparse_pca` or :func:`simulated_counts` is called.

What it does, as :func:`scanpy.pp.pca` does for PCA
----------------------------------------------------
:func:`sparse_pca` reads the expression matrix :math:`X` (``n_obs x n_vars``: ``adata.X``, or
``adata.layers[layer]``), keeps the highly variable genes when ``adata.var["highly_variable"]`` is there
(``use_highly_variable``), fits ``n_components`` sparse loadings with ``k`` nonzero genes each by
:func:`spcakit.fit`, and writes

* ``adata.obsm["X_spca"]``: the scores :math:`S = (X - \mathbf 1\mu^\top)V` (``n_obs x r``), the centred
  cells projected on the loadings - scanpy's ``X_pca`` is the same product with the PCA loadings. The
  score of a cell on a component is a weighted sum of that component's ``k`` genes alone (a program
  score). Sparse loadings are in general not orthogonal; the least-squares scores that
  :meth:`spcakit.SparsePCA.transform` returns are :math:`S\,(V^\top V)^{-1}`
  (:func:`spcakit.workflows.model.regression_map`);
* ``adata.varm["spca_loadings"]``: the loadings :math:`V` (``n_vars x r``, unit columns), zero in the rows
  of the genes left out (not highly variable), as scanpy's ``PCs``;
* ``adata.uns["spca"]``: ``params`` (``method``, ``k``, ``n_components``, ``zero_center``,
  ``use_highly_variable``, ``layer`` when one was used, ``standardize`` when set), ``variance`` (the
  additional variance of each loading given the earlier ones, :math:`q_t^\top C q_t` for
  :math:`Q` of the QR factorisation of :math:`V`: scanpy's ``variance`` for PCA, where they are the
  eigenvalues), ``variance_ratio`` (``variance`` over the total variance :math:`\operatorname{tr} C`),
  ``cpev`` (their sum: :math:`\operatorname{tr}(Q^\top C Q)/\operatorname{tr} C`), ``total_variance``,
  ``nonzeros`` (genes per loading), ``stopping_reason``, and ``bound`` / ``gap`` when the fit computed
  them (:func:`spcakit.analysis.certificate.cumulative_bounds`: per ``t``, an upper bound on the variance any ``t``
  loadings as sparse explain together, and how far the first ``t`` are from it), and ``orthogonality_violation`` /
  ``correlation_violation`` (how redundant the components are; ``params["constraint"]`` when one was asked). Everything
  there can be written by ``adata.write_h5ad``.

``key_added`` replaces the three keys by one, as in scanpy: ``obsm[key_added]``, ``varm[key_added]``,
``uns[key_added]``. Gene names (``adata.var_names``) are the variables' names of the fit
(``uns["spca"]`` does not repeat them: ``adata.var_names[adata.varm["spca_loadings"][:, j] != 0]`` are the
genes of component ``j``).

Never dense
-----------
A ``scipy.sparse`` :math:`X` (CSR; CSC and the other formats are converted to CSR once, a copy of their
stored entries) is never densified. When the genes fitted are few for their stored entries
(:math:`p^2 \le \mathrm{nnz}`, and so at least as many cells as genes: single-cell data after the choice of
highly variable genes) the :math:`p \times p` covariance of the :math:`p` genes fitted is formed once (see
:func:`sparse_covariance`, a block of rows at a time) and the method runs on it: every product with it then
costs :math:`p^2` instead of the :math:`2\,\mathrm{nnz}` of the implicitly centred data
(:class:`~spcakit.numerics.operators.CenteredSparseGram`), whatever the number of cells, and it takes no more memory
than the data. Otherwise (many genes, few cells, very sparse data), or with ``sample_weight``, :math:`X`
goes to :func:`spcakit.fit` as it is (which decides the same way, by
:func:`spcakit.numerics.operators.explicit_covariance`). NaN or infinite values are refused, naming their genes. The scores are the sparse product
:math:`XV` less :math:`\mathbf 1(\mu^\top V)`. float32 data give float32 scores and loadings (computed in
float64); the covariance is float64.

The default method
------------------
``method=None`` is spcakit's default method, ``auto`` (the best of several methods at the same ``k``
by explained variance: the methods page ``auto``), with its plan for large problems above
:data:`FULL_WORK` (:math:`\min(n, p)\,p^2`, a panel of 100 genes): TPower and SPCArt, the better
kept, unrefined. Its full plan - greedy selection, restarted TPower and support swaps besides - gains
little variance on expression data and costs much more: on 20 000 simulated cells of 2000 genes
(:func:`simulated_counts`), 6 components of 30 genes, a CPEV of 0.131531 in 19 s against 0.131518 in 6 s,
both holding every planted program (one BLAS thread, a loaded 2-core machine); at 10 components of 45 genes,
minutes. ``full_work=1e300`` asks for the full plan; ``method="tpower"`` (or any method name) runs that method.

Examples
--------
>>> import numpy as np
>>> from spcakit.anndata import simulated_counts, sparse_pca
>>> adata = simulated_counts(n_cells=500, n_genes=200, seed=0)      # raw counts, 6 planted programs
>>> adata.X.data = np.log1p(adata.X.data)                           # (normalise as you like; stays sparse)
>>> sparse_pca(adata, n_components=6, k=25)
>>> adata.obsm["X_spca"].shape, adata.varm["spca_loadings"].shape
((500, 6), (200, 6))
>>> info = adata.uns["spca"]
>>> sorted(info["params"])
['k', 'method', 'n_components', 'seed', 'use_highly_variable', 'zero_center']

References
----------
F. A. Wolf, P. Angerer, F. J. Theis (2018), SCANPY: large-scale single-cell gene expression data
analysis. Genome Biology 19:15 (``scanpy.pp.pca``, whose keys and options this module follows).
I. Virshup, S. Rybakov, F. J. Theis, P. Angerer, F. A. Wolf (2024), anndata: Access and store
annotated data matrices. JOSS 9(101):4371.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp

from spcakit.workflows.fit import fit
from spcakit.workflows.configure import check_k
from spcakit.core.errors import InvalidDataError, InvalidParameterError, SpcakitError, install_hint, listed
from spcakit.inputs import Covariance
from spcakit.inputs.names import unique_names
from spcakit.inputs.options import InputOptions, open_input
from spcakit.numerics.operators import explicit_covariance, sparse_gram
from spcakit.core.plugins import get_registry

__all__ = ["AnnDataDependencyError", "simulated_counts", "sparse_covariance", "sparse_pca"]

#: The extra that installs anndata (``pip install -e '.[anndata]'``).
ANNDATA_EXTRA = "anndata"
#: The keys scanpy's ``pca`` writes (``X_pca``, ``PCs``, ``pca``), for sparse PCA: obsm, varm, uns.
KEYS = ("X_spca", "spca_loadings", "spca")
#: ``auto``'s ``full_work`` here (:math:`\min(n, p)\,p^2`): above it (100 genes with more cells
#: than genes), TPower and SPCArt alone, unrefined (see the module's description).
FULL_WORK = 1e6
#: What :func:`spcakit.fit` takes that :func:`sparse_pca` sets itself, and what to do instead.
OWN_ARGUMENTS = {"data": "pass the AnnData itself", "r": "use n_components", "center": "use zero_center",
                 "covariance": "sparse_pca reads the expression matrix of the AnnData",
                 "feature_names": "the genes' names are adata.var_names",
                 **dict.fromkeys(("columns", "drop"), "use use_highly_variable, or subset the AnnData (adata[:, genes])")}
#: Stored entries per block of rows when it is formed by sparse products.
SPARSE_BLOCK_ENTRIES = 1 << 19


class AnnDataDependencyError(SpcakitError, ImportError):
    """:func:`sparse_pca` or :func:`simulated_counts` was called but anndata is not installed
    (``pip install -e '.[anndata]'``)."""


def _anndata() -> Any:
    """The ``anndata`` package, imported on first use; :class:`AnnDataDependencyError` when missing."""
    try:
        import anndata
    except ImportError as exc:
        raise AnnDataDependencyError(
            f"spcakit.anndata needs anndata: {install_hint('anndata', ANNDATA_EXTRA)} ({exc})"
        ) from exc
    return anndata


# -- the covariance of sparse data ---------------------------------------------------------------------------
def sparse_covariance(
    x: Any, columns: np.ndarray | None = None, *, center: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    r"""The covariance of the columns ``columns`` (all when ``None``) of a ``scipy.sparse`` data matrix, never
    densified whole, and their means.

    For :math:`X` (``n x p``) and the column means :math:`\mu`,

    .. math::

        C = \frac{(X - \mathbf 1\mu^\top)^\top (X - \mathbf 1\mu^\top)}{n - 1}
          = \frac{X^\top X - n\,\mu\mu^\top}{n - 1}

    (:math:`C = X^\top X / n` and :math:`\mu = 0` with ``center=False``, spcakit's uncentred
    convention), from :func:`spcakit.numerics.operators.sparse_gram` (a block of rows at a time, by the cheaper of
    the sparse product and a densified block by BLAS ``syrk``), which :func:`spcakit.fit` uses too for sparse
    data with :math:`p^2` at most its stored entries. Here the columns are chosen a block at a time (no copy of
    the chosen genes' entries) and a float32 matrix is converted a block at a time. Everything is computed in
    float64, whatever the data's dtype.

    Parameters
    ----------
    x : scipy.sparse matrix or array of shape (n, p_all)
        CSR (another format is converted once).
    columns : array of int, optional
        The positions of the columns wanted, in order.
    center : bool
        Subtract the column means.

    Returns
    -------
    covariance : ndarray of shape (p, p)
    mean : ndarray of shape (p,)
        The column means (zero with ``center=False``).
    """
    x = x.tocsr() if x.format != "csr" else x
    n = x.shape[0]
    mean = _column_sums(x) / n if center else np.zeros(x.shape[1])
    if columns is not None:
        mean = mean[columns]
    covariance = sparse_gram(x, mean if center else None, columns)
    covariance /= (n - 1) if center else n
    return covariance, mean


def _column_sums(x: Any) -> np.ndarray:
    """The column sums of a CSR matrix in float64, :data:`SPARSE_BLOCK_ENTRIES` stored entries at a time (scipy's
    ``sum(axis=0, dtype=float64)`` would convert every stored entry at once)."""
    sums = np.zeros(x.shape[1])
    for start in range(0, x.nnz, SPARSE_BLOCK_ENTRIES):
        stop = min(x.nnz, start + SPARSE_BLOCK_ENTRIES)
        sums += np.bincount(x.indices[start:stop], weights=x.data[start:stop].astype(np.float64), minlength=x.shape[1])
    return sums


def _products(x: Any, v: np.ndarray) -> np.ndarray:
    """:math:`XV` in float64 for a CSR matrix or an array ``x``, a block of rows at a time (each converted to float64
    alone: the whole of a float32 ``x`` is never copied)."""
    out = np.empty((x.shape[0], v.shape[1]))
    width = x.nnz / max(x.shape[0], 1) if sp.issparse(x) else x.shape[1]
    height = max(1, int(SPARSE_BLOCK_ENTRIES // max(width, 1)))
    for start in range(0, x.shape[0], height):
        stop = min(x.shape[0], start + height)
        out[start:stop] = x[start:stop].astype(np.float64) @ v
    return out


# -- checks -------------------------------------------------------------------------------------------------
def _check_count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InvalidParameterError(f"{name} must be a positive integer; got {value!r}")
    return int(value)


def _gene_mask(adata: Any, use_highly_variable: Any) -> np.ndarray | None:
    """The genes to fit (a boolean mask over ``var``), or ``None`` for all: scanpy's rule for
    ``use_highly_variable`` (``None``: ``var["highly_variable"]`` when there is one)."""
    if use_highly_variable is not None and not isinstance(use_highly_variable, (bool, np.bool_)):
        raise InvalidParameterError(f"use_highly_variable must be True, False or None; got {use_highly_variable!r}")
    present = "highly_variable" in adata.var.columns
    if use_highly_variable is False or (use_highly_variable is None and not present):
        return None
    if not present:
        columns = ", ".join(map(repr, adata.var.columns[:10])) or "none"
        raise InvalidParameterError(
            "use_highly_variable=True needs adata.var['highly_variable'], which this AnnData lacks (its var "
            f"columns: {columns}); scanpy.pp.highly_variable_genes(adata) adds it, or pass "
            "use_highly_variable=False to fit every gene"
        )
    column = adata.var["highly_variable"]
    if column.dtype != bool:
        raise InvalidDataError(
            f"adata.var['highly_variable'] must be boolean (True for the genes to fit); it is {column.dtype}"
        )
    mask = column.to_numpy(dtype=bool)
    if not mask.any():
        raise InvalidDataError(
            "adata.var['highly_variable'] marks no gene; select highly variable genes again, or pass "
            "use_highly_variable=False to fit every gene"
        )
    return mask


def _var_mask(adata: Any, mask_var: Any, use_highly_variable: Any) -> np.ndarray:
    """The genes to fit from scanpy's ``mask_var``: a boolean column of ``var`` it names, or a boolean array."""
    if use_highly_variable is not None:
        raise InvalidParameterError("give mask_var or use_highly_variable, not both: mask_var='highly_variable' is "
                                    "use_highly_variable=True")  # fmt: skip
    if isinstance(mask_var, str) and mask_var not in adata.var.columns:
        columns = ", ".join(map(repr, adata.var.columns[:10])) or "none"
        raise InvalidParameterError(f"mask_var={mask_var!r} names no column of adata.var (its columns: {columns})")
    values = adata.var[mask_var].to_numpy() if isinstance(mask_var, str) else np.asarray(mask_var)
    what = f"adata.var[{mask_var!r}]" if isinstance(mask_var, str) else "mask_var"
    if values.dtype != bool or values.shape != (adata.n_vars,) or not values.any():
        raise InvalidDataError(f"{what} must be {adata.n_vars} booleans, one per gene, True for the genes to fit (at "
                               f"least one); got {values.dtype} of shape {values.shape}")  # fmt: skip
    return values


def _expression(adata: Any, layer: Any) -> Any:
    """``adata.X`` or ``adata.layers[layer]``, refused unless it is a scipy.sparse matrix or a NumPy array."""
    if layer is None:
        x, what = adata.X, "adata.X"
        if x is None:
            raise InvalidDataError("adata.X is None: this AnnData holds no expression matrix; pass layer=NAME")
    else:
        if not isinstance(layer, str):
            raise InvalidParameterError(f"layer must be the name of a layer (a string) or None; got {layer!r}")
        if layer not in adata.layers:
            names = ", ".join(map(repr, adata.layers.keys())) or "none"
            raise InvalidParameterError(f"adata has no layer {layer!r}; its layers: {names}")
        x, what = adata.layers[layer], f"adata.layers[{layer!r}]"
    if sp.issparse(x) or isinstance(x, np.ndarray):
        return x
    raise InvalidDataError(
        f"{what} is a {type(x).__module__}.{type(x).__name__}; sparse_pca takes a scipy.sparse matrix or a NumPy "
        "array (a backed AnnData: adata.to_memory() first; for Dask data use spcakit.fit on the array)"
    )


def _check_finite(x: Any, columns: np.ndarray | None, names: tuple[str, ...], layer: str | None) -> None:
    """Refuse NaN or infinite values among the genes fitted, naming a few of those genes."""
    if sp.issparse(x):  # CSR
        bad_entries = ~np.isfinite(x.data)
        if not bad_entries.any():
            return
        genes = np.unique(x.indices[bad_entries])
    else:
        finite = np.isfinite(x)
        if finite.all():
            return
        genes = np.flatnonzero(~finite.all(axis=0))
    if columns is not None:
        genes = np.flatnonzero(np.isin(columns, genes))  # positions among the genes fitted
    if genes.size == 0:
        return
    shown = listed(genes, lambda j: names[j])
    what = "adata.X" if layer is None else f"adata.layers[{layer!r}]"
    raise InvalidDataError(
        f"{what} holds NaN or infinite values in {genes.size} gene(s) fitted: {shown}; sparse_pca needs finite "
        "expression values (spcakit.fit(matrix, missing='em') imputes missing ones in a matrix)"
    )


#: scanpy's name for ``n_components`` (:func:`scanpy.pp.pca`), taken as it.
SCANPY_N_COMPONENTS = "n_comps"


def _scanpy_names(n_components: Any, fit_kwargs: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    """``n_components`` and the other arguments, with scanpy's ``n_comps`` taken as ``n_components`` (both given:
    refused unless equal)."""
    rest = dict(fit_kwargs)
    if SCANPY_N_COMPONENTS not in rest:
        return n_components, rest
    given = rest.pop(SCANPY_N_COMPONENTS)
    if n_components not in (SPARSE_PCA_DEFAULT_COMPONENTS, given):
        raise InvalidParameterError(f"n_components={n_components!r} and n_comps={given!r} name the same number of "
                                    "components; give one of them")
    return given, rest


def _fit_arguments(method: Any, fit_kwargs: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The input options (:class:`~spcakit.inputs.options.InputOptions`) and the arguments of :func:`spcakit.fit` in
    ``fit_kwargs``, with
    ``auto``'s :data:`FULL_WORK` unless given."""
    own = sorted(set(fit_kwargs) & set(OWN_ARGUMENTS))
    if own:
        raise InvalidParameterError(
            f"sparse_pca sets {', '.join(own)} itself: " + "; ".join(f"{name}: {OWN_ARGUMENTS[name]}" for name in own)
        )
    fit_args = dict(fit_kwargs)
    problem_args = {"standardize": fit_args.pop("standardize", False), "weights": fit_args.pop("sample_weight", None)}
    registry = fit_args.get("registry") or get_registry()
    spec = registry.default_method() if method is None else registry.method(method) if isinstance(method, str) else method
    if getattr(spec, "name", None) == "auto" and not {"full_work", "updater.full_work"} & set(fit_args):
        fit_args["full_work"] = FULL_WORK
    if fit_args.get("metrics") is not None and fit_args["metrics"] != "all":  # what uns needs, besides
        wanted = [fit_args["metrics"]] if isinstance(fit_args["metrics"], str) else list(fit_args["metrics"])
        fit_args["metrics"] = wanted + [m for m in ("cpev", "additional_variance") if m not in wanted]
    return problem_args, fit_args


# -- the entry point ----------------------------------------------------------------------------------------
#: :func:`sparse_pca`'s default number of components (scanpy's 50 is more than sparse loadings are read for).
SPARSE_PCA_DEFAULT_COMPONENTS = 10


def sparse_pca(
    adata: Any,
    n_components: int = SPARSE_PCA_DEFAULT_COMPONENTS,
    k: int | list[int] | None = None,
    *,
    method: Any = None,
    layer: str | None = None,
    use_highly_variable: bool | None = None,
    mask_var: Any = None,
    zero_center: bool = True,
    key_added: str | None = None,
    copy: bool = False,
    **fit_kwargs: Any,
) -> Any:
    r"""Sparse PCA of an AnnData: scores in ``obsm``, loadings in ``varm``, what the fit explains in ``uns``.

    The conventions are those of :func:`scanpy.pp.pca` (see the module's description for what is written
    and how the sparse matrix is handled).

    Parameters
    ----------
    adata : anndata.AnnData
        Cells (observations) by genes (variables). Its expression matrix - ``X``, or the layer ``layer`` -
        is a ``scipy.sparse`` matrix (never densified) or a NumPy array, e.g. log-normalised counts.
    n_components : int
        The number :math:`r` of sparse loadings; at most the number of genes fitted, and below the number of
        cells when centring.
    k : int, list of int or None
        Nonzero genes per loading (one for all, or one per loading); ``None``: spcakit's default
        cardinality :math:`\lceil\sqrt p\rceil` of the :math:`p` genes fitted (:func:`spcakit.fit`).
    method : str, MethodSpec or None
        A spcakit method (``spcakit methods`` lists them); ``None``: ``auto`` with its quick plan above
        :data:`FULL_WORK` (see the module's description).
    layer : str or None
        Fit ``adata.layers[layer]`` instead of ``adata.X``.
    use_highly_variable : bool or None
        Fit only the genes of ``adata.var["highly_variable"]`` (``True``: that column must be there;
        ``None``, the default: when it is there, as scanpy does; ``False``: every gene). The loadings of
        the other genes are zero.
    mask_var : str, array of bool or None
        scanpy's newer name for the same choice (:func:`scanpy.pp.pca`'s ``mask_var``): the name of a boolean
        column of ``adata.var`` (``"highly_variable"``) or a boolean array over the genes; ``None``: as
        ``use_highly_variable`` says. Give one of the two.
    zero_center : bool
        Centre each gene (``False``: the uncentred second moments :math:`X^\top X/n`, and the scores
        :math:`XV`).
    key_added : str or None
        Write ``obsm[key_added]``, ``varm[key_added]`` and ``uns[key_added]`` instead of ``X_spca``,
        ``spca_loadings`` and ``spca``.
    copy : bool
        Work on a copy of ``adata`` and return it; else write into ``adata`` and return ``None``.
    **fit_kwargs
        Passed to :func:`spcakit.fit`: ``seed``, ``nonnegative``, ``constraint``, ``truncator``, ``lam``, ``metrics``,
        ``bound``, part parameters, and ``standardize`` (scores of the standardised genes) or
        ``sample_weight`` (one weight per cell). ``data``, ``r``, ``covariance``, ``center``,
        ``feature_names``, ``columns`` and ``drop`` are set here and refused.

    Returns
    -------
    anndata.AnnData or None
        The copy with the results when ``copy=True``, else ``None``.

    Raises
    ------
    AnnDataDependencyError
        anndata is not installed.
    InvalidDataError, InvalidParameterError
        ``adata`` is not an AnnData, the layer does not exist, the expression matrix is neither sparse nor a
        NumPy array, ``use_highly_variable=True`` without the column, ``n_components`` or ``k`` out of
        range (each message says what is valid).
    """
    anndata = _anndata()
    if not isinstance(adata, anndata.AnnData):
        raise InvalidDataError(
            f"sparse_pca takes an anndata.AnnData; got {type(adata).__module__}.{type(adata).__name__} "
            "(for a matrix use spcakit.fit or spcakit.SparsePCA)"
        )
    n_components, fit_kwargs = _scanpy_names(n_components, fit_kwargs)
    r = _check_count(n_components, "n_components")
    if key_added is not None and (not isinstance(key_added, str) or not key_added):
        raise InvalidParameterError(f"key_added must be a nonempty string or None; got {key_added!r}")
    if key_added is not None and ("/" in key_added or "\0" in key_added or key_added.strip(".") == ""):
        raise InvalidParameterError(
            f"key_added={key_added!r} cannot be written to an .h5ad file (a '/' there starts a group; '.' and '..' "
            "and NUL are not names): choose a name without them, e.g. 'X_spca_k10'"
        )
    if not isinstance(zero_center, (bool, np.bool_)) or not isinstance(copy, (bool, np.bool_)):
        raise InvalidParameterError(f"zero_center and copy must be True or False; got {zero_center!r}, {copy!r}")
    if adata.isbacked and layer is None:
        raise InvalidDataError("adata is backed (its X on disk); load it first: adata = adata.to_memory()")
    x = _expression(adata, layer)
    if not (np.issubdtype(x.dtype, np.number) or np.issubdtype(x.dtype, np.bool_)) or np.issubdtype(x.dtype, np.complexfloating):
        what = "adata.X" if layer is None else f"adata.layers[{layer!r}]"
        raise InvalidDataError(
            f"{what} holds {x.dtype} values, not real numbers; sparse_pca needs numeric expression values (convert "
            f"them first, e.g. {what} = {what}.astype('float32'), or keep the non-numeric data in adata.obs/var)"
        )
    if sp.issparse(x) and x.format != "csr":
        x = x.tocsr()  # one copy of the stored entries; CSR's rows are what the blocks below take
    mask = _gene_mask(adata, use_highly_variable) if mask_var is None else _var_mask(adata, mask_var, use_highly_variable)
    columns = None if mask is None else np.flatnonzero(mask)
    names = adata.var_names if columns is None else adata.var_names[columns]
    if not names.is_unique:  # the fit's names made unique as scanpy's var_names_make_unique does (adata keeps its own)
        names = type(names)(unique_names([str(name) for name in names]))
    n, p = x.shape[0], names.size
    if n < (2 if zero_center else 1) or p == 0:
        cells = f"{n} cell{'' if n == 1 else 's'}"
        raise InvalidDataError(
            f"this AnnData has {cells} and {p} gene(s) fitted; sparse PCA needs at least "
            f"{'2 cells (the genes are centred: one cell has no variance about its mean)' if zero_center else '1 cell'} "
            "and 1 gene" + ("" if p else " (use_highly_variable or the mask left none)")
        )
    largest = min(p, n - 1 if zero_center else n)
    if r > largest:
        raise InvalidParameterError(
            f"n_components={r} is more than this AnnData has room for ({n} cells, {p} genes fitted"
            f"{', centred' if zero_center else ''}); valid: 1 <= n_components <= {max(largest, 0)}"
        )
    if k is not None:
        for value in k if isinstance(k, (list, tuple)) else [k]:
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= value <= p:
                raise InvalidParameterError(
                    f"k (nonzero genes per component) must be an integer in [1, {p}] (the genes fitted), a list "
                    f"of them (one per component) or None; got {k!r}"
                )
        k = check_k(k, r, p)
    problem_args, fit_args = _fit_arguments(method, fit_kwargs)

    # the problem: the covariance of the genes fitted (many cells), or the data themselves
    names = tuple(str(name) for name in names)
    _check_finite(x, columns, names, layer)
    if sp.issparse(x) and problem_args["weights"] is None and explicit_covariance(x, columns):
        covariance, mean = sparse_covariance(x, columns, center=bool(zero_center))
        problem = open_input(Covariance(covariance, feature_names=names),
                             InputOptions(standardize=problem_args["standardize"], missing="error")).problem
    else:
        fitted = x if columns is None else x[:, columns]
        problem = open_input(fitted, InputOptions(center=bool(zero_center), feature_names=names, missing="error",
                                                  standardize=problem_args["standardize"],
                                                  sample_weight=problem_args["weights"])).problem  # fmt: skip
        mean = problem.input.mean if zero_center else np.zeros(p)
        del fitted
    scale = problem.input.scale if problem_args["standardize"] else None
    result = fit(problem, method, r, k=k, **fit_args)

    # the scores: (X - 1 mu^T) V on the genes fitted, as X V_all - 1 (mu^T V), X never densified
    loadings = result.loadings
    weights = loadings if scale is None else loadings / scale[:, None]
    embedded = np.zeros((x.shape[1], r))
    embedded[slice(None) if columns is None else columns] = weights
    scores = _products(x, embedded) - mean @ weights
    dtype = np.float32 if x.dtype == np.float32 else np.float64
    full = np.zeros((x.shape[1], r), dtype=dtype)
    full[slice(None) if columns is None else columns] = loadings

    out = adata.copy() if copy else adata
    key_obsm, key_varm, key_uns = KEYS if key_added is None else (key_added,) * 3
    out.obsm[key_obsm] = scores.astype(dtype, copy=False)
    out.varm[key_varm] = full
    out.uns[key_uns] = _summary(result, problem, r, k, layer, mask is not None, bool(zero_center), problem_args)
    return out if copy else None


def _summary(result: Any, problem: Any, r: int, k: Any, layer: str | None, highly_variable: bool, center: bool,
             problem_args: Mapping[str, Any]) -> dict[str, Any]:  # fmt: skip
    """``uns["spca"]``: the parameters and what the loadings explain, in types ``write_h5ad`` writes (no None)."""
    fitted_k = k if k is not None else (result.spec.get("default_k") or {}).get("k")
    params: dict[str, Any] = {"method": result.method, "n_components": r, "zero_center": center,
                              "use_highly_variable": highly_variable}  # fmt: skip
    if fitted_k is not None:
        params["k"] = np.asarray(fitted_k) if isinstance(fitted_k, (list, tuple)) else int(fitted_k)
    if layer is not None:
        params["layer"] = layer
    if problem_args["standardize"]:
        params["standardize"] = True
    if result.seed is not None:
        params["seed"] = int(result.seed)
    if result.spec.get("constraint") is not None:
        params["constraint"] = str(result.spec["constraint"])
    total = float(problem.covariance.trace())
    variance = np.asarray(result.metrics["additional_variance"], dtype=float)
    summary: dict[str, Any] = {
        "params": params,
        "variance": variance,
        "variance_ratio": variance / total if total > 0 else np.zeros_like(variance),
        "cpev": float(result.metrics["cpev"]),
        "total_variance": total,
        "nonzeros": np.count_nonzero(result.loadings, axis=0),
        "stopping_reason": str(result.stopping_reason),
    }
    for name in ("orthogonality_violation", "correlation_violation"):  # how redundant the components are
        if result.metrics.get(name) is not None:
            summary[name] = float(result.metrics[name])
    for name in ("bound", "gap"):
        values = result.metrics.get(name)
        if values is not None and all(v is not None and math.isfinite(v) for v in values):
            summary[name] = np.asarray(values, dtype=float)
    return summary


# -- simulated data -----------------------------------------------------------------------------------------
def simulated_counts(
    n_cells: int = 2000,
    n_genes: int = 1000,
    *,
    n_programs: int = 6,
    program_size: tuple[int, int] = (20, 30),
    active: float = 0.25,
    seed: int = 0,
) -> Any:
    r"""Simulated single-cell counts with known gene programs: an AnnData of raw counts (CSR, float32).

    Each program :math:`j` is a set :math:`G_j` of genes (disjoint, of sizes drawn in ``program_size``,
    chosen at random), and each cell :math:`c` has an activity :math:`a_{cj}` in each: 0, or with
    probability ``active`` a Gamma(4, 0.5) draw (mean 2), independently. Counts are Poisson,

    .. math::

        x_{cg} \sim \operatorname{Poisson}\Big(d_c\, b_g \big(1 + \textstyle\sum_j f_j\, a_{cj}\,
        [g \in G_j]\big)\Big),

    with a depth :math:`d_c` (log-normal, :math:`\sigma = 0.3`), a base rate :math:`b_g` (log-normal: median
    :math:`e^{-2}` and :math:`\sigma = 1.2` for the other genes; median :math:`e^{-1.5}` and :math:`\sigma = 0.6`
    for the programs' genes, detected in most active cells, and spread over the range of the others' means, so
    that scanpy's ``highly_variable_genes`` finds them among genes of the same mean) and a fold :math:`f_j` from
    6 down to 3 (the programs explain different variances). About a fifth of the counts are nonzero. Generated a block of cells at a time (memory: the counts' stored entries).

    Returns an AnnData with ``var["program"]`` (the program of each gene: ``"P1"``, ..., or ``"none"``),
    ``obs["program"]`` (each cell's most active program, ``"none"`` for a cell with none),
    ``obsm["program_activity"]`` (:math:`a`, ``n_cells x n_programs``) and gene names ``g0001``, ....
    """
    anndata = _anndata()
    import pandas as pd  # anndata's own dependency

    n_cells, n_genes = _check_count(n_cells, "n_cells"), _check_count(n_genes, "n_genes")
    n_programs = _check_count(n_programs, "n_programs")
    low, high = (int(v) for v in program_size)
    if not 1 <= low <= high or n_programs * high > n_genes:
        raise InvalidParameterError(
            f"program_size {program_size!r} must be (low, high) with 1 <= low <= high and n_programs * high <= "
            f"n_genes ({n_programs} x {high} > {n_genes})"
        )
    rng = np.random.default_rng(seed)
    sizes = rng.integers(low, high + 1, n_programs)
    order = rng.permutation(n_genes)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    programs = [np.sort(order[starts[j] : starts[j + 1]]) for j in range(n_programs)]
    base = np.exp(rng.normal(-2.0, 1.2, n_genes))
    program_genes = np.concatenate(programs)
    base[program_genes] = np.exp(rng.normal(-1.5, 0.6, program_genes.size))
    activity = (rng.random((n_cells, n_programs)) < active) * rng.gamma(4.0, 0.5, (n_cells, n_programs))
    fold = np.linspace(6.0, 3.0, n_programs)
    depth = np.exp(rng.normal(0.0, 0.3, n_cells))
    height = max(1, (1 << 25) // (8 * n_genes))
    blocks = []
    for start in range(0, n_cells, height):
        stop = min(n_cells, start + height)
        rate = depth[start:stop, None] * base[None, :]
        for j, genes in enumerate(programs):
            rate[:, genes] *= 1.0 + fold[j] * activity[start:stop, j : j + 1]
        blocks.append(sp.csr_matrix(rng.poisson(rate).astype(np.float32)))
    counts = sp.vstack(blocks, format="csr")
    labels = [f"P{j + 1}" for j in range(n_programs)]
    gene_program = np.full(n_genes, "none", dtype=object)
    for label, genes in zip(labels, programs):
        gene_program[genes] = label
    cell_program = np.where(activity.max(axis=1) > 0, np.array(labels, dtype=object)[activity.argmax(axis=1)], "none")
    width = len(str(n_genes))
    var = pd.DataFrame({"program": pd.Categorical(gene_program, categories=[*labels, "none"])},
                       index=[f"g{i + 1:0{width}d}" for i in range(n_genes)])  # fmt: skip
    obs = pd.DataFrame({"program": pd.Categorical(cell_program, categories=[*labels, "none"])},
                       index=[f"c{i + 1}" for i in range(n_cells)])  # fmt: skip
    adata = anndata.AnnData(counts, obs=obs, var=var)
    adata.obsm["program_activity"] = activity
    return adata
