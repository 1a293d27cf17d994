"""The ``table`` experiments: one :func:`spcakit.fit` run per row, our numbers beside the paper's.

Paper values are written as strings in the spec (``cpev = "0.8013"``) so
that their printed precision is kept: a row *matches* when our value,
rounded to the paper's number of decimals, prints the same.
"""

from __future__ import annotations

from functools import partial

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from spcakit.analysis.metrics import ALL_METRICS
from spcakit.core.run import check_driver
from spcakit.workflows.fit import check_seed, fit

#: A paper's tables list the components in its method's order: every fit here keeps it.
paper_fit = partial(fit, order="method")
from spcakit.workflows.configure import K_MEANING, configure, needs_k
from spcakit.core.errors import SpcakitError, SpecError
from spcakit.inputs.datasets import load_source
from spcakit.inputs.dense import Covariance
from spcakit.core.plugins import get_registry
from spcakit.core.protocols import PART_ROLES, means_none
from spcakit.core.registry import Registry
from spcakit.workflows.reproduce.common import data_source, text_table
from spcakit.core.schema import (
    Invalid,
    KeyPath,
    Str,
    did_you_mean,
    format_path,
    unknown_name,
)
from spcakit.core.specs import MethodSpec, PartKind, PartRef
from spcakit.workflows.reproduce.experiment_specs import ExperimentRow, ExperimentSpec
from spcakit.workflows.results import Result

#: Keywords of :func:`spcakit.fit` that a row's ``params`` (or ``overrides``) may set, in the order
#: :func:`spcakit.workflows.configure.configure` applies them; any other key is a part parameter (``k``, ``stopper.tol``).
FIT_KEYS = ("truncator", "lam", "k", "deflator", "stopper", "refiner", "seed")
#: Keywords of :func:`spcakit.fit` that an experiment sets once for every row, or not at all.
_NOT_ROW_KEYS = {
    "r": "r is set once for the whole experiment (the top-level r)",
    "covariance": "covariance is set once for the whole experiment (the top-level covariance)",
    "data": "the data is set once for the whole experiment (the top-level data)",
    "method": "the method is the row's own 'method' key",
    "center": "an experiment's data is always centred",
    "feature_names": "variable names come with the data",
    "on_step": "a callback cannot be given in a spec",
    "registry": "the registry cannot be given in a spec",
}


def fit_arguments(spec: ExperimentSpec, row: ExperimentRow) -> dict[str, Any]:
    """The keywords of :func:`spcakit.fit` for one row: the experiment's ``overrides`` for the row's
    method (e.g. the paper's stopping rule), then the row's own ``params``."""
    return {**spec.overrides.get(row.method, {}), **row.params}


def support_ranges(column: np.ndarray) -> str:
    """Nonzero support as 1-based ranges: ``"1-4,9-10"``."""
    idx = [int(i) + 1 for i in np.nonzero(column)[0]]
    parts, start = [], None
    for k, i in enumerate(idx):
        if start is None:
            start = i
        if k + 1 == len(idx) or idx[k + 1] != i + 1:
            parts.append(str(start) if start == i else f"{start}-{i}")
            start = None
    return ",".join(parts)


#: Columns an experiment can report, computed from a :class:`Result`.
COLUMNS: dict[str, Callable[[Result], Any]] = {
    "nz": lambda res: res.metrics["nz"],
    "pattern": lambda res: "".join(str(v) for v in res.metrics["pattern"]),
    "support": lambda res: "; ".join(support_ranges(res.loadings[:, j]) for j in range(res.r)),
    "sp": lambda res: res.metrics["sp"],
    "std": lambda res: res.metrics["std"],
    "worst_sp": lambda res: res.metrics["worst_sp"],
    "nor": lambda res: res.metrics["nor"],
    "orthogonality": lambda res: res.metrics["orthogonality"],
    "cpev": lambda res: res.metrics["cpev"],
    "ev": lambda res: res.metrics["ev"],
    "iterations": lambda res: res.iterations,
    "additional_variance": lambda res: list(res.metrics["additional_variance"]),
    "cumulative_percent": lambda res: [100.0 * v for v in res.metrics["cumulative_variance"]],
    "loss": lambda res: res.metrics["loss"],
    "normalized_loss": lambda res: res.metrics["normalized_loss"],
    "symmetric_explained_variance": lambda res: res.metrics["symmetric_explained_variance"],
    "objective": lambda res: res.metrics["objective"],
    "normalized_explained_variance": lambda res: res.metrics["normalized_explained_variance"],
}


def _decimals(text: str) -> int:
    return len(text.split(".", 1)[1]) if "." in text else 0


def format_like(value: Any, paper: Any) -> str:
    """Our value printed with the paper's precision (4 decimals when the paper has none).

    Lists print space-separated, each entry with the precision of the paper's first entry.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        first = str(paper).split()[0] if isinstance(paper, str) and paper.split() else None
        return " ".join(format_like(float(v), first if first is not None else 0.0) for v in value)
    if isinstance(value, (int, np.integer)) and not isinstance(paper, str):
        return str(int(value))
    if isinstance(paper, str):
        try:
            float(paper)
        except ValueError:
            return f"{value:.4f}" if isinstance(value, float) else str(value)
        return f"{float(value):.{_decimals(paper)}f}"
    return f"{value:.4f}" if isinstance(value, float) else str(value)


@attrs.frozen(kw_only=True)
class RowOutcome:
    """One row's run: our values as printed (``ours``) and as computed (``raw``), and which match the paper."""

    row: ExperimentRow
    ours: dict[str, str]
    raw: dict[str, Any]
    matches: dict[str, bool]
    seconds: float

    @property
    def matched(self) -> bool:
        return all(self.matches.values())

    @property
    def required_matched(self) -> bool:
        return all(self.matches[c] for c in self.row.must_match)


@attrs.frozen(kw_only=True)
class ExperimentOutcome:
    """The rows of a table experiment, run."""

    spec: ExperimentSpec
    rows: tuple[RowOutcome, ...]

    @property
    def failures(self) -> list[RowOutcome]:
        """The rows whose required columns differ from the paper (``--check`` fails on them)."""
        return [r for r in self.rows if not r.required_matched]

    def to_text(self) -> str:
        """The title, the paper, a table of paper / ours per column with the match, and the spec's notes."""
        spec = self.spec
        columns = list(spec.columns)
        header = ["row"] + [f"{c} (paper / ours)" for c in columns] + ["match with paper"]
        table = [header]
        for row in self.rows:
            cells = [row.row.label] + [f"{row.row.paper.get(c, '-')} / {row.ours[c]}" for c in columns]
            verdict = "all" if row.matched else "differs: " + ",".join(c for c, ok in row.matches.items() if not ok)
            if row.row.must_match:
                verdict += " | required " + ("ok" if row.required_matched else "FAILED")
            table.append(cells + [verdict])
        text = f"{spec.title}\n{spec.paper}\n\n" + text_table(table)
        return text + ("\n\n" + spec.notes.strip() if spec.notes.strip() else "")

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.spec.name,
            "kind": self.spec.kind,
            "title": self.spec.title,
            "paper": self.spec.paper,
            "data": self.spec.data,
            "r": self.spec.r,
            "rows": [
                {
                    "label": r.row.label,
                    "method": r.row.method,
                    "params": r.row.params,
                    "must_match": list(r.row.must_match),
                    "paper": {k: str(v) for k, v in r.row.paper.items()},
                    "ours": r.ours,
                    "values": r.raw,
                    "matches": r.matches,
                    "seconds": r.seconds,
                }
                for r in self.rows
            ],
        }


# -- checking a spec against the registry --------------------------------------------------------------
def spec_error(spec: ExperimentSpec, path: KeyPath | list[KeyPath], message: str) -> SpecError:
    where = spec.source or f"experiment {spec.name}"
    paths = path if isinstance(path, list) else [path]
    return SpecError(": ".join(s for s in (where, ", ".join(format_path(p) for p in paths), message) if s))


def row_method(spec: ExperimentSpec, name: str, path: KeyPath, registry: Registry) -> MethodSpec:
    if name not in registry.method_names():
        raise spec_error(spec, path, unknown_name("method", name, registry.method_names()) + " (spcakit methods lists them)")
    try:
        return registry.method(name)
    except SpcakitError as exc:
        raise spec_error(spec, path, f"method {name!r} cannot be read: {exc}") from None


def _part_refs(ref: PartRef) -> list[PartRef]:
    """``ref`` and the part references nested in its parameters."""
    out = [ref]
    for value in ref.params.values():
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(item, PartRef):
                out.extend(_part_refs(item))
    return out


def _parameter_names(method: MethodSpec, registry: Registry) -> list[str]:
    """Every part parameter ``method`` takes, bare and as ``role.name``."""
    bare, qualified = [], []
    for role in PART_ROLES:
        ref = getattr(method, role)
        for sub in [] if ref is None else _part_refs(ref):
            for name in registry.part(role, sub.name).parameters():
                bare.append(name)
                qualified.append(f"{role}.{name}")
    return sorted(set(bare)) + sorted(set(qualified))


#: The fit keywords that name a part, and whether "none" (no part) is allowed.
_PART_KEYWORDS = {"truncator": False, "deflator": False, "stopper": False, "refiner": True}


def _check_fit_keyword(spec: ExperimentSpec, key: str, value: Any, path: KeyPath, registry: Registry) -> None:
    """A fit keyword that names a part: a name (``truncator``, ``deflator``) or a part (``stopper``, ``refiner``)
    whose name is registered for that role."""
    if key not in _PART_KEYWORDS:
        return
    kind = Str(empty=False) if key in ("truncator", "deflator") else PartKind(optional=_PART_KEYWORDS[key])
    try:
        kind(value, path)
    except Invalid as exc:
        raise spec_error(spec, exc.path, exc.message) from None
    name = value.get("name") if isinstance(value, Mapping) else value
    names = registry.part_names(key)
    if isinstance(name, str) and name not in names and not (_PART_KEYWORDS[key] and means_none(name)):
        raise spec_error(spec, (*path, "name") if isinstance(value, Mapping) else path,
                          unknown_name(key, name, names) + " (spcakit parts lists them)")


def configured_row(spec: ExperimentSpec, method: MethodSpec, arguments: Mapping[str, Any], paths: Mapping[str, KeyPath],
                registry: Registry, p: int | None) -> None:
    """Apply ``arguments`` (fit keywords) to ``method`` as :func:`spcakit.fit` does, one key at a time, and build
    its parts; the first error is a :class:`SpecError` naming the key (or the keys) it comes from."""
    try:
        method = configure(method, registry=registry)  # nested part tables as PartRefs, so that roles compare equal
    except SpcakitError as exc:
        raise spec_error(spec, paths.get("", ()), str(exc)) from None
    touched: dict[str, list[str]] = {role: [] for role in PART_ROLES}
    order = {k: i for i, k in enumerate(FIT_KEYS)}
    for key in sorted(arguments, key=lambda k: order.get(k, len(order))):
        value, path = arguments[key], paths[key]
        if key in _NOT_ROW_KEYS:
            raise spec_error(spec, path, f"not a keyword a row can set: {_NOT_ROW_KEYS[key]}")
        if key not in FIT_KEYS:
            valid = _parameter_names(method, registry)
            bare = key.rpartition(".")[2]
            if key not in valid and bare not in valid:
                guess = did_you_mean(key, [*FIT_KEYS, *valid])
                hint = f" (did you mean {guess!r}?)" if guess else ""
                raise spec_error(spec, path, f"method {method.name!r} has no parameter {key!r}{hint}; valid: "
                                              f"the fit keywords {', '.join(FIT_KEYS)} and the part parameters {', '.join(valid)}")
        _check_fit_keyword(spec, key, value, path, registry)
        try:
            if key == "seed":
                check_seed(value)
                continue
            changed = configure(method, **({key: value} if key in FIT_KEYS else {"params": {key: value}}),
                                registry=registry)  # type: ignore[arg-type]
        except SpcakitError as exc:
            raise spec_error(spec, path, str(exc)) from None
        for role in PART_ROLES:
            if getattr(changed, role) != getattr(method, role):
                touched[role].append(key)
        method = changed
    try:
        check_driver(method, registry)
    except SpcakitError as exc:
        raise spec_error(spec, [paths[k] for k in touched["deflator"]] or paths.get("", ()), str(exc)) from None
    for role in PART_ROLES:
        ref = getattr(method, role)
        if ref is None:
            continue
        try:
            part = registry.build(role, ref)
            if role == "truncator" and p is not None:
                with registry.attributed(role, ref.name):  # a check that raises other than to refuse: a bug, named
                    part.check(p)
        except SpcakitError as exc:
            blame = [paths[k] for k in touched[role]] or paths.get("", ())
            context = "" if touched[role] else f"method {method.name!r}: "
            raise spec_error(spec, blame, f"{context}{exc}") from None
    if needs_k(method, registry):
        raise spec_error(spec, paths.get("", ()), (
            f"method {method.name!r} needs k ({K_MEANING}), and an experiment pins every parameter of the run it "
            "reproduces: give it (params = { k = K }) rather than rely on spcakit's default (spcakit.workflows.configure.default_k)"
        ))  # fmt: skip


def check_experiment(spec: ExperimentSpec, registry: Registry | None = None, p: int | None = None) -> None:
    """Check an experiment against the registry before any row runs.

    Columns must be known (:data:`COLUMNS`), and each row's paper columns among them; every method
    (of a row or of ``overrides``) must be registered, and ``overrides`` only for methods some row
    runs; each row's keywords (its method's overrides, then its ``params``) must be ones
    :func:`spcakit.fit` takes for that method, with values its parts accept (and, given the number
    of variables ``p``, the truncator's check). A :class:`SpecError` names the file and the key's path
    (``rows[3].params.k``, ``overrides.spcart.stopper``) with the closest valid name as a hint.
    """
    registry = registry or get_registry()
    columns = list(COLUMNS)
    for i, column in enumerate(spec.columns):
        if column not in COLUMNS:
            raise spec_error(spec, ("columns", i), unknown_name("column", column, columns))
    row_methods = [row.method for row in spec.rows]
    for name in spec.overrides:
        row_method(spec, name, ("overrides", name), registry)
        if name not in row_methods:
            raise spec_error(spec, ("overrides", name), f"no row runs method {name!r}; the rows run: "
                                                         f"{', '.join(dict.fromkeys(row_methods))}")
    for i, row in enumerate(spec.rows):
        method = row_method(spec, row.method, ("rows", i, "method"), registry)
        for column in row.paper:
            if column not in COLUMNS:
                raise spec_error(spec, ("rows", i, "paper", column), unknown_name("column", column, columns))
            if spec.columns and column not in spec.columns:
                guess = did_you_mean(column, spec.columns)
                raise spec_error(spec, ("rows", i, "paper", column), (
                    f"{column!r} is not one of this experiment's columns" + (f" (did you mean {guess!r}?)" if guess else "")
                    + f"; its columns: {', '.join(spec.columns)} (add {column!r} to 'columns' to compare it)"
                ))
        overrides = spec.overrides.get(row.method, {})
        paths: dict[str, KeyPath] = {k: ("overrides", row.method, k) for k in overrides}
        paths.update({k: ("rows", i, "params", k) for k in row.params})
        paths[""] = ("rows", i)
        configured_row(spec, method, fit_arguments(spec, row), paths, registry, p)


def run_row(spec: ExperimentSpec, row: ExperimentRow, data: Any) -> RowOutcome:
    """Run one row (:func:`spcakit.fit` with :func:`fit_arguments`) and compare its columns with the paper's."""
    result = paper_fit(data, row.method, r=spec.r, **{"metrics": ALL_METRICS, **fit_arguments(spec, row)})  # the paper's columns
    columns = spec.columns or tuple(row.paper)
    unknown = [c for c in columns if c not in COLUMNS]
    if unknown:
        raise SpecError(f"experiment {spec.name}: unknown column(s) {unknown}; valid: {', '.join(COLUMNS)}")
    raw = {c: COLUMNS[c](result) for c in columns}
    ours = {c: format_like(raw[c], row.paper.get(c)) for c in columns}
    matches = {c: ours[c] == str(row.paper[c]) for c in columns if c in row.paper}
    return RowOutcome(row=row, ours=ours, raw=raw, matches=matches, seconds=result.seconds)


def run_table(spec: ExperimentSpec, on_row: Callable[[RowOutcome], None] | None = None,
              root: Path | None = None) -> ExperimentOutcome:
    """Run every row of a table (or sweep) experiment, in order.

    The spec is checked (:func:`check_experiment`) once its data is loaded (relative to ``root``, the
    repository, when given), before the first row runs.
    """
    check_experiment(spec)
    dataset = load_source(data_source(spec.data, root))
    check_experiment(spec, p=dataset.matrix.shape[1])
    data: Any = Covariance(dataset.matrix, dataset.feature_names) if (dataset.is_covariance or spec.covariance) else dataset.matrix
    outcomes = []
    for row in spec.rows:
        outcome = run_row(spec, row, data)
        outcomes.append(outcome)
        if on_row is not None:
            on_row(outcome)
    return ExperimentOutcome(spec=spec, rows=tuple(outcomes))
