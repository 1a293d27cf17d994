"""Benchmark the ``swap`` refiner (issue 16): CPEV at matched cardinality with and without it, and its cost.

(a) **Quality.** Every method at the same cardinality ``k`` per loading, without and with ``swap``
    (``improvement="best"``, the default, and ``"first"``), on:

    - Pitprops (``builtin:pitprops``), r = 6, k = 4 (the done-when run of the issue);
    - image patches: 13x13 grey patches of scikit-learn's ``china.jpg`` (``benchmarks/run.py``'s
      ``image_patches``, n = 5000, p = 169), r = 5, k = 10 (the issue's setting: 5 loadings of 10);
    - the three gene data sets of ``../shared/data`` (colon 62 x 2000, lymphoma 62 x 4026,
      leukemia 72 x 7129; centred, as given), r = 5, k = 10, skipped when absent;
    - random spiked data: n = 200 samples of p = 100 variables, five sparse spikes (10 variables each,
      overlapping supports) of variances 20, 15, 10, 8, 6 on unit noise, three seeds; r = 5, k = 10.

    Methods: ``spcart`` (truncation by sparsity), ``tpower`` (``rsvd-gp`` with truncation by sparsity
    is the same composition: its ``k`` selects the sparsity truncation, so it is not repeated),
    ``rsvd-gpb`` (block GPower, sparsity truncation), ``greedy`` (Mackey's generalized deflation),
    and on Pitprops ``exhaustive``. Beside them scikit-learn's ``SparsePCA`` (``method="cd"``) with
    ``alpha`` bisected (at most ``SKLEARN_STEPS`` fits) to the largest total number of nonzeros not
    above ``r * k``, where a fit is cheap (Pitprops through a data matrix whose covariance is the
    correlation matrix, the patches, the spiked data); on the gene data one fit takes 50-140 s (colon)
    and is not run. CPEV of scikit-learn's components is computed the same way (unit columns, span).

(b) **Time.** Spiked data as above with n = 500 and p = 100 (explicit covariance), 1000 and 10000
    (matrix-free: n < p), r = 5, k = 10: each method's driver time (``Result.seconds``) against the
    time of ``swap`` on its loadings, best of up to ``--repeats`` runs within a budget; the ratio
    swap / base is the issue's target (<= 5 at p <= 1000, <= 10 at p = 10000).

BLAS is limited to one thread (``--blas-threads``), as in ``benchmarks/run.py``.

Usage::

    python benchmarks/refine.py                  # everything (a few minutes, scikit-learn most of it)
    python benchmarks/refine.py --quick          # Pitprops, one spiked seed, p in {100, 1000}
    python benchmarks/refine.py --out benchmarks/results/refine.json

Needs scikit-learn and Pillow for the patches and the comparison (``pip install -e ".[bench]"``).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

try:
    import sklearn
    from sklearn.decomposition import SparsePCA
    from sklearn.exceptions import ConvergenceWarning
except ImportError:  # pragma: no cover - depends on the environment
    sys.exit('benchmarks/refine.py needs scikit-learn and Pillow: pip install -e ".[bench]"')

import spcakit
import timing
from run import image_patches
from spcakit.inputs.datasets import pitprops
from spcakit.analysis.metrics import cpev
from spcakit_deflation.swap import SupportSwap

SEED = 0
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
GENES = {"colon": ("colon_alon_62x2000.npz", "X"), "lymphoma": ("lymphoma_alizadeh_62x4026_std.npz", "X"),
         "leukemia": ("golub_leukemia_72x7129_raw.npz", "X")}  # fmt: skip
#: Methods at matched cardinality and the keyword arguments that give each its k nonzeros per loading.
METHODS = {"spcart": {"truncator": "sparsity"}, "tpower": {}, "rsvd-gpb": {"truncator": "sparsity"}, "greedy": {}}
SPIKES = (20.0, 15.0, 10.0, 8.0, 6.0)
SKLEARN_STEPS = 14
BUDGET_S = 2.0
FULL = {"spiked_seeds": [0, 1, 2], "timing_ps": [100, 1000, 10000], "repeats": 3, "patches": True, "genes": True}
QUICK = {"spiked_seeds": [0], "timing_ps": [100, 1000], "repeats": 2, "patches": False, "genes": False}


def spiked_data(n: int, p: int, seed: int) -> np.ndarray:
    """``n`` samples of five sparse spikes (10 variables each, drawn with overlaps) on unit Gaussian noise."""
    rng = np.random.default_rng(seed)
    spikes = np.zeros((p, len(SPIKES)))
    for t in range(len(SPIKES)):
        spikes[rng.choice(min(p, 30), size=10, replace=False), t] = rng.standard_normal(10)  # overlapping supports
    spikes, _ = np.linalg.qr(spikes)
    scores = rng.standard_normal((n, len(SPIKES))) * np.sqrt(SPIKES)
    return scores @ spikes.T + rng.standard_normal((n, p))


def pitprops_data() -> np.ndarray:
    """A data matrix whose sample covariance is proportional to the Pitprops correlation matrix: ``[S; -S]``, ``S^2 = R``."""
    values, vectors = np.linalg.eigh(pitprops().matrix)
    root = (vectors * np.sqrt(np.clip(values, 0, None))) @ vectors.T
    return np.vstack([root, -root])  # column means 0, covariance 2 R / 25


def sklearn_at(x: np.ndarray, r: int, total: int, covariance: Any) -> dict[str, Any]:
    """scikit-learn's SparsePCA with alpha bisected (log scale) to the most nonzeros not above ``total``."""

    def fit(alpha: float) -> tuple[np.ndarray, float]:
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = SparsePCA(n_components=r, alpha=alpha, method="cd", random_state=SEED).fit(x)
        return model.components_.T, time.perf_counter() - start

    low, high = 1e-4, 1e3  # alpha: too many nonzeros at low, too few at high
    best: dict[str, Any] | None = None
    seconds = 0.0
    for _ in range(SKLEARN_STEPS):
        alpha = float(np.sqrt(low * high))
        loadings, spent = fit(alpha)
        seconds += spent
        nonzeros = int(np.count_nonzero(loadings))
        if nonzeros > total:
            low = alpha
            continue
        high = alpha
        kept = np.count_nonzero(loadings, axis=0) > 0
        unit = loadings[:, kept] / np.linalg.norm(loadings[:, kept], axis=0)
        row = {"alpha": alpha, "nonzeros": nonzeros, "pattern": np.count_nonzero(loadings, axis=0).tolist(),
               "cpev": cpev(unit, covariance) if kept.any() else 0.0, "seconds": spent}  # fmt: skip
        if best is None or nonzeros > best["nonzeros"] or (nonzeros == best["nonzeros"] and row["cpev"] > best["cpev"]):
            best = row
        if nonzeros == total:
            break
    return {"fits": SKLEARN_STEPS, "total_seconds": seconds, **(best or {"nonzeros": 0, "cpev": float("nan")})}


def refine_row(problem: Any, method: str, r: int, k: int) -> dict[str, Any]:
    base = spcakit.fit(problem, method, r=r, k=k, seed=SEED, metrics=["cpev", "pattern"], **METHODS.get(method, {}))
    row: dict[str, Any] = {"method": method, "cpev": base.metrics["cpev"], "pattern": base.metrics["pattern"],
                           "seconds": base.seconds}  # fmt: skip
    for improvement in ("best", "first"):
        refiner = SupportSwap(improvement=improvement)
        start = time.perf_counter()
        refined = refiner(problem, base.loadings)
        spent = time.perf_counter() - start
        assert np.array_equal(np.count_nonzero(refined.loadings, axis=0), base.metrics["pattern"])
        row[improvement] = {"cpev": refined.report["cpev_after"], "swaps": refined.report["swaps"],
                            "sweeps": refined.report["sweeps"], "seconds": spent}  # fmt: skip
    return row


def quality_setting(name: str, problem: Any, r: int, k: int, methods: list[str], data: np.ndarray | None) -> dict[str, Any]:
    rows = [refine_row(problem, method, r, k) for method in methods]
    best_plain = max(row["cpev"] for row in rows)
    best_refined = max(row["best"]["cpev"] for row in rows)
    out = {"name": name, "p": problem.p, "r": r, "k": k, "rows": rows, "best_plain": best_plain,
           "best_refined": best_refined, "gain_over_best_plain": best_refined / best_plain - 1.0}  # fmt: skip
    if data is not None:
        out["sklearn"] = sklearn_at(data, r, r * k, problem.covariance)
    for row in rows:
        print(f"  [{name}] {row['method']}: {row['cpev']:.4f} -> {row['best']['cpev']:.4f} "
              f"({row['best']['swaps']} swaps, {row['best']['seconds']:.3f} s; first: {row['first']['cpev']:.4f})",
              file=sys.stderr, flush=True)  # fmt: skip
    return out


def quality(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    settings = [quality_setting("pitprops", spcakit.as_problem("builtin:pitprops"), 6, 4,
                                [*METHODS, "exhaustive"], pitprops_data())]  # fmt: skip
    if cfg["patches"]:
        x = image_patches(5000)
        settings.append(quality_setting("patches 13x13", spcakit.as_problem(x), 5, 10, list(METHODS), x))
    if cfg["genes"]:
        for name, (file, key) in GENES.items():
            path = SHARED / file
            if not path.exists():
                print(f"  [{name}] skipped: {path} is absent", file=sys.stderr)
                continue
            with np.load(path, allow_pickle=False) as archive:
                x = np.asarray(archive[key], dtype=float)
            settings.append(quality_setting(name, spcakit.as_problem(x), 5, 10, list(METHODS), None))
    for seed in cfg["spiked_seeds"]:
        x = spiked_data(200, 100, seed)
        settings.append(quality_setting(f"spiked seed {seed}", spcakit.as_problem(x), 5, 10, list(METHODS), x))
    return settings


def timing_rows(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for p in cfg["timing_ps"]:
        problem = spcakit.as_problem(spiked_data(500, p, SEED))
        for method, extra in METHODS.items():
            runs = [spcakit.fit(problem, method, r=5, k=10, seed=SEED, metrics=["cpev"], **extra)
                    for _ in range(cfg["repeats"])]  # fmt: skip
            base = min(runs, key=lambda result: result.seconds)
            refined, swap_seconds, repeats = timing.best_of(lambda: SupportSwap()(problem, base.loadings), BUDGET_S,
                                                             cfg["repeats"])  # fmt: skip
            row = {"p": p, "operator": type(problem.covariance).__name__, "method": method,
                   "base_seconds": base.seconds, "swap_seconds": swap_seconds, "ratio": swap_seconds / base.seconds,
                   "repeats": repeats, "cpev": base.metrics["cpev"], "refined_cpev": refined.report["cpev_after"],
                   "swaps": refined.report["swaps"], "sweeps": refined.report["sweeps"]}  # fmt: skip
            rows.append(row)
            print(f"  [p={p}] {method}: base {base.seconds * 1e3:.1f} ms, swap {swap_seconds * 1e3:.1f} ms "
                  f"({row['ratio']:.2f}x), CPEV {row['cpev']:.4f} -> {row['refined_cpev']:.4f}",
                  file=sys.stderr, flush=True)  # fmt: skip
    return rows


def markdown(report: dict[str, Any]) -> str:
    out = ["CPEV at matched cardinality (k nonzeros per loading), without / with `swap` (best improvement; "
           "first improvement in brackets where it differs), swaps made, and the gain of the best refined "
           "result over the best unrefined one.\n",
           "| data | p | r, k | method | CPEV | + swap | gain | swaps | swap time (s) |",
           "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for setting in report["quality"]:
        for row in setting["rows"]:
            first = "" if abs(row["first"]["cpev"] - row["best"]["cpev"]) <= 5e-5 else f" [{row['first']['cpev']:.4f}]"
            out.append(f"| {setting['name']} | {setting['p']} | {setting['r']}, {setting['k']} | {row['method']} | "
                       f"{row['cpev']:.4f} | {row['best']['cpev']:.4f}{first} | "
                       f"{100 * (row['best']['cpev'] / row['cpev'] - 1):+.1f} % | {row['best']['swaps']} | "
                       f"{row['best']['seconds']:.3f} |")  # fmt: skip
        skl = setting.get("sklearn")
        skl_text = "not run" if skl is None else f"{skl['cpev']:.4f} ({skl['nonzeros']} nonzeros)"
        out.append(f"| {setting['name']} | | | **best** | {setting['best_plain']:.4f} | {setting['best_refined']:.4f} | "
                   f"**{100 * setting['gain_over_best_plain']:+.1f} %** | sklearn: {skl_text} | |")  # fmt: skip
    out += ["\nTime of `swap` on each method's loadings against the method's own time (driver only), spiked "
            "data, n = 500, r = 5, k = 10.\n",
            "| p | operator | method | base (s) | swap (s) | swap / base | CPEV | + swap |",
            "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for row in report["timing"]:
        out.append(f"| {row['p']} | {row['operator']} | {row['method']} | {row['base_seconds']:.3f} | "
                   f"{row['swap_seconds']:.3f} | {row['ratio']:.2f} | {row['cpev']:.4f} | {row['refined_cpev']:.4f} |")
    out.append("\n" + timing.summary_line(report))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="Pitprops, one spiked seed, p in {100, 1000}")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/refine.json"), help="JSON output path")
    parser.add_argument("--blas-threads", type=int, default=1,
                        help="limit BLAS/OpenMP threads (default 1: stable timings on a shared machine; 0: no limit)")
    args = parser.parse_args(argv)
    cfg = dict(QUICK if args.quick else FULL)
    SupportSwap()(spcakit.as_problem("builtin:pitprops"), np.eye(13)[:, :2])  # warm up (first imports)
    experiments = {"quality": lambda: quality(cfg), "timing": lambda: timing_rows(cfg)}
    return timing.run_experiments(experiments, quick=args.quick, config=cfg, blas_threads=args.blas_threads,
                                  render=markdown, out=args.out, sklearn=sklearn.__version__)


if __name__ == "__main__":
    raise SystemExit(main())
