"""``benchmarks/exact.py`` in a reduced form (a 2-second limit, no colon): Pitprops certified at its published
optima, the digits searches stopped by the limit with a bound above their value."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("sklearn")

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def test_the_exact_benchmark_certifies_pitprops_and_bounds_digits(tmp_path):
    sys.path.insert(0, str(BENCHMARKS))
    try:
        exact = importlib.import_module("exact")
    finally:
        sys.path.remove(str(BENCHMARKS))
    out = tmp_path / "exact.json"
    assert exact.main(["--time-limit", "2", "--no-colon", "--out", str(out)]) == 0
    rows = {row["case"]: row for row in json.loads(out.read_text())["cases"]}
    for k, optimum in exact.PITPROPS_OPTIMA.items():
        row = rows[f"pitprops k={k}"]
        assert row["optimal"] and abs(row["value"] - optimum) < 1e-6 and row["gap"] <= 1e-6 and row["seconds"] < 2
    for k in (10, 20):
        row = rows[f"digits (64 pixels) k={k}"]
        assert row["bound"] >= row["value"] > 0 and (row["optimal"] or row["stopped"] == "time limit")
