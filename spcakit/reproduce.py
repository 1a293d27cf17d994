"""Run an experiment spec (a paper's table) and set our numbers beside the paper's.

Paper values are written as strings in the spec (``cpev = "0.8013"``) so
that their printed precision is kept: a row *matches* when our value,
rounded to the paper's number of decimals, prints the same.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from spcakit.api import fit
from spcakit.datasets import load_source
from spcakit.errors import SpecError
from spcakit.problem import Covariance
from spcakit.specs import ExperimentRow, ExperimentSpec, load_experiment_spec, specs_root
from spcakit.state import Result

FIT_KEYS = ("truncator", "lam", "deflator", "stopper", "refiner", "seed")


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
    spec: ExperimentSpec
    rows: tuple[RowOutcome, ...]

    @property
    def failures(self) -> list[RowOutcome]:
        return [r for r in self.rows if not r.required_matched]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.spec.name,
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


def experiment_path(name: str) -> Path:
    path = Path(name)
    if path.suffix == ".toml" and path.exists():
        return path
    candidate = specs_root() / "experiments" / f"{name}.toml"
    if not candidate.exists():
        raise SpecError(f"unknown experiment {name!r}; available: {', '.join(list_experiments()) or '(none)'}")
    return candidate


def list_experiments() -> list[str]:
    folder = specs_root() / "experiments"
    return sorted(p.stem for p in folder.glob("*.toml"))


def run_row(spec: ExperimentSpec, row: ExperimentRow, data: Any) -> RowOutcome:
    result = fit(data, row.method, r=spec.r, **fit_arguments(spec, row))
    columns = spec.columns or tuple(row.paper)
    unknown = [c for c in columns if c not in COLUMNS]
    if unknown:
        raise SpecError(f"experiment {spec.name}: unknown column(s) {unknown}; valid: {', '.join(COLUMNS)}")
    raw = {c: COLUMNS[c](result) for c in columns}
    ours = {c: format_like(raw[c], row.paper.get(c)) for c in columns}
    matches = {c: ours[c] == str(row.paper[c]) for c in columns if c in row.paper}
    return RowOutcome(row=row, ours=ours, raw=raw, matches=matches, seconds=result.seconds)


def run_experiment(name: str, on_row: Callable[[RowOutcome], None] | None = None) -> ExperimentOutcome:
    """Run every row of the experiment ``name`` (a spec name or a TOML path)."""
    spec = load_experiment_spec(experiment_path(name))
    dataset = load_source(spec.data)
    data: Any = Covariance(dataset.matrix, dataset.feature_names) if (dataset.is_covariance or spec.covariance) else dataset.matrix
    outcomes = []
    for row in spec.rows:
        outcome = run_row(spec, row, data)
        outcomes.append(outcome)
        if on_row is not None:
            on_row(outcome)
    return ExperimentOutcome(spec=spec, rows=tuple(outcomes))
