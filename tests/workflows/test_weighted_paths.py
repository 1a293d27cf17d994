"""Observation weights on paths and targets: ``spcakit.path(..., sample_weight=)``, ``spcakit.target_k(...,
sample_weight=)``, ``spcakit run --target-* --weights`` and ``spcakit path --weights``, with complete data and with
missing values.

The property is that of :mod:`spcakit.inputs.weights`: frequency weights, so that integer weights (here 0 to 3,
with some 0) give the result of the data with each row repeated that many times. Complete data are compared to
1e-10 (the weighted and the repeated covariances differ by rounding only, as in ``tests/inputs/test_weights.py``).
With missing values each level's EM is weighted; its iterates are those of the repeated rows' EM (identical rows
get identical imputations), but its stopping rule (the root mean square change of the imputed entries over their
columns' observed standard deviations, below ``tol = 1e-3``) counts each row's missing entries once, and the
repeated data's count each copy: the two EMs may stop an iteration apart. One more iteration moves the imputed
values by less than ``tol`` of their columns' spread, a tenth of the entries being imputed, so CPEV can move by
about ``0.1 * 1e-3 = 1e-4``: :data:`EM_TOL` (measured: at most 2.3e-6, at the one level of the path where the two
EMs stopped an iteration apart, 6 against 5; the target's CPEV agrees to rounding).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import spcakit
from spcakit.core.errors import InvalidDataError, InvalidParameterError, MissingValueWarning
from spcakit.inputs.datasets import planted_support


#: Complete data: the weighted and repeated problems differ by rounding only.
TOL = 1e-10

#: Missing values: the EMs may stop an iteration apart (see the module's description).
EM_TOL = 1e-4

#: The CPEV target, as a fraction of PCA's. SPCArt's ratios at k = 2 and 3 are 0.717 and 0.985 on the complete
#: data, 0.755 and 0.987 with the holes (weighted and repeated alike): 0.9 lies 0.08 or more from each.
TARGET = 0.9


def signs_fixed(loadings: np.ndarray) -> np.ndarray:
    """Each column with its largest-magnitude entry positive (a loading and its negative are the same)."""
    top = loadings[np.argmax(np.abs(loadings), axis=0), np.arange(loadings.shape[1])]
    return loadings * np.where(top < 0, -1.0, 1.0)


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(complete, holes, w)``: planted data (two supports of 3 of 10 variables), the same with about 10 % of the
    entries missing, and integer weights 0 to 3 (12 zeros)."""
    x = planted_support(60, 10, [3, 3], [4.0, 3.0], seed=3).matrix
    holes = x.copy()
    holes[np.random.default_rng(7).random(x.shape) < 0.1] = np.nan
    w = np.random.default_rng(2).integers(0, 4, 60)
    w[:3] = [0, 2, 3]
    return x, holes, w


# -- complete data ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("standardize", [False, True])
def test_a_weighted_path_is_the_path_of_repeated_rows(data: Any, standardize: bool) -> None:
    x, _, w = data
    weighted = spcakit.path(x, "spcart", k="1:6", sample_weight=w, standardize=standardize)
    repeated = spcakit.path(np.repeat(x, w, axis=0), "spcart", k="1:6", standardize=standardize)
    assert [lv.level for lv in weighted] == [lv.level for lv in repeated] == list(range(1, 7))
    for a, b in zip(weighted, repeated):
        np.testing.assert_allclose(signs_fixed(a.result.loadings), signs_fixed(b.result.loadings), rtol=0, atol=TOL)
        np.testing.assert_allclose(a.cpev, b.cpev, rtol=TOL, atol=TOL)
        np.testing.assert_allclose(a.cpev_ratio, b.cpev_ratio, rtol=TOL, atol=TOL)
    np.testing.assert_allclose(weighted.ceiling, repeated.ceiling, rtol=TOL)
    assert weighted.levels[0].result.input.weights["zeros"] == int(np.sum(w == 0))


def test_unit_weights_give_the_unweighted_path(data: Any) -> None:
    x, _, _ = data
    ones = spcakit.path(x, "spcart", k="1:4", sample_weight=np.ones(len(x)))
    plain = spcakit.path(x, "spcart", k="1:4")
    for a, b in zip(ones, plain):
        np.testing.assert_allclose(a.result.loadings, b.result.loadings, rtol=0, atol=TOL)
        np.testing.assert_allclose(a.cpev, b.cpev, rtol=TOL)


def test_a_weighted_target_is_the_target_of_repeated_rows(data: Any) -> None:
    x, _, w = data
    weighted = spcakit.target_k(x, "spcart", cpev=TARGET, sample_weight=w)
    repeated = spcakit.target_k(np.repeat(x, w, axis=0), "spcart", cpev=TARGET)
    assert weighted.k == repeated.k == 3
    np.testing.assert_allclose(weighted.cpev, repeated.cpev, rtol=TOL, atol=TOL)
    np.testing.assert_allclose(weighted.ceiling, repeated.ceiling, rtol=TOL)
    sparse = spcakit.target_k(x, "spcart", sparsity=0.5, sample_weight=w)  # the rounding target, fitted weighted
    np.testing.assert_allclose(sparse.cpev, spcakit.target_k(np.repeat(x, w, axis=0), "spcart", sparsity=0.5).cpev,
                               rtol=TOL)  # fmt: skip


# -- missing values ---------------------------------------------------------------------------------------
def test_a_weighted_target_with_holes_is_the_target_of_repeated_rows(data: Any) -> None:
    _, holes, w = data
    weighted = spcakit.target_k(holes, "spcart", cpev=TARGET, sample_weight=w, missing="em")
    repeated = spcakit.target_k(np.repeat(holes, w, axis=0), "spcart", cpev=TARGET, missing="em")
    assert weighted.k == repeated.k == 3
    np.testing.assert_allclose(weighted.cpev, repeated.cpev, rtol=0, atol=EM_TOL)
    np.testing.assert_allclose(weighted.ceiling, repeated.ceiling, rtol=0, atol=EM_TOL)
    record = weighted.result.input.missing
    assert record is not None and record.converged and record.count == int(np.isnan(holes).sum())
    assert weighted.result.input.weights["sum"] == float(w.sum())


def test_a_weighted_path_with_holes_is_the_path_of_repeated_rows(data: Any) -> None:
    _, holes, w = data
    weighted = spcakit.path(holes, "spcart", k="1:6", sample_weight=w, missing="em")
    repeated = spcakit.path(np.repeat(holes, w, axis=0), "spcart", k="1:6", missing="em")
    for a, b in zip(weighted, repeated):
        assert a.result.input.missing.converged and b.result.input.missing.converged
        np.testing.assert_array_equal(a.result.loadings != 0, b.result.loadings != 0)  # the same supports
        np.testing.assert_allclose(a.cpev, b.cpev, rtol=0, atol=EM_TOL)
        np.testing.assert_allclose(a.cpev_ratio, b.cpev_ratio, rtol=0, atol=EM_TOL)


def test_the_first_levels_em_is_fits(data: Any) -> None:
    """The first level's EM starts from the weighted observed means, as ``fit``'s: the same fit (bit for bit
    up to the metrics computed), not only the same fixed point."""
    _, holes, w = data
    first = spcakit.path(holes, "spcart", k="2:3", sample_weight=w, missing="em").levels[0].result
    fitted = spcakit.fit(holes, "spcart", k=2, sample_weight=w, missing="em")
    assert first.input.missing.iterations == fitted.input.missing.iterations > 1
    np.testing.assert_allclose(first.loadings, fitted.loadings, rtol=0, atol=TOL)


def test_sparse_data_with_holes_take_weights(data: Any) -> None:
    """``scipy.sparse`` data take weights as ``fit`` takes them (stored NaN are the missing entries)."""
    _, holes, w = data
    weighted = spcakit.target_k(sp.csr_matrix(holes), "spcart", cpev=TARGET, sample_weight=w, missing="em")
    dense = spcakit.target_k(holes, "spcart", cpev=TARGET, sample_weight=w, missing="em")
    assert weighted.k == dense.k
    np.testing.assert_allclose(weighted.cpev, dense.cpev, rtol=0, atol=EM_TOL)


@pytest.mark.parametrize("bad", [np.ones(59), -np.ones(60), np.zeros(60)])
def test_bad_weights_are_refused_as_fit_refuses_them(data: Any, bad: np.ndarray) -> None:
    x, holes, _ = data
    for values, missing in ((x, "auto"), (holes, "em")):
        with pytest.raises(InvalidDataError) as by_fit, warnings.catch_warnings():
            warnings.simplefilter("error", MissingValueWarning)  # refused before any warning of the EM
            spcakit.fit(values, "spcart", k=2, sample_weight=bad, missing=missing)
        with pytest.raises(InvalidDataError) as by_path, warnings.catch_warnings():
            warnings.simplefilter("error", MissingValueWarning)  # refused before any warning of the EM
            spcakit.path(values, "spcart", k="1:2", sample_weight=bad, missing=missing)
        with pytest.raises(InvalidDataError) as by_target:
            spcakit.target_k(values, "spcart", cpev=TARGET, sample_weight=bad, missing=missing)
        assert str(by_path.value) == str(by_target.value) == str(by_fit.value)
        assert "sample_weight" in str(by_fit.value)


def test_weights_with_a_covariance_are_refused(data: Any) -> None:
    x, _, w = data
    c = np.cov(x.T)
    for call in (lambda: spcakit.path(c, "spcart", covariance=True, sample_weight=w),
                 lambda: spcakit.target_k(c, "spcart", cpev=TARGET, covariance=True, sample_weight=w)):  # fmt: skip
        with pytest.raises(InvalidParameterError, match="rows of a data matrix"):
            call()


# -- the command line -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def weights_file(holes_csv: tuple[Path, np.ndarray], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    """``(path, w)``: a one-column CSV (with a header) of integer weights 0 to 3 for the 80 rows of ``holes_csv``."""
    w = np.random.default_rng(4).integers(0, 4, 80)
    w[:3] = [0, 2, 3]
    path = tmp_path_factory.mktemp("weights") / "w.csv"
    path.write_text("weight\n" + "\n".join(str(v) for v in w) + "\n")
    return path, w


def test_run_target_cpev_with_weights_imputes_the_holes(cli, holes_csv: Any, weights_file: Any) -> None:
    csv, _ = holes_csv
    path, w = weights_file
    result = cli.invoke("run", "spcart", "-d", csv, "--weights", path, "--target-cpev", TARGET, "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MissingValueWarning)
        api = spcakit.target_k(str(csv), "spcart", cpev=TARGET, sample_weight=w)
    assert document["target"]["k"] == api.k
    np.testing.assert_allclose(document["target"]["cpev"], api.cpev, rtol=TOL)  # the same code, the same EM
    assert document["input"]["missing"]["count"] == int(holes_csv[1].sum())
    assert document["input"]["weights"]["sum"] == float(w.sum())


@pytest.mark.parametrize(("weights", "words"), [
    ("1\n" * 79, "79 weights but the data have 80 rows"),
    ("1\n" * 79 + "-1\n", "weights must be >= 0"),
])  # fmt: skip
def test_run_target_with_bad_weights_exits_2(cli, holes_csv: Any, tmp_path: Path, weights: str, words: str) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text(weights)
    for command in (["run", "spcart", "--target-cpev", TARGET], ["path", "spcart", "-k", "1:3"]):
        result = cli.invoke(*command, "-d", holes_csv[0], "--weights", bad)
        assert result.exit_code == 2, result.output
        assert words in result.output and "Traceback" not in result.output


def test_path_takes_weights(cli, holes_csv: Any, weights_file: Any) -> None:
    csv, _ = holes_csv
    path, w = weights_file
    result = cli.invoke("path", "spcart", "-d", csv, "--weights", path, "-k", "1:4", "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MissingValueWarning)
        api = spcakit.path(str(csv), "spcart", k="1:4", sample_weight=w)
    np.testing.assert_allclose([level["cpev"] for level in document["levels"]], [lv.cpev for lv in api], rtol=TOL)
    assert document["input"]["weights"]["sum"] == float(w.sum())
    assert document["input"]["missing"]["iterations"] == api.missing.iterations


def test_cv_still_refuses_weights(cli, holes_csv: Any, weights_file: Any) -> None:
    result = cli.invoke("cv", "spcart", "-d", holes_csv[0], "--weights", weights_file[0])
    assert result.exit_code == 2 and "run, compose and path only" in result.output
