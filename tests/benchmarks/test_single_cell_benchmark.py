"""``benchmarks/single_cell.py`` in a reduced form: 1500 cells of 200 genes, sparse_pca's defaults beside scanpy's
pca, each in a child process, with their time, peak memory and recovery of the planted programs."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("scanpy")


@pytest.mark.slow
def test_the_single_cell_benchmark_runs_both_sides(tmp_path, benchmark_module):
    bench = benchmark_module("single_cell")
    out = tmp_path / "single_cell.json"
    assert bench.main(["--cells", "1500", "--genes", "200", "--cases", "spcakit,scanpy", "--out", str(out)]) == 0
    rows = {row["case"]: row for row in json.loads(out.read_text())["rows"]}
    assert set(rows) == {"spcakit", "scanpy"}
    for row in rows.values():
        assert row["seconds"] > 0 and row["peak_rss_mib"] >= row["rss_before_mib"] > 0 and len(row["recall"]) == 6
    spca = rows["spcakit"]
    assert spca["k"] == 15 and spca["n_components"] == 10  # the defaults: ceil(sqrt(200)) genes per component
    # 15 genes per component, fewer than any program has: each matched support lies inside its program
    assert min(spca["precision"]) >= 0.9, spca
