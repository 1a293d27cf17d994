"""``spcakit path`` (the trade-off over sparsity levels) and ``spcakit cv`` (cross-validation over them)."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from spcakit import plotting
from spcakit.cli.common import (
    Progress,
    app,
    check_method,
    check_missing_option,
    check_out,
    check_targets,
    fail,
    on_cluster,
    read_data_option,
    render_text,
    warnings_on_stderr,
    write_out,
)
from spcakit.cli.options import BadInput, FitOptions, ROpt, fit_options, load_weights, parse_params
from spcakit.workflows.cv import RULES, CrossValidation, cross_validate, refuse_covariance
from spcakit.core.errors import SpcakitError, install_hint
from spcakit.output.files import check_outside_inputs
from spcakit.workflows.paths import PathLevel, SparsityPath
from spcakit.workflows.paths import path as fit_path


def render_path(found: SparsityPath, source: str, chosen: PathLevel | None = None, target_line: str = "") -> str:
    """The text table of ``spcakit path``: a header, then one line per level (the target's marked ``*``)."""
    grid = "auto grid of k" if found.auto else f"grid of {found.knob}"
    largest = "" if found.missing is None else ", the largest of the levels' completed data"
    lines = [
        f"{found.method} on {source or 'the data'}: p={found.p}, r={found.r}, {len(found)} level(s) ({grid}); "
        f"PCA's CPEV (the ceiling{largest}) {found.ceiling:.4f}",
        f"warm start: {found.warm_start_note}",
    ]
    if found.stop_note:
        lines.append(found.stop_note)
    if found.missing is not None:
        record = found.missing
        state = ("converged at every level" if record.converged else
                 f"NOT converged at every level (largest change {record.change:.3g} > {record.tol:g})")  # fmt: skip
        lines.append(f"missing: {record.count} entries ({record.fraction:.1%}) imputed by EM at each level (from the "
                     f"previous level's completed data), {record.iterations} iteration(s) in all, {state}; CPEV/PCA over PCA's on each level's "
                     "completed data")  # fmt: skip
    header = [found.knob, "nz", "CPEV", "CPEV/PCA", "NOR", "seconds"]
    table = [header] + [
        [f"{lv.level:g}" if isinstance(lv.level, float) else str(lv.level), str(lv.nz), f"{lv.cpev:.4f}",
         f"{lv.cpev_ratio:.4f}", f"{lv.nor + 0.0:.4f}", f"{lv.seconds:.4f}"]
        for lv in found.levels
    ]  # fmt: skip
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines.append("")
    for row, level in zip(table, (None, *found.levels)):
        mark = "  *" if chosen is not None and level is chosen else ""
        lines.append("  ".join(cell.rjust(width) for cell, width in zip(row, widths)) + mark)
    if target_line:
        lines += ["", target_line]
    return "\n".join(lines)


def describe_path_target(
    found: SparsityPath, level: PathLevel, target_sparsity: float | None, target_cpev: float | None
) -> str:
    """One line: the level of a path that meets ``--target-sparsity``/``--target-cpev``."""
    where = f"{found.knob} = {level.level:g}" if isinstance(level.level, float) else f"{found.knob} = {level.level}"
    if target_cpev is not None:
        which = "the smallest k" if found.knob == "k" else "the fewest nonzeros"
        threshold = f"{target_cpev * found.ceiling:.4f}" if found.missing is None else "on each level's completed data"
        head = (f"* target CPEV >= {target_cpev:g} x PCA's ({threshold}): {where}, {which} "
                "of this path that reaches it")  # fmt: skip
    else:
        head = (f"* target sparsity {target_sparsity:g} (fraction of zeros per loading): {where} = "
                f"round((1 - {target_sparsity:g}) * {found.p})")  # fmt: skip
    return f"{head}; CPEV {level.cpev:.4f} = {level.cpev_ratio:.4f} x PCA's"


@app.command("path")
@fit_options(
    missing=(Annotated[str, typer.Option("--missing", metavar="[auto|em|error]", help="Missing values (empty or NA cells of a CSV, NaN, stored NaN of sparse data): auto (the default) imputes them by EM on the sparse low-rank model at every level, each level's EM starting from the previous level's completed data, with a warning saying the fraction missing; em the same without the warning; error refuses them.")], "auto"),
)
def path_command(
    method: Annotated[str, typer.Argument(metavar="METHOD", help="A registered method that takes k (see `spcakit methods`), or any method with --lam.")],
    k: Annotated[str | None, typer.Option("-k", metavar="GRID", help="The levels of k (nonzero variables per loading): FROM:TO (1:13, or 1:p up to p), FROM:TO:STEP, a list 2,4,6, or auto (the default: every k up to p, at most 30 log-spaced for larger p, stopping where CPEV reaches PCA's).")] = None,
    lam: Annotated[str | None, typer.Option("--lam", "-l", metavar="GRID", help="Instead of -k: the method's lambda at each level, a list a,b,c run in that order (sparsest first, so that warm starts go from sparse to dense).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object (the levels with all their criteria, the ceiling, the input's record).")] = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Print CSV: a header, then one line per level with every column.")] = False,
    out: Annotated[Path | None, typer.Option("--out", "-o", metavar="PATH", help="Write the table (or the CSV, the JSON) to this file instead of printing it; atomically, never over the input data.")] = None,
    warm_start: Annotated[bool, typer.Option("--warm-start/--no-warm-start", help="Start each level from the previous level's loadings where the method allows it (fspca-ipu with the built-in plugins): faster, but often a lower CPEV.")] = False,
    target_sparsity: Annotated[float | None, typer.Option("--target-sparsity", metavar="S", help="Mark the level k = round((1 - S) p) of the grid (S: the fraction of zeros per loading).")] = None,
    target_cpev: Annotated[float | None, typer.Option("--target-cpev", metavar="F", help="Mark the smallest k of the grid whose CPEV is at least F x PCA's (0 < F <= 1).")] = None,
    plot: Annotated[Path | None, typer.Option("--plot", metavar="FIG", help="Also draw the path to this figure (.png, .svg or .pdf; needs matplotlib, the plot extra): CPEV against the level, PCA's CPEV dashed, and the dashed bound on the first loading's share of the variance (with -r 1, on the CPEV itself).")] = None,
    *,
    options: FitOptions,
) -> None:
    """Fit METHOD at a grid of sparsity levels: the trade-off curve.

    Each level's nonzeros, CPEV against PCA's, NOR and time are printed: the sparsity-variance trade-off, to
    choose k by eye or by a target (--target-sparsity, --target-cpev). PCA's CPEV for the same r is the ceiling;
    with k = p (no truncation) the truncating methods reach it.
    """

    check_method(method)
    try:
        if as_json and as_csv:
            raise BadInput("--json and --csv both choose the output format; give one of them")
        check_out(out, options.data)
        if plot is not None:
            check_plot(plot, out, options.data)
        param_values = parse_params(options.param)
        if "k" in param_values:
            raise BadInput("the levels of k are given with -k GRID (e.g. -k 1:13), not --param k")
        check_targets(target_sparsity, target_cpev, sparsity_given=[])
        missing = check_missing_option(options.missing)
        dataset, matrix, is_cov, kept, dropped = read_data_option(options, weights=True, missing=missing != "error")
        sample_weight = None if options.weights is None else load_weights(options.weights)
        progress = Progress(sys.stderr.isatty())
        try:
            with on_cluster(options.scheduler, matrix, dataset.source), warnings_on_stderr(), progress.listening():
                found = fit_path(
                    matrix, method, options.r, k=k, lam=lam, warm_start=warm_start, seed=options.seed,
                    center=not options.no_center, standardize=options.standardize,
                    feature_names=None if is_cov else dataset.feature_names, columns=kept, drop=dropped,
                    on_level=lambda level: progress.level_done(f"{level.level}: CPEV {level.cpev:.4f}"),
                    truncator=options.truncator, deflator=options.deflator, refiner=options.refiner,
                    bound=options.bound, nonnegative=options.nonnegative, constraint=options.constraint, order=options.order, missing=missing, sample_weight=sample_weight,
                    **param_values,
                )  # fmt: skip
        finally:
            progress.close()
        chosen = None
        if target_sparsity is not None or target_cpev is not None:
            chosen = found.target(cpev=target_cpev, sparsity=target_sparsity)
    except (SpcakitError, BadInput) as exc:
        fail(str(exc))
        return
    target_line = "" if chosen is None else describe_path_target(found, chosen, target_sparsity, target_cpev)
    if as_json:
        document = found.to_dict()
        document["data"] = dataset.source
        if chosen is not None:
            document["target"] = {"kind": "cpev" if target_cpev is not None else "sparsity",
                                  "value": target_cpev if target_cpev is not None else target_sparsity,
                                  found.knob: chosen.level, "cpev": chosen.cpev, "cpev_ratio": chosen.cpev_ratio}  # fmt: skip
        text = json.dumps(document, indent=2) + "\n"
    elif as_csv:
        text = found.to_csv()
    else:
        text = render_path(found, dataset.source, chosen, target_line) + "\n"
    if out is not None:
        write_out(out, text, "path")
        typer.echo(f"wrote {len(found)} level(s) of {found.method} to {out}", err=True)
    else:
        typer.echo(text, nl=False)
    if as_csv and target_line:  # the CSV holds the levels only
        typer.echo(target_line, err=True)
    if plot is not None:
        try:
            title = f"{found.method} on {dataset.source or 'the data'}, r = {found.r}"
            plotting.save(found.plot(bound=True, title=title), plot)
        except SpcakitError as exc:
            fail(str(exc))
        except OSError as exc:
            fail(f"cannot write --plot {plot}: {exc.strerror or exc}; nothing was written there (the previous "
                 "content of the file, if any, is untouched)")  # fmt: skip
        typer.echo(f"wrote the path plot to {plot}", err=True)


def check_plot(plot: Path, out: Path | None, data: str) -> None:
    """Refuse ``--plot`` before any work: a suffix :func:`spcakit.plotting.save` cannot write, a folder, the input
    data, a path inside it or inside any Zarr store, or the ``--out`` file, or no matplotlib."""
    check_outside_inputs(plot, [data], "--plot")
    plotting.check_plot_path(plot)
    for other, what in ((data, "--data"), (out, "--out")):
        if other is not None and os.path.realpath(other) == os.path.realpath(plot):
            raise BadInput(f"--plot and {what} name the same file {str(plot)!r}; give the figure its own path")
    if importlib.util.find_spec("matplotlib") is None:
        raise BadInput(f"--plot draws with matplotlib, which is not installed: {install_hint('matplotlib', plotting.PLOT_EXTRA)}")


def render_cv(found: CrossValidation, source: str) -> str:
    """The text of ``spcakit cv``: a header, one line per level (the least error marked ``<``, the chosen ``*``),
    the choice in words, then the chosen level's fit as ``spcakit run`` prints it."""
    lines = [
        f"{found.method} on {source or 'the data'}: n={found.n_samples}, p={found.p}, r={found.r}, {len(found)} "
        f"level(s) of {found.knob}, {found.folds}-fold cross-validation over rows (seed {found.seed})",
        "error: held-out entries predicted from their row's other variables, over the held-out total sum of squares",
    ]
    if found.stop_note:
        lines.append(found.stop_note)
    header = [found.knob, "nz", "mean error", "SE"]
    table = [header] + [
        [_cv_level(level.level), f"{level.nz:g}", f"{level.mean_error:.4f}", f"{level.std_error:.4f}"] for level in found
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines.append("")
    for row, level in zip(table, (None, *found)):
        marks = "" if level is None else ("<" if level.level == found.least else " ") + ("*" if level.level == found.chosen else "")
        lines.append(("  ".join(cell.rjust(width) for cell, width in zip(row, widths)) + "  " + marks).rstrip())
    lines += ["", "< least mean error, * chosen: " + found.describe(), "", "The fit on all rows at the chosen level:",
              render_text(found.result, source)]  # fmt: skip
    return "\n".join(lines)


def _cv_level(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


@app.command("cv")
@fit_options(
    exclude=("covariance", "scheduler"),
    data=(Annotated[str, typer.Option("--data", "-d", metavar="SOURCE", help="A data matrix (rows are samples): a .npy/.npz/.csv/.tsv file, a sparse .npz/.mtx file or a .zarr store (never densified whole), or builtin:random?n=..&p=..&seed=..; a covariance matrix has no rows to hold out.")], ""),
    r=(ROpt, 1),
    seed=(Annotated[int, typer.Option("--seed", metavar="N", help="The seed of the shuffle of the rows into folds and of every fit, recorded in the JSON output.")], 0),
    missing=(Annotated[str, typer.Option("--missing", metavar="[auto|em|error]", help="Missing values (empty or NA cells of a CSV, NaN, stored NaN of sparse data): auto (the default) imputes each fold's training rows by EM at every level and scores the held-out rows on their observed entries, with a warning saying the fraction missing; em the same without the warning; error refuses them.")], "auto"),
)
def cv_command(
    method: Annotated[str, typer.Argument(metavar="METHOD", help="A registered method that takes k (see `spcakit methods`), or any method with --lam.")],
    k: Annotated[str | None, typer.Option("-k", metavar="GRID", help="The levels of k (nonzero variables per loading): FROM:TO (1:13, or 1:p up to p), FROM:TO:STEP, a list 2,4,6, or auto (the default: every k up to p, at most 30 log-spaced for larger p).")] = None,
    lam: Annotated[str | None, typer.Option("--lam", "-l", metavar="GRID", help="Instead of -k: the method's lambda at each level, a list a,b,c.")] = None,
    folds: Annotated[int, typer.Option("--folds", metavar="K", help="The number of folds, from 2 to the number of rows n (n: leave one row out).")] = 5,
    rule: Annotated[str, typer.Option("--rule", metavar="[1se|min]", help="How the level is chosen: 1se, the sparsest level whose mean error is within one standard error of the least (it finds planted supports where min overshoots them); min, the least mean error.")] = "1se",
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object: the curve (levels, mean_error, std_error, fold_errors), the choice and the refit result as `spcakit run --json` writes it.")] = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Print CSV: a header, then one line per level with the mean error, its SE and each fold's error.")] = False,
    out: Annotated[Path | None, typer.Option("--out", "-o", metavar="PATH", help="Write the text (or the CSV, the JSON) to this file instead of printing it; atomically, never over the input data.")] = None,
    *,
    options: FitOptions,
) -> None:
    """Choose METHOD's sparsity by K-fold cross-validation over rows.

    At each level, METHOD is fitted on K - 1 folds of a data matrix's rows and the held-out rows are predicted
    entry by entry, each from its row's other variables (the ekf scheme of Bro et al. 2008); the level is chosen
    by the 1se or min rule (--rule) and the method refitted on all rows there.
    """
    check_method(method)
    try:
        if not options.data:
            raise BadInput("--data is required: a data matrix whose rows (samples) the folds hold out, e.g. --data "
                           "measurements.csv")  # fmt: skip
        if as_json and as_csv:
            raise BadInput("--json and --csv both choose the output format; give one of them")
        if rule not in RULES:
            raise BadInput(f"--rule must be min (the least mean held-out error) or 1se (the sparsest level within one "
                           f"standard error of the least); got {rule!r}")  # fmt: skip
        check_out(out, options.data)
        param_values = parse_params(options.param)
        if "k" in param_values:
            raise BadInput("the levels of k are given with -k GRID (e.g. -k 1:13), not --param k")
        missing = check_missing_option(options.missing)
        dataset, matrix, is_cov, kept, dropped = read_data_option(options, missing=missing != "error")
        if is_cov:
            refuse_covariance(dataset.source)
        progress = Progress(sys.stderr.isatty())
        try:
            with warnings_on_stderr(), progress.listening():
                found = cross_validate(
                    matrix, method, options.r, k=k, lam=lam, folds=folds, rule=rule, seed=options.seed,
                    center=not options.no_center, standardize=options.standardize,
                    feature_names=dataset.feature_names, columns=kept, drop=dropped,
                    on_level=lambda level: progress.level_done(f"{_cv_level(level.level)}: mean error {level.mean_error:.4f}"),
                    truncator=options.truncator, deflator=options.deflator, refiner=options.refiner,
                    bound=options.bound, nonnegative=options.nonnegative, constraint=options.constraint, order=options.order, missing=missing, **param_values,
                )  # fmt: skip
        finally:
            progress.close()
    except (SpcakitError, BadInput) as exc:
        fail(str(exc))
        return
    if as_json:
        document = found.to_dict()
        document["data"] = dataset.source
        document["result"]["data"] = dataset.source
        text = json.dumps(document, indent=2) + "\n"
    elif as_csv:
        text = found.to_csv()
    else:
        text = render_cv(found, dataset.source) + "\n"
    if out is not None:
        write_out(out, text, "cross-validation")
        typer.echo(f"wrote {len(found)} level(s) of {found.method}'s cross-validation to {out}", err=True)
    else:
        typer.echo(text, nl=False)
    if as_csv:  # the CSV holds the levels only
        typer.echo(found.describe(), err=True)
