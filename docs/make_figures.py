"""Draw the figures of the tutorial (docs/tutorial.md) into docs/figures/tutorial/.

    python docs/make_figures.py                  # into docs/figures/tutorial/
    python docs/make_figures.py --out-dir DIR    # anywhere else (tests/test_site.py: a copy of docs/)
    python docs/make_figures.py --single-cell    # docs/single-cell.md's figure, into docs/figures/single-cell/

The figures are what the tutorial's code draws, by the same fits and plots: the trade-off paths of three
methods on the standardised Wisconsin breast-cancer data (bundled with scikit-learn: nothing is downloaded),
and the loadings and variance of SPCArt at the k that keeps 90 % of PCA's explained variance. The tutorial
reads the data as a pandas DataFrame; here they are the same numbers as an array with the same column
names, so that the script needs only the plot and sklearn extras (``pip install -e ".[docs,plot,sklearn]"``).

The output depends only on the code and the library versions: every fit has a fixed seed, matplotlib
runs with its own default settings (not a matplotlibrc's) on the Agg canvas, and
:func:`spcakit.plotting.save` writes no date into a file.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ["MPLBACKEND"] = "Agg"  # no window, whatever the environment says

#: Where the figures go by default, and where docs/tutorial.md links to them.
FIGURES = Path(__file__).resolve().parent / "figures" / "tutorial"
#: The tutorial's set-up: r components, the methods compared, the target, the seed of every fit.
R = 3
METHODS = ("spcart", "tpower", "greedy")
TARGET_CPEV = 0.9
SEED = 0
TITLE = "breast cancer, r = 3 (standardised)"


def draw(out_dir: Path) -> list[Path]:
    """Draw the tutorial's figures into ``out_dir`` (created if missing); returns the files written."""
    import matplotlib
    from sklearn.datasets import load_breast_cancer

    import spcakit
    from spcakit import plotting

    matplotlib.rcdefaults()  # matplotlib's own defaults, not the user's style
    out_dir.mkdir(parents=True, exist_ok=True)
    data = load_breast_cancer()
    x, names = data.data, [str(name) for name in data.feature_names]  # the tutorial's DataFrame, as an array

    paths = {name: spcakit.path(x, name, r=R, standardize=True, feature_names=names, seed=SEED) for name in METHODS}
    tradeoff = plotting.plot_tradeoff(
        {name: (p.column("level"), p.column("cpev")) for name, p in paths.items()},
        ceiling=paths["spcart"].ceiling, title=TITLE,
    )  # fmt: skip
    _, result = spcakit.target_k(x, "spcart", r=R, cpev=TARGET_CPEV, standardize=True, feature_names=names, seed=SEED)
    figures = {
        "tradeoff.png": tradeoff,
        "loadings.png": result.plot_loadings(),
        "variance.png": result.plot_variance(),
        "stability.png": spcakit.stability(x, "spcart", r=R, k=12, standardize=True, feature_names=names,
                                           n_resamples=100, seed=0).plot(),
    }
    return [plotting.save(figure, out_dir / name) for name, figure in figures.items()]


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
