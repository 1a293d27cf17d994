"""Draw the figures of the tutorial (docs/tutorial.md) into docs/figures/tutorial/.

    python docs/make_figures.py                  # into docs/figures/tutorial/
    python docs/make_figures.py --out-dir DIR    # anywhere else (tests/test_site.py: a copy of docs/)
    python docs/make_figures.py --single-cell    # docs/single-cell.md's figure, into docs/figures/single-cell/

The figures are what the tutorial's code draws, by the same fits and plots: the trade-off paths of three
methods on the standardised Wisconsin breast-cancer data (bundled with scikit-learn: nothing is downloaded),
the loadings and variance of SPCArt at the k that keeps 90 % of PCA's explained variance, and SPCArt's
selection probabilities at k = 12 over 100 half-samples (``spcakit.stability``). The tutorial
reads the data as a pandas DataFrame; here they are the same numbers as an array with the same column
names, so that the script needs only the plot and sklearn extras (``pip install -e ".[docs,plot,sklearn]"``).

The output depends only on the code and the library versions: every fit has a fixed seed (the stability
analysis's resamples too, the same on any number of threads), each trade-off path's warm starts follow the
fixed order of its levels, matplotlib runs with its own default settings (not a matplotlibrc's) on the Agg
canvas, and :func:`spcakit.plotting.save` writes no date into a file. Two runs write the same files. A
committed figure that differs from what the script draws is stale: the fits changed since it was drawn
(so did TPower's path in the trade-off figure, k = 4: 0.30 -> 0.36, when its starts began to break ties
by the leading eigenvector's magnitudes instead of the variables' order).

Beside the PNGs the script writes ``figures.json``: every series the figures plot, per figure and axes (the
lines' x and y, the bars' positions and heights, the heat-maps' cells, the variables named on an axis),
rounded to 10 significant digits. It is committed with the PNGs, and tests/test_figures.py checks that the
script still plots the same numbers (``figure_data``), so that a change to a fit cannot leave the tutorial's
figures stale unnoticed: when it fails, run the script and commit what it writes.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

os.environ["MPLBACKEND"] = "Agg"  # no window, whatever the environment says

#: Where the figures go by default, and where docs/tutorial.md links to them.
FIGURES = Path(__file__).resolve().parent / "figures" / "tutorial"
#: The tutorial's set-up: r components, the methods compared, the target, the seed of every fit.
R = 3
METHODS = ("spcart", "tpower", "greedy")
TARGET_CPEV = 0.9
SEED = 0
TITLE = "breast cancer, r = 3 (standardised)"
#: The plotted numbers of the figures, written beside them (and committed: tests/test_figures.py compares).
DATA_FILE = "figures.json"
#: Significant digits kept in DATA_FILE: far finer than a plot shows or the check's tolerance (1e-6) needs, but not
#: the last bits of a float, which differ between machines (their BLAS) and would only make noisy diffs.
DIGITS = 10


def figures() -> dict[str, Any]:
    """The tutorial's figures (matplotlib figures, not saved), by file name."""
    import matplotlib
    from sklearn.datasets import load_breast_cancer

    import spcakit
    from spcakit import plotting

    matplotlib.rcdefaults()  # matplotlib's own defaults, not the user's style
    data = load_breast_cancer()
    x, names = data.data, [str(name) for name in data.feature_names]  # the tutorial's DataFrame, as an array

    paths = {name: spcakit.path(x, name, r=R, standardize=True, feature_names=names, seed=SEED) for name in METHODS}
    tradeoff = plotting.plot_tradeoff(
        {name: (p.column("level"), p.column("cpev")) for name, p in paths.items()},
        ceiling=paths["spcart"].ceiling, title=TITLE,
    )  # fmt: skip
    _, result = spcakit.target_k(x, "spcart", r=R, cpev=TARGET_CPEV, standardize=True, feature_names=names, seed=SEED)
    return {
        "tradeoff.png": tradeoff,
        "loadings.png": result.plot_loadings(),
        "variance.png": result.plot_variance(),
        "stability.png": spcakit.stability(x, "spcart", r=R, k=12, standardize=True, feature_names=names,
                                           n_resamples=100, seed=SEED).plot(),
    }  # fmt: skip


def _numbers(values: Any) -> Any:
    """Numbers (any nesting of arrays) as lists of floats rounded to DIGITS significant digits; NaN and masked: None."""
    import numpy as np

    array = np.ma.asarray(values, dtype=float)
    filled = np.ma.filled(array, np.nan)

    def one(value: float) -> float | None:
        return None if not math.isfinite(value) else float(f"{value:.{DIGITS}g}")

    if filled.ndim == 0:
        return one(float(filled))
    return [_numbers(row) if filled.ndim > 1 else one(float(row)) for row in filled]


def _label(artist: Any) -> str | None:
    label = artist.get_label()
    return None if not label or label.startswith("_") else str(label)


def _axis_names(axis: Any) -> list[str] | None:
    """The labels of an axis with fixed ticks (the variables or components named on it), else None (numbers
    that matplotlib's locator chose, which say nothing about the data)."""
    from matplotlib.ticker import FixedLocator

    locator = axis.get_major_locator()
    if not isinstance(locator, FixedLocator):
        return None
    names = [str(label) for label in axis.get_major_formatter().format_ticks(list(locator()))]
    return names or None


def axes_data(ax: Any) -> dict[str, Any]:
    """What one axes plots: titles, lines (x, y), bars (x, height), heat-map cells, points, categorical tick names."""
    from matplotlib.collections import LineCollection, PathCollection, QuadMesh
    from matplotlib.container import BarContainer

    colorbar = getattr(ax, "_colorbar", None) is not None  # a colour bar's own mesh is the colour scale, not data
    entry: dict[str, Any] = {"title": ax.get_title(), "xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel()}
    for which, axis in (("xnames", ax.xaxis), ("ynames", ax.yaxis)):
        names = _axis_names(axis)
        if names is not None:
            entry[which] = names
    entry["lines"] = [{"label": _label(line), "x": _numbers(line.get_xdata()), "y": _numbers(line.get_ydata())}
                      for line in ax.get_lines()]  # fmt: skip
    bars = [c for c in ax.containers if isinstance(c, BarContainer)]
    if bars:
        entry["bars"] = [{"label": _label(c), "x": _numbers([p.get_x() + p.get_width() / 2 for p in c.patches]),
                          "height": _numbers([p.get_height() for p in c.patches])} for c in bars]  # fmt: skip
    if not colorbar:
        for collection in ax.collections:
            if isinstance(collection, QuadMesh):
                entry.setdefault("cells", []).append(_numbers(collection.get_array()))
            elif isinstance(collection, LineCollection):
                entry.setdefault("segments", []).append([_numbers(s) for s in collection.get_segments()])
            elif isinstance(collection, PathCollection):
                entry.setdefault("points", []).append(_numbers(collection.get_offsets()))
    return entry


def figure_data(drawn: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every series the figures plot (default: :func:`figures` drawn now), by file name: what DATA_FILE holds."""
    import matplotlib.pyplot as plt

    if drawn is not None:
        return {name: {"axes": [axes_data(ax) for ax in figure.axes]} for name, figure in drawn.items()}
    drawn = figures()
    try:
        return figure_data(drawn)
    finally:
        for figure in drawn.values():
            plt.close(figure)


def dumps(data: Any, indent: str = "") -> str:
    """``data`` as JSON, one object key per line and each list of numbers or names on one line (short diffs)."""
    inner = indent + " "
    if isinstance(data, dict):
        items = [f"{inner}{json.dumps(key)}: {dumps(value, inner)}" for key, value in data.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}" if items else "{}"
    if isinstance(data, list) and any(isinstance(item, (dict, list)) for item in data):
        return "[\n" + ",\n".join(inner + dumps(item, inner) for item in data) + "\n" + indent + "]"
    return json.dumps(data, ensure_ascii=False)


def draw(out_dir: Path) -> list[Path]:
    """Draw the tutorial's figures into ``out_dir`` (created if missing), and their data into DATA_FILE beside
    them; returns the files written."""
    from spcakit import plotting

    out_dir.mkdir(parents=True, exist_ok=True)
    import matplotlib.pyplot as plt

    drawn = figures()
    written = [plotting.save(figure, out_dir / name) for name, figure in drawn.items()]
    data = out_dir / DATA_FILE
    data.write_text(dumps(figure_data(drawn)) + "\n", encoding="utf-8")
    for figure in drawn.values():
        plt.close(figure)
    return [*written, data]


#: Where the single-cell page's figure goes (``--single-cell``), and where docs/single-cell.md links to it.
SINGLE_CELL_FIGURES = Path(__file__).resolve().parent / "figures" / "single-cell"


def draw_single_cell(out_dir: Path) -> list[Path]:
    """Draw docs/single-cell.md's embedding plot into ``out_dir``, by the page's own steps (needs the scanpy extra:
    ``pip install -e ".[scanpy]"``): simulated counts, normalised, the highly variable genes, ``sparse_pca``, then
    scanpy's ``sc.pl.embedding`` of ``obsm["X_spca"]`` coloured by each cell's most active program."""
    import matplotlib
    import scanpy as sc

    from spcakit.anndata import simulated_counts, sparse_pca

    matplotlib.rcdefaults()
    out_dir.mkdir(parents=True, exist_ok=True)
    adata = simulated_counts(n_cells=3000, n_genes=2000, seed=0)
    sc.pp.normalize_total(adata)
    sc.pp.log1p(adata)
    sc.pp.highly_variable_genes(adata, n_top_genes=500)
    sparse_pca(adata, n_components=6, k=30)
    figure = sc.pl.embedding(adata, basis="X_spca", color="program", components=["1,2", "3,4", "5,6"],
                             return_fig=True, show=False)  # fmt: skip
    path = out_dir / "embedding.png"
    figure.savefig(path, dpi=80, metadata={"Software": None})
    return [path]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Draw the tutorial's figures (docs/tutorial.md).")
    parser.add_argument("--out-dir", type=Path, help=f"folder of the PNG files (default {FIGURES}, or "
                        f"{SINGLE_CELL_FIGURES} with --single-cell)")  # fmt: skip
    parser.add_argument("--single-cell", action="store_true", help="draw docs/single-cell.md's figure instead")
    args = parser.parse_args(argv)
    if args.single_cell:
        paths = draw_single_cell(args.out_dir or SINGLE_CELL_FIGURES)
    else:
        paths = draw(args.out_dir or FIGURES)
    for path in paths:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
