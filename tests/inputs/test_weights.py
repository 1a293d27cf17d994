"""Observation weights: frequency weights, so that integer weights give exactly the result of
the data with repeated rows; ``spcakit.fit(sample_weight=)``, ``SparsePCA.fit(sample_weight=)`` and
``spcakit run/compose --weights FILE``."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import spcakit
from spcakit.core.errors import ConstantColumnWarning, InvalidDataError, InvalidParameterError
from spcakit.workflows.model import Model

TOL = 1e-10


def _data(n: int, p: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, p)) @ rng.standard_normal((p, p)) + 3.0  # correlated, off-centre


def _counts(n: int, seed: int = 1) -> np.ndarray:
    w = np.random.default_rng(seed).integers(0, 4, n)
    w[:3] = [1, 2, 3]  # some positive weights whatever the draw
    return w


def _same(a: spcakit.Result, b: spcakit.Result) -> None:
    np.testing.assert_allclose(a.loadings, b.loadings, rtol=0, atol=TOL)
    assert set(a.metrics) == set(b.metrics)
    for name, value in a.metrics.items():
        got, want = np.asarray(value, dtype=float), np.asarray(b.metrics[name], dtype=float)
        np.testing.assert_allclose(got, want, rtol=TOL, atol=TOL, err_msg=name)


# tall (the formed covariance), wide (the matrix-free GramCovariance) and wide data whose repeated rows are tall
SHAPES = [(60, 8), (12, 30), (20, 25)]


@pytest.mark.parametrize("method", ["spcart", "tpower", "auto"])
@pytest.mark.parametrize(("n", "p"), SHAPES)
@pytest.mark.parametrize("standardize", [False, True])
def test_integer_weights_equal_repeated_rows(method: str, n: int, p: int, standardize: bool) -> None:
    x, w = _data(n, p), _counts(n)
    weighted = spcakit.fit(x, method, 3, k=4, sample_weight=w, standardize=standardize)
    repeated = spcakit.fit(np.repeat(x, w, axis=0), method, 3, k=4, standardize=standardize)
    _same(weighted, repeated)
    np.testing.assert_allclose(weighted.input.mean, repeated.input.mean, rtol=0, atol=TOL)
    if standardize:
        np.testing.assert_allclose(weighted.input.scale, repeated.input.scale, rtol=TOL)


def test_uncentred_integer_weights_equal_repeated_rows() -> None:
    x, w = _data(40, 6), _counts(40)
    _same(spcakit.fit(x, "tpower", 2, k=3, sample_weight=w, center=False),
          spcakit.fit(np.repeat(x, w, axis=0), "tpower", 2, k=3, center=False))  # fmt: skip


@pytest.mark.parametrize(("n", "p"), SHAPES)
def test_unit_weights_equal_no_weights(n: int, p: int) -> None:
    x = _data(n, p)
    _same(spcakit.fit(x, "spcart", 3, k=4, sample_weight=np.ones(n)), spcakit.fit(x, "spcart", 3, k=4))


@pytest.mark.parametrize(("n", "p"), SHAPES)
def test_scaling_the_weights_changes_no_loading_nor_cpev(n: int, p: int) -> None:
    x, w = _data(n, p), _counts(n).astype(float)
    a = spcakit.fit(x, "tpower", 3, k=4, sample_weight=w)
    b = spcakit.fit(x, "tpower", 3, k=4, sample_weight=7.5 * w)
    np.testing.assert_allclose(a.loadings, b.loadings, atol=TOL)
    np.testing.assert_allclose(a.metrics["cpev"], b.metrics["cpev"], rtol=TOL)
    np.testing.assert_allclose(a.input.mean, b.input.mean, atol=TOL)
    # the variances scale as (W - 1) / (cW - 1) * c: frequency weights, ddof 1
    total = w.sum()
    np.testing.assert_allclose(np.asarray(b.metrics["additional_variance"]),
                               np.asarray(a.metrics["additional_variance"]) * 7.5 * (total - 1) / (7.5 * total - 1),
                               rtol=1e-9)  # fmt: skip


@pytest.mark.parametrize(("n", "p"), SHAPES)
def test_zero_weight_removes_the_row(n: int, p: int) -> None:
    x = _data(n, p)
    x[0] = 1e3  # an outlier, weighted out
    w = np.ones(n)
    w[0] = 0.0
    _same(spcakit.fit(x, "spcart", 2, k=3, sample_weight=w), spcakit.fit(x[1:], "spcart", 2, k=3))


def test_the_record_summarises_the_weights() -> None:
    x, w = _data(30, 5), _counts(30)
    result = spcakit.fit(x, "tpower", 2, k=2, sample_weight=w)
    summary = result.input.weights
    assert summary["count"] == 30 and summary["sum"] == float(w.sum())
    assert summary["zeros"] == int(np.count_nonzero(w == 0)) and len(summary["sha256"]) == 64
    assert result.to_dict()["input"]["weights"] == summary
    np.testing.assert_allclose(result.input.mean, w @ x / w.sum())
    assert spcakit.fit(x, "tpower", 2, k=2).input.weights is None
    assert "weights" not in spcakit.fit(x, "tpower", 2, k=2).to_dict()["input"]


@pytest.mark.parametrize(
    ("weights", "words"),
    [
        (np.ones(9), "10 rows"),
        (np.r_[np.ones(9), -1.0], "negative"),
        (np.r_[np.ones(9), np.nan], "NaN or infinite"),
        (np.r_[np.ones(9), np.inf], "NaN or infinite"),
        (np.zeros(10), "all zero"),
        (np.r_[5.0, np.zeros(9)], "at least 2 rows"),
        (np.r_[0.3, 0.3, np.zeros(8)], "must exceed 1"),
        (np.ones((10, 2)), "1-D"),
        (["a"] * 10, "non-negative numbers"),
    ],
)
def test_bad_weights_are_refused(weights: Any, words: str) -> None:
    with pytest.raises(InvalidDataError, match=words):
        spcakit.fit(_data(10, 4), "tpower", 1, k=2, sample_weight=weights)


def test_weights_on_a_covariance_or_a_problem_are_refused() -> None:
    x = _data(10, 4)
    with pytest.raises(InvalidParameterError, match="covariance"):
        spcakit.fit(np.cov(x.T), "tpower", 1, k=2, covariance=True, sample_weight=np.ones(4))
    with pytest.raises(InvalidParameterError, match="covariance"):
        spcakit.fit(spcakit.Covariance(np.cov(x.T)), "tpower", 1, k=2, sample_weight=np.ones(4))
    with pytest.raises(InvalidParameterError, match="no rows"):
        spcakit.fit(spcakit.as_problem(x), "tpower", 1, k=2, sample_weight=np.ones(10))


def _sparse_data(n: int, p: int, seed: int = 0) -> Any:
    sparse = pytest.importorskip("scipy.sparse")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, p)) * (rng.random((n, p)) < 0.4) + 2.0 * (rng.random((n, p)) < 0.1)
    x[:, 0] += 1.0  # a column without implicit zeros
    return sparse.csr_array(x)


@pytest.mark.parametrize("method", ["spcart", "tpower", "auto"])
@pytest.mark.parametrize(("n", "p"), [*SHAPES, (300, 120)])
@pytest.mark.parametrize("standardize", [False, True])
def test_sparse_integer_weights_equal_repeated_rows(method: str, n: int, p: int, standardize: bool) -> None:
    sparse = pytest.importorskip("scipy.sparse")
    x, w = _sparse_data(n, p), _counts(n)
    repeated = sparse.csr_array(np.repeat(x.toarray(), w, axis=0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantColumnWarning)
        weighted = spcakit.fit(x, method, 3, k=4, sample_weight=w, standardize=standardize)
        plain = spcakit.fit(repeated, method, 3, k=4, standardize=standardize)
    _same(weighted, plain)
    assert weighted.input.weights["sum"] == float(w.sum())


@pytest.mark.parametrize("method", ["spcart", "tpower", "auto"])
@pytest.mark.parametrize(("n", "p"), SHAPES)
@pytest.mark.parametrize("standardize", [False, True])
def test_dask_integer_weights_equal_repeated_rows(method: str, n: int, p: int, standardize: bool) -> None:
    da = pytest.importorskip("dask.array")
    x, w = _data(n, p), _counts(n)
    weighted = spcakit.fit(da.from_array(x, chunks=(7, 5)), method, 3, k=4, sample_weight=w, standardize=standardize)
    repeated = np.repeat(x, w, axis=0)
    _same(weighted, spcakit.fit(da.from_array(repeated, chunks=(7, 5)), method, 3, k=4, standardize=standardize))
    np.testing.assert_allclose(weighted.input.mean, w @ x / w.sum(), atol=TOL)
    assert weighted.input.weights == {"count": n, "sum": float(w.sum()), "zeros": int(np.count_nonzero(w == 0)),
                                      "sha256": None}  # fmt: skip


def test_dask_weights_refuse_non_finite_entries() -> None:
    da = pytest.importorskip("dask.array")
    x = _data(10, 4)
    x[3, 2] = np.nan
    with pytest.raises(InvalidDataError, match="NaN"):
        spcakit.fit(da.from_array(x, chunks=5), "tpower", 1, k=2, sample_weight=np.ones(10))


def test_sparse_weights_match_dense_weights() -> None:
    x, w = _sparse_data(40, 10), _counts(40).astype(float) / 3
    sparse_fit = spcakit.fit(x, "tpower", 2, k=3, sample_weight=w)
    dense_fit = spcakit.fit(x.toarray(), "tpower", 2, k=3, sample_weight=w)  # the bound's relaxation differs by operator
    np.testing.assert_allclose(sparse_fit.loadings, dense_fit.loadings, atol=TOL)
    for name in ("cpev", "additional_variance"):
        np.testing.assert_allclose(sparse_fit.metrics[name], dense_fit.metrics[name], rtol=TOL)
    np.testing.assert_allclose(sparse_fit.input.mean, dense_fit.input.mean, atol=TOL)
    operator, want = spcakit.as_problem(x, weights=w).covariance, _weighted_cov(x.toarray(), w)
    np.testing.assert_allclose(operator.submatrix(np.arange(10)), want, atol=1e-12)
    np.testing.assert_allclose(operator.matmat(np.eye(10)), want, atol=1e-12)
    np.testing.assert_allclose(operator.diagonal(), np.diag(want), atol=1e-12)
    np.testing.assert_allclose(operator.restrict(np.arange(3, 7)).submatrix(np.arange(4)), want[3:7, 3:7], atol=1e-12)


def _weighted_cov(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    mean = w @ x / w.sum()
    centred = x - mean
    return (centred * w[:, None]).T @ centred / (w.sum() - 1)


def test_estimator_sample_weight_equals_repeated_rows() -> None:
    pytest.importorskip("sklearn")
    x, w = _data(50, 7), _counts(50)
    weighted = spcakit.SparsePCA(n_components=2, method="tpower", k=3).fit(x, sample_weight=w)
    repeated = spcakit.SparsePCA(n_components=2, method="tpower", k=3).fit(np.repeat(x, w, axis=0))
    np.testing.assert_allclose(weighted.components_, repeated.components_, atol=TOL)
    np.testing.assert_allclose(weighted.mean_, w @ x / w.sum(), atol=TOL)
    np.testing.assert_allclose(weighted.explained_variance_, repeated.explained_variance_, rtol=TOL)
    np.testing.assert_allclose(weighted.transform(x), repeated.transform(x), atol=1e-9)
    scores = spcakit.SparsePCA(n_components=2, method="tpower", k=3, standardize=True).fit_transform(x, sample_weight=w)
    again = spcakit.SparsePCA(n_components=2, method="tpower", k=3, standardize=True).fit(np.repeat(x, w, axis=0))
    np.testing.assert_allclose(scores, again.transform(x), atol=1e-9)


# -- the command line ------------------------------------------------------------------------------------------


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    x, w = _data(30, 6), _counts(30)
    paths = {"x": tmp_path / "x.npy", "rep": tmp_path / "rep.npy", "csv": tmp_path / "w.csv", "npy": tmp_path / "w.npy"}
    np.save(paths["x"], x)
    np.save(paths["rep"], np.repeat(x, w, axis=0))
    paths["csv"].write_text("weight\n" + "\n".join(str(int(v)) for v in w) + "\n")
    np.save(paths["npy"], w.astype(float))
    return paths


@pytest.mark.parametrize("kind", ["csv", "npy"])
@pytest.mark.parametrize("command", [("run", "tpower"), ("compose", "--truncator", "sparsity")])
def test_cli_weights_equal_repeated_rows(cli, files: dict[str, Path], kind: str, command: tuple[str, ...]) -> None:
    weighted = cli.invoke(*command, "-d", files["x"], "-k", 3, "--weights", files[kind], "--json")
    repeated = cli.invoke(*command, "-d", files["rep"], "-k", 3, "--json")
    assert weighted.exit_code == 0, weighted.output
    assert repeated.exit_code == 0, repeated.output
    a, b = json.loads(weighted.stdout), json.loads(repeated.stdout)
    np.testing.assert_allclose(a["loadings"], b["loadings"], atol=TOL)
    np.testing.assert_allclose(a["metrics"]["cpev"], b["metrics"]["cpev"], rtol=TOL)
    assert a["input"]["weights"]["count"] == 30


def test_cli_saved_model_centres_by_the_weighted_mean(cli, files: dict[str, Path], tmp_path: Path) -> None:
    model = tmp_path / "model.json"
    result = cli.invoke("run", "tpower", "-d", files["x"], "-k", 3, "--weights", files["npy"], "--save-model", model)
    assert result.exit_code == 0, result.output
    x, w = np.load(files["x"]), np.load(files["npy"])
    document = json.loads(model.read_text())
    np.testing.assert_allclose(document["mean"], w @ x / w.sum(), atol=TOL)
    assert document["input"]["weights"]["sum"] == float(w.sum())
    assert Model.from_dict(document).input.weights == document["input"]["weights"]


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("w\n1\n2\n", "2 weights but the data have 30 rows"),
        ("1,2\n3,4\n", "more than one column"),
        ("w\n1\nx\n", "not a number"),
        ("", "no numbers"),
        ("w\n" + "1\n" * 29 + "-1\n", "negative"),
    ],
)
def test_cli_bad_weight_files_exit_2(cli, files: dict[str, Path], tmp_path: Path, content: str, words: str) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text(content)
    result = cli.invoke("run", "tpower", "-d", files["x"], "-k", 3, "--weights", bad)
    assert result.exit_code == 2, result.output
    assert words in result.output


def test_cli_missing_or_wrong_weight_files_exit_2(cli, files: dict[str, Path], tmp_path: Path) -> None:
    for path, words in ((tmp_path / "none.csv", "no such file"), (files["x"], "one column")):
        result = cli.invoke("run", "tpower", "-d", files["x"], "-k", 3, "--weights", path)
        assert result.exit_code == 2, result.output
        assert words in result.output
    result = cli.invoke("cv", "tpower", "-d", files["x"], "--weights", files["csv"])
    assert result.exit_code == 2 and "run, compose and path only" in result.output


def test_weights_whose_sum_overflows_are_blamed_on_the_weights_not_the_data():
    x = np.random.default_rng(0).standard_normal((20, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no NumPy overflow warning reaches the user either
        with pytest.raises(spcakit.InvalidDataError, match="sample_weight sums to more than double precision holds"):
            spcakit.fit(x, "spcart", r=1, sample_weight=np.full(20, 1e307))
    # the same weights divided by a constant are taken, with the loadings of equal weights
    scaled = spcakit.fit(x, "spcart", r=1, sample_weight=np.full(20, 1e307) / 1e307)
    plain = spcakit.fit(x, "spcart", r=1)
    np.testing.assert_allclose(scaled.loadings, plain.loadings, atol=1e-12)
