"""``spcakit run``, ``spcakit compose`` and ``spcakit transform``."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from spcakit.cli.common import app, fail, method_or_default, run_and_report, warn_plugin_failures
from spcakit.cli.options import (
    BadInput,
    ColumnsOpt,
    DeflOpt,
    DropOpt,
    FitOptions,
    IndexColOpt,
    JsonOpt,
    KOpt,
    LamOpt,
    MetricsOpt,
    OutOpt,
    RefinerOpt,
    SaveModelOpt,
    TargetCpevOpt,
    TargetSparsityOpt,
    TopOpt,
    DuplicateNamesOpt,
    csv_header,
    fit_options,
    index_column,
    parse_names,
)
from spcakit.workflows.configure import compose as compose_spec
from spcakit.core.errors import SpcakitError
from spcakit.inputs.columns import unread_columns
from spcakit.inputs.datasets import load_source
from spcakit.workflows.model import Model
from spcakit.output.files import check_output, write_output
from spcakit.core.plugins import get_registry
from spcakit.inputs.problem import default_feature_names


@app.command()
@fit_options()
def run(
    method: Annotated[str | None, typer.Argument(metavar="METHOD", help="A registered method (see `spcakit methods`); without it, the default method, auto.", show_default=False)] = None,
    k: KOpt = None,
    lam: LamOpt = None,
    as_json: JsonOpt = False,
    out: OutOpt = None,
    save_model: SaveModelOpt = None,
    target_sparsity: TargetSparsityOpt = None,
    target_cpev: TargetCpevOpt = None,
    time_limit: Annotated[float | None, typer.Option("--time-limit", metavar="S", help="Seconds for the whole fit, shared among the loadings, for a solver that stops at a time limit with its best loading and bound (exact); the same as --param time_limit=S.")] = None,
    metrics: MetricsOpt = None,
    top: TopOpt = None,
    duplicate_names: DuplicateNamesOpt = "rename",
    *,
    options: FitOptions,
) -> None:
    """Run METHOD on a data set and print its loadings and metrics."""
    method = method_or_default(method)
    run_and_report(method, options, k=k, lam=lam, as_json=as_json, out=out, save_model=save_model,
                   target_sparsity=target_sparsity, target_cpev=target_cpev,
                   time_limit=time_limit, metrics=metrics, top=top, duplicate_names=duplicate_names)  # fmt: skip


@app.command()
@fit_options(exclude=("truncator", "deflator", "refiner"))
def compose(
    k: KOpt = None,
    driver: Annotated[str | None, typer.Option("--driver", metavar="NAME", help="The driver part (default: one that deflates if --deflator is given).")] = None,
    initializer: Annotated[str | None, typer.Option("--initializer", metavar="NAME", help="The initializer part.")] = None,
    updater: Annotated[str | None, typer.Option("--updater", metavar="NAME", help="The updater part.")] = None,
    truncator: Annotated[str | None, typer.Option("--truncator", "-t", metavar="NAME", help="The truncation part (default: the driver's default composition's).")] = None,
    deflator: DeflOpt = None,
    stopper: Annotated[str | None, typer.Option("--stopper", metavar="NAME", help="The stopper part (default: the driver's default composition's).")] = None,
    refiner: RefinerOpt = None,
    lam: LamOpt = None,
    as_json: JsonOpt = False,
    out: OutOpt = None,
    save_model: SaveModelOpt = None,
    metrics: MetricsOpt = None,
    top: TopOpt = None,
    duplicate_names: DuplicateNamesOpt = "rename",
    *,
    options: FitOptions,
) -> None:
    """Assemble a method from parts and run it.

    New combinations of parts are configuration, not code. Name the parts to use (see `spcakit parts`); those
    not named come from the driver's default composition.
    """
    get_registry()
    warn_plugin_failures()
    try:
        spec = compose_spec(
            driver=driver, initializer=initializer, updater=updater, truncator=truncator,
            deflator=deflator, stopper=stopper, refiner=refiner,
        )  # fmt: skip
    except SpcakitError as exc:
        fail(str(exc))
        return
    run_and_report(spec, options, k=k, lam=lam, as_json=as_json, out=out, save_model=save_model, metrics=metrics,
                   top=top, duplicate_names=duplicate_names)  # fmt: skip


def scores_csv(names: tuple[str, ...], scores: Any) -> str:
    """Scores as CSV: a header of component names, one line per row, numbers that read back exactly."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(names)
    for row in scores.tolist():
        writer.writerow(map(repr, row))
    return buffer.getvalue()


def _new_data(model: Model, data: str, index_col: str | None, dropped: list[str] | None, kept: list[str] | None) -> Any:
    """Load the new data for ``transform`` and score them: ``(source, scores)``.

    A CSV's columns that are dropped, set aside by ``--index-col``, not kept by ``--columns``, or unknown to the
    model are never read as numbers (they may hold text); the unknown ones are then refused by name unless
    dropped (:meth:`spcakit.workflows.model.Model.columns_of`).
    """
    layout = csv_header(data)
    label = None
    if index_col is not None and layout is not None:
        label = index_column(index_col, layout.names, layout)
    unread = set(unread_columns(data, kept, [*(dropped or ()), *([label] if label else [])]))
    if layout is not None and kept is None:
        unread |= set(layout.names) - set(model.feature_names)
    dataset = load_source(data, unread, missing=True)  # a row with empty or NA cells: scored from the others
    if dataset.is_covariance:
        raise BadInput(
            f"--data {dataset.source} holds a covariance matrix; transform scores data rows (n samples x p variables)"
        )
    if index_col is not None and layout is None:
        names = dataset.feature_names or default_feature_names(dataset.matrix.shape[1])
        label = index_column(index_col, names, None)
    if label is not None:
        dropped = [*(dropped or ()), label]
    scores = model.transform(dataset.matrix, dataset.feature_names, columns=kept, drop=dropped)
    return dataset.source, scores


@app.command()
def transform(
    model: Annotated[Path, typer.Argument(metavar="MODEL", help="A model file written by `spcakit run ... --save-model MODEL`.")],
    data: Annotated[str, typer.Option("--data", "-d", metavar="PATH", help="The new data: a .csv/.tsv/.npy/.npz file. Columns with names (a header) are matched to the model's variables by name, unnamed ones (.npy) taken in the model's order.")],
    out: Annotated[Path | None, typer.Option("--out", "-o", metavar="PATH", help="Write the scores to this file instead of printing them (never over the data or the model).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Write one JSON object (component_names, scores, ...) instead of CSV.")] = False,
    index_col: IndexColOpt = None,
    drop: DropOpt = None,
    columns: ColumnsOpt = None,
) -> None:
    """Score new data with a model saved by `run --save-model`.

    The scores are printed as CSV, one column per component. Columns are matched to the model's variables by name
    (a header, .npz names), in any order; a variable the data lack, or a column the model does not know, is
    refused by name (leave extra columns out with --drop or --columns). Data without names (.npy) are taken in
    the model's column order. A row with missing values (empty or NA cells, NaN) is scored from its observed
    entries alone (least squares on the loadings' rows of those variables; scores 0 for a row with none).
    """
    get_registry()
    warn_plugin_failures()
    try:
        if out is not None:
            check_output(out, [path for path in (Path(data), model) if path.exists()])
        fitted = Model.load(model)
        source, scores = _new_data(fitted, data, index_col, parse_names(drop), parse_names(columns))
    except (SpcakitError, BadInput) as exc:
        fail(str(exc))
        return
    if as_json:
        document = {
            "model": str(model), "method": fitted.method, "data": source, "n": int(scores.shape[0]),
            "r": fitted.r, "component_names": list(fitted.component_names), "scores": scores.tolist(),
        }  # fmt: skip
        text = json.dumps(document, indent=2) + "\n"
    else:
        text = scores_csv(fitted.component_names, scores)
    if out is None:
        typer.echo(text, nl=False)
        return
    try:
        write_output(out, text)
    except OSError as exc:
        fail(f"cannot write --out {out}: {exc.strerror or exc}; nothing was written there "
              "(the previous content of the file, if any, is untouched)")
        return
    typer.echo(f"wrote the scores of {scores.shape[0]} row(s) on {fitted.r} component(s) to {out}", err=True)
