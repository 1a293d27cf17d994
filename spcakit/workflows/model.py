r"""A fitted model on disk: what ``spcakit transform`` needs to score new data.

``spcakit run ... --save-model model.json`` writes a :class:`Model`;
``spcakit transform model.json --data new.csv`` reads it and scores the rows of
the new data. A model is the loadings :math:`X` (``p x r``), the training
data's column means :math:`\mu` and standard deviations :math:`\sigma` (when
they were centred and standardised), the variables' and components' names, and
where it came from (method, spec, seed, spcakit version, the training input's
shape and content hash). Scoring is plain NumPy (:meth:`Model.transform`): the
command line never needs scikit-learn, and gives the scores of
``spcakit.SparsePCA.transform`` for the same fit.

One module, a little above the 600 lines the others keep to: the file format, its checks on
reading, and the scoring that depends on both are one thing, read together.

The file
--------
One JSON object (UTF-8), format version :data:`FORMAT_VERSION`:

=================== ========================================================================
key                 value
=================== ========================================================================
``format``          ``"spcakit-model"``
``format_version``  ``1``
``spcakit_version`` the version that wrote it, e.g. ``"0.1.0"``
``method``          the method's name (``"composed"`` for ``spcakit compose``)
``spec``            the full composition that ran (as in ``spcakit run --json``)
``seed``            the run's seed (an integer), or ``null``
``feature_names``   the ``p`` variables, in the loadings' row order (unique)
``component_names`` the ``r`` components, ``"PC1"``, ``"PC2"``, ... (the scores' header)
``loadings``        ``p`` rows of ``r`` finite numbers
``mean``            ``p`` finite numbers subtracted before scoring, or ``null`` (not centred)
``scale``           ``p`` positive numbers divided by (``--standardize``), or ``null``
``input``           the training input: ``kind`` (``"data"``), ``shape`` ``[n, p]``,
                    ``center``, ``standardize``, ``sha256`` (as in ``spcakit run --json``)
=================== ========================================================================

Numbers are written as Python's shortest round-trip decimals, so a model read
back equals the model written bit for bit. Anything else - another format,
a newer format version, a missing or unknown key, a ragged or mis-sized array,
NaN or infinite values, a scale that is not positive, ``mean``/``scale`` that
disagree with ``input.center``/``input.standardize`` - is refused with a
:class:`~spcakit.core.errors.SpecError` naming the key; a file that is not JSON
(truncated, say) with an :class:`~spcakit.core.errors.InvalidDataError`.

New data
--------
Columns are matched **by name** when the new data have names (a CSV header, an
``.npz`` names array, a DataFrame's columns, or ``feature_names=``), in any
order: they are put in the model's order. A variable of the model that the new
data lack is refused by name (with the closest names the data do have); a
column the model does not know is refused too, by name - it may be a label,
an ID, or a sign that the file is not the one meant - unless it is left out
with ``drop=`` (``--drop``) or the columns to use are chosen with ``columns=``
(``--columns``). Unnamed data (``.npy``, plain arrays) are taken in the
model's column order and must have exactly ``p`` columns (after ``columns=``/
``drop=``, which then use the default names ``x1``, ``x2``, ...). NaN and
infinite entries in the columns used are refused.
"""

from __future__ import annotations

import difflib
import json
import math
import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from spcakit.core.version import __version__
from spcakit.core.errors import InvalidDataError, InvalidParameterError, MissingValuesError, SpecError, listed
from spcakit.output.files import check_output, write_output
from spcakit.inputs.checks import check_matrix, is_scipy_sparse, label_text, pandas_class, numeric_array
from spcakit.inputs.columns import column_positions
from spcakit.core.documents import load_json
from spcakit.inputs.files import check_outside_inputs, data_file_kind
from spcakit.inputs.problem import default_feature_names
from spcakit.core.schema import Anything, Bool, Field, Int, Invalid, ListOf, Number, OneOf, Str, Table, TableOf, validate
from spcakit.inputs.records import InputRecord, MissingRecord
from spcakit.workflows.results import Result

__all__ = ["FORMAT", "FORMAT_VERSION", "Model", "regression_map"]

#: The ``format`` marker of a model file.
FORMAT = "spcakit-model"
#: The model file format this spcakit writes and reads.
FORMAT_VERSION = 1


# -- the math ----------------------------------------------------------------------------------------------
def regression_map(loadings: np.ndarray) -> tuple[np.ndarray, int]:
    r"""The ``p x r`` matrix :math:`W` that maps centred, scaled rows to their scores, and the rank of the loadings.

    Sparse loadings :math:`X` (``p x r``) are in general not orthogonal, so the
    projection :math:`\tilde A X` of the centred, scaled rows
    :math:`\tilde A = (A - \mathbf 1\mu^\top)\,\operatorname{diag}(\sigma)^{-1}`
    would mix the components. The scores are instead the least-squares
    coefficients of each row on the loadings,

    .. math:: S = \arg\min_S \|\tilde A - S X^\top\|_F
              = \tilde A\, X (X^\top X)^{+} = \tilde A\, (X^{+})^\top,
              \qquad W = (X^{+})^\top = X (X^\top X)^{+},

    so that :math:`S X^\top = \tilde A\, X X^{+}` is the orthogonal projection
    of the rows onto :math:`\operatorname{span}(X)`: the best reconstruction
    from these loadings. For orthonormal loadings (PCA) :math:`W = X`, the
    usual projection. When the loadings are linearly dependent (rank below
    :math:`r`, two equal loadings say) the pseudo-inverse gives the
    minimum-norm least-squares scores, and the reconstruction is still the
    projection onto their span.

    :math:`W` is computed from the thin SVD :math:`X = U \Sigma V^\top` as
    :math:`U \Sigma^{+} V^\top`; singular values at or below
    :math:`\max(p, r)\,\varepsilon\,\sigma_{\max}` count as zero (NumPy's
    ``pinv``/``matrix_rank`` rule), and their number gives the rank.

    Parameters
    ----------
    loadings : ndarray of shape (p, r)

    Returns
    -------
    map : ndarray of shape (p, r)
        :math:`W`, C-contiguous.
    rank : int
        The rank of the loadings.
    """
    u, singular, vt = np.linalg.svd(loadings, full_matrices=False)
    kept = singular > singular.max(initial=0.0) * max(loadings.shape) * np.finfo(float).eps
    inverse = np.divide(1.0, singular, out=np.zeros_like(singular), where=kept)
    return np.ascontiguousarray((u * inverse) @ vt), int(kept.sum())


# -- the record --------------------------------------------------------------------------------------------
def _arrays_equal(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    if a is None or b is None:
        return a is b
    return a.shape == b.shape and bool(np.array_equal(a, b))


def _frozen_array(value: Any) -> np.ndarray:
    array = np.array(value, dtype=float, copy=True)
    array.setflags(write=False)
    return array


def _frozen_optional(value: Any) -> np.ndarray | None:
    return None if value is None else _frozen_array(value)


def _names(value: Iterable[Any]) -> tuple[str, ...]:
    return tuple(str(name) for name in value)


_ARRAY_EQ = attrs.cmp_using(eq=_arrays_equal)


def _listed(names: Sequence[str]) -> str:
    return listed(names, repr)


def _repeated(names: Sequence[str]) -> list[str]:
    """The names that occur more than once, sorted."""
    return sorted(name for name, count in Counter(names).items() if count > 1)


#: Smallest scale (column standard deviation) a model may hold: what the fit's range check allows
#: (:func:`spcakit.inputs.checks.check_double_range`: the variance must be a normal double).
_SMALLEST_SCALE = math.sqrt(float(np.finfo(float).tiny))


def _consistency_problem(model: Model) -> str | None:
    """What makes ``model``'s parts disagree with each other (shapes, values, flags), or ``None``."""
    loadings, p = model.loadings, len(model.feature_names)
    if loadings.ndim != 2 or loadings.shape[0] == 0 or loadings.shape[1] == 0:
        return f"loadings must be a non-empty p x r matrix (one row per variable); got shape {loadings.shape}"
    if loadings.shape[0] != p:
        return (
            f"loadings has {loadings.shape[0]} rows but feature_names has {p} names; "
            "the loadings have one row per variable"
        )
    r = loadings.shape[1]
    if len(model.component_names) != r:
        return (
            f"component_names has {len(model.component_names)} names but the loadings have {r} columns; "
            "give one name per component"
        )
    for what, names in (("feature_names", model.feature_names), ("component_names", model.component_names)):
        repeated = _repeated(names)
        if repeated:
            return f"{what} must be unique (columns are matched by name); repeated: {_listed(repeated)}"
    if not np.all(np.isfinite(loadings)):
        return "loadings must be finite numbers; they hold NaN or infinite values"
    for what, vector in (("mean", model.mean), ("scale", model.scale)):
        if vector is None:
            continue
        if vector.shape != (p,):
            return f"{what} must have one entry per variable (p = {p}); got shape {vector.shape}"
        if not np.all(np.isfinite(vector)):
            return f"{what} must be finite numbers; it holds NaN or infinite values"
    if model.scale is not None and not np.all(model.scale > 0):
        bad = [model.feature_names[j] for j in np.nonzero(~(model.scale > 0))[0]]
        return f"scale must be positive (the columns' standard deviations); not so for {_listed(bad)}"
    if model.scale is not None and not np.all(model.scale >= _SMALLEST_SCALE):
        small = np.nonzero(~(model.scale >= _SMALLEST_SCALE))[0]
        shown = listed(small, lambda j: f"{model.feature_names[j]!r} ({model.scale[j]:.3g})")
        return (
            f"scale must be at least {_SMALLEST_SCALE:.3g} (the columns' standard deviations: smaller ones are refused "
            f"when fitting, their variances underflow, and dividing by them overflows); not so for {shown}"
        )
    empty = np.nonzero(~np.any(loadings != 0, axis=0))[0]
    if empty.size:
        return (
            f"the loadings of {_listed([model.component_names[j] for j in empty])} are all zero: such a component "
            "scores every row as 0, and no fit gives one (each loading has unit length)"
        )
    record = model.input
    if record.kind != "data":
        return (
            f"input.kind must be 'data' (a model scores data rows, so it comes from a fit to a data matrix); "
            f"got {record.kind!r}"
        )
    if len(record.shape) != 2 or record.shape[1] != p:
        return f"input.shape must be [n, p] with p = {p} (the training data's shape); got {list(record.shape)}"
    if bool(record.center) != (model.mean is not None):
        return (
            f"input.center is {str(record.center).lower()} but mean is {'given' if model.mean is not None else 'null'}; "
            "the column means are given exactly when the training data were centred"
        )
    if record.standardize != (model.scale is not None):
        return (
            f"input.standardize is {str(record.standardize).lower()} but scale is "
            f"{'given' if model.scale is not None else 'null'}; the scales are given exactly when the training "
            "data were standardised"
        )
    return None


@attrs.frozen(kw_only=True)
class Model:
    r"""What scores new data: loadings, centring and scaling, names, and where they came from.

    Make one with :meth:`from_result`, write it with :meth:`save`, read it with
    :meth:`load`, score data with :meth:`transform`. The arrays are read-only
    copies. Parts that disagree (shapes, names, NaN, a scale that is not
    positive, flags of ``input`` that contradict ``mean``/``scale``) are
    refused with :class:`~spcakit.core.errors.InvalidDataError`.

    Attributes
    ----------
    method
        Name of the method that computed the loadings.
    spec
        The full composition that ran, as a plain dictionary.
    feature_names
        The ``p`` variables, in the loadings' row order.
    component_names
        The ``r`` components (the scores' column names).
    loadings
        ``p x r``.
    mean
        Column means :math:`\mu` of the training data, subtracted from new
        rows; ``None`` when the training data were not centred.
    scale
        Column standard deviations :math:`\sigma` new rows are divided by,
        when the training data were standardised; else ``None``.
    input
        The training input's record (kind, shape, content hash, flags; its
        ``mean``/``scale`` are this model's).
    seed
        The seed of the run.
    spcakit_version
        The spcakit version that computed the loadings.
    format_version
        The model file format (:data:`FORMAT_VERSION`).
    """

    method: str
    spec: dict[str, Any] = attrs.field(factory=dict)
    feature_names: tuple[str, ...] = attrs.field(converter=_names)
    component_names: tuple[str, ...] = attrs.field(converter=_names)
    loadings: np.ndarray = attrs.field(converter=_frozen_array, eq=_ARRAY_EQ)
    mean: np.ndarray | None = attrs.field(default=None, converter=_frozen_optional, eq=_ARRAY_EQ)
    scale: np.ndarray | None = attrs.field(default=None, converter=_frozen_optional, eq=_ARRAY_EQ)
    input: InputRecord
    seed: int | None = None
    spcakit_version: str = __version__
    format_version: int = FORMAT_VERSION

    def __attrs_post_init__(self) -> None:
        problem = _consistency_problem(self)
        if problem is not None:
            raise InvalidDataError(f"the model's parts do not fit together: {problem}")

    @property
    def p(self) -> int:
        return int(self.loadings.shape[0])

    @property
    def r(self) -> int:
        return int(self.loadings.shape[1])

    # -- from a result -------------------------------------------------------------------------------------
    @classmethod
    def from_result(cls, result: Result) -> Model:
        """The model of a :class:`~spcakit.workflows.results.Result` fitted to a data matrix.

        A result fitted to a covariance matrix or operator has no column means,
        so no new rows can be scored with it: refused with
        :class:`~spcakit.core.errors.InvalidParameterError`.
        """
        record = result.input
        if record is None or record.kind != "data":
            what = "an unknown input (a Problem built by hand)" if record is None else f"a {record.kind} matrix"
            if record is not None and record.kind == "operator":
                what = "a covariance operator"
            raise InvalidParameterError(
                f"a model scores new data rows, so it needs a fit to a data matrix (n samples x p variables) whose "
                f"column means it records; this result was fitted to {what}: fit the data matrix itself"
            )
        return cls(
            method=result.method, spec=dict(result.spec), feature_names=result.feature_names,
            component_names=result.component_names, loadings=result.loadings, mean=record.mean,
            scale=record.scale, input=record, seed=result.seed, spcakit_version=result.version or __version__,
        )  # fmt: skip

    # -- scoring -------------------------------------------------------------------------------------------
    def transform(
        self,
        data: Any,
        feature_names: Sequence[str] | None = None,
        *,
        columns: Sequence[str] | str | None = None,
        drop: Sequence[str] | str | None = None,
    ) -> np.ndarray:
        r"""The scores of the rows of ``data`` (``n x r``): :math:`S = (A - \mu)/\sigma \cdot W`.

        :math:`W` is :func:`regression_map` of the loadings (least-squares
        regression onto their span); :math:`\mu` is left out when the model
        was not centred, :math:`\sigma` when it was not standardised. These are
        the scores of ``spcakit.SparsePCA.transform`` for the same fit.

        Parameters
        ----------
        data
            ``n x m`` numbers: an array, nested lists or a DataFrame (whose
            column names are used), as :func:`spcakit.fit` takes them.
        feature_names
            The names of ``data``'s columns (instead of a DataFrame's).
        columns, drop
            Use only the named columns / leave the named ones out (see the
            module's description: how columns are matched to the model's).

        Raises
        ------
        InvalidDataError
            Columns missing or unknown to the model (by name), a wrong number
            of unnamed columns, infinite entries, non-numeric data. (A row with NaN
            entries is scored from its observed entries alone, by least squares:
            :func:`spcakit.workflows.imputation.observed_scores`; a row with none observed
            gets scores 0. In ``scipy.sparse`` data NaN are refused.)
        InvalidParameterError
            ``columns``/``drop`` naming columns the data do not have.
        """
        if is_scipy_sparse(data):  # kept sparse: (X - 1 mu^T) W = X W - 1 (mu^T W)
            from spcakit.numerics.operators import canonical_csr

            matrix = canonical_csr(data, "the new data")
            names = None if feature_names is None else tuple(str(name) for name in feature_names)
            positions = self.columns_of(names, int(matrix.shape[1]), columns=columns, drop=drop)
            picked = matrix[:, positions]
            if not np.all(np.isfinite(picked.data)):
                raise InvalidDataError("the new data have NaN or infinite entries; all entries must be finite numbers")
            return self.scores(picked)
        table, n_columns, names = _table(data, feature_names)
        positions = self.columns_of(names, n_columns, columns=columns, drop=drop)
        picked = table.iloc[:, positions] if pandas_class(table) == "DataFrame" else table[:, positions]
        try:
            rows, _ = check_matrix(picked, "the new data", self.feature_names)
        except MissingValuesError:  # NaN only: each incomplete row scored from its observed entries
            from spcakit.workflows.imputation import observed_scores  # noqa: PLC0415
            from spcakit.inputs import read_missing  # noqa: PLC0415

            rows = read_missing(picked, self.feature_names).matrix
            incomplete = np.isnan(rows).any(axis=1)
            scores = np.zeros((rows.shape[0], self.r))
            scores[~incomplete] = self.scores(rows[~incomplete])
            scores[incomplete] = observed_scores(rows[incomplete], self.loadings, self.mean, self.scale)
            return scores
        return self.scores(rows)

    def scores(self, rows: Any) -> np.ndarray:
        """The scores of ``rows``, an ``n x p`` float array (or ``scipy.sparse`` matrix, never densified) whose
        columns are the model's variables in order."""
        regression, _ = regression_map(self.loadings)
        if self.scale is not None:
            regression = regression / self.scale[:, None]
        with np.errstate(over="ignore", invalid="ignore"):
            if is_scipy_sparse(rows):
                scores = np.asarray(rows @ regression)
                if self.mean is not None:
                    scores = scores - self.mean @ regression
            else:
                centred = rows if self.mean is None else rows - self.mean
                scores = centred @ regression
        if not np.all(np.isfinite(scores)):
            raise InvalidDataError(
                "the new data's values are too large for double precision once centred and scaled (the scores "
                "overflow); rescale the data as the training data were, or check that it is the data meant"
            )
        return scores

    def columns_of(
        self,
        names: Sequence[str] | None,
        n_columns: int,
        *,
        columns: Sequence[str] | str | None = None,
        drop: Sequence[str] | str | None = None,
    ) -> list[int]:
        """The positions in the new data of the model's variables, in the model's order.

        ``names`` are the new data's column names (``None``: unnamed, taken in the
        model's order); ``columns``/``drop`` choose among them first (unnamed
        columns are called ``x1``, ``x2``, ... there). See the module's
        description for the rules.
        """
        named = names is not None
        table_names = tuple(names) if named else default_feature_names(n_columns)  # type: ignore[arg-type]
        if len(table_names) != n_columns:
            raise InvalidDataError(
                f"got {len(table_names)} column names for new data with {n_columns} columns; give one name per column"
            )
        selecting = columns is not None or drop is not None
        chosen = column_positions(table_names, _name_tuple(columns), _name_tuple(drop)) if selecting else list(range(n_columns))
        if not named:
            if len(chosen) != self.p:
                selected = " (after columns/drop)" if selecting else ""
                raise InvalidDataError(
                    f"the new data have {len(chosen)} columns{selected} but the model has p = {self.p} variables; "
                    "data without column names are taken in the model's column order and need exactly p columns "
                    f"({_listed(self.feature_names)}); give a file with a header (CSV) or names (.npz) to match "
                    "columns by name"
                )
            return chosen
        picked = [table_names[j] for j in chosen]
        repeated = _repeated(picked)
        if repeated:
            raise InvalidDataError(
                f"the new data name more than one column {_listed(repeated)}; columns are matched to the model's "
                "variables by name, so each name must be unique (leave the copies out with drop/--drop)"
            )
        known = set(self.feature_names)
        missing = [name for name in self.feature_names if name not in set(picked)]
        extra = [name for name in picked if name not in known]
        if missing:
            def hint(name: str) -> str:
                close = difflib.get_close_matches(name, extra or picked, n=1, cutoff=0.6)
                return f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else "")

            raise InvalidDataError(
                f"the new data lack {len(missing)} of the model's {self.p} variables: {listed(missing, hint)}; "
                "columns are matched by name, so the new data need a column for every variable the model was "
                f"fitted to ({_listed(self.feature_names)})"
            )
        if extra:
            joined = ",".join(extra)
            raise InvalidDataError(
                f"the new data have {len(extra)} column(s) the model was not fitted to: {_listed(extra)}; leave them "
                f"out (--drop {joined!r} on the command line, drop=[...] in Model.transform) or choose the model's "
                "columns (--columns / columns=[...])"
            )
        position = {table_names[j]: j for j in chosen}
        return [position[name] for name in self.feature_names]

    # -- the file ------------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The model file's JSON object (see the module's description)."""
        return {
            "format": FORMAT,
            "format_version": self.format_version,
            "spcakit_version": self.spcakit_version,
            "method": self.method,
            "spec": self.spec,
            "seed": self.seed,
            "feature_names": list(self.feature_names),
            "component_names": list(self.component_names),
            "loadings": self.loadings.tolist(),
            "mean": None if self.mean is None else self.mean.tolist(),
            "scale": None if self.scale is None else self.scale.tolist(),
            "input": self.input.to_dict(),
        }

    @classmethod
    def from_dict(cls, document: Any, where: str = "the model") -> Model:
        """A model from its JSON object; anything that does not fit the format raises a
        :class:`~spcakit.core.errors.SpecError` whose message starts with ``where`` and names the key."""
        _check_format(document, where)
        fields = validate(MODEL_SCHEMA, document, where)
        record = fields["input"]
        try:
            return cls(
                method=fields["method"], spec=fields["spec"], seed=fields["seed"],
                feature_names=fields["feature_names"], component_names=fields["component_names"],
                loadings=_matrix(fields["loadings"], where), mean=fields["mean"], scale=fields["scale"],
                input=InputRecord(
                    kind=record["kind"], shape=tuple(record["shape"]), sha256=record["sha256"],
                    sha256_skipped=record["sha256_skipped"], weights=record["weights"],
                    missing=_missing_record(record["missing"], where),
                    center=record["center"], standardize=record["standardize"],
                    mean=_frozen_optional(fields["mean"]), scale=_frozen_optional(fields["scale"]),
                ),
                spcakit_version=fields["spcakit_version"], format_version=fields["format_version"],
            )  # fmt: skip
        except InvalidDataError as exc:
            message = str(exc).removeprefix("the model's parts do not fit together: ")
            raise SpecError(f"{where}: {message}") from None

    def to_json(self) -> str:
        """The model file's text: one JSON object, one loadings row per line, numbers that read back exactly."""
        document = self.to_dict()
        lines = []
        for key, value in document.items():
            if key == "loadings":
                rows = ",\n".join("    " + json.dumps(row, allow_nan=False) for row in value)
                text = f"[\n{rows}\n  ]"
            else:
                text = json.dumps(value, allow_nan=False)
            lines.append(f"  {json.dumps(key)}: {text}")
        return "{\n" + ",\n".join(lines) + "\n}\n"

    def save(self, path: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str]] = (),
             option: str = "--save-model") -> None:  # fmt: skip
        """Write the model to ``path``, atomically, never over one of ``inputs`` (see :mod:`spcakit.output.files`).

        ``option`` names the path in messages. Raises
        :class:`~spcakit.output.files.OutputError` for a path that cannot be used
        (nothing is written) and :class:`OSError` when writing fails (the
        previous file, if any, is untouched).
        """
        target = Path(path)
        check_model_path(target, inputs, option)
        write_output(target, self.to_json())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Model:
        """Read a model file written by :meth:`save` (``spcakit run --save-model``)."""
        where = os.fspath(path)
        document = _read_json(Path(path))
        return cls.from_dict(document, where)


def check_model_path(path: Path, inputs: Iterable[str | os.PathLike[str]] = (), option: str = "--save-model") -> None:
    """Refuse a path the model cannot be written to, before any work: a folder, a missing folder, an input file
    or a path inside an input folder (a Zarr store)."""
    inputs = list(inputs)
    check_outside_inputs(path, inputs, option)
    check_output(path, [Path(source) for source in inputs if Path(source).exists()], option=option)


# -- reading and checking the file -------------------------------------------------------------------------
#: Suffixes of data files: given as the model, they mean the arguments are swapped.
_DATA_SUFFIXES = (".csv", ".tsv", ".npy", ".npz")


def _read_json(path: Path) -> Any:
    if path.suffix.lower() in _DATA_SUFFIXES:
        advice = (
            "the model is the JSON file written by spcakit run ... --save-model MODEL; the new data go in --data "
            "(spcakit transform MODEL --data DATA)"
        )
    else:
        advice = f"write it again with: spcakit run METHOD --data DATA --save-model {path}"
    if path.is_dir():
        raise InvalidDataError(f"model file {str(path)!r} is a folder; give the path of a model file ({advice})")
    if not path.exists():
        raise InvalidDataError(f"model file {str(path)!r} does not exist; {advice}")
    try:
        data_file_kind(path, "model file")  # a device (/dev/zero) would be read forever; a named pipe to its end
        raw = path.read_bytes()
    except OSError as exc:
        raise InvalidDataError(f"{path}: cannot read the model file ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidDataError(
            f"{path}: not a model file: byte {exc.start} is not UTF-8 text (a model file is JSON); {advice}"
        ) from None
    if not text.strip():
        raise InvalidDataError(f"{path}: the model file is empty; {advice}")
    try:
        return load_json(text, f"{path}: not a valid model file")
    except json.JSONDecodeError as exc:
        stripped = text.rstrip()
        cut = " - it does not end with '}': it may be truncated" if stripped.startswith("{") and not stripped.endswith("}") else ""
        raise InvalidDataError(
            f"{path}: not a valid model file: not JSON ({exc.msg}: line {exc.lineno}, column {exc.colno}){cut}; "
            f"{advice}"
        ) from None


def _check_format(document: Any, where: str) -> None:
    """The ``format`` marker and version, checked first so that another file says what it is."""
    if not isinstance(document, Mapping):
        raise SpecError(f"{where}: a model file holds one JSON object; got {type(document).__name__}")
    marker = document.get("format")
    if marker != FORMAT:
        if marker is None and "loadings" in document and "metrics" in document:
            raise SpecError(
                f"{where}: this is the JSON result of spcakit run (--json/--out), not a model file; write a model "
                "with spcakit run ... --save-model PATH"
            )
        got = "no 'format' key" if marker is None else f"format {marker!r}"
        raise SpecError(f"{where}: not a spcakit model file ({got}; a model file has \"format\": \"{FORMAT}\")")
    version = document.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise SpecError(f"{where}: format_version must be an integer (this spcakit reads {FORMAT_VERSION}); got {version!r}")
    if version > FORMAT_VERSION:
        raise SpecError(
            f"{where}: model format version {version} was written by a newer spcakit; spcakit {__version__} reads "
            f"format version {FORMAT_VERSION}: upgrade spcakit (pip install -U spcakit) or save the model again "
            "with this version"
        )
    if version != FORMAT_VERSION:
        raise SpecError(
            f"{where}: unknown model format version {version}; spcakit {__version__} reads format version "
            f"{FORMAT_VERSION}"
        )


def _null(value: Any, path: tuple[str | int, ...]) -> None:
    if value is not None:
        raise Invalid(path, "must be null")
    return None


def _missing_record(document: Any, where: str) -> MissingRecord | None:
    """A model file's ``input.missing`` (:class:`~spcakit.inputs.records.MissingRecord`), or ``None``."""
    if document is None:
        return None
    try:
        return MissingRecord(**{**document, "empty_columns": tuple(document.get("empty_columns", ()))})
    except TypeError as exc:
        raise SpecError(f"{where}: input.missing: {exc}") from None


def _nullable(kind: Any, expected: str) -> OneOf:
    """``kind``, or ``null``; a value that is neither is refused as not ``expected``."""
    return OneOf((_null, kind), expected)


_FINITE = Number(expected="a finite number")
_VECTOR = ListOf(_FINITE, expected="an array of finite numbers (one per variable)", min_items=1)
_NAMES = ListOf(Str(empty=False), expected="an array of names", min_items=1)
_INPUT = Table({
    "kind": Field(Str(), required=True),
    "shape": Field(ListOf(Int(low=1), expected="an array [n, p]", min_items=2), required=True),
    "center": Field(Bool(), required=True),
    "standardize": Field(Bool(), required=True),
    "sha256": Field(_nullable(Str(), "a string or null"), required=True),
    "sha256_skipped": Field(_nullable(Str(), "a string or null"), default=None),
    "weights": Field(_nullable(TableOf(Anything()), "an object or null"), default=None),
    "missing": Field(_nullable(TableOf(Anything()), "an object or null"), default=None),
})  # fmt: skip
#: The schema of a model file's JSON object (shapes are checked by :class:`Model` itself).
MODEL_SCHEMA = Table({
    "format": Field(Str(), required=True),
    "format_version": Field(Int(low=1), required=True),
    "spcakit_version": Field(Str(), required=True),
    "method": Field(Str(empty=False), required=True),
    "spec": Field(TableOf(Anything()), default={}),
    "seed": Field(_nullable(Int(low=0), "a non-negative integer or null"), default=None),
    "feature_names": Field(_NAMES, required=True),
    "component_names": Field(_NAMES, required=True),
    "loadings": Field(ListOf(ListOf(_FINITE, expected="an array of finite numbers (one per component)", min_items=1),
                             expected="an array of rows (one per variable)", min_items=1), required=True),
    "mean": Field(_nullable(_VECTOR, "an array of finite numbers (one per variable) or null"), required=True),
    "scale": Field(_nullable(_VECTOR, "an array of finite numbers (one per variable) or null"), required=True),
    "input": Field(_INPUT, required=True),
})  # fmt: skip


def _matrix(rows: list[list[float]], where: str) -> np.ndarray:
    widths = {len(row) for row in rows}
    if len(widths) > 1:
        first = len(rows[0])
        bad = next(i for i, row in enumerate(rows) if len(row) != first)
        raise SpecError(
            f"{where}: loadings[{bad}] has {len(rows[bad])} entries but loadings[0] has {first}; every row of the "
            "loadings has one entry per component"
        )
    return np.array(rows, dtype=float)


# -- new data ----------------------------------------------------------------------------------------------
def _name_tuple(items: Sequence[str] | str | None) -> tuple[str, ...] | None:
    if items is None:
        return None
    if isinstance(items, str):
        return (items,)
    return tuple(str(item) for item in items)


def _table(data: Any, feature_names: Sequence[str] | None) -> tuple[Any, int, tuple[str, ...] | None]:
    """``data`` as a table to pick columns from, its number of columns, and its column names (``None``: unnamed).

    A DataFrame is kept as it is, so that the columns left out (text labels, IDs) are never read as numbers.
    """
    if pandas_class(data) == "DataFrame":
        labels = feature_names if feature_names is not None else [label_text(label) for label in data.columns]
        return data, int(data.shape[1]), tuple(str(name) for name in labels)
    array, _ = numeric_array(data, "the new data")
    if array.ndim != 2:
        raise InvalidDataError(
            f"the new data must be a 2-D array (rows x columns); got {array.ndim} dimension(s) with shape {array.shape}"
        )
    names = None if feature_names is None else tuple(str(name) for name in feature_names)
    return array, int(array.shape[1]), names
