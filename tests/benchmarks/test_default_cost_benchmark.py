"""``benchmarks/default_cost.py`` in a reduced form (two small panel cases, one repeat, the grid search): the rows it
reports for the default beside its members, and the one-loading stop where the certificate proves the optimum."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("sklearn")


def test_the_default_cost_benchmark_reports_the_default_beside_its_members(tmp_path, benchmark_module):
    default_cost = benchmark_module("default_cost")
    out = tmp_path / "default_cost.json"
    argv = ["--sections", "panel,grid", "--cases", "pitprops,wine", "--repeats", "1", "--out", str(out)]
    assert default_cost.main(argv) == 0
    report = json.loads(out.read_text())
    assert report["grid"]["fits"] == 26 and report["grid"]["best_params"]["k"] in default_cost.GRID_K
    for case, r in (("pitprops", 6), ("wine", 3)):
        for loadings in (r, 1):
            rows = {row["method"]: row for row in report["panel"] if row["case"] == case and row["r"] == loadings}
            auto, every = rows["auto"], rows["auto, every member (stop_gap=none)"]
            members = max(rows[name]["cpev"] for name in default_cost.MEMBERS)
            # the default reaches every member alone, and the plan without its stop, to the stop's tolerance
            assert auto["cpev"] >= members * (1 - 1e-6) and auto["cpev"] >= every["cpev"] * (1 - 1e-6)
            assert rows["SparsePCA (every metric)"]["cpev"] == pytest.approx(auto["cpev"], rel=1e-12)
        # one loading of these data: the default search proves the optimum, the run stops certified, as exact finds
        assert rows["auto"]["certified"] and not rows["auto, every member (stop_gap=none)"]["certified"]
        assert rows["auto"]["cpev"] == pytest.approx(rows["exact (certifies)"]["cpev"], rel=1e-6)
    assert "| pitprops (6, 4) |" in default_cost.panel_table(report["panel"])


def test_the_plans_section_sets_the_default_beside_the_plan_the_tall_target_needs(tmp_path, benchmark_module):
    default_cost = benchmark_module("default_cost")
    out = tmp_path / "plans.json"
    argv = ["--sections", "plans", "--cases", "wine", "--tall-scale", "0.001", "--out", str(out)]
    assert default_cost.main(argv) == 0
    plans = json.loads(out.read_text())["plans"]
    assert [row["plan"] for row in plans if row["case"] == "tall"] == ["scikit-learn PCA(10)", "default", "tall plan"]
    for case in ("tall", "wine"):
        rows = {row["plan"]: row for row in plans if row["case"] == case}
        # the default runs every member of that plan and refines each, so it explains at least as much (ties aside)
        assert rows["default"]["cpev"] >= rows["tall plan"]["cpev"] * (1 - 1e-9)
