"""What every command shares: the typer app, the one-line errors (exit 2), reading the input, writing the output, progress."""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer

from spcakit.workflows.fit import fit
from spcakit.analysis.bounds import check_relaxation
from spcakit.analysis.certificate import certificate_text
from spcakit.analysis.metrics import CONSTRAINT_TOLERANCE, select_metrics
from spcakit.cli.helpformat import App
from spcakit.cli.options import (BadInput, FitOptions, csv_header, index_column, load_weights, parse_k, parse_lam, parse_metrics, parse_names,
                                  parse_params, parse_top)
from spcakit.core.errors import ConstantColumnWarning, MissingValueWarning, SpcakitError
from spcakit.inputs.names import DuplicateNamesWarning, duplicate_names_policy
from spcakit.core.records import IssuedWarning
from spcakit.inputs.options import MISSING_MODES
from spcakit.inputs.columns import unread_columns
from spcakit.inputs.datasets import load_source
from spcakit.inputs.files import check_outside_inputs
from spcakit.inputs.dense import Covariance
from spcakit.workflows.model import Model, check_model_path
from spcakit.output.files import check_output, write_output
from spcakit.workflows.paths import Target, target_k
from spcakit.core.plugins import get_registry, get_session
from spcakit.inputs.problem import default_feature_names
from spcakit.output.progress import Report, listen
from spcakit.workflows.results import Result
from spcakit.core.version import __version__

app = App(  # help screens in plain text, each argument and option value named (spcakit.cli.helpformat)
    name="spcakit",
    help="Sparse principal component analysis from composable parts.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


EXIT_BAD_INPUT = 2


def print_version(value: bool) -> None:
    if value:
        typer.echo(f"spcakit {__version__}")
        raise typer.Exit()


@app.callback()
def global_options(
    version: Annotated[bool, typer.Option("--version", is_eager=True, callback=print_version, help="Print spcakit's version and exit.")] = False,
) -> None:
    """Sparse principal component analysis from composable parts."""



def fail(message: str) -> None:
    typer.echo(f"Error: {message}", err=True)
    raise typer.Exit(EXIT_BAD_INPUT)


def write_out(out: Path, text: str, what: str) -> None:
    """Write ``text`` to ``--out`` atomically; if that fails, print it (the work must not be lost) and fail,
    saying that the file was left as it was."""
    try:
        write_output(out, text)
    except OSError as exc:
        typer.echo(text, nl=False)
        fail(f"cannot write --out {out}: {exc.strerror or exc}; the {what} is printed above instead "
              "(the previous content of the file, if any, is untouched)")


def warn_plugin_failures() -> None:
    session = get_session()
    for note in session.environment_notes:
        typer.echo(f"Warning: {note}", err=True)
    for record in session.failures():
        typer.echo(
            f"Warning: plugin {record.name!r} failed to load and is skipped: {record.error}", err=True
        )
    for plugin, note in session.refused():
        typer.echo(f"Warning: plugin {plugin!r}: method {note}; the method is unavailable", err=True)


def _missing_lines(result: Result) -> list[str]:
    """The line saying how missing values were imputed (none for complete data)."""
    record = None if result.input is None else result.input.missing
    if record is None:
        return []
    state = "converged" if record.converged else f"NOT converged (change {record.change:.3g} > {record.tol:g})"
    return [f"missing: {record.count} entries ({record.fraction:.1%}) imputed by EM on the sparse low-rank model, "
            f"{record.iterations} iteration(s), {state}"]


def check_missing_option(value: str) -> str:
    """``--missing`` checked (exit 2 for anything but auto, em or error)."""
    if value not in MISSING_MODES:
        raise BadInput(f"--missing takes auto, em or error (auto: impute missing values by EM with a warning, em: "
                       f"the same without it, error: refuse them); got {value!r}")
    return value


def render_text(result: Result, source: str, top: int | None = None) -> str:
    """The text report of ``spcakit run``: a header, each component's nonzero loadings by name, one line of what they
    explain beside PCA and the best possible, then the metrics, the certificate and the redundancy.

    The stopping reason is not shown (``--json`` has it): a component that stopped at a limit before converging is a
    warning. With ``top``, each component lists only its ``top`` largest loadings, then a line ``... and M more (K
    nonzero)`` where it has more (``--top``); everything else, the header's and the certificate's counts included, is
    the same.
    """
    default = result.spec.get("default_k")  # the cardinality a method that needs one got when given none
    components = f"{result.r} component{'s' if result.r != 1 else ''}"
    lines = [
        f"{result.method} on {source}: {result.p} variables, {components}, {result.seconds:.3g} s",
        *([] if default is None else [f"k = {default['k']} (default: {default['rule']})"]),
        *_missing_lines(result),
        # a warning issued as it arose was one `warning:` line on stderr then (warnings_on_stderr): not repeated here
        *(f"warning: {w}" for w in result.warnings if not isinstance(w, IssuedWarning)),
        "",
    ]
    sizes = [int(size) for size in np.count_nonzero(result.loadings, axis=0)]
    for j, (comp, size) in enumerate(zip(result.components(digits=4, top=top), sizes), start=1):
        lines.append(f"Component {j} ({size} nonzero)")
        width = max((len(name) for name, _ in comp), default=0)
        lines.extend(f"  {name:<{width}}  {round(weight, 4) + 0.0:+.4f}" for name, weight in comp)  # never -0.0
        if size > len(comp):
            lines.append(f"  ... and {size - len(comp)} more ({size} nonzero)")
    m = result.metrics
    summary = explained_text(m, sizes, result.spec.get("constraint"))
    if summary:
        lines += ["", summary]
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
    words = certificate_text(m.get("gap") or [], sizes, result.spec.get("constraint"))
    if words:
        lines += ["", "Certificate", *(f"  {line}" for line in words)]
    redundant = redundancy_text(m)
    if redundant:
        lines += ["", "Redundancy", *(f"  {line}" for line in redundant)]
    return "\n".join(lines)


def explained_text(metrics: dict[str, Any], sizes: list[int], constraint: str | None = None) -> str:
    """One sentence of what the components explain: their CPEV as a percentage, PCA's with as many components beside
    it, and how far they are at most from the best possible (the last ``gap``); empty without a CPEV."""
    cpev = metrics.get("cpev")
    if not isinstance(cpev, (int, float)):
        return ""
    r = len(sizes)
    text = f"Explains {round(100 * cpev, 1) + 0.0:.1f} % of the total variance"  # + 0.0: never -0.0
    pca = metrics.get("pca_cpev")
    if isinstance(pca, (int, float)):
        text += f" (PCA with {r} component{'s' if r != 1 else ''}: {round(100 * pca, 1) + 0.0:.1f} %)"
    gaps = metrics.get("gap") or []
    gap = gaps[-1] if gaps else None
    if isinstance(gap, (int, float)):
        which = {None: "", "orthogonal": " orthogonal", "uncorrelated": " uncorrelated"}.get(constraint, "")
        if gap <= 1e-6:
            text += (f"; no loading of {sizes[0]} nonzero explains more (certified to 1e-6)" if r == 1 else
                     f"; no {r}{which} loadings as sparse explain more together (certified to 1e-6)")  # fmt: skip
        else:
            best = (f"the best loading of {sizes[0]} nonzero" if r == 1
                    else f"the most any {r}{which} loadings as sparse explain")  # fmt: skip
            text += f"; at most {100 * gap:.3g} % below {best}"
    return text + "."


def redundancy_text(metrics: dict) -> list[str]:
    """How redundant the components are, in words, from the metrics ``orthogonality_violation``,
    ``correlation_violation``, ``fve`` and ``cpev`` (nothing for one component or without them)."""
    orth, corr = metrics.get("orthogonality_violation"), metrics.get("correlation_violation")
    pattern = metrics.get("pattern")
    if orth is None or corr is None or (pattern is not None and len(pattern) < 2):
        return []
    lines = [
        "loadings: orthogonal (to 1e-10)" if orth <= CONSTRAINT_TOLERANCE else
        f"loadings: not orthogonal (sum over pairs of |u_t^T u_s| = {orth:.3g}; --constraint orthogonal removes it)",
        "scores: uncorrelated (to 1e-10)" if corr <= CONSTRAINT_TOLERANCE else
        f"scores: correlated (sum over pairs of |corr| = {corr:.3g}; --constraint uncorrelated removes it)",
    ]
    fve, cpev = metrics.get("fve"), metrics.get("cpev")
    if fve is not None and cpev is not None and orth > CONSTRAINT_TOLERANCE:
        lines.append(f"FVE {fve:.4f} counts the variance the loadings share once per loading, CPEV {cpev:.4f} once")
    return lines


def check_out(out: Path | None, data: str) -> None:
    """Refuse an --out path before any work: inside the input (a Zarr store's files), under a file, the input
    file itself, a folder, a missing folder."""
    if out is None:
        return
    check_outside_inputs(out, [data], "--out")
    check_output(out, [Path(data)] if Path(data).exists() else [])


def check_save_model(save_model: Path | None, data: str, out: Path | None) -> None:
    """Refuse a --save-model path before any work: a folder, a missing folder, the input data or a path inside
    it, the --out file."""
    if save_model is None:
        return
    check_model_path(save_model, [data], "--save-model")
    if out is not None and os.path.realpath(out) == os.path.realpath(save_model):
        raise BadInput(f"--save-model and --out name the same file {str(save_model)!r}; give the model its own path")


class Progress:
    """A transient progress line on stderr (rich), only when stderr is a terminal: what a run is doing
    now, with a spinner and the time so far; it disappears when the run ends.

    Called as the fit's step callback (component, iteration); :meth:`show` sets any other text (the
    levels of a path or a cross-validation). Within :meth:`listening`, the reports of long-running parts
    (:mod:`spcakit.output.progress`: the ``exact`` method's nodes, best value, bound and gap) are drawn too, at
    most every :attr:`REPORT_INTERVAL` seconds, after the last level done when there is one.
    ``console`` is where it draws (stderr by default).
    """

    #: A part's reports redraw the line at most this often, in seconds (a search reports after every node).
    REPORT_INTERVAL = 0.25

    def __init__(self, enabled: bool, console: Any = None) -> None:
        self.enabled = enabled
        self.console = console
        self.count = 0  # levels done, for the commands that report levels
        self._display: Any = None
        self._task: Any = None
        self._level = ""  # the last level done, shown before a part's report
        self._reported_at = -math.inf

    def show(self, text: str) -> None:
        if not self.enabled:
            return
        if self._display is None:
            from rich.console import Console  # noqa: PLC0415 - only when a terminal shows progress
            from rich.progress import Progress as Display, SpinnerColumn, TextColumn, TimeElapsedColumn  # noqa: PLC0415

            console = self.console if self.console is not None else Console(stderr=True)
            self._display = Display(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                                    console=console, transient=True)  # fmt: skip
            self._task = self._display.add_task(text, total=None)
            self._display.start()
        self._display.update(self._task, description=text)

    def __call__(self, component: int, n_components: int, iteration: int) -> None:
        self.show(f"component {component + 1}/{n_components}, iteration {iteration}")

    def level_done(self, what: str) -> None:
        """One more level of a path or a cross-validation done; ``what`` describes the last one."""
        self.count += 1
        self._level = f"{self.count} level(s) done, the last at {what}"
        self.show(self._level)

    def report(self, report: Report) -> None:
        """A long-running part's progress (:func:`spcakit.output.progress.report`), drawn unless the last one was drawn
        less than :attr:`REPORT_INTERVAL` seconds ago."""
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._reported_at < self.REPORT_INTERVAL:
            return
        self._reported_at = now
        text = report.describe()
        self.show(f"{self._level}; {text}" if self._level else text)

    def listening(self) -> contextlib.AbstractContextManager[None]:
        """The block within which the parts' reports reach this line (:func:`spcakit.output.progress.listen`); when
        the line is off (stderr is no terminal, or ``--json``), nothing is installed and reports cost nothing."""
        return listen(self.report) if self.enabled else contextlib.nullcontext()

    def close(self) -> None:
        if self._display is not None:
            self._display.stop()
            self._display = None


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
    """``spcakit.fit``, or with a target, :func:`spcakit.workflows.paths.target_k` (``(result, None)`` / ``(result, target)``)."""
    if target_sparsity is None and target_cpev is None:
        return fit(data, method, **kwargs), None
    # target_k weights the rows (--weights) and imputes missing values as --missing says (each level by EM)
    chosen = target_k(data, method, sparsity=target_sparsity, cpev=target_cpev, **kwargs)
    return chosen.result, chosen


@contextlib.contextmanager
def warnings_on_stderr() -> Iterator[None]:
    """Within it, each distinct :class:`~spcakit.core.errors.ConstantColumnWarning`,
    :class:`~spcakit.core.errors.MissingValueWarning` or :class:`~spcakit.inputs.names.DuplicateNamesWarning` is one
    ``warning: ...`` line on stderr, as it is issued (columns with zero variance, a lowered ``k``, missing values
    imputed, repeated names renamed); other Python warnings show as usual."""
    shown: set[str] = set()
    with warnings.catch_warnings():
        warnings.simplefilter("always", ConstantColumnWarning)  # every level and fold: this set keeps them distinct
        warnings.simplefilter("always", MissingValueWarning)
        warnings.simplefilter("always", DuplicateNamesWarning)
        show = warnings.showwarning

        def on_stderr(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
            if not issubclass(category, (ConstantColumnWarning, MissingValueWarning, DuplicateNamesWarning)):
                show(message, category, filename, lineno, file, line)
            elif str(message) not in shown:
                shown.add(str(message))
                typer.echo(f"warning: {command_line_advice(str(message))}", err=True)

        warnings.showwarning = on_stderr
        yield


#: The Python API's advice in a warning, and the options that say the same on the command line.
PYTHON_ADVICE = ((re.compile(r"\bpass missing='(\w+)'"), r"give --missing \1"), (re.compile(r"\bmissing='(\w+)'"), r"--missing \1"))


def command_line_advice(message: str) -> str:
    """``message`` with the Python API's advice (``pass missing='em'``) said as the command line's (``give --missing
    em``): a warning the library issues names its keyword, the command line its option."""
    for pattern, replacement in PYTHON_ADVICE:
        message = pattern.sub(replacement, message)
    return message


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


def read_data_option(
    options: FitOptions, *, weights: bool = False, missing: bool = False
) -> tuple[Any, Any, bool, list[str] | None, list[str] | None]:
    """Read ``--data`` as ``run``, ``compose``, ``path`` and ``cv`` do: ``(dataset, matrix, is_cov, kept, dropped)``.

    The command line's own options (``--index-col``, a Zarr store's missing chunks, a CSV's text columns) are
    applied here; the matrix then enters :func:`spcakit.fit` (or ``path``, ``cv``) and its input door
    (:func:`spcakit.inputs.options.open_input`) like any array.

    ``matrix`` is the data matrix or a :class:`~spcakit.inputs.dense.Covariance`; ``kept`` and ``dropped`` are the
    columns for ``fit(columns=, drop=)``, with the ``--index-col`` column among the dropped. A CSV's columns that
    are dropped are never read as numbers: they may hold text (labels, IDs). An unknown ``--bound`` is refused
    first, before the data are read. ``--weights`` is refused unless the command takes it (``weights``:
    ``run``, ``compose`` and ``path``, which read the file with :func:`~spcakit.cli.options.load_weights`). ``missing``
    reads a CSV's empty and ``NA`` cells as NaN (``run`` and ``compose`` with ``--missing auto`` or ``em``), for
    :mod:`spcakit.workflows.imputation`.
    """
    if options.weights is not None and not weights:
        raise BadInput("--weights is taken by run, compose and path only, not by this command")
    check_relaxation(options.bound)
    data, covariance, index_col = options.data, options.covariance, options.index_col
    dropped, kept = parse_names(options.drop), parse_names(options.columns)
    layout = csv_header(data)
    if layout is not None and layout.labels == "text" and dropped and layout.header[0] in dropped:
        # the first column, all text, is read as row labels (the CSV reader's rule): asked to drop it, say so and go on
        typer.echo(f"note: --drop {layout.header[0]}: the first column holds text and is read as the rows' labels, "
                   "never as a variable; there is nothing to drop", err=True)  # fmt: skip
        dropped = [name for name in dropped if name != layout.header[0]] or None
    label = None
    if index_col is not None and layout is not None and not covariance:
        label = index_column(index_col, layout.names, layout)
    dataset = load_source(data, unread_columns(data, kept, [*(dropped or ()), *([label] if label else [])]),
                          allow_missing_chunks=options.allow_missing_chunks, missing=missing, mapped=True)  # fmt: skip
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


def method_or_default(method: str | None) -> str:
    """``method``, or the default method when none was named (``run``, ``stability``), checked by :func:`check_method`."""
    if method is None:
        default = get_registry().default_method()
        if default is None:
            fail("no method named and no plugin declares a default method; name one (see `spcakit methods`)")
        method = default.name
    check_method(method)
    return method


def check_method(method: str) -> None:
    """Refuse (exit 2) a method name that no plugin registered, listing those that are."""
    registry = get_registry()
    warn_plugin_failures()
    if method not in registry.method_names():
        names = ", ".join(registry.method_names()) or "(no method is registered: are plugins disabled?)"
        fail(f"unknown method {method!r}; choose one of: {names}")


def run_and_report(
    method: Any,
    options: FitOptions,
    *,
    k: str | None,
    lam: str | None,
    as_json: bool,
    out: Path | None,
    save_model: Path | None = None,
    target_sparsity: float | None = None,
    target_cpev: float | None = None,
    time_limit: float | None = None,
    metrics: str | None = None,
    top: str | None = None,
    duplicate_names: str = "rename",
) -> None:
    """Fit ``method`` (a name or a spec) as ``run`` and ``compose`` do, and print or write the result.

    ``top`` (``--top``) shortens the printed text only: the JSON, printed or written to ``out``, keeps every loading.
    """
    data = options.data
    stack = contextlib.ExitStack()  # --duplicate-names, for the reading and the fit
    try:
        check_out(out, data)
        check_save_model(save_model, data, out)
        lam_value = parse_lam(lam)
        param_values = parse_params(options.param)
        metric_choice = parse_metrics(metrics)
        top_value = parse_top(top)
        if metric_choice is not None:
            param_values["metrics"] = metric_choice
        else:  # the method's own set, and PCA's CPEV for the first screen's comparison (spcakit.fit leaves it out)
            name = method if isinstance(method, str) else method.name
            param_values["metrics"] = [*(m.name for m in select_metrics(get_registry(), None, name)), "pca_cpev"]
        if k is not None:
            if "k" in param_values:
                raise BadInput("k is given twice (-k and --param k=...); give it once")
            param_values["k"] = parse_k(k)
        if time_limit is not None:
            if "time_limit" in param_values:
                raise BadInput("the time limit is given twice (--time-limit and --param time_limit=...); give it once")
            if not time_limit > 0:
                raise BadInput(f"--time-limit is a number of seconds above 0; got {time_limit:g}")
            param_values["time_limit"] = time_limit
        check_targets(target_sparsity, target_cpev, sparsity_given=[
            name for name, given in (("-k", "k" in param_values), ("--lam", lam is not None)) if given
        ])  # fmt: skip
        missing = check_missing_option(options.missing)
        stack.enter_context(duplicate_names_policy(duplicate_names))  # the reading and the fit
        dataset, matrix, is_cov, kept, dropped = read_data_option(options, weights=True, missing=missing != "error")
        sample_weight = None if options.weights is None else load_weights(options.weights)
        if save_model is not None and is_cov:
            raise BadInput(
                f"--save-model: {dataset.source} is a covariance matrix, which has no column means to centre new data "
                "with; a model that scores new rows needs the data matrix (n samples x p variables)"
            )
        progress = Progress(sys.stderr.isatty() and not as_json)
        try:
            with on_cluster(options.scheduler, matrix, dataset.source), warnings_on_stderr(), progress.listening():
                result, chosen = fit_or_target(
                    matrix,
                    method,
                    target_sparsity,
                    target_cpev,
                    r=options.r,
                    truncator=options.truncator,
                    lam=lam_value,
                    deflator=options.deflator,
                    refiner=options.refiner,
                    seed=options.seed,
                    center=not options.no_center,
                    standardize=options.standardize,
                    feature_names=None if is_cov else dataset.feature_names,
                    columns=kept,
                    drop=dropped,
                    on_step=progress,
                    bound=options.bound,
                    nonnegative=options.nonnegative,
                    constraint=options.constraint,
                    order=options.order,
                    sample_weight=sample_weight,
                    missing=missing,
                    **param_values,
                )
        finally:
            progress.close()
        model_text = None if save_model is None else Model.from_result(result).to_json()
    except (SpcakitError, BadInput) as exc:
        fail(str(exc))
        return
    finally:
        stack.close()
    text = None  # the JSON document, made only where it is written: on 100 000 variables it is 25 MB of text
    if as_json or out is not None:
        document = result.to_dict()
        document["data"] = dataset.source
        if chosen is not None:
            document["target"] = chosen.to_dict()
        text = json.dumps(document, indent=2)
    if out is not None and text is not None:
        write_out(out, text + "\n", "result")
    if save_model is not None and model_text is not None:
        try:
            write_output(save_model, model_text)
        except OSError as exc:
            typer.echo(text if as_json and text is not None else render_text(result, dataset.source, top_value))
            fail(f"cannot write --save-model {save_model}: {exc.strerror or exc}; nothing was written there "
                  "(the previous content of the file, if any, is untouched)")
            return
    target_line = "" if chosen is None else f"\n\n{chosen.describe()}"
    typer.echo(text if as_json and text is not None else render_text(result, dataset.source, top_value) + target_line)
