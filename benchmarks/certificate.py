"""The default certificate on real data: the first loading's reported gap (``bound="fast"``, the default) against its
true gap (0 where ``bound="certify"`` proves the loading optimal), and what the bound costs beside the fit.

Each case runs in a child process (its peak memory measured there): ``spcakit.fit(data, r=1, k=k)`` (the default
method ``auto``), whose ``seconds`` is the fit alone, and the wall time of the whole call, the metrics with their
bound included. With ``--certify`` the same fit is run with ``bound="certify"`` under a time limit per case (the
child is stopped there) to give the true gap.

    python benchmarks/certificate.py [--cases pitprops,wine] [--certify SECONDS]
    python benchmarks/certificate.py --cases colon_standardised,lymphoma_standardised --certify 1800 --out gene_scale

Cases absent from ``../shared/data`` (or without scikit-learn) are skipped with a message. One BLAS thread.
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

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
RESULTS = Path(__file__).resolve().parent / "results" / "certificate.json"


def _sklearn(name: str) -> np.ndarray | None:
    try:
        import sklearn.datasets as datasets
    except ImportError:
        return None
    return np.asarray(getattr(datasets, f"load_{name}")().data, dtype=float)


def _shared(name: str) -> np.ndarray | None:
    path = SHARED / name
    if not path.exists():
        return None
    with np.load(path, allow_pickle=False) as archive:
        return np.asarray(archive["X"], dtype=float)


def load(case: str) -> tuple[Any, dict[str, Any]] | None:
    """The data and the fit's keywords of a case, or ``None`` when absent."""
    import spcakit

    if case == "pitprops":
        return spcakit.datasets.pitprops().matrix, {"covariance": True, "k": 4}
    if case in ("wine", "breast_cancer"):
        x = _sklearn(case)
        return None if x is None else (x, {"standardize": True, "k": 4 if case == "wine" else 5})
    if case == "digits":
        x = _sklearn("digits")
        return None if x is None else (x[:, np.ptp(x, axis=0) > 0], {"k": 10})
    if case in ("colon_log2", "colon_standardised"):
        x = _shared("colon_alon_62x2000.npz")
        if x is None:
            return None
        return (np.log2(x), {"k": 10}) if case == "colon_log2" else (x, {"standardize": True, "k": 10})
    if case == "lymphoma_standardised":
        x = _shared("lymphoma_alizadeh_62x4026_std.npz")
        return None if x is None else (x, {"standardize": True, "k": 10})
    if case == "golub_standardised":
        x = _shared("golub_leukemia_72x7129_raw.npz")
        return None if x is None else (x, {"standardize": True, "k": 10})
    if case == "lymphoma_cov_500":
        path = SHARED / "lymphoma_cov_500.npz"
        if not path.exists():
            return None
        with np.load(path, allow_pickle=False) as archive:
            key = "C" if "C" in archive.files else archive.files[0]
            return np.asarray(archive[key], dtype=float), {"covariance": True, "k": 10}
    raise SystemExit(f"unknown case {case!r}")


def _child(case: str, bound: str, queue: Any) -> None:
    import spcakit

    loaded = load(case)
    if loaded is None:
        queue.put(None)
        return
    data, options = loaded
    spcakit.fit(np.eye(3), "pca", r=1, covariance=True)  # the plugins load on the first fit: not timed
    started = time.perf_counter()
    result = spcakit.fit(data, r=1, bound=bound, **options)
    wall = time.perf_counter() - started
    queue.put({"fit_s": result.seconds, "wall_s": wall, "gap": result.metrics["gap"][0],
               "bound": result.metrics["bound"][0], "variance": result.metrics["additional_variance"][0],
               "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})


def run(case: str, bound: str, limit: float | None) -> dict[str, Any] | None | str:
    queue: Any = multiprocessing.Queue()
    child = multiprocessing.Process(target=_child, args=(case, bound, queue))
    child.start()
    child.join(limit)
    if child.is_alive():
        child.terminate()
        child.join()
        return f"not certified within {limit:g} s"
    return queue.get() if not queue.empty() else "failed"


CASES = ("pitprops", "wine", "breast_cancer", "digits", "colon_log2", "lymphoma_cov_500", "colon_standardised")
#: Gene-expression scale, for ``--certify`` (``--cases colon_standardised,lymphoma_standardised``).
GENE_CASES = ("colon_standardised", "lymphoma_standardised", "golub_standardised")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--certify", type=float, default=None, metavar="SECONDS")
    parser.add_argument("--out", default="certificate", help="results/NAME.json (default: certificate)")
    args = parser.parse_args()
    rows = []
    for case in args.cases.split(","):
        fast = run(case, "fast", None)
        if fast is None:
            print(f"{case}: skipped (data absent)", file=sys.stderr)
            continue
        row = {"case": case, "fast": fast}
        if args.certify is not None:
            row["certify"] = run(case, "certify", args.certify)
        rows.append(row)
        certified = row.get("certify")
        true = (f"true gap {certified['gap']:.2e} ({certified['wall_s']:.3g} s)" if isinstance(certified, dict)
                else (certified or ""))
        print(f"{case:20s} fit {fast['fit_s']:.3g} s, wall {fast['wall_s']:.3g} s "
              f"(bound +{100 * (fast['wall_s'] / max(fast['fit_s'], 1e-9) - 1):.0f} %), gap {100 * fast['gap']:.3g} %, "
              f"peak {fast['peak_mb']:.0f} MB; {true}")
    out = RESULTS.with_name(f"{args.out}.json")
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
