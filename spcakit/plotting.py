r"""Plots of sparse PCA results: loadings, variance, trade-off paths, cross-validation curves and stability.

Needs matplotlib, the optional extra ``spcakit[plot]`` (``pip install -e '.[plot]'``).
matplotlib is imported when a function here is first *called*, never when this module or
``spcakit`` is imported; without it a call raises :class:`PlotDependencyError` (an
:class:`ImportError`) saying how to install it.

Every plotting function draws on ``ax`` when one is given (and returns the figure that holds
it), else on a new :class:`matplotlib.figure.Figure` of its own, and returns that figure. New
figures are made with :class:`~matplotlib.figure.Figure` directly, not through
:mod:`matplotlib.pyplot`: no window opens, no global state changes (the user's backend and
open figures are untouched), and a figure is freed as soon as it is no longer referenced. They
carry the non-interactive Agg canvas; :func:`save` writes PNG, SVG or PDF by the file's suffix.

* :func:`plot_loadings` - heat-map of the ``p x r`` loadings by variable name;
* :func:`plot_variance` - the additional variance of each component, with the cumulative line;
* :func:`plot_tradeoff` - CPEV (or another criterion) against the sparsity level, one line
  per method, with the dense PCA ceiling and, for one line, a dashed upper bound;
* :func:`plot_cv` - a cross-validation curve with error bars and the chosen level;
* :func:`plot_stability` - heat-map of a stability analysis' selection probabilities, the stable cells marked;
* :func:`plot_stable_k` - the stable support's size against ``k``, with the chosen ``k``;
* :func:`new_figure` - an empty figure with a grid of axes, to combine panels;
* :func:`save` - write a figure atomically, byte for byte the same for the same figure;
* :func:`check_plot_path` - refuse an output path :func:`save` would refuse, before any work.

>>> from spcakit import fit, plotting
>>> result = fit("builtin:pitprops", "spcart", r=6)              # doctest: +SKIP
>>> plotting.save(plotting.plot_loadings(result), "loadings.svg")  # doctest: +SKIP

One module, above the 600 lines the others keep to: the six plots share their
figure-making, axes, labelling and saving helpers, and a reader looks for every plot here.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import numpy as np

from spcakit.core.errors import InvalidDataError, InvalidParameterError, SpcakitError, install_hint
from spcakit.output.files import check_output, write_output

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

#: The optional dependency that every plot needs.
PLOT_EXTRA = "plot"
#: File formats :func:`save` writes, by suffix.
FORMATS = (".png", ".svg", ".pdf")
#: Resolution of new figures in dots per inch: a PNG of a ``w x h`` inch figure is ``100w x 100h`` pixels.
DPI = 100
#: The dots per inch :func:`save` takes, least and most: beyond 2400 no screen or printer shows a difference.
DPI_RANGE = (10, 2400)
#: Most pixels of a figure :func:`save` renders (its width times its height, in inches, times the dpi squared):
#: about 200 MB of memory to render. Each side also stays below :data:`MAX_SIDE` pixels, matplotlib's limit.
MAX_PIXELS = 50_000_000
#: Pixels on one side of a figure, at most.
MAX_SIDE = 2**16 - 1
#: A heat-map names every variable up to this many rows; beyond it, some rows (chosen by matplotlib's locator).
MAX_NAMED_ROWS = 60
#: A heat-map prints the value in each nonzero cell when it has at most this many cells (``annotate=None``).
MAX_ANNOTATED_CELLS = 160
#: :func:`plot_tradeoff` refuses a bound below the value it bounds by more than this (relative): rounding only.
BOUND_RTOL = 1e-9
#: Integer sparsity levels are all ticked when there are at most this many.
MAX_LEVEL_TICKS = 16
#: Default x-axis label of :func:`plot_tradeoff` and :func:`plot_cv`.
K_LABEL = "k (nonzeros per loading)"
#: Markers given in turn to the lines of several methods (colour alone should not tell them apart).
MARKERS = ("o", "s", "D", "^", "v", "P", "X", "<", ">", "h")
#: rc settings in force (through :func:`matplotlib.rc_context`, never globally) while a plot is drawn
#: and saved: a fixed salt for the ids in an SVG (matplotlib otherwise salts them with a random
#: value), so the same figure gives the same bytes.
SAVE_RC = {"svg.hashsalt": "spcakit"}
#: Metadata per format: no creation date, so that the file depends only on the figure.
_METADATA = {"svg": {"Date": None}, "pdf": {"CreationDate": None}, "png": {}}


class PlotDependencyError(SpcakitError, ImportError):
    """A plot was asked for but matplotlib is not installed (``pip install -e '.[plot]'``)."""


def _matplotlib() -> Any:
    """The matplotlib modules used here, imported on first call; :class:`PlotDependencyError` when missing."""
    try:
        import matplotlib
        import matplotlib.colors
        import matplotlib.figure
        import matplotlib.ticker
        from matplotlib.backends.backend_agg import FigureCanvasAgg
    except ImportError as exc:
        raise PlotDependencyError(
            f"plots need matplotlib: {install_hint('matplotlib', PLOT_EXTRA)} ({exc})"
        ) from exc
    return SimpleNamespace(
        rc_context=matplotlib.rc_context, rcParams=matplotlib.rcParams, colormaps=matplotlib.colormaps,
        colors=matplotlib.colors, ticker=matplotlib.ticker, Figure=matplotlib.figure.Figure,
        FigureCanvasAgg=FigureCanvasAgg,
    )


def _rc(mpl: Any) -> Any:
    """A context with :data:`SAVE_RC` (keys this matplotlib knows), leaving the global settings alone."""
    return mpl.rc_context({key: value for key, value in SAVE_RC.items() if key in mpl.rcParams})


def new_figure(nrows: int = 1, ncols: int = 1, *, figsize: tuple[float, float] = (6.4, 4.0)) -> tuple[Figure, list[Axes]]:
    """An empty figure with an ``nrows x ncols`` grid of axes, for combining several plots.

    Parameters
    ----------
    nrows, ncols
        Shape of the grid.
    figsize
        Width and height in inches; the figure is :data:`DPI` dots per inch, so its PNG is
        ``round(figsize * DPI)`` pixels (:func:`save` with ``dpi=`` changes that).

    Returns
    -------
    figure, axes
        The :class:`~matplotlib.figure.Figure` (constrained layout, Agg canvas, not registered
        with pyplot) and its axes in row-major order. Pass an axes as ``ax=`` to the plotting
        functions.
    """
    mpl = _matplotlib()
    width, height = _figsize(figsize)
    if nrows < 1 or ncols < 1:
        raise InvalidParameterError(f"a figure needs at least one row and one column of axes, not {nrows} x {ncols}")
    with _rc(mpl):
        figure = mpl.Figure(figsize=(width, height), dpi=DPI, layout="constrained")
        mpl.FigureCanvasAgg(figure)
        axes = figure.subplots(nrows, ncols, squeeze=False)
    return figure, [ax for row in axes for ax in row]


def _figsize(figsize: Any) -> tuple[float, float]:
    try:
        width, height = (float(v) for v in figsize)
    except (TypeError, ValueError):
        raise InvalidParameterError(f"figsize must be (width, height) in inches, not {figsize!r}") from None
    if not (math.isfinite(width) and math.isfinite(height) and width > 0 and height > 0):
        raise InvalidParameterError(f"figsize must be two positive numbers of inches, not {figsize!r}")
    return width, height


def _target(ax: Axes | None, figsize: tuple[float, float]) -> tuple[Figure, Axes]:
    """The figure and axes to draw on: ``ax`` and its (root) figure, or a new figure with one axes."""
    if ax is None:
        figure, (new_ax,) = new_figure(figsize=figsize)
        return figure, new_ax
    _matplotlib()
    figure = ax.figure
    root = getattr(figure, "figure", None)  # a subfigure's .figure is the figure that holds it
    return (root if root is not None else figure), ax


# -- loadings --------------------------------------------------------------------------------------------
def _loadings_and_names(
    source: Any, feature_names: Sequence[str] | None, component_names: Sequence[str] | None
) -> tuple[np.ndarray, list[str], list[str], str | None]:
    """The ``p x r`` matrix, variable names, component names and a default title from what was given."""
    title = None
    if hasattr(source, "loadings") and hasattr(source, "feature_names"):  # a Result
        values = source.loadings
        feature_names = list(source.feature_names) if feature_names is None else feature_names
        if component_names is None:
            component_names = list(getattr(source, "component_names", ())) or None
        title = f"{source.method}: loadings" if getattr(source, "method", None) else None
    elif hasattr(source, "index") and hasattr(source, "columns"):  # a DataFrame (Result.loadings_frame())
        values = source.to_numpy()
        feature_names = [str(v) for v in source.index] if feature_names is None else feature_names
        component_names = [str(v) for v in source.columns] if component_names is None else component_names
    else:
        values = source
    try:
        matrix = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InvalidDataError(f"loadings must be a numeric p x r array or a Result, not {type(source).__name__} ({exc})") from None
    if matrix.ndim == 1:
        matrix = matrix[:, None]
    if matrix.ndim != 2 or matrix.size == 0:
        raise InvalidDataError(f"loadings must be a nonempty p x r array (variables x components); got shape {matrix.shape}")
    if not np.all(np.isfinite(matrix)):
        raise InvalidDataError(f"loadings hold {int(np.sum(~np.isfinite(matrix)))} NaN or infinite entries; plot finite loadings")
    p, r = matrix.shape
    names = [f"x{i + 1}" for i in range(p)] if feature_names is None else [str(v) for v in feature_names]
    components = [f"PC{j + 1}" for j in range(r)] if component_names is None else [str(v) for v in component_names]
    if len(names) != p:
        raise InvalidParameterError(f"feature_names has {len(names)} names but the loadings have {p} rows; give one name per variable")
    if len(components) != r:
        raise InvalidParameterError(f"component_names has {len(components)} names but the loadings have {r} columns; give one per component")
    return matrix, names, components, title


def _table_axes(mpl: Any, ax: Axes, components: Sequence[str], names: Sequence[str]) -> None:
    """The axes of a heat-map read as a table: one column per component (labelled on top), one row per variable, the
    first at the top, named while there are at most :data:`MAX_NAMED_ROWS` of them."""
    r, p = len(components), len(names)
    ax.set_xlim(-0.5, r - 0.5)
    ax.set_ylim(p - 0.5, -0.5)  # the first variable at the top, as in a table
    ax.set_xticks(range(r), labels=components)
    if p <= MAX_NAMED_ROWS:
        ax.set_yticks(range(p), labels=names)
    else:
        ax.yaxis.set_major_locator(mpl.ticker.MaxNLocator(nbins=MAX_NAMED_ROWS // 2, integer=True))
        ax.yaxis.set_major_formatter(mpl.ticker.FuncFormatter(
            lambda v, _pos: names[int(v)] if float(v).is_integer() and 0 <= v < p else ""))
    ax.tick_params(axis="x", top=True, labeltop=True, bottom=False, labelbottom=False)
    ax.set_xlabel("component")
    ax.xaxis.set_label_position("top")
    ax.set_ylabel("variable")


def plot_loadings(
    result_or_loadings: Any,
    feature_names: Sequence[str] | None = None,
    ax: Axes | None = None,
    *,
    component_names: Sequence[str] | None = None,
    drop_zero_rows: bool = False,
    annotate: bool | None = None,
    cmap: str = "RdBu_r",
    title: str | None = None,
    figsize: tuple[float, float] | None = None,
) -> Figure:
    r"""Heat-map of the loadings: one row per variable (by name), one column per component.

    The colour of cell :math:`(i, j)` is the loading :math:`x_{ij}` on a diverging scale centred
    at 0 and symmetric, :math:`[-m, m]` with :math:`m = \max_{ij} |x_{ij}|` (red positive, blue
    negative with the default ``cmap``), so equal magnitudes look equally strong. Exact zeros are
    not coloured at all: they stay white, so the sparsity pattern reads at a glance.

    Parameters
    ----------
    result_or_loadings
        A :class:`~spcakit.workflows.results.Result` (its loadings, ``feature_names`` and
        ``component_names``), a ``p x r`` array (a length-``p`` vector is one component), or a
        pandas DataFrame such as ``Result.loadings_frame()`` (index and columns name the cells).
    feature_names
        One name per variable; default the result's names, else ``x1, x2, ...``.
    ax
        Axes to draw on; default a new figure.
    component_names
        One name per component; default the result's (``PC1, PC2, ...``).
    drop_zero_rows
        Leave out the variables that are zero in every component (for wide data, where the
        few variables the loadings use would be lost among thousands of blank rows).
    annotate
        Print each nonzero value in its cell; default when there are at most
        :data:`MAX_ANNOTATED_CELLS` cells.
    cmap
        A diverging matplotlib colormap name.
    title
        Default ``"METHOD: loadings"`` for a result, none for an array.
    figsize
        Width and height in inches; default grows with ``r`` and ``p``.

    Returns
    -------
    matplotlib.figure.Figure
        The figure drawn on.

    Raises
    ------
    InvalidDataError
        Loadings that are not a finite numeric matrix.
    InvalidParameterError
        Names that do not match the loadings' shape, or every row dropped.
    PlotDependencyError
        matplotlib is not installed.
    """
    matrix, names, components, default_title = _loadings_and_names(result_or_loadings, feature_names, component_names)
    if drop_zero_rows:
        keep = np.flatnonzero(np.any(matrix != 0, axis=1))
        if keep.size == 0:
            raise InvalidParameterError("every loading is zero, so drop_zero_rows=True would leave nothing to plot")
        matrix, names = matrix[keep], [names[i] for i in keep]
    p, r = matrix.shape
    if figsize is None:
        figsize = (min(max(4.0, 2.6 + 0.7 * r), 16.0), min(max(3.0, 1.0 + 0.24 * p), 20.0))
    figure, ax = _target(ax, figsize)
    mpl = _matplotlib()
    largest = float(np.max(np.abs(matrix))) or 1.0
    colormap = mpl.colormaps[cmap].with_extremes(bad="white")
    norm = mpl.colors.Normalize(vmin=-largest, vmax=largest)
    with _rc(mpl):
        mesh = ax.pcolormesh(
            np.arange(r + 1) - 0.5, np.arange(p + 1) - 0.5, np.ma.masked_equal(matrix, 0.0),
            cmap=colormap, norm=norm, edgecolors="0.85" if p * r <= 4 * MAX_ANNOTATED_CELLS else "face", linewidth=0.5,
        )
        ax.set_facecolor("white")
        _table_axes(mpl, ax, components, names)
        if annotate if annotate is not None else p * r <= MAX_ANNOTATED_CELLS:
            for (i, j), value in np.ndenumerate(matrix):
                if value != 0:
                    ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize="x-small",
                            color="white" if abs(value) > 0.6 * largest else "black")
        figure.colorbar(mesh, ax=ax, label="loading (white: exactly 0)", shrink=0.9)
        chosen_title = default_title if title is None else title
        if chosen_title:
            ax.set_title(chosen_title)
    return figure


# -- variance --------------------------------------------------------------------------------------------
def _per_component(metrics: Mapping[str, Any], key: str) -> np.ndarray | None:
    value = metrics.get(key)
    if value is None:
        return None
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise InvalidDataError(f"metrics[{key!r}] must be one number per component, not {value!r}") from None
    if array.ndim != 1 or array.size == 0 or not np.all(np.isfinite(array)):
        raise InvalidDataError(f"metrics[{key!r}] must be a nonempty list of finite numbers, one per component; got {value!r}")
    return array


def _running_share(metrics: Mapping[str, Any], additional: np.ndarray) -> np.ndarray | None:
    r"""The cumulative variance over :math:`\operatorname{tr} C` from CPEV and the additional variances (their
    sum is the variance of the loadings' span), when the result has CPEV and some additional variance."""
    share = metrics.get("cpev")
    total = float(np.sum(additional))
    if not isinstance(share, (int, float)) or isinstance(share, bool) or not np.isfinite(share) or not total > 0:
        return None
    return float(share) * np.cumsum(additional) / total


def plot_variance(
    result: Any,
    ax: Axes | None = None,
    *,
    cumulative: bool = True,
    title: str | None = None,
    figsize: tuple[float, float] = (6.4, 4.0),
) -> Figure:
    r"""Bars of the additional variance of each component, with the cumulative variance as a line.

    The additional variance of loading :math:`t` is :math:`q_t^\top C q_t`, with :math:`q_t`
    the part of :math:`x_t` orthogonal to :math:`x_1, \dots, x_{t-1}` (normalised): what the
    component adds to those before it, so the bars never count a direction twice (Mackey,
    §2.3.3; :func:`spcakit.analysis.metrics.additional_variances`). When the result also has
    ``cumulative_variance`` (:math:`\sum_{s \le t} q_s^\top C q_s / \operatorname{tr} C`), or
    ``cpev`` (then the running sum is :math:`\mathrm{CPEV}\,\sum_{s \le t} a_s / \sum_s a_s`, the same
    numbers: the additional variances add up to the variance of the span), bars
    and line are in percent of the total variance :math:`\operatorname{tr} C` (bar :math:`t`
    is the step of the cumulative line at :math:`t`, and the line ends at the CPEV); without
    either the bars are in the data's units and there is no line.

    Parameters
    ----------
    result
        A :class:`~spcakit.workflows.results.Result`, or its ``metrics`` mapping: needs
        ``"additional_variance"`` (one value per component) and uses ``"cumulative_variance"``.
    ax
        Axes to draw on; default a new figure.
    cumulative
        Draw the cumulative line (when the metric is there).
    title
        Default ``"METHOD: variance per component"`` for a result.
    figsize
        Size of a new figure in inches.

    Returns
    -------
    matplotlib.figure.Figure
        The figure drawn on.

    Raises
    ------
    InvalidParameterError
        The result has no ``additional_variance`` metric.
    InvalidDataError
        A metric that is not one finite number per component.
    """
    metrics = result if isinstance(result, Mapping) else getattr(result, "metrics", None)
    if not isinstance(metrics, Mapping):
        raise InvalidParameterError(f"plot_variance needs a Result or its metrics mapping, not {type(result).__name__}")
    additional = _per_component(metrics, "additional_variance")
    if additional is None:
        raise InvalidParameterError(
            "plot_variance needs the metric 'additional_variance' (one value per component); the result has "
            f"{', '.join(sorted(metrics)) or 'no metrics'}"
        )
    running = _per_component(metrics, "cumulative_variance")
    if running is None:
        running = _running_share(metrics, additional)
    if running is not None and running.size != additional.size:
        raise InvalidDataError(
            f"metrics['cumulative_variance'] has {running.size} values but 'additional_variance' has {additional.size}"
        )
    r = additional.size
    names = [str(v) for v in getattr(result, "component_names", ())]
    if len(names) != r:
        names = [f"PC{j + 1}" for j in range(r)]
    figure, ax = _target(ax, figsize)
    mpl = _matplotlib()
    with _rc(mpl):
        if running is not None:
            bars = 100.0 * np.diff(running, prepend=0.0)
            ax.set_ylabel("variance explained (% of total)")
        else:
            bars = additional
            ax.set_ylabel("additional variance")
        container = ax.bar(range(r), bars, color="C0", label="additional variance")
        if r <= 20:
            fmt = "%.1f" if running is not None else "%.3g"
            if cumulative and running is not None:  # inside the bars: the line's first marker sits on the first bar's top
                ax.bar_label(container, fmt=fmt, fontsize="x-small", label_type="center", color="white")
            else:
                ax.bar_label(container, fmt=fmt, fontsize="x-small", padding=2)
        if cumulative and running is not None:
            ax.plot(range(r), 100.0 * running, color="C3", marker="o", label="cumulative (CPEV)")
            ax.set_ylim(0, max(100.0 * float(running.max()), float(bars.max())) * 1.12)
            ax.legend(loc="upper left")
        ax.set_xticks(range(r), labels=names)
        ax.set_xlabel("component")
        method = getattr(result, "method", None)
        chosen_title = (f"{method}: variance per component" if method else None) if title is None else title
        if chosen_title:
            ax.set_title(chosen_title)
    return figure


# -- trade-off paths and cross-validation ---------------------------------------------------------------
def _curve(name: str, levels: Any, values: Any, what: str) -> tuple[np.ndarray, np.ndarray]:
    """Two equally long 1-D float arrays; finite levels; values finite or NaN (a gap)."""
    try:
        x = np.asarray(levels, dtype=float)
        y = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise InvalidDataError(f"{name}: levels and {what} must be numbers") from None
    if x.ndim != 1 or y.ndim != 1 or x.size == 0 or x.size != y.size:
        raise InvalidDataError(
            f"{name}: levels and {what} must be two nonempty 1-D sequences of the same length; got shapes {x.shape} and {y.shape}"
        )
    if not np.all(np.isfinite(x)):
        raise InvalidDataError(f"{name}: every sparsity level must be a finite number; got {x.tolist()}")
    if np.any(np.isinf(y)):
        raise InvalidDataError(f"{name}: {what} must be finite (NaN marks a missing point); got {y.tolist()}")
    return x, y


def _integer_ticks(mpl: Any, ax: Axes, levels: Sequence[np.ndarray], xscale: str) -> None:
    """Integer levels get integer ticks: at every level when there are few, else where matplotlib puts them."""
    if xscale != "linear" or not all(np.all(x == np.round(x)) for x in levels):
        return
    distinct = np.unique(np.concatenate(levels))
    if distinct.size <= MAX_LEVEL_TICKS:
        ax.set_xticks(distinct, labels=[f"{v:.0f}" for v in distinct])
    else:
        ax.xaxis.set_major_locator(mpl.ticker.MaxNLocator(integer=True))


def plot_tradeoff(
    levels: Any,
    cpev: Any = None,
    *,
    ceiling: float | None = None,
    label: str | None = None,
    ax: Axes | None = None,
    xlabel: str = K_LABEL,
    ylabel: str = "CPEV",
    ceiling_label: str = "PCA",
    bound: Any = None,
    bound_label: str | None = None,
    bounded: Any = None,
    bounded_label: str | None = None,
    legend: bool | None = None,
    xscale: str = "linear",
    title: str | None = None,
    figsize: tuple[float, float] = (6.4, 4.0),
) -> Figure:
    r"""The trade-off between sparsity and explained variance: CPEV against the sparsity level.

    CPEV is :math:`\operatorname{tr}(U^\top C U) / \operatorname{tr} C` for an orthonormal basis
    :math:`U` of the loadings' span; dense PCA's CPEV for the same ``r`` (the sum of the ``r``
    largest eigenvalues over the trace) bounds it, and is drawn as a dashed horizontal line.

    With one curve, ``bound`` adds a dashed curve in its colour: at each level an upper bound on the
    curve's value, or on ``bounded`` (drawn dotted in the same colour) when the bound covers another
    quantity. :meth:`spcakit.SparsityPath.plot` draws the bound on the first loading's share of the
    variance (:meth:`~spcakit.SparsityPath.first_loading`): for ``r = 1`` it bounds the CPEV itself, for
    ``r > 1`` the first loading's share, drawn beside the CPEV (no per-loading bound covers the CPEV
    of several loadings). A bound below what it bounds is refused: the dashed curve is never drawn
    under the values it claims to bound.

    Parameters
    ----------
    levels
        The sparsity levels (x values: ``k``, or ``λ`` with another ``xlabel``) of one curve, or a
        mapping ``{method: (levels, values)}`` for one line per method (then ``cpev`` is not given).
    cpev
        The criterion at each level (one curve); NaN leaves a gap. Any criterion can be drawn
        with its own ``ylabel``.
    ceiling
        Dense PCA's value for the same ``r``, drawn dashed and labelled with ``ceiling_label``.
    label
        Legend entry of a single curve.
    ax
        Axes to draw on; default a new figure.
    xlabel, ylabel
        Axis labels (default ``k`` and ``CPEV``).
    ceiling_label
        Name of the ceiling in the legend.
    bound
        One curve only: an upper bound at each level (NaN: none there) on ``cpev``, or on ``bounded``
        when given; drawn dashed in the curve's colour. Each finite bound must be at least the value it
        bounds (up to a relative :math:`10^{-9}`, rounding).
    bound_label
        Legend entry of the bound (default ``"LABEL: bound"``, or ``"bound"`` without a ``label``).
    bounded
        With ``bound``: the quantity it bounds at each level, when not ``cpev`` (e.g. the first loading's
        share of the variance), drawn dotted in the curve's colour.
    bounded_label
        Legend entry of ``bounded``.
    legend
        Draw a legend; default when there is anything named.
    xscale
        ``"linear"`` or ``"log"`` (for a grid of ``λ``).
    title
        Title of the axes.
    figsize
        Size of a new figure in inches.

    Returns
    -------
    matplotlib.figure.Figure
        The figure drawn on. Points of each line are joined in increasing level order; integer
        levels give integer ticks.
    """
    if isinstance(levels, Mapping):
        if cpev is not None:
            raise InvalidParameterError("plot_tradeoff: give either a mapping {method: (levels, cpev)} or levels and cpev, not both")
        if not levels:
            raise InvalidParameterError("plot_tradeoff: the mapping {method: (levels, cpev)} is empty; give at least one method")
        series = []
        for name, pair in levels.items():
            try:
                x, y = pair
            except (TypeError, ValueError):
                raise InvalidParameterError(f"plot_tradeoff: {name!r} must map to a pair (levels, values), not {pair!r}") from None
            series.append((str(name), *_curve(str(name), x, y, ylabel)))
    else:
        if cpev is None:
            raise InvalidParameterError("plot_tradeoff: give the values (cpev) for the levels, or a mapping {method: (levels, cpev)}")
        series = [(label, *_curve(label or "plot_tradeoff", levels, cpev, ylabel))]
    extra = _bound_curves(series, bound, bounded)
    if xscale not in ("linear", "log"):
        raise InvalidParameterError(f"xscale must be 'linear' or 'log', not {xscale!r}")
    if xscale == "log" and any(np.any(x <= 0) for _, x, _ in series):
        raise InvalidParameterError("xscale='log' needs positive sparsity levels")
    if ceiling is not None and not math.isfinite(float(ceiling)):
        raise InvalidParameterError(f"ceiling must be a finite number (dense PCA's value), not {ceiling!r}")
    figure, ax = _target(ax, figsize)
    mpl = _matplotlib()
    with _rc(mpl):
        for index, (name, x, y) in enumerate(series):
            order = np.argsort(x, kind="stable")
            (line,) = ax.plot(x[order], y[order], marker=MARKERS[index % len(MARKERS)], markersize=5, label=name)
        if extra is not None:
            x, upper, under = extra
            order = np.argsort(x, kind="stable")
            colour = line.get_color()
            if under is not None:
                ax.plot(x[order], under[order], color=colour, linestyle=":", marker=MARKERS[0], markersize=3,
                        label=bounded_label)  # fmt: skip
            ax.plot(x[order], upper[order], color=colour, linestyle="--", linewidth=1.2,
                    label=bound_label or (f"{label}: bound" if label else "bound"))  # fmt: skip
        if ceiling is not None:
            ax.axhline(float(ceiling), color="0.3", linestyle="--", linewidth=1.2,
                       label=f"{ceiling_label} ({float(ceiling):.4g})")
        ax.set_xscale(xscale)
        _integer_ticks(mpl, ax, [x for _, x, _ in series], xscale)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        named = ceiling is not None or extra is not None or any(name for name, _, _ in series)
        if legend if legend is not None else named:
            ax.legend(loc="best")
        if title:
            ax.set_title(title)
    return figure


def _bound_curves(
    series: list[tuple[str | None, np.ndarray, np.ndarray]], bound: Any, bounded: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None] | None:
    """``(levels, bound, bounded or None)`` of :func:`plot_tradeoff`'s one curve, checked: the bound is never below
    what it bounds (where both are finite, up to :data:`BOUND_RTOL`)."""
    if bound is None:
        if bounded is not None:
            raise InvalidParameterError("plot_tradeoff: bounded= is what bound= bounds; give bound= too")
        return None
    if len(series) != 1:
        raise InvalidParameterError(
            "plot_tradeoff: bound= goes with one curve (levels and cpev); to draw several methods' bounds, call "
            "plot_tradeoff once per method on the same ax"
        )
    name, x, y = series[0]
    _, upper = _curve(name or "plot_tradeoff", x, bound, "bound")
    under = None if bounded is None else _curve(name or "plot_tradeoff", x, bounded, "bounded")[1]
    covered = y if under is None else under
    both = np.isfinite(upper) & np.isfinite(covered)
    tolerance = BOUND_RTOL * np.maximum(np.abs(upper), np.abs(covered))
    below = np.flatnonzero(both & (upper < covered - tolerance))
    if below.size:
        i = int(below[0])
        what = "the curve" if under is None else "bounded"
        raise InvalidDataError(
            f"{name or 'plot_tradeoff'}: the bound {upper[i]:.6g} at level {x[i]:g} is below {what} ({covered[i]:.6g}); "
            "a bound must be at least the value it bounds at every level"
        )
    return x, upper, under


def plot_cv(
    levels: Any,
    mean_error: Any,
    std_error: Any = None,
    chosen: float | None = None,
    ax: Axes | None = None,
    *,
    xlabel: str = K_LABEL,
    ylabel: str = "held-out reconstruction error",
    xscale: str = "linear",
    title: str | None = None,
    figsize: tuple[float, float] = (6.4, 4.0),
) -> Figure:
    r"""A cross-validation curve: mean held-out error per sparsity level, its standard error, the choice.

    Parameters
    ----------
    levels
        The sparsity levels tried.
    mean_error
        Mean held-out error over the folds at each level.
    std_error
        Its standard error (:math:`s / \sqrt{K}` over ``K`` folds), drawn as error bars; nonnegative.
    chosen
        The level chosen (one of ``levels``), marked by a dotted vertical line and a large
        marker. When it is not the level of least mean error (the one-standard-error rule picks
        a sparser one), that minimum is marked too.
    ax
        Axes to draw on; default a new figure.
    xlabel, ylabel
        Axis labels.
    xscale
        ``"linear"`` or ``"log"``.
    title
        Title of the axes.
    figsize
        Size of a new figure in inches.

    Returns
    -------
    matplotlib.figure.Figure
        The figure drawn on.

    Raises
    ------
    InvalidDataError
        Sequences of different lengths, non-finite levels or a negative standard error.
    InvalidParameterError
        ``chosen`` is not one of ``levels``.
    """
    x, y = _curve("plot_cv", levels, mean_error, "mean_error")
    err = None
    if std_error is not None:
        _, err = _curve("plot_cv", x, std_error, "std_error")
        if np.any(err < 0):
            raise InvalidDataError(f"plot_cv: a standard error cannot be negative; got {err.tolist()}")
    if xscale not in ("linear", "log"):
        raise InvalidParameterError(f"xscale must be 'linear' or 'log', not {xscale!r}")
    position = None
    if chosen is not None:
        matches = np.flatnonzero(np.isclose(x, float(chosen), rtol=1e-9, atol=0.0))
        if matches.size == 0:
            raise InvalidParameterError(f"plot_cv: chosen = {chosen!r} is not one of the levels {x.tolist()}")
        position = int(matches[0])
    order = np.argsort(x, kind="stable")
    figure, ax = _target(ax, figsize)
    mpl = _matplotlib()
    with _rc(mpl):
        ax.errorbar(x[order], y[order], yerr=None if err is None else err[order], marker="o", markersize=4,
                    capsize=3, color="C0", label="mean held-out error" + ("" if err is None else " ± 1 SE"))
        if position is not None:
            best = int(np.nanargmin(y)) if np.any(np.isfinite(y)) else position
            if best != position:
                ax.plot(x[best], y[best], marker="o", markersize=10, markerfacecolor="none", markeredgecolor="0.3",
                        linestyle="none", label=f"least error ({x[best]:g})")
            ax.axvline(x[position], color="C3", linestyle=":", linewidth=1.2)
            ax.plot(x[position], y[position], marker="*", markersize=14, color="C3", linestyle="none", zorder=3,
                    label=f"chosen ({x[position]:g})")
        ax.set_xscale(xscale)
        _integer_ticks(mpl, ax, [x], xscale)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="best")
        if title:
            ax.set_title(title)
    return figure


# -- stability -------------------------------------------------------------------------------------------
def _stable_rows(probabilities: np.ndarray, top: int) -> np.ndarray:
    """The rows :func:`plot_stability` shows: the ``top`` variables with the highest selection probability in any
    component (those some resample selected), ordered by the component where it is highest, then by it, then by
    position."""
    best = probabilities.max(axis=1)
    where = probabilities.argmax(axis=1)  # the first component of the highest, on ties
    selected = np.flatnonzero(best > 0)
    chosen = selected[np.lexsort((selected, -best[selected]))][:top]
    return chosen[np.lexsort((chosen, -best[chosen], where[chosen]))]


def _stability_title(stability: Any) -> str:
    count = int(getattr(stability, "n_resamples", 0))
    scheme = str(getattr(stability, "scheme", ""))
    samples = f"{count} subsamples" if scheme == "subsample" else f"{count} bootstrap samples" if scheme == "bootstrap" else f"{count} resamples"
    method = getattr(getattr(stability, "result", None), "method", None)
    head = f"{method}: selection probabilities" if method else "selection probabilities"
    return f"{head}\n{samples}; stable (marked): at least {float(stability.threshold):.2f}"


def plot_stability(stability: Any, *, top: int = 30, ax: Axes | None = None, figsize: tuple[float, float] | None = None) -> Figure:
    r"""Heat-map of the selection probabilities of a stability analysis: variables by components.

    The colour of cell :math:`(i, j)` is the share of resamples whose (matched) loading :math:`j` selects variable
    :math:`i`, on a fixed scale from 0 (white) to 1; the cells at or above the threshold, the stable ones, are
    marked with their value (with a dot when there are more than :data:`MAX_ANNOTATED_CELLS` cells). The
    threshold is drawn as a line on the colour bar.

    Parameters
    ----------
    stability
        A :class:`~spcakit.Stability` (:func:`spcakit.stability`): its ``probabilities`` (``p x r``),
        ``threshold``, ``feature_names``, ``n_resamples``, ``scheme`` and the full fit's ``result`` (method and
        component names).
    top
        Show the ``top`` variables with the highest probability in any component (those no resample selected are
        left out), grouped by the component where their probability is highest, most often selected first.
    ax
        Axes to draw on; default a new figure.
    figsize
        Width and height in inches; default grows with the number of components and of rows shown.

    Returns
    -------
    matplotlib.figure.Figure
        The figure drawn on.

    Raises
    ------
    InvalidParameterError
        ``top`` is not a positive integer.
    InvalidDataError
        Probabilities that are not a ``p x r`` matrix of numbers in [0, 1] with one name per variable, or that no
        resample selected any variable.
    PlotDependencyError
        matplotlib is not installed.
    """
    if isinstance(top, bool) or not isinstance(top, (int, np.integer)) or top < 1:
        raise InvalidParameterError(f"plot_stability: top is the number of variables to show, a positive integer; got {top!r}")
    try:
        probabilities = np.asarray(stability.probabilities, dtype=float)
        names = [str(name) for name in stability.feature_names]
        threshold = float(stability.threshold)
    except (AttributeError, TypeError, ValueError):
        raise InvalidDataError(
            f"plot_stability needs a Stability (spcakit.stability), not {type(stability).__name__}"
        ) from None
    if probabilities.ndim != 2 or probabilities.size == 0 or len(names) != probabilities.shape[0]:
        raise InvalidDataError(f"plot_stability: the probabilities must be a p x r matrix with one name per variable; "
                               f"got shape {probabilities.shape} and {len(names)} names")  # fmt: skip
    if not np.all((probabilities >= 0) & (probabilities <= 1)):
        raise InvalidDataError("plot_stability: selection probabilities must be numbers in [0, 1]")
    rows = _stable_rows(probabilities, int(top))
    if rows.size == 0:
        raise InvalidDataError("plot_stability: no resample selected any variable; there is nothing to plot")
    shown, labels = probabilities[rows], [names[i] for i in rows]
    count, r = shown.shape
    components = [str(name) for name in getattr(getattr(stability, "result", None), "component_names", ())]
    if len(components) != r:
        components = [f"PC{j + 1}" for j in range(r)]
    if figsize is None:
        figsize = (min(max(4.4, 2.8 + 0.7 * r), 16.0), min(max(3.0, 1.2 + 0.24 * count), 20.0))
    figure, ax = _target(ax, figsize)
    mpl = _matplotlib()
    stable = shown >= threshold - 1e-12  # counts over the resamples: exact fractions, a hair of slack
    with _rc(mpl):
        mesh = ax.pcolormesh(np.arange(r + 1) - 0.5, np.arange(count + 1) - 0.5, shown, cmap=mpl.colormaps["Blues"],
                             norm=mpl.colors.Normalize(vmin=0.0, vmax=1.0), edgecolors="0.85", linewidth=0.5)  # fmt: skip
        _table_axes(mpl, ax, components, labels)
        marked = np.argwhere(stable)
        if count * r <= MAX_ANNOTATED_CELLS:
            for i, j in marked:
                ax.text(j, i, f"{shown[i, j]:.2f}", ha="center", va="center", fontsize="x-small",
                        color="white" if shown[i, j] > 0.6 else "black")
        elif marked.size:
            ax.plot(marked[:, 1], marked[:, 0], linestyle="none", marker="o", markersize=3, color="white",
                    markeredgecolor="black", markeredgewidth=0.5, label="stable")  # fmt: skip
        bar = figure.colorbar(mesh, ax=ax, label="selection probability", shrink=0.9)
        bar.ax.axhline(threshold, color="C3", linewidth=1.5)
        ax.set_title(_stability_title(stability))
    return figure


def plot_stable_k(choice: Any, *, ax: Axes | None = None, figsize: tuple[float, float] | None = None) -> Figure:
    r"""The size of the stable support against ``k``, with the chosen ``k`` (:func:`spcakit.stable_k`).

    At each level the stable support is counted over all components, at the threshold that keeps Meinshausen &
    Bühlmann's bound on the expected false selections at the choice's ``error_bound``; the choice is the smallest
    ``k`` within that bound's slack of the largest support, marked by a dotted vertical line. The thresholds are
    drawn dashed against the right-hand axis (a level where no threshold up to 1 keeps the bound has none).

    Parameters
    ----------
    choice
        A :class:`~spcakit.StableK`: its ``levels``, ``stable_sizes``, ``thresholds``, ``chosen``, ``error_bound``
        and the ``stability`` at the chosen level (for the method and the number of resamples).
    ax
        Axes to draw on; default a new figure.
    figsize
        Width and height in inches; default 6.4 x 4.

    Returns
    -------
    matplotlib.figure.Figure
        The figure drawn on.

    Raises
    ------
    InvalidDataError
        Levels, sizes and thresholds that are not sequences of numbers of the same length.
    InvalidParameterError
        ``chosen`` is not one of the levels.
    PlotDependencyError
        matplotlib is not installed.
    """
    try:
        levels, sizes = _curve("plot_stable_k", choice.levels, choice.stable_sizes, "stable_sizes")
        _, thresholds = _curve("plot_stable_k", levels, choice.thresholds, "thresholds")
        chosen = float(choice.chosen)
    except AttributeError:
        raise InvalidDataError(f"plot_stable_k needs a StableK (spcakit.stable_k), not {type(choice).__name__}") from None
    matches = np.flatnonzero(levels == chosen)
    if matches.size == 0:
        raise InvalidParameterError(f"plot_stable_k: chosen = {choice.chosen!r} is not one of the levels {levels.tolist()}")
    position = int(matches[0])
    order = np.argsort(levels, kind="stable")
    stability = getattr(choice, "stability", None)
    figure, ax = _target(ax, (6.4, 4.0) if figsize is None else figsize)
    mpl = _matplotlib()
    with _rc(mpl):
        ax.plot(levels[order], sizes[order], marker="o", markersize=5, color="C0", label="stable variables")
        ax.axvline(chosen, color="C3", linestyle=":", linewidth=1.2, label=f"chosen k = {choice.chosen}")
        ax.plot(chosen, sizes[position], marker="*", markersize=14, color="C3", linestyle="none", zorder=3)
        ax.annotate(f"k = {choice.chosen}", (chosen, sizes[position]), textcoords="offset points", xytext=(6, 6),
                    color="C3")  # fmt: skip
        ax.set_ylim(bottom=0)
        _integer_ticks(mpl, ax, [levels], "linear")
        ax.set_xlabel(K_LABEL)
        ax.set_ylabel("stable variables (all components)")
        ax.grid(True, alpha=0.3)
        right = ax.twinx()
        within = np.where(thresholds <= 1.0, thresholds, np.nan)  # above 1: no threshold keeps the bound
        right.plot(levels[order], within[order], color="0.45", linestyle="--", marker=".", label="threshold")
        right.set_ylim(0.5, 1.02)
        right.set_ylabel("threshold (selection probability)")
        handles = [*ax.get_legend_handles_labels()[0], *right.get_legend_handles_labels()[0]]
        ax.legend(handles=handles, loc="best")
        method = getattr(getattr(stability, "result", None), "method", None)
        resamples = getattr(stability, "n_resamples", None)
        bound = getattr(choice, "error_bound", None)
        title = f"{method}: stable support against k" if method else "stable support against k"
        details = [f"{resamples} resamples per level" if resamples else "",
                   f"at most {float(bound):g} expected false per component" if bound is not None else ""]  # fmt: skip
        details = [detail for detail in details if detail]
        ax.set_title(title + ("\n" + ", ".join(details) if details else ""))
    return figure


# -- writing ---------------------------------------------------------------------------------------------
def save(figure: Figure, path: str | os.PathLike[str], *, dpi: float | None = None) -> Path:
    """Write ``figure`` to ``path`` as PNG, SVG or PDF, chosen by the suffix; atomically.

    The whole file is rendered in memory first, then written to a temporary file beside the
    target and renamed over it, so a failure never leaves a partial file nor harms an existing
    one (through a symbolic link to its target, into a device or FIFO as a stream, keeping the
    permissions of a file it replaces; the rules of :mod:`spcakit.output.files`). The output holds no
    date and SVG ids use a fixed salt, so the same figure gives the same bytes every time.

    Parameters
    ----------
    figure
        A matplotlib figure (what the plotting functions return).
    path
        The file to write; its suffix (``.png``, ``.svg`` or ``.pdf``, any case) picks the format.
    dpi
        Dots per inch of a PNG (and of raster parts of SVG/PDF); default the figure's
        (:data:`DPI` for the figures made here), so a PNG is ``figsize * dpi`` pixels.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    InvalidParameterError
        A suffix other than :data:`FORMATS` (nothing is written), a folder as ``path``, or a
        missing parent folder (:class:`spcakit.output.files.OutputError`); a ``dpi`` outside
        :data:`DPI_RANGE`, or a figure of more than :data:`MAX_PIXELS` pixels at its dpi.
    """
    if not hasattr(figure, "savefig"):
        raise InvalidParameterError(f"save needs a matplotlib figure (what the plot functions return), not {type(figure).__name__}")
    out = check_plot_path(path)
    check_dpi(dpi)
    check_pixels(tuple(figure.get_size_inches()), figure.dpi if dpi is None else dpi)
    write_output(out, rendered(figure, out.suffix.lower()[1:], dpi))
    return out


def rendered(figure: Any, fmt: str, dpi: float | None = None) -> bytes:
    """The file ``figure`` makes in ``fmt`` (``"png"``, ``"svg"`` or ``"pdf"``), as :func:`save` writes it: for a
    writer that writes several files all or nothing (:func:`spcakit.output.files.write_outputs`)."""
    mpl = _matplotlib()
    buffer = io.BytesIO()
    with _rc(mpl):
        figure.savefig(buffer, format=fmt, dpi=figure.dpi if dpi is None else dpi, metadata=dict(_METADATA[fmt]))
    return buffer.getvalue()


def check_dpi(dpi: Any) -> None:
    """Refuse a ``dpi`` that is not a number of dots per inch within :data:`DPI_RANGE` (``None``, the
    figure's own, passes): :class:`~spcakit.core.errors.InvalidParameterError`, before anything is drawn."""
    if dpi is None:
        return
    low, high = DPI_RANGE
    if isinstance(dpi, bool) or not isinstance(dpi, (int, float, np.integer, np.floating)) or not low <= dpi <= high:
        raise InvalidParameterError(
            f"dpi must be a positive number of dots per inch from {low} to {high} (spcakit.plotting.DPI_RANGE; "
            f"default {DPI}); got {dpi!r}"
        )


def check_pixels(inches: tuple[float, float], dpi: float) -> None:
    """Refuse a figure of ``inches`` (width, height) that at ``dpi`` would have more than :data:`MAX_PIXELS`
    pixels, or more than :data:`MAX_SIDE` on a side, before it is rendered (its memory grows with both)."""
    width, height = (round(size * dpi) for size in inches)
    if width * height > MAX_PIXELS or max(width, height) > MAX_SIDE:
        raise InvalidParameterError(
            f"the figure would be {width:,} x {height:,} pixels ({inches[0]:g} x {inches[1]:g} inches at {dpi:g} "
            f"dpi); spcakit renders at most {MAX_PIXELS:,} pixels (about {4 * MAX_PIXELS // 10**6} MB, "
            f"spcakit.plotting.MAX_PIXELS) and at most {MAX_SIDE:,} on a side: lower the dpi, the width or the height"
        )


def check_plot_path(path: str | os.PathLike[str]) -> Path:
    """Refuse, before any work, a path :func:`save` could not write: a suffix other than :data:`FORMATS`,
    a folder, or a file in a missing folder (:class:`~spcakit.core.errors.InvalidParameterError`, nothing written).

    Returns
    -------
    pathlib.Path
        ``path``; its lower-cased suffix is the format.
    """
    out = Path(path)
    suffix = out.suffix.lower()
    if suffix not in FORMATS:
        got = f"the suffix {out.suffix!r}" if out.suffix else "no suffix"
        raise InvalidParameterError(
            f"cannot save a plot to {str(out)!r}: it has {got}; the file name must end in "
            f"{', '.join(FORMATS[:-1])} or {FORMATS[-1]} (the format is taken from the suffix)"
        )
    check_output(out)
    return out


