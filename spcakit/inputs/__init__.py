r"""Inputs: what users pass, checked and turned into a :class:`~spcakit.inputs.problem.Problem` - one package.

What may be imported here: :mod:`spcakit.core`, :mod:`spcakit.numerics` and :mod:`spcakit.output`; the
problem record (:mod:`~spcakit.inputs.problem`) and the input record of a result
(:mod:`~spcakit.inputs.records`) live here.

:func:`as_problem` is the one place that dispatches on the kind of input: a problem or operator as it is,
a source string or path (:mod:`~spcakit.inputs.datasets`: built-in data sets, ``.npy``/``.npz``
(:mod:`~spcakit.inputs.numpy_files`), CSV (:mod:`~spcakit.inputs.csv_files`), ``.mtx``, Zarr), dense arrays
and DataFrames (:mod:`~spcakit.inputs.dense`), ``scipy.sparse`` data (:mod:`~spcakit.inputs.sparse`) and Dask
arrays (:mod:`~spcakit.inputs.dask_arrays`); the checks they share are :mod:`~spcakit.inputs.checks`, the
choice of columns :mod:`~spcakit.inputs.columns`.

:func:`as_problem` checks what users pass and says precisely what is wrong:
NaN or infinite entries (naming the column; NaN alone raise
:class:`~spcakit.core.errors.MissingValuesError`, which :func:`spcakit.fit` catches to impute them:
:mod:`spcakit.workflows.imputation`, with :func:`read_missing` and :func:`loaded_source` reading such data), an empty matrix, data whose
columns are all constant, a covariance that is not square, not symmetric, or
not positive semi-definite, values outside what double precision can square.

What counts as numbers
----------------------
Arrays (or nested lists) of floats, integers or booleans - ``True`` is 1 and
``False`` 0, as in NumPy - and pandas DataFrames whose columns are all numeric
or boolean: their column names become the variables' names (unless
``feature_names`` is given) and their index is ignored. Refused, each with a
message saying what to do instead: arrays of text, dates, times, records or
Python objects that are not numbers; a DataFrame's non-numeric columns (by
name); a pandas Series (one variable); masked arrays with masked entries;
complex numbers; a ``scipy.sparse`` covariance matrix (the message gives
the size ``.toarray()`` would take). A ``scipy.sparse`` *data* matrix (any
format, matrix or array) is accepted and never densified: see
:mod:`spcakit.inputs.sparse`; so is a ``dask.array.Array`` data matrix, read in
chunks: see :mod:`spcakit.inputs.dask_arrays`. spcakit never imports pandas: a DataFrame is
recognised by its class, a sparse matrix by ``scipy.sparse`` being imported.

Double precision
----------------
Data :math:`A` (``n x p``) give the covariance :math:`C = A_c^\top A_c / s` of
their centred copy :math:`A_c` (:math:`s = n - 1`, or :math:`n` uncentred).
The Gram matrix's entries are bounded by
:math:`|a_j^\top a_k| \le \|a_j\|\|a_k\| \le \|A_c\|_F^2`, and every product a
method forms, :math:`A_c^\top (A_c v)` for a unit :math:`v`, by
:math:`\|A_c\|_F^2` as well. So data are refused, before anything of size
:math:`p \times p` is formed or any product taken, when
:math:`\|A_c\|_F^2 >` :data:`GRAM_LIMIT` (the norms are computed from columns
scaled to at most 1, so they do not overflow themselves), and when a column's
variance :math:`\|a_j\|^2/s` is below the smallest normal double (its square
underflows). The column means are formed without overflow; values so close to
the largest double that centring overflows are refused. An explicit covariance
is refused when :math:`p \max_{ij}|c_{ij}| >` :data:`GRAM_LIMIT`, which bounds
:math:`\|Cv\|` for unit :math:`v`. Rescaling by a power of 10 brings such data
into range; so does ``standardize=True``, which divides every data column by
its standard deviation measured on the column scaled to at most 1, so that
nothing that could overflow is ever squared (see :func:`data_problem`).

Constant columns
----------------
A column with zero variance - constant relative to its own magnitude (its
centred values at most :math:`10^{-12}` of its largest value, so that data of
any scale, :math:`10^{-13}` or :math:`10^{150}`, are not called constant), an
all-zero column of ``scipy.sparse`` data, a zero diagonal entry of a
covariance - is welcome, as in scikit-learn: it gets a zero loading in every
component, and :func:`spcakit.fit` names it in a
:class:`~spcakit.core.errors.ConstantColumnWarning` (and in ``Result.warnings``).
The method runs on the columns that vary alone (:attr:`Problem.varying`,
:func:`with_constant_columns`), exactly as if they had been the data, and the
loadings are re-embedded into all ``p`` rows; so every parameter that depends
on ``p`` (the default threshold :math:`1/\sqrt p`, λ as a number of zeros
for ``sparsity``) refers to the :math:`p'` columns that vary, ``k`` above
:math:`p'` is lowered to :math:`p'` (with a warning), and ``r`` must be at
most :math:`p'`. With ``standardize=True`` such a column is divided by 1 (its
recorded scale), not by zero. Data whose columns are all constant are refused.

Choosing columns
----------------
``columns=`` keeps the named columns and ``drop=`` removes some (an ID or
label column): a DataFrame is cut before its values are read, so the
non-numeric columns it drops never need to be numbers. A misspelt name is
refused with the closest names (:func:`column_positions`).

Sizes, files and text
---------------------
What a file declares is checked before it is believed (:mod:`~spcakit.inputs.limits`: at most
:data:`~spcakit.inputs.limits.MAX_VARIABLES` variables, and an estimate of the memory needed against
what is available); only regular files and named pipes are read, and nothing is written inside an input
(:mod:`~spcakit.inputs.files`); JSON and TOML a user feeds are parsed within limits on nesting and number
length (:mod:`~spcakit.core.documents`).

One pass of checks
------------------
Dense data are checked in one pass over their rows, a block of a few MiB
at a time (:func:`spcakit.inputs.checks.scan_rows`): whether every entry is
finite, each column's extremes (for the range checks and constant columns),
each column's sum (for the means) and the content hash are all taken from
each block while it is in the cache; no copy of the data is made (a
Fortran-ordered array is copied to C order for the hash one block at a
time). The covariance is then formed in a second pass, which needs the
means; on 50 000 x 500 data the first pass takes 0.03 s without the hash and
0.17 s with it, the covariance 0.42 s.

The record
----------
Every problem built here carries an :class:`~spcakit.inputs.records.InputRecord`
(``problem.input``): the kind and shape of the matrix, its content hash
(:func:`content_sha256`), the centring and standardisation applied, the
column means and scales. :func:`spcakit.fit` puts it in the result.

The hash is SHA-256, as before (the same numbers give the same digest as in
earlier versions). It runs far below memory speed - about 1.5 GB/s with
SHA instructions, a third of that without; BLAKE2b is no faster (0.6 GB/s) -
so a dense matrix (data or covariance) of more than
:data:`spcakit.inputs.checks.HASH_LIMIT` bytes (256 MiB: 0.17 s of hashing)
is not hashed: ``input.sha256`` is ``None`` (``null`` in the JSON output)
and ``input.sha256_skipped`` says why;
``spcakit.inputs.checks.content_sha256(x)`` hashes a matrix of any size.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from spcakit.core.errors import InvalidParameterError
from spcakit.inputs.checks import check_names, is_dask_array, is_scipy_sparse, pandas_class
from spcakit.inputs.columns import name_list, selected_columns, unread_columns
from spcakit.inputs.datasets import load_source
from spcakit.inputs.dense import Covariance, covariance_problem, data_problem
from spcakit.inputs.missing import MissingData, dense_missing
from spcakit.numerics.operators import CovarianceOperator
from spcakit.inputs.problem import Problem
from spcakit.inputs.records import InputRecord

__all__ = ["Covariance", "as_problem", "covariance_problem", "data_problem", "loaded_source", "read_missing"]


def loaded_source(
    data: str | os.PathLike[str], columns: Sequence[str] | None, drop: Sequence[str] | None, *, missing: bool = False
) -> tuple[object, tuple[str, ...] | None, bool, str]:
    """A source (a path or ``builtin:``) read as :func:`as_problem` reads it: ``(matrix, names, is_covariance,
    source)``; with ``missing``, a CSV's empty and ``NA`` cells come back as NaN (for :mod:`spcakit.workflows.imputation`).
    :func:`as_problem` given the matrix, names and source then builds exactly the problem it builds from the path.
    A ``.npy`` file is mapped read-only (see :func:`~spcakit.inputs.datasets.load_source`), as :func:`as_problem` maps it."""
    dataset = load_source(data, unread_columns(data, columns, drop), missing=missing, mapped=True)
    return dataset.matrix, dataset.feature_names, dataset.is_covariance, dataset.source


def read_missing(
    matrix: object, names: Sequence[str] | None, columns: Sequence[str] | None = None, drop: Sequence[str] | None = None
) -> MissingData:
    """A data matrix with missing values (NaN; stored NaN of ``scipy.sparse`` data) as
    :class:`~spcakit.inputs.missing.MissingData` for :mod:`spcakit.workflows.imputation`: a float64 copy (dense, or CSR
    never densified), its columns chosen by ``columns``/``drop`` as :func:`as_problem` chooses them."""
    if is_scipy_sparse(matrix):
        from spcakit.inputs.sparse import sparse_missing  # noqa: PLC0415 - scipy.sparse only for sparse input

        return sparse_missing(matrix, names, columns, drop)
    return dense_missing(matrix, names, columns, drop)


def refuse_anndata(data: object, what: str) -> None:
    """Refuse an AnnData, recognised by its class (anndata is never imported here), pointing to
    :func:`spcakit.anndata.sparse_pca`; called before anything tries to read it as a matrix (which took
    10-24 s on a few thousand cells, then failed). The matrix of a view (``adata[cells].X``, anndata's own array
    and sparse view classes) is a matrix, and is taken as one."""
    if type(data).__module__.split(".")[0] != "anndata" or not any(c.__name__ == "AnnData" for c in type(data).__mro__):
        return
    from spcakit.core.errors import InvalidDataError  # noqa: PLC0415 - only for this refusal

    raise InvalidDataError(
        f"{what} takes a matrix, not an AnnData: use spcakit.anndata.sparse_pca(adata, n_components=..., k=...), "
        "which fits adata.X (or a layer; the highly variable genes when marked) without densifying it, keeps the "
        "gene names and writes obsm['X_spca'], varm['spca_loadings'] and uns['spca']; or pass the matrix adata.X"
    )


def as_problem(
    data: object,
    *,
    covariance: bool = False,
    center: bool = True,
    standardize: bool = False,
    feature_names: Sequence[str] | None = None,
    columns: Sequence[str] | str | None = None,
    drop: Sequence[str] | str | None = None,
    source: str = "",
    weights: object = None,
) -> Problem:
    """Turn what a user passed into a :class:`Problem`.

    ``data`` may be a :class:`Problem`, a :class:`Covariance`, a
    :class:`~spcakit.numerics.operators.CovarianceOperator`, a source as the CLI's
    ``--data`` takes (``"builtin:pitprops"``, a ``.npy``/``.npz``/``.csv``/
    ``.tsv`` path, as a string or a :class:`pathlib.Path`), or a table: a
    NumPy array, nested lists or a pandas DataFrame (whose column names become
    the variables' names) - a data matrix by default, a covariance matrix when
    ``covariance=True``. Booleans count as 0 and 1; text, dates, Python objects,
    a pandas Series and ``scipy.sparse`` covariance matrices are refused with
    :class:`~spcakit.core.errors.InvalidDataError` (see the module's description);
    a ``scipy.sparse`` data matrix (or a sparse ``.npz``/``.mtx`` file) is
    taken as it is, never densified (:func:`spcakit.inputs.sparse.sparse_problem`),
    and a ``dask.array.Array`` data matrix (or a ``.zarr`` store) is read in
    chunks, never whole (:func:`spcakit.inputs.dask_arrays.dask_problem`).

    ``standardize=True`` works on the correlation scale: data columns are
    scaled to unit variance, a covariance becomes its correlation matrix
    (see :func:`data_problem`, :func:`covariance_problem`).

    ``columns`` keeps only the named columns (in that order), ``drop`` removes
    the named ones - an ID or label column, say; a DataFrame's non-numeric
    columns must be dropped so. Names are a DataFrame's column labels (as
    text), ``feature_names``, a file's header, or the default names (``x1``,
    ``x2``, ..., zero-padded to one width: ``x01`` from ten columns on); for a
    covariance matrix the rows go with the columns.
    A Problem or an operator is used as it is: it takes neither.

    ``weights`` are observation (row) weights for a data matrix: frequency
    weights, so that integer weights give exactly the result of repeated rows
    (see :func:`data_problem`; ``scipy.sparse`` and Dask data take them too); a
    covariance, a Problem or an operator with weights is refused.
    """
    refuse_anndata(data, "spcakit")
    column_names, dropped = name_list(columns, "columns"), name_list(drop, "drop")
    selecting = column_names is not None or dropped is not None
    if isinstance(data, Problem) or (
        not isinstance(data, np.ndarray) and pandas_class(data) is None and isinstance(data, CovarianceOperator)
    ):
        if selecting or standardize:
            given = ", ".join(k for k, v in (("columns", column_names), ("drop", dropped), ("standardize", standardize)) if v)
            kind = "spcakit.Problem" if isinstance(data, Problem) else "covariance operator"
            raise InvalidParameterError(
                f"a {kind} is used as it is, so {given} cannot apply to it; pass the data matrix or the covariance "
                "matrix itself (as an array, DataFrame, spcakit.Covariance or file) to have it standardised or its "
                "columns chosen"
            )
        if weights is not None:
            raise InvalidParameterError(
                "observation weights (sample_weight) apply to the rows of a data matrix; a spcakit.Problem or a "
                "covariance operator has no rows: pass the data matrix itself with its weights"
            )
        if isinstance(data, Problem):
            return data
        record = InputRecord(kind="operator", shape=(data.p, data.p), sha256=None, center=None)
        return Problem(data, check_names(feature_names, data.p), None, source, record)
    if isinstance(data, (str, os.PathLike)):
        dataset = load_source(data, unread_columns(data, column_names, dropped), mapped=True)
        covariance = covariance or dataset.is_covariance
        matrix: object = dataset.matrix
        names = feature_names or dataset.feature_names
        source = dataset.source
    elif isinstance(data, Covariance):
        covariance, matrix, names = True, data.matrix, feature_names or data.feature_names
    else:
        matrix, names = data, feature_names
    if weights is not None and covariance:
        raise InvalidParameterError(
            "observation weights (sample_weight, --weights) apply to the rows of a data matrix, but the input is a "
            "covariance matrix; pass the data matrix itself with its weights, or weight the covariance before"
        )
    if not covariance and is_scipy_sparse(matrix):
        from spcakit.inputs.sparse import sparse_problem  # noqa: PLC0415 - scipy.sparse only for sparse input

        return sparse_problem(matrix, names, center=center, standardize=standardize, source=source,
                              columns=column_names, drop=dropped, weights=weights)  # fmt: skip
    if not covariance and is_dask_array(matrix):
        from spcakit.inputs.dask_arrays import dask_problem  # noqa: PLC0415 - dask only for dask input

        return dask_problem(matrix, names, center=center, standardize=standardize, source=source,
                            columns=column_names, drop=dropped, weights=weights)  # fmt: skip
    if selecting:
        matrix, chosen = selected_columns(matrix, covariance, names, column_names, dropped)
        names = chosen if chosen is not None else names
    if covariance:
        return covariance_problem(matrix, names, source, standardize=standardize)
    return data_problem(matrix, names, center=center, standardize=standardize, source=source, weights=weights)
