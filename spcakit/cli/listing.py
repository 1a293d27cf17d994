"""``spcakit methods``, ``parts``, ``plugins``, ``reproduce`` and ``plot``: what is registered, and the papers' tables."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from spcakit.cli.common import app, fail, warn_plugin_failures
from spcakit.cli.options import JsonOpt
from spcakit.core.errors import SpcakitError
from spcakit.output.json_values import NotJsonError, json_value
from spcakit.output.files import check_output, check_outside_inputs, write_output
from spcakit.core.plugins import get_registry, get_session
from spcakit.core.protocols import ROLES


@app.command()
def methods(as_json: JsonOpt = False) -> None:
    """List the registered methods and their compositions."""
    registry = get_registry()
    warn_plugin_failures()
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
    """A parameter default for ``parts --json``: JSON values as a result records them
    (:func:`spcakit.output.json_values.json_value`: a set as a sorted list, NaN as null), anything else as its repr."""
    try:
        return json_value(value)
    except (NotJsonError, RecursionError):
        return _shown(value)


@app.command()
def parts(
    role: Annotated[str | None, typer.Option("--role", metavar="ROLE", help=f"List only the parts of this role: {', '.join(ROLES)}.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """List the registered parts by role."""
    registry = get_registry()
    warn_plugin_failures()
    if role is not None and role not in ROLES:
        fail(f"unknown role {role!r}; choose one of: {', '.join(ROLES)}")
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
    name: Annotated[str, typer.Argument(metavar="EXPERIMENT", help="An experiment in specs/experiments/ (e.g. spcart-table4), or the path of an experiment .toml file.")],
    as_json: JsonOpt = False,
    check: Annotated[bool, typer.Option("--check", help="Exit with code 1 if a row marked must_match differs from the paper.")] = False,
    out: Annotated[Path | None, typer.Option("--out", "-o", metavar="DIR", help="A folder for the outcome's files: NAME.json; a sweep also NAME.csv, NAME.svg (needs matplotlib) and NAME.md.")] = None,
    replot: Annotated[bool, typer.Option("--replot", help="For a sweep: only redraw NAME.svg in --out from the NAME.json there (nothing is run).")] = False,
    reduced: Annotated[bool, typer.Option("--reduced", help="Run the spec's reduced form (fewer sparsities, realizations, values or seeds), as the default tests do.")] = False,
    tune: Annotated[bool, typer.Option("--tune", help="For a sweep: tune the penalty of the series in sweep.tune to each sparsity and write the values into the spec file (nothing else is run).")] = False,
    root: Annotated[Path | None, typer.Option("--root", metavar="DIR", help="The folder the spec's data paths are relative to (default: the working folder, the repository root).")] = None,
) -> None:
    """Run a paper's experiment and print ours beside its numbers.

    Every paper experiment is a spec in specs/experiments/; its kind picks what runs: a table (rows beside the
    paper's values), a sweep (a figure of metrics against a sparsity: --out, --replot, --tune), realizations,
    a curve or traces (the other figures' data).
    """
    from spcakit.workflows import reproduce as rp
    from spcakit.workflows.reproduce.common import data_source

    get_registry()
    warn_plugin_failures()
    try:
        spec = rp.load_experiment(name)
        inputs = [data_source(spec.data, root)] if spec.data else []
        if out is not None:  # the folder of the outcome's files: never inside the data or any Zarr store
            check_outside_inputs(out, inputs, "--out")
        if (replot or tune) and spec.kind != "sweep":
            fail(f"--{'replot' if replot else 'tune'} is for an experiment of kind 'sweep'; {spec.name} is of kind {spec.kind!r}")
            return
        if replot and out is None:
            fail("--replot needs --out (the folder holding NAME.json)")
            return
        if replot:
            from spcakit.workflows.reproduce import sweeps

            typer.echo(f"wrote {sweeps.replot(spec, out)}", err=True)  # type: ignore[arg-type]
            return
        if tune:
            _tune(name, spec, root)
            return
        outcome = rp.run_experiment(name, reduced=reduced, root=root)
        written = _write_outcome(outcome, out, inputs) if out is not None else []
    except SpcakitError as exc:
        fail(str(exc))
        return
    except OSError as exc:
        fail(f"cannot write --out {out}: {exc.strerror or exc}")
        return
    typer.echo(json.dumps(outcome.to_dict(), indent=2) if as_json else outcome.to_text())
    for path in written:
        typer.echo(f"wrote {path}", err=True)
    if check and outcome.failures:
        typer.echo(f"{len(outcome.failures)} required row(s) differ from the paper", err=True)
        raise typer.Exit(1)


def _write_outcome(outcome: Any, folder: Path, inputs: list[str]) -> list[Path]:
    """``--out``: a sweep's CSV, JSON, SVG and Markdown, or any other outcome's ``NAME.json``, through the guarded
    writer (never onto an input or a write-protected file, never through a link to an input; a set all or nothing)."""
    from spcakit.workflows.reproduce import SweepOutcome, sweeps

    if isinstance(outcome, SweepOutcome):
        return sweeps.write_outputs(outcome, folder, inputs)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{outcome.spec.name}.json"
    check_output(path, [Path(source) for source in inputs], "--out")  # a builtin: name is no file: never the same
    write_output(path, json.dumps(outcome.to_dict(), indent=2) + "\n")
    return [path]


def _tune(name: str, spec: Any, root: Path | None) -> None:
    """``--tune``: the tuned penalties, printed as they are found, then written into the spec file."""
    from spcakit.workflows.reproduce import experiment_path, tuning

    values = tuning.tune_sweep(spec, root, on_value=lambda label, value: typer.echo(f"{label}: {value}"))
    left = tuning.rewrite_spec(experiment_path(name), spec, values)
    for label in left:
        typer.echo(f"warning: {label}: left as it was (no feasible value, or its params line is not "
                   "'params = { PARAMETER = VALUE, ... }')", err=True)
    typer.echo(f"wrote {experiment_path(name)}", err=True)


@app.command("plot")
def plot_command(
    kind: Annotated[str, typer.Argument(metavar="KIND", help="The figure: path, loadings, variance or cv.")],
    inputs: Annotated[list[Path], typer.Argument(metavar="JSON", help="The JSON file that KIND reads; for path, one or more, drawn as one line each (same data and r).")],
    out: Annotated[Path, typer.Option("--out", "-o", metavar="FIG", help="The figure: .png, .svg or .pdf (the format is taken from the suffix); written atomically, only when the plot succeeds.")],
    title: Annotated[str | None, typer.Option("--title", metavar="TITLE", help="The plot's title (default: the method, and for a path the data and r; '' for none).")] = None,
    width: Annotated[float | None, typer.Option("--width", metavar="INCHES", help="The figure's width in inches (default: the plot's own).")] = None,
    height: Annotated[float | None, typer.Option("--height", metavar="INCHES", help="The figure's height in inches (default: the plot's own).")] = None,
    dpi: Annotated[float | None, typer.Option("--dpi", metavar="DPI", help="Dots per inch of a PNG (default 100; 10 to 2400): it is width x dpi by height x dpi pixels, at most 50,000,000.")] = None,
) -> None:
    """Draw a figure from the JSON of `spcakit path`, `run` or `cv`.

    It needs matplotlib (the plot extra). Each KIND reads its own JSON: path, that of `spcakit path ... --json
    --out F`, drawn as CPEV against the sparsity level with PCA's CPEV as the ceiling; loadings and variance,
    that of `spcakit run ... --out F` (or the refit result in that of `spcakit cv ... --json --out F`), drawn as
    a heat-map of the loadings by variable name and as the additional variance of each component; cv, that of
    `spcakit cv ... --json --out F`, drawn as the cross-validation curve and the chosen level.
    """
    from spcakit.figures import plot_json

    try:
        written = plot_json(kind, inputs, out, title=title, width=width, height=height, dpi=dpi)
    except SpcakitError as exc:
        fail(str(exc))
        return
    except OSError as exc:
        fail(f"cannot write --out {out}: {exc.strerror or exc}; nothing was written (the previous content of the "
              "file, if any, is untouched)")
        return
    typer.echo(f"wrote the {kind} plot to {written}", err=True)
