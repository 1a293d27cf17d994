"""Benchmark spcakit's SPCArt and TPower against scikit-learn's SparsePCA.

Two experiments from Hu, Pan, Wang & Wu, *Sparse Principal Component Analysis
via Rotation and Truncation*, run side by side on the same data in one run:

(a) natural image patches (Sec. 6.3): 13x13 grey-scale patches of
    scikit-learn's bundled ``china.jpg``, DC component removed per patch, then
    the data-set mean removed; r = 20. scikit-learn's ``SparsePCA`` runs first
    at a few ``alpha`` values; for each, spcakit's λ (zeros per loading, T-sp)
    is set to match SparsePCA's mean sparsity, and all three are compared on
    time, SP, CPEV and NOR.

(b) random Gaussian data (Sec. 6.5, Fig. 10): n = p + 1, p in
    {100, 400, 700, 1000, 1300}, r = 20, T-sp with λ = floor(0.85 p); SparsePCA
    runs with one fixed ``alpha`` (its sparsity is reported, not matched) and
    ``max_iter`` capped at 300 instead of its default 1000: at its default
    tol = 1e-8 it has not converged after 300 iterations for p >= 400, and
    running to 1000 would dominate the benchmark's run time.

SparsePCA uses ``method="cd"`` (much faster than the default ``"lars"``, same
solution). Every time is wall-clock ``time.perf_counter`` around the whole
``fit`` call, best of up to 5 repeats while the repeats stay under 3 s. BLAS is
limited to one thread for all methods by default (``--blas-threads``): on a
small shared machine OpenBLAS threads made timings vary tenfold.

Usage::

    python benchmarks/run.py                 # full run (about 2.5 minutes on 2 cores)
    python benchmarks/run.py --quick         # < 1 minute: fewer patches, p in {100, 400}
    python benchmarks/run.py --out benchmarks/results/latest.json

Prints Markdown tables and writes every number to a JSON file.

Needs scikit-learn (and Pillow, which scikit-learn uses to read the bundled
JPEG): ``pip install -e ".[bench]" pillow``.
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np

try:
    import sklearn
    from sklearn.datasets import load_sample_image
    from sklearn.decomposition import SparsePCA
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.feature_extraction.image import extract_patches_2d
except ImportError:  # pragma: no cover - depends on the environment
    sys.exit(
        "benchmarks/run.py compares against scikit-learn, which is not installed.\n"
        'Install the benchmark extra:  pip install -e ".[bench]"  (and Pillow: pip install pillow)'
    )
try:
    import PIL  # noqa: F401  - scikit-learn needs it to decode china.jpg
except ImportError:  # pragma: no cover - depends on the environment
    sys.exit(
        "benchmarks/run.py loads scikit-learn's sample image china.jpg, which needs Pillow.\n"
        'Install it:  pip install -e ".[bench]" pillow'
    )


import spcakit
import timing
from spcakit.analysis.metrics import cpev, nonorthogonality, sparsity

R = 20
PATCH = 13
SEED = 0

FULL = {
    "n_patches": 5000,
    "patch_alphas": [0.5, 1.0, 2.0, 4.0],
    "patch_max_iter": 1000,  # scikit-learn's default
    "ps": [100, 400, 700, 1000, 1300],
    "random_alpha": 1.5,
    "random_max_iter": 300,
}
QUICK = {
    "n_patches": 1000,
    "patch_alphas": [0.5, 2.0],
    "patch_max_iter": 1000,
    "ps": [100, 400],
    "random_alpha": 1.5,
    "random_max_iter": 100,
}

#: spcakit runs are repeated (best time kept) while they have used less than this many seconds.
SPCAKIT_BUDGET_S = 3.0
#: scikit-learn runs are repeated while they have used less than this many seconds.
SKLEARN_BUDGET_S = 3.0


# -- helpers ---------------------------------------------------------------
def unit_columns(v: np.ndarray) -> tuple[np.ndarray, int]:
    """Normalize the nonzero columns of ``v``; return them and the number of all-zero columns."""
    norms = np.linalg.norm(v, axis=0)
    keep = norms > 0
    return v[:, keep] / norms[keep], int((~keep).sum())


def quality(loadings: np.ndarray, covariance: Any) -> dict[str, Any]:
    """SP/STD/worst SP over all r columns; CPEV and NOR over the nonzero columns."""
    s = sparsity(loadings)
    unit, n_zero = unit_columns(loadings)
    return {
        "sp": float(np.mean(s)),
        "std": float(np.std(s, ddof=1)),
        "worst_sp": float(np.min(s)),
        "cpev": cpev(unit, covariance) if unit.shape[1] else 0.0,
        "nor": nonorthogonality(unit),
        "zero_loadings": n_zero,
    }


def run_sklearn(x: np.ndarray, alpha: float, max_iter: int, covariance: Any) -> dict[str, Any]:
    caught: list[warnings.WarningMessage] = []

    def fit() -> SparsePCA:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always", ConvergenceWarning)
            model = SparsePCA(n_components=R, alpha=alpha, method="cd", max_iter=max_iter, random_state=SEED).fit(x)
        caught[:] = [m for m in w if issubclass(m.category, ConvergenceWarning)]
        return model

    model, seconds, repeats = timing.best_of(fit, SKLEARN_BUDGET_S)
    loadings = model.components_.T  # components_ are rows
    return {
        "method": "sklearn SparsePCA",
        "alpha": alpha,
        "seconds": seconds,
        "repeats": repeats,
        "iterations": int(model.n_iter_),
        "max_iter": max_iter,
        "hit_max_iter": int(model.n_iter_) >= max_iter,
        "cd_convergence_warnings": len(caught),
        **quality(loadings, covariance),
    }


def run_spcakit(x: np.ndarray, method: str, n_zeros: int, covariance: Any, **kwargs: Any) -> dict[str, Any]:
    extra = {"truncator": "sparsity"} if method == "spcart" else {}
    result, seconds, repeats = timing.best_of(
        lambda: spcakit.fit(x, method, r=R, lam=n_zeros, seed=SEED, **extra, **kwargs), SPCAKIT_BUDGET_S
    )
    return {
        "method": {"spcart": "spcakit SPCArt (T-sp)", "tpower": "spcakit TPower"}[method],
        "lam": n_zeros,
        "seconds": seconds,
        "solver_seconds": result.seconds,
        "repeats": repeats,
        "iterations": int(result.iterations),  # summed over components for TPower
        **quality(result.loadings, covariance),
    }


def run_spcakit_covariance(x: np.ndarray, method: str, n_zeros: int, covariance: Any) -> dict[str, Any]:
    """As :func:`run_spcakit`, but passing ``np.cov(x)`` (p x p) instead of the n x p data matrix."""
    extra = {"truncator": "sparsity"} if method == "spcart" else {}

    def fit() -> Any:
        c = np.cov(x, rowvar=False)
        return spcakit.fit(spcakit.Covariance(c), method, r=R, lam=n_zeros, seed=SEED, **extra)

    result, seconds, _ = timing.best_of(fit, SPCAKIT_BUDGET_S)
    return {"seconds": seconds, **quality(result.loadings, covariance)}


def pca_cpev(covariance: Any) -> float:
    values, _ = covariance.top_eigenpairs(R)
    return float(np.sum(values) / covariance.trace())


# -- data ------------------------------------------------------------------
def image_patches(n_patches: int) -> np.ndarray:
    """``n_patches`` random 13x13 grey patches of china.jpg, DC removed per patch, then the mean removed.

    Pixels are scaled to [0, 1] (only SparsePCA's ``alpha`` depends on the
    scale; T-sp, SP, CPEV and NOR do not).
    """
    rgb = load_sample_image("china.jpg").astype(float) / 255.0
    grey = rgb @ np.array([0.299, 0.587, 0.114])  # ITU-R 601 luma, as PIL's "L" mode
    patches = extract_patches_2d(grey, (PATCH, PATCH), max_patches=n_patches, random_state=SEED)
    x = patches.reshape(n_patches, PATCH * PATCH)
    x = x - x.mean(axis=1, keepdims=True)  # DC component of each patch
    return x - x.mean(axis=0)  # mean of the data set


# -- experiments -----------------------------------------------------------
def experiment_patches(cfg: dict[str, Any]) -> dict[str, Any]:
    x = image_patches(cfg["n_patches"])
    n, p = x.shape
    covariance = spcakit.as_problem(x).covariance
    rows = []
    for alpha in cfg["patch_alphas"]:
        skl = run_sklearn(x, alpha, cfg["patch_max_iter"], covariance)
        n_zeros = min(p - 1, int(round(skl["sp"] * p)))  # matched mean sparsity
        group = [skl]
        for method in ("spcart", "tpower"):
            res = run_spcakit(x, method, n_zeros, covariance)
            res["time_ratio_sklearn_over_this"] = skl["seconds"] / res["seconds"]
            res["cpev_ratio_this_over_sklearn"] = res["cpev"] / skl["cpev"] if skl["cpev"] else math.nan
            # the same fit from an explicit p x p covariance (formed inside the timed call)
            cov_res = run_spcakit_covariance(x, method, n_zeros, covariance)
            res["covariance_input_seconds"] = cov_res["seconds"]
            res["covariance_input_cpev"] = cov_res["cpev"]
            group.append(res)
        for res in group:
            res["alpha"] = alpha
            res["matched_lam"] = n_zeros
        rows.extend(group)
        print(f"  [patches] alpha={alpha}: sklearn {skl['seconds']:.2f}s SP={skl['sp']:.3f}; "
              f"spcakit lam={n_zeros}: SPCArt {group[1]['seconds']:.3f}s, TPower {group[2]['seconds']:.3f}s",
              file=sys.stderr, flush=True)  # fmt: skip
    return {"n": n, "p": p, "r": R, "pca_cpev": pca_cpev(covariance), "rows": rows}


def experiment_random(cfg: dict[str, Any]) -> dict[str, Any]:
    rows = []
    for p in cfg["ps"]:
        x = spcakit.datasets.random_gaussian(n=p + 1, p=p, seed=SEED).matrix
        covariance = spcakit.as_problem(x).covariance
        n_zeros = int(math.floor(0.85 * p))
        entry: dict[str, Any] = {"p": p, "n": p + 1, "lam": n_zeros, "pca_cpev": pca_cpev(covariance)}
        entry["spcart"] = run_spcakit(x, "spcart", n_zeros, covariance)
        entry["tpower"] = run_spcakit(x, "tpower", n_zeros, covariance)
        entry["sklearn"] = run_sklearn(x, cfg["random_alpha"], cfg["random_max_iter"], covariance)
        for key in ("spcart", "tpower"):
            entry[f"time_ratio_sklearn_over_{key}"] = entry["sklearn"]["seconds"] / entry[key]["seconds"]
        rows.append(entry)
        print(f"  [random] p={p}: SPCArt {entry['spcart']['seconds']:.3f}s, TPower {entry['tpower']['seconds']:.3f}s, "
              f"sklearn {entry['sklearn']['seconds']:.2f}s", file=sys.stderr, flush=True)  # fmt: skip
    return {"r": R, "alpha": cfg["random_alpha"], "max_iter": cfg["random_max_iter"], "rows": rows}


# -- report ----------------------------------------------------------------
def fmt(v: float, digits: int = 3) -> str:
    return "nan" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def markdown(report: dict[str, Any]) -> str:
    out = []
    pa = report["patches"]
    out.append(f"### (a) Image patches: n = {pa['n']}, p = {pa['p']}, r = {pa['r']} "
               f"(PCA CPEV with r = {pa['r']}: {fmt(pa['pca_cpev'])})\n")  # fmt: skip
    out.append("| alpha | method | λ (zeros) | time (s) | iters | SP | STD | CPEV | NOR | "
               "time sklearn / this | CPEV this / sklearn | time from p×p covariance (s) |")  # fmt: skip
    out.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for row in pa["rows"]:
        is_skl = row["method"].startswith("sklearn")
        iters = f"{row['iterations']}" + (" (cap)" if row.get("hit_max_iter") else "")
        zeros = "-" if is_skl else str(row["lam"])
        zl = f" ({row['zero_loadings']} zero loadings)" if row["zero_loadings"] else ""
        out.append(
            f"| {row['alpha']} | {row['method']}{zl} | {zeros} | {fmt(row['seconds'])} | {iters} | {fmt(row['sp'])} | "
            f"{fmt(row['std'])} | {fmt(row['cpev'])} | {fmt(row['nor'])} | "
            f"{'1' if is_skl else fmt(row['time_ratio_sklearn_over_this'], 1)} | "
            f"{'1' if is_skl else fmt(row['cpev_ratio_this_over_sklearn'], 3)} | "
            f"{'-' if is_skl else fmt(row['covariance_input_seconds'])} |"
        )
    ra = report["random"]
    out.append(f"\n### (b) Random Gaussian data: n = p + 1, r = {ra['r']}, spcakit T-sp λ = floor(0.85 p); "
               f"sklearn alpha = {ra['alpha']} (fixed), max_iter = {ra['max_iter']}\n")  # fmt: skip
    out.append("| p | SPCArt time (s) | TPower time (s) | sklearn time (s) | sklearn iters | "
               "sklearn / SPCArt | sklearn / TPower | SP (SPCArt, TPower, sklearn) | "
               "CPEV (SPCArt, TPower, sklearn, PCA) |")  # fmt: skip
    out.append("|---|---|---|---|---|---|---|---|---|")
    for row in ra["rows"]:
        s, t, k = row["spcart"], row["tpower"], row["sklearn"]
        iters = f"{k['iterations']}" + (" (cap)" if k["hit_max_iter"] else "")
        out.append(
            f"| {row['p']} | {fmt(s['seconds'])} | {fmt(t['seconds'])} | {fmt(k['seconds'], 2)} | {iters} | "
            f"{fmt(row['time_ratio_sklearn_over_spcart'], 1)} | {fmt(row['time_ratio_sklearn_over_tpower'], 1)} | "
            f"{fmt(s['sp'])}, {fmt(t['sp'])}, {fmt(k['sp'])} | "
            f"{fmt(s['cpev'])}, {fmt(t['cpev'])}, {fmt(k['cpev'])}, {fmt(row['pca_cpev'])} |"
        )
    out.append("\n" + timing.summary_line(report))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer patches and p in {100, 400}: under a minute")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/latest.json"), help="JSON output path")
    parser.add_argument(
        "--blas-threads", type=int, default=1,
        help="limit BLAS/OpenMP threads for every method (default 1: stable timings on a shared machine; 0: no limit)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    cfg = QUICK if args.quick else FULL

    experiments = {"patches": lambda: experiment_patches(cfg), "random": lambda: experiment_random(cfg)}
    return timing.run_experiments(experiments, quick=args.quick, config=cfg, blas_threads=args.blas_threads,
                                  render=markdown, out=args.out, sklearn=sklearn.__version__)


if __name__ == "__main__":
    raise SystemExit(main())
