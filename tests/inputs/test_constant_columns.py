"""Constant columns are welcome: zero loadings, a warning naming them, and the fit of the rest.

A column with zero variance (constant relative to its own magnitude; an all-zero column of sparse
data; a zero variance on the diagonal of a covariance) gets a zero loading in every component, and
:func:`spcakit.fit` names it in a :class:`~spcakit.ConstantColumnWarning` and in
``Result.warnings``. Every method runs on the columns that vary alone, so its loadings there are
those of the fit to the data without the constant columns; the metrics are those of all ``p``
columns. Data whose columns are all constant, and ``r`` above the number that vary, stay errors.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import spcakit
from spcakit.workflows.configure import takes_k
from spcakit.core.errors import ConstantColumnWarning, InvalidDataError, InvalidParameterError
from spcakit.analysis.metrics import compute_metrics
from spcakit.workflows.model import Model
from spcakit.numerics.operators import DenseCovariance, PaddedCovariance, densify
from spcakit.core.plugins import get_registry
from spcakit.inputs import as_problem
from spcakit.core.records import IssuedWarning
from spcakit.testing import EXAMPLE_LAMBDAS


#: The constant columns inserted: their values (a zero column, a large one, a negative one, one of
#: rounding noise about 7 - constant relative to its own magnitude).
CONSTANTS = (2.5, 0.0, -1e5)


def correlated(n: int = 60, p: int = 9, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, p)) @ rng.standard_normal((p, p)) + rng.uniform(-3, 3, p)


def with_constants(x: np.ndarray, seed: int = 0, values: tuple[float, ...] = CONSTANTS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``x`` with constant columns of ``values`` inserted at random positions: ``(data, positions, others)``."""
    n, p = x.shape
    width = p + len(values)
    positions = np.sort(np.random.default_rng(seed).choice(width, len(values), replace=False))
    others = np.setdiff1d(np.arange(width), positions)
    out = np.empty((n, width))
    out[:, others] = x
    out[:, positions] = values
    return out, positions, others


def method_arguments(name: str) -> dict[str, Any]:
    """``k`` for the methods that take it, else λ where the method has no default, else nothing."""
    registry = get_registry()
    if takes_k(registry.method(name), registry):
        return {"k": 4}
    return {"lam": EXAMPLE_LAMBDAS[name]} if name in EXAMPLE_LAMBDAS else {}


def fit_quietly(*args: Any, **kwargs: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantColumnWarning)
        return spcakit.fit(*args, **kwargs)


# -- every method ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(info.spec.name for info in get_registry().methods()))
@pytest.mark.parametrize("standardize", [False, True], ids=["covariance", "correlation"])
def test_every_method_gives_constant_columns_zero_loadings(name: str, standardize: bool) -> None:
    x = correlated()
    data, positions, others = with_constants(x, seed=len(name))
    kwargs = method_arguments(name)
    alone = spcakit.fit(x, name, r=3, standardize=standardize, **kwargs)
    with pytest.warns(ConstantColumnWarning) as record:
        result = spcakit.fit(data, name, r=3, standardize=standardize, metrics="all", **kwargs)
    names = result.feature_names
    message = str(record[0].message)
    assert message.startswith(f"3 column(s) are constant (zero variance): {positions[0]} ({names[positions[0]]})")
    assert "zero loadings in every component" in message and result.warnings[0] == message
    assert isinstance(result.warnings[0], IssuedWarning)
    assert result.loadings.shape == (12, 3) and result.feature_names == spcakit.as_problem(data).feature_names
    assert np.all(result.loadings[positions] == 0)
    np.testing.assert_allclose(result.loadings[others], alone.loadings, rtol=0, atol=1e-9, err_msg=name)
    assert result.metrics["cpev"] == pytest.approx(alone.metrics["cpev"], rel=0, abs=1e-9)
    assert result.metrics["pattern"] == alone.metrics["pattern"] and result.metrics["nz"] == alone.metrics["nz"]
    # metrics of all 12 variables: the sparsities count the constant columns' zeros
    assert result.metrics["sp"] == pytest.approx(float(np.mean(1 - np.count_nonzero(result.loadings, axis=0) / 12)))
    assert result.input.shape == (60, 12) and result.input.mean.shape == (12,)
    if standardize:
        assert np.all(result.input.scale[positions] == 1.0) and result.input.scale.shape == (12,)


def test_metrics_are_those_of_the_full_problem() -> None:
    data, positions, others = with_constants(correlated(), seed=1)
    result = fit_quietly(data, "spcart", r=3, k=4)
    problem = as_problem(data)
    assert isinstance(problem.covariance, PaddedCovariance) and problem.varying.p == 9
    assert problem.covariance.trace() == pytest.approx(np.trace(np.cov(data, rowvar=False)), rel=1e-12)
    again = compute_metrics(problem, result.loadings, get_registry().metrics())
    for key, value in result.metrics.items():
        assert again[key] == pytest.approx(value, rel=1e-12, abs=1e-12), key
    assert np.all(problem.data[:, positions] == 0)  # exactly zero once centred, whatever the rounding of the mean


def test_near_constant_columns_are_constant_relative_to_their_magnitude() -> None:
    x = correlated()
    noisy = 7.0 + 1e-14 * np.random.default_rng(0).standard_normal(60)  # rounding noise about 7
    data = np.column_stack([x, noisy, 1e-13 * x[:, 0]])  # the last varies, at a small scale
    problem = as_problem(data)
    assert problem.constant_columns == (9,)
    assert np.all(densify(problem.covariance)[9] == 0) and problem.covariance.diagonal()[10] > 0


@pytest.mark.parametrize("kind", ["tall", "wide", "sparse", "dask"])
@pytest.mark.parametrize("standardize", [False, True])
def test_constant_columns_of_extreme_magnitude_leave_the_rest_alone(kind: str, standardize: bool) -> None:
    x = np.random.default_rng(9).standard_normal((40, 6) if kind != "wide" else (5, 9))
    data, positions, others = with_constants(x, seed=3, values=(1e200, -1e-200, 0.1))
    matrix: Any = data
    if kind == "sparse":
        matrix = pytest.importorskip("scipy.sparse").csr_array(data)
    elif kind == "dask":
        matrix = pytest.importorskip("dask.array").from_array(data, chunks=(10, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow on the way
        warnings.simplefilter("ignore", ConstantColumnWarning)
        result = spcakit.fit(matrix, "spcart", r=2, k=3, standardize=standardize)
    np.testing.assert_allclose(result.loadings[others], spcakit.fit(x, "spcart", r=2, k=3, standardize=standardize).loadings,
                               atol=1e-9)
    assert np.all(result.loadings[positions] == 0)


# -- the sparsity knob and r ------------------------------------------------------------------------------
def test_k_above_the_varying_columns_is_lowered_with_a_warning() -> None:
    x = correlated()
    data, positions, others = with_constants(x)
    with pytest.warns(ConstantColumnWarning) as record:
        result = spcakit.fit(data, "tpower", r=2, k=12)
    lowered = [str(w.message) for w in record if "k=12" in str(w.message)]
    assert lowered == ["k=12 is more than the 9 variables that vary (of 12); k=9 was used: no loading can have more "
                       "nonzeros than that"]
    assert result.metrics["pattern"] == [9, 9] and len(result.warnings) == 2
    np.testing.assert_allclose(result.loadings[others], spcakit.fit(x, "tpower", r=2, k=9).loadings, atol=1e-12)
    per_component = fit_quietly(data, "encoder-iterative", r=2, k=[11, 3])
    assert per_component.metrics["pattern"] == [9, 3]
    assert "k=[11, 3]" in per_component.warnings[1] and "k=[9, 3]" in per_component.warnings[1]


def test_a_parameter_impossible_on_the_varying_columns_is_a_clear_error() -> None:
    data, _, _ = with_constants(correlated())
    with pytest.raises(InvalidParameterError, match=r"runs on the 9 of the 12 variables that vary: 3 column\(s\)"):
        fit_quietly(data, "spcart", r=2, truncator="sparsity", lam=10)  # 10 zeros of 9 columns


def test_fewer_varying_columns_than_r_is_an_error() -> None:
    data, positions, _ = with_constants(correlated(p=2))
    with pytest.raises(InvalidParameterError) as info:
        spcakit.fit(data, "spcart", r=3)
    message = str(info.value)
    assert "r=3 is larger than the number of variables that vary: 2 of the 5" in message
    assert f"{positions[0]} (x{positions[0] + 1})" in message and "valid: 1 <= r <= 2" in message
    assert fit_quietly(data, "spcart", r=2).r == 2


@pytest.mark.parametrize("kind", ["dense", "wide", "covariance", "sparse"])
def test_all_constant_columns_are_an_error(kind: str) -> None:
    x = np.tile([1.0, 0.0, -4.0], (20 if kind != "wide" else 2, 1))
    if kind == "covariance":
        matrix: Any = spcakit.Covariance(np.zeros((3, 3)))
    elif kind == "sparse":
        sp = pytest.importorskip("scipy.sparse")
        matrix = sp.csr_array((20, 3))
    else:
        matrix = x
    with pytest.raises(InvalidDataError, match=r"3 (column|variable)\(s\) .*every one of them, so there is no variance"):
        spcakit.fit(matrix, "spcart", r=1)


# -- kinds of input -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("standardize", [False, True])
def test_wide_dense_data(standardize: bool) -> None:
    x = np.random.default_rng(5).standard_normal((8, 20))
    data, positions, others = with_constants(x, seed=2)
    problem = as_problem(data, standardize=standardize)
    assert type(problem.varying.covariance).__name__ == "GramCovariance"
    for name, kwargs in (("spcart", {"k": 3}), ("encoder-iterative", {"k": 3}), ("spca-sp", {"k": 3})):
        alone = spcakit.fit(x, name, r=3, standardize=standardize, **kwargs)
        result = fit_quietly(data, name, r=3, standardize=standardize, **kwargs)
        assert np.all(result.loadings[positions] == 0)
        np.testing.assert_allclose(result.loadings[others], alone.loadings, atol=1e-9, err_msg=name)
        assert result.metrics["cpev"] == pytest.approx(alone.metrics["cpev"], abs=1e-9)


@pytest.mark.parametrize("standardize", [False, True])
def test_a_covariance_with_zero_variances(standardize: bool) -> None:
    x = correlated()
    data, positions, others = with_constants(x)
    covariance = np.cov(data, rowvar=False)
    covariance[positions, :] = covariance[:, positions] = 0.0
    alone = spcakit.fit(np.cov(x, rowvar=False), "spcart", r=3, k=3, covariance=True, standardize=standardize)
    for given in (spcakit.Covariance(covariance), covariance):
        with pytest.warns(ConstantColumnWarning, match=r"3 variable\(s\) have zero variance"):
            result = spcakit.fit(given, "spcart", r=3, k=3, covariance=given is covariance, standardize=standardize)
        assert np.all(result.loadings[positions] == 0)
        np.testing.assert_allclose(result.loadings[others], alone.loadings, atol=1e-9)
        assert result.metrics["cpev"] == pytest.approx(alone.metrics["cpev"], abs=1e-9)


@pytest.mark.parametrize("standardize", [False, True])
@pytest.mark.parametrize("center", [True, False])
def test_sparse_counts_with_all_zero_genes(standardize: bool, center: bool) -> None:
    sp = pytest.importorskip("scipy.sparse")
    rng = np.random.default_rng(7)
    counts = rng.poisson(0.3, (80, 30)) * (rng.random((80, 30)) < 0.5)
    counts[0] = 1  # every gene counted once ...
    zero = [3, 17, 29]
    counts[:, zero] = 0  # ... but these, never
    keep = np.setdiff1d(np.arange(30), zero)
    alone = spcakit.fit(sp.csr_array(counts[:, keep]), "spcart", r=2, k=4, standardize=standardize, center=center)
    for matrix in (sp.csr_array(counts), sp.csc_matrix(counts)):
        with pytest.warns(ConstantColumnWarning, match=r"3 column\(s\) are constant \(zero variance\): 3 \(x04\), 17"):
            result = spcakit.fit(matrix, "spcart", r=2, k=4, standardize=standardize, center=center)
        assert np.all(result.loadings[zero] == 0) and result.loadings.shape == (30, 2)
        np.testing.assert_allclose(result.loadings[keep], alone.loadings, atol=1e-9)
        assert result.metrics["cpev"] == pytest.approx(alone.metrics["cpev"], abs=1e-9)
        if standardize:
            assert np.all(result.input.scale[zero] == 1.0)


@pytest.mark.parametrize("shape", [(60, 9), (8, 20)], ids=["tall", "wide"])
@pytest.mark.parametrize("standardize", [False, True])
def test_dask_arrays(shape: tuple[int, int], standardize: bool) -> None:
    da = pytest.importorskip("dask.array")
    x = np.random.default_rng(1).standard_normal(shape)
    data, positions, others = with_constants(x, seed=4, values=(2.0, -7.0))
    alone = spcakit.fit(x, "spcart", r=2, k=3, standardize=standardize)
    with pytest.warns(ConstantColumnWarning, match=r"2 column\(s\) are constant"):
        result = spcakit.fit(da.from_array(data, chunks=(5, 4)), "spcart", r=2, k=3, standardize=standardize)
    assert np.all(result.loadings[positions] == 0) and result.input.mean.shape == (data.shape[1],)
    np.testing.assert_allclose(result.loadings[others], alone.loadings, atol=1e-9)


# -- scikit-learn ------------------------------------------------------------------------------------------
def test_digits_with_sparse_pca_and_a_standard_scaler_pipeline() -> None:
    pytest.importorskip("sklearn")
    from sklearn.datasets import load_digits
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x = load_digits().data
    constant = np.flatnonzero(x.std(axis=0) == 0)
    assert constant.size == 3
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        model = spcakit.SparsePCA(n_components=5, k=8).fit(x)
    assert [w.category for w in record] == [ConstantColumnWarning]  # not re-issued as a ConvergenceWarning
    assert model.components_.shape == (5, 64) and np.all(model.components_[:, constant] == 0)
    assert [int(np.count_nonzero(row)) for row in model.components_] == [8] * 5
    assert np.all(np.isfinite(model.transform(x)))
    with pytest.warns(ConstantColumnWarning):  # SPCArt from here on: the default method takes seconds here
        pipeline = make_pipeline(StandardScaler(), spcakit.SparsePCA(n_components=5, k=8, method="spcart")).fit(x)
    assert np.all(np.isfinite(pipeline.transform(x)))
    with pytest.warns(ConstantColumnWarning):
        scaled = spcakit.SparsePCA(n_components=5, k=8, method="spcart", standardize=True).fit(x)
    assert np.all(scaled.scale_[constant] == 1.0) and np.all(np.isfinite(scaled.transform(x)))
    # the same components as on the standardised data of StandardScaler (which also divides by 1 there)
    np.testing.assert_allclose(scaled.components_, pipeline[-1].components_, atol=1e-8)


def test_transform_of_full_width_data() -> None:
    x = correlated()
    data, positions, others = with_constants(x)
    result = fit_quietly(data, "spcart", r=3, k=4, standardize=True)
    model = Model.from_result(result)
    alone = Model.from_result(spcakit.fit(x, "spcart", r=3, k=4, standardize=True))
    new = data[:7] + np.random.default_rng(0).standard_normal((7, 12))  # new rows: the constants need not hold
    np.testing.assert_allclose(model.scores(new), alone.scores(new[:, others]), atol=1e-9)


# -- path and cross-validation ---------------------------------------------------------------------------------
def test_path_lowers_the_levels_above_the_varying_columns() -> None:
    data, positions, others = with_constants(correlated())
    with pytest.warns(ConstantColumnWarning):
        found = spcakit.path(data, "spcart", r=2, k="7:12")
    assert [level.pattern for level in found][-3:] == [(9, 9)] * 3 and found.levels[-1].cpev == found.levels[2].cpev
    document = json.loads(json.dumps(found.to_dict()))
    assert document["warnings"][0].startswith("3 column(s) are constant") and "k=12 is more than" in document["warnings"][-1]
    with pytest.warns(ConstantColumnWarning):
        auto = spcakit.path(data, "tpower", r=2)
    assert max(level.level for level in auto) <= 9  # the auto grid runs to the columns that vary


def test_cross_validate_on_digits_with_pixels_constant_in_a_fold() -> None:
    pytest.importorskip("sklearn")
    from sklearn.datasets import load_digits

    x = load_digits().data
    x = x[:, x.std(axis=0) > 0]  # the always-constant pixels dropped; some others are rarely inked
    with pytest.warns(ConstantColumnWarning, match=r"fold 3 of 5 \(1438 training rows\): 2 column\(s\) are constant "
                                                   r"among the training rows: 23 \(x24\), 53 \(x54\)"):
        cv = spcakit.cross_validate(x, "spcart", r=2, k="2,8,61", folds=5, seed=0)
    assert len(cv.warnings) == 1 and "predicted by the training means" in cv.warnings[0]
    assert np.all(np.isfinite(cv.fold_errors)) and cv.mean_error[0] > cv.mean_error[-1]
    assert json.loads(json.dumps(cv.to_dict()))["warnings"] == list(cv.warnings)
    with pytest.warns(ConstantColumnWarning):
        scaled = spcakit.cross_validate(x, "spcart", r=2, k="2,8", folds=5, seed=0, standardize=True)
    assert np.all(np.isfinite(scaled.fold_errors))


def test_cross_validate_with_columns_constant_in_all_rows() -> None:
    data, positions, others = with_constants(correlated(n=90))
    with pytest.warns(ConstantColumnWarning, match=r"3 column\(s\) are constant \(zero variance\)"):
        cv = spcakit.cross_validate(data, "spcart", r=1, k="1:3", folds=3)
    alone = spcakit.cross_validate(data[:, others], "spcart", r=1, k="1:3", folds=3)
    np.testing.assert_allclose(cv.fold_errors, alone.fold_errors, rtol=1e-9)
    assert cv.warnings == () and np.all(cv.result.loadings[positions] == 0)


# -- the operator ----------------------------------------------------------------------------------------------
def test_padded_covariance_is_the_padded_matrix() -> None:
    rng = np.random.default_rng(2)
    base = rng.standard_normal((5, 5))
    base = base @ base.T
    index = np.array([0, 2, 3, 6, 7])
    padded = PaddedCovariance(DenseCovariance(base), index, 8)
    full = np.zeros((8, 8))
    full[np.ix_(index, index)] = base
    v = rng.standard_normal((8, 3))
    np.testing.assert_allclose(padded.matmat(v), full @ v)
    np.testing.assert_allclose(padded.matmat(v[:, 0]), full @ v[:, 0])
    np.testing.assert_allclose(padded.diagonal(), np.diag(full))
    assert padded.trace() == pytest.approx(np.trace(full))
    np.testing.assert_allclose(padded.columns(np.array([1, 2, 7])), full[:, [1, 2, 7]])
    np.testing.assert_allclose(padded.submatrix(np.array([1, 3, 6])), full[np.ix_([1, 3, 6], [1, 3, 6])])
    w = np.zeros((8, 2))
    w[[2, 4]] = rng.standard_normal((2, 2))
    np.testing.assert_allclose(padded.matmat_rows(w, np.array([2, 4])), full @ w)
    values, vectors = padded.top_eigenpairs(7)  # beyond the 5 that vary: zero eigenvalues, coordinate vectors
    np.testing.assert_allclose(values, np.sort(np.linalg.eigvalsh(full))[::-1][:7], atol=1e-12)
    np.testing.assert_allclose(vectors.T @ vectors, np.eye(7), atol=1e-12)
    np.testing.assert_allclose(full @ vectors, vectors * values, atol=1e-10)
    np.testing.assert_allclose(padded.top_eigenvalues(8), np.sort(np.linalg.eigvalsh(full))[::-1], atol=1e-12)


# -- the command line -------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def constant_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data, _, _ = with_constants(correlated(n=45, p=5), seed=5, values=(3.5,))
    file = tmp_path_factory.mktemp("constant") / "measurements.csv"
    np.savetxt(file, data, delimiter=",", header="a,b,c,d,e,f", comments="")
    return file


def constant_name(file: Path) -> str:
    names = file.read_text().splitlines()[0].split(",")
    column = int(np.flatnonzero(np.loadtxt(file, delimiter=",", skiprows=1).std(axis=0) == 0)[0])
    return f"{column} ({names[column]})"


def test_cli_run_warns_on_stderr_and_in_the_json(cli, constant_csv: Path) -> None:
    named = constant_name(constant_csv)
    result = cli.invoke("run", "spcart", "--data", str(constant_csv), "-r", "2", "-k", "6", "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["warnings"][0] == (f"1 column(s) are constant (zero variance): {named}; they get zero loadings in "
                                       "every component (the method runs on the 5 of the 6 that vary)")
    assert "k=6 is more than the 5 variables that vary" in document["warnings"][1]
    assert result.stderr.splitlines() == [f"warning: {w}" for w in document["warnings"]]
    text = cli.invoke("run", "spcart", "--data", str(constant_csv), "-r", "2", "--standardize")
    # the text report does not repeat what stderr said as it arose
    assert text.exit_code == 0 and "column(s) are constant" not in text.stdout
    assert f"warning: 1 column(s) are constant (zero variance): {named}" in text.stderr


@pytest.mark.parametrize("command", [["path", "spcart", "-k", "1:6"], ["cv", "spcart", "-k", "1:3", "--folds", "3"]])
def test_cli_path_and_cv_warn_once_on_stderr(cli, constant_csv: Path, command: list[str]) -> None:
    result = cli.invoke(*command, "--data", str(constant_csv), "-r", "1", "--json")
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert lines[0].startswith(f"warning: 1 column(s) are constant (zero variance): {constant_name(constant_csv)}")
    assert len(lines) == len(set(lines))
    document = json.loads(result.stdout)
    warned = document["warnings"] if command[0] == "path" else document["result"]["warnings"]
    assert warned[0] == lines[0].removeprefix("warning: ")


def test_cli_errors_exit_2(cli, constant_csv: Path, tmp_path: Path) -> None:
    result = cli.invoke("run", "spcart", "--data", str(constant_csv), "-r", "6")
    assert result.exit_code == 2 and "valid: 1 <= r <= 5" in result.stderr and "Traceback" not in result.output
    flat = tmp_path / "flat.csv"
    flat.write_text("a,b\n1,2\n1,2\n1,2\n")
    for command in (["run", "spcart"], ["path", "spcart"], ["cv", "spcart"]):
        result = cli.invoke(*command, "--data", str(flat), "-r", "1")
        assert result.exit_code == 2, (command, result.output)
        assert "2 column(s) are constant (zero variance): 0 (a), 1 (b)" in result.stderr
