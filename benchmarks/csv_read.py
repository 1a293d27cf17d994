"""Benchmark spcakit's CSV reader against ``pandas.read_csv`` (issue 12, item 3).

spcakit reads a CSV file's first lines itself (separator, header, row labels), then hands the rest to
pandas' C parser when pandas is installed and the table has enough lines, or to NumPy's ``loadtxt``
(small or very wide tables, or no pandas: ``spcakit.inputs.csv_files.PANDAS_MIN_ROWS``); only when either finds
something amiss does Python's ``csv`` module read the file again, cell by cell, to say where. This
script times, on the same generated files in one run:

- **pandas**: ``pandas.read_csv(path).to_numpy(dtype=float)``, pandas' defaults (the reference);
- **spcakit**: ``spcakit.inputs.csv_files.load_csv(path)`` with pandas installed (what users of the ``pandas``
  extra get): header and separator sniffed, engine chosen, every value checked finite;
- **spcakit, no pandas**: the same with pandas hidden (the NumPy fallback).

Files (standard Gaussian values written with 8 significant digits, a header line ``v1,v2,...``):

(a) tall: 200 000 x 50 (about 100 MB);
(b) wide: 200 x 20 000 (about 50 MB).

Each time is the best of 2 to 5 rounds (more while the rounds stay under ``--budget`` seconds, default
30); a round runs the three readers once each, in turn, so that a busy spell of a shared machine slows
all of them alike.
The files are written once into a temporary folder (``--keep`` leaves them there); writing them is not
timed. Both readers must return the same numbers (checked bit for bit).

Usage::

    python benchmarks/csv_read.py                 # full run (about 2 minutes on 2 cores)
    python benchmarks/csv_read.py --quick         # 20 000 x 50 and 200 x 2 000
    python benchmarks/csv_read.py --out benchmarks/results/csv_read.json

Needs pandas (``pip install -e ".[pandas]"``).
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import timing
from spcakit.inputs import csv_files

SEED = 0
FULL = {"tall": [200_000, 50], "wide": [200, 20_000]}
QUICK = {"tall": [20_000, 50], "wide": [200, 2_000]}


def write_table(path: Path, n: int, p: int) -> None:
    """A header ``v1,...,vp`` and ``n`` lines of standard Gaussian values with 8 significant digits."""
    x = np.random.default_rng(SEED).standard_normal((n, p))
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write(",".join(f"v{j + 1}" for j in range(p)) + "\n")
        np.savetxt(fh, x, fmt="%.8g", delimiter=",")


def load_without_pandas(path: Path) -> tuple[np.ndarray, tuple[str, ...]]:
    real_pandas = csv_files._pandas
    csv_files._pandas = lambda: None  # hide pandas: the NumPy fallback
    try:
        return csv_files.load_csv(path)
    finally:
        csv_files._pandas = real_pandas


def interleaved_best(readers: dict[str, Callable[[], Any]], budget_s: float) -> tuple[dict[str, Any], dict[str, float], int]:
    """Each reader's output and best time over rounds that run every reader once, in turn (so that a busy
    spell of the machine hits all of them): at least 2 rounds, more while under ``budget_s``, at most 5."""
    outputs: dict[str, Any] = {}
    best = {name: math.inf for name in readers}
    rounds, spent = 0, 0.0
    while rounds < timing.MAX_REPEATS and (rounds < 2 or spent < budget_s):
        for name, read in readers.items():
            start = time.perf_counter()
            outputs[name] = read()
            elapsed = time.perf_counter() - start
            spent += elapsed
            best[name] = min(best[name], elapsed)
        rounds += 1
    return outputs, best, rounds


def experiment(path: Path, shape: list[int], budget_s: float) -> dict[str, Any]:
    import pandas

    outputs, best, rounds = interleaved_best({
        "pandas": lambda: pandas.read_csv(path).to_numpy(dtype=float),
        "spcakit": lambda: csv_files.load_csv(path),
        "spcakit_numpy": lambda: load_without_pandas(path),
    }, budget_s)  # fmt: skip
    reference, (ours, names), (fallback, _) = outputs["pandas"], outputs["spcakit"], outputs["spcakit_numpy"]
    if not (np.array_equal(ours, reference) and np.array_equal(fallback, reference)):
        raise AssertionError(f"{path.name}: the readers disagree")
    assert len(names) == shape[1]
    return {
        "n": shape[0], "p": shape[1], "megabytes": path.stat().st_size / 1e6,
        "pandas_s": best["pandas"], "spcakit_s": best["spcakit"], "spcakit_numpy_s": best["spcakit_numpy"],
        "spcakit_over_pandas": best["spcakit"] / best["pandas"],
        "spcakit_numpy_over_pandas": best["spcakit_numpy"] / best["pandas"],
        "rounds": rounds, "identical": True,
    }  # fmt: skip


def markdown(report: dict[str, Any]) -> str:
    out = [
        "| file | size | `pandas.read_csv` (s) | spcakit (s) | × pandas | spcakit, no pandas (s) | × pandas |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in ("tall", "wide"):
        row = report[name]
        out.append(
            f"| {name}: {row['n']:,} x {row['p']:,} | {row['megabytes']:.0f} MB | {row['pandas_s']:.2f} | "
            f"{row['spcakit_s']:.2f} | {row['spcakit_over_pandas']:.2f} | {row['spcakit_numpy_s']:.2f} | "
            f"{row['spcakit_numpy_over_pandas']:.2f} |"
        )
    env = report["environment"]
    out += ["", f"{env['nproc']} CPUs, Python {env['python']}, NumPy {env['numpy']}, pandas {env['pandas']}; "
            f"total {report['total_seconds']:.0f} s{' (quick mode)' if report['quick'] else ''}. "
            "Both spcakit readers returned the pandas numbers bit for bit."]  # fmt: skip
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    import pandas

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="20 000 x 50 and 200 x 2 000")
    parser.add_argument("--budget", type=float, default=30.0, help="seconds of rounds per file (default 30)")
    parser.add_argument("--keep", type=Path, default=None, help="write the files into this folder and keep them")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/csv_read.json"), help="JSON output path")
    args = parser.parse_args(argv)
    cfg = QUICK if args.quick else FULL
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        paths = {}
        for name, (n, p) in cfg.items():
            paths[name] = folder / f"{name}_{n}x{p}.csv"
            if not paths[name].exists():
                write_table(paths[name], n, p)
        print(f"(files written in {time.perf_counter() - start:.0f} s)", file=sys.stderr)
        experiments = {name: (lambda name=name: experiment(paths[name], cfg[name], args.budget)) for name in cfg}
        code = timing.run_experiments(experiments, quick=args.quick, config=cfg, blas_threads=None, render=markdown,
                                      out=args.out, pandas=pandas.__version__)  # fmt: skip
    print(f"({time.perf_counter() - start:.0f} s)", file=sys.stderr)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
