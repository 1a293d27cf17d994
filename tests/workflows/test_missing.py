"""Missing values: EM on the sparse low-rank model (spcakit.workflows.imputation), fit/SparsePCA/transform.

Measured when these tests were written (tpower, r = 2, k = 5 on planted_support(300, 40, [5, 5], [4, 3]), entries
missing completely at random): the supports equal the complete data's at 5, 10, 20 and 30 % missing for each of
5 masks (seeds 0-4), in 7-9, 8-10, 11-15 and 17-20 EM iterations. So the planted test asserts equality at every
fraction (3 masks each). Digits (greedy, r = 3, k = 8, 10 % missing, masks 0-2): each EM support's best Jaccard
overlap with a complete-data support is 0.778 or 1 (per mask: [0.778, 1, 1], [1, 1, 1], [1, 0.778, 1]; mask 0
swaps the first two components, whose variances are close), and the EM loadings' CPEV on the complete data is
0.2898, 0.2903, 0.2896 against the complete fit's 0.2904.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import spcakit
from spcakit.core.errors import InvalidDataError, InvalidParameterError, MissingValuesError, MissingValueWarning
from spcakit.workflows.imputation import impute_and_fit, observed_scores
from spcakit.inputs import read_missing
from spcakit.inputs.datasets import planted_support
from spcakit.workflows.model import Model

PLANTED = planted_support(300, 40, [5, 5], [4.0, 3.0], seed=1).matrix


def supports(result: spcakit.Result) -> list[frozenset[int]]:
    return [frozenset(np.flatnonzero(result.loadings[:, j]).tolist()) for j in range(result.r)]


def with_holes(x: np.ndarray, fraction: float, seed: int) -> np.ndarray:
    """``x`` with each entry missing (NaN) independently with probability ``fraction``: completely at random."""
    holes = x.copy()
    holes[np.random.default_rng(seed).random(x.shape) < fraction] = np.nan
    return holes


def cpev_on(x: np.ndarray, loadings: np.ndarray) -> float:
    """The CPEV of ``loadings`` on the data ``x``: tr(Q^T C Q) / tr C, Q an orthonormal basis of their span."""
    c = np.cov(x, rowvar=False)
    q, _ = np.linalg.qr(loadings)
    return float(np.trace(q.T @ c @ q) / np.trace(c))


# -- supports recovered as from complete data --------------------------------------------------------------
@pytest.mark.parametrize("fraction", [0.05, 0.10, 0.20, 0.30])
def test_planted_supports_are_recovered_as_from_complete_data(fraction: float) -> None:
    complete = supports(spcakit.fit(PLANTED, "tpower", 2, k=5))
    for seed in range(3):
        result = spcakit.fit(with_holes(PLANTED, fraction, seed), "tpower", 2, k=5, missing="em")
        assert supports(result) == complete, (fraction, seed)
        record = result.input.missing
        assert record.converged and 1 <= record.iterations < record.max_iter
        assert abs(record.fraction - fraction) < 0.02  # 12 000 entries: the binomial sd is 0.004 at 30 %


def test_digits_with_a_tenth_missing_match_the_complete_supports() -> None:
    load_digits = pytest.importorskip("sklearn.datasets").load_digits
    digits = load_digits().data
    full = spcakit.fit(digits, "greedy", 3, k=8)
    for seed in range(3):
        result = spcakit.fit(with_holes(digits, 0.10, seed), "greedy", 3, k=8, missing="em")
        best = [max(len(a & b) / len(a | b) for b in supports(full)) for a in supports(result)]
        assert min(best) >= 0.75 and np.mean(best) >= 0.9, (seed, best)  # measured: 0.778 at worst, see above
        assert cpev_on(digits, result.loadings) >= 0.99 * cpev_on(digits, full.loadings)  # measured >= 0.997


# -- the options -------------------------------------------------------------------------------------------
def test_complete_data_give_the_same_result_under_every_option() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", MissingValueWarning)  # nothing is said about complete data
        refused, auto, em = (spcakit.fit(PLANTED, "tpower", 2, k=5, missing=m) for m in ("error", "auto", "em"))
    for result in (auto, em):
        assert np.array_equal(result.loadings, refused.loadings)
        assert result.metrics == refused.metrics and result.input == refused.input
        assert result.input.missing is None and "missing" not in result.to_dict()["input"]


def test_auto_warns_with_the_fraction_and_em_does_not() -> None:
    holes = with_holes(PLANTED, 0.1, 0)
    fraction = float(np.isnan(holes).mean())
    with pytest.warns(MissingValueWarning, match=rf"{fraction:.1%} of the 300 x 40.*EM") as caught:
        auto = spcakit.fit(holes, "tpower", 2, k=5)
    assert caught[0].filename == __file__  # the warning points at the caller
    with warnings.catch_warnings():
        warnings.simplefilter("error", MissingValueWarning)
        em = spcakit.fit(holes, "tpower", 2, k=5, missing="em")
    assert np.array_equal(auto.loadings, em.loadings)
    assert any("missing entries" in w for w in auto.warnings) and not any("missing entries" in w for w in em.warnings)
    document = auto.to_dict()["input"]["missing"]
    assert document["count"] == int(np.isnan(holes).sum()) and document["fraction"] == pytest.approx(fraction)
    assert document["model"] == "em" and document["converged"] is True


def test_error_refuses_naming_the_other_options() -> None:
    holes = with_holes(PLANTED, 0.1, 0)
    with pytest.raises(MissingValuesError, match="NaN.*missing='auto'.*missing='em'"):
        spcakit.fit(holes, "tpower", 2, k=5, missing="error")
    with pytest.raises(InvalidParameterError, match="missing must be one of 'auto', 'em', 'error'"):
        spcakit.fit(holes, "tpower", 2, k=5, missing="mean")


def test_infinite_entries_and_covariances_with_nan_are_refused_always() -> None:
    bad = with_holes(PLANTED, 0.1, 0)
    bad[0, 0] = np.inf
    for missing in ("auto", "em"):
        with pytest.raises(InvalidDataError, match="infinite"):
            spcakit.fit(bad, "tpower", 2, k=5, missing=missing)
    cov = np.cov(PLANTED, rowvar=False)
    cov[1, 2] = cov[2, 1] = np.nan
    with pytest.raises(InvalidDataError, match="NaN"):
        spcakit.fit(cov, "tpower", 2, k=5, covariance=True)


def test_dask_input_with_nan_is_refused_saying_to_compute_it() -> None:
    da = pytest.importorskip("dask.array")
    with pytest.raises(InvalidDataError, match=r"compute it first"):
        spcakit.fit(da.from_array(with_holes(PLANTED, 0.05, 0), chunks=100), "tpower", 2, k=5)


# -- inputs ------------------------------------------------------------------------------------------------
def _sparse_planted() -> np.ndarray:
    x = PLANTED.copy()
    x[np.abs(x) < 0.8] = 0.0  # about 40 % zeros
    return x


def test_sparse_with_stored_nan_equals_dense_with_nan() -> None:
    dense = _sparse_planted()
    rng = np.random.default_rng(2)
    rows, cols = np.nonzero(dense)
    pick = rng.random(rows.size) < 0.15
    dense[rows[pick], cols[pick]] = np.nan
    matrix = sp.csr_array(dense)  # NaN is not zero: stored
    assert int(np.isnan(matrix.data).sum()) == int(pick.sum())
    assert sp.issparse(read_missing(matrix, None).matrix)  # kept sparse: the NaN stay stored entries
    from_sparse = spcakit.fit(matrix, "tpower", 2, k=5, missing="em")
    from_dense = spcakit.fit(dense, "tpower", 2, k=5, missing="em")
    # the same model; the sums are taken in another order (sparse Gram vs dense covariance): rounding only
    np.testing.assert_allclose(from_sparse.loadings, from_dense.loadings, atol=1e-9)
    assert from_sparse.input.missing.count == from_dense.input.missing.count == int(pick.sum())
    assert from_sparse.input.missing.iterations == from_dense.input.missing.iterations


def test_a_column_without_observed_values_gets_zero_loadings_with_a_warning() -> None:
    holes = with_holes(PLANTED, 0.05, 0)
    holes[:, 7] = np.nan
    holes[1:, 9] = np.nan  # one observed value: constant
    with pytest.warns(MissingValueWarning, match=r"1 column\(s\) have no observed value \(x08\)"):
        result = spcakit.fit(holes, "tpower", 2, k=5, missing="em")
    assert not result.loadings[[7, 9]].any()
    assert result.input.missing.empty_columns == ("x08",)


def test_weights_with_nan_use_the_weighted_means_and_match_repeated_rows() -> None:
    holes = with_holes(PLANTED, 0.1, 3)
    w = np.random.default_rng(4).integers(1, 3, PLANTED.shape[0])
    weighted = spcakit.fit(holes, "tpower", 2, k=5, missing="em", sample_weight=w)
    repeated = spcakit.fit(np.repeat(holes, w, axis=0), "tpower", 2, k=5, missing="em")
    # the same EM, except its stopping test (an RMS over the missing entries, which repetition counts twice)
    assert supports(weighted) == supports(repeated)
    np.testing.assert_allclose(weighted.loadings, repeated.loadings, atol=1e-3)


def test_a_csv_path_with_empty_cells_is_read_and_imputed(tmp_path) -> None:
    holes = with_holes(planted_support(60, 6, [3], [4.0], seed=2).matrix, 0.1, 0)
    lines = ["a,b,c,d,e,f"] + [",".join("" if np.isnan(v) else repr(float(v)) for v in row) for row in holes]
    path = tmp_path / "holes.csv"
    path.write_text("\n".join(lines) + "\n")
    from_file = spcakit.fit(path, "tpower", 1, k=2, missing="em", drop=["f"])
    from_array = spcakit.fit(holes[:, :5], "tpower", 1, k=2, missing="em", feature_names=list("abcde"))
    assert np.array_equal(from_file.loadings, from_array.loadings) and from_file.feature_names == tuple("abcde")
    with pytest.raises(MissingValuesError, match="empty.*--missing auto or em"):
        spcakit.fit(path, "tpower", 1, k=2, missing="error")


# -- the EM never touches what was observed -----------------------------------------------------------------
@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.02, 0.4))
def test_em_never_changes_observed_entries(seed: int, fraction: float) -> None:
    x = np.random.default_rng(seed).standard_normal((12, 5)) @ np.diag([3.0, 2.0, 1.0, 1.0, 1.0])
    holes = with_holes(x, fraction, seed)
    holes[0] = x[0]  # at least one complete row, so that no column is entirely missing
    observed = ~np.isnan(holes)
    data = read_missing(holes, None)
    seen = []

    def fit_once(matrix: np.ndarray) -> spcakit.Result:
        seen.append(matrix.copy())
        return spcakit.fit(matrix, "tpower", 1, k=2, missing="error")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        imputed = impute_and_fit(data, fit_once, announce=False, max_iter=10)
    assert len(seen) == imputed.record.iterations
    for matrix in seen:
        assert np.array_equal(matrix[observed], holes[observed]) and np.isfinite(matrix).all()


# -- transform ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("standardize", [False, True])
def test_transform_scores_incomplete_rows_by_least_squares_on_the_observed_entries(standardize: bool) -> None:
    pytest.importorskip("sklearn")
    model = spcakit.SparsePCA(2, method="tpower", k=5, standardize=standardize).fit(PLANTED)
    rows = PLANTED[:6].copy()
    rows[1, :20] = np.nan
    rows[2, :] = np.nan
    rows[3, [0, 5, 12]] = np.nan
    scores = model.transform(rows)
    complete = model.transform(PLANTED[:6])
    np.testing.assert_allclose(scores[[0, 4, 5]], complete[[0, 4, 5]], rtol=1e-12)  # complete rows: as before
    assert np.array_equal(scores[2], np.zeros(2))  # nothing observed: the mean
    v, scale = model.result_.loadings, model.scale_ if standardize else np.ones(PLANTED.shape[1])
    for i in (1, 3):
        o = ~np.isnan(rows[i])
        expected = np.linalg.lstsq(v[o], (rows[i, o] - model.mean_[o]) / scale[o], rcond=None)[0]
        np.testing.assert_allclose(scores[i], expected, rtol=1e-10, atol=1e-12)
    # a complete row scored this way is the regression score
    np.testing.assert_allclose(observed_scores(PLANTED[:3], v, model.mean_, model.scale_), complete[:3], rtol=1e-10)


def test_transform_of_a_rank_deficient_observed_part_is_the_minimum_norm_solution() -> None:
    loadings = np.zeros((6, 2))
    loadings[[0, 1], 0] = loadings[[2, 3], 1] = 1 / np.sqrt(2)
    row = np.array([[1.0, 3.0, np.nan, np.nan, 5.0, 6.0]])  # nothing observed loads on the second component
    scores = observed_scores(row, loadings, np.zeros(6), None)
    np.testing.assert_allclose(scores, [[4 / np.sqrt(2) / 1.0, 0.0]], rtol=1e-12)


def test_the_estimator_fits_nan_and_refuses_it_where_rows_must_be_complete() -> None:
    pytest.importorskip("sklearn")
    holes = with_holes(PLANTED, 0.1, 1)
    assert spcakit.SparsePCA().get_params()["missing"] == "auto"
    with pytest.warns(MissingValueWarning):
        model = spcakit.SparsePCA(2, method="tpower", k=5).fit(holes)
    assert supports(model.result_) == supports(spcakit.fit(PLANTED, "tpower", 2, k=5))
    assert model.result_.input.missing.count == int(np.isnan(holes).sum())
    np.testing.assert_allclose(model.mean_, model.result_.input.mean)
    assert np.isfinite(model.transform(holes)).all()
    with pytest.raises(InvalidDataError, match="score needs complete rows"):
        model.score(holes)
    with pytest.raises(MissingValuesError, match="missing='error' refuses them.*SparsePCA\\(missing='auto'\\)"):
        spcakit.SparsePCA(2, method="tpower", k=5, missing="error").fit(holes)
    sparse_holes = sp.csr_matrix(holes)  # every entry stored, the NaN among them
    fitted = spcakit.SparsePCA(2, method="tpower", k=5, missing="em").fit(sparse_holes)
    np.testing.assert_allclose(fitted.components_, model.components_, atol=1e-9)
    np.testing.assert_allclose(fitted.transform(sparse_holes), model.transform(holes), atol=1e-8)


@pytest.mark.parametrize("method", ["tpower", "auto"])
def test_fit_transform_scores_incomplete_rows_as_fit_then_transform(method: str) -> None:
    pytest.importorskip("sklearn")
    holes = with_holes(PLANTED, 0.05, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MissingValueWarning)
        together = spcakit.SparsePCA(2, method=method, k=5).fit_transform(holes)
        model = spcakit.SparsePCA(2, method=method, k=5).fit(holes)
    assert np.isfinite(together).all()
    np.testing.assert_allclose(together, model.transform(holes), rtol=1e-12, atol=1e-12)


def test_a_pipeline_with_missing_values_reaches_a_classifier() -> None:
    pytest.importorskip("sklearn")
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_score
    from sklearn.pipeline import make_pipeline

    holes = with_holes(PLANTED, 0.05, 4)
    # the class is the sign of the first component's score on the complete data
    labels = (spcakit.SparsePCA(2, method="tpower", k=5).fit_transform(PLANTED)[:, 0] > 0).astype(int)
    pipeline = make_pipeline(spcakit.SparsePCA(2, method="tpower", k=5), LogisticRegression())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MissingValueWarning)
        accuracy = cross_val_score(pipeline, holes, labels, cv=3, error_score="raise")
        fitted = pipeline.fit(holes, labels)
    assert np.isfinite(fitted.predict_proba(holes)).all()
    assert accuracy.mean() > 0.8  # the incomplete rows' scores carry the component: far above chance (0.5)


def test_the_record_survives_a_model_file() -> None:
    result = spcakit.fit(with_holes(PLANTED, 0.1, 0), "tpower", 2, k=5, missing="em")
    model = Model.from_result(result)
    loaded = Model.from_dict(model.to_dict())
    assert loaded.input.missing == result.input.missing
    assert loaded.to_dict()["input"]["missing"]["iterations"] == result.input.missing.iterations


def test_an_em_that_does_not_settle_says_so_and_what_helps():
    # one strong component over three variables and three independent ones: the second loading is noise, and
    # its imputed values settle slowly (measured: r = 1 settles in about 13 iterations, r = 2 not within 50)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((60, 6))
    x[:, :3] += 2 * rng.standard_normal((60, 1))
    x[rng.random(x.shape) < 0.1] = np.nan
    with pytest.warns(MissingValueWarning, match=r"stopped after 50 iterations before converging .*fewer components"):
        result = spcakit.fit(x, "tpower", r=2, k=3, missing="em")
    record = result.input.missing
    assert not record.converged and record.iterations == record.max_iter == 50 and record.change > record.tol
    assert any("before converging" in str(w) for w in result.warnings)
    with warnings.catch_warnings():
        warnings.simplefilter("error", MissingValueWarning)
        settled = spcakit.fit(x, "tpower", r=1, k=3, missing="em")
    assert settled.input.missing.converged


def test_the_defaults_on_standardised_data_follow_the_columns_and_find_the_complete_supports() -> None:
    # what users run: spcakit.fit's default method and SparsePCA() on standardised data (every variance tied)
    # with 10 % missing, in another column order: the supports are the complete data's, permuted with the columns
    holes = with_holes(PLANTED, 0.10, seed=4)
    complete = supports(spcakit.fit(PLANTED, r=2, k=5, standardize=True))
    order = np.random.default_rng(5).permutation(PLANTED.shape[1])
    with pytest.warns(MissingValueWarning, match="missing"):
        result = spcakit.fit(holes, r=2, k=5, standardize=True)
    permuted = spcakit.fit(holes[:, order], r=2, k=5, standardize=True, missing="em")
    assert supports(result) == complete
    assert [frozenset(int(order[j]) for j in support) for support in supports(permuted)] == complete
    with pytest.warns(MissingValueWarning):
        model = spcakit.SparsePCA(2, k=5, standardize=True).fit(holes)
    assert [frozenset(np.flatnonzero(row).tolist()) for row in model.components_] == complete
