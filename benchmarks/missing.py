"""Missing values: spcakit's EM imputation against R's PMA ``SPC`` on planted supports (issue 28, item 1).

``python benchmarks/missing.py [--out benchmarks/results/missing.json] [--markdown FILE]`` (about a minute).

The data: ``planted_support(n=100, p=100, sizes=[8, 8], strengths=[2.0, 1.6], seed=1, shuffle=False)`` from
:mod:`spcakit.inputs.datasets` (two weak factors, each on its own block of 8 variables: columns 0-7 and 8-15,
plus unit noise), with 10 % and 20 % of the entries missing completely at random (three masks each, seeds
0-2). Each fit finds ``r = 2`` loadings with ``k = 8`` nonzeros each:

* ``spcakit default``: ``spcakit.fit(X, r=2, k=8)`` - the default method (``auto``) with ``missing="em"``
  (the default ``"auto"`` without its warning: EM on the sparse low-rank model, :mod:`spcakit.workflows.imputation`);
* ``spcakit tpower``: ``spcakit.fit(X, "tpower", r=2, k=8)``, the same EM with a single fast method;
* ``PMA SPC``: ``SPC(X, sumabsv=s, K=2, orth=TRUE, center=TRUE)`` on the same data with ``NA`` at the missing
  entries (PMA's own handling: its updates skip the missing entries). ``X`` is passed with each column
  centred by its observed mean (PMA's ``center`` subtracts the grand mean of the matrix, not column means).
  One ``sumabsv`` for both loadings, found by bisection on :math:`[1, \\sqrt p]` (up to 30 fits) so that the
  mean number of nonzeros per loading is ``k`` (as in ``benchmarks/quality.py``); the value reached is
  reported.

Measured per fit: the true positives (planted variables among a loading's nonzeros, each loading matched
to the planted block it overlaps most, summed: 16 at best), the nonzeros, and the CPEV of the loadings on the
*complete* data (:math:`\\operatorname{tr}(Q^\\top C Q)/\\operatorname{tr} C`, :math:`Q` an orthonormal basis of
their span, :math:`C` the complete data's covariance), beside the same fits on the complete data. R is run
through ``Rscript`` with the packages in ``--r-lib`` (default: the repository's ``.r-lib``); without R or PMA
its rows say why and the rest runs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

import spcakit
import timing
from quality import R_LIB, _child_env, r_setup
from spcakit.inputs.datasets import planted_support

RESULTS = Path(__file__).resolve().parent / "results" / "missing.json"
N, P, SIZES, STRENGTHS, R, K = 100, 100, (8, 8), (2.0, 1.6), 2, 8
FRACTIONS = (0.10, 0.20)
MASKS = (0, 1, 2)

R_SPC = r"""
args <- commandArgs(trailingOnly = TRUE)
lib <- args[1]; data <- args[2]; n <- as.integer(args[3]); p <- as.integer(args[4]); r <- as.integer(args[5])
k <- as.numeric(args[6]); out <- args[7]
if (nzchar(lib)) .libPaths(c(lib, .libPaths()))
suppressPackageStartupMessages(library(PMA))
con <- file(data, "rb"); x <- matrix(readBin(con, "double", n * p, size = 8, endian = "little"), n, p); close(con)
x[is.nan(x)] <- NA
spc <- function(s) SPC(x, sumabsv = s, K = r, orth = TRUE, trace = FALSE, center = TRUE, compute.pve = FALSE)
low <- 1; high <- sqrt(p); s <- (low + high) / 2; best <- NULL; tried <- 0
for (i in 1:30) {
  fit <- spc(s); tried <- tried + 1
  m <- mean(colSums(fit$v != 0))
  if (is.null(best) || abs(m - k) < abs(best$m - k) || (abs(m - k) == abs(best$m - k) && m < best$m)) best <- list(s = s, m = m)
  if (m == k) break
  if (m > k) high <- s else low <- s
  if (high - low < 1e-9 * high) break
  s <- (low + high) / 2
}
t <- system.time(fit <- spc(best$s))[["elapsed"]]
con <- file(out, "wb"); writeBin(as.double(fit$v), con, size = 8, endian = "little"); close(con)
cat(best$s, tried, t, "\n")
"""


def cpev_on(covariance: np.ndarray, loadings: np.ndarray) -> float:
    """CPEV of ``loadings`` on a covariance: the variance of the projection onto their span over the total."""
    q, _ = np.linalg.qr(loadings)
    return float(np.trace(q.T @ covariance @ q) / np.trace(covariance))


def true_positives(loadings: np.ndarray) -> int:
    """Planted variables found: each loading matched to the planted block it overlaps most."""
    blocks, start = [], 0
    for size in SIZES:
        blocks.append(set(range(start, start + size)))
        start += size
    found = 0
    for j in range(loadings.shape[1]):
        support = set(np.flatnonzero(loadings[:, j]).tolist())
        found += max(len(support & block) for block in blocks)
    return found


def measure(loadings: np.ndarray, covariance: np.ndarray) -> dict[str, Any]:
    return {"true_positives": true_positives(loadings), "nonzeros": [int(c) for c in np.count_nonzero(loadings, axis=0)],
            "cpev_complete": cpev_on(covariance, loadings)}  # fmt: skip


def run_spcakit(x: np.ndarray, method: str | None, covariance: np.ndarray) -> dict[str, Any]:
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = spcakit.fit(x, method, R, k=K, missing="em")
    row = {"seconds": time.perf_counter() - start, **measure(result.loadings, covariance)}
    if result.input is not None and result.input.missing is not None:
        row.update(em_iterations=result.input.missing.iterations, em_converged=result.input.missing.converged)
    return row


def run_pma(x: np.ndarray, covariance: np.ndarray, r_info: dict[str, Any]) -> dict[str, Any]:
    if not r_info.get("available"):
        return {"status": "skipped", "message": r_info.get("reason")}
    if r_info["packages"].get("PMA", "absent") == "absent":
        return {"status": "skipped", "message": "R package PMA absent"}
    centred = x - np.nanmean(x, axis=0)
    with tempfile.TemporaryDirectory() as tmp:
        script, data, out = Path(tmp) / "spc.R", Path(tmp) / "x.bin", Path(tmp) / "v.bin"
        script.write_text(R_SPC)
        np.ascontiguousarray(centred.T, dtype="<f8").tofile(data)  # column-major; NaN read as NA
        start = time.perf_counter()
        done = subprocess.run([r_info["rscript"], str(script), str(Path(r_info["lib"]).resolve()), str(data), str(N),
                               str(P), str(R), str(K), str(out)], capture_output=True, text=True, timeout=300,
                              env=_child_env(1), check=False)  # fmt: skip
        seconds = time.perf_counter() - start
        if done.returncode != 0:
            return {"status": "error", "message": done.stderr.strip()[-400:]}
        loadings = np.fromfile(out, dtype="<f8").reshape(R, P).T
    sumabsv, tried, final = done.stdout.split()
    return {"status": "ok", "seconds_with_tuning": seconds, "seconds_final_fit": float(final), "sumabsv": float(sumabsv),
            "tuning_fits": int(tried), **measure(loadings, covariance)}  # fmt: skip


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--markdown", type=Path, default=None)
    parser.add_argument("--r-lib", type=Path, default=R_LIB)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    r_info = r_setup(args.r_lib)
    x = planted_support(N, P, list(SIZES), list(STRENGTHS), seed=1, shuffle=False).matrix
    covariance = np.cov(x, rowvar=False)
    runs: list[dict[str, Any]] = []
    with timing.limit_blas_threads(1):
        environment = timing.environment()  # the BLAS as the fits see it: one thread
        for fraction in (0.0, *FRACTIONS):
            for mask in MASKS if fraction else (None,):
                holes = x.copy()
                if fraction:
                    holes[np.random.default_rng(mask).random(x.shape) < fraction] = np.nan
                case = {"fraction": fraction, "mask": mask, "missing": float(np.isnan(holes).mean())}
                runs.append({**case, "fit": "spcakit default", **run_spcakit(holes, None, covariance)})
                runs.append({**case, "fit": "spcakit tpower", **run_spcakit(holes, "tpower", covariance)})
                runs.append({**case, "fit": "PMA SPC", **run_pma(holes, covariance, r_info)})
                print(json.dumps(runs[-3:])[:400], file=sys.stderr)
    report = {
        "benchmark": "missing", "data": f"planted_support(n={N}, p={P}, sizes={list(SIZES)}, strengths={list(STRENGTHS)}, "
        "seed=1, shuffle=False)", "r": R, "k": K, "planted": sum(SIZES), "runs": runs, "r_info": r_info,
        "environment": environment, "seconds": time.perf_counter() - started,
    }  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    text = markdown(report)
    print(text)
    if args.markdown is not None:
        args.markdown.write_text(text)
    return report


def markdown(report: dict[str, Any]) -> str:
    """The table of ``docs/benchmarks.md``'s section: per fraction and fit, the mean over the masks."""
    lines = [f"| missing | fit | true positives (of {report['planted']}) | nonzeros per loading | CPEV on complete data | EM iterations | seconds |",
             "|---|---|---|---|---|---|---|"]  # fmt: skip
    for fraction in (0.0, *FRACTIONS):
        for fit in ("spcakit default", "spcakit tpower", "PMA SPC"):
            rows = [r for r in report["runs"] if r["fraction"] == fraction and r["fit"] == fit and "true_positives" in r]
            if not rows:
                lines.append(f"| {fraction:.0%} | {fit} | skipped | | | | |")
                continue
            tp = ", ".join(str(r["true_positives"]) for r in rows)
            nz = ", ".join("/".join(map(str, r["nonzeros"])) for r in rows)
            cpev = ", ".join(f"{r['cpev_complete']:.4f}" for r in rows)
            its = ", ".join(str(r["em_iterations"]) for r in rows if "em_iterations" in r) or "-"
            secs = np.mean([r.get("seconds", r.get("seconds_with_tuning", 0.0)) for r in rows])
            lines.append(f"| {fraction:.0%} | {fit} | {tp} | {nz} | {cpev} | {its} | {secs:.2f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
