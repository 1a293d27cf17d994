"""The path plot's dashed bound: a true upper bound on what it is drawn over, at every level.

With r = 1 the bound is drawn on the CPEV itself; with r > 1 on the first loading's share of the variance
(drawn dotted beside the CPEV), since no per-loading bound covers the CPEV of several loadings. The bound is
also checked against the optimum itself (the exact method's first loading) and against brute force.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

import spcakit
from spcakit.core.errors import InvalidDataError, InvalidParameterError
from spcakit.inputs.datasets import pitprops
from spcakit.inputs.dense import Covariance

mpl = pytest.importorskip("matplotlib")
from spcakit import plotting

PITPROPS = "builtin:pitprops"


def _lines(figure) -> dict[str, object]:
    (ax,) = figure.axes
    return {line.get_label(): line for line in ax.get_lines()}


@pytest.mark.parametrize("method", ["exact", "spcart", "tpower"])
def test_with_one_loading_the_bound_is_drawn_on_the_cpev_and_never_below_it(method):
    found = spcakit.path(PITPROPS, method, r=1, k="1:13")
    assert all(len(level.bound) == 1 for level in found) and found.total_variance == pytest.approx(13.0)
    lines = _lines(found.plot())
    achieved, bound = lines[method], lines[f"{method}: bound"]
    assert bound.get_linestyle() == "--" and bound.get_color() == achieved.get_color()
    np.testing.assert_array_equal(bound.get_xdata(), achieved.get_xdata())
    assert np.all(np.asarray(bound.get_ydata()) >= np.asarray(achieved.get_ydata()))
    np.testing.assert_allclose(achieved.get_ydata(), found.column("cpev"))


@pytest.mark.parametrize("method", ["exact", "spcart"])
def test_with_several_loadings_the_bound_is_drawn_on_the_first_loadings_share(method):
    found = spcakit.path(PITPROPS, method, r=3, k="1:13")
    assert set(_lines(found.plot())) == {method, f"PCA ({found.ceiling:.4g})"}  # asked for only: it is not on the CPEV
    lines = _lines(found.plot(bound=True))
    assert {method, f"{method}: 1st loading", f"{method}: bound on 1st loading", f"PCA ({found.ceiling:.4g})"} == set(lines)
    first, bound = lines[f"{method}: 1st loading"], lines[f"{method}: bound on 1st loading"]
    assert first.get_linestyle() == ":" and bound.get_linestyle() == "--"
    assert np.all(np.asarray(bound.get_ydata()) >= np.asarray(first.get_ydata()))
    trace = np.trace(pitprops().matrix)
    np.testing.assert_allclose(first.get_ydata(), [lv.additional_variance[0] / trace for lv in found])
    np.testing.assert_allclose(bound.get_ydata(), [lv.bound[0] / trace for lv in found])


def test_the_bound_is_above_the_best_loading_of_its_cardinality():
    # the exact method's first loading is the optimum at each k: a heuristic's bound must still be above it
    optimum, _ = spcakit.path(PITPROPS, "exact", r=1, k="1:13").first_loading()
    share, bound = spcakit.path(PITPROPS, "spcart", r=2, k="1:13").first_loading()
    assert np.all(bound >= optimum) and np.all(bound >= share)


def test_the_bound_is_above_brute_force_on_a_small_covariance():
    x = np.random.default_rng(4).standard_normal((30, 7))
    c = np.cov(x, rowvar=False)
    found = spcakit.path(Covariance(c), "tpower", r=1, k="1:7")
    _, bound = found.first_loading()
    for level, upper in zip(found, bound):
        k = int(level.pattern[0])
        best = max(np.linalg.eigvalsh(c[np.ix_(s, s)])[-1] for s in map(list, itertools.combinations(range(7), k)))
        assert upper * np.trace(c) >= best


def test_the_levels_records_carry_the_bounds():
    found = spcakit.path(PITPROPS, "spcart", r=2, k="2,4")
    rows = found.to_rows()
    assert rows[0]["bound_1"] == found.levels[0].bound[0] and "bound_2" in rows[1]
    document = json.loads(json.dumps(found.to_dict()))
    assert document["total_variance"] == found.total_variance
    assert document["levels"][1]["bound"] == list(found.levels[1].bound)
    assert all(b >= a for level in found for a, b in zip(level.additional_variance[:1], level.bound[:1]))


def test_plot_can_leave_the_bound_out():
    found = spcakit.path(PITPROPS, "spcart", r=1, k="1:3")
    assert set(_lines(found.plot(bound=False))) == {"spcart", f"PCA ({found.ceiling:.4g})"}


def test_plot_tradeoff_draws_a_bound_and_what_it_bounds():
    figure = plotting.plot_tradeoff([1, 2, 3], [0.5, 0.7, 0.8], label="m", bound=[0.3, 0.4, np.nan], bounded=[0.2, 0.4, 0.5],
                                    bounded_label="first", ceiling=0.9)  # fmt: skip
    lines = _lines(figure)
    assert list(lines) == ["m", "first", "m: bound", "PCA (0.9)"]
    assert [t.get_text() for t in figure.axes[0].get_legend().get_texts()] == ["m", "first", "m: bound", "PCA (0.9)"]


@pytest.mark.parametrize(
    ("call", "error", "fragment"),
    [
        (lambda: plotting.plot_tradeoff([1, 2], [0.5, 0.6], bound=[0.6, 0.5]), InvalidDataError, "below the curve"),
        (lambda: plotting.plot_tradeoff([1, 2], [0.5, 0.6], bound=[0.6, 0.5], bounded=[0.1, 0.55]), InvalidDataError,
         "below bounded"),
        (lambda: plotting.plot_tradeoff([1, 2], [0.5, 0.6], bound=[0.6]), InvalidDataError, "same length"),
        (lambda: plotting.plot_tradeoff([1, 2], [0.5, 0.6], bounded=[0.6, 0.7]), InvalidParameterError, "give bound="),
        (lambda: plotting.plot_tradeoff({"a": ([1], [0.1]), "b": ([1], [0.2])}, bound=[0.3]), InvalidParameterError,
         "one curve"),
    ],
)  # fmt: skip
def test_plot_tradeoff_refuses_a_bound_below_what_it_bounds(call, error, fragment):
    with pytest.raises(error, match=fragment):
        call()


def test_path_plot_writes_the_figure(cli, tmp_path: Path):
    figure = tmp_path / "path.svg"
    outcome = cli.invoke("path", "exact", "-d", PITPROPS, "-r", "1", "-k", "1:6", "--plot", str(figure))
    assert outcome.exit_code == 0, outcome.output
    assert f"wrote the path plot to {figure}" in outcome.output and figure.read_bytes().startswith(b"<?xml")
    refused = cli.invoke("path", "exact", "-d", PITPROPS, "-k", "1:3", "--plot", str(tmp_path / "p.jpg"))
    assert refused.exit_code == 2 and "must end in .png, .svg or .pdf" in refused.output
    same = cli.invoke("path", "exact", "-d", PITPROPS, "-k", "1:3", "--plot", str(figure), "--out", str(figure))
    assert same.exit_code == 2 and "--plot and --out name the same file" in same.output


def test_a_saved_one_loading_path_is_redrawn_with_its_bound(cli, tmp_path: Path):
    from spcakit import figures

    saved = tmp_path / "path.json"
    outcome = cli.invoke("path", "spcart", "-d", PITPROPS, "-r", "1", "-k", "1:6", "--json")
    assert outcome.exit_code == 0, outcome.output
    saved.write_text(outcome.stdout, encoding="utf-8")
    document = json.loads(outcome.stdout)
    lines = _lines(figures.figure_from_json("path", [saved]))
    achieved, bound = np.asarray(lines["spcart"].get_ydata()), np.asarray(lines["spcart: bound"].get_ydata())
    assert np.all(bound >= achieved)
    np.testing.assert_allclose(bound, [lv["bound"][0] / document["total_variance"] for lv in document["levels"]])
    del document["total_variance"]  # a path saved before paths recorded bounds: drawn without one
    saved.write_text(json.dumps(document), encoding="utf-8")
    assert "spcart: bound" not in _lines(figures.figure_from_json("path", [saved]))


@pytest.mark.parametrize("data", [PITPROPS, "random"])
def test_each_levels_bound_is_the_one_fit_reports(data):
    """A path level's ``bound`` is the certificate ``spcakit.fit`` reports for the same loadings (the first t loadings
    together, the first loading's search included): on Pitprops (p = 13, searched) and on data of 80 variables."""
    if data == "random":
        data = np.random.default_rng(3).standard_normal((120, 80))
    found = spcakit.path(data, "tpower", r=2, k="3:5")
    for level in found.levels:
        direct = spcakit.fit(data, "tpower", r=2, k=level.level)
        np.testing.assert_allclose(level.bound, direct.metrics["bound"], rtol=1e-9)
