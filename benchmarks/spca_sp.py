"""Benchmark SPCA-SP against SPCArt and TPower (Xu, Yang & Zhang, §4.3-4.4, Figs. 1-4).

All three methods run on the same data in one run, with the truncation by
sparsity T_S (``κ_S`` zeros per loading) so that every method has the same
sparsity; the reported time is ``Result.seconds``, the driver's wall-clock time
(the covariance operator is built before it, identically for all three), best
of up to 3 repeats while the repeats stay under 3 s.

(a) Fig. 3, n ≈ d: Gaussian data n = d + 1, d ∈ {100, 400, 700, 1000, 1300},
    r = 20, κ_S = ⌈0.7 d⌉; SPCA-SP samples c = d/2 rows (LinearTimeSVD), m = 80
    (m = 50 at d = 100: c rows give at most c directions).
(b) Fig. 4, n ≪ d: n = 500, d ∈ {1000, 4000, 10000, 20000, 30000}, r = 20,
    κ_S = ⌈0.85 d⌉; SPCA-SP with the exact initial subspace, m = 30.
(c) Figs. 1-2, Golub leukemia (72 × 7129, ``../shared/data``; skipped when
    absent): r = 6; SPCA-SP with the exact P0 for m from 2 to 71 (the paper: 72;
    centred, the data have rank 71) at κ_S = 5500,
    κ_E = 0.01, κ_H = 1/300 (Fig. 1), and the three methods at m = 6 over a
    range of κ_S (Fig. 2).

Usage::

    python benchmarks/spca_sp.py                # full run
    python benchmarks/spca_sp.py --quick        # d up to 400 / 4000, fewer m
    python benchmarks/spca_sp.py --out benchmarks/results/spca_sp.json

BLAS is limited to one thread by default (``--blas-threads``), as in
``benchmarks/run.py``.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

import spcakit
import timing

R = 20
SEED = 0
BUDGET_S = 3.0
REPEATS = 3
GOLUB = Path(__file__).resolve().parents[2] / "shared" / "data" / "golub_leukemia_72x7129_raw.npz"
METHODS = ("spca-sp", "spcart", "tpower")

FULL = {
    "square_ds": [100, 400, 700, 1000, 1300],
    "wide_ds": [1000, 4000, 10000, 20000, 30000],
    "golub_ms": [2, 3, 4, 6, 8, 10, 15, 20, 30, 40, 50, 60, 71],  # 71 = n - 1, the rank of the centred data
    "golub_zeros": [5000, 5500, 6000, 6500, 6800],
}
QUICK = {
    "square_ds": [100, 400],
    "wide_ds": [1000, 4000],
    "golub_ms": [2, 6, 20],
    "golub_zeros": [5500, 6500],
}


def fit(x: np.ndarray, method: str, **kwargs: Any) -> dict[str, Any]:
    """Fit ``method`` (best time of a few repeats) and keep its quality numbers."""
    result, _, repeats = timing.best_of(lambda: spcakit.fit(x, method, seed=SEED, **kwargs), BUDGET_S, REPEATS)
    m = result.metrics
    return {
        "seconds": result.seconds,
        "repeats": repeats,
        "iterations": result.iterations,
        "cpev": m["cpev"],
        "orthogonality": m["orthogonality"],
        "sp": m["sp"],
        "nz": m["nz"],
    }


def compare(x: np.ndarray, r: int, n_zeros: int, sp_params: dict[str, Any]) -> dict[str, Any]:
    """The three methods on ``x`` at ``n_zeros`` zeros per loading, and SPCA-SP's speed-ups."""
    row: dict[str, Any] = {}
    for method in METHODS:
        extra = sp_params if method == "spca-sp" else {}
        row[method] = fit(x, method, r=r, truncator="sparsity", lam=n_zeros, **extra)
    for other in ("spcart", "tpower"):
        row[f"speedup_vs_{other}"] = row[other]["seconds"] / row["spca-sp"]["seconds"]
    return row


def experiment_square(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for d in cfg["square_ds"]:
        x = np.random.default_rng(SEED).standard_normal((d + 1, d))
        n_zeros = math.ceil(0.7 * d)
        row = {"d": d, "n": d + 1, "n_zeros": n_zeros}
        # LinearTimeSVD on c rows has at most c directions: at d = 100 the paper's m = 80 > c = 50
        m = min(80, d // 2)
        row["m"] = m
        row.update(compare(x, R, n_zeros, {"m": m, "c": d // 2}))
        rows.append(row)
        print(f"  square d={d}: spca-sp {row['spca-sp']['seconds']:.3f}s", file=sys.stderr)
    return rows


def experiment_wide(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for d in cfg["wide_ds"]:
        x = np.random.default_rng(SEED).standard_normal((500, d))
        n_zeros = math.ceil(0.85 * d)
        row = {"d": d, "n": 500, "n_zeros": n_zeros}
        row.update(compare(x, R, n_zeros, {"m": 30, "exact": True}))
        rows.append(row)
        print(f"  wide d={d}: spca-sp {row['spca-sp']['seconds']:.3f}s", file=sys.stderr)
    return rows


def golub_data() -> np.ndarray | None:
    if not GOLUB.exists():
        return None
    with np.load(GOLUB, allow_pickle=False) as archive:
        x = np.log2(np.clip(archive["X"], 20, 16000))  # the usual thresholding of raw Affymetrix intensities
    return x[:, x.std(axis=0) > 1e-6]


def experiment_golub(cfg: dict[str, Any]) -> dict[str, Any] | None:
    x = golub_data()
    if x is None:
        print(f"  {GOLUB} is absent: Golub experiments skipped", file=sys.stderr)
        return None
    truncations = {"sparsity": 5500, "energy": 0.01, "hard": 1 / 300}
    by_m = []
    for m in cfg["golub_ms"]:
        row: dict[str, Any] = {"m": m}
        for truncator, lam in truncations.items():
            row[truncator] = fit(x, "spca-sp", r=6, truncator=truncator, lam=lam, m=m, exact=True)
        by_m.append(row)
    by_sparsity = []
    for n_zeros in cfg["golub_zeros"]:
        row = {"n_zeros": n_zeros}
        row.update(compare(x, 6, n_zeros, {"m": 6, "exact": True}))
        by_sparsity.append(row)
    return {"n": x.shape[0], "d": x.shape[1], "preprocessing": "log2(clip(X, 20, 16000)), constant genes dropped, centred",
            "by_m": by_m, "by_sparsity": by_sparsity}


def markdown(report: dict[str, Any]) -> str:
    out = []

    def comparison(title: str, rows: list[dict[str, Any]], key: str) -> None:
        out.append(f"### {title}\n")
        out.append(f"| {key} | κ_S | time SPCA-SP (s) | SPCArt (s) | TPower (s) | SPCArt / SPCA-SP | TPower / SPCA-SP "
                   "| CPEV SP / SPCArt / TPower | orthogonality SP / SPCArt / TPower |")
        out.append("|---|---|---|---|---|---|---|---|---|")
        for row in rows:
            s, a, t = row["spca-sp"], row["spcart"], row["tpower"]
            out.append(
                f"| {row[key]} | {row['n_zeros']} | {s['seconds']:.3f} | {a['seconds']:.3f} | {t['seconds']:.3f} "
                f"| {row['speedup_vs_spcart']:.1f} | {row['speedup_vs_tpower']:.1f} "
                f"| {s['cpev']:.3f} / {a['cpev']:.3f} / {t['cpev']:.3f} "
                f"| {s['orthogonality']:.3f} / {a['orthogonality']:.3f} / {t['orthogonality']:.3f} |"
            )
        out.append("")

    comparison("(a) Random data, n = d + 1, r = 20, κ_S = ⌈0.7d⌉, SPCA-SP m = 80, c = d/2 (Fig. 3)", report["square"], "d")
    comparison("(b) Random data, n = 500, r = 20, κ_S = ⌈0.85d⌉, SPCA-SP m = 30, exact P0 (Fig. 4)", report["wide"], "d")
    wide = report["wide"]
    if len(wide) >= 2:
        growth = [
            f"d ×{b['d'] / a['d']:.1f}: SPCA-SP ×{b['spca-sp']['seconds'] / a['spca-sp']['seconds']:.1f}, "
            f"SPCArt ×{b['spcart']['seconds'] / a['spcart']['seconds']:.1f}, "
            f"TPower ×{b['tpower']['seconds'] / a['tpower']['seconds']:.1f}"
            for a, b in zip(wide, wide[1:])
        ]
        out.append("Growth of the time between consecutive d (n = 500): " + "; ".join(growth) + ".\n")
    golub = report["golub"]
    if golub is not None:
        out.append(f"### (c) Golub leukemia, n = {golub['n']}, d = {golub['d']}, r = 6, exact P0 (Fig. 1)\n")
        out.append("| m | T_S 5500: CPEV / SP / orth. / s | T_E 0.01: CPEV / SP / orth. / s | T_H 1/300: CPEV / SP / orth. / s |")
        out.append("|---|---|---|---|")
        for row in golub["by_m"]:
            cells = [
                f"{row[t]['cpev']:.3f} / {row[t]['sp']:.3f} / {row[t]['orthogonality']:.3f} / {row[t]['seconds']:.3f}"
                for t in ("sparsity", "energy", "hard")
            ]
            out.append(f"| {row['m']} | " + " | ".join(cells) + " |")
        out.append("")
        comparison("(c') Golub leukemia, r = 6, SPCA-SP m = 6, same sparsity for all three (Fig. 2)",
                   golub["by_sparsity"], "n_zeros")
    out.append(timing.summary_line(report))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="d up to 400 (n = d + 1) and 4000 (n = 500); 3 values of m")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/spca_sp.json"), help="JSON output path")
    parser.add_argument("--blas-threads", type=int, default=1, help="limit BLAS threads (default 1; 0: no limit)")
    args = parser.parse_args(argv)
    cfg = QUICK if args.quick else FULL
    experiments = {"square": lambda: experiment_square(cfg), "wide": lambda: experiment_wide(cfg),
                   "golub": lambda: experiment_golub(cfg)}
    return timing.run_experiments(experiments, quick=args.quick, config=cfg, blas_threads=args.blas_threads,
                                  render=markdown, out=args.out)


if __name__ == "__main__":
    raise SystemExit(main())
