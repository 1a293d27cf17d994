"""The ``sweep`` experiments: metrics against a sparsity, one line per series (e.g. Fig. 1 of Magdon-Ismail &
Boutsidis, ``encoders-fig1-*``).

A sweep is a table experiment whose rows are labelled ``"SERIES, r = R"`` and whose ``[sweep]`` table
(:class:`~spcakit.workflows.reproduce.experiment_specs.SweepSettings`) says how they make a figure: the series in order, the
panels (a metric column each, and whether its best value is the least or the largest). Each row runs as a
table's row does (:func:`spcakit.workflows.reproduce.tables.fit_arguments`) into a flat record; :func:`write_outputs`
writes the records as CSV and JSON, a Markdown table and an SVG plot (:mod:`spcakit.plotting`, which needs
matplotlib: ``pip install -e '.[plot]'``); :func:`replot` redraws the SVG from the JSON alone.
"""

from __future__ import annotations

from functools import partial

import csv
import io
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from spcakit.workflows.fit import fit

#: A paper's tables list the components in its method's order: every fit here keeps it.
paper_fit = partial(fit, order="method")
from spcakit.core.errors import SpecError
from spcakit.output.files import check_output
from spcakit.output.files import write_outputs as write_files
from spcakit.workflows.reproduce.experiment_specs import SweepSettings
from spcakit.inputs import as_problem
from spcakit.workflows.reproduce.common import fit_data, text_table
from spcakit.workflows.reproduce.tables import check_experiment, fit_arguments
from spcakit.workflows.reproduce.experiment_specs import ExperimentRow, ExperimentSpec

#: The suffixes of the files :func:`write_outputs` writes, in order.
SUFFIXES = ("csv", "json", "svg", "md")
#: The size of the plot in inches: one panel beside the other.
FIGSIZE = (10.0, 4.2)


def settings(spec: ExperimentSpec) -> SweepSettings:
    """The spec's ``[sweep]`` table; a :class:`SpecError` for an experiment of another kind."""
    if spec.sweep is None:
        raise SpecError(f'{spec.source or spec.name}: experiment {spec.name!r} is of kind {spec.kind!r}, not "sweep": '
                        "it draws no figure")
    return spec.sweep


def point(row: ExperimentRow) -> tuple[str, int]:
    """The series and the sparsity of a row labelled ``"SERIES, r = R"`` (checked when the spec is read)."""
    series, _, r = row.label.rpartition(", r = ")
    return series, int(r)


@attrs.frozen(kw_only=True)
class SweepOutcome:
    """The records of a sweep's rows: ``method`` (the series), ``r``, ``spec_method``, ``params``,
    ``pattern``, one value per panel column, ``seconds``."""

    spec: ExperimentSpec
    records: tuple[dict[str, Any], ...]

    @property
    def failures(self) -> list[Any]:
        """Nothing to compare with a paper: a sweep never fails ``--check``."""
        return []

    def to_dict(self) -> dict[str, Any]:
        """The JSON document :func:`write_outputs` writes: the data set, ``k`` (the spec's r) and the records."""
        return {"dataset": settings(self.spec).dataset, "k": self.spec.r, "records": list(self.records)}

    def to_text(self) -> str:
        """The title, the paper, a table of the panel values by sparsity and series, and the spec's notes."""
        spec, sweep = self.spec, settings(self.spec)
        header = ["series", "r", "pattern"] + [panel.column for panel in sweep.panels]
        rows = [header] + [
            [rec["method"], str(rec["r"]), "/".join(map(str, rec["pattern"]))]
            + [f"{rec[panel.column]:.4f}" for panel in sweep.panels]
            for rec in self.records
        ]
        text = f"{spec.title}\n{spec.paper}\n\n" + text_table(rows)
        return text + ("\n\n" + spec.notes.strip() if spec.notes.strip() else "")


def run_sweep(spec: ExperimentSpec, sparsities: Sequence[int] | None = None, root: Path | None = None,
              on_record: Callable[[dict[str, Any]], None] | None = None) -> SweepOutcome:
    """Run the rows of a sweep (only those at a sparsity in ``sparsities`` when given) into flat records.

    The data (relative to ``root``, the repository, when given) is read and checked once and shared by every
    row; each row runs as ``spcakit reproduce`` runs a table's row, and its record keeps the full loading pattern.
    """
    sweep = settings(spec)
    check_experiment(spec)
    data = as_problem(fit_data(spec.data, root, spec.covariance))
    records = []
    for row in spec.rows:
        series, r = point(row)
        if sparsities is not None and r not in sparsities:
            continue
        wanted = ["pattern", *(panel.column for panel in sweep.panels)]  # a paper's metrics, whatever the method
        result = paper_fit(data, row.method, r=spec.r, **{"metrics": wanted, **fit_arguments(spec, row)})
        record = {"method": series, "r": r, "spec_method": row.method, "params": dict(row.params),
                  "pattern": list(result.metrics["pattern"])}
        record.update({panel.column: float(result.metrics[panel.column]) for panel in sweep.panels})
        record["seconds"] = result.seconds
        records.append(record)
        if on_record is not None:
            on_record(record)
    return SweepOutcome(spec=spec, records=tuple(records))


# -- the figure's files -----------------------------------------------------------------------------------
def curves(records: Sequence[dict[str, Any]], sweep: SweepSettings, key: str) -> dict[str, tuple[list[int], list[float]]]:
    """``{series: (r values, key values)}`` in the order of the spec's series, finite values only."""
    out = {}
    for label in sweep.series:
        points = sorted((rec["r"], rec[key]) for rec in records if rec["method"] == label and math.isfinite(rec[key]))
        if points:
            out[label] = ([r for r, _ in points], [v for _, v in points])
    return out


def plot(spec: ExperimentSpec, records: Sequence[dict[str, Any]]) -> Any:
    """One panel per ``sweep.panels`` entry, its column against r, one line per series, the legend below.

    Drawn by :func:`spcakit.plotting.plot_tradeoff` (needs matplotlib: ``pip install -e '.[plot]'``);
    returns the :class:`matplotlib.figure.Figure`, for :func:`spcakit.plotting.save`.
    """
    from spcakit import plotting

    sweep = settings(spec)
    figure, axes = plotting.new_figure(1, len(sweep.panels), figsize=FIGSIZE)
    for ax, panel in zip(axes, sweep.panels):
        plotting.plot_tradeoff(curves(records, sweep, panel.column), ax=ax, xlabel=sweep.xlabel, ylabel=panel.label,
                               legend=False)
    handles, labels = axes[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside lower center", ncols=len(labels), frameon=False)
    figure.suptitle(f"{sweep.plot_title}, k = {spec.r}")
    return figure


def markdown(spec: ExperimentSpec, records: Sequence[dict[str, Any]]) -> str:
    """One row per r, one column per series: the panel values (4 decimals) separated by ``/``.

    The best value of each panel at each r (as printed, ties included) is in bold; the cells of the
    series in ``sweep.show_pattern`` end with the loading pattern (nonzeros of each loading).
    """
    sweep = settings(spec)
    labels = list(sweep.series)
    lines = ["| r | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    for r in sorted({rec["r"] for rec in records}):
        at = {rec["method"]: rec for rec in records if rec["r"] == r}
        best = {panel.column: f"{(min if panel.best == 'min' else max)(rec[panel.column] for rec in at.values()):.4f}"
                for panel in sweep.panels}
        cells = []
        for label in labels:
            rec = at.get(label)
            if rec is None:
                cells.append("—")
                continue
            values = [f"{rec[panel.column]:.4f}" for panel in sweep.panels]
            values = [f"**{v}**" if v == best[panel.column] else v for v, panel in zip(values, sweep.panels)]
            pattern = f" ({'/'.join(map(str, rec['pattern']))})" if label in sweep.show_pattern else ""
            cells.append(" / ".join(values) + pattern)
        lines.append(f"| {r} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_outputs(outcome: SweepOutcome, folder: Path, inputs: Sequence[str | Path] = ()) -> list[Path]:
    """Write ``NAME.{csv,json,svg,md}`` in ``folder`` (made if missing), all or nothing, through the guarded writer
    (:func:`spcakit.output.files.write_outputs`): never onto an input (``inputs``), a write-protected file or through
    a link to an input; the plot is drawn and every file made before any is written."""
    from spcakit import plotting

    spec, records = outcome.spec, outcome.records
    sweep = settings(spec)
    table = io.StringIO()
    writer = csv.writer(table)
    writer.writerow(["method", "r", "pattern", *(panel.column for panel in sweep.panels), "params"])
    for rec in records:
        writer.writerow([rec["method"], rec["r"], " ".join(map(str, rec["pattern"])),
                         *(f"{rec[panel.column]:.6f}" for panel in sweep.panels), json.dumps(rec["params"], sort_keys=True)])
    contents = {
        "csv": table.getvalue(),
        "json": json.dumps(outcome.to_dict(), indent=1) + "\n",
        "svg": plotting.rendered(plot(spec, records), "svg"),
        "md": markdown(spec, records),
    }
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    files = {folder / f"{spec.name}.{suffix}": contents[suffix] for suffix in SUFFIXES}
    for path in files:
        check_output(path, [Path(source) for source in inputs], "--out")  # a builtin: name is no file: never the same
    write_files(files)
    return list(files)


def replot(spec: ExperimentSpec, folder: Path) -> Path:
    """Redraw ``NAME.svg`` in ``folder`` from the records of ``NAME.json`` beside it, running nothing."""
    from spcakit import plotting

    stem = Path(folder) / spec.name
    json_path = Path(f"{stem}.json")
    try:
        records = json.loads(json_path.read_text(encoding="utf-8"))["records"]
    except FileNotFoundError:
        raise SpecError(f"{json_path}: not found; --replot redraws the plot from the JSON that --out wrote") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SpecError(f"{json_path}: not the JSON of a sweep ({exc}); write it again with --out") from None
    return plotting.save(plot(spec, records), f"{stem}.svg")
