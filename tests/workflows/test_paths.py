"""spcakit.workflows.paths: the trade-off path over sparsity levels, sparsity targets, ``spcakit path`` and
``spcakit run --target-sparsity/--target-cpev``.

The ceiling is checked against NumPy's eigenvalues, never against the code under test; the
targets against a full cold scan of every ``k``.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import spcakit
from spcakit.inputs.datasets import pitprops, planted_support, zou_covariance
from spcakit.core.errors import InvalidParameterError
from spcakit.workflows.paths import (
    AUTO, CPEV_RTOL, MAX_AUTO_LEVELS, auto_levels, k_for_sparsity, parse_k_levels, parse_lam_levels, path,
    smallest_reaching, target_k,
)  # fmt: skip


#: SPCArt stops when its loadings change by less than 1% per iteration (the paper's rule), so each
#: level ends near, not at, its fixed point: on Pitprops (r = 6) its CPEV dips by 0.0035 from k = 7
#: to k = 8. A dip of up to 0.005 is that noise; with a tight stopping rule the curve is monotone
#: (test_spcart_path_is_monotone_when_converged).
SPCART_NOISE = 0.005
TIGHT_STOPPER = {"name": "any-of", "stoppers": [{"name": "relative-change", "tol": 1e-6}, {"name": "max-iterations", "n": 5000}]}


def pca_cpev(covariance: np.ndarray, r: int) -> float:
    """Dense PCA's CPEV for r loadings, from NumPy's eigenvalues."""
    values = np.linalg.eigvalsh(covariance)
    return float(np.sort(values)[::-1][:r].sum() / np.trace(covariance))


def spiked(n: int, p: int, sizes: list[int], strengths: list[float], seed: int) -> np.ndarray:
    """Data with planted sparse supports on the first variables (:func:`spcakit.datasets.planted_support`)."""
    return planted_support(n, p, sizes, strengths, seed, shuffle=False).matrix


def ok(cli, *args: Any) -> Any:
    result = cli.invoke(*args)
    assert result.exit_code == 0, f"exit {result.exit_code}\n{result.output}\n{result.exception!r}"
    return result


def refused(cli, *args: Any) -> str:
    result = cli.invoke(*args)
    assert result.exit_code == 2, f"exit {result.exit_code}\n{result.output}"
    assert result.stdout == ""
    return result.stderr


def smallest_k_by_scan(found: spcakit.SparsityPath, fraction: float) -> int:
    """The smallest k of a full path whose CPEV is at least fraction x PCA's (rounding allowed)."""
    return min(lv.level for lv in found if lv.cpev >= fraction * found.ceiling - CPEV_RTOL * found.ceiling)


# -- grids -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("given", "expected"),
    [("1:13", list(range(1, 14))), ("1:p", list(range(1, 14))), ("2:12:5", [2, 7, 12]), ("2,4,6", [2, 4, 6]),
     ("[6, 2]", [2, 6]), ([6, 2, 2], [2, 6]), (5, [5]), (np.array([3, 1]), [1, 3]), ("p", [13]), ("auto", AUTO),
     (" Auto ", AUTO), ([4.0], [4])],
)  # fmt: skip
def test_k_grids(given: Any, expected: Any) -> None:
    assert parse_k_levels(given, 13) == expected


@pytest.mark.parametrize(
    ("given", "fragment"),
    [("0:5", "k = 0 in the grid '0:5'"), ("a:b", "'a' is not an integer"), ("1:14", "k = 14"), ("5:2", "is empty"),
     ("1:3:0", "step must be a positive integer"), ("2,,3", "an empty entry"), ("1.5", "k = 1.5"), ([], "empty"),
     ([True], "k = True"), ("1:2:3:4", "FROM:TO"), ({"k": 1}, "grid of sparsity levels")],
)  # fmt: skip
def test_bad_k_grids_say_what_is_valid(given: Any, fragment: str) -> None:
    with pytest.raises(InvalidParameterError) as info:
        parse_k_levels(given, 13)
    assert fragment in str(info.value)
    assert "1:13" in str(info.value) or "[1, 13]" in str(info.value) or "1:p" in str(info.value)


def test_lam_grids_keep_their_order() -> None:
    assert parse_lam_levels("0.3, 0.2,0.1,0.2") == [0.3, 0.2, 0.1]
    assert parse_lam_levels([10, 5]) == [10, 5]
    for bad in ("x", [math.nan], [], "0.1,,0.2", [True]):
        with pytest.raises(InvalidParameterError):
            parse_lam_levels(bad)


def test_auto_levels() -> None:
    assert auto_levels(13) == list(range(1, 14))
    assert auto_levels(13, low=6) == list(range(6, 14))
    levels = auto_levels(1000)
    assert len(levels) == MAX_AUTO_LEVELS and levels[0] == 1 and levels[-1] == 1000
    assert all(b > a for a, b in zip(levels, levels[1:]))
    assert levels[:4] == [1, 2, 3, 4]  # the small k, where CPEV changes fastest, are all there
    ratios = np.diff(np.log(levels[10:]))  # log-spaced above the dense start
    assert ratios.max() < 1.5 * ratios.min()
    wide = auto_levels(500, low=5)
    assert wide[0] == 5 and wide[-1] == 500 and len(wide) == MAX_AUTO_LEVELS


@pytest.mark.parametrize(
    ("sparsity", "p", "k"),
    [(0.7, 13, 4), (0.3, 10, 7), (0.25, 10, 8), (0.35, 10, 7), (0.0, 13, 13), (0.95, 13, 1), (0.9, 100, 10)],
)
def test_sparsity_targets_round_to_the_nearest_k_halves_up(sparsity: float, p: int, k: int) -> None:
    # 0.25 x 10 leaves 7.5 nonzeros: a half goes to the denser k = 8; 0.35 x 10: 6.5 -> 7
    assert k_for_sparsity(sparsity, p) == k


@pytest.mark.parametrize("bad", [1.0, -0.1, True, "0.5", math.nan])
def test_sparsity_targets_out_of_range(bad: Any) -> None:
    with pytest.raises(InvalidParameterError, match=r"\[0, 1\)"):
        k_for_sparsity(bad, 13)


def test_a_sparsity_that_leaves_nothing_names_the_sparsest_level() -> None:
    with pytest.raises(InvalidParameterError) as info:
        k_for_sparsity(0.97, 13)
    assert "k = 1" in str(info.value) and "0.9231" in str(info.value)


# -- the path ----------------------------------------------------------------------------------------
def test_done_when_pitprops_spcart_path_csv(cli) -> None:
    """`spcakit path spcart -d builtin:pitprops -r 6 --k 1:13 --csv`: 13 rows, CPEV non-decreasing within
    SPCArt's noise, and the last row (k = p: no truncation) at PCA's CPEV."""
    result = ok(cli, "path", "spcart", "-d", "builtin:pitprops", "-r", 6, "--k", "1:13", "--csv")
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert len(rows) == 13
    assert [int(row["k"]) for row in rows] == list(range(1, 14))
    assert [int(row["nz"]) for row in rows] == [6 * k for k in range(1, 14)]  # k nonzeros in each of 6 loadings
    cpev = np.array([float(row["cpev"]) for row in rows])
    ceiling = pca_cpev(pitprops().matrix, 6)
    assert np.all(cpev <= ceiling + 1e-12)  # Ky Fan
    assert np.min(np.diff(cpev)) >= -SPCART_NOISE
    assert abs(cpev[-1] - ceiling) <= 1e-12
    assert abs(float(rows[-1]["cpev_ratio"]) - 1.0) <= 1e-12
    assert {"nor", "seconds", "iterations", "warm", "additional_variance_6"} <= set(rows[0])
    for row in rows:  # the additional variances of the loadings add up to the CPEV of their span (x tr C = 13)
        total = sum(float(row[f"additional_variance_{j}"]) for j in range(1, 7))
        assert abs(total / 13 - float(row["cpev"])) <= 1e-12


def test_spcart_path_is_monotone_when_converged() -> None:
    found = path("builtin:pitprops", "spcart", r=6, k="1:13", stopper=TIGHT_STOPPER)
    assert np.min(np.diff(found.column("cpev"))) >= -1e-9


def test_a_cold_level_is_fit_at_that_level() -> None:
    found = path("builtin:pitprops", "tpower", r=3, k=[2, 5, 9])
    assert found.warm_start is None and not any(lv.warm for lv in found)
    for level in found:
        alone = spcakit.fit("builtin:pitprops", "tpower", r=3, k=level.level)
        np.testing.assert_array_equal(level.result.loadings, alone.loadings)
        assert level.cpev == alone.metrics["cpev"] and level.nor == alone.metrics["nor"]


def test_the_ceiling_is_dense_pca() -> None:
    x = spiked(60, 12, [4, 3], [3.0, 2.0], seed=3)
    found = path(x, "st", r=2, k="1:p", standardize=True)
    correlation = np.corrcoef(x, rowvar=False)
    assert abs(found.ceiling - pca_cpev(correlation, 2)) <= 1e-12
    assert abs(found.ceiling - spcakit.fit(x, "pca", r=2, standardize=True).metrics["cpev"]) <= 1e-12
    assert abs(found.levels[-1].cpev - found.ceiling) <= 1e-12  # ST at k = p thresholds nothing


def test_auto_grid_stops_where_pca_is_reached() -> None:
    # the leading eigenvector of this covariance lives on its first 3 variables: k = 3 is PCA
    c = np.eye(8) * 0.5
    c[:3, :3] += 2.0
    found = path(spcakit.Covariance(c), "spcart", r=1)
    assert found.auto and [lv.level for lv in found] == [1, 2, 3]
    assert found.stopped_early and "k = 3" in found.stop_note
    assert abs(found.levels[-1].cpev - pca_cpev(c, 1)) <= 1e-12


def test_auto_grid_starts_at_r_where_k_below_r_is_refused() -> None:
    found = path("builtin:pitprops", "fspca-ipu", r=6)
    assert [lv.level for lv in found] == list(range(6, 14))
    assert not found.stopped_early


def test_auto_grid_stops_before_a_refused_level() -> None:
    found = path("builtin:pitprops", "encoder-iterative", r=6)  # its k is at most the rank of its residual
    assert [lv.level for lv in found] == list(range(1, 9))
    assert "stopped after k = 8" in found.stop_note and "k = 9" in found.stop_note


def test_warm_start_of_fspca_ipu_and_its_differences() -> None:
    """IPU warm-starts through subspace-start's w0; the documented cost: other local optima (measured: CPEV within
    0.0038 of the cold path's on Pitprops, 0.0047 on Zou's model; bound here at 0.01), and both reach PCA at k = p."""
    for data, r in (("builtin:pitprops", 6), ("builtin:zou", 2)):
        cold = path(data, "fspca-ipu", r=r)
        warm = path(data, "fspca-ipu", r=r, warm_start=True)
        assert warm.warm_start == "initializer.w0" and "subspace-start" in warm.warm_start_note
        assert [lv.warm for lv in warm] == [False] + [True] * (len(warm) - 1)
        assert [lv.level for lv in warm] == [lv.level for lv in cold]
        assert np.max(np.abs(warm.column("cpev") - cold.column("cpev"))) <= 0.01
        for found in (cold, warm):
            assert abs(found.levels[-1].cpev - found.ceiling) <= 1e-12
            assert all(max(lv.pattern) <= lv.level for lv in found)  # k shared rows at most


def test_warm_start_is_refused_politely_where_the_method_cannot() -> None:
    for method, reason in (("spcart", "takes no start"), ("tpower", "takes no start")):
        warm = path("builtin:pitprops", method, r=2, k="3:5", warm_start=True)
        cold = path("builtin:pitprops", method, r=2, k="3:5")
        assert warm.warm_start is None and reason in warm.warm_start_note
        for a, b in zip(warm, cold):
            np.testing.assert_array_equal(a.result.loadings, b.result.loadings)
    set_start = path("builtin:pitprops", "fspca-ipu", r=2, k="3:4", warm_start=True, start="random")
    assert set_start.warm_start is None and "start" in set_start.warm_start_note


def test_lam_path() -> None:
    found = path("builtin:pitprops", "spcart", r=2, lam="0.25,0.2,0.1")
    assert found.knob == "lam" and [lv.level for lv in found] == [0.25, 0.2, 0.1]
    nz = found.column("nz")
    assert nz[0] <= nz[1] <= nz[2]  # a smaller threshold keeps more entries
    assert found.to_rows()[0]["lam"] == 0.25
    with pytest.raises(spcakit.ZeroLoadingError, match=r"^lam = 0\.9: "):
        path("builtin:pitprops", "spcart", r=2, lam=[0.9])


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [({"k": "1:3", "lam": [0.1]}, "not both"), ({"metrics": ["cpev"]}, "drop metrics="), ({"method": "pca"}, "takes no k"),
     ({"r": 14}, "r=14"), ({"k": "1:14"}, "k = 14")],
)  # fmt: skip
def test_path_refuses(kwargs: dict[str, Any], fragment: str) -> None:
    arguments = {"method": "spcart", "r": 2, **kwargs}
    with pytest.raises(InvalidParameterError) as info:
        path("builtin:pitprops", **arguments)
    assert fragment in str(info.value)


def test_rows_csv_json_and_frame() -> None:
    found = path("builtin:pitprops", "spcart", r=3, k="2,4,13")
    rows = found.to_rows()
    assert [row["k"] for row in rows] == [2, 4, 13]
    assert list(rows[0])[:5] == ["k", "nz", "cpev", "cpev_ratio", "nor"]
    read = list(csv.DictReader(io.StringIO(found.to_csv())))
    for row, back in zip(rows, read):  # numbers read back exactly
        assert float(back["cpev"]) == row["cpev"] and float(back["additional_variance_3"]) == row["additional_variance_3"]
    document = json.loads(json.dumps(found.to_dict()))
    assert document["ceiling"] == found.ceiling and len(document["levels"]) == 3
    assert document["levels"][1]["pattern"] == [4, 4, 4] and document["input"]["kind"] == "covariance"
    pandas = pytest.importorskip("pandas")
    frame = found.frame()
    assert isinstance(frame, pandas.DataFrame) and frame.index.name == "k"
    assert frame.loc[4, "nz"] == 12 and frame.loc[13, "cpev"] == found.levels[-1].cpev


def test_to_csv_writes_a_file(tmp_path: Path) -> None:
    found = path("builtin:pitprops", "st", r=2, k="1:3")
    target = tmp_path / "path.csv"
    text = found.to_csv(target)
    assert target.read_text() == text and text.count("\n") == 4


def test_plot_draws_the_curve_and_the_ceiling() -> None:
    pytest.importorskip("matplotlib")
    found = path("builtin:pitprops", "st", r=2, k="1:13")
    figure = found.plot()
    lines = figure.axes[0].get_lines()
    curve = [line for line in lines if len(line.get_xdata()) == 13]
    assert len(curve) == 1 and np.array_equal(curve[0].get_ydata(), found.column("cpev"))
    assert any(np.allclose(line.get_ydata(), found.ceiling, rtol=0, atol=1e-15) for line in lines if line not in curve)


# -- targets -------------------------------------------------------------------------------------------
TARGET_CASES = {
    "pitprops-spcart": ("builtin:pitprops", "spcart", 6),
    "zou-tpower": ("builtin:zou", "tpower", 2),
    "spiked30-fspca-ipu": (spiked(200, 30, [6, 4], [4.0, 3.0], seed=0), "fspca-ipu", 2),
    "spiked40-spcart": (spiked(150, 40, [8, 5, 3], [5.0, 4.0, 3.0], seed=1), "spcart", 3),
}


@pytest.mark.parametrize("case", list(TARGET_CASES))
def test_target_cpev_is_the_smallest_k_of_a_full_scan(case: str) -> None:
    data, method, r = TARGET_CASES[case]
    low = r if method.startswith("fspca") else 1
    full = path(data, method, r=r, k=f"{low}:p")
    for fraction in (0.9, 0.75):
        chosen = target_k(data, method, r, cpev=fraction)
        expected = smallest_k_by_scan(full, fraction)
        assert chosen.k == expected, (fraction, [round(v, 4) for v in full.column("cpev")])
        assert chosen.cpev == full.level(expected).cpev >= fraction * full.ceiling - CPEV_RTOL * full.ceiling
        assert chosen.search == "linear scan" and len(chosen.fitted) == expected - low + 1
        np.testing.assert_array_equal(chosen.result.loadings, full.level(expected).result.loadings)
        assert full.target(cpev=fraction).level == expected
        if fraction == 0.9:  # these curves rise wherever bisection looks: it finds the same k, in fewer fits
            bisected = target_k(data, method, r, cpev=fraction, search="bisection")
            assert bisected.k == expected and bisected.search.startswith("bisection")


def test_done_when_cli_target_cpev_on_pitprops(cli) -> None:
    document = json.loads(ok(cli, "run", "spcart", "-r", 6, "--target-cpev", 0.9, "--json").stdout)
    full = path("builtin:pitprops", "spcart", r=6, k="1:13")
    assert document["target"]["k"] == smallest_k_by_scan(full, 0.9) == 4
    assert document["metrics"]["pattern"] == [4] * 6
    assert document["metrics"]["cpev"] >= 0.9 * pca_cpev(pitprops().matrix, 6)
    assert document["target"]["ceiling"] == pytest.approx(pca_cpev(pitprops().matrix, 6), abs=1e-12)
    text = ok(cli, "run", "spcart", "-r", 6, "--target-cpev", 0.9).stdout
    assert "target CPEV >= 0.9 x PCA's" in text and "k = 4" in text


def test_smallest_reaching_on_known_curves() -> None:
    def counted(curve: list[float]) -> tuple[Any, list[int]]:
        calls: list[int] = []

        def value(level: int) -> float:
            calls.append(level)
            return curve[level - 1]

        return value, calls

    rising = [0.1 * i for i in range(1, 41)]  # levels 1..40, reaching 2.05 first at k = 21
    for search in ("scan", "bisection"):
        value, calls = counted(rising)
        assert smallest_reaching(value, 1, 40, 2.05, 1e-12, search)[0] == 21
        assert len(calls) == len(set(calls))  # each level at most once
    value, calls = counted(rising)
    smallest_reaching(value, 1, 40, 2.05, 1e-12, "bisection")
    assert len(calls) <= math.ceil(math.log2(40)) + 2
    # levels 5..7 reach 0.9, 8..12 do not, 13..20 reach it at 1.0 and 21..40 at 0.95: the first midpoint (20)
    # has more than k = 40, which contradicts monotonicity, so bisection scans [1, 20] and finds 5 (not 13)
    seen_dip = [0.0] * 4 + [1.0] * 3 + [0.5] * 5 + [1.0] * 8 + [0.95] * 20
    value, _ = counted(seen_dip)
    assert smallest_reaching(value, 1, 40, 0.9, 1e-12, "bisection") == (5, "bisection, then linear scan")
    # levels 11..14 reach it, 15..19 do not, 20..40 do: the midpoints 20, 10, 15, 17, 18, 19 see a rising curve
    # and bisection returns 20 - the documented limitation; a scan is exact
    unseen_dip = [0.0] * 10 + [1.0] * 4 + [0.5] * 5 + [1.0] * 21
    value, calls = counted(unseen_dip)
    assert smallest_reaching(value, 1, 40, 0.9, 1e-12, "bisection") == (20, "bisection")
    assert not set(calls) & {11, 12, 13, 14}
    value, _ = counted(unseen_dip)
    assert smallest_reaching(value, 1, 40, 0.9, 1e-12, "scan") == (11, "linear scan")
    for search in ("scan", "bisection"):
        value, _ = counted(rising)
        assert smallest_reaching(value, 1, 40, 5.0, 1e-12, search) is None
        value, _ = counted(rising)
        assert smallest_reaching(value, 3, 40, 0.2, 1e-12, search)[0] == 3
    with pytest.raises(InvalidParameterError, match="search"):
        smallest_reaching(lambda level: 0.0, 1, 2, 1.0, 0.0, "linear")


def test_target_sparsity_and_unpacking() -> None:
    k, result = target_k("builtin:pitprops", "spcart", 6, sparsity=0.7)  # round(0.3 x 13) = round(3.9) = 4
    assert k == 4 and result.metrics["pattern"] == [4] * 6
    assert "ev" in result.metrics  # every metric by default
    chosen = target_k("builtin:pitprops", "spcart", 6, sparsity=0.7, metrics=["nz"])
    assert list(chosen.result.metrics) == ["nz"] and chosen.search == "rounding"
    assert chosen.cpev == result.metrics["cpev"]
    with pytest.raises(InvalidParameterError, match=r"= 4: ipu: the cardinality k must be an integer in \[6, 13\]"):
        target_k("builtin:pitprops", "fspca-ipu", 6, sparsity=0.7)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [({"cpev": 1.2}, "unreachable"), ({"cpev": 0.0}, "(0, 1]"), ({"cpev": math.nan}, "(0, 1]"), ({}, "give one target"),
     ({"cpev": 0.9, "sparsity": 0.5}, "give one target"), ({"sparsity": 0.99}, "the sparsest level is k = 1"),
     ({"cpev": 0.9, "search": "linear"}, "search must be one of"), ({"cpev": 0.9, "method": "pca"}, "takes no k")],
)  # fmt: skip
def test_target_refuses(kwargs: dict[str, Any], fragment: str) -> None:
    arguments = {"method": "spcart", **kwargs}
    with pytest.raises(InvalidParameterError) as info:
        target_k("builtin:pitprops", r=6, **arguments)
    assert fragment in str(info.value)


def test_an_unreachable_target_names_the_best_reachable_value() -> None:
    # one power step from the largest-variance variable: even k = p stays short of PCA
    one_step = {"name": "max-iterations", "n": 1}
    with pytest.raises(InvalidParameterError) as info:
        target_k("builtin:pitprops", "tpower", 6, cpev=0.99, stopper=one_step)
    message = str(info.value)
    best = max(path("builtin:pitprops", "tpower", r=6, k="1:13", stopper=one_step).column("cpev"))
    assert "no level reaches the target CPEV >= 0.99 x PCA's" in message and f"{best:.6g}" in message
    found = path("builtin:pitprops", "spcart", r=6, k="1:5")
    with pytest.raises(InvalidParameterError, match=r"best reachable .* is 0\.822589 .* at k = 5"):
        found.target(cpev=0.99)


def test_path_target_picks_a_level_of_the_grid() -> None:
    found = path("builtin:pitprops", "spcart", r=6, k="1:13")
    assert found.target(cpev=0.9).level == 4
    assert found.target(sparsity=0.7).level == 4
    with pytest.raises(InvalidParameterError, match="not in this path's grid"):
        path("builtin:pitprops", "spcart", r=6, k="1:3").target(sparsity=0.5)
    lam_path = path("builtin:pitprops", "spcart", r=2, lam="0.25,0.2,0.1")
    chosen = lam_path.target(cpev=0.5)
    assert chosen.nz == min(lv.nz for lv in lam_path if lv.cpev >= 0.5 * lam_path.ceiling - 1e-12)


# -- the command line ----------------------------------------------------------------------------------
def test_cli_path_text_table_marks_the_target(cli) -> None:
    text = ok(cli, "path", "spcart", "-r", 6, "--target-cpev", 0.9).stdout
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["k", "nz"])
    assert lines[header].split() == ["k", "nz", "CPEV", "CPEV/PCA", "NOR", "seconds"]
    table = lines[header + 1:header + 14]
    assert [int(line.split()[0]) for line in table] == list(range(1, 14))
    assert [line.split()[0] for line in table if line.endswith("*")] == ["4"]
    assert "PCA's CPEV (the ceiling) 0.8700" in lines[0]
    assert "target CPEV >= 0.9 x PCA's" in text


def test_cli_path_json_and_out(cli, tmp_path: Path) -> None:
    document = json.loads(ok(cli, "path", "fspca-go", "-d", "builtin:zou", "-r", 2, "--json", "--target-sparsity", 0.6).stdout)
    assert document["data"] == "builtin:zou" and document["knob"] == "k" and document["auto"]
    assert [level["k"] for level in document["levels"]] == list(range(2, 11))
    assert document["ceiling"] == pytest.approx(pca_cpev(zou_covariance().matrix, 2), abs=1e-12)
    assert document["target"]["k"] == 4  # round(0.4 x 10)
    out = tmp_path / "path.csv"
    result = ok(cli, "path", "spcart", "-r", 2, "--k", "1:4", "--csv", "--out", out)
    assert result.stdout == "" and "wrote 4 level(s)" in result.stderr
    assert len(list(csv.DictReader(out.open()))) == 4


@pytest.mark.parametrize(
    ("args", "fragment"),
    [(["--k", "0:5"], "k = 0 in the grid '0:5'"), (["--k", "a:b"], "'a' is not an integer"), (["--k", "1:14"], "[1, 13]"),
     (["--k", "1:3", "--lam", "0.1"], "not both"), (["--json", "--csv"], "--json and --csv"),
     (["--k", "1:5", "--target-cpev", 0.99], "best reachable"), (["--k", "1:3", "--target-sparsity", 0.5], "not in this path's grid"),
     (["--target-cpev", 0.9, "--target-sparsity", 0.5], "give one of them"), (["--param", "k=3"], "-k GRID")],
)  # fmt: skip
def test_cli_path_errors_exit_2_and_write_nothing(cli, args: list[Any], fragment: str, tmp_path: Path) -> None:
    out = tmp_path / "never.csv"
    message = refused(cli, "path", "spcart", "-r", 6, *args, "--out", out)
    assert fragment in message and message.startswith("Error: ")
    assert not out.exists()


def test_cli_path_refuses_methods_without_k(cli) -> None:
    assert "takes no k" in refused(cli, "path", "pca", "-r", 2)
    assert "unknown method" in refused(cli, "path", "nope", "-r", 2)


def test_cli_run_targets(cli) -> None:
    by_sparsity = json.loads(ok(cli, "run", "spcart", "-r", 6, "--target-sparsity", 0.7, "--json").stdout)
    by_k = json.loads(ok(cli, "run", "spcart", "-r", 6, "--target-k", 4, "--json").stdout)
    assert by_sparsity["target"] == {**by_sparsity["target"], "kind": "sparsity", "k": 4, "search": "rounding"}
    assert by_sparsity["loadings"] == by_k["loadings"]
    assert "give one of them" in refused(cli, "run", "spcart", "-r", 6, "--target-cpev", 0.9, "-k", 3)
    assert "--lam" in refused(cli, "run", "spcart", "-r", 6, "--target-sparsity", 0.5, "--lam", 0.1)
    assert "unreachable" in refused(cli, "run", "spcart", "-r", 6, "--target-cpev", 1.5)
    assert "k = 1" in refused(cli, "run", "spcart", "-r", 6, "--target-sparsity", 0.99)
