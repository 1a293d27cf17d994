"""``spcakit stability``: how often each variable is selected when the rows are resampled, and the choice of ``k``
by the stable support (:func:`spcakit.stability`, :func:`spcakit.stable_k`)."""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from spcakit import plotting
from spcakit.cli.common import (
    Progress,
    app,
    method_or_default,
    check_out,
    fail,
    read_data_option,
    warnings_on_stderr,
    write_out,
)
from spcakit.cli.levels import check_plot
from spcakit.cli.options import BadInput, FitOptions, ROpt, fit_options, parse_params
from spcakit.core.errors import SpcakitError
from spcakit.inputs.clusters import connected
from spcakit.output.json_values import json_value
from spcakit.workflows.paths.grids import AUTO, parse_k_levels
from spcakit.workflows.stability import Stability, StableK, stability, stable_k
from spcakit.workflows.stability.records import check_threshold
from spcakit.workflows.stability.resamples import SCHEMES

#: ``--resamples`` when not given, for one ``k`` and for every level of a grid (Meinshausen & Bühlmann's 100).
DEFAULT_RESAMPLES = 100
#: ``--threshold`` when not given with one ``k``; a grid's thresholds start at :func:`spcakit.stable_k`'s
#: ``min_threshold`` (0.6) and rise with ``k`` to keep the bound.
DEFAULT_THRESHOLD = 0.8
#: ``--error-bound`` when not given (a grid only): expected false selections per component.
DEFAULT_ERROR_BOUND = 1.0
#: What ``-k`` takes, in words, for the messages.
K_FORMS = ("an integer (one stability analysis, e.g. -k 5) or a grid of k to choose from by the stable support: "
           "FROM:TO (2:40), FROM:TO:STEP (2:40:2), a list (2,4,8) or auto")  # fmt: skip
_INTEGER = re.compile(r"^\s*\d+\s*$")


def parse_stability_k(text: str | None) -> int | str | None:
    """``-k``: ``None`` (the method's default k), one integer (one stability analysis) or a grid as text
    (``"2:40"``, ``"2:40:2"``, ``"2,4,8"``, ``"auto"``: :func:`spcakit.stable_k` chooses among its levels).

    A grid's entries are numbers: ``p`` (the number of variables, which ``spcakit path`` takes) is refused, since
    :func:`spcakit.stable_k` reads the grid before it knows ``p``.
    """
    if text is None:
        return None
    if _INTEGER.match(text):
        return int(text)
    grid = text.strip()
    if grid.lower() == AUTO:
        return AUTO
    entries = [entry.strip() for entry in re.split(r"[:,]", grid.strip("[]"))]
    if len(entries) > 1 and "p" in (entry.lower() for entry in entries):
        raise BadInput(f"-k {text}: a stability grid's entries are numbers (e.g. 2:40), not p; -k takes {K_FORMS}")
    if len(entries) > 1 and all(_INTEGER.match(entry) for entry in entries):
        return grid
    raise BadInput(f"-k takes {K_FORMS}; got {text!r}")


def parse_stability_top(text: str | None) -> int | None:
    """``--top N``: how many stable variables to print per component, a positive integer (``None``: all)."""
    if text is None:
        return None
    if not _INTEGER.match(text) or int(text) < 1:
        raise BadInput(f"--top takes a positive integer, the number of most often selected stable variables to print "
                       f"per component (e.g. --top 10); got {text!r}")  # fmt: skip
    return int(text)


def check_stability_options(
    resamples: int, scheme: str, threshold: float | None, error_bound: float | None, workers: int,
    grid: bool, scheduler: str | None,
) -> None:  # fmt: skip
    """Refuse, before the data are read, the values of ``stability``'s own options that cannot work (exit 2)."""
    if resamples < 2:
        raise BadInput(f"--resamples takes an integer of at least 2, the number of resamples of the rows (100 is "
                       f"usual, as in Meinshausen & Bühlmann); got {resamples}")  # fmt: skip
    if scheme not in SCHEMES:
        raise BadInput(f"--scheme takes subsample (half the rows without replacement, the scheme the error bound is "
                       f"proved for) or bootstrap (n rows with replacement); got {scheme!r}")  # fmt: skip
    if threshold is not None:
        try:
            check_threshold(threshold, "--threshold")
        except SpcakitError as exc:
            raise BadInput(str(exc)) from None
    if error_bound is not None:
        if not grid:
            raise BadInput("--error-bound sets the thresholds of a grid of k (-k 2:40, -k auto); with one k, give "
                           "the threshold itself with --threshold")  # fmt: skip
        if not (math.isfinite(error_bound) and error_bound > 0):
            raise BadInput(f"--error-bound takes a positive number, the expected false selections allowed per "
                           f"component (1 is usual); got {error_bound:g}")  # fmt: skip
    if workers < 1:
        raise BadInput(f"--workers takes a positive number of threads that fit resamples at once (e.g. --workers 4); "
                       f"got {workers}")  # fmt: skip
    if workers != 1 and scheduler is not None:
        raise BadInput("--workers and --scheduler both say where the resamples are fitted (threads here, or the "
                       "workers of a dask.distributed cluster); give one of them")  # fmt: skip


def render_stable_k(choice: StableK, source: str, top: int | None = None) -> str:
    """The text of ``spcakit stability`` with a grid of ``k``: a header, one line per level (the chosen one marked
    ``*``), the choice in words, then the chosen level's :meth:`~spcakit.Stability.describe`."""
    chosen = choice.stability
    lines = [
        (f"{chosen.result.method} on {source or 'the data'}: n={chosen.n_samples}, p={chosen.result.p}, r={chosen.r}, "
         f"{len(choice.levels)} level(s) of k, {chosen.n_resamples} resamples each (seed {chosen.seed}); "
         f"at most {choice.error_bound:g} expected false selection(s) per component"),
        "threshold: the least that keeps Meinshausen & Bühlmann's bound there (none: no threshold up to 1 does)",
        "",
    ]
    table = [["k", "stable", "threshold"]] + [
        [str(level), str(size), f"{threshold:.3f}" if threshold <= 1.0 else "none"]
        for level, size, threshold in zip(choice.levels, choice.stable_sizes, choice.thresholds)
    ]
    widths = [max(len(row[i]) for row in table) for i in range(3)]
    for row, level in zip(table, (None, *choice.levels)):
        mark = "  *" if level == choice.chosen else ""
        lines.append("  ".join(cell.rjust(width) for cell, width in zip(row, widths)) + mark)
    lines += ["", f"* chosen: {choice.reason}", "", "The stability at the chosen level:", chosen.describe(top=top)]
    return "\n".join(lines)


def _fit_options(options: FitOptions) -> dict[str, Any]:
    """The fit settings of ``options`` that are set, as keywords of :func:`spcakit.stability`."""
    settings = {"truncator": options.truncator, "deflator": options.deflator, "refiner": options.refiner,
                "constraint": options.constraint}  # fmt: skip
    given = {name: value for name, value in settings.items() if value is not None}
    if options.nonnegative:
        given["nonnegative"] = True
    if options.bound != "fast":
        given["bound"] = options.bound
    return given


def _document(found: Stability | StableK, source: str) -> str:
    """The JSON of ``--json`` and ``--out``: :meth:`to_dict` with the data source, NaN and infinities as null."""
    document = found.to_dict()
    document["data"] = source
    inner = document["stability"] if isinstance(found, StableK) else document
    inner["result"]["data"] = source
    return json.dumps(json_value(document), indent=2, allow_nan=False) + "\n"


@app.command("stability")
@fit_options(
    exclude=("covariance", "weights", "missing", "order"),
    data=(Annotated[str, typer.Option("--data", "-d", metavar="SOURCE", help="A data matrix (rows are samples): a .npy/.npz/.csv/.tsv file, a sparse .npz/.mtx file, a .zarr store, or builtin:random?n=..&p=..&seed=..; a covariance matrix has no rows to resample.")], ""),
    r=(ROpt, 1),
    seed=(Annotated[int, typer.Option("--seed", metavar="N", help="The seed of the resamples and of every fit, recorded in the JSON output: the same seed gives the same numbers whatever --workers or --scheduler.")], 0),
    scheduler=(Annotated[str | None, typer.Option("--scheduler", metavar="ADDRESS", help="Fit the resamples on the dask.distributed scheduler at ADDRESS (tcp://HOST:PORT), the data sent to its workers once; the numbers are those of a local run.")], None),
)
def stability_command(
    method: Annotated[str | None, typer.Argument(metavar="METHOD", help="A registered method (see `spcakit methods`); without it, the default method, auto. The methods tpower and spcart are 10 to 50 times cheaper per resample.", show_default=False)] = None,
    k: Annotated[str | None, typer.Option("-k", metavar="K|GRID", help="An integer: the nonzero variables per loading of one stability analysis (default: the method's k). A grid FROM:TO, FROM:TO:STEP, a list 2,4,8 or auto: choose k as the smallest whose stable support reaches the plateau the larger k level off at.")] = None,
    resamples: Annotated[int, typer.Option("--resamples", metavar="N", help="The number of resamples of the rows (at each k of a grid), at least 2.")] = DEFAULT_RESAMPLES,
    scheme: Annotated[str, typer.Option("--scheme", metavar="[subsample|bootstrap]", help="How the rows are resampled: subsample, half the rows without replacement (the scheme the error bound is proved for); bootstrap, n rows with replacement.")] = "subsample",
    threshold: Annotated[float | None, typer.Option("--threshold", metavar="P", help="The selection probability from which a variable is stable, in (0.5, 1], 0.8 by default; with a grid, the least threshold (default 0.6), raised at each k to keep the error bound.", show_default=False)] = None,
    error_bound: Annotated[float | None, typer.Option("--error-bound", metavar="E", help="With a grid of k only: the expected false selections allowed per component (Meinshausen & Bühlmann's bound), which sets each level's threshold (1 by default).", show_default=False)] = None,
    workers: Annotated[int, typer.Option("--workers", metavar="N", help="The number of threads that fit resamples at once.")] = 1,
    top: Annotated[str | None, typer.Option("--top", metavar="N", help="Print only each component's N most often selected stable variables, then a line saying how many more it has; the text only: --json and the --out file keep them all.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object: the selection probabilities, intervals, stable supports, error bounds and the full fit as `spcakit run --json` writes it (with a grid, also the levels and the choice).")] = False,
    out: Annotated[Path | None, typer.Option("--out", "-o", metavar="PATH", help="Also write the JSON to this file: atomically, only if the run succeeded, never over the input data.")] = None,
    plot: Annotated[Path | None, typer.Option("--plot", metavar="FIG", help="Also draw to this figure (.png, .svg or .pdf; needs matplotlib, the plot extra): the selection probabilities as a heat-map, or with a grid the stable support's size against k.")] = None,
    *,
    options: FitOptions,
) -> None:
    """Fit METHOD on resamples of the rows to find the stable variables.

    It reports how often each variable is selected and the stable supports. Each resample's components are
    matched to those of the fit on all rows; a variable is stable when it is selected in at least --threshold of
    the resamples, with Meinshausen & Bühlmann's bound on the expected number of false selections. With a grid
    of k, k is chosen by the size of the stable support.
    """
    method = method_or_default(method)
    try:
        if not options.data:
            raise BadInput("--data is required: a data matrix whose rows (samples) are resampled, e.g. --data "
                           "measurements.csv")  # fmt: skip
        level = parse_stability_k(k)
        grid = isinstance(level, str)
        top_value = parse_stability_top(top)
        check_stability_options(resamples, scheme, threshold, error_bound, workers, grid, options.scheduler)
        check_out(out, options.data)
        if plot is not None:
            check_plot(plot, out, options.data)
        param_values = parse_params(options.param)
        if "k" in param_values:
            raise BadInput("k is given with -k (an integer, or a grid such as -k 2:40), not --param k")
        dataset, matrix, is_cov, kept, dropped = read_data_option(options)
        if is_cov:  # no rows to resample: the library refuses the source, naming it
            matrix = dataset.source
        elif grid and level != AUTO:  # every level a k of the columns read, before any fit
            parse_k_levels(level, int(matrix.shape[1]))
        settings = dict(n_resamples=resamples, scheme=scheme, seed=options.seed, workers=workers,
                        center=not options.no_center, standardize=options.standardize,
                        feature_names=None if is_cov else dataset.feature_names, columns=kept, drop=dropped,
                        **_fit_options(options), **param_values)  # fmt: skip
        progress = Progress(sys.stderr.isatty())
        try:
            with connected(options.scheduler) as client, warnings_on_stderr(), progress.listening():
                if grid:
                    found: Stability | StableK = stable_k(
                        matrix, method, options.r, k=level, client=client,
                        error_bound=DEFAULT_ERROR_BOUND if error_bound is None else error_bound,
                        **({} if threshold is None else {"min_threshold": threshold}),
                        on_level=lambda at, size, _pi: progress.level_done(f"k = {at}: {size} stable"), **settings,
                    )  # fmt: skip
                else:
                    found = stability(matrix, method, options.r, k=level, client=client,
                                      threshold=DEFAULT_THRESHOLD if threshold is None else threshold, **settings)  # fmt: skip
        finally:
            progress.close()
    except (SpcakitError, BadInput) as exc:
        fail(str(exc))
        return
    text = _document(found, dataset.source) if as_json or out is not None else None
    if out is not None and text is not None:
        write_out(out, text, "stability")
    if as_json and text is not None:
        typer.echo(text, nl=False)
    elif isinstance(found, StableK):
        typer.echo(render_stable_k(found, dataset.source, top_value))
    else:
        typer.echo(found.describe(top=top_value))
    if out is not None:
        typer.echo(f"wrote the stability of {method} to {out}", err=True)
    if plot is not None:
        try:
            plotting.save(found.plot(), plot)
        except SpcakitError as exc:
            fail(str(exc))
        except OSError as exc:
            fail(f"cannot write --plot {plot}: {exc.strerror or exc}; nothing was written there (the previous "
                 "content of the file, if any, is untouched)")  # fmt: skip
        typer.echo(f"wrote the stability plot to {plot}", err=True)
