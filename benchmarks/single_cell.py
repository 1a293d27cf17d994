"""Single-cell data: ``spcakit.anndata.sparse_pca`` beside ``scanpy.pp.pca`` on the same AnnData (issue 28, item 4).

(Named ``single_cell.py``, not ``anndata.py``: a script's folder comes first on ``sys.path``, so a script named
``anndata.py`` would be imported in place of the anndata package.)

Every case runs in a child process of its own (``python benchmarks/single_cell.py --child CASE ...``), which
simulates the counts (:func:`spcakit.anndata.simulated_counts`: six planted programs of 20-30 genes),
normalises them with scanpy (``normalize_total``, ``log1p``: CSR float32, never densified), then resets its
peak resident set size (``/proc/self/clear_refs``) and runs one case, reporting its wall time, its peak RSS
and the RSS before (so that the peak's excess over the data is what the case added). Cases:

* ``spcakit``: ``sparse_pca(adata)`` with every default (10 components, k = ceil(sqrt(p)) = 45 at 2000 genes,
  ``auto`` with its quick plan);
* ``spcakit-k30``: ``sparse_pca(adata, n_components=10, k=30)``;
* ``scanpy``: ``sc.pp.pca(adata, n_comps=10)`` (scanpy's default solver for sparse data: scikit-learn's ARPACK
  on the implicitly centred matrix);
* ``scanpy-50``: ``sc.pp.pca(adata)`` with every default (50 components);
* ``scanpy-covariance``: ``sc.pp.pca(adata, n_comps=10, svd_solver="covariance_eigh")`` (the covariance
  formed, as ``sparse_pca`` forms it).

Recovery of the planted programs: each program is matched to one component (one to one, by the largest
Jaccard overlap of the component's support with the program's genes; for PCA the support is the component's 30
genes of largest weight) and the fraction of its genes in that support is reported (recall), with the fraction
of the support that is the program's (precision; at most the program's size over k).

Usage::

    python benchmarks/single_cell.py                                # 100 000 cells x 2000 genes
    python benchmarks/single_cell.py --cells 50000,100000 --out benchmarks/results/single_cell.json
    python benchmarks/single_cell.py --cells 2000 --genes 300       # seconds

BLAS runs on one thread in every child (``--blas-threads``; 0: the machine's default). Needs the ``scanpy``
extra (``pip install -e ".[scanpy]"``, which brings scikit-learn).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import timing

#: This script's folder, taken off the import path when it runs as a script, once ``timing`` is in: its
#: ``sparse.py`` would shadow the ``sparse`` package that dask (imported by scanpy) imports.
HERE = Path(__file__).resolve().parent

CASES = ("spcakit", "spcakit-k30", "scanpy", "scanpy-50", "scanpy-covariance")
#: The support size given to a PCA component when its recovery of the programs is measured.
PCA_SUPPORT = 30
#: Seconds after which a case is stopped and reported as such.
TIMEOUT = 1200


def _memory() -> dict[str, float]:
    """This process's resident set size now and at its peak (MiB), from /proc/self/status."""
    status = Path("/proc/self/status").read_text()
    return {key: int(re.search(rf"{key}:\s+(\d+)", status).group(1)) / 1024 for key in ("VmRSS", "VmHWM")}


def simulated(cells: int, genes: int, seed: int = 0) -> Any:
    """The benchmark's AnnData: simulated counts, normalised to the median total and log1p-transformed (scanpy)."""
    import scanpy as sc

    from spcakit.anndata import simulated_counts

    adata = simulated_counts(n_cells=cells, n_genes=genes, seed=seed)
    sc.pp.normalize_total(adata)
    sc.pp.log1p(adata)
    return adata


def recovery(adata: Any, loadings: np.ndarray, support: int | None = None) -> dict[str, list[float]]:
    """Recall and precision of each planted program (P1, P2, ...) by the component matched to it."""
    from scipy.optimize import linear_sum_assignment

    if support is None:
        supports = loadings != 0
    else:
        supports = np.zeros(loadings.shape, dtype=bool)
        top = np.argsort(-np.abs(loadings), axis=0)[:support]
        np.put_along_axis(supports, top, True, axis=0)
    program = adata.var["program"].astype(str).to_numpy()
    labels = sorted(set(program) - {"none"}, key=lambda label: int(label[1:]))
    jaccard, recall, precision = (np.zeros((len(labels), loadings.shape[1])) for _ in range(3))
    for i, label in enumerate(labels):
        genes = program == label
        for t in range(loadings.shape[1]):
            both = np.sum(genes & supports[:, t])
            jaccard[i, t] = both / np.sum(genes | supports[:, t])
            recall[i, t], precision[i, t] = both / genes.sum(), both / max(supports[:, t].sum(), 1)
    rows, cols = linear_sum_assignment(-jaccard)
    return {"recall": [round(float(v), 3) for v in recall[rows, cols]],
            "precision": [round(float(v), 3) for v in precision[rows, cols]]}  # fmt: skip


def child(case: str, cells: int, genes: int) -> dict[str, Any]:
    """Simulate, normalise, then run ``case`` once: its seconds, peak RSS and recovery."""
    import scanpy as sc

    from spcakit.anndata import sparse_pca

    adata = simulated(cells, genes)
    x = adata.X
    out: dict[str, Any] = {"case": case, "cells": cells, "genes": genes, "nnz": int(x.nnz),
                           "density": x.nnz / (cells * genes), "data_mib": (x.data.nbytes + x.indices.nbytes
                                                                            + x.indptr.nbytes) / 2**20}  # fmt: skip
    Path("/proc/self/clear_refs").write_text("5")  # the peak RSS from here on
    before = _memory()["VmRSS"]
    start = time.perf_counter()
    if case.startswith("spcakit"):
        sparse_pca(adata, **({"n_components": 10, "k": 30} if case == "spcakit-k30" else {}))
        seconds = time.perf_counter() - start
        info = adata.uns["spca"]
        out.update(n_components=int(info["params"]["n_components"]), k=int(info["params"]["k"]), cpev=info["cpev"],
                   method=info["params"]["method"], stopping_reason=info["stopping_reason"],
                   **recovery(adata, adata.varm["spca_loadings"]))  # fmt: skip
    else:
        kwargs = {"scanpy": {"n_comps": 10}, "scanpy-50": {},
                  "scanpy-covariance": {"n_comps": 10, "svd_solver": "covariance_eigh"}}[case]  # fmt: skip
        sc.pp.pca(adata, **kwargs)
        seconds = time.perf_counter() - start
        ratio = adata.uns["pca"]["variance_ratio"]
        out.update(n_components=int(ratio.size), cpev=float(ratio.sum()), solver=kwargs.get("svd_solver", "default"),
                   **recovery(adata, adata.varm["PCs"], PCA_SUPPORT))  # fmt: skip
    memory = _memory()
    out.update(seconds=seconds, rss_before_mib=before, peak_rss_mib=memory["VmHWM"], added_mib=memory["VmHWM"] - before)
    return out


def run_case(case: str, cells: int, genes: int, blas_threads: int | None) -> dict[str, Any]:
    env = dict(os.environ)
    if blas_threads is not None:
        env.update({name: str(blas_threads) for name in timing.BLAS_THREAD_VARIABLES})
    arguments = [sys.executable, __file__, "--child", case, "--cells", str(cells), "--genes", str(genes)]
    try:
        done = subprocess.run(arguments, capture_output=True, text=True, env=env, timeout=TIMEOUT,
                              cwd=Path(__file__).parent, check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"case": case, "cells": cells, "genes": genes, "timed_out_after": TIMEOUT}
    if done.returncode != 0:
        raise RuntimeError(f"single_cell.py {case} {cells} x {genes} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| cells x genes (stored) | case | seconds | peak RSS (MiB) | added to the data (MiB) | CPEV | "
             "programs' recall (min) | precision (min) |", "|---|---|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    for row in rows:
        size = f"{row['cells']:,} x {row['genes']:,} ({row.get('density', math.nan):.0%})"
        if "timed_out_after" in row:
            lines.append(f"| {size} | {row['case']} | > {row['timed_out_after']} (stopped) | | | | | |")
            continue
        lines.append(f"| {size} | {row['case']} | {row['seconds']:.1f} | {row['peak_rss_mib']:.0f} | "
                     f"{row['added_mib']:.0f} | {row['cpev']:.4f} | {min(row['recall']):.2f} | "
                     f"{min(row['precision']):.2f} |")  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", default="100000", help="comma-separated numbers of cells (default 100000)")
    parser.add_argument("--genes", type=int, default=2000)
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}")
    parser.add_argument("--blas-threads", type=int, default=1, help="BLAS threads in every child (0: the default)")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, int(args.cells), args.genes)))
        return 0
    from importlib.metadata import version

    cases = [case for case in args.cases.split(",") if case]
    unknown = sorted(set(cases) - set(CASES))
    if unknown:
        parser.error(f"unknown cases {unknown}; valid: {', '.join(CASES)}")
    threads = None if args.blas_threads == 0 else args.blas_threads
    report: dict[str, Any] = {"environment": timing.environment(anndata=version("anndata"), scanpy=version("scanpy"),
                                                                 scikit_learn=version("scikit-learn")),
                              "blas_threads": args.blas_threads, "rows": []}  # fmt: skip
    for cells in (int(value) for value in args.cells.split(",")):
        for case in cases:
            row = run_case(case, cells, args.genes, threads)
            report["rows"].append(row)
            print(json.dumps(row), flush=True)
    report["environment"]["loadavg_end"] = list(os.getloadavg())
    print(table(report["rows"]))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != HERE]
    sys.exit(main())
