"""The ``quality`` suite: the explained variance (CPEV) that spcakit's methods and peer sparse-PCA
implementations reach at the same number of nonzeros per loading, on a panel of real data sets, with times.

**One CPEV for everybody.** Every method returns loadings V (p x r); the benchmark computes, in Python and
for all of them alike, :math:`\\operatorname{tr}(Q^\\top C Q)/\\operatorname{tr}(C)` with Q an orthonormal basis
of span(V) and C the covariance (``ddof=1``) of the standardised data: :func:`spcakit.analysis.metrics.cpev` on the data's
covariance operator, the very function behind ``spcakit.fit(...).metrics["cpev"]`` (for spcakit's own rows
the two are checked to agree). Beside it: the nonzeros per loading (max, mean, min) and the time in seconds.

**Data** (:data:`CASES`; ``--cases`` picks some). Each is an n x p matrix; its exactly constant columns are
dropped first (their number recorded), then every column is standardised (mean 0, standard deviation 1 with
``ddof=1``), so that every method, spcakit's and the peers', works on the correlation matrix of the data:

* scikit-learn's bundled wine (r=3, k=4), breast cancer (r=5, k=5), diabetes (r=3, k=4), digits (r=5, k=10);
* ``patches``: 5000 13x13 grey patches of ``china.jpg``, each patch's mean removed
  (``benchmarks/estimator.py``'s :func:`image_patches`), then standardised like the others (r=5, k=10);
* ``pitprops``: the Pitprops correlation matrix (``../shared/data/pitprops.csv``) as a data matrix of
  n = 180 rows (the study's sample size) whose sample correlation is exactly that matrix
  (:func:`exact_data`: centred orthonormal columns times :math:`\\sqrt{n-1}\\,C^{1/2}`), r=6, k=4;
* ``../shared/data``: colon (62 x 2000), lymphoma (62 x 4026, already log-transformed and standardised),
  golub (72 x 7129 raw intensities, used as they are: no thresholding, no logarithm), NUS-WIDE (2400 x 225),
  numerical numbers (2000 x 216); r=5, k=10. Those absent are skipped (with a message and a count).

**spcakit**: ``spcakit.fit(X, method, r=r, k=k, standardize=False, metrics=["cpev"], **kwargs)`` for each entry
of ``--methods`` (default :data:`DEFAULT_METHODS`: SPCArt, TPower and greedy, each as it is and with
``refiner="swap"``, and the default method with orthogonal loadings, beside msPCA). An entry is a method name, optionally with keyword arguments after colons:
``tpower:refiner=swap:deflator=schur``. A method that refuses ``k`` (GPower's penalties, PCA) is reported as
such. Also the scikit-learn estimator with its defaults, ``spcakit.SparsePCA(n_components=r, k=k,
standardize=True)`` on the unstandardised (constant-free) data: its default method is read from the fit
(``result_.spec``), never assumed. Times: the fastest of up to 3 wall-clock runs of the call.

**Peers** (each in a child process, ``--peer-timeout`` seconds for all its fits and its tuning together;
what finished before a timeout is kept):

* ``sklearn``: ``sklearn.decomposition.SparsePCA(n_components=r, alpha=alpha, random_state=0)`` (its default
  LARS solver), ``alpha`` tuned by geometric bisection until the mean number of nonzeros per component is k
  (or as close as the tuning got); the time is that of the fit at the chosen ``alpha``;
* R (``Rscript`` on PATH, packages from ``--r-lib``, default ``.r-lib``, installed by
  ``../shared/tools/install-r-peers.sh``; skipped with a message when R or a package is absent). The data go
  to R as a binary file, the loadings come back the same way, and R times each fit itself
  (``system.time`` around the call only):

  - ``nsprcomp``: ``nsprcomp(X, ncomp=r, k=k, center=TRUE, scale.=FALSE)`` (EM iterations with soft
    thresholding to cardinality at most k, generalised deflation; its default ``nrestart=5`` restarts per
    component), after ``set.seed(s)`` for s = 1..``--seeds``: the run with seed 1, and the best run by CPEV;
  - ``pma``: ``SPC(X, sumabsv=s, K=r, orth=TRUE, center=TRUE)`` (Witten, Tibshirani & Hastie's penalised
    matrix decomposition with the orthogonal multi-factor method), the one ``sumabsv`` in [1, sqrt(p)] tuned by
    bisection until the mean number of nonzeros per loading is k;
  - ``elasticnet``: ``spca(C, K=r, para=rep(k, r), type="Gram", sparse="varnum")`` with C the correlation
    matrix when n >= p, ``spca(X, ..., type="predictor")`` when n < p (a Gram matrix's square root costs p^3);
  - ``mspca``: ``mspca(C, r, rep(k, r), checkPSD=FALSE)`` (Cory-Wright & Pauphilet's msPCA, orthogonal loadings to
    about 1e-4) on the correlation matrix C, formed in the timed call, after ``set.seed(1)``; its row also gives its
    own criterion, FVE at its violation of orthogonality (:func:`redundancy_of`), as does spcakit's
    ``auto:constraint=orthogonal``.

Usage::

    python benchmarks/quality.py                           # every case, every peer (about half an hour)
    python benchmarks/quality.py --quick                   # the four small data sets, 2 seeds
    python benchmarks/quality.py --cases wine,pitprops --peers sklearn,nsprcomp
    python benchmarks/quality.py --methods spcart,tpower:refiner=swap,spca-sp --peer-timeout 60
    python benchmarks/quality.py --render benchmarks/results/quality.json --markdown section.md   # no run

The report goes to ``--out`` (default ``benchmarks/results/quality.json``); the markdown (the section of
``docs/benchmarks.md``, generated from the report by :func:`markdown`) is printed and, with ``--markdown
FILE``, written. BLAS is limited to one thread on the Python side (``--blas-threads``) and through the
environment for R. Needs scikit-learn and Pillow (``pip install -e ".[bench]"``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import spcakit
import timing
from spcakit.core.errors import SpcakitError
from spcakit.analysis.metrics import cpev, fraction_explained, redundancy

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
RESULTS = Path(__file__).resolve().parent / "results" / "quality.json"
#: Where ``../shared/tools/install-r-peers.sh MIRROR_DIR .r-lib`` puts the R peers (git-ignored).
R_LIB = Path(__file__).resolve().parents[1] / ".r-lib"
SEED = 0
#: The spcakit candidates run when ``--methods`` is not given (see :func:`parse_method`).
DEFAULT_METHODS = ("spcart", "tpower", "greedy", "spcart:refiner=swap", "tpower:refiner=swap", "greedy:refiner=swap",
                   "auto:constraint=orthogonal")
PEERS = ("sklearn", "nsprcomp", "pma", "elasticnet", "mspca")
#: The non-negative panel (``--nonnegative``): spcakit's candidates, each with ``nonnegative=True`` (``auto`` is
#: ``spcakit.fit``'s default method), against nsprcomp with ``nneg = TRUE``.
NONNEGATIVE_METHODS = ("auto:nonnegative=true", "tpower:nonnegative=true", "spcart:nonnegative=true",
                       "tpower-restarts:nonnegative=true")
NONNEGATIVE_PEERS = ("nsprcomp-nneg",)
NONNEGATIVE_RESULTS = RESULTS.parent / "quality_nonnegative.json"
R_PACKAGES = {"nsprcomp": ("nsprcomp",), "pma": ("PMA",), "elasticnet": ("elasticnet", "lars"), "mspca": ("msPCA",),
              "nsprcomp-nneg": ("nsprcomp",)}  # the last: the non-negative panel's peer (--nonnegative)
PITPROPS_N = 180  # the number of pit props measured (Jeffers 1967)


# -- data --------------------------------------------------------------------------------------------------
def _sklearn_bundled(name: str) -> Callable[[], np.ndarray]:
    def load() -> np.ndarray:
        import sklearn.datasets

        return np.asarray(getattr(sklearn.datasets, f"load_{name}")().data, dtype=float)

    return load


def _patches() -> np.ndarray:
    from estimator import image_patches  # the one definition, shared with benchmarks/scale.py

    return image_patches(5000, 13)


def exact_data(correlation: np.ndarray, n: int, seed: int = SEED) -> np.ndarray:
    """An ``n x p`` data matrix with column means exactly 0 and sample covariance (``ddof=1``) exactly ``correlation``.

    Random columns are centred and orthonormalised (``Q``, ``n x p``, each column orthogonal to the ones
    vector), then :math:`X = \\sqrt{n-1}\\,Q\\,C^{1/2}`: :math:`X^\\top X/(n-1) = C^{1/2} Q^\\top Q C^{1/2} = C` and
    :math:`\\mathbf 1^\\top X = 0`. Methods that see the data only through :math:`X^\\top X` (all here) see C itself.
    """
    p = correlation.shape[0]
    z = np.random.default_rng(seed).standard_normal((n, p))
    q, _ = np.linalg.qr(z - z.mean(axis=0))
    values, vectors = np.linalg.eigh((correlation + correlation.T) / 2)
    root = (vectors * np.sqrt(np.clip(values, 0.0, None))) @ vectors.T
    return np.sqrt(n - 1) * q @ root


def pitprops_correlation() -> np.ndarray:
    """The 13 x 13 Pitprops correlation matrix of ``../shared/data/pitprops.csv`` (a header row and a name column)."""
    rows = (SHARED_DATA / "pitprops.csv").read_text().strip().splitlines()[1:]
    return np.array([[float(v) for v in row.split(",")[1:]] for row in rows])


def _pitprops() -> np.ndarray:
    return exact_data(pitprops_correlation(), PITPROPS_N)


def _shared(name: str) -> Callable[[], np.ndarray]:
    def load() -> np.ndarray:
        with np.load(SHARED_DATA / name, allow_pickle=False) as archive:
            return np.asarray(archive["X"], dtype=float)

    return load


#: name -> (loader, r, k, the shared file it needs or None, what was done to the data before standardising).
CASES: dict[str, dict[str, Any]] = {
    "wine": {"load": _sklearn_bundled("wine"), "r": 3, "k": 4, "file": None, "source": "sklearn load_wine"},
    "breast_cancer": {"load": _sklearn_bundled("breast_cancer"), "r": 5, "k": 5, "file": None,
                      "source": "sklearn load_breast_cancer"},
    "diabetes": {"load": _sklearn_bundled("diabetes"), "r": 3, "k": 4, "file": None, "source": "sklearn load_diabetes"},
    "digits": {"load": _sklearn_bundled("digits"), "r": 5, "k": 10, "file": None, "source": "sklearn load_digits"},
    "pitprops": {"load": _pitprops, "r": 6, "k": 4, "file": "pitprops.csv",
                 "source": f"pitprops.csv correlation matrix as an exact {PITPROPS_N}-row data matrix"},
    "patches": {"load": _patches, "r": 5, "k": 10, "file": None,
                "source": "5000 13x13 grey patches of china.jpg, each patch's mean removed"},
    "nus_wide": {"load": _shared("nus_wide_2400x225.npz"), "r": 5, "k": 10, "file": "nus_wide_2400x225.npz",
                 "source": "nus_wide_2400x225.npz"},
    "numerical_numbers": {"load": _shared("numerical_numbers_2000x216.npz"), "r": 5, "k": 10,
                          "file": "numerical_numbers_2000x216.npz", "source": "numerical_numbers_2000x216.npz"},
    "colon": {"load": _shared("colon_alon_62x2000.npz"), "r": 5, "k": 10, "file": "colon_alon_62x2000.npz",
              "source": "colon_alon_62x2000.npz (raw expression, no logarithm)"},
    "lymphoma": {"load": _shared("lymphoma_alizadeh_62x4026_std.npz"), "r": 5, "k": 10,
                 "file": "lymphoma_alizadeh_62x4026_std.npz", "source": "lymphoma_alizadeh_62x4026_std.npz (log, standardised)"},
    "golub": {"load": _shared("golub_leukemia_72x7129_raw.npz"), "r": 5, "k": 10, "file": "golub_leukemia_72x7129_raw.npz",
              "source": "golub_leukemia_72x7129_raw.npz (raw intensities, no thresholding or logarithm)"},
}  # fmt: skip
QUICK_CASES = ("wine", "breast_cancer", "diabetes", "pitprops")


def standardise(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """``(standardised data, constant-free data, number of constant columns dropped)``; ``ddof=1``."""
    constant = np.ptp(x, axis=0) == 0
    kept = x[:, ~constant]
    centred = kept - kept.mean(axis=0)
    return centred / centred.std(axis=0, ddof=1), kept, int(constant.sum())


def load_case(name: str) -> dict[str, Any] | None:
    """The case's data (standardised and as loaded, constants dropped) and settings, or ``None`` when its file is absent."""
    case = CASES[name]
    if case["file"] is not None and not (SHARED_DATA / case["file"]).exists():
        return None
    x, raw, dropped = standardise(case["load"]())
    return {"name": name, "x": x, "raw": raw, "dropped_constant": dropped, "r": case["r"], "k": case["k"],
            "source": case["source"]}  # fmt: skip


# -- the one CPEV --------------------------------------------------------------------------------------------
def covariance_of(x: np.ndarray) -> Any:
    """The covariance operator of the (standardised) data, as ``spcakit.fit`` builds it."""
    return spcakit.as_problem(x).covariance


def measure(loadings: np.ndarray, covariance: Any) -> dict[str, Any]:
    """CPEV of span(``loadings``) (:func:`spcakit.analysis.metrics.cpev`) and the nonzeros per loading."""
    v = np.asarray(loadings, dtype=float).reshape(loadings.shape[0], -1)
    nonzeros = np.count_nonzero(v, axis=0)
    value = cpev(v, covariance) if np.any(v) else 0.0
    return {"cpev": float(value), "nonzeros": [int(c) for c in nonzeros], "nnz_max": int(nonzeros.max()),
            "nnz_mean": float(nonzeros.mean()), "nnz_min": int(nonzeros.min())}  # fmt: skip


def redundancy_of(loadings: np.ndarray, covariance: Any) -> dict[str, float]:
    r"""msPCA's criterion, FVE :math:`\sum_t u_t^\top C u_t / \operatorname{tr} C` of the unit loadings, and the
    violation of orthogonality :math:`\sum_{s<t} |u_s^\top u_t|` (:func:`spcakit.analysis.metrics.redundancy`)."""
    u = np.asarray(loadings, dtype=float)
    norms = np.linalg.norm(u, axis=0)
    u = u / np.where(norms > 0, norms, 1.0)
    return {"fve": float(fraction_explained(u, covariance)),
            "orthogonality_violation": float(redundancy(covariance, u)["orthogonal"])}


def pca_cpev(covariance: Any, r: int) -> float:
    """CPEV of the r leading principal components: the ceiling of every sparse method."""
    return float(np.sum(covariance.top_eigenvalues(r)) / covariance.trace())


# -- spcakit -------------------------------------------------------------------------------------------------
def _value(text: str) -> Any:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return {"true": True, "false": False, "none": None}.get(text.lower(), text)


def parse_method(entry: str) -> tuple[str, dict[str, Any]]:
    """``"tpower:refiner=swap:deflator=schur"`` -> ``("tpower", {"refiner": "swap", "deflator": "schur"})``."""
    name, *pairs = entry.strip().split(":")
    kwargs = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise ValueError(f"method entry {entry!r}: {pair!r} is not key=value")
        kwargs[key.strip()] = _value(value.strip())
    return name, kwargs


def run_spcakit(case: dict[str, Any], entry: str, covariance: Any) -> dict[str, Any]:
    """One spcakit candidate on the case: its CPEV (ours and spcakit's metric), nonzeros and time."""
    method, kwargs = parse_method(entry)
    call = lambda: spcakit.fit(case["x"], method, r=case["r"], k=case["k"], standardize=False,  # noqa: E731
                               metrics=["cpev"], seed=SEED, **kwargs)  # fmt: skip
    try:
        result, seconds, repeats = timing.best_of(call, budget_s=1.0, max_repeats=3)
    except SpcakitError as exc:
        return {"label": entry, "kind": "spcakit", "status": "refused", "message": str(exc).splitlines()[0]}
    row = {"label": entry, "kind": "spcakit", "status": "ok", "method": method, "kwargs": kwargs,
           "seconds": seconds, "algorithm_seconds": result.seconds, "repeats": repeats,
           **measure(result.loadings, covariance), "spcakit_cpev": float(result.metrics["cpev"]),
           "loadings": result.loadings}  # fmt: skip
    refined = result.metrics.get("refiner_swaps")
    if refined is not None:
        row["swaps"] = int(refined)
    if kwargs.get("constraint") == "orthogonal":  # beside msPCA's row, by its criterion
        row.update(redundancy_of(result.loadings, covariance))
    return row


def run_estimator(case: dict[str, Any], covariance: Any, nonnegative: bool = False) -> dict[str, Any]:
    """``spcakit.SparsePCA(n_components=r, k=k, standardize=True)``: the estimator's defaults, whatever they are
    (with ``nonnegative``: ``SparsePCA(..., nonnegative=True)``)."""
    extra = {"nonnegative": True} if nonnegative else {}
    call = lambda: spcakit.SparsePCA(n_components=case["r"], k=case["k"], standardize=True, **extra).fit(case["raw"])  # noqa: E731
    try:
        model, seconds, repeats = timing.best_of(call, budget_s=1.0, max_repeats=3)
    except SpcakitError as exc:
        return {"label": "SparsePCA()", "kind": "estimator", "status": "refused", "message": str(exc).splitlines()[0]}
    spec = model.result_.spec
    parts = [spec.get("name", model.result_.method)]
    if spec.get("refiner"):
        parts.append(f"refiner={spec['refiner'].get('name')}")
    label = "SparsePCA(nonnegative=True)" if nonnegative else "SparsePCA()"
    return {"label": f"{label} = {':'.join(parts)}", "kind": "estimator", "status": "ok",
            "method": model.result_.method, "spec_name": spec.get("name"), "refiner": (spec.get("refiner") or {}).get("name"),
            "seconds": seconds, "repeats": repeats, **measure(model.components_.T, covariance),
            "spcakit_cpev": float(model.result_.metrics["cpev"]), "loadings": model.components_.T}  # fmt: skip


# -- scikit-learn's SparsePCA (in a child process, under the time limit) ----------------------------------------------
def tune_sklearn(x: np.ndarray, r: int, k: int, budget_s: float, max_fits: int = 24) -> dict[str, Any]:
    r"""Geometric bisection of ``alpha`` until the mean nonzeros per component is ``k``; the fit closest to it.

    scikit-learn's components solve lasso problems :math:`\min_v \tfrac12\|x_j - Uv\|^2 + \alpha\|v\|_1` per
    variable j, with unit columns of U: variable j enters no component once :math:`\alpha \ge \|x_j\|`, i.e.
    :math:`\sqrt{n-1}` for standardised data. The search starts from the sparse end (dense fits are the slow ones:
    minutes on the gene data), at 0.9 times that, lowers ``alpha`` by factors 0.9, 0.81, 0.66, ... (each the square of
    the one before) until there are too many nonzeros, then bisects geometrically.
    """
    from sklearn.decomposition import SparsePCA
    from sklearn.exceptions import ConvergenceWarning

    fits: list[dict[str, Any]] = []
    start = time.perf_counter()

    def run(alpha: float) -> float:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            began = time.perf_counter()
            model = SparsePCA(n_components=r, alpha=alpha, random_state=SEED).fit(x)
            seconds = time.perf_counter() - began
        v = model.components_.T
        mean = float(np.count_nonzero(v, axis=0).mean())
        fits.append({"alpha": alpha, "seconds": seconds, "mean": mean, "loadings": v, "n_iter": int(model.n_iter_)})
        return mean

    def time_left() -> bool:
        spent = time.perf_counter() - start
        return spent + max(f["seconds"] for f in fits) < budget_s

    high = float(np.linalg.norm(x, axis=0).max())  # every component zero from here on (not fitted)
    low = None  # alpha with too many nonzeros; high: alpha with too few
    alpha, stop, factor = 0.9 * high, "fit limit", 0.9
    while len(fits) < max_fits:
        mean = run(alpha)
        if mean == k:
            stop = "exact"
            break
        if not time_left():
            stop = "time limit"
            break
        if mean > k:
            low = alpha
        else:
            high = alpha
        if low is None:
            factor *= factor
            alpha = high * factor
        else:
            alpha = float(np.sqrt(low * high))
            if high / low < 1 + 1e-6:
                stop = "bracket closed"
                break
    best = min(fits, key=lambda f: (abs(f["mean"] - k), f["mean"]))
    return {"alpha": best["alpha"], "seconds": best["seconds"], "n_iter": best["n_iter"], "loadings": best["loadings"],
            "tuning_fits": len(fits), "tuning_seconds": time.perf_counter() - start,
            "tuning_stop": stop, "cut_short": stop == "time limit",
            "tried": [{"alpha": f["alpha"], "mean_nonzeros": f["mean"]} for f in fits]}  # fmt: skip


def _child_sklearn(arguments: list[str]) -> int:
    data, r, k, budget, out = arguments  # BLAS threads: set in the environment by the parent (_child_env)
    report = tune_sklearn(np.load(data), int(r), int(k), float(budget))
    np.save(out, report.pop("loadings"))
    print(json.dumps(report))
    return 0


def _child_env(blas_threads: int | None) -> dict[str, str]:
    env = dict(os.environ)
    if blas_threads is not None:
        env.update({name: str(blas_threads) for name in timing.BLAS_THREAD_VARIABLES})
    return env


def run_sklearn(case: dict[str, Any], covariance: Any, timeout: float, blas_threads: int | None) -> list[dict[str, Any]]:
    row: dict[str, Any] = {"label": "sklearn SparsePCA", "kind": "peer", "peer": "sklearn"}
    with tempfile.TemporaryDirectory() as tmp:
        data, out = Path(tmp) / "x.npy", Path(tmp) / "v.npy"
        np.save(data, case["x"])
        command = [sys.executable, str(Path(__file__).resolve()), "--child-sklearn", str(data), str(case["r"]),
                   str(case["k"]), str(timeout * 0.9), str(out)]  # fmt: skip
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                                  env=_child_env(blas_threads), cwd=Path(__file__).parent, check=False)  # fmt: skip
        except subprocess.TimeoutExpired:
            return [{**row, "status": "timeout", "message": f"no fit within {timeout:.0f} s"}]
        if done.returncode != 0:
            return [{**row, "status": "error", "message": (done.stderr.strip().splitlines() or ["no message"])[-1]}]
        report = json.loads(done.stdout.strip().splitlines()[-1])
        loadings = np.load(out)
    return [{**row, "status": "ok", **report, **measure(loadings, covariance), "loadings": loadings}]


# -- R peers ------------------------------------------------------------------------------------------------------
R_SCRIPT = r"""
args <- commandArgs(trailingOnly = TRUE)
lib <- args[1]; peer <- args[2]; data <- args[3]
n <- as.integer(args[4]); p <- as.integer(args[5]); r <- as.integer(args[6]); k <- as.integer(args[7])
seeds <- as.integer(strsplit(args[8], ",")[[1]]); budget <- as.numeric(args[9]); out <- args[10]
if (nzchar(lib)) .libPaths(c(lib, .libPaths()))
started <- proc.time()[["elapsed"]]
con <- file(data, "rb"); x <- matrix(readBin(con, "double", n * p, size = 8, endian = "little"), n, p); close(con)
# one fit: its loadings to <out>/<label>.bin (p x r, column-major), then a line "label seconds param" to <out>/fits.txt
save_fit <- function(label, loadings, seconds, param) {
  v <- matrix(0, p, r); v[, seq_len(ncol(loadings))] <- loadings
  con <- file(file.path(out, paste0(label, ".bin")), "wb"); writeBin(as.double(v), con, size = 8, endian = "little"); close(con)
  cat(label, seconds, param, "\n", file = file.path(out, "fits.txt"), append = TRUE)
}
left <- function() budget - (proc.time()[["elapsed"]] - started)
if (peer == "nsprcomp" || peer == "nsprcomp-nneg") {
  suppressPackageStartupMessages(library(nsprcomp))
  nneg <- peer == "nsprcomp-nneg"
  for (s in seeds) {
    set.seed(s)
    t <- system.time(fit <- nsprcomp(x, ncomp = r, k = k, nneg = nneg, center = TRUE, scale. = FALSE))[["elapsed"]]
    save_fit(paste0("seed", s), fit$rotation, t, s)
  }
} else if (peer == "pma") {
  suppressPackageStartupMessages(library(PMA))
  spc <- function(s) SPC(x, sumabsv = s, K = r, orth = TRUE, trace = FALSE, center = TRUE, compute.pve = FALSE)
  low <- 1; high <- sqrt(p); s <- (low + high) / 2
  best <- NULL; tried <- 0; slowest <- 0
  for (i in 1:30) {
    t <- system.time(fit <- spc(s))[["elapsed"]]; tried <- tried + 1; slowest <- max(slowest, t)
    m <- mean(colSums(fit$v != 0))
    cat("try", s, m, "\n", file = file.path(out, "tries.txt"), append = TRUE)
    if (is.null(best) || abs(m - k) < abs(best$m - k) || (abs(m - k) == abs(best$m - k) && m < best$m)) best <- list(s = s, m = m)
    if (m == k || left() < 3 * slowest) break
    if (m > k) high <- s else low <- s
    if (high - low < 1e-9 * high) break
    s <- (low + high) / 2
  }
  t <- system.time(fit <- spc(best$s))[["elapsed"]]
  save_fit("final", fit$v, t, paste(best$s, tried))
} else if (peer == "elasticnet") {
  suppressPackageStartupMessages(library(elasticnet))
  if (n >= p) {
    t <- system.time(fit <- spca(crossprod(x) / (n - 1), K = r, para = rep(k, r), type = "Gram", sparse = "varnum"))[["elapsed"]]
    save_fit("gram", fit$loadings, t, "Gram")
  } else {
    t <- system.time(fit <- spca(x, K = r, para = rep(k, r), type = "predictor", sparse = "varnum"))[["elapsed"]]
    save_fit("predictor", fit$loadings, t, "predictor")
  }
} else if (peer == "mspca") {
  suppressPackageStartupMessages(library(msPCA))
  set.seed(1)
  t <- system.time({
    C <- crossprod(x) / (n - 1)
    fit <- mspca(C, r, rep(k, r), verbose = FALSE, checkPSD = FALSE)
  })[["elapsed"]]
  save_fit("orthogonal", fit$x_best, t, fit$feasibility_violation)
}
"""

R_INFO = r"""
args <- commandArgs(trailingOnly = TRUE)
if (nzchar(args[1])) .libPaths(c(args[1], .libPaths()))
si <- sessionInfo()
cat("R", paste(R.version$major, R.version$minor, sep = "."), "\n")
cat("BLAS", if (is.null(si$BLAS)) "?" else si$BLAS, "\n")
cat("LAPACK", if (is.null(si$LAPACK)) "?" else si$LAPACK, "\n")
for (p in c("nsprcomp", "PMA", "elasticnet", "lars", "msPCA")) {
  v <- tryCatch(as.character(packageVersion(p)), error = function(e) "absent")
  cat("package", p, v, "\n")
}
"""


def r_setup(r_lib: Path) -> dict[str, Any]:
    """Where R is, its version, BLAS and the peers' package versions (``available``: False with a reason)."""
    rscript = shutil.which("Rscript")
    if rscript is None:
        return {"available": False, "reason": "Rscript is not on PATH"}
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "info.R"
        script.write_text(R_INFO)
        done = subprocess.run([rscript, str(script), str(r_lib.resolve()) if r_lib.exists() else ""],
                              capture_output=True, text=True, check=False, timeout=120)  # fmt: skip
    if done.returncode != 0:
        return {"available": False, "reason": f"Rscript failed: {done.stderr.strip()[-300:]}"}
    info: dict[str, Any] = {"available": True, "rscript": rscript, "lib": str(r_lib), "packages": {}}
    for line in done.stdout.splitlines():
        fields = line.split()
        if fields[0] == "package":
            info["packages"][fields[1]] = fields[2]
        elif len(fields) >= 2:
            info[fields[0].lower()] = fields[1]
    return info


def run_r_peer(peer: str, case: dict[str, Any], covariance: Any, r_info: dict[str, Any], seeds: int,
               timeout: float, blas_threads: int | None) -> list[dict[str, Any]]:  # fmt: skip
    """Run one R peer on the case: its rows (nsprcomp: the seed-1 run and the best of the seeds)."""
    labels = {"nsprcomp": "nsprcomp", "pma": "PMA SPC", "elasticnet": "elasticnet spca", "nsprcomp-nneg": "nsprcomp nneg",
              "mspca": "msPCA"}
    base = {"kind": "peer", "peer": peer}
    missing = [p for p in R_PACKAGES[peer] if r_info["packages"].get(p, "absent") == "absent"]
    if missing:
        return [{**base, "label": labels[peer], "status": "skipped", "message": f"R package(s) {', '.join(missing)} absent"}]
    x = case["x"]
    n, p = x.shape
    with tempfile.TemporaryDirectory() as tmp:
        script, data, out = Path(tmp) / "peer.R", Path(tmp) / "x.bin", Path(tmp) / "out"
        out.mkdir()
        script.write_text(R_SCRIPT)
        np.ascontiguousarray(x.T, dtype="<f8").tofile(data)  # column-major, as R's matrix() reads it
        command = [r_info["rscript"], str(script), str(Path(r_info["lib"]).resolve()), peer, str(data), str(n), str(p),
                   str(case["r"]), str(case["k"]), ",".join(str(s) for s in range(1, seeds + 1)), str(timeout * 0.9),
                   str(out)]  # fmt: skip
        status, message = "ok", None
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                                  env=_child_env(blas_threads), check=False)  # fmt: skip
            if done.returncode != 0:
                status, message = "error", done.stderr.strip()[-400:]
        except subprocess.TimeoutExpired:
            status, message = "timeout", f"not finished within {timeout:.0f} s"
        fits = []
        fits_file = out / "fits.txt"
        for line in fits_file.read_text().splitlines() if fits_file.exists() else []:
            label, seconds, *param = line.split()
            loadings = np.fromfile(out / f"{label}.bin", dtype="<f8").reshape(case["r"], p).T
            fits.append({"fit": label, "seconds": float(seconds), "param": param, "loadings": loadings})
        tries = (out / "tries.txt").read_text().splitlines() if (out / "tries.txt").exists() else []
    if not fits:
        return [{**base, "label": labels[peer], "status": status, "message": message}]
    if peer in ("nsprcomp", "nsprcomp-nneg"):
        runs = [{**f, **measure(f["loadings"], covariance), "seed": int(f["param"][0])} for f in fits]
        first = runs[0]
        best = max(runs, key=lambda f: f["cpev"])
        single = {**base, "label": f"{labels[peer]} seed {first['seed']}", "status": "ok", **_public(first)}
        done_seeds = [f["seed"] for f in runs]
        best_row = {**base, "label": f"{labels[peer]} best of {seeds}", "status": "ok", "runs_done": len(runs),
                    **_public(best), "seeds": done_seeds, "cpev_by_seed": [f["cpev"] for f in runs],
                    "total_seconds": sum(f["seconds"] for f in runs)}  # fmt: skip
        if message:
            best_row["message"] = f"{status} after {len(runs)} of {seeds} seeds: {message}"
        return [single, best_row]
    fit = fits[-1]
    row = {**base, "label": labels[peer], "status": "ok", **_public(fit), **measure(fit["loadings"], covariance)}
    if peer == "mspca":  # its own criterion: FVE at its violation of orthogonality
        row.update(redundancy_of(fit["loadings"], covariance), its_violation=float(fit["param"][0]))
    elif peer == "pma":
        row["sumabsv"], row["tuning_fits"] = float(fit["param"][0]), int(fit["param"][1])
        row["tried"] = [{"sumabsv": float(t.split()[1]), "mean_nonzeros": float(t.split()[2])} for t in tries]
    else:
        row["type"] = fit["param"][0]
    return [row]


def _public(fit: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in fit.items() if key not in ("fit", "param")}


# -- the run -------------------------------------------------------------------------------------------------------
def run_case(case: dict[str, Any], methods: list[str], peers: list[str], r_info: dict[str, Any], seeds: int,
             peer_timeout: float, blas_threads: int | None, keep_loadings: bool = False,
             nonnegative: bool = False) -> dict[str, Any]:  # fmt: skip
    x = case["x"]
    covariance = covariance_of(x)
    entry: dict[str, Any] = {"n": x.shape[0], "p": x.shape[1], "p_loaded": x.shape[1] + case["dropped_constant"],
                             "dropped_constant": case["dropped_constant"], "r": case["r"], "k": case["k"],
                             "source": case["source"], "standardised": True,
                             "pca_cpev": pca_cpev(covariance, case["r"]), "rows": []}  # fmt: skip
    if case["name"] == "pitprops":
        raw = case["raw"]  # before standardising: the exact data matrix itself
        entry["pitprops_check"] = {"max_abs_mean": float(np.abs(raw.mean(axis=0)).max()),
                                   "max_covariance_error": float(np.abs(np.cov(raw, rowvar=False) - pitprops_correlation()).max()),
                                   "max_standardised_covariance_error":
                                       float(np.abs(np.cov(x, rowvar=False) - pitprops_correlation()).max())}  # fmt: skip
    rows = entry["rows"]

    def add(new: list[dict[str, Any]]) -> None:
        for row in new:
            if row.get("status") == "ok" and abs(row["nnz_mean"] - case["k"]) > max(1.0, 0.1 * case["k"]):
                row["status"] = "off-target"  # its tuning did not reach k nonzeros per loading: no comparison
                row["message"] = f"{row['nnz_mean']:.1f} nonzeros per loading on average, not {case['k']}"
            rows.append(row)
            if "cpev" in row:
                print(f"  {case['name']}: {row['label']}: CPEV {row['cpev']:.4f}, nonzeros max {row['nnz_max']} "
                      f"mean {row['nnz_mean']:.1f}, {row['seconds']:.3f} s", file=sys.stderr, flush=True)  # fmt: skip
            else:
                print(f"  {case['name']}: {row['label']}: {row['status']} ({row.get('message')})", file=sys.stderr, flush=True)

    with timing.limit_blas_threads(blas_threads):
        for method in methods:
            add([run_spcakit(case, method, covariance)])
        add([run_estimator(case, covariance, nonnegative)])
    for peer in peers:
        if peer == "sklearn":
            add(run_sklearn(case, covariance, peer_timeout, blas_threads))
        elif r_info.get("available"):
            add(run_r_peer(peer, case, covariance, r_info, seeds, peer_timeout, blas_threads))
    for row in rows:
        if row.get("loadings") is not None:  # exactly non-negative (the non-negative panel's rows must be)
            row["min_loading"] = float(np.min(row["loadings"]))
    if not keep_loadings:
        for row in rows:
            row.pop("loadings", None)
    return entry


def fmt_cpev(value: float) -> str:
    """A CPEV to 4 significant digits (0.5687, 0.006012): the gene data's are below 0.01."""
    return f"{value:#.4g}"


def leaders(report: dict[str, Any]) -> str:
    """Per data set: the best spcakit candidate, the best peer and nsprcomp's best run, at most k nonzeros each."""
    out = ["**Leaders** (rows with at most k nonzeros in every loading; the differences relative, in % of the "
           "other's CPEV):", "",
           "| data | best spcakit | best peer | nsprcomp best of seeds | spcakit − nsprcomp | spcakit − best peer |",
           "|---|---|---|---|---|---|"]  # fmt: skip
    for name, case in report["cases"].items():
        fair = [r for r in case["rows"] if r["status"] == "ok" and r["nnz_max"] <= case["k"]]
        ours = max((r for r in fair if r["kind"] in ("spcakit", "estimator")), key=lambda r: r["cpev"], default=None)
        peer = max((r for r in fair if r["kind"] == "peer"), key=lambda r: r["cpev"], default=None)
        nsp = next((r for r in fair if r["label"].startswith("nsprcomp best")), None)

        def show(row: dict[str, Any] | None) -> str:
            return f"{row['label']} {fmt_cpev(row['cpev'])}" if row else "–"

        def gap(other: dict[str, Any] | None) -> str:
            return f"{100 * (ours['cpev'] / other['cpev'] - 1):+.1f} %" if ours and other else "–"

        out.append(f"| {name} | {show(ours)} | {show(peer)} | {show(nsp)} | {gap(nsp)} | {gap(peer)} |")
    return "\n".join(out)


def markdown(report: dict[str, Any]) -> str:
    """The ``docs/benchmarks.md`` section of a report: what ran, on what, and the tables."""
    env, cfg, r_info = report["environment"], report["config"], report["r"]
    blas = ", ".join(f"{b['internal_api']} {b['version']} ({b['num_threads']} thread{'s' * (b['num_threads'] != 1)})"
                     for b in env.get("blas") or [] if b.get("internal_api") in ("openblas", "mkl", "blis"))  # fmt: skip
    if r_info.get("available"):
        packages = ", ".join(f"{p} {v}" for p, v in r_info["packages"].items())
        r_line = f"R {r_info.get('r')} (BLAS `{r_info.get('blas')}`), packages {packages}"
    else:
        r_line = f"R peers not run: {r_info.get('reason')}"
    check = report["cases"].get("pitprops", {}).get("pitprops_check")
    pitprops_note = (f": largest entry of its sample covariance minus the matrix {check['max_covariance_error']:.1e}, "
                     f"largest column mean {check['max_abs_mean']:.1e}") if check else ""  # fmt: skip
    git = env.get("git")
    git_note = ""
    if git:
        git_note = f" on commit {git['commit'][:10]}"
        if git["changed"]:
            git_note += f" with {len(git['changed'])} changed file(s) in spcakit/core/plugins/specs ({', '.join(git['changed'])})"
    out = [
        "## Quality at a given sparsity (benchmarks/quality.py)",
        "",
        "<!-- Generated from benchmarks/results/quality.json by `python benchmarks/quality.py --render "
        "benchmarks/results/quality.json`: re-run the benchmark and replace this section rather than edit it. -->",
        "",
        "The explained variance (CPEV) that spcakit's methods and other sparse-PCA implementations reach with the "
        "same number k of nonzero variables per loading. Every data set is standardised (columns with mean 0 and "
        "standard deviation 1, `ddof = 1`, after its exactly constant columns are dropped), so all methods work "
        "on its correlation matrix C. For every method CPEV is computed the same way, in Python, from the "
        "loadings V it returns: tr(QᵀCQ)/tr(C) with Q an orthonormal basis of span(V) "
        "(`spcakit.analysis.metrics.cpev`, the function behind `spcakit.fit(...).metrics[\"cpev\"]`).",
        "",
        "What ran:",
        "",
        "* spcakit: `spcakit.fit(X, method, r=r, k=k, metrics=[\"cpev\"], **kwargs)` for each entry "
        "(`method:key=value`), and the scikit-learn estimator with its defaults, `spcakit.SparsePCA(n_components=r, "
        "k=k, standardize=True)` on the unstandardised data (the method its defaults chose is named in the row); "
        "time: the fastest of up to 3 wall-clock runs of the call.",
        "* scikit-learn: `sklearn.decomposition.SparsePCA(n_components=r, alpha=α, random_state=0)` (its default "
        "LARS solver), α tuned from the sparse end: every component is zero once α ≥ max_j ‖x_j‖ = √(n−1), so α starts "
        "at 0.9 times that and falls by factors 0.9, 0.81, 0.66, … until a fit has too many nonzeros, then geometric "
        "bisection until the mean number of nonzeros per component is k or as close as the tuning got (the fits it "
        "took are given); time: the fit at the chosen α. A peer whose mean is more than max(1, k/10) away from k is "
        "marked off-target and not compared.",
        "* nsprcomp: `nsprcomp(X, ncomp=r, k=k, center=TRUE, scale.=FALSE)` (EM with soft thresholding to at most "
        "k nonzeros, generalised deflation, its default `nrestart=5` random restarts per component) after "
        f"`set.seed(s)`: the run with s = 1, and the best by CPEV of s = 1..{cfg['seeds']} (time: that run's).",
        "* PMA: `SPC(X, sumabsv=s, K=r, orth=TRUE, center=TRUE)`; one `sumabsv` for all loadings, tuned by "
        "bisection in [1, √p] until the mean number of nonzeros per loading is k or as close as it got; time: a "
        "fresh fit at the chosen value.",
        "* elasticnet: `spca(C, K=r, para=rep(k, r), type=\"Gram\", sparse=\"varnum\")` with C the correlation matrix "
        "when n ≥ p, `spca(X, ..., type=\"predictor\")` when n < p; exactly k nonzeros per loading.",
        "* msPCA (Cory-Wright & Pauphilet): `mspca(C, r, rep(k, r), checkPSD=FALSE)` with C the correlation matrix "
        "(formed in the timed call), `set.seed(1)`, its other options at their defaults (orthogonal loadings to about "
        "1e-4); its notes give its own criterion, FVE = Σ_t u_tᵀCu_t / tr C at its violation of orthogonality "
        "Σ_{s<t} |u_sᵀu_t|, as do those of spcakit's `auto:constraint=orthogonal` (FVE = CPEV for orthogonal loadings).",
        "",
        "R times are measured by R around the call only (`system.time`), Python times around the call. Each peer "
        f"had {cfg['peer_timeout']:.0f} s for all its fits and tuning (\"timeout\": nothing finished in time). The "
        "Pitprops correlation matrix is given to every method as a data matrix of n = 180 rows whose sample "
        "correlation is exactly that matrix (centred orthonormal columns times √(n−1) C^½"
        f"{pitprops_note}). The Golub data are the raw intensities (no thresholding or "
        "logarithm), the image patches are standardised like the rest.",
        "",
        f"Machine: {env['nproc']} CPUs ({env['processor']}), {env['platform']}; Python {env['python']}, NumPy "
        f"{env['numpy']}, SciPy {env['scipy']}, scikit-learn {env.get('sklearn')}, spcakit {env['spcakit']}; "
        f"Python BLAS {blas or 'unknown'}; {r_line}. BLAS threads "
        f"{'limited to ' + str(report['blas_threads']) if report['blas_threads'] else 'not limited'}. "
        f"Run {env['date_utc']}{git_note}, {report['total_seconds'] / 60:.1f} minutes in all"
        f"{' (quick mode)' if report['quick'] else ''}.",
        "",
        "Re-run: `python benchmarks/quality.py --markdown section.md` (with the R peers installed by "
        "`bash ../shared/tools/install-r-peers.sh MIRROR_DIR .r-lib`); this section is generated from the report by "
        "`python benchmarks/quality.py --render benchmarks/results/quality.json`.",
        "",
    ]
    cases = report["cases"]
    names = list(cases)
    labels: list[str] = []
    for case in cases.values():
        for row in case["rows"]:
            if row["label"] not in labels and not row["label"].startswith("SparsePCA()"):
                labels.append(row["label"])
    out.append("**CPEV** (bold: the best, or within 0.05 % of it, among rows with at most k nonzeros per loading; "
               "* = more than k nonzeros in some loading, ° = fewer than k on average):")
    out.append("")
    out.append("| method | " + " | ".join(f"{n} ({cases[n]['n']}×{cases[n]['p']}, r={cases[n]['r']}, k={cases[n]['k']})"
                                           for n in names) + " |")  # fmt: skip
    out.append("|---|" + "---|" * len(names))
    out.append("| PCA (dense, the ceiling) | " + " | ".join(fmt_cpev(cases[n]["pca_cpev"]) for n in names) + " |")

    def cell(case: dict[str, Any], row: dict[str, Any] | None, best: float) -> str:
        if row is None:
            return ""
        if row["status"] == "off-target":
            return f"off-target ({row['nnz_mean']:.0f} nz)"
        if row["status"] != "ok":
            return row["status"]
        mark = "*" if row["nnz_max"] > case["k"] else ("°" if row["nnz_mean"] < case["k"] - 1e-9 else "")
        text = f"{fmt_cpev(row['cpev'])}{mark}"
        return f"**{text}**" if row["cpev"] >= best * (1 - 5e-4) else text

    best = {n: max((r["cpev"] for r in cases[n]["rows"] if r["status"] == "ok" and r["nnz_max"] <= cases[n]["k"]),
                   default=0.0) for n in names}  # fmt: skip
    estimator = {n: next((r for r in cases[n]["rows"] if r["label"].startswith("SparsePCA()")), None) for n in names}
    out.append("| `spcakit.SparsePCA()` defaults | " + " | ".join(cell(cases[n], estimator[n], best[n]) for n in names) + " |")
    for label in labels:
        row_of = {n: next((r for r in cases[n]["rows"] if r["label"] == label), None) for n in names}
        out.append(f"| {label} | " + " | ".join(cell(cases[n], row_of[n], best[n]) for n in names) + " |")
    out.append("")
    out.append(leaders(report))
    out.append("")
    out.append("**Details** (nonzeros per loading: max / mean; time in seconds; the tuned parameter):")
    out.append("")
    out.append("| data | method | CPEV | nonzeros max / mean | time (s) | notes |")
    out.append("|---|---|---|---|---|---|")
    for name in names:
        case = cases[name]
        for row in case["rows"]:
            if "cpev" not in row:
                out.append(f"| {name} | {row['label']} | {row['status']} | | | {row.get('message') or ''} |")
                continue
            notes = [f"**{row['status']}**: {row['message']}"] if row["status"] != "ok" else []
            if row["label"].startswith("SparsePCA()"):
                notes.append(f"default method {row['method']}")
            if "swaps" in row:
                notes.append(f"{row['swaps']} swap{'s' * (row['swaps'] != 1)}")
            if "alpha" in row:
                notes.append(f"α = {row['alpha']:.4g}, {row['tuning_fits']} fits to tune"
                             + (" (cut short by the time limit)" if row.get("cut_short") else ""))
            if "sumabsv" in row:
                notes.append(f"sumabsv = {row['sumabsv']:.4g}, {row['tuning_fits']} fits to tune")
            if "cpev_by_seed" in row:
                notes.append(f"seed {row['seed']}; all {', '.join(fmt_cpev(c) for c in row['cpev_by_seed'])}; "
                             f"{row['total_seconds']:.2f} s for all")
                if row.get("message") and row["status"] == "ok":
                    notes.append(row["message"])
            if "type" in row:
                notes.append(f"type {row['type']}")
            if "fve" in row:
                notes.append(f"FVE {fmt_cpev(row['fve'])} at orthogonality violation {row['orthogonality_violation']:.1e}"
                             + (f" (its own: {row['its_violation']:.1e})" if "its_violation" in row else ""))
            out.append(f"| {name} | {row['label']} | {fmt_cpev(row['cpev'])} | {row['nnz_max']} / {row['nnz_mean']:.1f} | "
                       f"{row['seconds']:.3g} | {'; '.join(notes)} |")  # fmt: skip
    if report.get("skipped"):
        out.append("")
        out.append(f"Skipped ({len(report['skipped'])}): " + "; ".join(f"{s['case']}: {s['reason']}" for s in report["skipped"]) + ".")
    dropped = [f"{n} {c['dropped_constant']}" for n, c in cases.items() if c["dropped_constant"]]
    if dropped:
        out.append("")
        out.append("Constant columns dropped before standardising: " + ", ".join(dropped) + ".")
    return "\n".join(out)


def markdown_nonnegative(report: dict[str, Any]) -> str:
    """The ``docs/benchmarks.md`` section of a ``--nonnegative`` report: spcakit with ``nonnegative=True`` against
    nsprcomp with ``nneg = TRUE``, at the same k, the CPEV computed alike for all."""
    env, cfg, r_info = report["environment"], report["config"], report["r"]
    if r_info.get("available"):
        r_line = f"R {r_info.get('r')}, nsprcomp {r_info['packages'].get('nsprcomp')}"
    else:
        r_line = f"R peers not run: {r_info.get('reason')}"
    git = env.get("git")
    git_note = f" on commit {git['commit'][:10]}" + (" with changes to spcakit/core/plugins/specs not yet committed"
                                                    if git["changed"] else "") if git else ""  # fmt: skip
    cases = report["cases"]
    seeds = cfg["seeds"]
    negative = [f"{name}: {row['label']}" for name, case in cases.items() for row in case["rows"]
                if row.get("min_loading", 0.0) < 0]  # fmt: skip
    signs = ("Every loading of every row is non-negative (its smallest entry, checked, is 0)." if not negative
             else f"Rows with a negative entry in some loading: {'; '.join(negative)}.")
    load = env.get("loadavg_end")
    load_note = f" (load average {load[0]:.1f} at the end: times are only indicative)" if load else ""
    out = [
        "## Non-negative loadings against nsprcomp",
        "",
        "<!-- Generated from benchmarks/results/quality_nonnegative.json by `python benchmarks/quality.py --render "
        "benchmarks/results/quality_nonnegative.json`: re-run the benchmark and replace this section rather than edit it. -->",
        "",
        "The CPEV of non-negative sparse loadings at the same k, on the data sets of the quality panel above "
        "(standardised the same way, the CPEV computed the same way for every row). spcakit: "
        "`spcakit.fit(X, method, r=r, k=k, nonnegative=True)`; `auto` is `fit`'s default method (TPower, SPCArt and "
        "restarted TPower, each non-negative, the largest CPEV kept; greedy selection cannot keep its loadings "
        "non-negative and is skipped, and so are the swaps), and `SparsePCA(nonnegative=True)` runs it from the raw "
        "data. nsprcomp: `nsprcomp(X, ncomp=r, k=k, nneg=TRUE, center=TRUE, scale.=FALSE)` (its default `nrestart=5` "
        f"random restarts per component) after `set.seed(s)`, the run with s = 1 and the best by CPEV of s = 1..{seeds}. "
        f"{signs}",
        "",
        f"Machine: {env['nproc']} CPUs ({env['processor']}), {env['platform']}; Python {env['python']}, NumPy "
        f"{env['numpy']}, spcakit {env['spcakit']}; {r_line}. BLAS threads "
        f"{'limited to ' + str(report['blas_threads']) if report['blas_threads'] else 'not limited'}. Run "
        f"{env['date_utc']}{git_note}, {report['total_seconds'] / 60:.1f} minutes in all{load_note}.",
        "",
        "Re-run: `python benchmarks/quality.py --nonnegative --markdown section.md`.",
        "",
    ]
    labels: list[str] = []
    for case in cases.values():
        for row in case["rows"]:
            label = "SparsePCA(nonnegative=True)" if row["kind"] == "estimator" else row["label"]
            if label not in labels:
                labels.append(label)

    def heading(label: str) -> str:
        name = label.removesuffix(":nonnegative=true")
        return f"{name} (the default)" if label == NONNEGATIVE_METHODS[0] else name

    out.append("**CPEV** (5 significant digits; * = more than k nonzeros in some loading; the last column: spcakit's "
               f"default against nsprcomp's best of {seeds} seeds, relative):")
    out.append("")
    out.append("| data (n×p, r, k) | " + " | ".join(map(heading, labels)) + " | default − nsprcomp best |")
    out.append("|---|" + "---|" * (len(labels) + 1))
    for name, case in cases.items():
        by_label = {("SparsePCA(nonnegative=True)" if r["kind"] == "estimator" else r["label"]): r for r in case["rows"]}

        def cell(row: dict[str, Any] | None, case: dict[str, Any] = case) -> str:
            if row is None:
                return ""
            if "cpev" not in row:
                return row["status"]
            negative = " (negative entries!)" if row.get("min_loading", 0.0) < 0 else ""
            return f"{row['cpev']:#.5g}{'*' if row['nnz_max'] > case['k'] else ''}{negative}"

        default = by_label.get(NONNEGATIVE_METHODS[0])
        best = by_label.get(f"nsprcomp nneg best of {seeds}")
        gap = (f"{100 * (default['cpev'] / best['cpev'] - 1):+.3f} %"
               if default and best and "cpev" in default and "cpev" in best else "–")  # fmt: skip
        out.append(f"| {name} ({case['n']}×{case['p']}, {case['r']}, {case['k']}) | "
                   + " | ".join(cell(by_label.get(label)) for label in labels) + f" | {gap} |")
    out.append("")
    out.append("**Times** (seconds; spcakit: the fastest of up to 3 runs; nsprcomp: each seed's run as R timed it, "
               "the best one's and all together):")
    out.append("")
    out.append("| data | " + " | ".join(map(heading, labels)) + " |")
    out.append("|---|" + "---|" * len(labels))
    for name, case in cases.items():
        by_label = {("SparsePCA(nonnegative=True)" if r["kind"] == "estimator" else r["label"]): r for r in case["rows"]}
        cells = []
        for label in labels:
            row = by_label.get(label)
            if row is None or "seconds" not in row:
                cells.append("")
            elif "total_seconds" in row:
                cells.append(f"{row['seconds']:.3g} ({row['total_seconds']:.3g} all)")
            else:
                cells.append(f"{row['seconds']:.3g}")
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    if report.get("skipped"):
        out.append("")
        out.append(f"Skipped ({len(report['skipped'])}): " + "; ".join(f"{s['case']}: {s['reason']}" for s in report["skipped"]) + ".")
    return "\n".join(out)


def git_state() -> dict[str, Any] | None:
    """The commit measured, and the files of spcakit, its plugins and specs changed from it (None outside git)."""
    repo = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True)
        changed = subprocess.run(["git", "status", "--porcelain", "--", "spcakit", "plugins", "specs"], cwd=repo,
                                 capture_output=True, text=True, check=True)  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return None
    return {"commit": commit.stdout.strip(), "changed": [line[3:] for line in changed.stdout.splitlines()]}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child-sklearn"]:
        return _child_sklearn(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", help=f"comma-separated, of {', '.join(CASES)} (default: all; quick: {', '.join(QUICK_CASES)})")
    parser.add_argument("--methods", help="comma-separated spcakit candidates, each NAME or NAME:key=value:... "
                        f"(default: {','.join(DEFAULT_METHODS)}; with --nonnegative: {','.join(NONNEGATIVE_METHODS)})")
    parser.add_argument("--peers", help=f"comma-separated, of {','.join(PEERS + NONNEGATIVE_PEERS)} ('' for none; default: "
                        f"{','.join(PEERS)}; with --nonnegative: {','.join(NONNEGATIVE_PEERS)})")
    parser.add_argument("--nonnegative", action="store_true",
                        help="the non-negative panel: spcakit with nonnegative=True against nsprcomp(nneg=TRUE) "
                        f"(report: {NONNEGATIVE_RESULTS.relative_to(RESULTS.parents[1])} unless --out)")
    parser.add_argument("--seeds", type=int, help="nsprcomp seeds 1..N (default 5; quick 2)")
    parser.add_argument("--peer-timeout", type=float, default=300.0, help="seconds per peer and case (default %(default)s)")
    parser.add_argument("--r-lib", type=Path, default=Path(os.environ.get("SPCAKIT_R_LIB", R_LIB)),
                        help="R library holding the peers (default: $SPCAKIT_R_LIB or the repository's .r-lib)")
    parser.add_argument("--quick", action="store_true", help="the small data sets only, 2 nsprcomp seeds")
    parser.add_argument("--out", type=Path, help=f"JSON report (default {RESULTS}; --nonnegative: {NONNEGATIVE_RESULTS})")
    parser.add_argument("--markdown", type=Path, help="also write the markdown section to this file")
    parser.add_argument("--render", type=Path, help="run nothing: render this JSON report as markdown")
    parser.add_argument("--blas-threads", type=int, default=1, help="BLAS threads (default 1; 0: no limit)")
    args = parser.parse_args(argv)

    if args.render:
        rendered = json.loads(args.render.read_text())
        text = markdown_nonnegative(rendered) if rendered.get("nonnegative") else markdown(rendered)
        print(text)
        if args.markdown:
            args.markdown.write_text(text + "\n")
        return 0
    cases = [c.strip() for c in (args.cases or ",".join(QUICK_CASES if args.quick else CASES)).split(",") if c.strip()]
    unknown = sorted(set(cases) - set(CASES))
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; valid: {', '.join(CASES)}")
    default_peers = NONNEGATIVE_PEERS if args.nonnegative else PEERS
    peers = [p.strip() for p in (",".join(default_peers) if args.peers is None else args.peers).split(",") if p.strip()]
    valid = PEERS + NONNEGATIVE_PEERS
    if set(peers) - set(valid):
        parser.error(f"unknown peer(s) {', '.join(sorted(set(peers) - set(valid)))}; valid: {', '.join(valid)}")
    default_methods = NONNEGATIVE_METHODS if args.nonnegative else DEFAULT_METHODS
    methods = [m.strip() for m in (args.methods or ",".join(default_methods)).split(",") if m.strip()]
    out_path = args.out or (NONNEGATIVE_RESULTS if args.nonnegative else RESULTS)
    for m in methods:
        parse_method(m)
    seeds = args.seeds or (2 if args.quick else 5)
    blas_threads = args.blas_threads or None

    r_info: dict[str, Any] = {"available": False, "reason": "no R peer asked for"}
    if set(peers) & set(R_PACKAGES):
        r_info = r_setup(args.r_lib)
        if not r_info["available"]:
            print(f"R peers skipped: {r_info['reason']}", file=sys.stderr)
        else:
            absent = [p for p, v in r_info["packages"].items() if v == "absent"]
            if absent:
                print(f"R packages absent from {args.r_lib}: {', '.join(absent)} (their peers are skipped; install "
                      "them with ../shared/tools/install-r-peers.sh MIRROR_DIR .r-lib)", file=sys.stderr)  # fmt: skip
    import sklearn

    with timing.limit_blas_threads(blas_threads):  # the BLAS recorded as it runs
        environment = timing.environment(sklearn=sklearn.__version__)
    environment["git"] = git_state()
    report: dict[str, Any] = {"quick": args.quick, "blas_threads": blas_threads, "nonnegative": args.nonnegative,
                              "config": {"cases": cases, "methods": methods, "peers": peers, "seeds": seeds,
                                         "peer_timeout": args.peer_timeout},
                              "environment": environment, "r": r_info, "cases": {}, "skipped": []}  # fmt: skip
    start = time.perf_counter()
    for name in cases:
        case = load_case(name)
        if case is None:
            reason = f"{SHARED_DATA / CASES[name]['file']} is absent"
            print(f"{name}: skipped ({reason})", file=sys.stderr)
            report["skipped"].append({"case": name, "reason": reason})
            continue
        print(f"{name}: n={case['x'].shape[0]} p={case['x'].shape[1]} r={case['r']} k={case['k']} "
              f"({case['dropped_constant']} constant columns dropped)", file=sys.stderr, flush=True)  # fmt: skip
        report["cases"][name] = run_case(case, methods, peers, r_info, seeds, args.peer_timeout, blas_threads,
                                         nonnegative=args.nonnegative)  # fmt: skip
    report["total_seconds"] = time.perf_counter() - start
    report["environment"]["loadavg_end"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    if report["skipped"]:
        print(f"{len(report['skipped'])} case(s) skipped: data absent", file=sys.stderr)
    text = markdown_nonnegative(report) if args.nonnegative else markdown(report)
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(report, indent=1, default=float) + "\n")
    print(f"\nwrote {out_path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
