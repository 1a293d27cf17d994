"""``spcakit.stability``: selection probabilities that find planted supports, Meinshausen & Bühlmann's bound held
over many data sets, the same numbers whatever the parallelism, and clear refusals."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import spcakit
from spcakit.core.errors import InvalidDataError, InvalidParameterError
from spcakit.testing.planted import planted_supports


@pytest.fixture(scope="module")
def planted():
    return planted_supports(100, 1000, [10, 10], [20.0, 8.0], seed=0)


@pytest.fixture(scope="module")
def planted_stability(planted):
    x, _ = planted
    return spcakit.stability(x, "tpower", r=2, k=10, n_resamples=100, seed=0)


def test_planted_strong_support_is_selected_and_the_nulls_are_not(planted, planted_stability):
    _, supports = planted
    probabilities = planted_stability.probabilities
    assert probabilities[supports[0], 0].min() >= 0.9
    null = np.setdiff1d(np.arange(1000), np.concatenate(supports))
    assert np.mean(probabilities[null].max(axis=1) <= 0.1) >= 0.99
    stable = planted_stability.stable_support()
    assert set(stable[0]) <= set(supports[0]) and len(stable[0]) >= 9


def test_the_record_states_its_bound_and_summaries(planted_stability):
    s = planted_stability
    assert s.n_resamples == 100 and s.selectable == 1000 and s.scheme == "subsample"
    assert np.allclose(s.average_size, 10)  # tpower selects k = 10 in every resample
    assert np.allclose(s.error_bound(), 10**2 / ((2 * 0.8 - 1) * 1000))
    assert s.error_bound(0.9)[0] < s.error_bound()[0]
    assert np.all((s.jaccard >= 0) & (s.jaccard <= 1)) and s.mean_jaccard()[0] > 0.8
    lower, upper = s.intervals[..., 0], s.intervals[..., 1]
    assert np.all(lower <= upper + 1e-15)
    loading = s.result.loadings
    inside = (lower - 1e-12 <= loading) & (loading <= upper + 1e-12)
    assert inside[np.flatnonzero(s.probabilities[:, 0] >= 0.9), 0].all()  # stable entries: the full fit's value is covered
    text = s.describe(top=3)
    assert "PC1" in text and "expected false" in text and "... and" in text
    document = json.loads(json.dumps(s.to_dict(), allow_nan=False))
    assert document["stable_support"][0] == [s.feature_names[i] for i in s.stable_support()[0]]


@pytest.mark.slow
def test_false_selections_stay_below_the_stated_bound_on_average():
    """Meinshausen & Bühlmann: E[V] <= q^2 / ((2 pi - 1) p). Over 50 data sets with planted supports, the mean number
    of null variables in the stable supports is below the bound the record states."""
    false, bounds = [], []
    for seed in range(50):
        x, supports = planted_supports(100, 1000, [10, 10], [20.0, 8.0], seed=seed)
        s = spcakit.stability(x, "tpower", r=2, k=10, n_resamples=100, seed=seed)
        truth = set(np.concatenate(supports))
        false.append(sum(len(set(rows) - truth) for rows in s.stable_support()))
        bounds.append(float(np.sum(s.error_bound())))
    assert np.mean(false) <= np.mean(bounds)


def test_batched_tpower_gives_the_probabilities_of_tpower_fitted_one_by_one(planted):
    x, _ = planted
    small = x[:, :200]
    batched = spcakit.stability(small, "tpower", r=2, k=10, n_resamples=20, seed=1)
    one_by_one = spcakit.stability(small, "tpower", r=2, k=10, n_resamples=20, seed=1, truncator="sparsity")
    assert "blocks" in batched.warm_start and "blocks" not in one_by_one.warm_start
    assert np.array_equal(batched.probabilities, one_by_one.probabilities)
    assert np.allclose(batched.intervals, one_by_one.intervals, atol=1e-8)


@pytest.mark.parametrize("method", ["tpower", "spcart"])
def test_threads_give_the_same_numbers(planted, method):
    x, _ = planted
    small = x[:, :150]
    one = spcakit.stability(small, method, r=2, k=10, n_resamples=30, seed=3, workers=1)
    two = spcakit.stability(small, method, r=2, k=10, n_resamples=30, seed=3, workers=2)
    assert two.workers == "2 threads"
    assert np.array_equal(one.probabilities, two.probabilities)
    assert np.array_equal(one.intervals, two.intervals)


def test_a_dask_cluster_gives_the_same_numbers(planted):
    distributed = pytest.importorskip("distributed")
    x, _ = planted
    small = x[:, :150]
    local = spcakit.stability(small, "tpower", r=2, k=10, n_resamples=30, seed=3)
    generic = spcakit.stability(small, "spcart", r=2, k=10, n_resamples=10, seed=3)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None,
                                  processes=True) as cluster, distributed.Client(cluster, set_as_default=False) as client:  # fmt: skip
        remote = spcakit.stability(small, "tpower", r=2, k=10, n_resamples=30, seed=3, client=client)
        remote_generic = spcakit.stability(small, "spcart", r=2, k=10, n_resamples=10, seed=3, client=client)
    assert remote.workers.startswith("a Dask cluster of 2")
    assert np.array_equal(local.probabilities, remote.probabilities)
    # the workers' BLAS may split products over another number of threads: the loadings agree to rounding, and
    # the supports (hence the probabilities) exactly
    assert np.allclose(local.intervals, remote.intervals, rtol=0, atol=1e-12)
    assert np.array_equal(generic.probabilities, remote_generic.probabilities)


def test_progress_is_reported_per_resample(planted):
    from spcakit.output import progress

    x, _ = planted
    seen, calls = [], []
    with progress.listen(seen.append):
        spcakit.stability(x[:, :100], "spcart", r=1, k=5, n_resamples=6, seed=0,
                          on_resample=lambda done, total: calls.append((done, total)))  # fmt: skip
    assert calls == [(i, 6) for i in range(1, 7)]
    assert [report.count for report in seen if report.task == "resamples"] == [1, 2, 3, 4, 5, 6]


def test_warm_starts_and_the_bootstrap_are_named_in_the_record(planted):
    x, _ = planted
    warm = spcakit.stability(x[:, :150], "tpower", r=1, k=10, n_resamples=10, warm_start=True)
    assert warm.warm_start.startswith("yes") and any("lean towards" in w for w in warm.warnings)
    boot = spcakit.stability(x[:, :150], "tpower", r=1, k=10, n_resamples=10, scheme="bootstrap")
    assert boot.scheme == "bootstrap" and any("not for bootstrap" in w for w in boot.warnings)
    assert "bootstrap samples" in boot.describe()


def test_the_default_method_runs(planted):
    x, _ = planted
    s = spcakit.stability(x[:60, :80], r=1, k=5, n_resamples=4, seed=0)
    assert s.result.method == "auto" and s.probabilities.shape == (80, 1)


def test_standardised_data_in_any_column_order_give_permuted_probabilities():
    x, _ = planted_supports(60, 40, [6], [15.0], seed=2)
    order = np.random.default_rng(0).permutation(40)
    a = spcakit.stability(x, "tpower", r=1, k=6, n_resamples=15, seed=4, standardize=True)
    b = spcakit.stability(x[:, order], "tpower", r=1, k=6, n_resamples=15, seed=4, standardize=True)
    assert np.array_equal(a.probabilities[order], b.probabilities)


def test_constant_columns_and_repeated_names_are_taken():
    x, _ = planted_supports(50, 30, [5], [15.0], seed=1)
    x[:, 7] = 3.0
    names = [f"g{j % 25}" for j in range(30)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = spcakit.stability(x, "tpower", r=1, k=5, n_resamples=10, feature_names=names)
    assert s.probabilities[7, 0] == 0.0 and s.selectable == 29
    assert len(set(s.feature_names)) == 30


@pytest.mark.parametrize("options,match", [
    ({"n_resamples": 1}, "n_resamples must be an integer of at least 2"),
    ({"n_resamples": 2.5}, "n_resamples must be"),
    ({"scheme": "jackknife"}, "scheme must be 'subsample'"),
    ({"threshold": 0.5}, r"threshold must be in \(0.5, 1\]"),
    ({"threshold": True}, "threshold must be a number"),
    ({"level": 1.0}, "level must be a coverage in"),
    ({"workers": 0}, "workers must be a positive number"),
    ({"sample_weight": np.ones(20)}, "stability takes no sample_weight"),
])  # fmt: skip
def test_bad_options_are_refused_saying_what_is_valid(options, match):
    x = np.random.default_rng(0).standard_normal((20, 6))
    with pytest.raises(InvalidParameterError, match=match):
        spcakit.stability(x, "tpower", r=1, k=2, **options)


def test_a_covariance_has_no_rows_to_resample():
    with pytest.raises(InvalidParameterError, match="holds out rows|covariance"):
        spcakit.stability("builtin:pitprops", "tpower", r=1, k=4)


def test_missing_values_and_too_few_rows_are_refused():
    x = np.random.default_rng(0).standard_normal((20, 6))
    x[3, 2] = np.nan
    with pytest.raises(InvalidDataError, match="missing"):
        spcakit.stability(x, "tpower", r=1, k=2)
    with pytest.raises(InvalidDataError, match="at least 4 rows"):
        spcakit.stability(np.random.default_rng(0).standard_normal((3, 6)), "tpower", r=1, k=2)
