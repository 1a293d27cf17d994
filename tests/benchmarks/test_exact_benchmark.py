"""``benchmarks/exact.py`` in a reduced form (a 2-second limit, no colon): Pitprops certified at its published
optima, the digits searches stopped by the limit with a bound above their value."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("sklearn")


def test_the_exact_benchmark_certifies_pitprops_and_bounds_digits(tmp_path, benchmark_module):
    exact = benchmark_module("exact")
    out = tmp_path / "exact.json"
    assert exact.main(["--time-limit", "2", "--no-colon", "--out", str(out)]) == 0
    rows = {row["case"]: row for row in json.loads(out.read_text())["cases"]}
    for k, optimum in exact.PITPROPS_OPTIMA.items():
        row = rows[f"pitprops k={k}"]
        assert row["optimal"] and abs(row["value"] - optimum) < 1e-6 and row["gap"] <= 1e-6 and row["seconds"] < 2
    for k in (10, 20):
        row = rows[f"digits (64 pixels) k={k}"]
        assert row["bound"] >= row["value"] > 0 and (row["optimal"] or row["stopped"] == "time limit")
