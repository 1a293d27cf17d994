"""Timing helpers shared by the benchmark scripts (no third-party imports)."""

from __future__ import annotations

import json
import math
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import scipy

import spcakit

MAX_REPEATS = 5


def best_of(fn: Callable[[], Any], budget_s: float, max_repeats: int = MAX_REPEATS) -> tuple[Any, float, int]:
    """Run ``fn`` at least once, again while the runs so far took < ``budget_s``; keep the fastest."""
    best_t, best_out, spent, repeats = math.inf, None, 0.0, 0
    while repeats < max_repeats and (repeats == 0 or spent < budget_s):
        start = time.perf_counter()
        out = fn()
        elapsed = time.perf_counter() - start
        spent += elapsed
        repeats += 1
        if elapsed < best_t:
            best_t, best_out = elapsed, out
    return best_out, best_t, repeats


def compile_sources() -> list[str]:
    """Write the bytecode (``__pycache__``) of spcakit and of the built-in plugins next to their sources, as
    ``pip install`` does for an installed package, and return the folders compiled.

    Where ``PYTHONDONTWRITEBYTECODE`` is set, or the sources changed since they were last imported, every process
    that imports spcakit would compile them again (about 0.2 s on this machine), a cost that no installed package,
    scikit-learn included, pays in the references' processes: benchmarks that time fresh processes (a first fit,
    ``spcakit run``, the import) call this first. The interpreter reads existing bytecode whatever that variable
    says; it only stops it writing any.
    """
    import compileall

    root = Path(spcakit.__file__).resolve().parent
    folders = [folder for folder in (root, root.parent / "plugins") if folder.is_dir()]
    for folder in folders:
        compileall.compile_dir(folder, quiet=1)
    return [str(folder) for folder in folders]


def environment(**versions: str) -> dict[str, Any]:
    """The machine, the library versions (plus ``versions``), the load, and the BLAS in use."""
    env: dict[str, Any] = {
        "date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "nproc": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        **versions,
        "spcakit": spcakit.__version__,
        "loadavg_start": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }
    try:
        from threadpoolctl import threadpool_info

        # what each library says, as JSON values: SciPy's Matrix Market reader registers a controller whose version
        # is a function (once a .mtx file was read in this process)
        env["blas"] = [
            {k: _json_scalar(info.get(k)) for k in ("internal_api", "version", "num_threads", "architecture")}
            for info in threadpool_info()
        ]
    except Exception:  # pragma: no cover - threadpoolctl is optional
        env["blas"] = None
    return env


def _json_scalar(value: Any) -> Any:
    """``value`` when JSON writes it as it is (a string, a number, a boolean or None), else its ``str``."""
    return value if value is None or isinstance(value, str | int | float | bool) else str(value)


def limit_blas_threads(threads: int | None) -> Any:
    """A context limiting BLAS/OpenMP threads (``threadpoolctl``), or a no-op when it is absent."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl is optional
        import contextlib

        return contextlib.nullcontext()
    return threadpool_limits(limits=threads)


def run_experiments(
    experiments: dict[str, Callable[[], Any]],
    *,
    quick: bool,
    config: dict[str, Any],
    blas_threads: int | None,
    render: Callable[[dict[str, Any]], str],
    out: Path,
    **versions: str,
) -> int:
    """Run ``experiments`` in order under a BLAS thread limit, print ``render(report)``, write the JSON."""
    report: dict[str, Any] = {"quick": quick, "config": config, "blas_threads": blas_threads or None}
    with limit_blas_threads(blas_threads or None):
        report["environment"] = environment(**versions)
        start = time.perf_counter()
        for name, experiment in experiments.items():
            report[name] = experiment()
        report["total_seconds"] = time.perf_counter() - start
    report["environment"]["loadavg_end"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    print(render(report))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, default=float) + "\n")
    print(f"\nwrote {out}", file=sys.stderr)
    return 0


def summary_line(report: dict[str, Any]) -> str:
    """One line naming the machine, the versions, the BLAS thread limit and the total time of ``report``."""
    env = report["environment"]
    extra = f"scikit-learn {env['sklearn']}, " if "sklearn" in env else ""
    threads = f"limited to {report['blas_threads']}" if report["blas_threads"] else "not limited"
    return (
        f"{env['nproc']} CPUs, Python {env['python']}, NumPy {env['numpy']}, SciPy {env['scipy']}, {extra}"
        f"spcakit {env['spcakit']}; BLAS threads {threads}; total {report['total_seconds']:.0f} s"
        f"{' (quick mode)' if report['quick'] else ''}."
    )


#: The environment variables that set the BLAS and OpenMP thread counts when a library loads.
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def run_child(script: str | Path, arguments: list[str], blas_threads: int | None) -> dict[str, Any]:
    """Run ``script`` with ``arguments`` in a fresh interpreter and return the JSON object its last line prints.

    ``blas_threads`` is set in the child's environment as well (``threadpoolctl`` in the child misses the BLAS
    that SciPy loads on first use); a failing child raises :class:`RuntimeError` with its standard error.
    """
    env = dict(os.environ)
    if blas_threads is not None:
        env.update({name: str(blas_threads) for name in BLAS_THREAD_VARIABLES})
    done = subprocess.run([sys.executable, str(script), *arguments], capture_output=True, text=True,
                          cwd=Path(script).parent, env=env, check=False)  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"{Path(script).name} {' '.join(arguments)} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]
