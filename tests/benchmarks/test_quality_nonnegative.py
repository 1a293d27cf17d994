"""Smoke test of ``benchmarks/quality.py --nonnegative`` (the non-negative panel): the Python side, and the R peer
where R and nsprcomp are installed."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("sklearn")

import spcakit


@pytest.fixture(scope="module")
def quality(benchmark_module):
    return benchmark_module("quality")


def test_quick_nonnegative_panel_on_wine(quality, tmp_path):
    out, md = tmp_path / "nonnegative.json", tmp_path / "nonnegative.md"
    assert quality.main(["--nonnegative", "--quick", "--cases", "wine", "--peers", "", "--out", str(out),
                         "--markdown", str(md)]) == 0  # fmt: skip
    report = json.loads(out.read_text())
    assert report["nonnegative"] is True and report["config"]["methods"] == list(quality.NONNEGATIVE_METHODS)
    case = report["cases"]["wine"]
    k, r = case["k"], case["r"]
    x = quality.load_case("wine")["x"]
    rows = {row["label"]: row for row in case["rows"]}
    for label in quality.NONNEGATIVE_METHODS:
        row = rows[label]
        assert row["status"] == "ok" and row["min_loading"] == 0.0  # non-negative, and sparse
        method, kwargs = quality.parse_method(label)
        assert kwargs == {"nonnegative": True}
        expected = spcakit.fit(x, method, r=r, k=k, standardize=False, metrics=["cpev"], **kwargs).metrics["cpev"]
        assert abs(row["cpev"] - expected) < 1e-10
        assert max(row["nonzeros"]) <= k
    estimator = next(row for row in case["rows"] if row["kind"] == "estimator")
    assert estimator["label"].startswith("SparsePCA(nonnegative=True)") and estimator["min_loading"] == 0.0
    # the default is the best of its members, each alone
    members = [rows[label]["cpev"] for label in quality.NONNEGATIVE_METHODS[1:]]
    assert rows[quality.NONNEGATIVE_METHODS[0]]["cpev"] >= max(members) - 1e-12
    text = md.read_text()
    assert text.startswith("## Non-negative loadings against nsprcomp")
    assert "| wine (178×13, 3, 4) |" in text
    # rendering the saved report gives the same section
    assert quality.main(["--render", str(out), "--markdown", str(tmp_path / "again.md")]) == 0
    assert (tmp_path / "again.md").read_text() == text


def test_the_r_peer_returns_non_negative_loadings(quality):
    # needs R and nsprcomp (../shared/tools/install-r-peers.sh): skipped without them
    info = quality.r_setup(quality.R_LIB)
    if not info["available"] or info["packages"].get("nsprcomp", "absent") == "absent":
        pytest.skip(f"R peer nsprcomp not available: {info.get('reason', 'package absent')}")
    case = quality.load_case("wine")
    rows = quality.run_r_peer("nsprcomp-nneg", case, quality.covariance_of(case["x"]), info, 1, 120, 1)
    assert [row["label"] for row in rows] == ["nsprcomp nneg seed 1", "nsprcomp nneg best of 1"]
    loadings = rows[0]["loadings"]
    assert rows[0]["status"] == "ok" and np.all(loadings >= 0) and np.any(loadings > 0)
    assert max(rows[0]["nonzeros"]) <= case["k"]
