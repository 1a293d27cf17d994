"""What a stability analysis costs: ``spcakit.stability`` beside one fit and beside the naive loop, in one run.

On the colon data (62 x 2000, log2, ``../shared/data/colon_alon_62x2000.npz``; planted 100 x 1000 data with two
supports of 10 where it is absent) at r = 3, k = 10, for ``tpower`` and ``spcart``, each in a fresh child process
(one BLAS thread) that reports its peak resident set size:

* **one fit**: ``spcakit.fit(x, method, r=3, k=10)`` with its default metrics, the best of ``--repeats``;
* **stability**: ``spcakit.stability(x, method, r=3, k=10, n_resamples=100)`` (its full fit included), with
  ``workers=1`` and ``workers=2``;
* **the naive loop**: ``spcakit.fit(x[rows], method, r=3, k=10)`` for each of the same 100 subsamples, then the
  Hungarian matching, as a user would write it.

The ratio of interest is stability over one fit (issue: at most 20). **Choosing k** (``--sections choice``): on
planted supports of 10 (n = 60, p = 2000, one component, 10 seeds), ``tpower``, the choice of ``spcakit.stable_k``
(50 resamples per level), of ``spcakit.information_k`` by the extended BIC and by the GIC, and of
``spcakit.cross_validate`` (1se rule) on ``k = 1..44``; then the same on the colon data. The default method (``auto``) is timed the
same way, beside them. Writes ``benchmarks/results/stability.json`` and prints a table; ``--render`` prints the
markdown table of docs/benchmarks.md from that file.

Usage::

    python benchmarks/stability.py [--repeats 3] [--resamples 100] [--methods tpower,spcart,auto]
    python benchmarks/stability.py --render benchmarks/results/stability.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SHARED = HERE.parent.parent / "shared" / "data"
RESULTS = HERE / "results" / "stability.json"


def load_data() -> tuple[np.ndarray, str]:
    """The colon data (log2), or planted data when the shared file is absent."""
    path = SHARED / "colon_alon_62x2000.npz"
    if path.exists():
        with np.load(path, allow_pickle=False) as archive:
            return np.log2(archive["X"]), "colon, log2 (62 x 2000)"
    from spcakit.testing.planted import planted_supports

    print(f"{path} is absent: planted 100 x 1000 data instead", flush=True)
    return planted_supports(100, 1000, [10, 10], [20.0, 8.0], seed=0)[0], "planted (100 x 1000)"


def child(method: str, repeats: int, resamples: int) -> dict:
    """Run in a fresh process: the timings of ``method`` (see the module's description)."""
    import warnings

    import spcakit
    from spcakit.workflows.stability.resamples import matched, resample_rows

    warnings.simplefilter("ignore")
    x, label = load_data()
    r, k = 3, 10

    def best(run) -> float:
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            run()
            times.append(time.perf_counter() - start)
        return min(times)

    one_fit = best(lambda: spcakit.fit(x, method, r=r, k=k))
    timings = {"one_fit": one_fit}
    for workers in (1, 2):
        found = {}

        def run_stability(workers=workers, found=found) -> None:
            found["s"] = spcakit.stability(x, method, r=r, k=k, n_resamples=resamples, seed=0, workers=workers)

        timings[f"stability_{workers}"] = best(run_stability)
    s = found["s"]
    draws = resample_rows(x.shape[0], resamples, "subsample", seed=0)

    def naive() -> None:
        full = spcakit.fit(x, method, r=r, k=k).loadings
        for rows in draws:
            matched(full, spcakit.fit(x[rows], method, r=r, k=k, metrics=[]).loadings)

    timings["naive"] = best(naive) if method != "auto" else float("nan")
    return {"data": label, "method": method, "r": r, "k": k, "n_resamples": resamples, **timings,
            "stable": [int(rows.size) for rows in s.stable_support()],
            "mean_jaccard": [float(v) for v in s.mean_jaccard()], "engine": s.warm_start,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}  # fmt: skip


def choice_rows(seeds: int) -> list[dict]:
    """The k each rule chooses on planted supports of 10 and on the colon data."""
    import warnings

    import spcakit
    from spcakit.testing.planted import planted_supports

    warnings.simplefilter("ignore")
    cases = [(f"planted seed {100 + seed}", planted_supports(60, 2000, [10], [30.0], seed=100 + seed)[0], seed)
             for seed in range(seeds)]  # fmt: skip
    colon, label = load_data()
    if label.startswith("colon"):
        cases.append(("colon, log2", colon, 0))
    rows = []
    for name, x, seed in cases:
        row = {"case": name}
        start = time.perf_counter()
        row["stable_k"] = spcakit.stable_k(x, "tpower", 1, n_resamples=50, seed=seed).chosen
        row["stable_k_seconds"] = time.perf_counter() - start
        for criterion in ("ebic", "gic"):
            row[criterion] = spcakit.information_k(x, "tpower", 1, k="1:44", criterion=criterion).chosen
        row["cv_1se"] = spcakit.cross_validate(x, "tpower", 1, k="1:44", seed=seed).chosen
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def in_child(method: str, repeats: int, resamples: int) -> dict:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    command = [sys.executable, __file__, "--child", method, "--repeats", str(repeats), "--resamples", str(resamples)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def render(rows: list[dict]) -> str:
    header = ("| method | one fit | stability, 1 thread | 2 threads | naive loop | stability / one fit (1 / 2 threads) "
              "| naive / stability | peak RSS | stable genes per component |")
    lines = [header, "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        naive = "n/a" if row["naive"] != row["naive"] else f"{row['naive']:.2f} s"
        speedup = "n/a" if row["naive"] != row["naive"] else f"{row['naive'] / row['stability_1']:.1f}x"
        lines.append(
            f"| `{row['method']}` | {row['one_fit'] * 1e3:.1f} ms | {row['stability_1']:.3f} s | "
            f"{row['stability_2']:.3f} s | {naive} | {row['stability_1'] / row['one_fit']:.0f}x / "
            f"{row['stability_2'] / row['one_fit']:.0f}x | {speedup} | {row['peak_rss_mb']:.0f} MB | {row['stable']} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--resamples", type=int, default=100)
    parser.add_argument("--methods", default="tpower,spcart,auto")
    parser.add_argument("--child", metavar="METHOD")
    parser.add_argument("--render", metavar="JSON")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--sections", default="cost,choice")
    parser.add_argument("--seeds", type=int, default=10)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.repeats, args.resamples)))
        return
    if args.render:
        document = json.loads(Path(args.render).read_text())
        print(render(document["rows"]))
        if document.get("choice"):
            print()
            print(render_choice(document["choice"]))
        return
    sections = args.sections.split(",")
    rows = []
    for method in args.methods.split(",") if "cost" in sections else ():
        row = in_child(method, 1 if method == "auto" else args.repeats, args.resamples)
        print(json.dumps(row), flush=True)
        rows.append(row)
    choice = choice_rows(args.seeds) if "choice" in sections else []
    document = {"machine": platform.processor() or platform.machine(), "python": platform.python_version(),
                "rows": rows, "choice": choice}  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=2) + "\n")
    print(render(rows))
    if choice:
        print(render_choice(choice))


def render_choice(rows: list[dict]) -> str:
    lines = ["| data | `stable_k` | EBIC | GIC | cross-validation (1se) |", "|---|---|---|---|---|"]
    lines += [f"| {row['case']} | {row['stable_k']} | {row['ebic']} | {row['gic']} | {row['cv_1se']} |" for row in rows]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
