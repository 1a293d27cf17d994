"""The one door for inputs: :class:`~spcakit.inputs.options.InputOptions` read by
:func:`~spcakit.inputs.options.open_input`, and every entry point reading data through it alike."""

from __future__ import annotations

import numpy as np
import pytest

import spcakit
from spcakit.inputs.options import InputOptions, open_input

X = np.random.default_rng(5).standard_normal((30, 6))


def test_complete_data_open_as_the_problem_as_problem_builds():
    opened = open_input(X, InputOptions(standardize=True, drop=["x2"]))
    expected = spcakit.as_problem(X, standardize=True, drop=["x2"])
    assert opened.incomplete is None
    assert opened.problem.feature_names == expected.feature_names == ("x1", "x3", "x4", "x5", "x6")
    assert opened.problem.input.sha256 == expected.input.sha256
    v = np.eye(5)[:, :2]
    np.testing.assert_allclose(opened.problem.covariance.matmat(v), expected.covariance.matmat(v), rtol=1e-12)


def test_data_with_missing_values_open_for_the_em_with_their_columns_chosen():
    holes = X.copy()
    holes[3, 1] = np.nan
    opened = open_input(holes, InputOptions(drop=["x6"]))
    assert opened.problem is None
    assert opened.incomplete.names == ("x1", "x2", "x3", "x4", "x5")
    assert opened.incomplete.count == 1 and opened.incomplete.matrix.shape == (30, 5)
    with pytest.raises(spcakit.MissingValuesError, match="missing='auto'"):
        open_input(holes, InputOptions(missing="error"))


@pytest.mark.parametrize(("options", "message"), [
    (InputOptions(missing="maybe"), "missing must be one of 'auto', 'em', 'error'"),
    (InputOptions(standardize="yes"), "standardize must be True or False"),
])
def test_bad_options_are_refused_by_name(options, message):
    with pytest.raises(spcakit.InvalidParameterError, match=message):
        open_input(X, options)


def test_fit_path_and_target_read_the_same_problem():
    options = {"standardize": True, "columns": ["x1", "x2", "x3", "x5"]}
    fitted = spcakit.fit(X, "spcart", r=2, k=2, **options)
    level = spcakit.path(X, "spcart", r=2, k=[2], **options).levels[0].result
    target = spcakit.target_k(X, "spcart", r=2, sparsity=0.5, **options).result
    assert fitted.input.sha256 == level.input.sha256 == target.input.sha256
    np.testing.assert_allclose(level.loadings, fitted.loadings, atol=1e-12)
    np.testing.assert_allclose(target.loadings, fitted.loadings, atol=1e-12)


def test_rows_of_sparse_data_are_kept_as_read_with_their_columns_chosen():
    sparse = pytest.importorskip("scipy.sparse")
    matrix = sparse.random(40, 6, density=0.5, format="coo", random_state=3)
    opened = open_input(matrix, InputOptions(drop=["x3"]), rows=True)
    assert sparse.issparse(opened.rows) and opened.rows.format == "csr" and opened.rows.shape == (40, 5)
    np.testing.assert_array_equal(opened.rows.toarray(), matrix.toarray()[:, [0, 1, 3, 4, 5]])
    assert opened.problem.feature_names == ("x1", "x2", "x4", "x5", "x6")
    dense = open_input(X, InputOptions(), rows=True)
    assert dense.rows is None and dense.problem.data is not None  # dense rows are the problem's own


def test_a_covariance_source_is_named_as_such_when_rows_are_asked_for(tmp_path):
    path = tmp_path / "c.npz"
    np.savez(path, covariance=np.cov(X, rowvar=False))
    opened = open_input(str(path), InputOptions(), rows=True)
    assert opened.covariance_source and opened.problem is None and opened.incomplete is None
    with pytest.raises(spcakit.InvalidParameterError, match="cross-validation holds out rows"):
        spcakit.cross_validate(str(path), "spcart", r=1, k=[1, 2])
