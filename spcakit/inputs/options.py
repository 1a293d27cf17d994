"""One door for inputs: how the data are read (:class:`InputOptions`) and what reading them gives (:func:`open_input`).

Every entry point that takes data - :func:`spcakit.fit`, :func:`spcakit.path`, :func:`spcakit.target_k` - packs
the keywords below into one :class:`InputOptions` and calls :func:`open_input` once: complete data become the
:class:`~spcakit.inputs.problem.Problem` the method runs on; data with missing values (under ``missing="auto"``
or ``"em"``) come back as :class:`~spcakit.inputs.missing.MissingData` for the workflows' EM
(:mod:`spcakit.workflows.imputation`).
"""

from __future__ import annotations

import os
from typing import Any

import attrs
import numpy as np

from spcakit.core.errors import InvalidParameterError, MissingValuesError
from spcakit.inputs import Covariance, as_problem, loaded_source, read_missing
from spcakit.inputs.columns import name_list
from spcakit.inputs.missing import MissingData
from spcakit.inputs.problem import Problem

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
    """

    covariance: bool = False
    center: bool = True
    standardize: bool = False
    feature_names: Any = None
    columns: Any = None
    drop: Any = None
    sample_weight: Any = None
    missing: str = "auto"

    def checked(self) -> InputOptions:
        """The options with ``standardize`` and ``missing`` checked (a :class:`~spcakit.core.errors.InvalidParameterError`
        naming the one that is wrong), ``standardize`` a plain ``bool``."""
        if not isinstance(self.standardize, (bool, np.bool_)):
            raise InvalidParameterError(f"standardize must be True or False; got {self.standardize!r}")
        return attrs.evolve(self, standardize=bool(self.standardize), missing=check_missing(self.missing))


@attrs.frozen
class OpenedInput:
    """What :func:`open_input` read: the ``problem`` of complete data, or the ``incomplete`` data to impute (one
    of the two is ``None``), and the ``source`` the data came from."""

    problem: Problem | None
    incomplete: MissingData | None
    source: str


def open_input(data: Any, options: InputOptions) -> OpenedInput:
    """The problem of ``data`` (:func:`spcakit.inputs.as_problem`), or the data with missing values to impute.

    Under ``missing="auto"`` or ``"em"`` a file is read with a CSV's empty and ``NA`` cells as NaN, and data with
    NaN come back as :class:`~spcakit.inputs.missing.MissingData` (:func:`spcakit.inputs.read_missing`: a float64
    copy, the columns chosen as :func:`~spcakit.inputs.as_problem` chooses them); under ``"error"`` NaN are refused
    (:class:`~spcakit.core.errors.MissingValuesError`, the message naming the other options). A covariance's missing
    entries are refused always.
    """
    options = options.checked()
    source, covariance, feature_names = "", options.covariance, options.feature_names
    if options.missing != "error" and isinstance(data, (str, os.PathLike)):  # read here, a CSV's empty cells as NaN
        data, names, is_covariance, source = loaded_source(data, name_list(options.columns, "columns"),
                                                           name_list(options.drop, "drop"), missing=True)  # fmt: skip
        covariance, feature_names = covariance or is_covariance, feature_names or names
    try:
        problem = as_problem(data, covariance=covariance, center=options.center, standardize=options.standardize,
                             feature_names=feature_names, columns=options.columns, drop=options.drop,
                             weights=options.sample_weight, source=source)  # fmt: skip
    except MissingValuesError as exc:
        if covariance or isinstance(data, Covariance):  # a covariance's missing entries are not imputed
            raise
        if options.missing == "error":
            if "missing='auto'" in str(exc):  # the message names the options already (a CSV file's)
                raise
            raise MissingValuesError(error_text(str(exc))) from None
        incomplete = read_missing(data, feature_names, name_list(options.columns, "columns"), name_list(options.drop, "drop"))
        return OpenedInput(problem=None, incomplete=incomplete, source=source)
    return OpenedInput(problem=problem, incomplete=None, source=source)
