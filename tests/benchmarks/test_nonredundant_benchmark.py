"""``benchmarks/nonredundant.py``'s table: msPCA's seconds are R's own timing of the call, as spcakit's are the fit's
(neither counts its interpreter's start-up)."""

from __future__ import annotations

import sys

import pytest


def _measured(fve: float, seconds: float) -> dict[str, object]:
    return {"wall_s": seconds, "gap": 0.01, "fve": fve, "cpev": fve, "orthogonality_violation": 0.0,
            "correlation_violation": 0.0, "nonzeros": [4, 4]}


def test_the_table_times_mspca_by_its_r_call_without_r_start_up(benchmark_module):
    nonredundant = benchmark_module("nonredundant")
    peer = {**_measured(0.7, 1.9), "r_seconds": 1.25, "its_violation": 1e-4, "version": "0.5.1", "peak_mb": 60.0}
    row = {"case": "pitprops", "p": 13, "r": 2, "k": 4, "auto": _measured(0.8, 0.5),
           "orthogonal": {"auto": _measured(0.75, 0.5), "mspca": peer},
           "uncorrelated": {"auto": {"refused": "k < r"}, "mspca": "Rscript is not on PATH"}}
    lines = nonredundant.markdown([row]).splitlines()
    orthogonal = next(line for line in lines if "| orthogonal |" in line).split("|")
    assert orthogonal[4].strip() == "1.25"  # r_seconds, not the 1.9 s the subprocess took with R's start-up
    uncorrelated = next(line for line in lines if "| uncorrelated |" in line)
    assert "skipped" in uncorrelated and "refused" in uncorrelated


@pytest.mark.parametrize("argv, says", [(["--out", "/tmp/x.json"], "--out takes a name"),
                                       (["--out", "nonredundant.json"], "--out takes a name"),
                                       (["--cases", "mtcars,nosuchset"], "unknown case 'nosuchset'")])
def test_a_bad_out_or_case_is_refused_before_any_fit(benchmark_module, monkeypatch, capsys, argv, says):
    nonredundant = benchmark_module("nonredundant")
    fitted = []
    monkeypatch.setattr(nonredundant, "run_spcakit", lambda *args: fitted.append(args))
    monkeypatch.setattr(sys, "argv", ["nonredundant.py", *argv])
    with pytest.raises(SystemExit) as stopped:
        nonredundant.main()
    assert stopped.value.code == 2 and says in capsys.readouterr().err and not fitted
