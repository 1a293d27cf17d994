"""The ``scale`` suite (issue 15): time and peak memory of spcakit on large data, beside a reference in the same run.

Every case runs in a child process of its own (``python benchmarks/scale.py --child CASE``), which
generates its data, runs once, and reports its wall time and its peak resident set size
(``ru_maxrss``: the data, the interpreter and the libraries included, so the ratio to the data's size
is a slight overestimate of what spcakit adds). Cases:

* ``tall``: n = 200 000, p = 500 (763 MiB), r = 10, ``spcart`` with k = 20 (CPEV the only metric),
  against scikit-learn's ``PCA(n_components=10)`` (its default solver) on the same data;
* ``wide``: n = 500, p = 100 000 (381 MiB), r = 20, ``spcart`` with k = 100, against one product
  :math:`X^\\top (XV)` with a p x 20 block (the cost of one pass of an iterative method);
* ``patches``: 5000 x 169 grey image patches (as ``benchmarks/estimator.py``), r = 20, ``spcart`` with
  k = 19 (the estimator benchmark's level): the fixed overhead per fit, i.e. the fit's wall time
  less the algorithm's (``result.seconds``) and less the one product :math:`A^\\top A` that forms
  the covariance (a data pass every method needs); against scikit-learn's ``SparsePCA``
  (``alpha=1``, ``method="cd"``; its mean nonzeros per component are about 19), wall to wall;
* ``sparse``: the 100 000 x 50 000 CSR matrix at density 0.001 of ``benchmarks/sparse.py``, r = 10,
  ``spcart`` and ``tpower`` with k = 20, against one product :math:`X^\\top (XV)`;
* ``square`` (not in the default run: about 5 minutes and 2.5 GiB): n = 10 001, p = 10 000, r = 10,
  the PCA start (the covariance operator's ``top_eigenpairs``) and ``spcart`` with k = 100, against
  the PCA start before issue 15 (ARPACK's ``svds`` on a centred copy of the data, the copy not timed)
  and, for scale, ARPACK's ``eigsh`` on the formed covariance (forming it timed apart);
* ``pitprops``: the same on the built-in Pitprops correlation matrix (r = 6; no data pass);
* ``import``: ``import spcakit`` and ``import spcakit; spcakit.fit`` (the fit path's modules), against
  ``python -c pass``, best of 5 fresh interpreters.

Usage::

    python benchmarks/scale.py                      # every case but square (about 4 minutes, 2 GiB of memory)
    python benchmarks/scale.py --cases tall,import  # some of them
    python benchmarks/scale.py --out benchmarks/results/scale.json

BLAS is limited to one thread on both sides (``--blas-threads``; 0 leaves the machine's default), in
the child's environment as well as by ``threadpoolctl``, as in ``benchmarks/sparse.py``. scikit-learn is needed for the ``tall`` reference (``pip install -e ".[bench]"``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import timing

CASES = ("tall", "wide", "patches", "pitprops", "sparse", "import", "square")
#: The cases run when ``--cases`` is not given.
DEFAULT_CASES = CASES[:-1]
SEED = 0


def _peak_rss() -> int:
    """This process's peak resident set size in bytes (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _child_tall(reference: bool) -> dict[str, Any]:
    x = np.random.default_rng(SEED).standard_normal((200_000, 500))
    start = time.perf_counter()
    if reference:
        from sklearn.decomposition import PCA

        PCA(n_components=10).fit(x)
        extra: dict[str, Any] = {}
    else:
        import spcakit

        result = spcakit.fit(x, "spcart", r=10, k=20, metrics=["cpev"])
        extra = {"cpev": result.metrics["cpev"], "algorithm_seconds": result.seconds}
    return {"seconds": time.perf_counter() - start, "data_bytes": x.nbytes, **extra}


def _child_wide(reference: bool) -> dict[str, Any]:
    x = np.random.default_rng(SEED).standard_normal((500, 100_000))
    start = time.perf_counter()
    if reference:
        v = np.random.default_rng(1).standard_normal((100_000, 20))
        start = time.perf_counter()
        x.T @ (x @ v)
        extra: dict[str, Any] = {}
    else:
        import spcakit

        result = spcakit.fit(x, "spcart", r=20, k=100, metrics=["cpev"])
        extra = {"cpev": result.metrics["cpev"], "algorithm_seconds": result.seconds, "iterations": result.iterations}
    return {"seconds": time.perf_counter() - start, "data_bytes": x.nbytes, **extra}


def _overhead(data: Any, fit_kwargs: dict[str, Any], data_pass: Any, repeats: int = 25) -> dict[str, Any]:
    """Best-of-``repeats`` wall time of a fit, its algorithm time and the data pass, and the overhead left."""
    import spcakit

    fits, algorithms, passes = [], [], []
    for _ in range(repeats):
        start = time.perf_counter()
        result = spcakit.fit(data, **fit_kwargs)
        fits.append(time.perf_counter() - start)
        algorithms.append(result.seconds)
        start = time.perf_counter()
        data_pass()
        passes.append(time.perf_counter() - start)
    fit_s, algorithm_s, pass_s = min(fits), min(algorithms), min(passes)
    return {"seconds": fit_s, "algorithm_seconds": algorithm_s, "data_pass_seconds": pass_s,
            "overhead_seconds": fit_s - algorithm_s - pass_s, "iterations": result.iterations}  # fmt: skip


def _child_patches(reference: bool) -> dict[str, Any]:
    from estimator import image_patches

    x = image_patches(5000, 13)
    if reference:
        import warnings

        from sklearn.decomposition import SparsePCA
        from sklearn.exceptions import ConvergenceWarning

        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = SparsePCA(n_components=20, alpha=1.0, method="cd", random_state=SEED).fit(x)
        seconds = time.perf_counter() - start
        nonzeros = np.count_nonzero(model.components_, axis=1)
        return {"seconds": seconds, "data_bytes": x.nbytes, "mean_nonzeros": float(nonzeros.mean()),
                "total_nonzeros": int(nonzeros.sum())}  # fmt: skip
    from spcakit.estimator import ESTIMATOR_METRICS

    centred = x - x.mean(axis=0)
    kwargs = {"method": "spcart", "r": 20, "k": 19, "truncator": "sparsity", "metrics": ESTIMATOR_METRICS}
    return {"data_bytes": x.nbytes, "total_nonzeros": 20 * 19, **_overhead(x, kwargs, lambda: centred.T @ centred)}


def _child_pitprops(reference: bool) -> dict[str, Any]:
    import spcakit

    matrix = spcakit.datasets.pitprops().matrix
    kwargs = {"method": "spcart", "r": 6, "covariance": True}
    return {"data_bytes": matrix.nbytes, **_overhead(matrix, kwargs, lambda: None, repeats=50)}


def _child_sparse(reference: bool) -> dict[str, Any]:
    import sparse

    x = sparse.sparse_matrix()
    stored = x.data.nbytes + x.indices.nbytes + x.indptr.nbytes
    if reference:
        v = np.random.default_rng(1).standard_normal((x.shape[1], sparse.R))
        start = time.perf_counter()
        x.T @ (x @ v)
        return {"seconds": time.perf_counter() - start, "data_bytes": stored}
    import spcakit

    report: dict[str, Any] = {"data_bytes": stored}
    for method in ("spcart", "tpower"):
        start = time.perf_counter()
        result = spcakit.fit(x, method, r=sparse.R, k=sparse.K, metrics=["cpev"])
        report[method] = {"seconds": time.perf_counter() - start, "cpev": result.metrics["cpev"]}
    report["seconds"] = report["spcart"]["seconds"]
    return report


def _child_square(reference: bool) -> dict[str, Any]:
    x = np.random.default_rng(SEED).standard_normal((10_001, 10_000))
    if reference:
        from scipy.sparse.linalg import eigsh, svds

        samples, data_bytes = x.shape[0], x.nbytes
        centred = x - x.mean(axis=0)
        del x
        start = time.perf_counter()  # the PCA start before issue 15: ARPACK's svds on the centred copy
        _, singular, _ = svds(centred, k=10, random_state=SEED)
        before = time.perf_counter() - start
        start = time.perf_counter()
        covariance = centred.T @ centred / (samples - 1)
        del centred
        formed = time.perf_counter() - start
        values = eigsh(covariance, k=10, which="LA", v0=np.ones(covariance.shape[0]), return_eigenvectors=True)[0]
        return {"seconds": before, "eigsh_formed_seconds": time.perf_counter() - start, "forming_seconds": formed,
                "data_bytes": data_bytes, "top_eigenvalue": float(values.max()),
                "top_eigenvalue_svds": float(singular.max() ** 2 / (samples - 1))}  # fmt: skip
    import spcakit

    start = time.perf_counter()
    problem = spcakit.as_problem(x)
    built = time.perf_counter() - start
    values, _ = problem.covariance.top_eigenpairs(10)
    pca_start = time.perf_counter() - start - built
    start = time.perf_counter()
    result = spcakit.fit(problem, "spcart", r=10, k=100, metrics=["cpev"])
    return {"seconds": built + time.perf_counter() - start, "build_seconds": built, "pca_start_seconds": pca_start,
            "algorithm_seconds": result.seconds, "cpev": result.metrics["cpev"], "data_bytes": x.nbytes,
            "top_eigenvalue": float(values[0])}  # fmt: skip


CHILDREN = {"tall": _child_tall, "wide": _child_wide, "patches": _child_patches, "pitprops": _child_pitprops,
            "sparse": _child_sparse, "square": _child_square}  # fmt: skip


def run_child(case: str, reference: bool, blas_threads: int | None) -> dict[str, Any]:
    """Run ``case`` in a fresh interpreter and return what it reports (with its peak RSS)."""
    arguments = ["--child", case] + (["--reference"] if reference else [])
    if blas_threads is not None:
        arguments += ["--blas-threads", str(blas_threads)]
    return timing.run_child(__file__, arguments, blas_threads)


def import_times(repeats: int = 5) -> dict[str, float]:
    """Best wall time of fresh interpreters running each statement."""
    statements = {"pass": "pass", "import spcakit": "import spcakit", "fit path": "import spcakit; spcakit.fit"}
    best: dict[str, float] = {}
    for label, statement in statements.items():
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", statement], check=True)
            times.append(time.perf_counter() - start)
        best[label] = min(times)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(DEFAULT_CASES), help=f"comma-separated, of {', '.join(CASES)}")
    parser.add_argument("--out", type=Path, help="write the report as JSON")
    parser.add_argument("--blas-threads", type=int, default=1, help="BLAS threads on both sides (0: the default)")
    parser.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    parser.add_argument("--reference", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.blas_threads == 0:
        args.blas_threads = None
    if args.child:
        with timing.limit_blas_threads(args.blas_threads):
            report = CHILDREN[args.child](args.reference)
        report["peak_rss_bytes"] = _peak_rss()
        print(json.dumps(report))
        return 0

    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = sorted(set(cases) - set(CASES))
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; valid: {', '.join(CASES)}")
    report: dict[str, Any] = {"environment": timing.environment(), "blas_threads": args.blas_threads, "cases": {}}
    lines = []
    for case in cases:
        if case == "import":
            times = import_times()
            report["cases"]["import"] = times
            lines.append(f"| import | `import spcakit` {times['import spcakit']:.3f} s; with the fit path "
                         f"{times['fit path']:.3f} s | `python -c pass` {times['pass']:.3f} s | |")
            continue
        ours = run_child(case, False, args.blas_threads)
        entry: dict[str, Any] = {"spcakit": ours, "rss_ratio": ours["peak_rss_bytes"] / ours["data_bytes"]}
        if case in ("tall", "wide", "patches", "sparse", "square"):
            reference = run_child(case, True, args.blas_threads)
            entry["reference"] = reference
            entry["time_ratio"] = ours["seconds"] / reference["seconds"]
        if case in ("tall", "wide"):
            name = "scikit-learn PCA(10)" if case == "tall" else "one pass X^T(XV), V p x 20"
            lines.append(
                f"| {case} | spcart {ours['seconds']:.2f} s, peak RSS {entry['rss_ratio']:.2f} x data | {name} "
                f"{reference['seconds']:.2f} s, peak RSS {reference['peak_rss_bytes'] / reference['data_bytes']:.2f} x data "
                f"| time {entry['time_ratio']:.2f} x |"
            )
        elif case == "sparse":
            lines.append(
                f"| sparse | spcart {ours['spcart']['seconds']:.2f} s, tpower {ours['tpower']['seconds']:.2f} s, peak RSS "
                f"{ours['peak_rss_bytes'] / 2**20:.0f} MiB | one pass X^T(XV) {reference['seconds']:.3f} s | |"
            )
        elif case == "square":
            entry["time_ratio"] = ours["pca_start_seconds"] / reference["seconds"]
            lines.append(
                f"| square | PCA start {ours['pca_start_seconds']:.1f} s, spcart {ours['seconds']:.1f} s (problem "
                f"{ours['build_seconds']:.1f} s) | before: svds on the centred copy {reference['seconds']:.1f} s; eigsh "
                f"on the formed covariance {reference['eigsh_formed_seconds']:.1f} s (forming "
                f"{reference['forming_seconds']:.1f} s) | PCA start {entry['time_ratio']:.2f} x before |"
            )
        else:
            line = (f"| {case} | fit {1e3 * ours['seconds']:.2f} ms = algorithm {1e3 * ours['algorithm_seconds']:.2f} + data "
                    f"pass {1e3 * ours['data_pass_seconds']:.2f} + overhead {1e3 * ours['overhead_seconds']:.2f} ms |")
            if case == "patches":
                entry["speedup_over_reference"] = reference["seconds"] / ours["seconds"]
                line += (f" scikit-learn SparsePCA(alpha=1) {reference['seconds']:.2f} s, "
                         f"{reference['total_nonzeros']} nonzeros (spcart {ours['total_nonzeros']}) "
                         f"| {entry['speedup_over_reference']:.0f} x faster |")
            else:
                line += " | |"
            lines.append(line)
        report["cases"][case] = entry
    report["environment"]["loadavg_end"] = list(os.getloadavg())
    print("| setting | spcakit | reference | ratio |\n|---|---|---|---|")
    print("\n".join(lines))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
