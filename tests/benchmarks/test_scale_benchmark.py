"""``benchmarks/scale.py`` in a reduced form (``--scale 0.0001``, two cases, one BLAS thread): the defaults (fit,
estimator, command line) are measured beside the tuned figure and the reference, each with a positive time and
its ratios. Timings are not checked: these data are far too small for the benchmark's targets. The ``--timeout`` is
a guard against a hang only (10 minutes; every run here takes under 30 s on a loaded 2-core machine), so that no
outcome depends on how fast the machine is."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("sklearn")



def test_settings_shrink_every_data_set_and_keep_the_full_size_at_scale_one(benchmark_module):
    scale = benchmark_module("scale")
    assert scale.settings(1.0) == scale.SETTINGS
    tiny = scale.settings(0.0001)
    for case, setting in tiny.items():
        full = scale.SETTINGS[case]
        assert 4 * setting["r"] <= setting["n"] <= full["n"] and 4 * setting["r"] <= setting["p"] <= full["p"]
        assert 1 <= setting["k"] <= setting["p"]
    assert tiny["wide"]["k"] == 100 and scale.scaled_k(15_000, tiny["wide"]["p"], 100_000) == 150
    with pytest.raises(ValueError, match="scale"):
        scale.settings(0)


def test_the_scale_benchmark_reports_defaults_tuned_and_reference_with_ratios(tmp_path, benchmark_module):
    scale = benchmark_module("scale")
    out = tmp_path / "scale.json"
    argv = ["--scale", "0.0001", "--cases", "tall,wide", "--blas-threads", "1", "--timeout", "600", "--out", str(out)]
    assert scale.main(argv) == 0
    report = json.loads(out.read_text())
    assert report["scale"] == 0.0001 and report["blas_threads"] == 1 and len(report["runs"]) == 1
    for case in ("tall", "wide"):
        entry = report["cases"][case]
        assert entry["spcakit"]["seconds"] > 0 and entry["reference"]["seconds"] > 0 and entry["time_ratio"] > 0
        labels = {"default-fit", "default-estimator", "default-cli"}
        if case == "wide":
            labels |= {"default-fit tpower k=100", "default-fit spcart k=15000", "default-fit tpower k=15000"}
            assert entry["variants"]["default-fit spcart k=15000"]["k"] == 150  # 15 % of p = 1000, as at full size
        assert set(entry["variants"]) == labels
        for label, variant in entry["variants"].items():
            assert "timed_out_after" not in variant, (case, label)
            assert variant["seconds"] > 0 and variant["time_ratio"] > 0 and variant["rss_ratio"] > 0
        assert "interpreter start" in entry["variants"]["default-cli"]["includes"]
        assert entry["variants"]["default-fit"]["cpev"] > 0 and entry["variants"]["default-fit"]["iterations"] >= 1
    rows = {(row["case"], row["variant"]) for row in report["summary"]}
    for variant in ("tuned", "default fit", "default estimator", "default cli", "reference"):
        assert ("tall", variant) in rows and ("wide", variant) in rows
    assert all(row["seconds"] > 0 and row["threads"] == "1" for row in report["summary"])


def test_blas_threads_takes_a_list(benchmark_module):
    scale = benchmark_module("scale")
    assert scale._thread_counts("1,0") == [1, None]
    with pytest.raises(Exception, match="blas-threads"):
        scale._thread_counts("one")
