"""How often ``spcakit.cross_validate`` finds a planted sparse support (issue 14, item 3).

The numbers quoted in ``spcakit.workflows.cv``'s description ("Which rule"). Data: spiked models with ``p = 30``
variables and unit Gaussian noise; factors of standard deviation ``sd`` on disjoint blocks of variables
(equal weights, random signs; the columns shuffled). Settings: ``(n, sd)`` in (300, 3), (200, 3),
(400, 2.5), (300, 2), each with one support of 6 or of 10 variables (``r = 1``) and with two supports of
6 (``r = 2``, the first spike ``1.3 sd``). For each, ``--seeds`` data sets (data seed ``100 + s``, fold
seed ``s``), cross-validated by SPCArt and TPower over ``k = 1..30`` with 5 folds. A run is a hit when
the chosen ``k`` is within one of the support size; both rules are read from the same run (``least`` is
the ``min`` rule's choice).

With ``--sparse`` it runs the sparse case instead (issue 28, item 5): a planted support of ``SPARSE_SIZE``
variables (one factor of standard deviation ``SPARSE_SD`` plus unit noise, ``n = 20000``, ``p = 500``) made
sparse by zeroing every entry of magnitude below 1.96 (about 5 % of the entries stay), cross-validated by
SPCArt over ``k = 1..16`` with 5 folds and the 1se rule, as a CSR matrix and as its dense copy: the time,
the peak of the allocations traced during the call (:mod:`tracemalloc`: NumPy's arrays and Python's
objects, not the input itself), the chosen ``k`` and the largest relative difference of the fold errors;
then the CSR case alone for ``--sparse-seeds`` more data sets (the chosen ``k`` against the planted size).

Usage::

    python benchmarks/cv_planted_support.py                  # 20 seeds: 480 runs, about 1.5 minutes on 2 cores
    python benchmarks/cv_planted_support.py --seeds 5
    python benchmarks/cv_planted_support.py --out benchmarks/results/cv_planted_support.json
    python benchmarks/cv_planted_support.py --sparse --out benchmarks/results/cv_sparse.json  # about 2 minutes
"""

from __future__ import annotations

import argparse
import json
import os
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np

import spcakit
from spcakit.inputs.datasets import planted_support

P = 30
SETTINGS = ((300, 3.0), (200, 3.0), (400, 2.5), (300, 2.0))
SHAPES = (("one support of 6", (6,), (1.0,)), ("one support of 10", (10,), (1.0,)),
          ("two supports of 6", (6, 6), (1.3, 1.0)))  # fmt: skip
METHODS = ("spcart", "tpower")


def spiked(n: int, p: int, sizes: tuple[int, ...], sds: list[float], seed: int) -> np.ndarray:
    """Factors of standard deviation ``sds`` on disjoint blocks of ``sizes`` variables, plus unit noise; columns shuffled."""
    return planted_support(n, p, sizes, sds, seed).matrix


SPARSE_N, SPARSE_P, SPARSE_SIZE, SPARSE_SD, SPARSE_CUT, SPARSE_GRID = 20_000, 500, 10, 3.0, 1.96, "1:16"


def sparse_planted(seed: int) -> Any:
    """The sparse case's data: a planted support with every entry of magnitude below ``SPARSE_CUT`` zeroed, as CSR."""
    import scipy.sparse as sp

    x = planted_support(SPARSE_N, SPARSE_P, [SPARSE_SIZE], [SPARSE_SD], seed).matrix
    x[np.abs(x) < SPARSE_CUT] = 0.0
    return sp.csr_array(x)


def timed_cv(data: Any, seed: int) -> tuple[Any, float, int]:
    """The cross-validation of ``data``, its seconds and the peak of the allocations traced during it."""
    tracemalloc.start()
    try:
        start = time.perf_counter()
        cv = spcakit.cross_validate(data, "spcart", 1, k=SPARSE_GRID, rule="1se", seed=seed, metrics=[])
        seconds = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return cv, seconds, peak


def sparse_case(seeds: int) -> dict[str, Any]:
    """CV on a CSR matrix against its dense copy (data seed 0), then on CSR alone for ``seeds`` more data sets."""
    csr = sparse_planted(0)
    spcakit.cross_validate(csr[:200, :20], "spcart", 1, k="1:2", folds=2)  # imports and plugins, before timing
    runs = {}
    for name, data in (("csr", csr), ("dense", csr.toarray())):
        cv, seconds, peak = timed_cv(data, 0)
        runs[name] = {"seconds": seconds, "peak_traced_MiB": peak / 2**20, "chosen": int(cv.chosen),
                      "least": int(cv.least), "mean_error": cv.mean_error.tolist(), "fold_errors": cv.fold_errors}  # fmt: skip
        print(f"{name:5} {seconds:6.1f} s  peak traced {peak / 2**20:6.0f} MiB  chosen k = {cv.chosen} "
              f"(planted {SPARSE_SIZE}, least at {cv.least})", flush=True)  # fmt: skip
    difference = float(np.max(np.abs(runs["csr"]["fold_errors"] - runs["dense"]["fold_errors"]) / runs["dense"]["fold_errors"]))
    for run in runs.values():
        run.pop("fold_errors")
    print(f"fold errors: largest relative difference {difference:.1e}")
    chosen = []
    for seed in range(1, seeds + 1):
        cv, seconds, _ = timed_cv(sparse_planted(seed), seed)
        chosen.append(int(cv.chosen))
        print(f"csr seed {seed}: chosen k = {cv.chosen} ({seconds:.1f} s)", flush=True)
    return {"n": SPARSE_N, "p": SPARSE_P, "planted": SPARSE_SIZE, "sd": SPARSE_SD, "cut": SPARSE_CUT,
            "density": csr.nnz / (SPARSE_N * SPARSE_P), "grid": SPARSE_GRID, "folds": 5, "rule": "1se",
            "method": "spcart", "runs": runs, "fold_error_max_relative_difference": difference,
            "csr_seeds": list(range(1, seeds + 1)), "csr_chosen": chosen,
            "hits": sum(abs(k - SPARSE_SIZE) <= 1 for k in [runs["csr"]["chosen"], *chosen]),
            "load_average": os.getloadavg(), "cpus": os.cpu_count(),
            "spcakit_version": spcakit.__version__}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20, help="data sets per setting (default 20)")
    parser.add_argument("--sparse", action="store_true", help="the sparse case instead (CSR against its dense copy)")
    parser.add_argument("--sparse-seeds", type=int, default=3, help="more CSR data sets in the sparse case (default 3)")
    parser.add_argument("--out", type=Path, help="also write the results as JSON to this file")
    args = parser.parse_args()
    if args.sparse:
        document = sparse_case(args.sparse_seeds)
        if args.out is not None:
            args.out.write_text(json.dumps(document, indent=1) + "\n")
        return
    rows = []
    for n, sd in SETTINGS:
        for shape, sizes, factors in SHAPES:
            sds = [round(sd * f, 6) for f in factors]
            for method in METHODS:
                start = time.perf_counter()
                offsets: dict[str, list[int]] = {"1se": [], "min": []}
                for seed in range(args.seeds):
                    data = spiked(n, P, sizes, sds, 100 + seed)
                    cv = spcakit.cross_validate(data, method, len(sizes), k="1:p", rule="1se", seed=seed)
                    offsets["1se"].append(int(cv.chosen) - sizes[0])
                    offsets["min"].append(int(cv.least) - sizes[0])
                seconds = (time.perf_counter() - start) / args.seeds
                row = {"n": n, "sd": sds, "shape": shape, "method": method, "seconds_per_run": seconds,
                       **{f"hits_{rule}": sum(abs(o) <= 1 for o in v) for rule, v in offsets.items()},
                       **{f"offsets_{rule}": v for rule, v in offsets.items()}}  # fmt: skip
                rows.append(row)
                print(f"n={n} sd={sds} {shape:18} {method:7} 1se {row['hits_1se']}/{args.seeds} "
                      f"(k - s in [{min(offsets['1se'])}, {max(offsets['1se'])}])  min {row['hits_min']}/{args.seeds} "
                      f"(k - s in [{min(offsets['min'])}, {max(offsets['min'])}])  {seconds:.2f} s/run", flush=True)  # fmt: skip
    runs = len(rows) * args.seeds
    totals = {rule: sum(row[f"hits_{rule}"] for row in rows) for rule in ("1se", "min")}
    print(f"hits: 1se {totals['1se']}/{runs}, min {totals['min']}/{runs}")
    if args.out is not None:
        document = {"seeds": args.seeds, "p": P, "folds": 5, "grid": "1:p", "totals": totals, "runs": runs,
                    "spcakit_version": spcakit.__version__, "settings": rows}  # fmt: skip
        args.out.write_text(json.dumps(document, indent=1) + "\n")


if __name__ == "__main__":
    main()
