"""The experiment spec kinds beyond the table: ``sweep``, ``realizations``, ``curve`` and ``traces``.

An experiment spec (``specs/experiments/*.toml``) says what it reproduces with ``kind``
(:data:`EXPERIMENT_KINDS`; ``table`` when absent), and :func:`load_experiment_spec` reads it
with that kind's schema:

* ``table`` and ``sweep``: :class:`ExperimentSpec` (rows of :func:`spcakit.fit` runs on one
  data set); a sweep adds a ``[sweep]`` table (:class:`SweepSettings`): its rows are labelled
  ``"SERIES, r = R"`` and drawn as one line per series against the sparsity R;
* ``realizations``, ``curve`` and ``traces``: :class:`StudySpec`, rows (:class:`StudyRow`) run on random
  problems of named generators (``[[cases]]``), along a parameter on one data set, or for their objective
  after every step.

The schemas refuse unknown keys with the closest valid one as a hint, as every spec does
(:mod:`spcakit.core.schema`); :mod:`spcakit.workflows.reproduce` runs the specs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from spcakit.core.errors import SpecError
from spcakit.core.schema import (
    Anything,
    Bool,
    Field,
    Int,
    Invalid,
    KeyPath,
    ListOf,
    Number,
    OneOf,
    Str,
    Table,
    TableOf,
    did_you_mean,
    unknown_name,
    validate,
)
from spcakit.core.specs import read_toml

#: The kinds of experiment spec (``kind = ...``) and what each reproduces; ``table`` when none is given.
EXPERIMENT_KINDS = {
    "table": "a published table: one spcakit.fit run per row, printed beside the paper's values",
    "sweep": "a figure of metrics against a sparsity: rows labelled 'SERIES, r = R', drawn one line per series",
    "realizations": "random problems drawn by a named generator, each row scored against a reference method's optimum",
    "curve": "a metric of each row against a parameter (the x axis) on one data set",
    "traces": "the objective after every step of each row's run (convergence)",
}

#: The ``kind`` key of an experiment spec.
KIND_FIELD = Field(Str(empty=False), default="table")


@attrs.frozen(kw_only=True)
class Panel:
    """One panel of a sweep's figure: a metric column against the sparsity."""

    column: str
    label: str
    #: which value is best at a sparsity (bold in the Markdown table): ``"min"`` or ``"max"``
    best: str = "max"


@attrs.frozen(kw_only=True)
class SweepSettings:
    """The ``[sweep]`` table of a ``kind = "sweep"`` experiment: how its rows make a figure.

    Every row is labelled ``"SERIES, r = R"``: one point of the line ``SERIES`` at sparsity ``R``.
    """

    #: the short name of the data set (the ``dataset`` of the JSON file)
    dataset: str
    #: the lines, in the order they are drawn and tabulated
    series: tuple[str, ...]
    panels: tuple[Panel, ...]
    #: the plot's title (``", k = <r>"`` is added)
    plot_title: str
    xlabel: str = "sparsity r (nonzeros per feature)"
    #: the series whose Markdown cell ends with the loading pattern (nonzeros of each loading)
    show_pattern: tuple[str, ...] = ()
    #: the sparsities of the reduced run (``--reduced``); empty: every sparsity
    reduced: tuple[int, ...] = ()
    #: series whose penalty is tuned to the sparsity (``--tune``): the series and the parameter set by tuning
    tune: dict[str, str] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class StudyRow:
    """One row of a ``realizations``, ``curve`` or ``traces`` experiment: a :func:`spcakit.fit` run and how it is scored."""

    label: str
    method: str
    params: dict[str, Any] = attrs.field(factory=dict)
    #: the number of loadings of this row's run; ``None``: the experiment's ``r``
    r: int | None = None
    #: ``metric`` (the experiment's metric of the run) or a ``score`` piece a plugin registered (``curve`` only),
    #: e.g. the FSPCA plugin's ``fspca-refined`` and ``fspca-bound``
    score: str = "metric"
    #: a named start (``w0``) computed from each problem, e.g. ``fantope``; ``""``: none
    start: str = ""
    #: ``realizations``: run with ``seed = 1000 * i + seed`` for realization ``i``
    seeded: bool = False
    #: ``realizations``: score this many single runs per realization, each from one random orthonormal start
    single_starts: int = 0
    #: ``traces``: one run per seed of the experiment (the label may hold ``{seed}``)
    each_seed: bool = False


@attrs.frozen(kw_only=True)
class StudyCase:
    """A case of a ``realizations`` experiment: a named generator of random problems and the case's own parameters."""

    name: str
    generator: str
    generator_params: dict[str, Any] = attrs.field(factory=dict)
    params: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class StudySpec:
    """An experiment of kind ``realizations``, ``curve`` or ``traces`` (see :data:`EXPERIMENT_KINDS`).

    Every row's :func:`spcakit.fit` keywords are ``params`` (shared), then the case's (``realizations``) or the
    swept value (``curve``), then the row's own ``params``.
    """

    name: str
    title: str
    kind: str
    r: int
    rows: tuple[StudyRow, ...]
    paper: str = ""
    notes: str = ""
    #: the data source (``curve``, ``traces``), relative to the repository root
    data: str = ""
    params: dict[str, Any] = attrs.field(factory=dict)
    #: the metric that scores a run (``curve``); ``realizations`` score by the objective
    metric: str = ""
    #: ``curve``: the fit keyword swept and its values
    parameter: str = ""
    values: tuple[Any, ...] = ()
    #: ``traces``: the seeds of the rows run once per seed
    seeds: tuple[int, ...] = ()
    #: ``realizations``: the cases, the number of realizations of each, the seed, and the reference method
    cases: tuple[StudyCase, ...] = ()
    realizations: int = 0
    seed: int = 0
    reference: str = ""
    #: ``realizations``: a relative error at most this is a hit
    hit_tol: float = 1e-3
    #: what the reduced run (``--reduced``) changes: ``realizations``, ``values`` or ``seeds``
    reduced: dict[str, Any] = attrs.field(factory=dict)
    source: str = attrs.field(default="", eq=False)


_PANEL = Table(
    {
        "column": Field(Str(empty=False), required=True),
        "label": Field(Str(), required=True),
        "best": Field(OneOf((Str(empty=False),), expected='"min" or "max"'), default="max"),
    },
    expected="a table { column = ..., label = ..., best = \"min\" | \"max\" }",
)
#: The keys of a sweep's ``[sweep]`` table.
SWEEP_SCHEMA = Table(
    {
        "dataset": Field(Str(empty=False), required=True),
        "series": Field(ListOf(Str(empty=False), expected="an array of series names", min_items=1), required=True),
        "panels": Field(ListOf(_PANEL, expected="an array of panel tables", min_items=1), required=True),
        "plot_title": Field(Str(), required=True),
        "xlabel": Field(Str(), default="sparsity r (nonzeros per feature)"),
        "show_pattern": Field(ListOf(Str(empty=False), expected="an array of series names"), default=[]),
        "reduced": Field(ListOf(Int(low=1), expected="an array of sparsities"), default=[]),
        "tune": Field(TableOf(Str(empty=False), expected="a table of series names and the parameter tuned"), default={}),
    },
    expected="a table ([sweep])",
)

def _generator(value: Any, path: KeyPath) -> dict[str, Any]:
    """A generator: its registered name, or a table ``{ name = ..., <parameter> = ... }``; as a table."""
    if isinstance(value, str) and value.strip():
        return {"name": value}
    if isinstance(value, Mapping) and isinstance(value.get("name"), str) and value["name"].strip():
        return dict(value)
    raise Invalid(path, "must be a generator name or a table { name = ..., <parameter> = ... }; got " + repr(value))


_FIT_PARAMS = TableOf(Anything(), expected="a table of fit keywords and part parameters")


def _study_row(value: Any, path: KeyPath) -> dict[str, Any]:
    """A study row; its ``score`` is ``"metric"`` (the spec's metric) or a score piece, checked against the
    registry before anything runs (:func:`spcakit.workflows.reproduce.check_study`)."""
    return _STUDY_ROW_TABLE(value, path)


_STUDY_ROW_TABLE = Table(
    {
        "label": Field(Str(empty=False), required=True),
        "method": Field(Str(empty=False), required=True),
        "params": Field(_FIT_PARAMS, default={}),
        "r": Field(Int(low=1)),
        "score": Field(Str(empty=False), default="metric"),
        "start": Field(Str(), default=""),
        "seeded": Field(Bool(), default=False),
        "single_starts": Field(Int(low=0), default=0),
        "each_seed": Field(Bool(), default=False),
    },
    expected="a table ([[rows]])",
)
#: What an experiment's ``name`` may be: a plain file name (it names the files ``--out`` writes), no path.
PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def _plain_name(value: Any, path: KeyPath) -> str:
    """An experiment's ``name``: a plain file name (:data:`PLAIN_NAME`). The outputs are named after it, so
    ``../x``, an absolute path or a folder separator would write outside the folder the user named."""
    name = Str(empty=False)(value, path)
    if not PLAIN_NAME.fullmatch(name):
        raise Invalid(path, f"{name!r} is not a plain file name; an experiment's name names the files --out writes, so "
                            "it is letters, digits, '.', '_' and '-' (starting with a letter or digit, at most 128), "
                            "no folder")
    return name


_CASE = Table(
    {
        "name": Field(Str(empty=False), required=True),
        "generator": Field(_generator, required=True),
        "params": Field(_FIT_PARAMS, default={}),
    },
    expected="a table ([[cases]]) { name = ..., generator = ..., params = { ... } }",
)
_STUDY_COMMON = {
    "kind": KIND_FIELD,
    "name": Field(_plain_name, required=True),
    "title": Field(Str(), required=True),
    "paper": Field(Str(), default=""),
    "notes": Field(Str(), default=""),
    "r": Field(Int(low=1), required=True),
    "params": Field(_FIT_PARAMS, default={}),
    "rows": Field(ListOf(_study_row, expected="an array of tables ([[rows]])", min_items=1), required=True),
}
#: The keys of the experiment kinds ``realizations``, ``curve`` and ``traces``.
STUDY_SCHEMAS = {
    "realizations": Table(
        {
            **_STUDY_COMMON,
            "cases": Field(ListOf(_CASE, expected="an array of tables ([[cases]])", min_items=1), required=True),
            "realizations": Field(Int(low=1), required=True),
            "seed": Field(Int(low=0), default=0),
            "reference": Field(Str(empty=False), required=True),
            "hit_tol": Field(Number(), default=1e-3),
            "reduced": Field(Table({"realizations": Field(Int(low=1))}, expected="a table { realizations = N }"), default={}),
        },
        expected="a table of experiment keys",
    ),
    "curve": Table(
        {
            **_STUDY_COMMON,
            "data": Field(Str(empty=False), required=True),
            "metric": Field(Str(empty=False), required=True),
            "parameter": Field(Str(empty=False), required=True),
            "values": Field(ListOf(Anything(), expected="an array of the parameter's values", min_items=1), required=True),
            "reduced": Field(Table({"values": Field(ListOf(Anything(), expected="an array", min_items=1))},
                                   expected="a table { values = [...] }"), default={}),
        },
        expected="a table of experiment keys",
    ),
    "traces": Table(
        {
            **_STUDY_COMMON,
            "data": Field(Str(empty=False), required=True),
            "seeds": Field(ListOf(Int(low=0), expected="an array of seeds"), default=[]),
            "reduced": Field(Table({"seeds": Field(ListOf(Int(low=0), expected="an array of seeds"))},
                                   expected="a table { seeds = [...] }"), default={}),
        },
        expected="a table of experiment keys",
    ),
}


def sweep_settings(data: Mapping[str, Any], where: str) -> SweepSettings | None:
    """The ``[sweep]`` table: required by ``kind = "sweep"`` and refused by tables; series and panels checked."""
    sweep = data.get("sweep")
    if data["kind"] == "table":
        if sweep is not None:
            raise SpecError(f'{where}: sweep: only an experiment of kind = "sweep" has a [sweep] table')
        return None
    if sweep is None:
        raise SpecError(f'{where}: kind = "sweep" needs a [sweep] table (dataset, series, panels, plot_title)')
    series = list(sweep["series"])
    for i, panel in enumerate(sweep["panels"]):
        if panel["best"] not in ("min", "max"):
            raise SpecError(f'{where}: sweep.panels[{i}].best: must be "min" or "max"; got {panel["best"]!r}')
    for key in ("show_pattern", "tune"):
        for name in sweep[key]:
            if name not in series:
                raise SpecError(f"{where}: sweep.{key}: {unknown_name('series', name, series)}")
    for i, row in enumerate(data["rows"]):
        label = row["label"] or ""
        head, sep, tail = label.rpartition(", r = ")
        if not sep or head not in series or not tail.isdigit():
            raise SpecError(f"{where}: rows[{i}].label: a sweep row is labelled 'SERIES, r = R' with SERIES one of "
                            f"{', '.join(series)}; got {label!r}")
    return SweepSettings(
        dataset=sweep["dataset"],
        series=tuple(series),
        panels=tuple(Panel(column=p["column"], label=p["label"], best=p["best"]) for p in sweep["panels"]),
        plot_title=sweep["plot_title"],
        xlabel=sweep["xlabel"],
        show_pattern=tuple(sweep["show_pattern"]),
        reduced=tuple(sweep["reduced"]),
        tune=dict(sweep["tune"]),
    )


def study_spec(data: Mapping[str, Any], where: str) -> StudySpec:
    kind = data["kind"]
    if kind == "curve":
        for i, row in enumerate(data["rows"]):
            if row["each_seed"] or row["seeded"] or row["single_starts"]:
                raise SpecError(f"{where}: rows[{i}]: seeded, single_starts and each_seed are for other kinds of experiment")
    elif row_scores := [i for i, row in enumerate(data["rows"]) if row["score"] != "metric"]:
        raise SpecError(f"{where}: rows[{row_scores[0]}].score: only a curve's rows have a score other than 'metric'")
    return StudySpec(
        name=data["name"],
        title=data["title"],
        kind=kind,
        r=data["r"],
        paper=data["paper"],
        notes=data["notes"],
        data=data.get("data", ""),
        params=dict(data["params"]),
        metric=data.get("metric", ""),
        parameter=data.get("parameter", ""),
        values=tuple(data.get("values", ())),
        seeds=tuple(data.get("seeds", ())),
        cases=tuple(
            StudyCase(name=c["name"], generator=c["generator"]["name"],
                      generator_params={k: v for k, v in c["generator"].items() if k != "name"}, params=dict(c["params"]))
            for c in data.get("cases", ())
        ),
        realizations=data.get("realizations", 0),
        seed=data.get("seed", 0),
        reference=data.get("reference", ""),
        hit_tol=float(data.get("hit_tol", 1e-3)),
        reduced={k: v for k, v in data["reduced"].items() if v is not None},
        rows=tuple(
            StudyRow(label=row["label"], method=row["method"], params=dict(row["params"]), r=row["r"], score=row["score"],
                     start=row["start"], seeded=row["seeded"], single_starts=row["single_starts"], each_seed=row["each_seed"])
            for row in data["rows"]
        ),
        source=where,
    )


@attrs.frozen(kw_only=True)
class ExperimentRow:
    """One row of a published table: a run and the paper's numbers."""

    label: str
    method: str
    params: dict[str, Any] = attrs.field(factory=dict)
    paper: dict[str, Any] = attrs.field(factory=dict)
    #: columns that must print as the paper's (``true`` in TOML: every paper column)
    must_match: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class ExperimentSpec:
    """A reproduction of a paper's table (``kind = "table"``) or sweep figure: data, shared settings, rows."""

    name: str
    title: str
    paper: str
    data: str
    r: int
    kind: str = "table"
    covariance: bool = False
    columns: tuple[str, ...] = ()
    rows: tuple[ExperimentRow, ...] = ()
    notes: str = ""
    #: ``fit`` keywords per method name, applied to every row of that method (a row's params win):
    #: how the paper ran a method when that differs from spcakit's default (e.g. its stopping rule).
    overrides: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    #: the figure's settings of a ``kind = "sweep"`` experiment, else ``None``
    sweep: SweepSettings | None = None
    #: the file it was read from (messages name it), or ``""``
    source: str = attrs.field(default="", eq=False)


def _row(value: Any, path: KeyPath) -> dict[str, Any]:
    """A ``[[rows]]`` table; ``must_match`` lists only the row's own paper columns."""
    row = _ROW_TABLE(value, path)
    must = row["must_match"]
    if isinstance(must, list):
        for j, column in enumerate(must):
            if column not in row["paper"]:
                guess = did_you_mean(column, row["paper"])
                raise Invalid(
                    (*path, "must_match", j),
                    f"{column!r} is not one of this row's paper columns ({', '.join(row['paper']) or 'none'})"
                    + (f" (did you mean {guess!r}?)" if guess else "")
                    + "; must_match is true, false, or a list of the row's paper columns",
                )
    return row


_ROW_TABLE = Table(
    {
        "label": Field(Str(empty=False)),
        "method": Field(Str(empty=False), required=True),
        "params": Field(TableOf(Anything(), expected="a table of fit keywords and part parameters"), default={}),
        "paper": Field(TableOf(OneOf((Str(), Number()), expected="a string (keeps the paper's digits) or a number"),
                               expected="a table of the paper's values by column"), default={}),
        "must_match": Field(OneOf((Bool(), ListOf(Str(), expected="an array of column names")),
                                  expected="true, false, or an array of the row's paper columns"), default=False),
    },
    expected="a table ([[rows]])",
)


#: The keys of an experiment spec (``kind = "table"`` or ``"sweep"``) and what each may hold.
EXPERIMENT_SCHEMA = Table(
    {
        "kind": KIND_FIELD,
        "name": Field(_plain_name, required=True),
        "title": Field(Str(), required=True),
        "paper": Field(Str(), default=""),
        "data": Field(Str(empty=False), required=True),
        "r": Field(Int(low=1), required=True),
        "covariance": Field(Bool(), default=False),
        "columns": Field(ListOf(Str(empty=False), expected="an array of column names (strings)"), default=[]),
        "notes": Field(Str(), default=""),
        "overrides": Field(
            TableOf(TableOf(Anything(), expected="a table of fit keywords"), expected="a table of method names"),
            default={},
        ),
        "rows": Field(ListOf(_row, expected="an array of tables ([[rows]])", min_items=1), required=True),
        "sweep": Field(SWEEP_SCHEMA),
    },
    expected="a table of experiment keys",
)


def experiment_kind(data: Mapping[str, Any], where: str) -> str:
    """The ``kind`` of an experiment table (``table`` when absent); an unknown kind is a :class:`SpecError`."""
    kind = data.get("kind", "table")
    if not isinstance(kind, str) or kind not in EXPERIMENT_KINDS:
        raise SpecError(f"{where}: kind: " + unknown_name("experiment kind", kind, list(EXPERIMENT_KINDS))
                        + " (a missing kind is 'table')")
    return kind


def load_experiment_spec(path: str | Path) -> ExperimentSpec | StudySpec:
    """Read an experiment spec (``specs/experiments/*.toml``), checked against its kind's schema.

    ``kind`` (:data:`EXPERIMENT_KINDS`, default ``table``) picks the schema: :data:`EXPERIMENT_SCHEMA` for tables
    and sweeps (an :class:`ExperimentSpec`), :data:`STUDY_SCHEMAS` for the others (a :class:`StudySpec`).
    Method names, columns and the rows' parameters of a table or sweep are checked against the registry by
    :func:`spcakit.workflows.reproduce.check_experiment`.
    """
    path = Path(path)
    where = str(path)
    raw = read_toml(path)
    kind = experiment_kind(raw, where)
    if kind in STUDY_SCHEMAS:
        return study_spec(validate(STUDY_SCHEMAS[kind], raw, where), where)
    data = validate(EXPERIMENT_SCHEMA, raw, where)
    sweep = sweep_settings(data, where)
    rows = tuple(
        ExperimentRow(
            label=row["label"] if row["label"] is not None else row["method"],
            method=row["method"],
            params=dict(row["params"]),
            paper=dict(row["paper"]),
            must_match=tuple(row["paper"]) if row["must_match"] is True else tuple(row["must_match"] or ()),
        )
        for row in data["rows"]
    )
    return ExperimentSpec(
        name=data["name"],
        title=data["title"],
        paper=data["paper"],
        data=data["data"],
        r=data["r"],
        kind=kind,
        covariance=data["covariance"],
        columns=tuple(data["columns"]),
        rows=rows,
        notes=data["notes"],
        overrides={k: dict(v) for k, v in data["overrides"].items()},
        sweep=sweep,
        source=where,
    )
