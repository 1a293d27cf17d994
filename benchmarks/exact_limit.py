"""``exact`` keeps its word: the wall time of ``spcakit.fit(data, "exact", r, k, time_limit=L)`` against L (target:
at most L + 5 % + 1 s, the whole call), and its variance against the default method's (target: never less).

Each case and r runs in a child process (its peak memory measured there), the default first, one BLAS thread. The
cases are those of ``benchmarks/certificate.py`` (its loader); absent data are skipped with a message.

    python benchmarks/exact_limit.py [--cases colon_standardised,colon_log2] [--limit 10] [--r 1,3]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from certificate import CASES, load  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "exact_limit.json"


def _child(case: str, r: int, limit: float, queue: Any) -> None:
    import warnings

    import spcakit

    warnings.simplefilter("ignore")
    data, options = load(case)  # type: ignore[misc]
    spcakit.fit(np.eye(3), "pca", r=1, covariance=True)  # the plugins load on the first fit: not timed
    started = time.perf_counter()
    default = spcakit.fit(data, r=r, **options)
    default_s = time.perf_counter() - started
    started = time.perf_counter()
    exact = spcakit.fit(data, "exact", r=r, time_limit=limit, **options)
    wall = time.perf_counter() - started
    queue.put({"wall_s": wall, "default_s": default_s, "exact_total": float(np.sum(exact.metrics["additional_variance"])),
               "default_total": float(np.sum(default.metrics["additional_variance"])),
               "exact_first": exact.metrics["additional_variance"][0], "default_first": default.metrics["additional_variance"][0],
               "gap": exact.metrics["gap"], "reason": exact.stopping_reason[:200],
               "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--limit", type=float, default=10.0)
    parser.add_argument("--r", default="1,3")
    args = parser.parse_args()
    rows = []
    for case in args.cases.split(","):
        if load(case) is None:
            print(f"{case}: skipped (data absent)", file=sys.stderr)
            continue
        for r in (int(v) for v in args.r.split(",")):
            queue: Any = multiprocessing.Queue()
            child = multiprocessing.Process(target=_child, args=(case, r, args.limit, queue))
            child.start()
            child.join()
            row = {"case": case, "r": r, "limit_s": args.limit, **queue.get()}
            rows.append(row)
            target = args.limit * 1.05 + 1.0
            print(f"{case:20s} r={r}: wall {row['wall_s']:.2f} s (limit {args.limit:g}, target <= {target:.2f}: "
                  f"{'met' if row['wall_s'] <= target else 'NOT met'}); variance exact {row['exact_total']:.6g} vs default "
                  f"{row['default_total']:.6g} ({'>=' if row['exact_total'] >= row['default_total'] * (1 - 1e-9) else '<'}), "
                  f"first {row['exact_first']:.6g} vs {row['default_first']:.6g}; peak {row['peak_mb']:.0f} MB")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
