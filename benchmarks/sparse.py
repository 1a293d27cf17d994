"""Sparse input (issue 15, item 4): time and peak memory of spcakit on a ``scipy.sparse`` matrix, never densified.

Data: a CSR matrix of n = 100 000 rows and p = 50 000 columns at density 0.001 (5 000 000 stored
entries, standard Gaussian values at uniformly random positions: ``scipy.sparse.random_array`` with
seed 0), 57 MiB as CSR; dense it would take 37 GiB. r = 10 loadings with k = 20 nonzeros each,
centred (spcakit's default; the centring is implicit in the covariance operator). Cases:

* ``spcart``, ``tpower``: ``spcakit.fit(x, method, r=10, k=20, metrics=["cpev"])``;
* ``spcart-all-metrics``: the same SPCArt fit computing every registered metric (the default of
  ``spcakit.fit``): the encoders' criteria and the PCA-relative metrics share the leading
  eigenvalues that SPCArt's PCA start already computed;
* ``pca``: spcakit's ``pca`` method (the leading eigenvectors, no truncation): its CPEV must equal the
  reference's explained variance ratio (the same eigenproblem, solved by two Lanczos runs);
* ``reference``: scikit-learn's ``PCA(n_components=10, svd_solver="arpack").fit(x)``, which centres
  sparse input implicitly too: the leading eigenpairs alone, the problem of SPCArt's PCA start;
* ``product``: one product :math:`X^\\top (X V)` with a p x 10 block, the cost of one data pass.

Every case runs in a child process of its own (``python benchmarks/sparse.py --child CASE``), which
generates the matrix, runs once and reports its wall time (from the matrix in memory to the result;
generating the matrix is not timed) and its peak resident set size (``ru_maxrss``: interpreter,
libraries, the matrix and its generation included), beside the resident size once the matrix is made
(``before``) and the peak from then to the result (``peak during``: the peak is reset through
``/proc/self/clear_refs`` on Linux), whose difference is what the fit itself adds. The Gaussian values make the leading eigenvalues close together
(noise has no dominant direction), the hardest case for the Lanczos eigensolver of the PCA start.

Usage::

    python benchmarks/sparse.py                       # every case (about 2 minutes on 2 cores)
    python benchmarks/sparse.py --cases spcart,tpower
    python benchmarks/sparse.py --out benchmarks/results/sparse.json

BLAS is limited to one thread (``--blas-threads``), as in ``benchmarks/run.py``, by the environment of
the child (``OPENBLAS_NUM_THREADS`` and kin) as well as by ``threadpoolctl``: the BLAS library that SciPy
loads on first use (ARPACK's) is not yet loaded when ``threadpoolctl`` sets its limits, and two
OpenBLAS threads on a busy 2-core machine made the PCA start 3.5 times slower (50 s against 14 s).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import timing

CASES = ("spcart", "tpower", "spcart-all-metrics", "pca", "reference", "product")
SHAPE = (100_000, 50_000)
DENSITY = 0.001
R, K = 10, 20
SEED = 0
#: The issue's targets.
TARGET_SECONDS, TARGET_BYTES = 30.0, 1024**3


def sparse_matrix() -> Any:
    """The benchmark's CSR matrix (seeded)."""
    import scipy.sparse as sp

    rng = np.random.default_rng(SEED)
    return sp.random_array(SHAPE, density=DENSITY, format="csr", rng=rng, data_sampler=rng.standard_normal)


def _peak_rss() -> int:
    """This process's peak resident set size in bytes (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _status_bytes(field: str) -> int | None:
    """``VmRSS`` or ``VmHWM`` (peak) of this process from ``/proc/self/status``, in bytes; ``None`` elsewhere."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _reset_peak_rss() -> bool:
    """Reset this process's peak RSS to its current RSS (Linux >= 4.0: ``5`` to ``/proc/self/clear_refs``)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def child(case: str) -> dict[str, Any]:
    """Run ``case`` on the matrix and report its time, what it found, and the matrix's size."""
    x = sparse_matrix()
    stored_bytes = x.data.nbytes + x.indices.nbytes + x.indptr.nbytes
    extra: dict[str, Any] = {}
    rss_before = _status_bytes("VmRSS")  # the interpreter, the libraries and the matrix, after generating it
    reset = _reset_peak_rss()
    start = time.perf_counter()
    if case == "reference":
        from sklearn.decomposition import PCA

        pca = PCA(n_components=R, svd_solver="arpack", random_state=0).fit(x)
        extra["explained_variance_ratio_sum"] = float(pca.explained_variance_ratio_.sum())
    elif case == "product":
        v = np.random.default_rng(1).standard_normal((SHAPE[1], R))
        start = time.perf_counter()
        x.T @ (x @ v)
    else:
        import spcakit

        method = case.removesuffix("-all-metrics")
        metrics = None if case.endswith("-all-metrics") else ["cpev"]
        sparsity = {} if method == "pca" else {"k": K}  # PCA keeps every variable
        result = spcakit.fit(x, method, r=R, metrics=metrics, **sparsity)
        extra = {"cpev": result.metrics["cpev"], "algorithm_seconds": result.seconds,
                 "iterations": result.iterations, "nonzeros": result.metrics.get("nz", int(np.count_nonzero(result.loadings)))}  # fmt: skip
    seconds = time.perf_counter() - start
    during = _status_bytes("VmHWM") if reset else None
    return {"seconds": seconds, "peak_rss_bytes": _peak_rss(), "rss_before_bytes": rss_before,
            "peak_rss_during_bytes": during, "stored_bytes": stored_bytes, "nnz": int(x.nnz), **extra}  # fmt: skip


def run_child(case: str, blas_threads: int | None) -> dict[str, Any]:
    """Run ``case`` in a fresh interpreter and return what it reports."""
    arguments = ["--child", case] + ([] if blas_threads is None else ["--blas-threads", str(blas_threads)])
    return timing.run_child(__file__, arguments, blas_threads)


def render(report: dict[str, Any]) -> str:
    lines = [
        f"sparse input: {SHAPE[0]:,} x {SHAPE[1]:,} at density {DENSITY} (CSR), r = {R}, k = {K}",
        f"{'case':<20} {'seconds':>8} {'peak RSS':>10} {'before':>10} {'peak during':>12} {'CPEV':>8}"
        f"  targets: < {TARGET_SECONDS:g} s, < 1 GiB",
    ]

    def mib(value: int | None) -> str:
        return "" if value is None else f"{value / 1024**2:.0f} MiB"

    for case in report["config"]["cases"]:
        row = report[case]
        cpev = f"{row['cpev']:.5f}" if "cpev" in row else ""
        lines.append(f"{case:<20} {row['seconds']:>8.2f} {mib(row['peak_rss_bytes']):>10} {mib(row['rss_before_bytes']):>10} "
                     f"{mib(row['peak_rss_during_bytes']):>12} {cpev:>8}")  # fmt: skip
    lines.append(timing.summary_line(report))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "sparse.json")
    parser.add_argument("--blas-threads", type=int, default=1)
    parser.add_argument("--child", choices=CASES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        with timing.limit_blas_threads(args.blas_threads):
            print(json.dumps(child(args.child)))
        return 0
    cases = [c for c in args.cases.split(",") if c]
    unknown = sorted(set(cases) - set(CASES))
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; valid: {', '.join(CASES)}")
    experiments = {case: (lambda case=case: run_child(case, args.blas_threads)) for case in cases}
    config = {"shape": list(SHAPE), "density": DENSITY, "r": R, "k": K, "seed": SEED, "cases": cases}
    try:
        import sklearn

        versions = {"sklearn": sklearn.__version__}
    except ImportError:  # pragma: no cover - the reference needs it
        versions = {}
    return timing.run_experiments(experiments, quick=False, config=config, blas_threads=args.blas_threads,
                                  render=render, out=args.out, **versions)  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
