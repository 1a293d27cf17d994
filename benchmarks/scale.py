"""The ``scale`` suite (issues 15 and 27): time and peak memory of spcakit on large data, beside a reference in the same run.

Every case runs in a child process of its own (``python benchmarks/scale.py --child CASE``), which
generates its data, runs once, and reports its wall time and its peak resident set size
(``ru_maxrss``: the data, the interpreter and the libraries included, so the ratio to the data's size
is a slight overestimate of what spcakit adds). Cases (sizes at ``--scale 1``):

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

The settings above are *tuned*: CPEV the only metric, the method named. Issue 27 asks what users get,
so ``tall``, ``wide``, ``patches`` and ``sparse`` also run, each in a child of its own, with every
default (:data:`DEFAULT_VARIANTS`):

* ``default-fit``: ``spcakit.fit(X, METHOD, r=R, k=K)`` (every registered metric, the default);
* ``default-estimator``: ``spcakit.SparsePCA(n_components=R, k=K).fit(X)`` (``method="auto"``, the
  estimator's default: a portfolio of methods, see :class:`spcakit.SparsePCA`);
* ``default-cli``: ``spcakit run METHOD -d FILE -r R -k K`` as a command on a ``.npy`` file (``.npz``
  from :func:`scipy.sparse.save_npz` for ``sparse``) written beforehand to a temporary directory, timed
  wall to wall (interpreter start, imports and reading the file included) with its peak RSS from
  :func:`os.wait4`;

and ``wide`` adds default fits of ``tpower`` at k = 100 and of ``spcart`` and ``tpower`` at
k = 15 000 (:data:`WIDE_EXTRA`), reported in passes of :math:`X^\\top (XV)` (the fit's time over the
reference's) beside the fit's own iterations (``result.iterations``), and ``sparse`` a default fit of
``tpower``. On ``patches`` the fits in process are the best of up to 25 (as the tuned figure), the
first (cold) recorded beside it. A table at the end lists every case, variant and thread count: its
seconds, its ratio to the reference (for ``wide`` and ``sparse``: passes of :math:`X^\\top (XV)`; for
``patches`` its reciprocal is the speed-up), its peak RSS over the data's size and its iterations.

Usage::

    python benchmarks/scale.py                      # every case but square, one BLAS thread
    python benchmarks/scale.py --blas-threads 1,0   # the same at one thread, then at all threads
    python benchmarks/scale.py --scale 0.01         # every data set at 1 % of its size: seconds
    python benchmarks/scale.py --cases tall,import  # some of them
    python benchmarks/scale.py --out benchmarks/results/scale.json

BLAS is limited to one thread on both sides (``--blas-threads``; 0 leaves the machine's default, i.e.
all threads; a comma-separated list runs every case at each, one after the other), in the child's
environment as well as by ``threadpoolctl``, as in ``benchmarks/sparse.py``. ``--scale S`` multiplies
every data set's size by S: n and p each by :math:`\\sqrt S` (``patches``: n by S, p is the 13 x 13
patch), at least 4r each; a k above p/2 takes the same fraction of p as at full size (:func:`settings`).
A default variant still running after ``--timeout`` seconds (900; 0: no limit) is stopped and reported as
such (``timed_out_after`` in the JSON, "> 900 (stopped)" in the table), so that one slow default does not
hold up the rest of the run.
The JSON keeps the keys of earlier runs (``cases``, ``blas_threads``: the first thread count's) and adds
``runs`` (one per thread count, each case with its ``variants``), ``summary`` (the table's rows),
``scale`` and ``settings``. scikit-learn is needed for the references (``pip install -e ".[bench]"``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

import timing

CASES = ("tall", "wide", "patches", "pitprops", "sparse", "import", "square")
#: The cases run when ``--cases`` is not given.
DEFAULT_CASES = CASES[:-1]
SEED = 0
#: Each case's data and fit at ``--scale 1``: rows, columns, loadings, nonzeros per loading, method.
SETTINGS: dict[str, dict[str, Any]] = {
    "tall": {"n": 200_000, "p": 500, "r": 10, "k": 20, "method": "spcart"},
    "wide": {"n": 500, "p": 100_000, "r": 20, "k": 100, "method": "spcart"},
    "patches": {"n": 5000, "p": 169, "r": 20, "k": 19, "method": "spcart"},
    "sparse": {"n": 100_000, "p": 50_000, "r": 10, "k": 20, "method": "spcart"},  # benchmarks/sparse.py's
    "square": {"n": 10_001, "p": 10_000, "r": 10, "k": 100, "method": "spcart"},
}
#: The density of ``sparse`` (``benchmarks/sparse.py``'s).
SPARSE_DENSITY = 0.001
#: The cases measured with every default as well as tuned, and the variants each runs.
DEFAULT_VARIANTS = ("default-fit", "default-estimator", "default-cli")
VARIANT_CASES = ("tall", "wide", "patches", "sparse")
#: The further default fits of ``wide`` (method, k at ``--scale 1``) and of ``sparse``.
WIDE_EXTRA = (("tpower", 100), ("spcart", 15_000), ("tpower", 15_000))
SPARSE_EXTRA = (("tpower", 20),)
#: Seconds after which a default variant is stopped and reported as such (``--timeout``).
DEFAULT_TIMEOUT = 900.0
#: The side length of the ``patches`` case's image patches (p = 169).
PATCH_SIZE = 13


def _peak_rss() -> int:
    """This process's peak resident set size in bytes (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def scaled_k(k: int, p: int, full_p: int) -> int:
    """``k`` where it is at most ``p / 2``, else the same fraction of ``p`` as ``k`` of ``full_p`` (at least 1)."""
    return k if k <= p // 2 else max(1, round(k * p / full_p))


def settings(scale: float = 1.0) -> dict[str, dict[str, Any]]:
    """:data:`SETTINGS` with every data set's size multiplied by ``scale`` (n and p each by its square root;
    ``patches``: n by ``scale``), n and p at least 4r each (``square``: n = p + 1), k by :func:`scaled_k`."""
    if not 0 < scale <= 1:
        raise ValueError(f"scale must be in (0, 1]; got {scale}")
    out: dict[str, dict[str, Any]] = {}
    for case, full in SETTINGS.items():
        setting, floor = dict(full), 4 * full["r"]
        if case == "patches":
            setting["n"] = max(floor, round(full["n"] * scale))
        else:
            setting["n"], setting["p"] = (max(floor, round(size * math.sqrt(scale))) for size in (full["n"], full["p"]))
        if case == "square":
            setting["n"] = setting["p"] + 1
        setting["k"] = scaled_k(full["k"], setting["p"], full["p"])
        out[case] = setting
    return out


def make_data(case: str, setting: dict[str, Any]) -> Any:
    """The data of ``case`` (seeded): Gaussian, image patches or a random CSR matrix; at ``--scale 1`` the same
    as before issue 27 (``sparse``: ``benchmarks/sparse.py``'s ``sparse_matrix()``)."""
    if case == "patches":
        from estimator import image_patches

        return image_patches(setting["n"], PATCH_SIZE)
    rng = np.random.default_rng(SEED)
    if case == "sparse":
        import scipy.sparse as sp

        shape = (setting["n"], setting["p"])
        return sp.random_array(shape, density=SPARSE_DENSITY, format="csr", rng=rng, data_sampler=rng.standard_normal)
    return rng.standard_normal((setting["n"], setting["p"]))


def data_bytes(x: Any) -> int:
    """The bytes the data take: a dense array's, or a CSR matrix's stored entries and indices."""
    if hasattr(x, "indptr"):
        return int(x.data.nbytes + x.indices.nbytes + x.indptr.nbytes)
    return int(x.nbytes)


def _child_tall(variant: str, setting: dict[str, Any]) -> dict[str, Any]:
    x = make_data("tall", setting)
    start = time.perf_counter()
    if variant == "reference":  # timed from after importing scikit-learn, as spcakit's side from before its fit
        from sklearn.decomposition import PCA

        imported = time.perf_counter()
        PCA(n_components=setting["r"]).fit(x)
        seconds = time.perf_counter() - imported
        return {"seconds": seconds, "seconds_with_import": seconds + imported - start, "data_bytes": x.nbytes}
    import spcakit

    result = spcakit.fit(x, "spcart", r=setting["r"], k=setting["k"], metrics=["cpev"])
    extra = {"cpev": result.metrics["cpev"], "algorithm_seconds": result.seconds, "iterations": result.iterations}
    return {"seconds": time.perf_counter() - start, "data_bytes": x.nbytes, **extra}


def _child_wide(variant: str, setting: dict[str, Any]) -> dict[str, Any]:
    x = make_data("wide", setting)
    start = time.perf_counter()
    if variant == "reference":
        v = np.random.default_rng(1).standard_normal((setting["p"], setting["r"]))
        start = time.perf_counter()
        x.T @ (x @ v)
        extra: dict[str, Any] = {}
    else:
        import spcakit

        result = spcakit.fit(x, "spcart", r=setting["r"], k=setting["k"], metrics=["cpev"])
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


def _child_patches(variant: str, setting: dict[str, Any]) -> dict[str, Any]:
    x = make_data("patches", setting)
    r, k = setting["r"], setting["k"]
    if variant == "reference":
        import warnings

        from sklearn.decomposition import SparsePCA
        from sklearn.exceptions import ConvergenceWarning

        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = SparsePCA(n_components=r, alpha=1.0, method="cd", random_state=SEED).fit(x)
        seconds = time.perf_counter() - start
        nonzeros = np.count_nonzero(model.components_, axis=1)
        return {"seconds": seconds, "data_bytes": x.nbytes, "mean_nonzeros": float(nonzeros.mean()),
                "total_nonzeros": int(nonzeros.sum())}  # fmt: skip
    from spcakit.estimator import ESTIMATOR_METRICS

    centred = x - x.mean(axis=0)
    kwargs = {"method": "spcart", "r": r, "k": k, "truncator": "sparsity", "metrics": ESTIMATOR_METRICS}
    return {"data_bytes": x.nbytes, "total_nonzeros": r * k, **_overhead(x, kwargs, lambda: centred.T @ centred)}


def _child_pitprops(variant: str, setting: dict[str, Any]) -> dict[str, Any]:
    import spcakit

    matrix = spcakit.datasets.pitprops().matrix
    kwargs = {"method": "spcart", "r": 6, "covariance": True}
    return {"data_bytes": matrix.nbytes, **_overhead(matrix, kwargs, lambda: None, repeats=50)}


def _child_sparse(variant: str, setting: dict[str, Any]) -> dict[str, Any]:
    x = make_data("sparse", setting)
    stored = data_bytes(x)
    if variant == "reference":
        v = np.random.default_rng(1).standard_normal((x.shape[1], setting["r"]))
        start = time.perf_counter()
        x.T @ (x @ v)
        return {"seconds": time.perf_counter() - start, "data_bytes": stored}
    import spcakit

    report: dict[str, Any] = {"data_bytes": stored}
    for method in ("spcart", "tpower"):
        start = time.perf_counter()
        result = spcakit.fit(x, method, r=setting["r"], k=setting["k"], metrics=["cpev"])
        report[method] = {"seconds": time.perf_counter() - start, "cpev": result.metrics["cpev"],
                          "iterations": result.iterations}  # fmt: skip
    report["seconds"] = report["spcart"]["seconds"]
    return report


def _child_square(variant: str, setting: dict[str, Any]) -> dict[str, Any]:
    x = make_data("square", setting)
    r, k = setting["r"], setting["k"]
    if variant == "reference":
        from scipy.sparse.linalg import eigsh, svds

        samples, size = x.shape[0], x.nbytes
        centred = x - x.mean(axis=0)
        del x
        start = time.perf_counter()  # the PCA start before issue 15: ARPACK's svds on the centred copy
        _, singular, _ = svds(centred, k=r, random_state=SEED)
        before = time.perf_counter() - start
        start = time.perf_counter()
        covariance = centred.T @ centred / (samples - 1)
        del centred
        formed = time.perf_counter() - start
        values = eigsh(covariance, k=r, which="LA", v0=np.ones(covariance.shape[0]), return_eigenvectors=True)[0]
        return {"seconds": before, "eigsh_formed_seconds": time.perf_counter() - start, "forming_seconds": formed,
                "data_bytes": size, "top_eigenvalue": float(values.max()),
                "top_eigenvalue_svds": float(singular.max() ** 2 / (samples - 1))}  # fmt: skip
    import spcakit

    start = time.perf_counter()
    problem = spcakit.as_problem(x)
    built = time.perf_counter() - start
    values, _ = problem.covariance.top_eigenpairs(r)
    pca_start = time.perf_counter() - start - built
    start = time.perf_counter()
    result = spcakit.fit(problem, "spcart", r=r, k=k, metrics=["cpev"])
    return {"seconds": built + time.perf_counter() - start, "build_seconds": built, "pca_start_seconds": pca_start,
            "algorithm_seconds": result.seconds, "cpev": result.metrics["cpev"], "data_bytes": x.nbytes,
            "top_eigenvalue": float(values[0])}  # fmt: skip


def _child_default(case: str, variant: str, setting: dict[str, Any], method: str, k: int) -> dict[str, Any]:
    """``variant`` (``default-fit``: :func:`spcakit.fit`, ``default-estimator``: :class:`spcakit.SparsePCA`) with
    every default on ``case``'s data: wall time (``patches``: the best of up to 25, the first beside it), CPEV,
    iterations and nonzeros."""
    import spcakit

    x = make_data(case, setting)
    r = setting["r"]
    if variant == "default-fit":
        run = lambda: spcakit.fit(x, method, r=r, k=k)  # noqa: E731
    else:
        estimator = spcakit.SparsePCA  # imports scikit-learn, not timed (as for the references)
        run = lambda: estimator(n_components=r, k=k).fit(x)  # noqa: E731
    start = time.perf_counter()
    out = run()
    seconds = first = time.perf_counter() - start
    extra: dict[str, Any] = {}
    if case == "patches":  # milliseconds: the best of repeats, as the tuned figure
        _, best, repeats = timing.best_of(run, budget_s=1.0, max_repeats=25)
        seconds = min(first, best)
        extra = {"first_seconds": first, "repeats": repeats + 1}
    if variant == "default-fit":
        result, loadings = out, out.loadings
        extra.update(method=method, algorithm_seconds=result.seconds)
    else:
        result, loadings = out.result_, out.components_.T
        extra.update(method="auto (SparsePCA's default)")
    return {"seconds": seconds, "data_bytes": data_bytes(x), "cpev": result.metrics.get("cpev"),
            "iterations": result.iterations, "total_nonzeros": int(np.count_nonzero(loadings)), "k": k, **extra}  # fmt: skip


def _child_write(case: str, setting: dict[str, Any], path: Path) -> dict[str, Any]:
    """Write ``case``'s data to ``path`` for the command line: ``.npy``, or ``.npz`` (scipy.sparse) for ``sparse``."""
    x = make_data(case, setting)
    if case == "sparse":
        import scipy.sparse as sp

        sp.save_npz(path, x, compressed=False)
    else:
        np.save(path, x)
    return {"data_bytes": data_bytes(x), "file_bytes": path.stat().st_size}


CHILDREN = {"tall": _child_tall, "wide": _child_wide, "patches": _child_patches, "pitprops": _child_pitprops,
            "sparse": _child_sparse, "square": _child_square}  # fmt: skip
#: The variants a child runs: the tuned setting, the reference, the defaults in process, writing the CLI's file.
CHILD_VARIANTS = ("tuned", "reference", "default-fit", "default-estimator", "write")


def _child_env(blas_threads: int | None) -> dict[str, str]:
    """This environment with the BLAS thread variables set to ``blas_threads`` (unchanged for ``None``)."""
    env = dict(os.environ)
    if blas_threads is not None:
        env.update({name: str(blas_threads) for name in timing.BLAS_THREAD_VARIABLES})
    return env


def run_child(case: str, variant: str, blas_threads: int | None, scale: float = 1.0, *extra: str,
              timeout: float | None = None) -> dict[str, Any]:  # fmt: skip
    """Run ``variant`` of ``case`` in a fresh interpreter and return what it reports (with its peak RSS); a child
    still running after ``timeout`` seconds is stopped and reported as ``{"timed_out_after": timeout}``."""
    arguments = ["--child", case, "--variant", variant, "--scale", repr(scale), "--blas-threads", str(blas_threads or 0)]
    arguments += extra
    if timeout is None:
        return timing.run_child(__file__, arguments, blas_threads)
    try:
        done = subprocess.run([sys.executable, __file__, *arguments], capture_output=True, text=True, timeout=timeout,
                              cwd=Path(__file__).parent, env=_child_env(blas_threads), check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"timed_out_after": timeout}
    if done.returncode != 0:
        raise RuntimeError(f"scale.py {' '.join(arguments)} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _cli_command() -> list[str]:
    """The ``spcakit`` command beside this interpreter (the console script), else ``python -m spcakit``."""
    script = Path(sys.executable).with_name("spcakit")
    return [str(script)] if script.exists() else [sys.executable, "-m", "spcakit"]


def run_cli(setting: dict[str, Any], path: Path, blas_threads: int | None, timeout: float | None = None) -> dict[str, Any]:
    """Time ``spcakit run METHOD -d PATH -r R -k K`` wall to wall, with the command's peak RSS (``os.wait4``);
    stopped after ``timeout`` seconds (``{"timed_out_after": timeout}``)."""
    command = [*_cli_command(), "run", setting["method"], "-d", str(path), "-r", str(setting["r"]), "-k", str(setting["k"])]
    with tempfile.TemporaryFile() as errors:
        start = time.perf_counter()
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=errors, env=_child_env(blas_threads))
        stopper = threading.Timer(timeout, process.kill) if timeout is not None else None
        if stopper is not None:
            stopper.start()
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
        if stopper is not None:
            stopper.cancel()
        process.returncode = os.waitstatus_to_exitcode(status)
        if timeout is not None and seconds >= timeout and process.returncode < 0:
            return {"timed_out_after": timeout}
        if process.returncode != 0:
            errors.seek(0)
            raise RuntimeError(f"{' '.join(command)} failed:\n{errors.read().decode(errors='replace')}")
    return {"seconds": seconds, "peak_rss_bytes": usage.ru_maxrss * 1024, "command": " ".join(command[-8:]),
            "includes": "interpreter start, imports and reading the file"}  # fmt: skip


def run_variants(case: str, setting: dict[str, Any], blas_threads: int | None, scale: float, data_file: Any,
                 reference: dict[str, Any], timeout: float | None = None) -> dict[str, dict[str, Any]]:  # fmt: skip
    """The default variants of ``case`` (and ``wide``'s and ``sparse``'s further default fits), each with its
    ratios to ``reference`` (``data_file()``: the CLI's file, written on first use, and the data's size); one
    still running after ``timeout`` seconds is stopped and reported as ``{"timed_out_after": timeout}``."""
    extras = {"wide": WIDE_EXTRA, "sparse": SPARSE_EXTRA}.get(case, ())
    full_p = SETTINGS[case]["p"]
    runs: list[tuple[str, str, str, int]] = [(v, v, setting["method"], setting["k"]) for v in DEFAULT_VARIANTS]
    runs += [(f"default-fit {m} k={k}", "default-fit", m, scaled_k(k, setting["p"], full_p)) for m, k in extras]
    variants: dict[str, dict[str, Any]] = {}
    for label, variant, method, k in runs:
        if variant == "default-cli":
            path, written = data_file()
            report = {**run_cli(setting, path, blas_threads, timeout), "data_bytes": written["data_bytes"],
                      "file_bytes": written["file_bytes"]}  # fmt: skip
        else:
            report = run_child(case, variant, blas_threads, scale, "--method", method, "--k", str(k), timeout=timeout)
        if "timed_out_after" in report:
            variants[label] = {**report, "k": k}
            continue
        report["time_ratio"] = report["seconds"] / reference["seconds"]
        report["rss_ratio"] = report["peak_rss_bytes"] / report["data_bytes"]
        if case == "patches":
            report["speedup_over_reference"] = reference["seconds"] / report["seconds"]
        variants[label] = report
    return variants


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


def _threads_label(blas_threads: int | None) -> str:
    """``"1"`` for a limit, ``"all (N)"`` for the machine's default (N usable CPUs)."""
    if blas_threads is not None:
        return str(blas_threads)
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"all ({usable})"


def summary_rows(case: str, entry: dict[str, Any], threads: str) -> list[dict[str, Any]]:
    """The table's rows for one case at one thread count: tuned, the defaults, the reference."""
    def row(variant: str, seconds: float | None, ratio: float | None, rss: float | None, iterations: Any = None,
            timed_out_after: float | None = None) -> dict[str, Any]:  # fmt: skip
        return {"case": case, "variant": variant, "threads": threads, "seconds": seconds, "time_ratio": ratio,
                "rss_ratio": rss, "iterations": iterations, "timed_out_after": timed_out_after}  # fmt: skip

    if case == "import":
        return [row(f"`{label}`", entry[label], entry[label] / entry["pass"], None) for label in ("import spcakit", "fit path")]
    ours, reference = entry["spcakit"], entry.get("reference")
    if case == "sparse":
        rows = [row(f"tuned {method}", ours[method]["seconds"], ours[method]["seconds"] / reference["seconds"],
                    entry["rss_ratio"], ours[method].get("iterations")) for method in ("spcart", "tpower")]  # fmt: skip
    else:
        rows = [row("tuned", ours["seconds"], entry.get("time_ratio"), entry["rss_ratio"], ours.get("iterations"))]
    for label, variant in entry.get("variants", {}).items():
        rows.append(row(label.replace("-", " ", 1), variant.get("seconds"), variant.get("time_ratio"),
                        variant.get("rss_ratio"), variant.get("iterations"), variant.get("timed_out_after")))  # fmt: skip
    if reference is not None:
        rows.append(row("reference", reference["seconds"], 1.0, reference["peak_rss_bytes"] / reference["data_bytes"]))
    return rows


def render_summary(rows: list[dict[str, Any]]) -> str:
    """The rows as a Markdown table."""
    lines = ["| case | variant | threads | seconds | ÷ reference | peak RSS ÷ data | iterations |",
             "|---|---|---|---|---|---|---|"]  # fmt: skip
    for row in rows:
        ratio = "" if row["time_ratio"] is None else f"{row['time_ratio']:.3g}"
        rss = "" if row["rss_ratio"] is None else f"{row['rss_ratio']:.2f}"
        iterations = "" if row["iterations"] is None else str(row["iterations"])
        seconds = f"> {row['timed_out_after']:g} (stopped)" if row["seconds"] is None else f"{row['seconds']:.4g}"
        lines.append(f"| {row['case']} | {row['variant']} | {row['threads']} | {seconds} | {ratio} | {rss} "
                     f"| {iterations} |")  # fmt: skip
    return "\n".join(lines)


def _thread_counts(text: str) -> list[int | None]:
    """``"1,0"`` as ``[1, None]`` (0: the machine's default)."""
    try:
        counts = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        counts = []
    if not counts or any(count < 0 for count in counts):
        raise argparse.ArgumentTypeError(f"--blas-threads takes counts >= 0 separated by commas (0: all); got {text!r}")
    return [count or None for count in counts]


def run_cases(cases: list[str], scaled: dict[str, dict[str, Any]], blas_threads: int | None, scale: float,
              data_file: Any, timeout: float | None = None) -> tuple[dict[str, Any], list[str], list[dict[str, Any]]]:  # fmt: skip
    """Every case at one thread count: the report's entries, the per-case lines and the summary's rows."""
    entries: dict[str, Any] = {}
    lines, rows = [], []
    label = _threads_label(blas_threads)
    for case in cases:
        if case == "import":
            times = import_times()
            entries["import"] = times
            rows += summary_rows("import", times, label)
            lines.append(f"| import | `import spcakit` {times['import spcakit']:.3f} s; with the fit path "
                         f"{times['fit path']:.3f} s | `python -c pass` {times['pass']:.3f} s | |")  # fmt: skip
            continue
        ours = run_child(case, "tuned", blas_threads, scale)
        entry: dict[str, Any] = {"spcakit": ours, "rss_ratio": ours["peak_rss_bytes"] / ours["data_bytes"]}
        if case in ("tall", "wide", "patches", "sparse", "square"):
            reference = run_child(case, "reference", blas_threads, scale)
            entry["reference"] = reference
            entry["time_ratio"] = ours["seconds"] / reference["seconds"]
        if case in VARIANT_CASES:
            entry["variants"] = run_variants(case, scaled[case], blas_threads, scale, lambda c=case: data_file(c),
                                             entry["reference"], timeout)  # fmt: skip
        if case in ("tall", "wide"):
            name = "scikit-learn PCA(10)" if case == "tall" else f"one pass X^T(XV), V p x {scaled[case]['r']}"
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
        entries[case] = entry
        rows += summary_rows(case, entry, label)
    return entries, lines, rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(DEFAULT_CASES), help=f"comma-separated, of {', '.join(CASES)}")
    parser.add_argument("--out", type=Path, help="write the report as JSON")
    parser.add_argument("--blas-threads", type=_thread_counts, default=[1],
                        help="BLAS threads on both sides (0: the machine's default, all); several, e.g. 1,0: each in turn")  # fmt: skip
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiply every data set's size by this factor in (0, 1] (e.g. 0.01: seconds in all)")  # fmt: skip
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                        help=f"stop a default variant after this many seconds and report it as stopped (0: never; "
                             f"default {DEFAULT_TIMEOUT:g})")  # fmt: skip
    parser.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    parser.add_argument("--variant", choices=CHILD_VARIANTS, default="tuned", help=argparse.SUPPRESS)
    parser.add_argument("--method", help=argparse.SUPPRESS)
    parser.add_argument("--k", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--path", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        scaled = settings(args.scale)
    except ValueError as error:
        parser.error(str(error))
    if args.child:
        blas_threads = args.blas_threads[0]
        setting = scaled.get(args.child, {})
        with timing.limit_blas_threads(blas_threads):
            if args.variant == "write":
                report = _child_write(args.child, setting, args.path)
            elif args.variant.startswith("default-"):
                report = _child_default(args.child, args.variant, setting, args.method, args.k)
            else:
                report = CHILDREN[args.child](args.variant, setting)
        report["peak_rss_bytes"] = _peak_rss()
        print(json.dumps(report))
        return 0

    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = sorted(set(cases) - set(CASES))
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; valid: {', '.join(CASES)}")
    compiled = timing.compile_sources()  # the children time fresh processes: with bytecode, as an installed package
    report: dict[str, Any] = {"environment": timing.environment(), "blas_threads": args.blas_threads[0],
                              "compiled": compiled,
                              "scale": args.scale, "timeout": args.timeout or None, "settings": {c: scaled[c] for c in cases if c in scaled},
                              "cases": {}, "runs": [], "summary": []}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="spcakit-scale-") as folder:
        written: dict[str, tuple[Path, dict[str, Any]]] = {}

        def data_file(case: str) -> tuple[Path, dict[str, Any]]:
            """The CLI's file of ``case``, written by a child on first use, and what the child reported."""
            if case not in written:
                path = Path(folder) / f"{case}.{'npz' if case == 'sparse' else 'npy'}"
                written[case] = (path, run_child(case, "write", None, args.scale, "--path", str(path)))
            return written[case]

        for index, blas_threads in enumerate(args.blas_threads):
            todo = [c for c in cases if c != "import" or index == 0]  # the import time does not depend on BLAS
            entries, lines, rows = run_cases(todo, scaled, blas_threads, args.scale, data_file, args.timeout or None)
            report["runs"].append({"blas_threads": blas_threads, "threads": _threads_label(blas_threads), "cases": entries})
            report["summary"] += rows
            if index == 0:
                report["cases"] = entries
            print(f"BLAS threads: {_threads_label(blas_threads)}; scale {args.scale:g}")
            print("| setting | spcakit | reference | ratio |\n|---|---|---|---|")
            print("\n".join(lines) + "\n")
    report["environment"]["loadavg_end"] = list(os.getloadavg())
    print("Summary (tuned: CPEV the only metric; default: every default; default cli: `spcakit run` wall to wall,\n"
          "interpreter start and reading the file included; wide and sparse: ÷ reference = passes of X^T(XV);\n"
          "patches: its reciprocal is the speed-up over scikit-learn's SparsePCA)\n")  # fmt: skip
    print(render_summary(report["summary"]))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
