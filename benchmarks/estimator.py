"""Benchmark ``spcakit.SparsePCA`` (the scikit-learn estimator): its overhead over ``spcakit.fit`` and its
speed against ``sklearn.decomposition.SparsePCA`` at equal or higher sparsity (issue 13).

Data: random grey-scale patches of scikit-learn's bundled ``china.jpg`` (pixels in [0, 1], the mean of
each patch removed, as ``benchmarks/run.py`` prepares them; the estimators centre the columns
themselves), r = 20 components, two settings:

* ``13x13``: n = 5000 patches, p = 169 -- ``benchmarks/run.py``'s image-patch setting;
* ``16x16``: n = 10000 patches, p = 256.

For each setting scikit-learn's ``SparsePCA`` (``method="cd"``, ``alpha`` fixed, its defaults otherwise)
runs first; spcakit then keeps ``k = floor(mean nonzeros per sklearn component)`` nonzeros per component,
so that every spcakit component is at least as sparse as scikit-learn's average one. Two spcakit methods
run at that ``k``: SPCArt with truncation by sparsity and TPower, each

* through ``spcakit.fit(x, method, r=20, k=k, seed=0, metrics=ESTIMATOR_METRICS)`` (the array in, a
  ``Result`` out; the same metrics as the estimator computes, so that the overhead is the estimator's own), and
* through ``spcakit.SparsePCA(n_components=20, method=..., k=k).fit(x)`` (validation by scikit-learn,
  column means, the regression map of ``transform``, the adjusted variances).

The two are timed alternately, ``--repeats`` times each, by wall clock and by the CPU time of the process
(``time.process_time``, less sensitive to other processes on a shared machine); the overhead
``SparsePCA.fit / spcakit.fit - 1`` is reported from the fastest runs and from the medians (it is a few
milliseconds; alternating keeps drifts of a shared machine out of the ratio). ``transform`` of the
training data is timed too. scikit-learn runs once per setting. BLAS is limited to one thread
(``--blas-threads``), as in ``benchmarks/run.py``.

Usage::

    python benchmarks/estimator.py                  # both settings (about 2 minutes, sklearn most of it)
    python benchmarks/estimator.py --quick          # 13x13 with 2000 patches only
    python benchmarks/estimator.py --out benchmarks/results/estimator.json

Needs scikit-learn and Pillow (``pip install -e ".[bench]"``).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

try:
    import sklearn
    from sklearn.datasets import load_sample_image
    from sklearn.decomposition import SparsePCA as SklearnSparsePCA
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.feature_extraction.image import extract_patches_2d
except ImportError:  # pragma: no cover - depends on the environment
    sys.exit('benchmarks/estimator.py needs scikit-learn and Pillow: pip install -e ".[bench]"')

import spcakit
import timing
from spcakit.analysis.metrics import cpev, sparsity
from spcakit.estimator import ESTIMATOR_METRICS

SEED = 0
R = 20
ALPHA = 1.0
FULL = {"settings": [{"name": "13x13", "patch": 13, "n": 5000}, {"name": "16x16", "patch": 16, "n": 10000}],
        "repeats": 25, "sklearn_repeats": 1, "alpha": ALPHA, "r": R}
QUICK = {"settings": [{"name": "13x13", "patch": 13, "n": 2000}], "repeats": 7, "sklearn_repeats": 1,
         "alpha": ALPHA, "r": R}
#: spcakit methods compared, with the keyword arguments that make them keep k nonzeros per component.
METHODS = {"spcart": {"truncator": "sparsity"}, "tpower": {}}


def image_patches(n_patches: int, size: int) -> np.ndarray:
    """``n_patches`` random ``size x size`` grey patches of china.jpg in [0, 1], each patch's mean removed."""
    rgb = load_sample_image("china.jpg").astype(float) / 255.0
    grey = rgb @ np.array([0.299, 0.587, 0.114])  # ITU-R 601 luma
    patches = extract_patches_2d(grey, (size, size), max_patches=n_patches, random_state=SEED)
    x = patches.reshape(n_patches, size * size)
    return np.ascontiguousarray(x - x.mean(axis=1, keepdims=True))


def timed(fn: Any) -> tuple[Any, float, float]:
    """``fn()``, its wall-clock time and the CPU time of this process (``time.process_time``)."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def alternate(first: Any, second: Any, repeats: int) -> tuple[Any, np.ndarray, Any, np.ndarray]:
    """Run ``first`` and ``second`` alternately ``repeats`` times each: their last outputs and their
    ``(wall, cpu)`` times, one row per run."""
    times_a, times_b, out_a, out_b = [], [], None, None
    for _ in range(repeats):
        out_a, wall, cpu = timed(first)
        times_a.append((wall, cpu))
        out_b, wall, cpu = timed(second)
        times_b.append((wall, cpu))
    return out_a, np.array(times_a), out_b, np.array(times_b)


def run_sklearn(x: np.ndarray, cfg: dict[str, Any]) -> dict[str, Any]:
    def fit() -> SklearnSparsePCA:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return SklearnSparsePCA(n_components=cfg["r"], alpha=cfg["alpha"], method="cd", random_state=SEED).fit(x)

    runs = [timed(fit) for _ in range(cfg["sklearn_repeats"])]
    model = runs[0][0]
    seconds, cpu_seconds = min(run[1] for run in runs), min(run[2] for run in runs)
    loadings = model.components_.T
    nonzero = np.count_nonzero(loadings, axis=0)
    kept = nonzero > 0
    unit = loadings[:, kept] / np.linalg.norm(loadings[:, kept], axis=0)
    covariance = spcakit.as_problem(x).covariance
    return {
        "seconds": seconds, "cpu_seconds": cpu_seconds, "repeats": len(runs), "iterations": int(model.n_iter_),
        "mean_nonzeros": float(nonzero.mean()), "min_nonzeros": int(nonzero.min()), "max_nonzeros": int(nonzero.max()),
        "zero_components": int((~kept).sum()), "sp": float(np.mean(sparsity(loadings))),
        "cpev": cpev(unit, covariance) if unit.shape[1] else 0.0,
    }  # fmt: skip


def run_method(x: np.ndarray, method: str, k: int, cfg: dict[str, Any]) -> dict[str, Any]:
    extra = METHODS[method]
    estimator = spcakit.SparsePCA(n_components=cfg["r"], method=method, k=k, random_state=SEED, **extra)
    result, fit_times, model, est_times = alternate(
        lambda: spcakit.fit(x, method, r=cfg["r"], k=k, seed=SEED, metrics=ESTIMATOR_METRICS, **extra),
        lambda: estimator.fit(x),
        cfg["repeats"],
    )
    np.testing.assert_array_equal(model.components_, result.loadings.T)  # the same fit, both ways
    _, transform_seconds, _ = timing.best_of(lambda: model.transform(x), 1.0)
    best_fit, best_est = fit_times.min(axis=0), est_times.min(axis=0)  # (wall, cpu), each the fastest run
    median_fit, median_est = np.median(fit_times, axis=0), np.median(est_times, axis=0)
    return {
        "method": method, "k": k,
        "fit_seconds": best_fit[0], "estimator_seconds": best_est[0],
        "fit_cpu_seconds": best_fit[1], "estimator_cpu_seconds": best_est[1],
        "fit_seconds_median": median_fit[0], "estimator_seconds_median": median_est[0],
        "overhead": best_est[0] / best_fit[0] - 1.0,
        "overhead_median": median_est[0] / median_fit[0] - 1.0,
        "overhead_cpu": best_est[1] / best_fit[1] - 1.0,
        "overhead_cpu_median": median_est[1] / median_fit[1] - 1.0,
        "solver_seconds": result.seconds, "transform_seconds": transform_seconds,
        "iterations": int(result.iterations), "sp": float(result.metrics["sp"]),
        "cpev": float(model.explained_variance_ratio_.sum()),
    }  # fmt: skip


def run_setting(setting: dict[str, Any], cfg: dict[str, Any]) -> dict[str, Any]:
    x = image_patches(setting["n"], setting["patch"])
    skl = run_sklearn(x, cfg)
    k = max(1, math.floor(skl["mean_nonzeros"]))
    print(f"  [{setting['name']}] n={x.shape[0]} p={x.shape[1]}: sklearn {skl['seconds']:.2f}s, "
          f"{skl['mean_nonzeros']:.1f} nonzeros per component -> k = {k}", file=sys.stderr, flush=True)  # fmt: skip
    rows = []
    for method in METHODS:
        row = run_method(x, method, k, cfg)
        row["speedup_over_sklearn"] = skl["seconds"] / row["estimator_seconds"]
        row["cpu_speedup_over_sklearn"] = skl["cpu_seconds"] / row["estimator_cpu_seconds"]
        rows.append(row)
        print(f"    {method}: fit {row['fit_seconds'] * 1e3:.1f} ms, estimator {row['estimator_seconds'] * 1e3:.1f} ms "
              f"(overhead {100 * row['overhead']:+.1f} %, CPU {100 * row['overhead_cpu']:+.1f} %), "
              f"{row['speedup_over_sklearn']:.0f}x sklearn",
              file=sys.stderr, flush=True)  # fmt: skip
    return {"name": setting["name"], "n": x.shape[0], "p": x.shape[1], "r": cfg["r"], "alpha": cfg["alpha"],
            "sklearn": skl, "rows": rows}  # fmt: skip


def markdown(report: dict[str, Any]) -> str:
    out = ["Times: fastest run (ms); overhead = SparsePCA.fit / spcakit.fit - 1 from the fastest runs and from the "
           "medians, wall-clock and CPU time of the process.\n",
           "| patches | n x p | method | k | spcakit.fit wall / CPU | SparsePCA.fit wall / CPU | overhead wall "
           "(best, median) | overhead CPU (best, median) | transform | SP | CPEV | sklearn wall / CPU (s), SP, CPEV "
           "| sklearn / SparsePCA (wall, CPU) |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for setting in report["settings"]:
        skl = setting["sklearn"]
        for row in setting["rows"]:
            out.append(
                f"| {setting['name']} | {setting['n']} x {setting['p']} | {row['method']} | {row['k']} | "
                f"{row['fit_seconds'] * 1e3:.1f} / {row['fit_cpu_seconds'] * 1e3:.1f} | "
                f"{row['estimator_seconds'] * 1e3:.1f} / {row['estimator_cpu_seconds'] * 1e3:.1f} | "
                f"{100 * row['overhead']:+.1f} %, {100 * row['overhead_median']:+.1f} % | "
                f"{100 * row['overhead_cpu']:+.1f} %, {100 * row['overhead_cpu_median']:+.1f} % | "
                f"{row['transform_seconds'] * 1e3:.1f} | {row['sp']:.3f} | {row['cpev']:.3f} | "
                f"{skl['seconds']:.2f} / {skl['cpu_seconds']:.2f}, {skl['sp']:.3f}, {skl['cpev']:.3f} | "
                f"{row['speedup_over_sklearn']:.0f}x, {row['cpu_speedup_over_sklearn']:.0f}x |"
            )
    out.append("\n" + timing.summary_line(report))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one small setting (2000 patches of 13x13)")
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed runs of each spcakit call (default 25; quick 7)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/estimator.json"), help="JSON output path")
    parser.add_argument("--blas-threads", type=int, default=1,
                        help="limit BLAS/OpenMP threads (default 1: stable timings on a shared machine; 0: no limit)")
    args = parser.parse_args(argv)
    cfg = dict(QUICK if args.quick else FULL)
    if args.repeats is not None:
        cfg["repeats"] = args.repeats
    experiments = {"settings": lambda: [run_setting(s, cfg) for s in cfg["settings"]]}
    return timing.run_experiments(experiments, quick=args.quick, config=cfg, blas_threads=args.blas_threads,
                                  render=markdown, out=args.out, sklearn=sklearn.__version__)


if __name__ == "__main__":
    raise SystemExit(main())
