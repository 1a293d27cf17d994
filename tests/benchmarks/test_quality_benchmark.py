"""Smoke test of ``benchmarks/quality.py``'s Python-only parts (spcakit and scikit-learn; never R)."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("sklearn")

import spcakit



@pytest.fixture(scope="module")
def quality(benchmark_module):
    return benchmark_module("quality")


def test_quick_wine_spcakit_and_sklearn(quality, tmp_path):
    out, md = tmp_path / "quality.json", tmp_path / "quality.md"
    assert quality.main(["--quick", "--cases", "wine", "--peers", "sklearn", "--out", str(out), "--markdown", str(md)]) == 0
    report = json.loads(out.read_text())
    case = report["cases"]["wine"]
    k, r = case["k"], case["r"]
    x = quality.load_case("wine")["x"]
    rows = {row["label"]: row for row in case["rows"]}
    assert set(quality.DEFAULT_METHODS) <= set(rows)
    for label in quality.DEFAULT_METHODS:
        row = rows[label]
        assert row["status"] == "ok"
        method, kwargs = quality.parse_method(label)
        expected = spcakit.fit(x, method, r=r, k=k, standardize=False, metrics=["cpev"], **kwargs).metrics["cpev"]
        assert abs(row["cpev"] - expected) < 1e-10  # the benchmark's CPEV is spcakit's
        assert abs(row["cpev"] - row["spcakit_cpev"]) < 1e-10
        if kwargs.get("constraint"):  # orthogonality may set a shared variable to 0 in one loading
            assert max(row["nonzeros"]) <= k and row["orthogonality_violation"] <= 1e-10
            assert abs(row["fve"] - row["cpev"]) < 1e-10  # orthogonal loadings: msPCA's criterion is CPEV
        else:
            assert row["nonzeros"] == [k] * r
    estimator = next(row for row in case["rows"] if row["kind"] == "estimator")
    assert estimator["status"] == "ok" and abs(estimator["cpev"] - estimator["spcakit_cpev"]) < 1e-10
    assert estimator["nonzeros"] == [k] * r
    sklearn_row = rows["sklearn SparsePCA"]
    assert sklearn_row["status"] == "ok" and abs(sklearn_row["nnz_mean"] - k) <= 1 and 0 < sklearn_row["cpev"] < case["pca_cpev"]
    assert report["r"]["available"] is False  # no R peer asked for: R is never looked for
    text = md.read_text()
    assert text.startswith("## Quality at a given sparsity (benchmarks/quality.py)") and "| spcart |" in text


def test_cpev_is_the_thin_qr_definition(quality):
    rng = np.random.default_rng(0)
    x = quality.standardise(rng.standard_normal((40, 12)) @ rng.standard_normal((12, 12)))[0]
    v = rng.standard_normal((12, 3)) * (rng.random((12, 3)) < 0.5)
    c = np.cov(x, rowvar=False)
    q, _ = np.linalg.qr(v)
    row = quality.measure(v, quality.covariance_of(x))
    assert abs(row["cpev"] - np.trace(q.T @ c @ q) / np.trace(c)) < 1e-12
    assert row["nonzeros"] == [int(n) for n in np.count_nonzero(v, axis=0)]


def test_exact_data_has_the_correlation_matrix(quality):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((6, 6))
    d = np.sqrt(np.diag(a @ a.T))
    correlation = (a @ a.T) / np.outer(d, d)
    x = quality.exact_data(correlation, 30)
    assert np.abs(x.mean(axis=0)).max() < 1e-12
    np.testing.assert_allclose(np.cov(x, rowvar=False), correlation, atol=1e-12)


def test_method_entries(quality):
    assert quality.parse_method("tpower:refiner=swap:deflator=schur") == ("tpower", {"refiner": "swap", "deflator": "schur"})
    assert quality.parse_method("spca-sp:m=30:exact=true") == ("spca-sp", {"m": 30, "exact": True})
    with pytest.raises(ValueError):
        quality.parse_method("spcart:swap")


def test_mspca_runs_as_a_peer_with_its_own_criterion(quality):
    # needs R and msPCA (../shared/tools/install-r-peers.sh): skipped without them
    info = quality.r_setup(quality.R_LIB)
    if not info["available"] or info["packages"].get("msPCA", "absent") == "absent":
        pytest.skip(f"R peer msPCA not available: {info.get('reason', 'package absent')}")
    case = quality.load_case("wine")
    covariance = quality.covariance_of(case["x"])
    (row,) = quality.run_r_peer("mspca", case, covariance, info, 1, 120, 1)
    assert row["status"] == "ok" and row["label"] == "msPCA"
    assert max(row["nonzeros"]) <= case["k"]
    u = row["loadings"] / np.linalg.norm(row["loadings"], axis=0)
    c = np.cov(case["x"], rowvar=False)
    assert abs(row["fve"] - np.trace(u.T @ c @ u) / np.trace(c)) < 1e-10
    gram = u.T @ u
    assert abs(row["orthogonality_violation"] - np.abs(gram[np.triu_indices(case["r"], 1)]).sum()) < 1e-12
    assert 0 < row["its_violation"] <= 1e-3  # msPCA's own report: orthogonal to about 1e-4, not to rounding
