"""What the default method costs on image patches, beside the former default and scikit-learn.

Issue 24 asks the default (``auto``) to take at most 5x the former default's time (``spcart``) on the
image patches and to stay at least 300x faster than scikit-learn's ``SparsePCA``. This script measures
the three side by side in one process, one BLAS thread:

* 5000 grey 13 x 13 patches of ``china.jpg`` (:func:`estimator.image_patches`, not standardised);
* ``SparsePCA(method="spcart")`` and ``SparsePCA()`` (``auto``) at r = 20, k = 19 (the scale
  benchmark's setting: scikit-learn's ``alpha=1`` gives about 19 nonzeros per component) and at
  r = 5, k = 10 (the quality panel's);
* scikit-learn's ``SparsePCA(n_components=20, alpha=1, method="cd")`` (r = 20 only; one run, it takes
  seconds).

Each spcakit time is the best of ``--repeats`` fits (wall clock around ``fit``). Writes
``benchmarks/results/default_cost.json`` and prints a table.

**The panel** (``--sections panel``): on Pitprops and the data sets of the quality panel
(``benchmarks/quality.py``, standardised as it reads them, at its r and k; ``--cases`` picks them, the shared
gene-expression sets take minutes each), the default ``auto`` beside each of its members alone (unrefined), beside
``auto`` without its certified stop (``stop_gap=none``: every member and every swap, the plan before it stopped
when certified) and beside what users run, ``SparsePCA(n_components=r, k=k).fit(X)`` with its metrics; each the
best of ``--repeats``, CPEV of each, ``auto``'s time over TPower's. The same at ``r = 1``, with the time ``exact``
takes to certify the first loading (``p <= 64``). **The grid** (``--sections grid``):
``GridSearchCV(SparsePCA(), {"k": [2, 3, 5, 8, 12]}, cv=5)`` on standardised breast cancer, once, wall clock.
**Genes** (``--sections genes``): the default beside TPower and SPCArt at large ``k`` on ``n << p`` data
(:data:`GENE_CASES`: the colon data at k = 50 and 100, a synthetic 80 x 1000 log-expression set at k = 150).
**Wide** (``--sections wide``): the default ``SparsePCA(n_components=20, k=K)`` and ``spcart`` on ``scale.py``'s
500 x 100 000 Gaussian data at k = 100 and 15 000, each in a fresh process (``scale.py --child``, peak RSS), in
passes of :math:`X^\\top(XV)` timed in the same run.
**Plans** (``--sections plans``): what the tall target (the default at most 2x scikit-learn's ``PCA(10)`` on
``scale.py``'s 200 000 x 500 Gaussian data, r = 10, k = 20) would take of the plan. On the tall data, in one process:
``PCA(10)``, the default and :data:`TALL_PLAN` (the three cheapest members, the best alone refined), every metric;
then on the panel's cases (``--cases``) the default beside :data:`TALL_PLAN`, CPEV alone, time and CPEV of each.
R's peers (nsprcomp, msPCA) and scikit-learn at equal sparsity are in ``benchmarks/quality.py``; the tall, wide and
sparse scale cases in ``benchmarks/scale.py`` (``default-estimator``, ``auto`` at k = 15 000 on wide).

Usage::

    python benchmarks/default_cost.py [--repeats 3] [--no-sklearn] [--sections patches,panel,grid,genes] [--cases wine,digits]
    python benchmarks/default_cost.py --sections plans --cases pitprops,digits,golub --out benchmarks/results/default_cost_plans.json
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def best_time(fit, repeats: int) -> tuple[float, object]:
    """The shortest of ``repeats`` runs of ``fit()`` (seconds) and the last run's result."""
    best, out = np.inf, None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fit()
        best = min(best, time.perf_counter() - start)
    return best, out


#: The members of ``auto`` timed alone, unrefined, beside it.
MEMBERS = ("spcart", "tpower", "greedy", "tpower-restarts")
#: The panel's cases run by default (the shared gene-expression ones take minutes: ``--cases``).
PANEL_CASES = ("pitprops", "wine", "breast_cancer", "diabetes", "digits", "patches", "nus_wide", "numerical_numbers")
#: The values of k of the grid search.
GRID_K = (2, 3, 5, 8, 12)


def panel_rows(names: list[str], repeats: int) -> list[dict]:
    """Per case and per r (the panel's, then 1): every member, auto, auto without its stop, and SparsePCA."""
    import quality
    from spcakit import SparsePCA, fit

    rows = []
    for name in names:
        case = quality.load_case(name)
        if case is None:
            print(f"{name}: skipped, its file is not in {quality.SHARED_DATA}", flush=True)
            continue
        x, k = case["x"], case["k"]
        for r in dict.fromkeys((case["r"], 1)):
            runs = {member: (lambda m=member: fit(x, m, r=r, k=k, metrics=["cpev"])) for member in MEMBERS}
            runs["auto"] = lambda: fit(x, r=r, k=k, metrics=["cpev"])
            runs["auto, every member (stop_gap=none)"] = lambda: fit(x, r=r, k=k, metrics=["cpev"],
                                                                     **{"updater.stop_gap": "none"})
            runs["SparsePCA (every metric)"] = lambda: SparsePCA(n_components=r, k=k).fit(x).result_
            if r == 1 and x.shape[1] <= 64:
                runs["exact (certifies)"] = lambda: fit(x, "exact", r=1, k=k, metrics=["cpev", "gap"])
            for label, run in runs.items():
                seconds, result = best_time(run, repeats)
                rows.append({"case": name, "shape": list(x.shape), "r": r, "k": k, "method": label, "seconds": seconds,
                             "cpev": float(result.metrics["cpev"]), "reason": result.stopping_reason,
                             "certified": "certified within" in result.stopping_reason})
                print(f"{name:18s} r={r} {label:36s} {seconds:8.3f} s  CPEV {rows[-1]['cpev']:.6f}", flush=True)
    return rows


#: The gene-expression shapes (``--sections genes``): (case, r, k). ``colon`` is the quality panel's (standardised),
#: ``modules`` a synthetic 80 x 1000 log-expression matrix with five co-expressed modules (:func:`module_genes`).
GENE_CASES = (("colon", 3, 100), ("colon", 5, 50), ("modules", 5, 150))


def module_genes(n: int = 80, p: int = 1000, modules: int = 5, size: int = 120, seed: int = 0) -> np.ndarray:
    """``log2(1 + e^Z)`` of ``n`` samples of ``p`` genes: ``modules`` factors, each loading on ``size`` random genes,
    Gaussian noise and a random baseline per gene (the shape of log-transformed expression with n << p)."""
    rng = np.random.default_rng(seed)
    factors = rng.standard_normal((n, modules))
    loadings = np.zeros((modules, p))
    for module in range(modules):
        genes = rng.choice(p, size, replace=False)
        loadings[module, genes] = rng.uniform(0.5, 1.5, size)
    z = factors @ loadings + 0.8 * rng.standard_normal((n, p)) + rng.uniform(0, 3, p)
    return np.log2(1 + np.exp(z))


def gene_rows(repeats: int) -> list[dict]:
    """The default beside TPower and SPCArt on :data:`GENE_CASES` (large ``k``, ``n << p``): time and CPEV."""
    import quality

    from spcakit import fit

    rows = []
    for name, r, k in GENE_CASES:
        if name == "modules":
            x = module_genes()
        else:
            case = quality.load_case(name)
            if case is None:
                print(f"{name}: skipped, its file is not in {quality.SHARED_DATA}", flush=True)
                continue
            x = case["x"]
        for method in ("tpower", "spcart", "auto"):
            seconds, result = best_time(lambda m=method, x=x, r=r, k=k: fit(x, m, r=r, k=k, metrics=["cpev"]), repeats)
            rows.append({"case": name, "shape": list(x.shape), "r": r, "k": k, "method": method, "seconds": seconds,
                         "cpev": float(result.metrics["cpev"])})
            print(f"{name:8s} r={r} k={k:<4d} {method:8s} {seconds:8.3f} s  CPEV {rows[-1]['cpev']:.6f}", flush=True)
    return rows


def grid_row() -> dict:
    """``GridSearchCV(SparsePCA(), {"k": GRID_K}, cv=5)`` on standardised breast cancer: wall time, best k."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import GridSearchCV

    from spcakit import SparsePCA

    x = load_breast_cancer().data
    x = (x - x.mean(axis=0)) / x.std(axis=0, ddof=1)
    start = time.perf_counter()
    search = GridSearchCV(SparsePCA(), {"k": list(GRID_K)}, cv=5).fit(x)
    seconds = time.perf_counter() - start
    print(f"GridSearchCV(SparsePCA(), k in {GRID_K}, cv=5) on breast cancer: {seconds:.2f} s, best {search.best_params_}")
    return {"seconds": seconds, "best_params": search.best_params_, "fits": 5 * len(GRID_K) + 1}


def panel_table(panel: list[dict]) -> str:
    """The panel as a markdown table: per case and r, times and CPEV of auto beside TPower's and the full plan's."""
    lines = ["| data (r, k) | `tpower` | `auto` | `auto` / `tpower` | every member (before) | `SparsePCA` | `exact` r = 1 "
             "| CPEV `auto` / before / best member | stopped certified |",
             "|---|---|---|---|---|---|---|---|---|"]
    keys = dict.fromkeys((row["case"], row["r"], row["k"]) for row in panel)
    for case, r, k in keys:
        at = {row["method"]: row for row in panel if (row["case"], row["r"], row["k"]) == (case, r, k)}
        auto, before = at["auto"], at["auto, every member (stop_gap=none)"]
        best_member = max(at[m]["cpev"] for m in MEMBERS)
        exact = at.get("exact (certifies)")
        lines.append(
            f"| {case} ({r}, {k}) | {at['tpower']['seconds']:.3f} s | {auto['seconds']:.3f} s | "
            f"{auto['seconds'] / at['tpower']['seconds']:.1f}x | {before['seconds']:.3f} s | "
            f"{at['SparsePCA (every metric)']['seconds']:.3f} s | {'' if exact is None else format(exact['seconds'], '.3f') + ' s'} | "
            f"{auto['cpev']:.5f} / {before['cpev']:.5f} / {best_member:.5f} | {'yes' if auto['certified'] else 'no'} |")
    return "\n".join(lines)


#: The plan the tall target needs (``--sections plans``): TPower, greedy selection and SPCArt, only the one whose
#: loadings explain the most alone refined by swaps (``refine_all=0``); no restarts.
TALL_PLAN = {"methods": ["tpower", "greedy", "spcart"], "refine_all": 0}


def plan_rows(names: list[str], scale: float = 1.0) -> list[dict]:
    """The default beside :data:`TALL_PLAN`: on ``scale.py``'s tall data with ``PCA(10)`` (every metric, once each),
    then on the panel's ``names`` (CPEV alone, once each). ``scale``: the tall data's size, as ``scale.py --scale``."""
    import quality
    import scale as scale_suite
    from sklearn.decomposition import PCA

    from spcakit import fit

    setting = scale_suite.settings(scale)["tall"]
    x = scale_suite.make_data("tall", setting)
    start = time.perf_counter()
    PCA(n_components=setting["r"]).fit(x)
    rows = [{"case": "tall", "r": setting["r"], "k": setting["k"], "plan": "scikit-learn PCA(10)",
             "seconds": time.perf_counter() - start}]
    for plan, extra in (("default", {}), ("tall plan", TALL_PLAN)):
        seconds, result = best_time(lambda e=extra, data=x: fit(data, r=setting["r"], k=setting["k"], **e), 1)
        rows.append({"case": "tall", "r": setting["r"], "k": setting["k"], "plan": plan, "seconds": seconds,
                     "cpev": float(result.metrics["cpev"]), "ratio_to_pca": seconds / rows[0]["seconds"]})
        print(f"tall {plan:10s} {seconds:8.3f} s = {rows[-1]['ratio_to_pca']:.2f} x PCA(10)  CPEV {rows[-1]['cpev']:.7f}",
              flush=True)
    del x
    for name in names:
        case = quality.load_case(name)
        if case is None:
            print(f"{name}: skipped, its file is not in {quality.SHARED_DATA}", flush=True)
            continue
        for plan, extra in (("default", {}), ("tall plan", TALL_PLAN)):
            seconds, result = best_time(lambda e=extra, c=case: fit(c["x"], r=c["r"], k=c["k"], metrics=["cpev"], **e), 1)
            rows.append({"case": name, "r": case["r"], "k": case["k"], "plan": plan, "seconds": seconds,
                         "cpev": float(result.metrics["cpev"])})
            print(f"{name:18s} {plan:10s} {seconds:8.3f} s  CPEV {rows[-1]['cpev']:.6f}", flush=True)
    return rows


#: The wide case's k (``benchmarks/scale.py``'s 500 x 100 000 Gaussian data, r = 20).
WIDE_K = (100, 15_000)


def wide_rows(scale: float) -> list[dict]:
    """The default ``SparsePCA`` and ``spcart`` on ``scale.py``'s wide data at each of :data:`WIDE_K`, each in a fresh
    process (with its peak RSS), in passes of the reference product :math:`X^\\top(XV)` timed in the same run."""
    import scale as scale_suite

    reference = scale_suite.run_child("wide", "reference", 1, scale)
    rows = []
    for k in WIDE_K:
        k_here = scale_suite.scaled_k(k, scale_suite.settings(scale)["wide"]["p"], scale_suite.SETTINGS["wide"]["p"])
        for variant, method in (("default-estimator", "auto"), ("default-fit", "spcart")):
            report = scale_suite.run_child("wide", variant, 1, scale, "--method", method, "--k", str(k_here))
            rows.append({"k": k_here, "variant": variant, "method": method, **report,
                         "passes": report["seconds"] / reference["seconds"],
                         "rss_ratio": report["peak_rss_bytes"] / report["data_bytes"]})
            print(f"wide k={k_here} {variant} {method}: {report['seconds']:.2f} s = {rows[-1]['passes']:.1f} passes, "
                  f"CPEV {report['cpev']:.6f}, peak RSS {rows[-1]['rss_ratio']:.2f} x data", flush=True)
    return [{"reference_seconds": reference["seconds"]}, *rows]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-sklearn", action="store_true", help="skip scikit-learn (it takes about 10 s)")
    parser.add_argument("--sections", default="patches,panel,grid,genes,wide",
                        help="comma-separated: patches, panel, grid, genes, wide, plans")
    parser.add_argument("--wide-scale", type=float, default=1.0, help="the wide data's size, as scale.py --scale")
    parser.add_argument("--tall-scale", type=float, default=1.0, help="the tall data's size (plans), as scale.py --scale")
    parser.add_argument("--cases", default=",".join(PANEL_CASES), help="the panel's cases (benchmarks/quality.py)")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "default_cost.json")
    options = parser.parse_args(argv)
    sections = options.sections.split(",")

    from threadpoolctl import threadpool_info, threadpool_limits

    from estimator import image_patches
    from spcakit import SparsePCA, __version__
    from spcakit.analysis.metrics import cpev
    from spcakit.numerics.operators import DenseCovariance

    x = image_patches(5000, 13)
    covariance = DenseCovariance(np.cov(x, rowvar=False))
    rows = []
    panel, grid, wide, genes, plans = [], None, [], [], []
    with threadpool_limits(1):
        SparsePCA(n_components=2, k=3, method="spcart").fit(x)  # warm-up: imports, plugin loading
        if "panel" in sections:
            panel = panel_rows(options.cases.split(","), options.repeats)
        if "grid" in sections:
            grid = grid_row()
        if "genes" in sections:
            genes = gene_rows(options.repeats)
        if "wide" in sections:
            wide = wide_rows(options.wide_scale)
        if "plans" in sections:
            plans = plan_rows(options.cases.split(","), options.tall_scale)
        for r, k in ((20, 19), (5, 10)) if "patches" in sections else ():
            for method in ("spcart", "auto"):
                seconds, model = best_time(lambda: SparsePCA(n_components=r, k=k, method=method).fit(x), options.repeats)
                rows.append({"r": r, "k": k, "method": method, "seconds": seconds,
                             "cpev": cpev(model.components_.T, covariance)})
        if not options.no_sklearn and "patches" in sections:
            from sklearn.decomposition import SparsePCA as SklearnSparsePCA

            seconds, model = best_time(
                lambda: SklearnSparsePCA(n_components=20, alpha=1.0, method="cd", random_state=0).fit(x), 1)
            loadings = model.components_.T
            kept = np.any(loadings != 0, axis=0)
            rows.append({"r": 20, "k": None, "method": "scikit-learn SparsePCA(alpha=1)", "seconds": seconds,
                         "cpev": cpev(loadings[:, kept], covariance), "nonzeros": int(np.count_nonzero(loadings))})
    blas = [f"{i.get('internal_api')} {i.get('version')}" for i in threadpool_info() if i.get("user_api") == "blas"]
    report = {"rows": rows, "panel": panel, "grid": grid, "wide": wide, "genes": genes, "plans": plans, "machine": platform.platform(), "python": platform.python_version(),
              "numpy": np.__version__, "spcakit": __version__, "blas": blas, "blas_threads": 1,
              "date": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(json.dumps(report, indent=1) + "\n")
    if panel:
        print(panel_table(panel))
    spcart = {row["r"]: row["seconds"] for row in rows if row["method"] == "spcart"}
    sklearn = next((row["seconds"] for row in rows if row["method"].startswith("scikit")), None)
    print(f"{'r':>3} {'k':>4} {'method':<34} {'seconds':>9} {'CPEV':>8} {'/ spcart':>9} {'sklearn /':>10}")
    for row in rows:
        ratio = row["seconds"] / spcart[row["r"]]
        versus = "" if sklearn is None or row["r"] != 20 else f"{sklearn / row['seconds']:.0f}x"
        k = "" if row["k"] is None else row["k"]
        print(f"{row['r']:>3} {k:>4} {row['method']:<34} {row['seconds']:>9.3f} {row['cpev']:>8.4f} {ratio:>8.1f}x {versus:>10}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
