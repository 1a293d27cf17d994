"""The options the fit commands share (typer annotations) and the parsing of their values."""

from __future__ import annotations

import functools
import inspect
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import attrs
import typer

from spcakit.core.errors import InvalidDataError
from spcakit.inputs.columns import unknown_column_message
from spcakit.inputs.csv_files import CsvLayout, csv_layout
from spcakit.core.documents import load_json


class BadInput(Exception):
    """Raised inside commands for input errors found by the CLI itself."""


def parse_value(text: str, what: str = "a value") -> Any:
    """A command-line value: JSON (numbers, booleans, lists) or else a string; nested or long beyond the limits
    of :mod:`spcakit.core.documents`, it is refused (:class:`BadInput`), ``what`` naming it."""
    try:
        return load_json(text, what)
    except InvalidDataError as exc:
        raise BadInput(str(exc)) from None
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
    values = [parse_value(item, "-k") for item in items]
    if not all(items) or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        raise BadInput(
            f"-k takes the number of nonzero variables per loading: an integer (e.g. -k 5) or one per component "
            f"(e.g. -k 3,5,8); got {text!r}"
        )
    return values[0] if len(values) == 1 and "," not in text and "[" not in text else values


def parse_top(text: str | None) -> int | None:
    """``--top N``: the number of loadings printed per component, a positive integer (``None``: all of them)."""
    if text is None:
        return None
    value = text.strip()
    if not value.isascii() or not value.isdigit() or int(value) < 1:
        raise BadInput(f"--top takes a positive integer, the number of largest loadings to print per component "
                       f"(e.g. --top 5); got {text!r}")  # fmt: skip
    return int(value)


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
                       "columns", "drop", "on_step", "metrics", "bound", "registry", "nonnegative", "constraint", "sample_weight", "missing", "order")  # fmt: skip


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
        params[key.strip()] = parse_value(value, f"--param {key.strip()}")
    return params


DataOpt = Annotated[str, typer.Option("--data", "-d", metavar="SOURCE", help="The data: a .npy/.npz/.csv/.tsv/.mtx file, a NAME.zarr store, or a built-in data set (builtin:pitprops, builtin:zou, builtin:random?n=..&p=..&seed=..).")]


CovOpt = Annotated[bool, typer.Option("--covariance", help="The file holds a covariance matrix, not data.")]


ROpt = Annotated[int, typer.Option("-r", "--n-components", metavar="N", help="The number of loadings (components).")]


KOpt = Annotated[str | None, typer.Option("-k", metavar="K", help="The sparsity: nonzero variables per loading, for every method that takes a cardinality: an integer, or one per component (3,5,8). The papers' own forms: --lam, --param.")]


TargetSparsityOpt = Annotated[float | None, typer.Option("--target-sparsity", metavar="S", help="Choose k for a fraction S of zeros per loading (0 <= S < 1): k = round((1 - S) p), a half rounded to the denser k.")]


TargetCpevOpt = Annotated[float | None, typer.Option("--target-cpev", metavar="F", help="Choose the smallest k whose CPEV is at least F x PCA's CPEV (0 < F <= 1): every k from below for up to 100 levels, by bisection over k beyond.")]


TruncOpt = Annotated[str | None, typer.Option("--truncator", "-t", metavar="NAME", help="The truncation part (see `spcakit parts --role truncator`).")]


LamOpt = Annotated[str | None, typer.Option("--lam", "-l", metavar="LAM", help="The truncation parameter lambda: a threshold (hard, soft), zeros per loading (sparsity) or an energy fraction (energy).")]


DeflOpt = Annotated[str | None, typer.Option("--deflator", metavar="NAME", help="The deflation part, for methods whose driver deflates.")]


RefinerOpt = Annotated[str | None, typer.Option("--refiner", metavar="NAME", help="Refine the finished loadings with this part ('none': skip the method's refiner).")]


ParamOpt = Annotated[list[str] | None, typer.Option("--param", "-p", metavar="KEY=VALUE", help="Set a part parameter: KEY=VALUE or ROLE.KEY=VALUE (repeatable).")]


SeedOpt = Annotated[int, typer.Option("--seed", metavar="N", help="The seed of the random generator, recorded in the JSON output (the default 0 makes every run repeatable).")]


JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]


OutOpt = Annotated[Path | None, typer.Option("--out", "-o", metavar="PATH", help="Also write the JSON result to this file.")]


DuplicateNamesOpt = Annotated[str, typer.Option("--duplicate-names", metavar="[rename|error]", help="Repeated variable names: rename makes the later ones NAME-1, NAME-2, ... with a warning; error refuses them.")]
TopOpt = Annotated[str | None, typer.Option("--top", metavar="N", help="Print only each component's N largest loadings (by magnitude), then a line saying how many more it has; the text only: --json and the --out file keep every loading.")]


NoCenterOpt = Annotated[bool, typer.Option("--no-center", help="Do not centre the data columns.")]


StandardizeOpt = Annotated[bool, typer.Option("--standardize", help="Work on the correlation scale: divide each data column by its standard deviation (a covariance becomes its correlation matrix); for variables in different units.")]


IndexColOpt = Annotated[str | None, typer.Option("--index-col", metavar="NAME|N", help="A column of row IDs or labels, by name or position (from 0), left out of the variables.")]


DropOpt = Annotated[list[str] | None, typer.Option("--drop", metavar="COL[,COL..]", help="Leave these columns out, e.g. a label column (repeatable).")]


ColumnsOpt = Annotated[list[str] | None, typer.Option("--columns", metavar="COL[,COL..]", help="Use only these columns, in this order (repeatable).")]


SchedulerOpt = Annotated[str | None, typer.Option("--scheduler", metavar="ADDRESS", help="Run the computations on a Zarr store (--data NAME.zarr) on the dask.distributed scheduler at ADDRESS (tcp://HOST:PORT); without it, on the local threaded scheduler.")]


BoundOpt = Annotated[str, typer.Option("--bound", metavar="[fast|threshold|certify]", help="The relaxation of the metrics bound and gap: fast (the eigenvalue, diagonal and Gershgorin bounds and a branch and bound of at most 256 nodes from the first loading, up to p = 64: its node caches hold up to 64 MB), threshold (also the threshold bound at every cardinality: tighter on many weakly correlated variables, seconds at p = 1000; up to p = 5000) or certify (the search to its end: the first loading's optimum; up to p = 8000).")]


MetricsOpt = Annotated[str | None, typer.Option("--metrics", metavar="NAMES|all", help="The metrics to report: names separated by commas (see docs/metrics.md), or all; without it, the method's default set (NZ, pattern, CPEV, orthogonality, additional variance, bound, gap and its paper's own criteria).")]


def parse_metrics(text: str | None) -> str | list[str] | None:
    """``--metrics``: ``None`` (the method's default set), ``"all"``, or the names it lists (commas)."""
    if text is None:
        return None
    if text.strip() == "all":
        return "all"
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise BadInput(f"--metrics takes metric names separated by commas, or all; got {text!r}")
    return names
NonNegativeOpt = Annotated[bool, typer.Option("--nonnegative", help="Keep every loading non-negative (as nsprcomp's nneg): each truncation keeps the k largest positive entries. Methods that truncate, and auto, take it; the others refuse it, naming those that do.")]

OrderOpt = Annotated[str, typer.Option("--order", metavar="[variance|method]", help="The order of the components: variance (default), by the variance each adds, as PCA orders them; method, the order the method found them in, as a paper's tables list them.")]
ConstraintOpt = Annotated[str | None, typer.Option("--constraint", metavar="[orthogonal|uncorrelated|none]", help="Non-redundant components at the same k: orthogonal loadings (u_t^T u_s = 0) or uncorrelated scores (u_t^T C u_s = 0), to rounding; each loading is fitted given the others by support swaps (docs/guide.md, 'Non-redundant components').")]


AllowMissingChunksOpt = Annotated[bool, typer.Option("--allow-missing-chunks", help="Read the chunks that a Zarr store (--data NAME.zarr) lacks as the array's fill value (a store written with write_empty_chunks=False leaves out the chunks that equal it); without it a missing chunk is an error.")]


SaveModelOpt = Annotated[Path | None, typer.Option("--save-model", metavar="PATH", help="Also write the fitted model (loadings, column means and scales, names) to this JSON file, for `spcakit transform`; only when the run succeeds, never over the input data.")]


WeightsOpt = Annotated[Path | None, typer.Option("--weights", metavar="FILE", help="Observation weights: a one-column CSV (a header line allowed) or .npy file of n non-negative numbers, one per data row, as frequency weights (an integer weight counts its row that many times), with missing values imputed as --missing says. Taken by run, compose and path, not cv.")]


MissingOpt = Annotated[str, typer.Option("--missing", metavar="[auto|em|error]", help="Missing values (empty or NA cells of a CSV, NaN): auto (the default) imputes them by EM on the sparse low-rank model with a warning saying the fraction missing, em the same without the warning, error refuses them.")]


#: Most bytes a --weights file may take (8 x 10^8 rows as text or float64 is far beyond it: 1 GiB).
WEIGHTS_FILE_LIMIT = 1 << 30


def load_weights(path: Path) -> Any:
    """``--weights FILE``: the numbers of a one-column CSV (one per line; a first line that is not a number is a
    header; empty lines are skipped) or of a ``.npy`` file (1-D, or one column), as floats. A file that cannot
    be read or is not so is :class:`BadInput`; the values are checked against the data by
    :func:`spcakit.inputs.weights.check_weights`."""
    import numpy as np  # noqa: PLC0415 - numpy is imported by the fit anyway

    try:
        if not path.is_file():
            raise BadInput(f"--weights {path}: no such file (give a one-column CSV or a .npy file of weights)")
        if path.stat().st_size > WEIGHTS_FILE_LIMIT:
            raise BadInput(f"--weights {path}: the file takes more than 1 GiB; that is not one column of weights")
        if path.suffix.lower() == ".npy":
            try:
                values = np.load(path, allow_pickle=False)
            except ValueError as exc:
                raise BadInput(f"--weights {path}: not a readable .npy file of numbers ({exc})") from None
            if values.ndim == 2 and values.shape[1] == 1:
                values = values[:, 0]
            if values.ndim != 1 or values.dtype.kind not in "biuf":
                raise BadInput(f"--weights {path}: needs one column of numbers; got an array of shape {values.shape} "
                               f"and dtype {values.dtype}")  # fmt: skip
            return values.astype(float)
        lines = [line.strip() for line in path.read_text(encoding="utf-8-sig").splitlines()]
    except OSError as exc:
        raise BadInput(f"--weights {path}: cannot read it: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise BadInput(f"--weights {path}: not a text (CSV) file; give a one-column CSV or a .npy file") from None
    numbers: list[float] = []
    for number, line in enumerate(lines, start=1):
        if not line:
            continue
        try:
            value = float(line.strip('"'))
        except ValueError:
            if number == 1:  # a header
                continue
            kind = "more than one column" if "," in line or "\t" in line else "not a number"
            raise BadInput(f"--weights {path}: line {number} ({line[:40]!r}) is {kind}; the file must hold one "
                           "number per line, one per data row") from None  # fmt: skip
        numbers.append(value)
    if not numbers:
        raise BadInput(f"--weights {path}: holds no numbers; give one weight per data row")
    return np.asarray(numbers)


# -- the options of the fit commands, as one record ----------------------------------------------
@attrs.frozen
class FitOptions:
    """What ``run``, ``compose``, ``path`` and ``cv`` share: the data, how they are read, the method's parts, the
    relaxation of the bound metrics (``--bound``), non-negative loadings (``--nonnegative``) and non-redundant ones
    (``--constraint``).

    A command decorated with :func:`fit_options` receives these as one ``options`` argument instead of
    fourteen parameters; each command keeps its own options (``-k``, ``--lam``, ``--json``, ``--out``, ...)
    whose meaning differs between commands.
    """

    data: str = "builtin:pitprops"
    covariance: bool = False
    r: int = 2
    truncator: str | None = None
    deflator: str | None = None
    refiner: str | None = None
    param: list[str] | None = None
    seed: int = 0
    no_center: bool = False
    standardize: bool = False
    index_col: str | None = None
    drop: list[str] | None = None
    columns: list[str] | None = None
    scheduler: str | None = None
    bound: str = "fast"
    allow_missing_chunks: bool = False
    nonnegative: bool = False
    constraint: str | None = None
    order: str = "variance"
    weights: Path | None = None
    missing: str = "auto"


#: ``name: (typer annotation, default)`` of every :class:`FitOptions` field, in the order ``--help`` lists them.
FIT_OPTIONS: dict[str, tuple[Any, Any]] = {
    "data": (DataOpt, "builtin:pitprops"),
    "covariance": (CovOpt, False),
    "r": (ROpt, 2),
    "truncator": (TruncOpt, None),
    "deflator": (DeflOpt, None),
    "refiner": (RefinerOpt, None),
    "param": (ParamOpt, None),
    "seed": (SeedOpt, 0),
    "no_center": (NoCenterOpt, False),
    "standardize": (StandardizeOpt, False),
    "index_col": (IndexColOpt, None),
    "drop": (DropOpt, None),
    "columns": (ColumnsOpt, None),
    "scheduler": (SchedulerOpt, None),
    "bound": (BoundOpt, "fast"),
    "allow_missing_chunks": (AllowMissingChunksOpt, False),
    "nonnegative": (NonNegativeOpt, False),
    "constraint": (ConstraintOpt, None),
    "order": (OrderOpt, "variance"),
    "weights": (WeightsOpt, None),
    "missing": (MissingOpt, "auto"),
}


def fit_options(*, exclude: tuple[str, ...] = (), **overrides: tuple[Any, Any]) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Give a command the shared options of :class:`FitOptions`, passed to it as ``options``.

    ``exclude`` leaves options out (they keep :class:`FitOptions`' defaults); ``overrides`` replaces an
    option's ``(annotation, default)`` where a command documents it differently (``cv``'s ``--data`` has
    no default, for instance). The command's own parameters come first in ``--help``.
    """
    unknown = sorted((set(exclude) | set(overrides)) - set(FIT_OPTIONS))
    if unknown:
        raise ValueError(f"not fit options: {unknown}")
    shared = {name: overrides.get(name, spec) for name, spec in FIT_OPTIONS.items() if name not in exclude}

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        signature = inspect.signature(command, eval_str=True)
        own = [parameter for name, parameter in signature.parameters.items() if name != "options"]
        added = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default)
                 for name, (annotation, default) in shared.items()]  # fmt: skip

        @functools.wraps(command)
        def with_options(*args: Any, **kwargs: Any) -> None:
            options = FitOptions(**{name: kwargs.pop(name) for name in shared if name in kwargs})
            command(*args, options=options, **kwargs)

        with_options.__signature__ = signature.replace(parameters=own + added)  # type: ignore[attr-defined]
        with_options.__annotations__ = {}  # typer reads the signature
        return with_options

    return decorate
