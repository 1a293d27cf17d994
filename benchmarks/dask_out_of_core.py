"""Data beyond memory (issue 15, item 5): spcakit on a Zarr store larger than the memory it may use.

Data: a Zarr array of n = 20 000 000 rows and p = 100 columns of float32 (8 GB on disk, uncompressed,
chunks of 100 000 whole rows), generated here a chunk at a time in a temporary folder and deleted
after. Each row is ``x = f1 * a1 + f2 * a2 + noise * spread + mean``: two planted sparse directions
(``a1`` on columns 0-9, ``a2`` on columns 10-19, factor standard deviations 3 and 2), Gaussian noise
with column spreads from 1.5 down to 0.5, and column means 1 + 0.01 j (seed 0).

Cases, each in a child process of its own (``python benchmarks/dask_out_of_core.py --child CASE``)
reporting its wall time and its peak resident set size (``resource.getrusage(...).ru_maxrss``:
interpreter, libraries and every buffer included):

* ``read``: the time to read the store once, as dask reads it for the fit - every chunk read and
  reduced (``dask.array.from_zarr(store).sum(axis=0).compute()``), nothing else;
* ``fit``: ``spcakit.fit(dask.array.from_zarr(store), "spcart", r=2, k=10, metrics=["cpev"])``: the
  one pass over the store that forms the column statistics and the 100 x 100 covariance
  (``spcakit.inputs.dask_arrays``), then SPCArt in memory. The time is split into the pass and the rest.

Both run on dask's local threaded scheduler (one thread per core) with BLAS limited to one thread
(``OPENBLAS_NUM_THREADS=1`` and kin in the child's environment: the dask threads are the
parallelism). The limit is on memory the process uses, not on the machine: the peak RSS must stay
below 1.5 GiB (``--limit-gib``) while the store is about 8 GB (7.45 GiB) - 5 times the limit, 14.9 GiB
as the float64 the pass computes in. The store is read through the operating system's page cache:
right after it is written, much of it is cached (the machine's memory allows it); the ``read`` case
sees the same state, so the ratio ``fit / read`` compares like with like. ``read`` runs before and
after ``fit``; the report gives both.

Usage::

    python benchmarks/dask_out_of_core.py                      # the full 8 GB run (~5 min on 2 cores)
    python benchmarks/dask_out_of_core.py --n 2000000          # a reduced run (0.8 GB)
    python benchmarks/dask_out_of_core.py --out benchmarks/results/dask.json

``--check`` also fits the same rows in memory with NumPy (only when they fit: ``n * p * 8`` bytes at
most 2 GiB) and reports the largest difference between the loadings.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import timing

# this folder holds sparse.py, which would shadow the `sparse` package that dask.array looks for
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != Path(__file__).resolve().parent]

N, P = 20_000_000, 100
CHUNK_ROWS = 100_000
R, K = 2, 10
SEED = 0
LIMIT_GIB = 1.5
BLAS_ENV = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def planted_directions(p: int) -> tuple[np.ndarray, np.ndarray]:
    """The two sparse unit directions planted in the data (columns 0-9 and 10-19)."""
    first, second = np.zeros(p), np.zeros(p)
    first[:10], second[10:20] = 1 / np.sqrt(10), 1 / np.sqrt(10)
    return first, second


def generate(path: Path, n: int, p: int, chunk_rows: int) -> dict[str, Any]:
    """Write the store a chunk of rows at a time (each chunk from its own seed: any order gives the same data)."""
    import zarr

    store = zarr.create_array(store=str(path), shape=(n, p), chunks=(chunk_rows, p), dtype="float32",
                              compressors=None, overwrite=True)  # fmt: skip
    first, second = planted_directions(p)
    spread, mean = np.linspace(1.5, 0.5, p), 1.0 + 0.01 * np.arange(p)
    start = time.perf_counter()
    for index, row in enumerate(range(0, n, chunk_rows)):
        rows = min(chunk_rows, n - row)
        rng = np.random.default_rng([SEED, index])
        factors = rng.standard_normal((rows, 2)) * (3.0, 2.0)
        block = rng.standard_normal((rows, p), dtype=np.float32) * spread.astype(np.float32)
        block += (factors @ np.vstack([first, second]) + mean).astype(np.float32)
        store[row : row + rows] = block
    size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    return {"seconds": time.perf_counter() - start, "store_bytes": size}


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB


def child(case: str, path: str, check: bool) -> dict[str, Any]:
    import dask
    import dask.array as da

    import spcakit
    from spcakit.inputs import as_problem

    x = da.from_zarr(path)
    out: dict[str, Any] = {}
    with dask.config.set(scheduler="threads", num_workers=os.cpu_count()):
        start = time.perf_counter()
        if case == "read":
            x.sum(axis=0, dtype=np.float64).compute()
        else:
            problem = as_problem(x)  # the one pass over the store
            passed = time.perf_counter()
            result = spcakit.fit(problem, "spcart", r=R, k=K, metrics=["cpev"])
            out["pass_seconds"] = passed - start
            out["in_memory_seconds"] = time.perf_counter() - passed
            out["cpev"] = float(result.metrics["cpev"])
            first, second = planted_directions(x.shape[1])
            support = [sorted(np.flatnonzero(result.loadings[:, j]).tolist()) for j in range(R)]
            out["support_recovered"] = support == [list(range(10)), list(range(10, 20))]
            out["loadings"] = result.loadings.tolist()
        out["seconds"] = time.perf_counter() - start
    out["peak_rss_bytes"] = peak_rss_bytes()
    if check and case == "fit":
        n, p = x.shape
        if n * p * 8 <= 2 * 1024**3:
            dense = np.asarray(x.compute(), dtype=np.float64)
            expected = spcakit.fit(dense, "spcart", r=R, k=K, metrics=["cpev"]).loadings
            out["numpy_max_difference"] = float(np.abs(np.asarray(out["loadings"]) - expected).max())
        else:
            out["numpy_max_difference"] = None
    return out


def run_child(case: str, path: Path, check: bool) -> dict[str, Any]:
    env = dict(os.environ, **{name: "1" for name in BLAS_ENV})
    command = [sys.executable, __file__, "--child", case, "--store", str(path)] + (["--check"] if check else [])
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the {case} child failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def render(report: dict[str, Any]) -> str:
    gib = 1024**3
    cases = report["cases"]
    lines = [
        f"n = {report['n']:,}, p = {report['p']}, float32, chunks of {report['chunk_rows']:,} rows: "
        f"{report['store_bytes'] / gib:.2f} GiB on disk (written in {report['generate_seconds']:.0f} s)",
        f"{'case':<8} {'seconds':>8} {'peak RSS':>10}",
    ]
    for name in ("read", "fit", "read again"):
        row = cases[name]
        lines.append(f"{name:<10} {row['seconds']:>6.1f} {row['peak_rss_bytes'] / 1024**2:>7.0f} MiB")
    fit = cases["fit"]
    lines.append(f"fit: the pass {fit['pass_seconds']:.1f} s, then in memory {fit['in_memory_seconds']:.3f} s; "
                 f"fit / read = {report['fit_over_read']:.2f}; CPEV {fit['cpev']:.4f}; planted support recovered: "
                 f"{fit['support_recovered']}")  # fmt: skip
    lines.append(f"peak RSS {fit['peak_rss_bytes'] / gib:.2f} GiB against the limit {report['limit_gib']} GiB: "
                 f"{'met' if report['within_limit'] else 'MISSED'}")  # fmt: skip
    if "numpy_max_difference" in fit:
        lines.append(f"largest difference from the NumPy fit: {fit['numpy_max_difference']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=N, help=f"rows (default {N:,})")
    parser.add_argument("--p", type=int, default=P, help=f"columns (default {P})")
    parser.add_argument("--chunk-rows", type=int, default=CHUNK_ROWS, help=f"rows per Zarr chunk (default {CHUNK_ROWS:,})")
    parser.add_argument("--dir", type=Path, default=None, help="folder for the temporary store (default: the system's)")
    parser.add_argument("--limit-gib", type=float, default=LIMIT_GIB, help=f"peak RSS limit of the fit (default {LIMIT_GIB})")
    parser.add_argument("--check", action="store_true", help="compare with the NumPy fit when the data fit in 2 GiB")
    parser.add_argument("--out", type=Path, default=None, help="write the JSON report here")
    parser.add_argument("--child", choices=("read", "fit"), help=argparse.SUPPRESS)
    parser.add_argument("--store", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.store, args.check)))
        return 0
    import dask
    import distributed
    import zarr

    folder = Path(tempfile.mkdtemp(prefix="spcakit-dask-", dir=args.dir))
    try:
        path = folder / "x.zarr"
        made = generate(path, args.n, args.p, args.chunk_rows)
        cases = {"read": run_child("read", path, False), "fit": run_child("fit", path, args.check),
                 "read again": run_child("read", path, False)}  # fmt: skip
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    cases["fit"].pop("loadings")
    read = min(cases["read"]["seconds"], cases["read again"]["seconds"])
    report = {
        "benchmark": "dask_out_of_core",
        "n": args.n, "p": args.p, "dtype": "float32", "chunk_rows": args.chunk_rows, "method": "spcart", "r": R, "k": K,
        "store_bytes": made["store_bytes"], "generate_seconds": made["seconds"],
        "cases": cases,
        "fit_over_read": cases["fit"]["seconds"] / read,
        "limit_gib": args.limit_gib,
        "within_limit": cases["fit"]["peak_rss_bytes"] < args.limit_gib * 1024**3,
        "memory_total_bytes": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),
        "environment": timing.environment(dask=dask.__version__, distributed=distributed.__version__,
                                          zarr=zarr.__version__),  # fmt: skip
    }  # fmt: skip
    print(render(report))
    if args.out is not None:
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0 if report["within_limit"] else 1


if __name__ == "__main__":
    sys.exit(main())
