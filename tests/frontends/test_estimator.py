"""spcakit.SparsePCA: the scikit-learn estimator."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

sklearn = pytest.importorskip("sklearn")
pd = pytest.importorskip("pandas")

from sklearn.base import clone  # noqa: E402
from sklearn.datasets import load_breast_cancer  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import GridSearchCV  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

import spcakit  # noqa: E402
from spcakit import InvalidDataError, InvalidParameterError  # noqa: E402
from spcakit.estimator import SparsePCA  # noqa: E402
from spcakit.workflows.model import regression_map  # noqa: E402
from spcakit.analysis.metrics import nonorthogonality  # noqa: E402


@pytest.fixture(scope="module")
def cancer() -> pd.DataFrame:
    """Breast-cancer features (569 x 30, bundled with scikit-learn): variables in very different units."""
    return load_breast_cancer(as_frame=True).data


def gaussian(n: int = 80, p: int = 8, seed: int = 0) -> np.ndarray:
    """Correlated Gaussian data with column means far from zero and unequal scales."""
    rng = np.random.default_rng(seed)
    mixing = rng.normal(size=(p, p))
    return rng.normal(size=(n, p)) @ mixing * np.linspace(1, 5, p) + np.linspace(-50, 50, p)


# -- scikit-learn's estimator checks ------------------------------------------------------------------------
# One configuration per kind of method: SPCArt (block driver, thresholding), TPower (deflation, truncation by
# sparsity: needs k or lam), greedy (cardinality-k solver, generalized deflation), FSPCA IPU (multistart driver,
# row sparsity shared by all loadings: k >= n_components). k = 2 is valid on every data set the checks use with
# two or more features; with one feature (check_fit2d_1feature) the estimator refuses k = 2 with a message naming
# n_features=1, which the check accepts. No check is expected to fail; check_array_api_input is skipped by
# scikit-learn itself unless SCIPY_ARRAY_API is set.
CHECKED = [
    SparsePCA(),
    SparsePCA(method="tpower", k=2),
    SparsePCA(method="greedy", k=2),
    SparsePCA(method="fspca-ipu", k=2),
    SparsePCA(method="tpower", target_cpev=0.8),
]


@parametrize_with_checks(CHECKED, expected_failed_checks=lambda estimator: {})
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)


def test_import_spcakit_does_not_import_scikit_learn():
    code = (
        "import sys, spcakit\n"
        "assert 'sklearn' not in sys.modules, 'import spcakit imported scikit-learn'\n"
        "from spcakit.estimator import SparsePCA\n"
        "assert spcakit.SparsePCA is SparsePCA and 'sklearn' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# -- the "done when" on a standardised data set -----------------------------------------------------
@pytest.mark.parametrize("method", ["tpower", "greedy"])
def test_standardised_cardinality_names_and_explained_variance(cancer, method):
    model = SparsePCA(n_components=3, k=5, method=method, standardize=True).fit(cancer)

    assert model.components_.shape == (3, 30)
    assert np.count_nonzero(model.components_, axis=1).tolist() == [5, 5, 5]
    assert list(model.feature_names_in_) == list(cancer.columns)
    assert model.result_.feature_names == tuple(cancer.columns)
    assert model.n_features_in_ == 30 and model.n_components_ == 3
    np.testing.assert_allclose(model.scale_, cancer.std(ddof=1).to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(model.mean_, cancer.mean().to_numpy(), rtol=1e-12)

    # the adjusted variances are the result's additional variances; their ratios sum to its cumulative variance
    metrics = model.result_.metrics
    np.testing.assert_allclose(model.explained_variance_, metrics["additional_variance"], rtol=1e-15)
    ratio = model.explained_variance_ratio_
    # tr(C) of a correlation matrix is p: 30 columns of unit variance (up to rounding in the division by scale_)
    np.testing.assert_allclose(model.explained_variance_.sum() / ratio.sum(), 30.0, rtol=1e-12)
    np.testing.assert_allclose(np.cumsum(ratio), metrics["cumulative_variance"], rtol=1e-12)
    # CPEV is the same quantity through an SVD basis of the span instead of Gram-Schmidt
    assert ratio.sum() == pytest.approx(metrics["cpev"], rel=1e-10)
    assert np.all(np.diff(np.cumsum(ratio)) > 0) and ratio.sum() < 1
    # the certificate: each bound at least what the first t loadings explain together, at most tr(C) = p
    assert model.bound_.shape == model.gap_.shape == (3,)
    achieved = model.bound_ * (1 - model.gap_)  # the variance the first t loadings explain together
    np.testing.assert_allclose(achieved, np.cumsum(model.explained_variance_), rtol=1e-9)
    assert np.all((0 <= model.gap_) & (model.gap_ < 1)) and np.all(model.bound_ <= 30.0 * (1 + 1e-12))

    # standardising = the method on the correlation matrix
    corr = np.corrcoef(cancer.to_numpy(), rowvar=False)
    on_correlation = spcakit.fit(spcakit.Covariance(corr), method, r=3, k=5, seed=0)
    np.testing.assert_allclose(model.components_, on_correlation.loadings.T, atol=1e-10)


def test_raw_scale_picks_large_unit_variables(cancer):
    """Without standardising the leading component is dominated by the variables with the largest variance."""
    raw = SparsePCA(n_components=1, k=2, method="tpower").fit(cancer)
    top_two = set(cancer.var().nlargest(2).index)
    assert {cancer.columns[j] for j in np.flatnonzero(raw.components_[0])} == top_two
    assert raw.scale_ is None


def test_matches_spcakit_fit(cancer):
    x = cancer.to_numpy()
    model = SparsePCA(n_components=4, method="tpower", k=6, random_state=5).fit(x)
    direct = spcakit.fit(x, "tpower", r=4, k=6, seed=5)
    np.testing.assert_array_equal(model.components_, direct.loadings.T)
    assert model.n_iter_ == direct.iterations and model.seed_ == 5
    assert model.result_.feature_names == direct.feature_names  # spcakit's default names for an array


# -- transform, inverse_transform, score --------------------------------------------------------------------
def test_transform_is_least_squares_regression_on_the_loadings():
    x = gaussian()
    model = SparsePCA(n_components=3, method="spcart").fit(x)
    loadings = model.components_.T
    assert nonorthogonality(loadings) > 1e-3  # otherwise regression and projection coincide
    centred = x - x.mean(axis=0)
    expected = np.linalg.lstsq(loadings, centred.T, rcond=None)[0].T

    scores = model.transform(x)
    # two least-squares solvers on a well-conditioned 8 x 3 system: agreement to a few ulps of the scores' size
    cond = np.linalg.cond(loadings)
    np.testing.assert_allclose(scores, expected, rtol=0, atol=1e-12 * cond * np.abs(expected).max())
    np.testing.assert_allclose(model.fit_transform(x), scores, rtol=0, atol=1e-12 * np.abs(scores).max())
    assert np.abs(scores - centred @ loadings).max() > 1e-3 * np.abs(scores).max()  # not the plain projection


def test_standardised_transform_regresses_the_scaled_rows():
    x = gaussian(seed=1)
    model = SparsePCA(n_components=2, method="tpower", k=3, standardize=True).fit(x)
    z = (x - x.mean(axis=0)) / x.std(axis=0, ddof=1)
    expected = np.linalg.lstsq(model.components_.T, z.T, rcond=None)[0].T
    np.testing.assert_allclose(model.transform(x), expected, rtol=0, atol=1e-12 * np.abs(expected).max())


def test_inverse_transform_round_trip_with_all_dense_components():
    x = gaussian(p=6)
    model = SparsePCA(n_components=6, method="spcart", truncator="none").fit(x)
    assert np.count_nonzero(model.components_) == 36  # dense: nothing truncated
    back = model.inverse_transform(model.transform(x))
    np.testing.assert_allclose(back, x, rtol=0, atol=1e-12 * np.abs(x).max())
    assert model.explained_variance_ratio_.sum() == pytest.approx(1.0, rel=1e-12)

    standardised = SparsePCA(n_components=6, method="spcart", truncator="none", standardize=True).fit(x)
    np.testing.assert_allclose(standardised.inverse_transform(standardised.transform(x)), x, rtol=0,
                               atol=1e-12 * np.abs(x).max())


@pytest.mark.parametrize("standardize", [False, True])
def test_reconstruction_is_the_projection_onto_the_span_and_its_error_matches(standardize):
    x = gaussian(seed=2)
    n = x.shape[0]
    model = SparsePCA(n_components=3, method="greedy", k=3, standardize=standardize).fit(x)
    rows = x - model.mean_
    if standardize:
        rows = rows / model.scale_
    approx = model.transform(x) @ model.components_
    residual = rows - approx
    # least squares: the residual is orthogonal to every loading
    assert np.abs(residual @ model.components_.T).max() <= 1e-10 * np.abs(rows).max() ** 2

    total = np.sum(rows**2) / (n - 1)  # tr(C)
    expected = -(n - 1) / n * total * (1 - model.explained_variance_ratio_.sum())
    assert -model.reconstruction_error(x) == pytest.approx(expected, rel=1e-10)
    assert model.reconstruction_error(x) == pytest.approx(np.sum(residual**2) / n, rel=1e-12)


def test_inverse_transform_refuses_scores_of_the_wrong_width():
    model = SparsePCA(n_components=2).fit(gaussian())
    with pytest.raises(InvalidDataError, match="2 columns"):
        model.inverse_transform(np.zeros((4, 3)))


def test_regression_map_of_dependent_loadings_is_minimum_norm():
    unit = np.array([[0.6], [0.8], [0.0]])
    loadings = np.hstack([unit, unit, [[0.0], [0.0], [1.0]]])  # the first two loadings coincide
    regression, rank = regression_map(loadings)
    assert rank == 2
    rows = np.random.default_rng(0).normal(size=(5, 3))
    scores = rows @ regression
    np.testing.assert_allclose(scores[:, 0], scores[:, 1], atol=1e-14)  # the coefficient is shared equally
    basis = np.hstack([unit, [[0.0], [0.0], [1.0]]])  # orthonormal basis of the loadings' 2-D span
    np.testing.assert_allclose(scores @ loadings.T, rows @ basis @ basis.T, atol=1e-14)  # projection onto the span


# -- pandas output, feature names ---------------------------------------------------------------------------
def test_feature_names_out_and_pandas_output(cancer):
    model = SparsePCA(n_components=3, method="tpower", k=4, standardize=True).set_output(transform="pandas")
    scores = model.fit_transform(cancer)
    # scikit-learn's convention (ClassNamePrefixFeaturesOutMixin): lower-case class name + index
    assert list(scores.columns) == ["PC1", "PC2", "PC3"]
    assert list(model.get_feature_names_out()) == list(scores.columns)
    assert scores.index.equals(cancer.index)
    np.testing.assert_allclose(scores.to_numpy(), model.set_output(transform="default").transform(cancer), rtol=1e-15)


# -- scikit-learn workflows ---------------------------------------------------------------------------------
def test_clone_gives_an_unfitted_copy_that_refits_identically(cancer):
    model = SparsePCA(n_components=2, method="tpower", k=3, standardize=True, params={"stopper.tol": 1e-3}).fit(cancer)
    copy = clone(model)
    assert copy.get_params() == model.get_params()
    assert not hasattr(copy, "components_")
    np.testing.assert_array_equal(copy.fit(cancer).components_, model.components_)


def test_the_bound_relaxation_is_a_parameter_that_round_trips(cancer):
    model = SparsePCA(n_components=2, method="tpower", k=4, standardize=True, bound="threshold")
    assert model.get_params()["bound"] == "threshold" and SparsePCA().get_params()["bound"] == "fast"
    assert clone(model).get_params() == model.get_params()
    assert model.set_params(bound="fast").bound == "fast"
    fast = model.fit(cancer)
    fast_bound, fast_gap = fast.bound_.copy(), fast.gap_.copy()
    tight = clone(model).set_params(bound="threshold").fit(cancer)
    assert tight.result_.spec["bound"] == "threshold" and fast.result_.spec["bound"] == "fast"
    np.testing.assert_array_equal(tight.components_, fast.components_)
    assert np.all(tight.bound_ <= fast_bound) and np.all(tight.gap_ <= fast_gap + 1e-12)
    with pytest.raises(InvalidParameterError, match="choose one of: fast, threshold"):
        SparsePCA(bound="sdp").fit(cancer)
    with pytest.raises(InvalidParameterError, match="SparsePCA\\(bound=...\\)"):
        SparsePCA(params={"bound": "threshold"}).fit(cancer)


def test_pipeline_and_grid_search_over_k_method_and_n_components(cancer):
    target = load_breast_cancer().target
    pipeline = Pipeline([
        ("spca", SparsePCA(standardize=True)),
        ("classify", LogisticRegression(max_iter=1000)),
    ])  # fmt: skip
    grid = {"spca__method": ["tpower", "greedy"], "spca__k": [3, 6], "spca__n_components": [2, 4]}
    search = GridSearchCV(pipeline, grid, cv=2, error_score="raise").fit(cancer, target)
    assert len(search.cv_results_["params"]) == 8
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    assert search.best_score_ > 0.85  # sparse components of these data separate the classes well
    best = search.best_estimator_.named_steps["spca"]
    assert np.count_nonzero(best.components_, axis=1).tolist() == [search.best_params_["spca__k"]] * best.n_components_


def test_grid_search_with_the_held_out_score(cancer):
    """Without a supervised step GridSearchCV ranks by ``score``: more components predict held-out entries better."""
    search = GridSearchCV(SparsePCA(method="tpower", k=5, standardize=True), {"n_components": [1, 3]}, cv=3,
                          error_score="raise").fit(cancer)
    assert search.best_params_ == {"n_components": 3}


def test_method_spec_from_compose_and_random_state():
    x = gaussian()
    spec = spcakit.compose(driver="block", initializer="random")
    a = SparsePCA(method=spec, random_state=np.random.RandomState(3)).fit(x)
    b = SparsePCA(method=spec, random_state=np.random.RandomState(3)).fit(x)
    assert a.seed_ == b.seed_ == np.random.RandomState(3).randint(np.iinfo(np.int32).max)
    np.testing.assert_array_equal(a.components_, b.components_)
    assert a.result_.spec["initializer"]["name"] == "random"
    direct = spcakit.fit(x, spec, r=2, seed=a.seed_)
    np.testing.assert_array_equal(a.components_, direct.loadings.T)


def test_params_replace_the_stopper():
    model = SparsePCA(method="spcart", params={"stopper": {"name": "max-iterations", "n": 3}}).fit(gaussian())
    assert model.result_.spec["stopper"] == {"name": "max-iterations", "n": 3} and model.n_iter_ == 3


def test_unconverged_result_warns_as_scikit_learn_does():
    with pytest.warns(ConvergenceWarning, match="iteration limit"):
        SparsePCA(n_components=3, method="spcart", params={"n": 1}).fit(gaussian())


def test_center_false_scales_by_root_mean_square():
    x = gaussian()
    model = SparsePCA(n_components=2, method="tpower", k=3, center=False, standardize=True).fit(x)
    np.testing.assert_array_equal(model.mean_, np.zeros(8))
    np.testing.assert_allclose(model.scale_, np.sqrt(np.mean(x**2, axis=0)), rtol=1e-12)


# -- bad parameters and data: clear messages ------------------------------------------------------------------
def test_k_refused_by_a_method_without_cardinality_names_those_that_take_it(cancer):
    with pytest.raises(InvalidParameterError, match=r"'gpower-l1' takes no k.*tpower"):
        SparsePCA(k=5, method="gpower-l1").fit(cancer)
    model = SparsePCA(k=5).fit(cancer)  # SPCArt (the default) takes k: truncation by sparsity, λ = p - k
    assert np.count_nonzero(model.components_, axis=1).tolist() == [5, 5]


@pytest.mark.parametrize(("params", "message"), [
    ({"k": 31, "method": "tpower"}, r"k=31 nonzeros per component is more than the data's n_features=30"),
    ({"k": 0, "method": "tpower"}, r"k \(nonzeros per component\) must be a positive integer"),
    ({"k": 3, "method": "tpower", "params": {"k": 4}}, r"k is given both"),
    ({"params": [("k", 4)]}, r"params must be a mapping"),
    ({"params": {"seed": 1}}, r"'seed' is set by SparsePCA\(random_state=\.\.\.\)"),
    ({"n_components": 31}, r"n_components=31 must be between 1 and min\(n_features.*= 30"),
    ({"n_components": 0}, r"n_components must be a positive integer"),
    ({"method": 3}, r"method must be a registered method name"),
    ({"standardize": "yes"}, r"standardize must be True or False"),
    ({"target_cpev": 0.9, "k": 4}, r"give either target_cpev or k, not both"),
    ({"target_cpev": 1.5}, r"target_cpev is a fraction of PCA's CPEV in \(0, 1\]"),
    ({"target_cpev": 0.9, "method": "gpower-l1"}, r"k"),
    ({"params": {"refiner": "swap"}}, r"'refiner' is set by SparsePCA\(refiner=\.\.\.\)"),
])  # fmt: skip
def test_bad_parameters_say_what_is_valid(cancer, params, message):
    with pytest.raises(InvalidParameterError, match=message):
        SparsePCA(**params).fit(cancer)


def test_n_components_bounded_by_centred_rank():
    with pytest.raises(InvalidParameterError, match=r"n_samples - 1 .* = 4 for data with n_samples=5"):
        SparsePCA(n_components=5).fit(gaussian(n=5, p=8))


def test_standardize_leaves_constant_columns_at_zero(cancer):
    frame = cancer.iloc[:, :5].assign(constant=7.0)
    with pytest.warns(spcakit.ConstantColumnWarning, match=r"1 column\(s\) are constant.*5 \(constant\)"):
        model = SparsePCA(standardize=True).fit(frame)
    assert model.scale_[5] == 1.0 and np.all(model.components_[:, 5] == 0)
    assert np.all(np.isfinite(model.transform(frame)))
    with pytest.raises(InvalidDataError, match=r"6 column\(s\) are constant"):
        SparsePCA(standardize=True).fit(frame.assign(**{name: 1.0 for name in frame.columns}))


def test_fit_leaves_parameters_alone(cancer):
    params = {"stopper.tol": 1e-3}
    model = SparsePCA(method="tpower", k=4, params=params)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.fit(cancer)
    assert params == {"stopper.tol": 1e-3} and model.params is params


def test_k_per_component_where_the_method_takes_it(cancer):
    model = SparsePCA(n_components=2, k=[3, 5], method="encoder-iterative", standardize=True).fit(cancer)
    assert np.count_nonzero(model.components_, axis=1).tolist() == [3, 5]
    with pytest.raises(InvalidParameterError, match="one k for all its loadings"):
        SparsePCA(n_components=2, k=[3, 5], method="tpower").fit(cancer)
    with pytest.raises(InvalidParameterError, match="k=31 nonzeros per component"):
        SparsePCA(n_components=2, k=[3, 31], method="encoder-iterative").fit(cancer)


def _pca_cpev(correlation: np.ndarray, r: int) -> float:
    values = np.linalg.eigvalsh(correlation)
    return float(values[-r:].sum() / values.sum())


def test_target_cpev_chooses_the_smallest_k_that_reaches_the_fraction_of_pca(cancer):
    model = SparsePCA(n_components=3, method="tpower", target_cpev=0.9, standardize=True).fit(cancer)
    ceiling = _pca_cpev(np.corrcoef(cancer.to_numpy(), rowvar=False), 3)
    k = model.k_
    assert isinstance(k, int) and 1 <= k < 30
    assert np.count_nonzero(model.components_, axis=1).tolist() == [k] * 3
    assert model.explained_variance_ratio_.sum() >= 0.9 * ceiling * (1 - 1e-9)
    below = spcakit.fit(cancer, "tpower", r=3, k=k - 1, standardize=True)
    assert below.metrics["cpev"] < 0.9 * ceiling  # the level below misses the target (a scan: p = 30 levels)


def test_k_attribute_is_the_k_given_or_none():
    x = gaussian()
    assert SparsePCA(method="tpower", k=3).fit(x).k_ == 3
    assert SparsePCA(method="tpower", lam=5).fit(x).k_ is None


def test_refiner_replaces_or_removes_the_methods_refiner():
    x = gaussian(n=120, p=10)
    refined = SparsePCA(n_components=2, method="tpower", k=3, refiner="support-refit").fit(x)
    plain = SparsePCA(n_components=2, method="tpower", k=3, refiner="none").fit(x)
    assert refined.result_.spec["refiner"] == {"name": "support-refit"}
    assert plain.result_.spec["refiner"] is None
    with pytest.raises(spcakit.UnknownNameError, match=r"unknown refiner 'no-such-refiner'.*registered refiners"):
        SparsePCA(refiner="no-such-refiner").fit(x)
    assert np.count_nonzero(refined.components_, axis=1).tolist() == [3, 3]
    assert refined.explained_variance_ratio_.sum() >= plain.explained_variance_ratio_.sum() * (1 - 1e-12)


def test_has_nan_finds_a_nan_anywhere_and_nothing_else():
    # one pass of maxima (NaN propagates through them), no boolean copy of the data
    import scipy.sparse as sp

    from spcakit.estimator import _has_nan

    x = np.arange(24, dtype=float).reshape(6, 4)
    assert not _has_nan(x)
    for row, col in ((0, 0), (5, 3), (2, 1)):
        y = x.copy()
        y[row, col] = np.nan
        assert _has_nan(y) and _has_nan(y.astype(np.float32)) and _has_nan(np.asfortranarray(y))
        assert _has_nan(sp.csr_matrix(y))
    y = x.copy()
    y[1, 1], y[2, 2] = np.inf, -np.inf  # infinite, not missing
    assert not _has_nan(y)
    assert not _has_nan(np.empty((0, 3))) and not _has_nan(sp.csr_matrix((3, 3)))
