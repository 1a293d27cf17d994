r"""Figures from the JSON files the command line writes: what ``spcakit plot KIND INPUT --out FIG`` draws.

Each kind of plot reads the JSON document of one command and draws it with :mod:`spcakit.plotting`
(matplotlib, the optional extra ``spcakit[plot]``):

* ``path`` - the JSON of ``spcakit path METHOD ... --json --out FILE`` (one file, or several: one line each):
  :func:`~spcakit.plotting.plot_tradeoff`, CPEV against the level with PCA's CPEV as the ceiling;
* ``loadings`` - the JSON of ``spcakit run METHOD ... --out FILE``, or a model file (``--save-model FILE``):
  :func:`~spcakit.plotting.plot_loadings`;
* ``variance`` - the JSON of ``spcakit run METHOD ... --out FILE``: :func:`~spcakit.plotting.plot_variance`;
* ``cv`` - the JSON of ``spcakit cv METHOD ... --json --out FILE``: :func:`~spcakit.plotting.plot_cv`.

``loadings`` and ``variance`` also draw the refit result that ``spcakit cv --json`` holds (its
``"result"``). A document of another kind is refused with an :class:`~spcakit.core.errors.InvalidDataError` that
names the command whose JSON the plot reads, and the kind of plot the document is for when that can be told from
its keys. Several ``path`` documents are drawn on one axes only when they share PCA's ceiling (the same
data and ``r``) and knob (all ``k`` or all λ).

>>> from spcakit import figures
>>> figures.plot_json("path", ["path.json"], "tradeoff.png")       # doctest: +SKIP
>>> figure = figures.figure_from_json("loadings", "result.json")  # doctest: +SKIP
"""

from __future__ import annotations

import json
import math
import numbers
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spcakit import plotting
from spcakit.core.errors import InvalidDataError, InvalidParameterError, UnknownNameError
from spcakit.core.documents import load_json
from spcakit.inputs.files import data_file_kind
from spcakit.output.files import check_output

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["KINDS", "REQUIRED_KEYS", "WRITTEN_BY", "check_kind", "document_kind", "figure_from_json", "plot_json", "read_json"]

#: The kinds of plot, in the order ``spcakit plot`` lists them.
KINDS = ("path", "loadings", "variance", "cv")
#: The command whose JSON output each kind reads.
WRITTEN_BY = {
    "path": "spcakit path METHOD ... --json --out FILE",
    "loadings": "spcakit run METHOD ... --out FILE",
    "variance": "spcakit run METHOD ... --out FILE",
    "cv": "spcakit cv METHOD ... --json --out FILE",
}
#: The keys a document must have for each kind.
REQUIRED_KEYS = {
    "path": ("levels", "knob", "ceiling"),
    "loadings": ("loadings", "feature_names"),
    "variance": ("metrics",),
    "cv": ("levels", "mean_error"),
}
#: The x-axis label of a grid of λ (a grid of ``k`` has :data:`spcakit.plotting.K_LABEL`).
LAM_LABEL = "λ"
#: Two paths share a ceiling when their PCA CPEVs agree to this relative tolerance (rounding in JSON only).
CEILING_RTOL = 1e-9
#: How the title of a cv plot names the rule of ``spcakit cv --rule``.
RULE_NAMES = {"1se": "one-standard-error rule", "min": "least error"}


# -- reading ---------------------------------------------------------------------------------------------
def read_json(path: str | os.PathLike[str], kind: str | None = None) -> dict[str, Any]:
    """The JSON object in the file ``path``.

    ``kind`` (one of :data:`KINDS`) only words the messages: which command writes what it reads.

    Raises
    ------
    InvalidDataError
        A missing file, a folder, a device or anything else that is not a regular file (or a named pipe), a
        file that is not UTF-8 JSON, JSON nested deeper or with longer numbers than
        :mod:`spcakit.core.documents` allows, or JSON that is not an object.
    """
    where = Path(path)
    wanted = f"the JSON written by `{WRITTEN_BY[kind]}`" if kind in WRITTEN_BY else "a JSON file spcakit wrote"
    if where.is_dir():
        raise InvalidDataError(f"{str(where)!r} is a folder; give {wanted}")
    try:
        data_file_kind(where, "the JSON file")  # a device (/dev/zero) would be read forever: refused unread
        raw = where.read_bytes()
    except FileNotFoundError:
        raise InvalidDataError(f"{str(where)!r} does not exist; give {wanted}") from None
    except OSError as exc:
        raise InvalidDataError(f"cannot read {str(where)!r} ({exc.strerror or exc}); give {wanted}") from None
    try:
        document = load_json(raw.decode("utf-8"), str(where))  # nesting and number lengths bounded
    except UnicodeDecodeError as exc:
        raise InvalidDataError(f"{where}: byte {exc.start} is not UTF-8 text, so this is not JSON; give {wanted}") from None
    except json.JSONDecodeError as exc:
        raise InvalidDataError(
            f"{where}: not JSON ({exc.msg}: line {exc.lineno}, column {exc.colno}); give {wanted}"
        ) from None
    if not isinstance(document, dict):
        raise InvalidDataError(f"{where}: the JSON is a {type(document).__name__}, not an object; give {wanted}")
    return document


def document_kind(document: Mapping[str, Any]) -> str | None:
    """The kind of plot a JSON document is for, told from its keys; ``None`` when none fits.

    A ``spcakit run`` result is ``"loadings"`` (it also draws as ``"variance"``); a model file (``--save-model``)
    is ``"loadings"`` too.
    """
    if all(key in document for key in REQUIRED_KEYS["path"]):
        return "path"
    if all(key in document for key in REQUIRED_KEYS["cv"]):
        return "cv"
    if all(key in document for key in REQUIRED_KEYS["loadings"]):
        return "loadings"
    return None


def check_kind(kind: Any) -> str:
    """``kind`` when it is one of :data:`KINDS`, else :class:`~spcakit.core.errors.UnknownNameError` naming them."""
    if not isinstance(kind, str) or kind not in KINDS:
        raise UnknownNameError(f"unknown kind of plot {kind!r}; choose one of: {', '.join(KINDS)}")
    return kind


def _not_this_kind(kind: str, where: str, document: Mapping[str, Any], missing: Sequence[str]) -> InvalidDataError:
    keys = " and no ".join(repr(key) for key in missing)
    also = " (or a model file of --save-model)" if kind == "loadings" else ""
    message = (f"{where} is not the JSON of `{WRITTEN_BY[kind]}`{also}, which `spcakit plot {kind}` reads: it has no "
               f"{keys}")  # fmt: skip
    found = document_kind(document)
    if found is not None and found != kind:
        message += f"; it looks like the JSON of `{WRITTEN_BY[found]}`: plot it with `spcakit plot {found}`"
    return InvalidDataError(message)


def _require(kind: str, where: str, document: Mapping[str, Any]) -> None:
    missing = [key for key in REQUIRED_KEYS[kind] if key not in document]
    if missing:
        raise _not_this_kind(kind, where, document, missing)


def _numbers(where: str, key: str, value: Any, length: int | None = None) -> list[float]:
    """``value`` as a nonempty list of numbers (``None`` read as NaN), of ``length`` when given."""
    if not isinstance(value, list) or not value:
        raise InvalidDataError(f"{where}: {key!r} must be a nonempty list of numbers; got {_short(value)}")
    out = []
    for entry in value:
        if entry is None:
            out.append(math.nan)
        elif isinstance(entry, numbers.Real) and not isinstance(entry, bool):
            out.append(float(entry))
        else:
            raise InvalidDataError(f"{where}: {key!r} must hold numbers; got {_short(entry)} in {_short(value)}")
    if length is not None and len(out) != length:
        raise InvalidDataError(f"{where}: {key!r} has {len(out)} values but 'levels' has {length}; give one per level")
    return out


def _short(value: Any, limit: int = 80) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _text(document: Mapping[str, Any], key: str) -> str | None:
    value = document.get(key)
    return value if isinstance(value, str) and value else None


# -- the four kinds --------------------------------------------------------------------------------------
def _path_series(where: str, document: Mapping[str, Any]) -> tuple[str, list[float], list[float], float]:
    """``(knob, levels, cpev, ceiling)`` of a ``spcakit path --json`` document."""
    _require("path", where, document)
    knob, levels, ceiling = document["knob"], document["levels"], document["ceiling"]
    if knob not in ("k", "lam"):
        raise InvalidDataError(f"{where}: 'knob' must be \"k\" or \"lam\" (what the levels are); got {_short(knob)}")
    if isinstance(ceiling, bool) or not isinstance(ceiling, numbers.Real) or not math.isfinite(ceiling):
        raise InvalidDataError(f"{where}: 'ceiling' (PCA's CPEV) must be a finite number; got {_short(ceiling)}")
    if not isinstance(levels, list) or not levels:
        raise InvalidDataError(f"{where}: 'levels' must be a nonempty list of levels; got {_short(levels)}")
    xs, ys = [], []
    for index, level in enumerate(levels):
        if not isinstance(level, Mapping) or knob not in level or "cpev" not in level:
            raise InvalidDataError(
                f"{where}: level {index} must be an object with {knob!r} and 'cpev' (as `spcakit path --json` writes); "
                f"got {_short(level)}"
            )
        xs.append(level[knob])
        ys.append(level["cpev"])
    return knob, _numbers(where, f"levels[].{knob}", xs), _numbers(where, "levels[].cpev", ys), float(ceiling)


def _path_bound(where: str, document: Mapping[str, Any]) -> list[float] | None:
    """The bound curve of a one-loading path (``r = 1``), as :meth:`spcakit.SparsityPath.plot` draws it: each
    level's ``bound`` over ``total_variance``, an upper bound on its CPEV; ``None`` for ``r > 1`` or a document
    without them (written before paths recorded bounds)."""
    total = document.get("total_variance")
    levels = document["levels"]
    if document.get("r") != 1 or isinstance(total, bool) or not isinstance(total, numbers.Real) or not total > 0:
        return None
    if not all(isinstance(level.get("bound"), list) and len(level["bound"]) == 1 for level in levels):
        return None
    return [b / float(total) for b in _numbers(where, "levels[].bound", [level["bound"][0] for level in levels])]


def _path_figure(documents: Sequence[tuple[str, Mapping[str, Any]]], title: str | None, figsize: Any) -> Figure:
    series = [(where, document, *_path_series(where, document)) for where, document in documents]
    knobs = {knob for _, _, knob, _, _, _ in series}
    if len(knobs) > 1:
        listed = ", ".join(f"{where}: {knob}" for where, _, knob, _, _, _ in series)
        raise InvalidDataError(f"the paths are over different knobs ({listed}); plot paths over k, or over λ, together")
    (knob,) = knobs
    ceilings = [ceiling for *_, ceiling in series]
    if any(not math.isclose(c, ceilings[0], rel_tol=CEILING_RTOL) for c in ceilings):
        listed = ", ".join(f"{c:.4g} ({where})" for (where, *_), c in zip(series, ceilings))
        raise InvalidDataError(
            f"the paths have different PCA ceilings ({listed}), so their data or r differ; one plot compares paths "
            "of the same data and r: plot the others separately"
        )
    methods = [_text(document, "method") or Path(where).stem for where, document, *_ in series]
    labels = [
        f"{method} ({Path(where).name})" if methods.count(method) > 1 else method
        for method, (where, *_) in zip(methods, series)
    ]
    if title is None:
        first = series[0][1]
        data, r = _text(first, "data"), first.get("r")
        head = methods[0] if len(set(methods)) == 1 else "sparsity paths"
        title = head + (f" on {data}" if data else "") + (f", r = {r}" if isinstance(r, int) else "")
    options: dict[str, Any] = {"ceiling": ceilings[0], "title": title}
    if knob == "lam":
        options["xlabel"] = LAM_LABEL
    if figsize is not None:
        options["figsize"] = figsize
    if len(series) == 1:
        where, document, _, xs, ys, _ = series[0]
        bound = _path_bound(where, document)
        if bound is not None:
            options.update(bound=bound, bound_label=f"{labels[0]}: bound")
        return plotting.plot_tradeoff(xs, ys, label=labels[0], **options)
    curves = {label: (xs, ys) for label, (_, _, _, xs, ys, _) in zip(labels, series)}
    return plotting.plot_tradeoff(curves, **options)


def _refit_result(kind: str, where: str, document: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    """The document itself, or the refit result that a ``spcakit cv --json`` document holds (``"result"``)."""
    result = document.get("result")
    if any(key not in document for key in REQUIRED_KEYS[kind]) and isinstance(result, Mapping):
        if all(key in result for key in REQUIRED_KEYS[kind]):
            return f"{where} (its refit result)", result
    return where, document


def _loadings_figure(where: str, document: Mapping[str, Any], title: str | None, figsize: Any) -> Figure:
    where, document = _refit_result("loadings", where, document)
    _require("loadings", where, document)
    names, components = document["feature_names"], document.get("component_names")
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise InvalidDataError(f"{where}: 'feature_names' must be a list of names; got {_short(names)}")
    if components is not None and (not isinstance(components, list) or not all(isinstance(c, str) for c in components)):
        raise InvalidDataError(f"{where}: 'component_names' must be a list of names; got {_short(components)}")
    rows = document["loadings"]
    if not isinstance(rows, list) or not all(isinstance(row, list) for row in rows):
        raise InvalidDataError(f"{where}: 'loadings' must be p rows of r numbers; got {_short(rows)}")
    method = _text(document, "method")
    if title is None:
        title = f"{method}: loadings" if method else None
    options: dict[str, Any] = {"title": title, "component_names": components}
    if figsize is not None:
        options["figsize"] = figsize
    try:
        return plotting.plot_loadings(rows, names, **options)
    except (InvalidDataError, InvalidParameterError) as exc:
        raise InvalidDataError(f"{where}: {exc}") from None


def _variance_figure(where: str, document: Mapping[str, Any], title: str | None, figsize: Any) -> Figure:
    if "metrics" not in document and document.get("format") == "spcakit-model":
        raise InvalidDataError(
            f"{where} is a model file (--save-model), which holds no metrics; `spcakit plot variance` reads the JSON "
            f"of `{WRITTEN_BY['variance']}` (`spcakit plot loadings` draws a model file)"
        )
    where, document = _refit_result("variance", where, document)
    _require("variance", where, document)
    metrics = document["metrics"]
    if not isinstance(metrics, Mapping):
        raise InvalidDataError(f"{where}: 'metrics' must be an object of metric values; got {_short(metrics)}")
    method = _text(document, "method")
    if title is None:
        title = f"{method}: variance per component" if method else None
    options: dict[str, Any] = {"title": title}
    if figsize is not None:
        options["figsize"] = figsize
    try:
        return plotting.plot_variance(metrics, **options)
    except (InvalidDataError, InvalidParameterError) as exc:
        raise InvalidDataError(f"{where}: {exc}") from None


def _cv_figure(where: str, document: Mapping[str, Any], title: str | None, figsize: Any) -> Figure:
    _require("cv", where, document)
    levels = _numbers(where, "levels", document["levels"])
    mean_error = _numbers(where, "mean_error", document["mean_error"], len(levels))
    std_error = document.get("std_error")
    spread = None if std_error is None else _numbers(where, "std_error", std_error, len(levels))
    knob = document.get("knob", "k")
    chosen = document.get("chosen")
    if isinstance(chosen, Mapping):  # {"k": 5, ...}: the level under the knob's name
        chosen = chosen.get(knob, chosen.get("level"))
    if chosen is not None and (isinstance(chosen, bool) or not isinstance(chosen, numbers.Real)):
        raise InvalidDataError(f"{where}: 'chosen' must be one of the levels (a number); got {_short(document.get('chosen'))}")
    if title is None:
        method, rule = _text(document, "method"), _text(document, "rule")
        named = RULE_NAMES.get(rule, f"{rule} rule") if rule else None
        title = (f"{method}: " if method else "") + "cross-validation" + (f" ({named})" if named else "")
    options: dict[str, Any] = {"title": title, "xlabel": LAM_LABEL if knob == "lam" else plotting.K_LABEL}
    if figsize is not None:
        options["figsize"] = figsize
    try:
        return plotting.plot_cv(levels, mean_error, spread, chosen, **options)
    except (InvalidDataError, InvalidParameterError) as exc:
        raise InvalidDataError(f"{where}: {exc}") from None


# -- the public entry points -----------------------------------------------------------------------------
def figure_from_json(
    kind: str,
    documents: Any,
    *,
    title: str | None = None,
    figsize: tuple[float, float] | None = None,
) -> Figure:
    """The figure of ``kind`` drawn from JSON documents written by the command line.

    Parameters
    ----------
    kind
        One of :data:`KINDS`: ``"path"``, ``"loadings"``, ``"variance"``, ``"cv"``.
    documents
        A file path or a parsed document (a mapping), or, for ``"path"``, a list of them: one line
        per path, all of the same data and ``r``. The other kinds take exactly one.
    title
        The axes' title; default the method and (for paths) the data and ``r``; ``""`` for none.
    figsize
        Width and height in inches; default each plot's own (:mod:`spcakit.plotting`).

    Returns
    -------
    matplotlib.figure.Figure
        Not saved; :func:`spcakit.plotting.save` writes it.

    Raises
    ------
    UnknownNameError
        An unknown ``kind``.
    InvalidParameterError
        Several documents for a kind other than ``"path"``, or none.
    InvalidDataError
        A file that cannot be read as JSON, a document of another kind (the message names the
        command that writes the right one), values of the wrong shape, paths of different data.
    PlotDependencyError
        matplotlib is not installed.
    """
    kind = check_kind(kind)
    if isinstance(documents, (str, os.PathLike, Mapping)):
        documents = [documents]
    documents = list(documents)
    if not documents:
        raise InvalidParameterError(f"give the JSON written by `{WRITTEN_BY[kind]}` to plot")
    if kind != "path" and len(documents) > 1:
        raise InvalidParameterError(
            f"`spcakit plot {kind}` draws one JSON file; got {len(documents)} (several are compared only by "
            "`spcakit plot path`, one line per file)"
        )
    named: list[tuple[str, Mapping[str, Any]]] = []
    for index, document in enumerate(documents):
        if isinstance(document, Mapping):
            named.append((f"document {index + 1}" if len(documents) > 1 else "the document", document))
        elif isinstance(document, (str, os.PathLike)):
            named.append((os.fspath(document), read_json(document, kind)))
        else:
            raise InvalidParameterError(f"documents must be JSON file paths or parsed JSON objects; got {type(document).__name__}")
    if kind == "path":
        return _path_figure(named, title, figsize)
    draw = {"loadings": _loadings_figure, "variance": _variance_figure, "cv": _cv_figure}[kind]
    return draw(*named[0], title, figsize)


def _inches(name: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (math.isfinite(value) and value > 0):
        raise InvalidParameterError(f"{name} must be a positive number of inches; got {value!r}")
    return float(value)


def plot_json(
    kind: str,
    inputs: Any,
    out: str | os.PathLike[str],
    *,
    title: str | None = None,
    width: float | None = None,
    height: float | None = None,
    dpi: float | None = None,
) -> Path:
    """Draw the figure of ``kind`` from JSON files and write it to ``out`` (``spcakit plot``).

    Everything that can be checked is checked before any work: the kind, the output's suffix
    (``.png``, ``.svg`` or ``.pdf``) and folder, that ``out`` is none of the inputs, the sizes.
    The file is written atomically (:func:`spcakit.plotting.save`), so nothing is left half-written
    and an existing file is untouched when anything fails.

    Parameters
    ----------
    kind, inputs, title
        As for :func:`figure_from_json` (``inputs``: one path, or several for ``"path"``).
    out
        The image file; its suffix is the format.
    width, height
        The figure's size in inches; each defaults to the plot's own. A PNG is
        ``round(width * dpi)`` by ``round(height * dpi)`` pixels.
    dpi
        Dots per inch of a PNG; default :data:`spcakit.plotting.DPI` (100), from 10 to 2400
        (:data:`spcakit.plotting.DPI_RANGE`); the figure may have at most
        :data:`spcakit.plotting.MAX_PIXELS` pixels at that dpi.

    Returns
    -------
    pathlib.Path
        ``out``.
    """
    kind = check_kind(kind)
    target = plotting.check_plot_path(out)
    paths = [Path(inputs)] if isinstance(inputs, (str, os.PathLike)) else [Path(p) for p in inputs]
    check_output(target, [path for path in paths if path.exists()])
    width, height = _inches("width", width), _inches("height", height)
    plotting.check_dpi(dpi)
    if width is not None and height is not None:  # the size is known: too many pixels are refused before any work
        plotting.check_pixels((width, height), plotting.DPI if dpi is None else dpi)
    figsize = (width, height) if width is not None and height is not None else None
    figure = figure_from_json(kind, paths, title=title, figsize=figsize)
    if figsize is None and (width is not None or height is not None):
        default_width, default_height = figure.get_size_inches()
        figure.set_size_inches(width or default_width, height or default_height)
    return plotting.save(figure, target, dpi=dpi)
