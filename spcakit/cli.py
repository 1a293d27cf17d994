"""The ``spcakit`` command line (typer).

Method, part and role choices are read from the registry after plugins load,
so a third-party plugin's parts appear here exactly like the built-ins.
Bad input gets one clear line on stderr and exit code 2; nothing is written
to ``--out`` unless the run succeeded.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import os
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from spcakit.version import __version__
from spcakit.composition import compose as compose_spec
from spcakit.api import fit
from spcakit.inputs.csv_files import CsvLayout, csv_layout
from spcakit.inputs.datasets import load_source
from spcakit.errors import ConstantColumnWarning, PartFailure, SpcakitError
from spcakit.model import Model, check_model_path
from spcakit.cv import RULES, CrossValidation, CVLevel, cross_validate, refuse_covariance
from spcakit.output import check_output, write_output
from spcakit.paths import PathLevel, SparsityPath, Target, target_k
from spcakit.paths import path as fit_path
from spcakit.plugins import get_registry, get_session
from spcakit.inputs.dense import Covariance
from spcakit.problem import default_feature_names
from spcakit.inputs.columns import unknown_column_message, unread_columns
from spcakit.protocols import ROLES
from spcakit.state import Result

app = typer.Typer(
    name="spcakit",
    help="Sparse principal component analysis from composable parts.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

EXIT_BAD_INPUT = 2


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"spcakit {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[bool, typer.Option("--version", is_eager=True, callback=_print_version, help="Print spcakit's version and exit.")] = False,
) -> None:
    """Sparse principal component analysis from composable parts."""


class BadInput(Exception):
    """Raised inside commands for input errors found by the CLI itself."""


def _fail(message: str) -> None:
    typer.echo(f"Error: {message}", err=True)
    raise typer.Exit(EXIT_BAD_INPUT)


def _write_out(out: Path, text: str, what: str) -> None:
    """Write ``text`` to ``--out`` atomically; if that fails, print it (the work must not be lost) and fail,
    saying that the file was left as it was."""
    try:
        write_output(out, text)
    except OSError as exc:
        typer.echo(text, nl=False)
        _fail(f"cannot write --out {out}: {exc.strerror or exc}; the {what} is printed above instead "
              "(the previous content of the file, if any, is untouched)")


def _warn_plugin_failures() -> None:
    session = get_session()
    for record in session.failures():
        typer.echo(
            f"Warning: plugin {record.name!r} failed to load and is skipped: {record.error}", err=True
        )
    for plugin, note in session.refused():
        typer.echo(f"Warning: plugin {plugin!r}: method {note}; the method is unavailable", err=True)


# -- value parsing ----------------------------------------------------------------
def parse_value(text: str) -> Any:
    """A command-line value: JSON (numbers, booleans, lists) or else a string."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        lowered = text.strip().lower()
        if lowered in ("true", "false"):
            return lowered == "true"
        return text


def parse_lam(text: str | None) -> float | int | None:
    if text is None:
        return None
    value = text.strip()
    try:
        return int(value)
    except ValueError:
        pass
    try:
        number = float(value)
    except ValueError:
        raise BadInput(f"--lam must be a number (e.g. 0.27, 10 or 0.15); got {text!r}") from None
    if not math.isfinite(number):
        raise BadInput(f"--lam must be finite; got {text!r}")
    return number


def parse_k(text: str | None) -> Any:
    """``-k``: one integer (``5``) or one per component (``3,5,8`` or ``[3,5,8]``); ``spcakit.fit`` checks the values."""
    if text is None:
        return None
    items = [item.strip() for item in text.strip().strip("[]").split(",")]
    values = [parse_value(item) for item in items]
    if not all(items) or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        raise BadInput(
            f"-k takes the number of nonzero variables per loading: an integer (e.g. -k 5) or one per component "
            f"(e.g. -k 3,5,8); got {text!r}"
        )
    return values[0] if len(values) == 1 and "," not in text and "[" not in text else values


def parse_names(items: list[str] | None) -> list[str] | None:
    """``--columns``/``--drop``: column names, comma-separated and/or repeated (``a,b`` = ``a --drop b``)."""
    if items is None:
        return None
    names = [name.strip() for item in items for name in item.split(",")]
    return [name for name in names if name] or None


def csv_header(source: str) -> CsvLayout | None:
    """The layout of a CSV/TSV source, read from its first lines (``None`` for any other source)."""
    path = Path(source)
    if path.suffix.lower() not in (".csv", ".tsv") or not path.is_file():
        return None
    try:
        return csv_layout(path)
    except OSError:
        return None  # load_source says what is wrong with the file


def index_column(text: str, names: tuple[str, ...], layout: CsvLayout | None) -> str | None:
    """The name of the column ``--index-col`` means (``None``: the reader already set it aside as row labels).

    ``text`` is a column's name or its position ``N`` in the file, counting from 0 as pandas' ``index_col``
    does. A CSV's first column of row labels (text, or under an empty header cell) is never read as data,
    so naming it (or position 0) is accepted and changes nothing.
    """
    if text in names:
        return text
    labels = "none" if layout is None else layout.labels
    label_header = layout.header[0] if layout is not None and labels in ("header", "text") else None
    offset = 0 if labels == "none" else 1  # a label column comes first in the file
    if labels != "none" and text.strip() in ("0", label_header):
        return None
    if text.strip().isdigit():
        position = int(text)
        if position - offset < len(names):
            return names[position - offset]
        raise BadInput(
            f"--index-col {text}: the data have {len(names) + offset} columns, at positions 0 to "
            f"{len(names) + offset - 1} (counting from 0); give a position in that range or a column's name"
        )
    raise BadInput(unknown_column_message(text, names, "--index-col"))


#: Arguments of spcakit.fit that the commands set from their own options: never part parameters.
NOT_PART_PARAMETERS = ("data", "method", "r", "seed", "covariance", "center", "standardize", "feature_names",
                       "columns", "drop", "on_step", "metrics", "registry")  # fmt: skip


def parse_params(items: list[str] | None) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise BadInput(f"--param takes KEY=VALUE (e.g. --param tol=0.001); got {item!r}")
        if key.strip() in NOT_PART_PARAMETERS:
            raise BadInput(
                f"--param {key.strip()}=...: {key.strip()!r} is not a part parameter but a setting of the run; "
                "give it with the command's own option (see --help), e.g. --seed 1, -r 3, --standardize"
            )
        params[key.strip()] = parse_value(value)
    return params


# -- output -------------------------------------------------------------------------
def render_text(result: Result, source: str) -> str:
    default = result.spec.get("default_k")  # the cardinality a method that needs one got when given none
    lines = [
        f"{result.method} on {source}: p={result.p}, r={result.r}, {result.iterations} iteration(s), "
        f"{result.seconds:.3g} s",
        *([] if default is None else [f"k = {default['k']} (default: {default['rule']})"]),
        f"stopped: {result.stopping_reason}",
        *(f"warning: {w}" for w in result.warnings),
        "",
    ]
    for j, comp in enumerate(result.components(digits=4), start=1):
        lines.append(f"Component {j} ({len(comp)} nonzero)")
        width = max((len(name) for name, _ in comp), default=0)
        lines.extend(f"  {name:<{width}}  {round(weight, 4) + 0.0:+.4f}" for name, weight in comp)  # never -0.0
    m = result.metrics
    lines += ["", "Metrics"]
    registered = {metric.name: metric for metric in get_registry().metrics()}
    rows = []
    for key, value in m.items():
        metric = registered.get(key)
        if metric is not None:
            rows.append((metric.label, metric.format(value), metric.description))
        else:
            rows.append((key, json.dumps(value) if not isinstance(value, float) else f"{value:.4f}", ""))
    width = max(20, *(len(value) for _, value, _ in rows))
    for name, value, what in rows:
        lines.append(f"  {name:<9} {value:<{width}} {what}".rstrip())
    return "\n".join(lines)


def _check_out(out: Path | None, data: str) -> None:
    if out is None:
        return
    check_output(out, [Path(data)] if Path(data).exists() else [])


def _check_save_model(save_model: Path | None, data: str, out: Path | None) -> None:
    """Refuse a --save-model path before any work: a folder, a missing folder, the input data, the --out file."""
    if save_model is None:
        return
    check_model_path(save_model, [data], "--save-model")
    if out is not None and os.path.realpath(out) == os.path.realpath(save_model):
        raise BadInput(f"--save-model and --out name the same file {str(save_model)!r}; give the model its own path")


class _Progress:
    """A one-line progress display on stderr, only when stderr is a terminal."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.shown = False

    def __call__(self, component: int, n_components: int, iteration: int) -> None:
        if not self.enabled:
            return
        sys.stderr.write(f"\rcomponent {component + 1}/{n_components}, iteration {iteration}   ")
        sys.stderr.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\r" + " " * 60 + "\r")
            sys.stderr.flush()


def check_targets(target_sparsity: float | None, target_cpev: float | None, sparsity_given: list[str]) -> None:
    """At most one target, and none with another setting of the same sparsity (``-k``, ``--lam``)."""
    if target_sparsity is not None and target_cpev is not None:
        raise BadInput("--target-sparsity and --target-cpev both choose k; give one of them")
    target = "--target-sparsity" if target_sparsity is not None else "--target-cpev" if target_cpev is not None else None
    if target is not None and sparsity_given:
        verb = "sets" if len(sparsity_given) == 1 else "set"
        raise BadInput(f"{target} chooses k, and {' and '.join(sparsity_given)} {verb} the sparsity too; give one of them")


def fit_or_target(
    data: Any, method: Any, target_sparsity: float | None, target_cpev: float | None, **kwargs: Any
) -> tuple[Result, Target | None]:
    """``spcakit.fit``, or with a target, :func:`spcakit.paths.target_k` (``(result, None)`` / ``(result, target)``)."""
    if target_sparsity is None and target_cpev is None:
        return fit(data, method, **kwargs), None
    chosen = target_k(data, method, sparsity=target_sparsity, cpev=target_cpev, **kwargs)
    return chosen.result, chosen


@contextlib.contextmanager
def warnings_on_stderr() -> Iterator[None]:
    """Within it, each distinct :class:`~spcakit.errors.ConstantColumnWarning` is one ``warning: ...`` line on
    stderr, as it is issued (columns with zero variance, a lowered ``k``); other Python warnings show as usual."""
    shown: set[str] = set()
    with warnings.catch_warnings():
        warnings.simplefilter("always", ConstantColumnWarning)  # every level and fold: this set keeps them distinct
        show = warnings.showwarning

        def on_stderr(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
            if not issubclass(category, ConstantColumnWarning):
                show(message, category, filename, lineno, file, line)
            elif str(message) not in shown:
                shown.add(str(message))
                typer.echo(f"warning: {message}", err=True)

        warnings.showwarning = on_stderr
        yield


def on_cluster(scheduler: str | None, matrix: Any, source: str) -> Any:
    """The context in which ``--data``'s computations run: on the ``dask.distributed`` scheduler at
    ``--scheduler`` (connected for the run, then closed), which only data read by dask (a Zarr store) use."""
    if scheduler is None:
        return contextlib.nullcontext()
    from spcakit.inputs.dask_arrays import connected, is_dask_array  # noqa: PLC0415 - only with --scheduler

    if not is_dask_array(matrix):
        raise BadInput(
            f"--scheduler runs the computations on data read by dask, a Zarr store (--data NAME.zarr); --data {source} "
            "is read into memory and fitted here: leave --scheduler out"
        )
    return connected(scheduler)


def read_input(
    data: str, covariance: bool, index_col: str | None, drop: list[str] | None, columns: list[str] | None
) -> tuple[Any, Any, bool, list[str] | None, list[str] | None]:
    """Read ``--data`` as ``run``, ``compose`` and ``path`` do: ``(dataset, matrix, is_cov, kept, dropped)``.

    ``matrix`` is the data matrix or a :class:`~spcakit.inputs.dense.Covariance`; ``kept`` and ``dropped`` are the
    columns for ``fit(columns=, drop=)``, with the ``--index-col`` column among the dropped. A CSV's columns that
    are dropped are never read as numbers: they may hold text (labels, IDs).
    """
    dropped, kept = parse_names(drop), parse_names(columns)
    layout = csv_header(data)
    label = None
    if index_col is not None and layout is not None and not covariance:
        label = index_column(index_col, layout.names, layout)
    dataset = load_source(data, unread_columns(data, kept, [*(dropped or ()), *([label] if label else [])]))
    is_cov = covariance or dataset.is_covariance
    matrix: Any = Covariance(dataset.matrix, dataset.feature_names) if is_cov else dataset.matrix
    if index_col is not None:
        if is_cov:
            raise BadInput(
                "--index-col names a column of row IDs or labels in a data table; a covariance matrix has none "
                "(to leave variables out of a covariance, use --drop or --columns)"
            )
        if layout is None:
            names = dataset.feature_names or default_feature_names(dataset.matrix.shape[1])
            label = index_column(index_col, names, None)
        if label is not None:
            dropped = [*(dropped or ()), label]
    return dataset, matrix, is_cov, kept, dropped


def _run_and_report(
    method: Any,
    *,
    data: str,
    covariance: bool,
    r: int,
    truncator: str | None,
    lam: str | None,
    deflator: str | None,
    params: list[str] | None,
    seed: int | None,
    as_json: bool,
    out: Path | None,
    no_center: bool,
    refiner: str | None = None,
    k: str | None = None,
    standardize: bool = False,
    index_col: str | None = None,
    drop: list[str] | None = None,
    columns: list[str] | None = None,
    save_model: Path | None = None,
    target_sparsity: float | None = None,
    target_cpev: float | None = None,
    scheduler: str | None = None,
) -> None:
    try:
        _check_out(out, data)
        _check_save_model(save_model, data, out)
        lam_value = parse_lam(lam)
        param_values = parse_params(params)
        if k is not None:
            if "k" in param_values:
                raise BadInput("k is given twice (-k and --param k=...); give it once")
            param_values["k"] = parse_k(k)
        check_targets(target_sparsity, target_cpev, sparsity_given=[
            name for name, given in (("-k", "k" in param_values), ("--lam", lam is not None)) if given
        ])  # fmt: skip
        dataset, matrix, is_cov, kept, dropped = read_input(data, covariance, index_col, drop, columns)
        if save_model is not None and is_cov:
            raise BadInput(
                f"--save-model: {dataset.source} is a covariance matrix, which has no column means to centre new data "
                "with; a model that scores new rows needs the data matrix (n samples x p variables)"
            )
        progress = _Progress(sys.stderr.isatty() and not as_json)
        try:
            with on_cluster(scheduler, matrix, dataset.source), warnings_on_stderr():
                result, chosen = fit_or_target(
                    matrix,
                    method,
                    target_sparsity,
                    target_cpev,
                    r=r,
                    truncator=truncator,
                    lam=lam_value,
                    deflator=deflator,
                    refiner=refiner,
                    seed=seed,
                    center=not no_center,
                    standardize=standardize,
                    feature_names=None if is_cov else dataset.feature_names,
                    columns=kept,
                    drop=dropped,
                    on_step=progress,
                    **param_values,
                )
        finally:
            progress.close()
        model_text = None if save_model is None else Model.from_result(result).to_json()
    except (SpcakitError, BadInput) as exc:
        _fail(str(exc))
        return
    document = result.to_dict()
    document["data"] = dataset.source
    if chosen is not None:
        document["target"] = chosen.to_dict()
    text = json.dumps(document, indent=2)
    if out is not None:
        _write_out(out, text + "\n", "result")
    if save_model is not None and model_text is not None:
        try:
            write_output(save_model, model_text)
        except OSError as exc:
            typer.echo(text if as_json else render_text(result, dataset.source))
            _fail(f"cannot write --save-model {save_model}: {exc.strerror or exc}; nothing was written there "
                  "(the previous content of the file, if any, is untouched)")
            return
    target_line = "" if chosen is None else f"\n\n{chosen.describe()}"
    typer.echo(text if as_json else render_text(result, dataset.source) + target_line)


# -- shared options -------------------------------------------------------------------
DataOpt = Annotated[str, typer.Option("--data", "-d", help="a .npy/.npz/.csv/.tsv/.mtx path, a NAME.zarr store, or builtin:pitprops, builtin:zou, builtin:random?n=..&p=..&seed=..")]
CovOpt = Annotated[bool, typer.Option("--covariance", help="the file holds a covariance matrix, not data")]
ROpt = Annotated[int, typer.Option("-r", "--r", help="number of loadings")]
KOpt = Annotated[str | None, typer.Option("-k", "--k", "--target-k", metavar="K", help="sparsity: nonzero variables per loading, for every method that takes a cardinality: an integer, or one per component (3,5,8); the papers' own forms: --lam, --param")]
TargetSparsityOpt = Annotated[float | None, typer.Option("--target-sparsity", metavar="S", help="choose k for a fraction S of zeros per loading (0 <= S < 1): k = round((1 - S) p), a half rounded to the denser k")]
TargetCpevOpt = Annotated[float | None, typer.Option("--target-cpev", metavar="F", help="choose the smallest k whose CPEV is at least F x PCA's CPEV (0 < F <= 1): every k from below for up to 100 levels, by bisection over k beyond")]
TruncOpt = Annotated[str | None, typer.Option("--truncator", "-t", help="truncation part (see `spcakit parts --role truncator`)")]
LamOpt = Annotated[str | None, typer.Option("--lam", "-l", help="truncation parameter lambda: threshold (hard/soft), zeros per loading (sparsity), energy fraction (energy)")]
DeflOpt = Annotated[str | None, typer.Option("--deflator", help="deflation part, for deflation-driver methods")]
RefinerOpt = Annotated[str | None, typer.Option("--refiner", help="refine the finished loadings with this part ('none': skip the method's)")]
ParamOpt = Annotated[list[str] | None, typer.Option("--param", "-p", help="part parameter KEY=VALUE or ROLE.KEY=VALUE (repeatable)")]
SeedOpt = Annotated[int, typer.Option("--seed", help="seed of the random generator (recorded in the JSON output; the default 0 makes every run repeatable)")]
JsonOpt = Annotated[bool, typer.Option("--json", help="print one JSON object")]
OutOpt = Annotated[Path | None, typer.Option("--out", "-o", help="also write the JSON result to this file")]
NoCenterOpt = Annotated[bool, typer.Option("--no-center", help="do not centre the data columns")]
StandardizeOpt = Annotated[bool, typer.Option("--standardize", help="work on the correlation scale: divide each data column by its standard deviation (a covariance becomes its correlation matrix); for variables in different units")]
IndexColOpt = Annotated[str | None, typer.Option("--index-col", metavar="NAME|N", help="a column of row IDs or labels, by name or position (from 0): not a variable, dropped")]
DropOpt = Annotated[list[str] | None, typer.Option("--drop", metavar="COL[,COL..]", help="leave these columns out, e.g. a label column (repeatable)")]
ColumnsOpt = Annotated[list[str] | None, typer.Option("--columns", metavar="COL[,COL..]", help="use only these columns, in this order (repeatable)")]
SchedulerOpt = Annotated[str | None, typer.Option("--scheduler", metavar="ADDRESS", help="run the computations on a Zarr store (--data NAME.zarr) on the dask.distributed scheduler at ADDRESS (tcp://HOST:PORT); default: the local threaded scheduler")]
SaveModelOpt = Annotated[Path | None, typer.Option("--save-model", metavar="PATH", help="also write the fitted model (loadings, column means and scales, names) to this JSON file, for `spcakit transform`; only when the run succeeds, never over the input data")]


@app.command()
def run(
    method: Annotated[str, typer.Argument(help="a registered method (see `spcakit methods`)")],
    k: KOpt = None,
    data: DataOpt = "builtin:pitprops",
    covariance: CovOpt = False,
    r: ROpt = 2,
    truncator: TruncOpt = None,
    lam: LamOpt = None,
    deflator: DeflOpt = None,
    refiner: RefinerOpt = None,
    param: ParamOpt = None,
    seed: SeedOpt = 0,
    as_json: JsonOpt = False,
    out: OutOpt = None,
    no_center: NoCenterOpt = False,
    standardize: StandardizeOpt = False,
    index_col: IndexColOpt = None,
    drop: DropOpt = None,
    columns: ColumnsOpt = None,
    save_model: SaveModelOpt = None,
    target_sparsity: TargetSparsityOpt = None,
    target_cpev: TargetCpevOpt = None,
    scheduler: SchedulerOpt = None,
) -> None:
    """Run a registered METHOD on a data set and print its loadings and metrics."""
    registry = get_registry()
    _warn_plugin_failures()
    if method not in registry.method_names():
        _fail(f"unknown method {method!r}; choose one of: {', '.join(registry.method_names()) or '(no method is registered: are plugins disabled?)'}")
    _run_and_report(
        method, data=data, covariance=covariance, r=r, truncator=truncator, lam=lam, deflator=deflator,
        params=param, seed=seed, as_json=as_json, out=out, no_center=no_center, refiner=refiner, k=k,
        standardize=standardize, index_col=index_col, drop=drop, columns=columns, save_model=save_model,
        target_sparsity=target_sparsity, target_cpev=target_cpev, scheduler=scheduler,
    )  # fmt: skip


@app.command()
def compose(
    k: KOpt = None,
    driver: Annotated[str | None, typer.Option("--driver", help="driver part (default: one that deflates if --deflator is given)")] = None,
    initializer: Annotated[str | None, typer.Option("--initializer", help="initializer part")] = None,
    updater: Annotated[str | None, typer.Option("--updater", help="updater part")] = None,
    truncator: Annotated[str | None, typer.Option("--truncator", "-t", help="truncation part (default: the driver's default composition's)")] = None,
    deflator: DeflOpt = None,
    stopper: Annotated[str | None, typer.Option("--stopper", help="stopper part (default: the driver's default composition's)")] = None,
    refiner: RefinerOpt = None,
    data: DataOpt = "builtin:pitprops",
    covariance: CovOpt = False,
    r: ROpt = 2,
    lam: LamOpt = None,
    param: ParamOpt = None,
    seed: SeedOpt = 0,
    as_json: JsonOpt = False,
    out: OutOpt = None,
    no_center: NoCenterOpt = False,
    standardize: StandardizeOpt = False,
    index_col: IndexColOpt = None,
    drop: DropOpt = None,
    columns: ColumnsOpt = None,
    save_model: SaveModelOpt = None,
    scheduler: SchedulerOpt = None,
) -> None:
    """Assemble a method from parts and run it: new combinations are configuration, not code."""
    get_registry()
    _warn_plugin_failures()
    try:
        spec = compose_spec(
            driver=driver, initializer=initializer, updater=updater, truncator=truncator,
            deflator=deflator, stopper=stopper, refiner=refiner,
        )  # fmt: skip
    except SpcakitError as exc:
        _fail(str(exc))
        return
    _run_and_report(
        spec, data=data, covariance=covariance, r=r, truncator=None, lam=lam, deflator=None,
        params=param, seed=seed, as_json=as_json, out=out, no_center=no_center, k=k,
        standardize=standardize, index_col=index_col, drop=drop, columns=columns, save_model=save_model,
        scheduler=scheduler,
    )  # fmt: skip


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
    dropped (:meth:`spcakit.model.Model.columns_of`).
    """
    layout = csv_header(data)
    label = None
    if index_col is not None and layout is not None:
        label = index_column(index_col, layout.names, layout)
    unread = set(unread_columns(data, kept, [*(dropped or ()), *([label] if label else [])]))
    if layout is not None and kept is None:
        unread |= set(layout.names) - set(model.feature_names)
    dataset = load_source(data, unread)
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
    model: Annotated[Path, typer.Argument(help="a model file written by `spcakit run ... --save-model MODEL`")],
    data: Annotated[str, typer.Option("--data", "-d", help="the new data: a .csv/.tsv/.npy/.npz path; columns with names (a header) are matched to the model's variables by name, unnamed ones (.npy) taken in the model's order")],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="write the scores to this file instead of printing them (never over the data or the model)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="write one JSON object (component_names, scores, ...) instead of CSV")] = False,
    index_col: IndexColOpt = None,
    drop: DropOpt = None,
    columns: ColumnsOpt = None,
) -> None:
    """Score new data with a model saved by `run --save-model`: CSV, one column per component.

    Columns are matched to the model's variables by name (a header, .npz names), in any order; a variable the
    data lack, or a column the model does not know, is refused by name (leave extra columns out with --drop or
    --columns). Data without names (.npy) are taken in the model's column order.
    """
    get_registry()
    _warn_plugin_failures()
    try:
        if out is not None:
            check_output(out, [path for path in (Path(data), model) if path.exists()])
        fitted = Model.load(model)
        source, scores = _new_data(fitted, data, index_col, parse_names(drop), parse_names(columns))
    except (SpcakitError, BadInput) as exc:
        _fail(str(exc))
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
        _fail(f"cannot write --out {out}: {exc.strerror or exc}; nothing was written there "
              "(the previous content of the file, if any, is untouched)")
        return
    typer.echo(f"wrote the scores of {scores.shape[0]} row(s) on {fitted.r} component(s) to {out}", err=True)


def render_path(found: SparsityPath, source: str, chosen: PathLevel | None = None, target_line: str = "") -> str:
    """The text table of ``spcakit path``: a header, then one line per level (the target's marked ``*``)."""
    grid = "auto grid of k" if found.auto else f"grid of {found.knob}"
    lines = [
        f"{found.method} on {source or 'the data'}: p={found.p}, r={found.r}, {len(found)} level(s) ({grid}); "
        f"PCA's CPEV (the ceiling) {found.ceiling:.4f}",
        f"warm start: {found.warm_start_note}",
    ]
    if found.stop_note:
        lines.append(found.stop_note)
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
        head = (f"* target CPEV >= {target_cpev:g} x PCA's ({target_cpev * found.ceiling:.4f}): {where}, {which} "
                "of this path that reaches it")  # fmt: skip
    else:
        head = (f"* target sparsity {target_sparsity:g} (fraction of zeros per loading): {where} = "
                f"round((1 - {target_sparsity:g}) * {found.p})")  # fmt: skip
    return f"{head}; CPEV {level.cpev:.4f} = {level.cpev_ratio:.4f} x PCA's"


class _LevelProgress(_Progress):
    """The levels of a path done so far, on stderr, only when stderr is a terminal."""

    def __init__(self, enabled: bool) -> None:
        super().__init__(enabled)
        self.count = 0

    def level(self, level: PathLevel) -> None:
        self.count += 1
        if self.enabled:
            sys.stderr.write(f"\r{self.count} level(s) done, the last at {level.level}: CPEV {level.cpev:.4f}   ")
            sys.stderr.flush()
            self.shown = True


@app.command("path")
def path_command(
    method: Annotated[str, typer.Argument(help="a registered method that takes k (see `spcakit methods`), or any method with --lam")],
    k: Annotated[str | None, typer.Option("-k", "--k", metavar="GRID", help="the levels of k (nonzero variables per loading): FROM:TO (1:13, or 1:p up to p), FROM:TO:STEP, a list 2,4,6, or auto (the default: every k up to p, at most 30 log-spaced for larger p, stopping where CPEV reaches PCA's)")] = None,
    lam: Annotated[str | None, typer.Option("--lam", "-l", metavar="GRID", help="instead of -k: the method's lambda at each level, a list a,b,c run in that order (sparsest first, so that warm starts go from sparse to dense)")] = None,
    data: DataOpt = "builtin:pitprops",
    covariance: CovOpt = False,
    r: ROpt = 2,
    truncator: TruncOpt = None,
    deflator: DeflOpt = None,
    refiner: RefinerOpt = None,
    param: ParamOpt = None,
    seed: SeedOpt = 0,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object (the levels with all their criteria, the ceiling, the input's record)")] = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="print CSV: a header, then one line per level with every column")] = False,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="write the table (or the CSV, the JSON) to this file instead of printing it; atomically, never over the input data")] = None,
    no_center: NoCenterOpt = False,
    standardize: StandardizeOpt = False,
    index_col: IndexColOpt = None,
    drop: DropOpt = None,
    columns: ColumnsOpt = None,
    warm_start: Annotated[bool, typer.Option("--warm-start/--no-warm-start", help="start each level from the previous level's loadings where the method allows it (fspca-ipu with the built-in plugins): faster, but often a lower CPEV")] = False,
    target_sparsity: Annotated[float | None, typer.Option("--target-sparsity", metavar="S", help="mark the level k = round((1 - S) p) of the grid (S: the fraction of zeros per loading)")] = None,
    target_cpev: Annotated[float | None, typer.Option("--target-cpev", metavar="F", help="mark the smallest k of the grid whose CPEV is at least F x PCA's (0 < F <= 1)")] = None,
    scheduler: SchedulerOpt = None,
) -> None:
    """Fit METHOD at a grid of sparsity levels: nonzeros, CPEV against PCA's, NOR and time at each.

    The sparsity-variance trade-off, to choose k by eye or by a target. PCA's CPEV for the same r is the
    ceiling; with k = p (no truncation) the truncating methods reach it.
    """
    registry = get_registry()
    _warn_plugin_failures()
    if method not in registry.method_names():
        _fail(f"unknown method {method!r}; choose one of: {', '.join(registry.method_names()) or '(no method is registered: are plugins disabled?)'}")
    try:
        if as_json and as_csv:
            raise BadInput("--json and --csv both choose the output format; give one of them")
        _check_out(out, data)
        param_values = parse_params(param)
        if "k" in param_values:
            raise BadInput("the levels of k are given with -k GRID (e.g. -k 1:13), not --param k")
        check_targets(target_sparsity, target_cpev, sparsity_given=[])
        dataset, matrix, is_cov, kept, dropped = read_input(data, covariance, index_col, drop, columns)
        progress = _LevelProgress(sys.stderr.isatty())
        try:
            with on_cluster(scheduler, matrix, dataset.source), warnings_on_stderr():
                found = fit_path(
                    matrix, method, r, k=k, lam=lam, warm_start=warm_start, seed=seed, center=not no_center,
                    standardize=standardize, feature_names=None if is_cov else dataset.feature_names, columns=kept,
                    drop=dropped, on_level=progress.level, truncator=truncator, deflator=deflator, refiner=refiner,
                    **param_values,
                )  # fmt: skip
        finally:
            progress.close()
        chosen = None
        if target_sparsity is not None or target_cpev is not None:
            chosen = found.target(cpev=target_cpev, sparsity=target_sparsity)
    except (SpcakitError, BadInput) as exc:
        _fail(str(exc))
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
        _write_out(out, text, "path")
        typer.echo(f"wrote {len(found)} level(s) of {found.method} to {out}", err=True)
    else:
        typer.echo(text, nl=False)
    if as_csv and target_line:  # the CSV holds the levels only
        typer.echo(target_line, err=True)


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


class _CVProgress(_Progress):
    """The levels of a cross-validation done so far, on stderr, only when stderr is a terminal."""

    def __init__(self, enabled: bool) -> None:
        super().__init__(enabled)
        self.count = 0

    def level(self, level: CVLevel) -> None:
        self.count += 1
        if self.enabled:
            sys.stderr.write(f"\r{self.count} level(s) done, the last at {_cv_level(level.level)}: mean error "
                             f"{level.mean_error:.4f}   ")  # fmt: skip
            sys.stderr.flush()
            self.shown = True


@app.command("cv")
def cv_command(
    method: Annotated[str, typer.Argument(help="a registered method that takes k (see `spcakit methods`), or any method with --lam")],
    k: Annotated[str | None, typer.Option("-k", "--k", metavar="GRID", help="the levels of k (nonzero variables per loading): FROM:TO (1:13, or 1:p up to p), FROM:TO:STEP, a list 2,4,6, or auto (the default: every k up to p, at most 30 log-spaced for larger p)")] = None,
    lam: Annotated[str | None, typer.Option("--lam", "-l", metavar="GRID", help="instead of -k: the method's lambda at each level, a list a,b,c")] = None,
    data: Annotated[str, typer.Option("--data", "-d", help="a data matrix (rows are samples): a .npy/.npz/.csv/.tsv path, or builtin:random?n=..&p=..&seed=..; a covariance matrix has no rows to hold out")] = "",
    r: Annotated[int, typer.Option("-r", "--r", help="number of loadings")] = 1,
    folds: Annotated[int, typer.Option("--folds", help="number of folds K, from 2 to the number of rows n (n: leave one row out)")] = 5,
    rule: Annotated[str, typer.Option("--rule", metavar="min|1se", help="1se: the sparsest level whose mean error is within one standard error of the least (finds planted supports where min overshoots them); min: the least mean error")] = "1se",
    truncator: TruncOpt = None,
    deflator: DeflOpt = None,
    refiner: RefinerOpt = None,
    param: ParamOpt = None,
    seed: Annotated[int, typer.Option("--seed", help="seed of the shuffle of the rows into folds and of every fit (recorded in the JSON output)")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object: the curve (levels, mean_error, std_error, fold_errors), the choice and the refit result as `spcakit run --json` writes it")] = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="print CSV: a header, then one line per level with the mean error, its SE and each fold's error")] = False,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="write the text (or the CSV, the JSON) to this file instead of printing it; atomically, never over the input data")] = None,
    no_center: NoCenterOpt = False,
    standardize: StandardizeOpt = False,
    index_col: IndexColOpt = None,
    drop: DropOpt = None,
    columns: ColumnsOpt = None,
) -> None:
    """Choose METHOD's sparsity by K-fold cross-validation over the rows of a data matrix.

    At each level, METHOD is fitted on K - 1 folds and the held-out rows are predicted entry by entry, each
    from its row's other variables (the ekf scheme of Bro et al. 2008); the level is chosen by the 1se or min
    rule and the method refitted on all rows there.
    """
    registry = get_registry()
    _warn_plugin_failures()
    if method not in registry.method_names():
        _fail(f"unknown method {method!r}; choose one of: {', '.join(registry.method_names()) or '(no method is registered: are plugins disabled?)'}")
    try:
        if not data:
            raise BadInput("--data is required: a data matrix whose rows (samples) the folds hold out, e.g. --data "
                           "measurements.csv")  # fmt: skip
        if as_json and as_csv:
            raise BadInput("--json and --csv both choose the output format; give one of them")
        if rule not in RULES:
            raise BadInput(f"--rule must be min (the least mean held-out error) or 1se (the sparsest level within one "
                           f"standard error of the least); got {rule!r}")  # fmt: skip
        _check_out(out, data)
        param_values = parse_params(param)
        if "k" in param_values:
            raise BadInput("the levels of k are given with -k GRID (e.g. -k 1:13), not --param k")
        dataset, matrix, is_cov, kept, dropped = read_input(data, False, index_col, drop, columns)
        if is_cov:
            refuse_covariance(dataset.source)
        progress = _CVProgress(sys.stderr.isatty())
        try:
            with warnings_on_stderr():
                found = cross_validate(
                    matrix, method, r, k=k, lam=lam, folds=folds, rule=rule, seed=seed, center=not no_center,
                    standardize=standardize, feature_names=dataset.feature_names, columns=kept,
                    drop=dropped, on_level=progress.level, truncator=truncator, deflator=deflator, refiner=refiner,
                    **param_values,
                )  # fmt: skip
        finally:
            progress.close()
    except (SpcakitError, BadInput) as exc:
        _fail(str(exc))
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
        _write_out(out, text, "cross-validation")
        typer.echo(f"wrote {len(found)} level(s) of {found.method}'s cross-validation to {out}", err=True)
    else:
        typer.echo(text, nl=False)
    if as_csv:  # the CSV holds the levels only
        typer.echo(found.describe(), err=True)


@app.command()
def methods(as_json: JsonOpt = False) -> None:
    """List the registered methods and their compositions."""
    registry = get_registry()
    _warn_plugin_failures()
    infos = registry.methods()
    if as_json:
        typer.echo(json.dumps([{"plugin": i.plugin, **i.spec.to_dict()} for i in infos], indent=2))
        return
    width = max((len(i.spec.name) for i in infos), default=0)
    for info in infos:
        s = info.spec
        parts = f"{s.driver}: {s.initializer.name} -> {s.updater.name} -> {s.truncator.name}"
        if s.deflator is not None:
            parts += f", deflate {s.deflator.name}"
        if s.refiner is not None:
            parts += f", refine {s.refiner.name}"
        typer.echo(f"{s.name:<{width}}  {s.summary}\n{'':<{width}}  [{parts}]  ({info.plugin})")


def _shown(value: Any) -> str:
    """A parameter default as ``spcakit parts`` prints it; a plugin's broken ``__repr__`` shows as its type."""
    try:
        return repr(value)
    except Exception:
        return f"<{type(value).__name__}>"


def _json_default(value: Any) -> Any:
    """A parameter default for ``parts --json``: JSON values as they are, anything else as its repr."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)) and all(v is None or isinstance(v, (bool, int, float, str)) for v in value):
        return list(value)
    return _shown(value)


@app.command()
def parts(
    role: Annotated[str | None, typer.Option("--role", help=f"only this role: {', '.join(ROLES)}")] = None,
    as_json: JsonOpt = False,
) -> None:
    """List the registered parts by role."""
    registry = get_registry()
    _warn_plugin_failures()
    if role is not None and role not in ROLES:
        _fail(f"unknown role {role!r}; choose one of: {', '.join(ROLES)}")
    infos = registry.parts(role)
    if as_json:
        doc = [
            {"role": i.role, "name": i.name, "plugin": i.plugin, "summary": i.summary, "paper": i.paper,
             "lam": i.lam, "parameters": {k: _json_default(v) for k, v in i.parameters().items()}}
            for i in infos
        ]  # fmt: skip
        typer.echo(json.dumps(doc, indent=2, default=str))
        return
    current = None
    for info in infos:
        if info.role != current:
            current = info.role
            typer.echo(f"{current}s:")
        params = ", ".join(f"{k}={_shown(v)}" for k, v in info.parameters().items())
        typer.echo(f"  {info.name:<18} {info.summary}  [{params}]  ({info.plugin})".rstrip())


@app.command()
def plugins(as_json: JsonOpt = False) -> None:
    """List the loaded plugins: name, version, hooks, and load errors."""
    session = get_session()
    records = list(session.records.values())
    if as_json:
        typer.echo(json.dumps(
            [{"name": r.name, "package": r.package, "version": r.version, "hooks": list(r.hooks), "error": r.error,
              "refused": list(r.refused)} for r in records],
            indent=2,
        ))  # fmt: skip
        return
    for rec in records:
        status = f"FAILED: {rec.error}" if rec.error else ", ".join(rec.hooks)
        typer.echo(f"{rec.name:<16} {rec.package} {rec.version}  {status}")
        for note in rec.refused:
            typer.echo(f"{'':<16} unavailable method {note}")


@app.command()
def reproduce(
    name: Annotated[str, typer.Argument(help="an experiment in specs/experiments/ (e.g. spcart-table4), or the path of an experiment .toml file")],
    as_json: JsonOpt = False,
    check: Annotated[bool, typer.Option("--check", help="exit 1 if a row marked must_match differs from the paper")] = False,
) -> None:
    """Run a published table's experiment and print ours next to the paper's numbers."""
    from spcakit.reproduce import run_experiment

    get_registry()
    _warn_plugin_failures()
    try:
        outcome = run_experiment(name)
    except SpcakitError as exc:
        _fail(str(exc))
        return
    if as_json:
        typer.echo(json.dumps(outcome.to_dict(), indent=2))
    else:
        spec = outcome.spec
        typer.echo(f"{spec.title}\n{spec.paper}\n")
        columns = list(spec.columns)
        header = ["row"] + [f"{c} (paper / ours)" for c in columns] + ["match with paper"]
        table = [header]
        for row in outcome.rows:
            cells = [row.row.label]
            for c in columns:
                paper = row.row.paper.get(c, "-")
                cells.append(f"{paper} / {row.ours[c]}")
            if row.matched:
                verdict = "all"
            else:
                verdict = "differs: " + ",".join(c for c, ok in row.matches.items() if not ok)
            if row.row.must_match:
                verdict += " | required " + ("ok" if row.required_matched else "FAILED")
            cells.append(verdict)
            table.append(cells)
        widths = [max(len(r[i]) for r in table) for i in range(len(header))]
        for k, cells in enumerate(table):
            typer.echo("  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip())
            if k == 0:
                typer.echo("  ".join("-" * w for w in widths))
        if spec.notes.strip():
            typer.echo("\n" + spec.notes.strip())
    if check and outcome.failures:
        typer.echo(f"{len(outcome.failures)} required row(s) differ from the paper", err=True)
        raise typer.Exit(1)


@app.command("plot")
def plot_command(
    kind: Annotated[str, typer.Argument(help="path (the JSON of `spcakit path ... --json --out F`), loadings or variance (of `spcakit run ... --out F`, or the refit result of `spcakit cv ... --json --out F`), cv (of `spcakit cv ... --json --out F`)")],
    inputs: Annotated[list[Path], typer.Argument(help="the JSON file; for path, one or more (one line each, same data and r)")],
    out: Annotated[Path, typer.Option("--out", "-o", help="the figure: .png, .svg or .pdf (the format is taken from the suffix); written atomically, only when the plot succeeds")],
    title: Annotated[str | None, typer.Option("--title", help="the plot's title (default: the method, and for a path the data and r; '' for none)")] = None,
    width: Annotated[float | None, typer.Option("--width", metavar="INCHES", help="the figure's width in inches (default: the plot's own)")] = None,
    height: Annotated[float | None, typer.Option("--height", metavar="INCHES", help="the figure's height in inches (default: the plot's own)")] = None,
    dpi: Annotated[float | None, typer.Option("--dpi", help="dots per inch of a PNG (default 100): it is width x dpi by height x dpi pixels")] = None,
) -> None:
    """Draw a figure from the JSON that `spcakit path`, `run` or `cv` wrote (needs matplotlib, the plot extra).

    path: CPEV against the sparsity level, PCA's CPEV as the ceiling. loadings: a heat-map of the loadings by
    variable name. variance: the additional variance of each component. cv: the cross-validation curve and the
    chosen level.
    """
    from spcakit.figures import plot_json

    try:
        written = plot_json(kind, inputs, out, title=title, width=width, height=height, dpi=dpi)
    except SpcakitError as exc:
        _fail(str(exc))
        return
    except OSError as exc:
        _fail(f"cannot write --out {out}: {exc.strerror or exc}; nothing was written (the previous content of the "
              "file, if any, is untouched)")
        return
    typer.echo(f"wrote the {kind} plot to {written}", err=True)


EXIT_INTERNAL = 1
EXIT_INTERRUPTED = 130


def main(argv: list[str] | None = None) -> None:
    """Console entry point: the one error boundary of the command line.

    Every command ends in exactly one of: success (0); a user error with a message saying what is
    wrong and what would be valid (2); an interruption, "interrupted" (130, no traceback); or an
    internal error - a short message naming the failing part and its plugin when it is known,
    asking to report it, with the traceback only under ``--debug`` or ``SPCAKIT_DEBUG=1`` (1).
    """
    # click's base of usage errors, whether typer vendors click (>= 0.16) or depends on it
    click_error = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args or os.environ.get("SPCAKIT_DEBUG") == "1"
    args = [a for a in args if a != "--debug"]
    try:
        code = app(args=args, prog_name="spcakit", standalone_mode=False)
        if code == EXIT_INTERRUPTED:  # typer turns Ctrl-C into this exit code, silently
            typer.echo("interrupted", err=True)
    except typer.Exit as exc:
        code = exc.exit_code
    except click_error as exc:  # usage errors: unknown option, missing argument
        if type(exc).__name__ != "NoArgsIsHelpError":  # that one has printed the help already
            exc.show()
        code = exc.exit_code
    except (typer.Abort, KeyboardInterrupt) as exc:
        cause = exc.__cause__ if isinstance(exc, typer.Abort) else exc
        if isinstance(cause, EOFError):
            typer.echo("Error: unexpected end of input", err=True)
            code = EXIT_BAD_INPUT
        else:
            typer.echo("interrupted", err=True)
            code = EXIT_INTERRUPTED
    except SpcakitError as exc:
        typer.echo(f"Error: {exc}", err=True)
        code = EXIT_BAD_INPUT
    except Exception as exc:
        if debug:
            import traceback

            traceback.print_exc()
        what = str(exc) if isinstance(exc, PartFailure) else f"{type(exc).__name__}: {exc}"
        typer.echo(
            f"Internal error: {what}\n(this is a bug, not a problem with your input: please report it; "
            "run again with --debug or SPCAKIT_DEBUG=1 for the traceback)",
            err=True,
        )
        code = EXIT_INTERNAL
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
