"""``standardize=True``: sparse PCA on the correlation scale, from data or from a covariance.

The claim under test: a method's result on standardised data equals its result on the data's
correlation matrix. The two inputs differ only by rounding: every entry of the correlation matrix is an
inner product of ``n`` terms, so the two matrices differ entrywise by at most about ``n * eps`` (here
``n = 200``: about 4e-14) and in spectral norm by at most ``p`` times that. A loading moves by at most
that perturbation over the eigengap it depends on (Davis-Kahan), amplified by at most the method's
iterations; with the gaps of these data (checked below to be above 0.05) that is far below ``1e-9``,
while a different support or a different component would differ by ``O(0.1)``. So loadings are
compared to ``1e-9`` and supports exactly.
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import spcakit
from spcakit.core.errors import InvalidDataError, InvalidParameterError
from spcakit.numerics.operators import DenseCovariance
from spcakit.inputs.dense import Covariance
from spcakit.inputs.problem import Problem
from spcakit.inputs import as_problem

EPS = np.finfo(float).eps
#: Loadings of the same method on the same correlation matrix up to rounding (module docstring).
LOADING_TOL = 1e-9
#: Column scales spanning what double precision holds: raw, these data would be refused (too large) or
#: dominated by one column; standardised they are the same data.
SCALES = np.array([1e-150, 1.0, 3.0, 1e3, 7e-4, 1e150, 2.0, 50.0])


def mixed_data(n: int = 200, p: int = 8, seed: int = 3) -> np.ndarray:
    """Correlated Gaussian data (two groups of related variables) in columns of very different scales."""
    rng = np.random.default_rng(seed)
    factors = rng.standard_normal((n, 2))
    mixing = np.zeros((2, p))
    mixing[0, : p // 2] = rng.uniform(0.8, 1.2, p // 2)
    mixing[1, p // 2 :] = rng.uniform(0.4, 0.6, p - p // 2)  # a weaker second factor: distinct eigenvalues
    x = factors @ mixing + 0.6 * rng.standard_normal((n, p))
    return x * np.array([1.0, 10.0, 100.0, 0.1, 1.0, 5.0, 0.01, 2.0])[:p]


def eigengaps(matrix: np.ndarray, r: int) -> np.ndarray:
    values = np.linalg.eigvalsh(matrix)[::-1]
    return values[:r] - values[1 : r + 1]


CASES = [
    ("spcart", {}),
    ("spcart", {"k": 3}),
    ("tpower", {"k": 3}),
    ("rsvd-gp", {"lam": 0.3}),
    ("greedy", {"k": 3}),
]


@pytest.mark.parametrize(("method", "knobs"), CASES, ids=[f"{m}-{k}" for m, k in CASES])
def test_result_on_standardised_data_equals_result_on_the_correlation_matrix(method, knobs):
    x = mixed_data()
    correlation = np.corrcoef(x, rowvar=False)
    assert eigengaps(correlation, 2).min() > 0.05  # the premise of the tolerance (module docstring)
    on_data = spcakit.fit(x, method, r=2, standardize=True, **knobs)
    on_correlation = spcakit.fit(Covariance(correlation), method, r=2, **knobs)
    np.testing.assert_array_equal(on_data.loadings != 0, on_correlation.loadings != 0)
    np.testing.assert_allclose(on_data.loadings, on_correlation.loadings, rtol=0, atol=LOADING_TOL)
    assert on_data.metrics["cpev"] == pytest.approx(on_correlation.metrics["cpev"], abs=1e-12)
    # and the raw data give another answer: the large-variance columns take the first component
    raw = spcakit.fit(x, method, r=2, **knobs)
    assert not np.allclose(raw.loadings, on_data.loadings, atol=1e-3)


def test_the_covariance_of_standardised_data_is_the_correlation_matrix():
    x = mixed_data()
    n, p = x.shape
    problem = as_problem(x, standardize=True)
    c = problem.covariance.explicit()
    # each entry is a sum of n products of numbers of size ~1: rounding of n * eps at most
    np.testing.assert_allclose(c, np.corrcoef(x, rowvar=False), rtol=0, atol=4 * n * EPS)
    np.testing.assert_allclose(np.diag(c), 1.0, rtol=0, atol=4 * n * EPS)
    np.testing.assert_allclose(np.linalg.norm(problem.data, axis=0), np.sqrt(n - 1), rtol=8 * n * EPS)
    record = problem.input
    assert record.standardize and record.center and record.kind == "data" and record.shape == (n, p)
    np.testing.assert_allclose(record.mean, x.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(record.scale, x.std(axis=0, ddof=1), rtol=1e-12)
    # the data are standardised in place of the centred copy: the caller's array is untouched
    np.testing.assert_array_equal(x, mixed_data())


def test_wide_data_standardise_without_forming_the_covariance():
    x = mixed_data(n=12)[:, :6].repeat(3, axis=1) + np.random.default_rng(1).standard_normal((12, 18))
    problem = as_problem(x, standardize=True)
    assert problem.covariance.explicit() is None  # n < p: matrix-free
    np.testing.assert_allclose(problem.covariance.diagonal(), 1.0, rtol=0, atol=100 * EPS)
    eye = np.eye(18)
    np.testing.assert_allclose(problem.covariance.matmat(eye), np.corrcoef(x, rowvar=False), rtol=0, atol=1e-13)


def test_without_centring_columns_are_divided_by_their_root_mean_square():
    x = mixed_data() + 5.0 * np.array([1.0, 10.0, 100.0, 0.1, 1.0, 5.0, 0.01, 2.0])
    problem = as_problem(x, center=False, standardize=True)
    rms = np.sqrt((x**2).mean(axis=0))
    np.testing.assert_allclose(problem.input.scale, rms, rtol=1e-12)
    np.testing.assert_allclose(problem.covariance.explicit(), (x / rms).T @ (x / rms) / x.shape[0], rtol=0, atol=1e-13)
    assert problem.input.mean is None and problem.input.center is False


def test_standardised_result_does_not_depend_on_the_units_of_the_columns():
    x = mixed_data()
    rescaled = x * SCALES
    with pytest.raises(InvalidDataError, match="too large"):
        spcakit.fit(rescaled, "spcart", r=2)  # raw, the 1e150 column overflows the covariance
    a = spcakit.fit(x, "spcart", r=3, standardize=True)
    b = spcakit.fit(rescaled, "spcart", r=3, standardize=True)
    np.testing.assert_allclose(b.loadings, a.loadings, rtol=0, atol=LOADING_TOL)
    np.testing.assert_allclose(b.input.scale / a.input.scale, SCALES, rtol=1e-12)


def test_a_covariance_becomes_its_correlation_matrix():
    x = mixed_data()
    cov = np.cov(x, rowvar=False)
    d = np.sqrt(np.diag(cov))
    problem = as_problem(Covariance(cov), standardize=True)
    r = problem.covariance.explicit()
    np.testing.assert_array_equal(r, r.T)  # exactly symmetric
    np.testing.assert_array_equal(np.diag(r), 1.0)  # exactly one
    np.testing.assert_allclose(r, cov / np.outer(d, d), rtol=0, atol=4 * EPS)
    np.testing.assert_allclose(r, np.corrcoef(x, rowvar=False), rtol=0, atol=1e-13)
    assert problem.input.kind == "covariance" and problem.input.standardize and problem.input.center is None
    np.testing.assert_allclose(problem.input.scale, d, rtol=0)
    from_cov = spcakit.fit(cov, "spcart", r=2, covariance=True, standardize=True)
    from_data = spcakit.fit(x, "spcart", r=2, standardize=True)
    np.testing.assert_allclose(from_cov.loadings, from_data.loadings, rtol=0, atol=LOADING_TOL)
    # a correlation matrix is its own correlation matrix
    pitprops = spcakit.datasets.pitprops()
    again = as_problem(Covariance(pitprops.matrix), standardize=True).covariance.explicit()
    np.testing.assert_allclose(again, pitprops.matrix, rtol=0, atol=4 * EPS)


def test_building_the_problem_copies_no_data_and_the_centred_copy_is_made_on_first_use():
    """Tall data (n >= p): the Gram matrix is formed a block of rows at a time in one buffer of
    BLOCK_BYTES, so building the problem takes far less than a copy of the data (here 32 MB against a
    4 MiB buffer and a 10 x 10 Gram matrix); the centred (scaled) copy is made, once, when a part reads
    ``problem.data``, and equals what the covariance was formed from."""
    from spcakit.inputs.checks import BLOCK_BYTES
    from spcakit.inputs.problem import DeferredData

    x = np.random.default_rng(0).standard_normal((400_000, 10)) * np.arange(1, 11) + 5.0
    for center, standardize in ((True, True), (False, True), (True, False)):
        tracemalloc.start()
        try:
            problem = as_problem(x, center=center, standardize=standardize)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < BLOCK_BYTES + 0.05 * x.nbytes, (center, standardize, peak / x.nbytes)
        assert isinstance(problem._data, DeferredData) and problem.n_samples == 400_000
        data = problem.data
        assert data is problem.data and not np.shares_memory(data, x)  # made once, a copy
        shift = x.mean(axis=0) if center else 0.0
        spread = np.sqrt(((x - shift) ** 2).sum(axis=0) / (399_999 if center else 400_000)) if standardize else 1.0
        np.testing.assert_allclose(data, (x - shift) / spread, rtol=1e-12, atol=1e-12)
        gram = data.T @ data / (399_999 if center else 400_000)
        np.testing.assert_allclose(problem.covariance.explicit(), gram, rtol=1e-11, atol=1e-11)


def test_constant_columns_are_divided_by_one_and_named():
    x = mixed_data()
    x[:, 2] = 7.5
    with pytest.warns(spcakit.ConstantColumnWarning, match=r"1 column\(s\) are constant.*2 \(x3\)"):
        result = spcakit.fit(x, r=2, standardize=True)
    assert result.input.scale[2] == 1.0 and np.all(result.loadings[2] == 0)
    np.testing.assert_allclose(np.delete(result.input.scale, 2), np.delete(x, 2, axis=1).std(axis=0, ddof=1), rtol=1e-12)
    cov = np.cov(mixed_data(), rowvar=False)
    cov[4, :] = cov[:, 4] = 0.0
    with pytest.warns(spcakit.ConstantColumnWarning, match=r"zero variance: 4 \(x5\)"):
        result = spcakit.fit(cov, r=2, covariance=True, standardize=True)
    assert result.input.scale[4] == 1.0 and np.all(result.loadings[4] == 0)
    cov[:] = 0.0
    with pytest.raises(InvalidDataError, match=r"8 variable\(s\) have zero variance"):
        spcakit.fit(cov, r=2, covariance=True, standardize=True)


def test_standardize_needs_the_matrix_itself():
    problem = as_problem(mixed_data())
    with pytest.raises(InvalidParameterError, match=r"spcakit.Problem is used as it is, so standardize cannot apply"):
        spcakit.fit(problem, r=2, standardize=True)
    operator = DenseCovariance(np.eye(3))
    with pytest.raises(InvalidParameterError, match=r"covariance operator is used as it is"):
        spcakit.fit(operator, r=2, standardize=True)
    with pytest.raises(InvalidParameterError, match=r"standardize must be True or False; got 'yes'"):
        spcakit.fit(mixed_data(), r=2, standardize="yes")
    assert isinstance(as_problem(problem), Problem)  # a problem alone still passes through


def test_the_estimator_agrees_with_fit():
    """``SparsePCA(standardize=True)`` standardises on its own; it must give what ``fit(standardize=True)`` gives."""
    pytest.importorskip("sklearn")
    x = mixed_data()
    model = spcakit.SparsePCA(n_components=2, method="tpower", k=3, standardize=True).fit(x)
    result = spcakit.fit(x, "tpower", r=2, k=3, standardize=True)
    np.testing.assert_allclose(model.components_, result.loadings.T, rtol=0, atol=LOADING_TOL)
    np.testing.assert_allclose(model.scale_, result.input.scale, rtol=1e-12)
    np.testing.assert_allclose(model.mean_, result.input.mean, rtol=1e-12)


# -- command line ------------------------------------------------------------------------------------------
def test_cli_standardize_on_run_and_compose(cli, tmp_path: Path):
    x = mixed_data()
    names = [f"v{j}" for j in range(x.shape[1])]
    path = tmp_path / "mixed.csv"
    path.write_text(",".join(names) + "\n" + "\n".join(",".join(repr(float(v)) for v in row) for row in x) + "\n")
    expected = spcakit.fit(x, "spcart", r=2, standardize=True)
    for command in (["run", "spcart"], ["compose"]):
        result = cli.invoke(*command, "-d", str(path), "-r", "2", "--standardize", "--json")
        assert result.exit_code == 0, result.output
        doc = json.loads(result.stdout)
        assert doc["input"]["standardize"] is True and doc["input"]["center"] is True
        assert doc["feature_names"] == names
        np.testing.assert_allclose(doc["loadings"], expected.loadings, rtol=0, atol=LOADING_TOL)
        raw = json.loads(cli.invoke(*command, "-d", str(path), "-r", "2", "--json").stdout)
        assert raw["input"]["standardize"] is False
        assert not np.allclose(raw["loadings"], doc["loadings"], atol=1e-3)
    # a covariance source becomes its correlation matrix (Pitprops is one already: nothing changes)
    plain = json.loads(cli.invoke("run", "spcart", "-r", "3", "--json").stdout)
    scaled = json.loads(cli.invoke("run", "spcart", "-r", "3", "--json", "--standardize").stdout)
    assert scaled["input"] == {**plain["input"], "standardize": True}
    np.testing.assert_allclose(scaled["loadings"], plain["loadings"], rtol=0, atol=LOADING_TOL)
