"""spcakit.workflows.cv: choosing the sparsity by K-fold cross-validation over rows, and ``spcakit cv``.

The held-out residuals are checked against a brute-force loop that solves each leave-one-variable-out least
squares problem with NumPy, a fold's error against a hand computation from a plain ``spcakit.fit`` on the
raw training rows, and the choice against planted supports.
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
from spcakit.workflows.cv import (
    RULES, UNPREDICTABLE, CrossValidation, choose_level, cross_validate, fold_indices, leave_one_variable_out_residuals,
)  # fmt: skip
from spcakit.inputs.datasets import pitprops, planted_support
from spcakit.core.errors import InvalidParameterError


def spiked(n: int, p: int, sizes: list[int], strengths: list[float], seed: int) -> np.ndarray:
    """Rows with planted sparse supports, the columns shuffled (:func:`spcakit.datasets.planted_support`)."""
    return planted_support(n, p, sizes, strengths, seed).matrix


def brute_force_residuals(rows: np.ndarray, loadings: np.ndarray) -> np.ndarray:
    """Each entry predicted from its row's other entries by least squares on the other rows of the loadings."""
    m, p = rows.shape
    residuals = np.empty_like(rows)
    for i in range(m):
        for j in range(p):
            others = np.arange(p) != j
            scores, *_ = np.linalg.lstsq(loadings[others], rows[i, others], rcond=None)
            residuals[i, j] = rows[i, j] - loadings[j] @ scores
    return residuals


# -- the held-out residuals ------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape, zeros", [((7, 2), 0), ((9, 3), 8), ((12, 1), 5)])
def test_sherman_morrison_residuals_equal_the_brute_force_loop(shape: tuple[int, int], zeros: int) -> None:
    rng = np.random.default_rng(sum(shape) + zeros)
    loadings = rng.standard_normal(shape)
    loadings.flat[rng.choice(loadings.size, zeros, replace=False)] = 0.0  # sparse, but no variable alone in the span
    rows = rng.standard_normal((6, shape[0]))
    # both are exact formulas for a well-conditioned problem: they agree to rounding (~1e-15 of the entries)
    np.testing.assert_allclose(leave_one_variable_out_residuals(rows, loadings), brute_force_residuals(rows, loadings),
                               rtol=1e-9, atol=1e-12)  # fmt: skip


def test_the_residuals_depend_on_the_span_only() -> None:
    rng = np.random.default_rng(3)
    loadings, rows = rng.standard_normal((8, 2)), rng.standard_normal((5, 8))
    mixed = loadings @ np.array([[2.0, 1.0], [-0.5, 3.0]])  # the same span
    np.testing.assert_allclose(leave_one_variable_out_residuals(rows, mixed),
                               leave_one_variable_out_residuals(rows, loadings), rtol=1e-9, atol=1e-12)  # fmt: skip


def test_a_variable_alone_in_the_span_is_predicted_by_the_mean() -> None:
    rng = np.random.default_rng(4)
    rows = rng.standard_normal((5, 6))
    single = np.zeros((6, 1))
    single[2, 0] = 1.0  # k = 1: one variable, which its row's others say nothing about, and no other variable
    np.testing.assert_array_equal(leave_one_variable_out_residuals(rows, single), rows)
    # e_1 is in the span of [e_1, (1, 1, 1)/sqrt 3] (p = 3): variable 1 is unpredictable, 2 and 3 are not
    pair = np.array([[1.0, 1.0], [0.0, 1.0], [0.0, 1.0]]) / np.array([1.0, math.sqrt(3)])
    three = rng.standard_normal((4, 3))
    residuals = leave_one_variable_out_residuals(three, pair)
    np.testing.assert_array_equal(residuals[:, 0], three[:, 0])
    np.testing.assert_allclose(residuals[:, 1:], brute_force_residuals(three, pair)[:, 1:], rtol=1e-9, atol=1e-12)
    assert UNPREDICTABLE < 1e-6


def test_the_residuals_refuse_mismatched_shapes() -> None:
    with pytest.raises(InvalidParameterError, match=r"must share p"):
        leave_one_variable_out_residuals(np.ones((3, 4)), np.ones((5, 1)))


# -- folds and the choice -------------------------------------------------------------------------------------
@pytest.mark.parametrize("n, folds", [(10, 3), (7, 7), (101, 5)])
def test_folds_partition_the_rows_evenly(n: int, folds: int) -> None:
    pieces = fold_indices(n, folds, seed=1)
    assert len(pieces) == folds
    np.testing.assert_array_equal(np.sort(np.concatenate(pieces)), np.arange(n))
    sizes = [piece.size for piece in pieces]
    assert max(sizes) - min(sizes) <= 1
    assert [piece.tolist() for piece in fold_indices(n, folds, seed=1)] == [piece.tolist() for piece in pieces]


def test_choose_level_by_hand() -> None:
    mean, se, k = [1.0, 0.50, 0.45, 0.46], [0.0, 0.10, 0.06, 0.10], [1, 2, 3, 4]
    assert choose_level(mean, se, k, "min") == (2, 2)
    assert choose_level(mean, se, k, "1se") == (1, 2)  # 0.50 <= 0.45 + 0.06; 1.0 is not
    # on a λ grid the sparsest is the fewest nonzeros, whatever the order of the grid: within 0.51, the last
    assert choose_level(mean, se, [9.0, 6.0, 3.0, 1.0], "1se") == (3, 2)
    assert choose_level(mean, se, [1.0, 3.0, 3.0, 4.0], "1se") == (1, 2)  # a tie at 3 nonzeros goes to the earlier
    with pytest.raises(InvalidParameterError, match=r"'min'.*'1se'.*got 'max'"):
        choose_level(mean, se, k, "max")


def test_the_1se_choice_is_never_denser_than_the_minimum() -> None:
    rng = np.random.default_rng(5)
    for _ in range(200):
        size = int(rng.integers(1, 12))
        mean, se = rng.random(size), rng.random(size) * 0.3
        sparseness = rng.permutation(size) if rng.random() < 0.5 else rng.integers(0, 4, size)  # ties too
        chosen, least = choose_level(mean, se, sparseness, "1se")
        assert (sparseness[chosen], chosen) <= (sparseness[least], least)
        assert mean[chosen] <= mean[least] + se[least]


# -- cross_validate ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def six() -> np.ndarray:
    return spiked(240, 30, [6], [3.0], seed=11)


def test_deterministic_for_a_seed(six: np.ndarray) -> None:
    first = cross_validate(six, "spcart", 1, k="1:10", seed=3)
    again = cross_validate(six, "spcart", 1, k="1:10", seed=3)
    assert first == again  # levels, every fold's error, the choice
    np.testing.assert_array_equal(first.result.loadings, again.result.loadings)
    other = cross_validate(six, "spcart", 1, k="1:10", seed=4)
    assert not np.array_equal(other.fold_errors, first.fold_errors)  # other folds


def test_the_curve_and_the_refit(six: np.ndarray) -> None:
    seen: list[Any] = []
    cv = cross_validate(six, "tpower", 1, k=[1, 3, 6, 12], folds=4, rule="min", on_level=seen.append)
    assert isinstance(cv, CrossValidation) and cv.knob == "k" and cv.folds == 4 and cv.rule == "min"
    assert cv.levels.tolist() == [1, 3, 6, 12] == [level.level for level in seen]
    assert cv.fold_errors.shape == (4, 4) and sum(cv.fold_sizes) == 240
    np.testing.assert_allclose(cv.mean_error, cv.fold_errors.mean(axis=1), rtol=1e-12)
    np.testing.assert_allclose(cv.std_error, cv.fold_errors.std(axis=1, ddof=1) / 2, rtol=1e-12)
    # k = 1, r = 1: every entry is unpredictable from its row's others, so each fold's error is exactly 1
    np.testing.assert_allclose(cv.fold_errors[0], 1.0, rtol=1e-12)
    assert cv.chosen == cv.least == cv.levels[int(np.argmin(cv.mean_error))]
    refit = spcakit.fit(six, "tpower", 1, k=cv.chosen)
    np.testing.assert_array_equal(cv.result.loadings, refit.loadings)
    assert set(cv.result.metrics) == set(refit.metrics)


def test_a_fold_error_by_hand(six: np.ndarray) -> None:
    """The error of each fold from a plain fit on the raw training rows, standardised by their own statistics."""
    raw = six * np.linspace(0.5, 20.0, 30) + 7.0  # columns of different scales and a mean far from 0
    cv = cross_validate(raw, "spcart", 1, k=[6], folds=3, standardize=True, seed=2)
    for f, test in enumerate(fold_indices(240, 3, seed=2)):
        train = np.delete(raw, test, axis=0)
        fitted = spcakit.fit(train, "spcart", 1, k=6, standardize=True)
        held = (raw[test] - train.mean(axis=0)) / train.std(axis=0, ddof=1)
        residuals = brute_force_residuals(held, fitted.loadings)
        # the fits differ by rounding only (the training rows are centred and scaled twice in cross_validate)
        assert cv.fold_errors[0, f] == pytest.approx(np.sum(residuals**2) / np.sum(held**2), rel=1e-9)


def test_metrics_are_the_refit_s_only(six: np.ndarray) -> None:
    cv = cross_validate(six, "spcart", 1, k=[5, 6], folds=2, metrics=["cpev"])
    assert set(cv.result.metrics) == {"cpev"}


def test_an_auto_grid_stops_before_a_level_the_method_refuses() -> None:
    """The iterative encoder's k is at most the rank of its residual: k = p is refused for the second loading."""
    if "encoder-iterative" not in spcakit.get_registry().method_names():
        pytest.skip("the encoders' plugin is not loaded")
    data = spiked(60, 8, [3, 3], [3.0, 2.5], seed=1)
    cv = cross_validate(data, "encoder-iterative", 2, folds=3)
    assert cv.auto and cv.levels.tolist() == list(range(1, 8))
    assert cv.stop_note.startswith("stopped after k = 7: the method refuses k = 8")


def test_a_lam_grid(six: np.ndarray) -> None:
    cv = cross_validate(six, "spcart", 1, lam=[0.17, 0.1, 0.01], folds=3)  # hard thresholds (< 1/sqrt(30)), sparsest first
    assert cv.knob == "lam" and cv.levels.tolist() == [0.17, 0.1, 0.01]
    assert cv.nz[0] <= cv.nz[1] <= cv.nz[2]
    assert cv.chosen in cv.levels.tolist()
    assert cv.result.spec["truncator"]["threshold"] == cv.chosen


def test_planted_support_is_found_within_one() -> None:
    """The acceptance test: the one-standard-error rule chooses k within one of the planted support's size.

    Offline, over 20 data sets per setting (n of 200, 300, 400; one planted support of 6 or 10 variables with
    r = 1, or two of 6 with r = 2), it did so in 479 of 480 runs; the least mean error in 426 (see spcakit.workflows.cv):
    so the rule tested is 1se. These seeds are the first of those data sets, not chosen.
    """
    cases = [
        ([6], [3.0], 300, "spcart", "1:p"), ([6], [3.0], 300, "tpower", "auto"),
        ([10], [3.0], 300, "spcart", "1:p"), ([10], [3.0], 300, "tpower", "1:p"),
        ([6, 6], [3.9, 3.0], 300, "spcart", "1:p"), ([6, 6], [3.9, 3.0], 300, "tpower", "1:15"),
    ]  # fmt: skip
    for seed in (0, 1):
        for sizes, strengths, n, method, grid in cases:
            data = spiked(n, 30, sizes, strengths, seed=100 + seed)
            cv = cross_validate(data, method, len(sizes), k=grid, rule="1se", seed=seed)
            assert abs(cv.chosen - sizes[0]) <= 1, (method, sizes, seed, cv.chosen, cv.mean_error.round(3))
            assert cv.chosen <= cv.least


@pytest.mark.parametrize(
    "data, kwargs",
    [("builtin:pitprops", {}), (pitprops().matrix, {"covariance": True}), (spcakit.Covariance(np.eye(4)), {})],
)
def test_a_covariance_cannot_be_cross_validated(data: Any, kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidParameterError, match=r"holds out rows.*covariance.*--target-cpev"):
        cross_validate(data, "spcart", 1, k="1:3", **kwargs)


def test_sparse_data_are_cross_validated_as_data_not_refused_as_a_covariance() -> None:
    # sparse data were refused until issue 28 ("needs the rows of the data as a dense array"); they are now
    # cross-validated as the same rows made dense are (tests/workflows/test_cv_sparse.py checks this in depth)
    scipy_sparse = pytest.importorskip("scipy.sparse")
    x = scipy_sparse.random_array((60, 8), density=0.5, format="csr", rng=np.random.default_rng(0))
    cv, dense = cross_validate(x, "spcart", 1, k="1:3"), cross_validate(x.toarray(), "spcart", 1, k="1:3")
    np.testing.assert_allclose(cv.fold_errors, dense.fold_errors, rtol=1e-8, atol=0)  # rounding: ~1e-15
    assert (cv.chosen, cv.n_samples) == (dense.chosen, 60)


@pytest.mark.parametrize("folds", [1, 0, -3, 2.5, True, "5", 241])
def test_bad_folds(six: np.ndarray, folds: Any) -> None:
    with pytest.raises(InvalidParameterError, match=r"folds must be an integer from 2 .* to n"):
        cross_validate(six, "spcart", 1, k="1:3", folds=folds)


def test_bad_rule_grid_and_method(six: np.ndarray) -> None:
    with pytest.raises(InvalidParameterError, match=r"rule must be 'min' .* or '1se'"):
        cross_validate(six, "spcart", 1, k="1:3", rule="best")
    with pytest.raises(InvalidParameterError, match=r"not both"):
        cross_validate(six, "spcart", 1, k="1:3", lam=[0.1])
    with pytest.raises(InvalidParameterError, match=r"k = 31 .* \[1, p\] = \[1, 30\]"):
        cross_validate(six, "spcart", 1, k="1:31")
    with pytest.raises(InvalidParameterError, match=r"takes no k"):
        cross_validate(six, "pca", 1, k="1:3")
    assert RULES == ("min", "1se")


def test_presentations(six: np.ndarray) -> None:
    cv = cross_validate(six, "spcart", 1, k="4:8", folds=3)
    rows = list(csv.DictReader(io.StringIO(cv.to_csv())))
    assert [int(row["k"]) for row in rows] == [4, 5, 6, 7, 8]
    assert [float(row["mean_error"]) for row in rows] == cv.mean_error.tolist()
    assert [row["chosen"] for row in rows].count("true") == 1
    document = json.loads(json.dumps(cv.to_dict()))
    assert document["fold_errors"] == cv.fold_errors.tolist() and document["chosen"] == cv.chosen
    assert document["result"]["loadings"] == cv.result.loadings.tolist()
    assert cv.level(cv.chosen).mean_error == cv.mean_error[cv.levels.tolist().index(cv.chosen)]
    assert f"k = {cv.chosen}" in cv.describe()
    pytest.importorskip("pandas")
    frame = cv.frame()
    assert frame.index.name == "k" and frame.loc[cv.chosen, "chosen"]


def test_the_exports() -> None:
    assert spcakit.cross_validate is cross_validate and spcakit.CrossValidation is CrossValidation
    assert {"cross_validate", "CrossValidation"} <= set(spcakit.__all__)


# -- spcakit cv -------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def six_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    file = tmp_path_factory.mktemp("cv") / "spiked.csv"
    data = spiked(300, 30, [6], [3.0], seed=100)
    np.savetxt(file, data, delimiter=",", header=",".join(f"v{j}" for j in range(30)), comments="")
    return file


def test_cli_json(cli, six_csv: Path) -> None:
    result = cli.invoke("cv", "spcart", "--data", six_csv, "-r", 1, "--k", "1:12", "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["levels"] == list(range(1, 13)) and document["rule"] == "1se" and document["folds"] == 5
    assert len(document["mean_error"]) == len(document["std_error"]) == 12
    assert np.asarray(document["fold_errors"]).shape == (12, 5)
    assert abs(document["chosen"] - 6) <= 1 and document["seed"] == 0
    assert document["data"] == document["result"]["data"] == str(six_csv)
    nonzero = [name for name, w in zip(document["result"]["feature_names"], document["result"]["loadings"]) if w[0]]
    assert len(nonzero) == document["chosen"]


def test_cli_text_csv_and_out(cli, six_csv: Path, tmp_path: Path) -> None:
    result = cli.invoke("cv", "tpower", "-d", six_csv, "-k", "5:7", "--folds", 3, "--rule", "min")
    assert result.exit_code == 0, result.output
    assert "3-fold cross-validation" in result.stdout and "*" in result.stdout and "Component 1" in result.stdout
    out = tmp_path / "curve.csv"
    result = cli.invoke("cv", "tpower", "-d", six_csv, "-k", "5:7", "--folds", 3, "--csv", "--out", out)
    assert result.exit_code == 0, result.output
    assert [row["k"] for row in csv.DictReader(out.open())] == ["5", "6", "7"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["-d", "builtin:pitprops"], "builtin:pitprops is a covariance"),
        (["-d", "DATA", "--folds", 1], "folds must be an integer from 2"),
        (["-d", "DATA", "--rule", "max"], "--rule must be min"),
        ([], "--data is required"),
        (["-d", "DATA", "--json", "--csv"], "give one of them"),
    ],
)
def test_cli_refuses_bad_input(cli, six_csv: Path, args: list[Any], message: str) -> None:
    result = cli.invoke("cv", "spcart", "-k", "1:3", *(six_csv if a == "DATA" else a for a in args))
    assert result.exit_code == 2, result.output
    assert result.stdout == "" and message in result.stderr
