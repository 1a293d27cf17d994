"""Read time, import time and peak memory of CSV engines, side by side (issue 12, item 3; the one-engine step).

Each reader runs in a fresh interpreter (one BLAS/OpenMP thread), which times its imports, then its reads
of one file, and reports its peak resident memory and a hash of the matrix it returned:

- **spcakit**: ``spcakit.inputs.csv_files.load_csv`` - the layout sniffed, every value checked finite;
- **spcakit before**: the same from an earlier version of the module (``--old FILE``, e.g. the output of
  ``git show REV:spcakit/inputs/csv_files.py``), as it runs by default (the two-engine reader that this one
  replaced imported pandas, when installed, on its first read of a big file: that import counts in its read time);
- **numpy**: ``np.loadtxt(path, delimiter=",", skiprows=1)``;
- **pandas**: ``pandas.read_csv(path, engine="c", na_filter=False).to_numpy(dtype=float)``;
- **pyarrow**: ``pyarrow.csv.read_csv`` with one thread, its columns stacked into a matrix (skipped when
  pyarrow is not installed; it is no dependency of spcakit).

Files (standard Gaussian values with 8 significant digits, a header ``v1,v2,...``): 200 000 x 50,
20 000 x 500 and 500 x 20 000 (about 110 MB each), and 13 x 13. Each time is the best of ``--rounds``
fresh processes (default 3), run in turn so that a busy spell of a shared machine slows all readers
alike; a small file is read 20 times in each. Every reader must return the same numbers (bit for bit).

Usage::

    git show 6c72023:spcakit/inputs/csv_files.py > /tmp/csv_old.py   # the two-engine reader
    python benchmarks/csv_read.py --old /tmp/csv_old.py    # about 4 minutes on 2 cores
    python benchmarks/csv_read.py --quick                  # files a tenth the size
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SHAPES = [(200_000, 50), (20_000, 500), (500, 20_000), (13, 13)]
QUICK = [(20_000, 50), (2_000, 500), (50, 20_000), (13, 13)]
READERS = ("spcakit", "spcakit before", "numpy", "pandas", "pyarrow")


def write_table(path: Path, n: int, p: int) -> None:
    import numpy as np

    x = np.random.default_rng(0).standard_normal((n, p))
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write(",".join(f"v{j + 1}" for j in range(p)) + "\n")
        np.savetxt(fh, x, fmt="%.8g", delimiter=",")


def peak_mb() -> float:
    """This process's peak resident memory: Linux's VmHWM, which (unlike ``ru_maxrss``) starts afresh at exec."""
    try:
        status = Path("/proc/self/status").read_text()
        return int(status.split("VmHWM:")[1].split()[0]) / 1024
    except (OSError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kilobytes on Linux, bytes on macOS


def child(reader: str, path: Path, repeats: int, old: Path | None) -> dict[str, Any]:
    """Import ``reader``'s engine, read ``path`` ``repeats`` times; the times, the memory and the matrix's hash."""
    start = time.perf_counter()
    if reader.startswith("spcakit"):
        import spcakit.inputs  # noqa: F401 - the package either version of the module lives in

        if reader == "spcakit before":
            import importlib.util

            spec = importlib.util.spec_from_file_location("csv_before", old)  # type: ignore[arg-type]
            module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
            spec.loader.exec_module(module)  # type: ignore[union-attr]
        else:
            from spcakit.inputs import csv_files as module

        def read() -> Any:
            return module.load_csv(path)[0]
    elif reader == "numpy":
        import numpy as np

        def read() -> Any:
            return np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    elif reader == "pandas":
        import pandas

        def read() -> Any:
            return pandas.read_csv(path, engine="c", na_filter=False).to_numpy(dtype=float)
    else:
        import numpy as np
        from pyarrow import csv as arrow_csv

        def read() -> Any:
            table = arrow_csv.read_csv(path, read_options=arrow_csv.ReadOptions(use_threads=False))
            return np.column_stack([column.to_numpy() for column in table.columns]).astype(float)

    import_s = time.perf_counter() - start
    base = peak_mb()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        matrix = read()
        best = min(best, time.perf_counter() - start)
    digest = hashlib.sha256(matrix.astype("<f8", order="C").tobytes()).hexdigest()[:16]
    return {"import_s": import_s, "read_s": best, "peak_mb": peak_mb(), "read_mb": peak_mb() - base, "hash": digest}


def available(reader: str, old: Path | None) -> bool:
    import importlib.util

    if reader == "spcakit before":
        return old is not None
    return reader.startswith("spcakit") or importlib.util.find_spec(reader) is not None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="files a tenth the size")
    parser.add_argument("--rounds", type=int, default=3, help="fresh processes per reader and file (best kept)")
    parser.add_argument("--old", type=Path, default=None, help="an earlier csv_files.py to time beside this one")
    parser.add_argument("--keep", type=Path, default=None, help="write the files into this folder and keep them")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/csv_read.json"), help="JSON output path")
    parser.add_argument("--child", nargs=3, metavar=("READER", "FILE", "REPEATS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        reader, path, repeats = args.child
        print(json.dumps(child(reader, Path(path), int(repeats), args.old and args.old.resolve())))
        return 0

    import timing

    readers = [name for name in READERS if available(name, args.old)]
    script = Path(__file__).resolve()
    old = ["--old", str(args.old.resolve())] if args.old else []
    report: dict[str, Any] = {"environment": timing.environment(**versions()), "rounds": args.rounds, "files": {}}
    with tempfile.TemporaryDirectory() as scratch:
        folder = (args.keep or Path(scratch)).resolve()
        folder.mkdir(parents=True, exist_ok=True)
        for n, p in QUICK if args.quick else SHAPES:
            path = folder / f"{n}x{p}.csv"
            if not path.exists():
                write_table(path, n, p)
            results: dict[str, dict[str, Any]] = {}
            for _ in range(args.rounds):
                for reader in readers:
                    got = timing.run_child(script, ["--child", reader, str(path), "20" if n * p < 10**5 else "1", *old], 1)
                    kept = results.setdefault(reader, got)
                    for key in ("import_s", "read_s", "peak_mb", "read_mb"):
                        kept[key] = min(kept[key], got[key])
            report["files"][f"{n} x {p}"] = {"megabytes": path.stat().st_size / 1e6, **results}
            print(f"{n} x {p} done", file=sys.stderr)
    report["environment"]["loadavg_end"] = list(__import__("os").getloadavg())
    print(markdown(report))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


def versions() -> dict[str, str]:
    import importlib.metadata

    found = {}
    for name in ("pandas", "pyarrow"):
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def markdown(report: dict[str, Any]) -> str:
    out = ["| file | reader | import (s) | read (s) | peak memory (MB) | of which reading (MB) | same numbers |",
           "|---|---|---|---|---|---|---|"]  # fmt: skip
    for name, row in report["files"].items():
        reference = row["spcakit"]["hash"]
        for reader in READERS:
            if reader in row:
                r = row[reader]
                out.append(f"| {name} ({row['megabytes']:.1f} MB) | {reader} | {r['import_s']:.3f} | {r['read_s']:.3g} | "
                           f"{r['peak_mb']:.0f} | {r['read_mb']:.0f} | {'yes' if r['hash'] == reference else 'NO'} |")  # fmt: skip
    env = report["environment"]
    out += ["", (f"{env['nproc']} CPUs ({env['processor']}), Python {env['python']}, NumPy {env['numpy']}, pandas "
            f"{env['pandas']}, pyarrow {env['pyarrow']}; one thread; best of {report['rounds']} fresh processes; load "
            f"average {env['loadavg_start'][0]:.1f} at the start, {env['loadavg_end'][0]:.1f} at the end.")]  # fmt: skip
    return "\n".join(out)


if __name__ == "__main__":
    raise SystemExit(main())
