"""Cross-validation of data with missing values: ``cross_validate(..., missing=)`` and
``spcakit cv --missing``.

Each fold's training rows are imputed by EM (:mod:`spcakit.workflows.imputation`) at every level, warm started from the
previous level's; the held-out rows are scored on their observed entries, each predicted from the row's other
observed entries (:func:`spcakit.workflows.cv.criterion.observed_residuals`).

Tolerances: the criterion is checked against a brute-force least-squares computation (one ``lstsq`` per
entry) to ``1e-10`` relative: both are exact formulas computed in float64 on well-conditioned loadings (the
Sherman-Morrison form divides by ``1 - h_jj``, at least 0.05 here), so they agree to about ``1e-14``. Sparse
data with stored NaN against the same data dense: the fits see the same completed numbers, centred by means
summed in another order, so the EM and the loadings move by rounding only; ``1e-8`` relative (as in
``test_cv_sparse.py``) is far below a fold's standard error (about ``1e-2``).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import spcakit
from spcakit.workflows.cv import UNPREDICTABLE, cross_validate, fold_indices
from spcakit.workflows.cv.criterion import observed_residual_sums, observed_residuals
from spcakit.core.errors import (
    InvalidDataError,
    InvalidParameterError,
    MissingValuesError,
    MissingValueWarning,
)
from spcakit.workflows.imputation import impute_and_fit
from spcakit.inputs import read_missing
from spcakit.inputs.datasets import planted_support
from spcakit.inputs.missing import missing_values


def with_holes(x: np.ndarray, fraction: float, seed: int) -> np.ndarray:
    """``x`` with each entry missing (NaN) independently with probability ``fraction``: completely at random."""
    holes = x.copy()
    holes[np.random.default_rng(1000 + seed).random(x.shape) < fraction] = np.nan
    return holes


def brute_force(rows: np.ndarray, loadings: np.ndarray) -> tuple[np.ndarray, float, float]:
    """Every observed entry of every row predicted from the row's other observed entries by least squares on
    the loadings' rows there (``numpy.linalg.lstsq``, one entry at a time); an entry whose variable the others
    cannot determine (removing it lowers the rank of the observed loadings: its unit vector lies in their span)
    is predicted by 0, the mean. ``(residuals, residual sum of squares, observed sum of squares)``."""
    out = np.full(rows.shape, np.nan)
    for i, row in enumerate(rows):
        observed = np.flatnonzero(~np.isnan(row))
        for j in observed:
            others = observed[observed != j]
            v_others, v_all = loadings[others], loadings[observed]
            if np.linalg.matrix_rank(v_others) < np.linalg.matrix_rank(v_all) or not v_all.any():
                out[i, j] = row[j]
                continue
            t, *_ = np.linalg.lstsq(v_others, row[others], rcond=None)
            out[i, j] = row[j] - loadings[j] @ t
    return out, float(np.nansum(out**2)), float(np.nansum(rows**2))


# -- the criterion ---------------------------------------------------------------------------------------
def test_observed_criterion_equals_brute_force_least_squares() -> None:
    rng = np.random.default_rng(0)
    p, r = 9, 2
    v = rng.standard_normal((p, r))
    v[[0, 1], 1] = 0.0  # sparse loadings: some rows of V_O lose a component
    v[2] = [0.0, 0.0]  # a variable with no loading: predicted by the mean
    rows = rng.standard_normal((40, p))
    rows[rng.random(rows.shape) < 0.25] = np.nan
    rows[3] = np.nan
    rows[3, [4, 5]] = [0.7, -1.2]  # two observed entries, r = 2: each alone in the span, unpredictable
    rows[5, :] = rng.standard_normal(p)  # complete rows take the complete rows' path
    rows[7, :] = np.nan  # nothing observed: nothing scored
    residuals = observed_residuals(rows, v)
    expected, residual, total = brute_force(rows, v)
    assert np.array_equal(np.isnan(residuals), np.isnan(rows))
    np.testing.assert_allclose(residuals[~np.isnan(rows)], expected[~np.isnan(rows)], rtol=1e-10, atol=1e-12)
    assert residuals[3, 4] == rows[3, 4] and residuals[3, 5] == rows[3, 5]  # the 1 - h <= UNPREDICTABLE rule
    sums = observed_residual_sums(rows, v, spcakit.workflows.cv.criterion.loadings_span(v))
    np.testing.assert_allclose(sums, (residual, total), rtol=1e-10)
    assert UNPREDICTABLE < 0.05  # the divisions above are well away from the rule's threshold


def test_complete_rows_give_the_complete_criterion() -> None:
    rng = np.random.default_rng(1)
    v, rows = rng.standard_normal((7, 2)), rng.standard_normal((20, 7))
    span = spcakit.workflows.cv.criterion.loadings_span(v)
    assert observed_residual_sums(rows, v, span) == spcakit.workflows.cv.criterion.residual_sums(rows, span)  # same path
    np.testing.assert_array_equal(observed_residuals(rows, v), spcakit.workflows.cv.leave_one_variable_out_residuals(rows, v))


def test_a_fold_error_is_the_brute_force_error_of_the_em_fit_on_the_training_rows() -> None:
    """One level (no warm start): fold 1's error equals the brute-force criterion of the held-out rows, centred
    by the completed training rows' means, for the loadings of ``spcakit.fit(training rows, missing="em")``."""
    x = with_holes(planted_support(120, 12, [4], [3.0], seed=3).matrix, 0.15, 3)
    found = cross_validate(x, "tpower", 1, k=[4], folds=4, seed=5, missing="em")
    test = fold_indices(120, 4, 5)[0]
    train = np.setdiff1d(np.arange(120), test)
    fitted = spcakit.fit(x[train], "tpower", 1, k=4, seed=5, missing="em", metrics=[])
    _, residual, total = brute_force(x[test] - fitted.input.mean, fitted.loadings)
    assert found.fold_errors[0][0] == pytest.approx(residual / total, rel=1e-10)


# -- complete data: unchanged ------------------------------------------------------------------------------
def test_without_nan_every_option_gives_the_same_errors() -> None:
    x = planted_support(150, 15, [5], [3.0], seed=2).matrix
    with warnings.catch_warnings():
        warnings.simplefilter("error", MissingValueWarning)  # no NaN: nothing is said about missing values
        runs = [cross_validate(x, "tpower", 1, k="1:8", folds=4, seed=1, missing=m) for m in ("auto", "em", "error")]
    for run in runs[1:]:
        assert np.array_equal(np.array(run.fold_errors), np.array(runs[0].fold_errors)) and run.chosen == runs[0].chosen
        np.testing.assert_array_equal(run.result.loadings, runs[0].result.loadings)
    assert runs[0].result.input.missing is None
    # and the errors are today's: the complete-data criterion of the fits on the training rows
    test = fold_indices(150, 4, 1)[2]
    train = np.setdiff1d(np.arange(150), test)
    fitted = spcakit.fit(x[train], "tpower", 1, k=5, seed=1, metrics=[])
    expected = spcakit.workflows.cv.held_out_error(x[test] - fitted.input.mean, fitted.loadings)
    assert runs[0].fold_errors[4][2] == pytest.approx(expected, rel=1e-12)


# -- choosing k -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("fraction", [0.10, 0.20])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_planted_support_is_found_with_entries_missing(fraction: float, seed: int) -> None:
    """240 x 40, one factor of standard deviation 3 on 8 variables plus unit noise, entries missing at random:
    the 1se rule chooses k within one of 8 (as with the complete data). Measured when written: 10 of 10 seeds
    (0-9) at each fraction, for TPower and for SPCArt (``docs/missing.md``); these are the first three."""
    x = planted_support(240, 40, [8], [3.0], seed=seed).matrix
    with pytest.warns(MissingValueWarning, match="missing entries"):
        found = cross_validate(with_holes(x, fraction, seed), "tpower", 1, k="1:16", seed=seed)
    assert abs(found.chosen - 8) <= 1, (found.chosen, np.round(found.mean_error, 3))
    assert found.result.input.missing is not None and found.result.input.missing.count > 0


# -- sparse, Dask ----------------------------------------------------------------------------------------
def test_sparse_with_stored_nan_equals_dense_with_nan() -> None:
    x = planted_support(150, 20, [5], [3.0], seed=4).matrix
    x[np.abs(x) < 0.8] = 0.0  # about 40 % zeros
    holes = with_holes(x, 0.1, 4)
    holes[np.isnan(holes) & (np.random.default_rng(9).random(x.shape) < 0.5)] = np.nan
    dense = cross_validate(holes, "tpower", 1, k="2:8", folds=4, seed=2, missing="em")
    stored = sp.csr_array(np.where(np.isnan(holes), 1.0, holes))  # the NaN positions stored explicitly
    stored.data[np.isnan(holes)[stored.nonzero()]] = np.nan
    assert np.isnan(stored.data).sum() == np.isnan(holes).sum()
    sparse = cross_validate(stored, "tpower", 1, k="2:8", folds=4, seed=2, missing="em")
    np.testing.assert_allclose(np.array(sparse.fold_errors), np.array(dense.fold_errors), rtol=1e-8)
    assert sparse.chosen == dense.chosen


def test_dask_with_nan_is_refused_saying_to_compute_it() -> None:
    da = pytest.importorskip("dask.array")
    x = with_holes(planted_support(100, 10, [3], [3.0], seed=0).matrix, 0.05, 0)
    with pytest.raises(InvalidDataError, match="compute it first"):
        cross_validate(da.from_array(x, chunks=50), "tpower", 1, k="1:4")


# -- the option ------------------------------------------------------------------------------------------
def test_missing_error_refuses_naming_the_options() -> None:
    x = with_holes(planted_support(60, 8, [3], [3.0], seed=0).matrix, 0.05, 0)
    with pytest.raises(MissingValuesError, match="NaN.*missing='auto'.*missing='em'"):
        cross_validate(x, "tpower", 1, k="1:4", missing="error")
    with pytest.raises(InvalidParameterError, match="missing must be one of 'auto', 'em', 'error'"):
        cross_validate(x, "tpower", 1, k="1:4", missing="mean")


def test_em_is_silent_and_auto_warns_once() -> None:
    x = with_holes(planted_support(80, 8, [3], [3.0], seed=1).matrix, 0.1, 1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        auto = cross_validate(x, "tpower", 1, k="1:4", folds=3, missing="auto")
    said = [w for w in caught if issubclass(w.category, MissingValueWarning) and "missing entries" in str(w.message)]
    assert len(said) == 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        em = cross_validate(x, "tpower", 1, k="1:4", folds=3, missing="em")
    assert not [w for w in caught if "missing entries" in str(w.message)]
    assert np.array_equal(np.array(auto.fold_errors), np.array(em.fold_errors))


# -- the command line ------------------------------------------------------------------------------------
def test_cv_command_on_a_csv_with_empty_cells(cli, tmp_path: Any) -> None:
    x = with_holes(planted_support(90, 8, [3], [3.0], seed=2).matrix, 0.08, 2)
    path = tmp_path / "holes.csv"
    lines = [",".join(f"v{j}" for j in range(8))] + [",".join("" if np.isnan(a) else f"{a:.6f}" for a in row) for row in x]
    path.write_text("\n".join(lines) + "\n")
    result = cli.invoke("cv", "tpower", "-d", path, "-r", 1, "-k", "1:5", "--folds", 3)
    assert result.exit_code == 0, result.output
    assert "missing:" in result.output and "imputed by EM" in result.output
    quiet = cli.invoke("cv", "tpower", "-d", path, "-r", 1, "-k", "1:5", "--folds", 3, "--missing", "em", "--json")
    assert quiet.exit_code == 0, quiet.output
    bad = cli.invoke("cv", "tpower", "-d", path, "-r", 1, "-k", "1:5", "--missing", "nope")
    assert bad.exit_code == 2 and "--missing takes auto, em or error" in bad.output
    refused = cli.invoke("cv", "tpower", "-d", path, "-r", 1, "-k", "1:5", "--missing", "error")
    assert refused.exit_code == 2 and "--missing auto or em" in refused.output


# -- the warm start of spcakit.workflows.imputation -------------------------------------------------------------------
def test_impute_and_fit_warm_start_and_reuse() -> None:
    """``start`` at the EM's own fixed point converges at once; a matrix completed by an earlier call gives, from
    the column means again, the same EM (its missing entries are made NaN first); a start of the wrong length
    is refused."""
    data = read_missing(with_holes(planted_support(150, 12, [4], [3.0], seed=6).matrix, 0.1, 6), None)

    def fit_once(matrix: Any) -> spcakit.Result:
        return spcakit.fit(matrix, "tpower", 1, k=4, seed=0, missing="error", metrics=[])

    cold = impute_and_fit(data, fit_once, announce=False)
    fixed = missing_values(data)
    again = impute_and_fit(data, fit_once, announce=False)
    assert again.record.iterations == cold.record.iterations
    np.testing.assert_array_equal(again.result.loadings, cold.result.loadings)
    warm = impute_and_fit(data, fit_once, announce=False, start=fixed)
    assert warm.record.converged and warm.record.iterations < cold.record.iterations
    np.testing.assert_allclose(warm.result.loadings, cold.result.loadings, atol=1e-6)
    with pytest.raises(InvalidParameterError, match="one per missing entry"):
        impute_and_fit(data, fit_once, announce=False, start=fixed[:-1])
