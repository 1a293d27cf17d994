"""One door for inputs: how the data are read (:class:`InputOptions`) and what reading them gives (:func:`open_input`).

Every entry point that takes data - :func:`spcakit.fit`, :func:`spcakit.path`, :func:`spcakit.target_k`,
:func:`spcakit.cross_validate`, :class:`spcakit.SparsePCA` and :func:`spcakit.anndata.sparse_pca` (the command line
hands its matrix to these) - packs the keywords below into one :class:`InputOptions` and calls :func:`open_input`
once: complete data become the :class:`~spcakit.inputs.problem.Problem` the method runs on; data with missing values
(under ``missing="auto"`` or ``"em"``) come back as :class:`~spcakit.inputs.missing.MissingData` for the workflows'
EM (:mod:`spcakit.workflows.imputation`). A workflow over the rows (cross-validation's folds) asks for them too
(``rows=True``): a ``scipy.sparse`` or Dask matrix is then kept as read, its columns chosen, never densified.
"""

from __future__ import annotations

import os
from typing import Any

import attrs
import numpy as np

from spcakit.core.errors import InvalidParameterError, MissingValuesError
from spcakit.inputs import Covariance, as_problem, loaded_source, read_missing
from spcakit.inputs.checks import check_names, is_dask_array, is_scipy_sparse
from spcakit.inputs.columns import column_positions, name_list, unread_columns
from spcakit.inputs.datasets import load_source
from spcakit.inputs.missing import MissingData
from spcakit.inputs.problem import Problem
from spcakit.inputs.names import check_duplicate_names, duplicate_names_policy

#: What ``missing=`` may be: impute NaN with a warning, impute them silently, refuse them.
MISSING_MODES = ("auto", "em", "error")


def check_missing(missing: Any) -> str:
    """``missing`` checked: one of :data:`MISSING_MODES`, else :class:`~spcakit.core.errors.InvalidParameterError`."""
    if not isinstance(missing, str) or missing not in MISSING_MODES:
        raise InvalidParameterError(
            f"missing must be one of {', '.join(repr(m) for m in MISSING_MODES)} ('auto': impute NaN by EM with a "
            f"warning, 'em': the same without it, 'error': refuse NaN); got {missing!r}"
        )
    return missing


def error_text(message: str, options: str | None = None) -> str:
    """The message of a refusal of NaN under ``missing="error"``: the checks' message and the other ``options``."""
    options = options or ("missing='auto' (the default, with a warning) or missing='em' (--missing auto or em on the "
                          "command line)")
    return f"{message}; or let spcakit impute them by EM on the sparse low-rank model: {options}"


@attrs.frozen(kw_only=True)
class InputOptions:
    r"""How a user's data are read, the same for every entry point.

    Attributes
    ----------
    covariance
        Read a plain array (or DataFrame) as a covariance matrix.
    center
        Subtract the column means of a data matrix (``False``: the covariance is :math:`A^\top A/n` of the
        data as given).
    standardize
        Work on the correlation scale: divide each data column by its standard deviation (``n - 1`` in the
        denominator, as the covariance; the root mean square when ``center=False``), or turn a covariance
        into its correlation matrix. The result equals the method's result on the data's correlation matrix.
        Use it when the variables have different units.
    feature_names
        One name per variable (default: a DataFrame's columns, a CSV header, else ``x1, x2, ...``).
    columns, drop
        The variables to keep, or to leave out, by name (a name or a list): a DataFrame's, a CSV file's or
        ``feature_names``.
    sample_weight
        Observation weights: one non-negative number per row of a data matrix (frequency weights: integer
        weights fit what the data with repeated rows fit). Refused with a covariance.
    missing
        What to do with missing values (NaN entries, stored NaN of ``scipy.sparse`` data, empty or ``NA``
        cells of a CSV file): ``"auto"`` (the default) imputes them by EM on the sparse low-rank model
        (:mod:`spcakit.workflows.imputation`) with a :class:`~spcakit.core.errors.MissingValueWarning` saying
        the fraction missing; ``"em"`` does the same without the warning; ``"error"`` refuses them
        (:class:`~spcakit.core.errors.MissingValuesError`). Data without NaN are read exactly as without this
        option. Infinite entries, and NaN in a covariance or a Dask array, are refused always.
    duplicate_names
        Repeated variable names: ``"rename"`` makes the later ones ``NAME-1``, ``NAME-2``, ... with a
        :class:`~spcakit.inputs.names.DuplicateNamesWarning`; ``"error"`` refuses them
        (:class:`~spcakit.core.errors.InvalidDataError` listing at most five); ``None`` (the default): the policy
        around the call (:func:`~spcakit.inputs.names.duplicate_names_policy`), ``"rename"`` unless set.
    """

    covariance: bool = False
    center: bool = True
    standardize: bool = False
    feature_names: Any = None
    columns: Any = None
    drop: Any = None
    sample_weight: Any = None
    missing: str = "auto"
    duplicate_names: str | None = None

    def checked(self) -> InputOptions:
        """The options with ``standardize`` and ``missing`` checked (a :class:`~spcakit.core.errors.InvalidParameterError`
        naming the one that is wrong), ``standardize`` a plain ``bool``."""
        if not isinstance(self.standardize, (bool, np.bool_)):
            raise InvalidParameterError(f"standardize must be True or False; got {self.standardize!r}")
        if self.duplicate_names is not None:
            check_duplicate_names(self.duplicate_names)
        return attrs.evolve(self, standardize=bool(self.standardize), missing=check_missing(self.missing))


@attrs.frozen
class OpenedInput:
    """What :func:`open_input` read: the ``problem`` of complete data, or the ``incomplete`` data to impute (one
    of the two is ``None``), and the ``source`` the data came from."""

    problem: Problem | None
    incomplete: MissingData | None
    source: str
    #: With ``rows=True``: a ``scipy.sparse`` (canonical CSR) or Dask data matrix as read, its columns chosen, whose
    #: rows the workflow takes without densifying them; ``None`` otherwise (the problem's ``data`` are the rows).
    rows: Any = None
    #: With ``rows=True``: the source named a covariance matrix, which has no rows (nothing else was read).
    covariance_source: bool = False


def open_input(data: Any, options: InputOptions, *, rows: bool = False, missing_options: str | None = None) -> OpenedInput:
    """The problem of ``data`` (:func:`spcakit.inputs.as_problem`), or the data with missing values to impute.

    Under ``missing="auto"`` or ``"em"`` a file is read with a CSV's empty and ``NA`` cells as NaN, and data with
    NaN come back as :class:`~spcakit.inputs.missing.MissingData` (:func:`spcakit.inputs.read_missing`: a float64
    copy, the columns chosen as :func:`~spcakit.inputs.as_problem` chooses them); under ``"error"`` NaN are refused
    (:class:`~spcakit.core.errors.MissingValuesError`, the message naming the other options: ``missing_options``, or
    the Python API's). A covariance's missing entries are refused always. ``rows=True`` also keeps the rows a
    ``scipy.sparse`` or Dask matrix holds (:attr:`OpenedInput.rows`), and says when a source is a covariance matrix
    (:attr:`OpenedInput.covariance_source`) instead of reading it.
    """
    options = options.checked()
    if options.duplicate_names is None:  # the policy around the call
        return _open_input(data, options, rows=rows, missing_options=missing_options)
    with duplicate_names_policy(options.duplicate_names):
        return _open_input(data, options, rows=rows, missing_options=missing_options)


def _open_input(data: Any, options: InputOptions, *, rows: bool, missing_options: str | None) -> OpenedInput:
    if rows:
        return _open_rows(data, options, missing_options)
    source, covariance, feature_names = "", options.covariance, options.feature_names
    if options.missing != "error" and isinstance(data, (str, os.PathLike)):  # read here, a CSV's empty cells as NaN
        data, names, is_covariance, source = loaded_source(data, name_list(options.columns, "columns"),
                                                           name_list(options.drop, "drop"), missing=True)  # fmt: skip
        covariance, feature_names = covariance or is_covariance, feature_names or names
    return _problem_or_incomplete(data, options, covariance=covariance, names=feature_names, source=source,
                                  columns=options.columns, drop=options.drop, missing_options=missing_options)


def _open_rows(data: Any, options: InputOptions, missing_options: str | None) -> OpenedInput:
    """:func:`open_input` for a workflow over the rows: a source read once here (a CSV's empty cells as NaN unless
    ``missing="error"``), a ``scipy.sparse`` or Dask matrix made canonical and its columns chosen before the problem
    is made of it, so that the rows taken later are rows of the columns used."""
    matrix, names, source, chosen = data, options.feature_names, "", False
    columns, drop = options.columns, options.drop
    if not options.covariance:
        if isinstance(data, (str, os.PathLike)):  # read once here, as spcakit.as_problem would read it
            dataset = load_source(data, unread_columns(data, name_list(columns, "columns"), name_list(drop, "drop")),
                                  missing=options.missing != "error")  # fmt: skip
            if dataset.is_covariance:
                return OpenedInput(problem=None, incomplete=None, source=dataset.source, covariance_source=True)
            matrix, names, source = dataset.matrix, names or dataset.feature_names, dataset.source
        matrix, names, chosen = _rows_with_columns(matrix, names, columns, drop)
    held = matrix if is_scipy_sparse(matrix) or is_dask_array(matrix) else None
    return _problem_or_incomplete(matrix, options, covariance=options.covariance, names=names, source=source,
                                  columns=None if chosen else columns, drop=None if chosen else drop,
                                  missing_options=missing_options, rows=held)


def _problem_or_incomplete(
    data: Any, options: InputOptions, *, covariance: bool, names: Any, source: str, columns: Any, drop: Any,
    missing_options: str | None, rows: Any = None,
) -> OpenedInput:
    """The problem of ``data`` (:func:`~spcakit.inputs.as_problem`), or, when it holds NaN and ``missing`` is not
    ``"error"``, the data to impute, their columns chosen alike; a covariance's NaN are refused always."""
    try:
        problem = as_problem(data, covariance=covariance, center=options.center, standardize=options.standardize,
                             feature_names=names, columns=columns, drop=drop, weights=options.sample_weight,
                             source=source)  # fmt: skip
    except MissingValuesError as exc:
        if covariance or isinstance(data, Covariance):  # a covariance's missing entries are not imputed
            raise
        if options.missing == "error":
            if "missing='auto'" in str(exc):  # the message names the options already (a CSV file's)
                raise
            raise MissingValuesError(error_text(str(exc), missing_options)) from None
        incomplete = read_missing(data, names, name_list(columns, "columns"), name_list(drop, "drop"))
        return OpenedInput(problem=None, incomplete=incomplete, source=source)
    return OpenedInput(problem=problem, incomplete=None, source=source, rows=rows)


def _rows_with_columns(data: Any, names: Any, columns: Any, drop: Any) -> tuple[Any, Any, bool]:
    """``(matrix, names, chosen)``: a ``scipy.sparse`` matrix as a canonical CSR array and a Dask array as it is,
    each with the columns ``columns``/``drop`` chosen already (``chosen``); anything else as it is (``chosen``
    false), for :func:`~spcakit.inputs.as_problem` to check and choose its columns."""
    if is_scipy_sparse(data):
        from spcakit.numerics.operators import canonical_csr  # noqa: PLC0415 - scipy.sparse only for sparse input

        data = canonical_csr(data)  # the problem's own form: sparse_problem uses it without a copy
    elif not is_dask_array(data):
        return data, names, False
    if columns is not None or drop is not None:
        checked = check_names(names, int(data.shape[1]))
        chosen = column_positions(checked, name_list(columns, "columns"), name_list(drop, "drop"))
        if chosen != list(range(len(checked))):
            data = data[:, chosen]
            if is_scipy_sparse(data):
                data = canonical_csr(data, owned=True)
            names = [checked[j] for j in chosen]
    return data, names, True
