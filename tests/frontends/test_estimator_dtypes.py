"""spcakit.SparsePCA keeps float32 and sparse DataFrames.

float32 data give float32 ``components_`` and scores (scikit-learn's ``preserves_dtype``), computed in float64;
float64 stays float64, integers give float64. A DataFrame of sparse columns keeps its column names and is
read as a CSR matrix, never densified.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

pytest.importorskip("sklearn")
pd = pytest.importorskip("pandas")

import spcakit
from spcakit.estimator import SparsePCA


def planted(n: int = 400, p: int = 20, seed: int = 0) -> np.ndarray:
    """Two planted sparse components (variables 0-3 and 4-7) in noise, columns shifted away from zero."""
    rng = np.random.default_rng(seed)
    x = 0.3 * rng.normal(size=(n, p))
    x[:, :4] += 3.0 * rng.normal(size=(n, 1))
    x[:, 4:8] += 2.0 * rng.normal(size=(n, 1))
    return x + np.linspace(1, 10, p)


def model(**options: object) -> SparsePCA:
    return SparsePCA(n_components=2, method="tpower", k=4, **options)


def close32(a: np.ndarray, b: np.ndarray) -> bool:
    """``a`` (float32) agrees with ``b`` (float64) to float32 precision, relative to ``b``'s size."""
    return bool(
        np.max(np.abs(a.astype(np.float64) - b))
        <= 1e-5 * max(1.0, float(np.max(np.abs(b))))
    )


# -- dtypes -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dense_outputs_keep_the_input_dtype(dtype):
    x = planted().astype(dtype)
    fitted = model().fit(x)
    scores = fitted.transform(x)

    assert fitted.components_.dtype == dtype
    assert scores.dtype == dtype
    assert model().fit_transform(x).dtype == dtype
    assert fitted.inverse_transform(scores).dtype == dtype
    assert (
        fitted.result_.loadings.dtype == np.float64
    )  # spcakit.Result stays float64 (see docs/sklearn.md)


def test_integers_give_float64():
    x = np.rint(planted() * 10).astype(np.int32)
    fitted = model().fit(x)
    assert fitted.components_.dtype == np.float64
    assert fitted.transform(x).dtype == np.float64


@pytest.mark.parametrize("options", [{}, {"standardize": True}, {"center": False}])
def test_float32_agrees_with_the_float64_fit(options):
    x64 = planted()
    x32 = x64.astype(np.float32)
    a, b = (
        model(**options).fit(x32),
        model(**options).fit(x32.astype(np.float64)),
    )  # the same numbers, read as float32 or float64

    assert np.array_equal(a.components_ != 0, b.components_ != 0)
    assert close32(a.components_, b.components_)
    assert close32(a.transform(x32), b.transform(x32.astype(np.float64)))
    scores = b.transform(x32.astype(np.float64))
    assert close32(
        a.inverse_transform(scores.astype(np.float32)), b.inverse_transform(scores)
    )
    assert a.score(x32) == pytest.approx(b.score(x32.astype(np.float64)), rel=1e-10)
    assert a.reconstruction_error(x32) == pytest.approx(
        b.reconstruction_error(x32.astype(np.float64)), rel=1e-10
    )
    # a float64 fit transforms float32 data to float32, and the other way round
    assert b.transform(x32).dtype == np.float32 and a.transform(x64).dtype == np.float64


def test_sparse_float32():
    rng = np.random.default_rng(1)
    dense = sp.random(300, 25, density=0.2, random_state=rng).toarray()
    dense[:, :4] += 2.0 * rng.normal(size=(300, 1))  # a planted block, stored densely
    x = sp.csr_array(dense)
    x32 = x.astype(np.float32)
    a, b = model().fit(x32), model().fit(x32.astype(np.float64))

    assert a.components_.dtype == np.float32 and a.transform(x32).dtype == np.float32
    assert model().fit_transform(x32).dtype == np.float32
    assert close32(a.components_, b.components_)
    assert close32(a.transform(x32), b.transform(x32.astype(np.float64)))
    assert a.reconstruction_error(x32) == pytest.approx(
        b.reconstruction_error(x32.astype(np.float64)), rel=1e-10
    )


def test_dataframe_of_float32_columns():
    x = planted().astype(np.float32)
    df = pd.DataFrame(x, columns=[f"v{j}" for j in range(x.shape[1])])
    fitted = model().fit(df)

    assert fitted.components_.dtype == np.float32
    assert fitted.transform(df).dtype == np.float32
    assert list(fitted.feature_names_in_) == list(df.columns)
    assert fitted.set_output(transform="pandas").transform(df).dtypes.tolist() == [
        np.float32,
        np.float32,
    ]


def test_the_fit_copies_float32_data_at_most_once():
    """The data operator holds the data in float64 (spcakit.inputs reads them as float64): one float64 copy of
    float32 data, never two (the estimator's validation keeps float32)."""
    x = np.random.default_rng(2).normal(size=(20_000, 100)).astype(np.float32)
    tracemalloc.start()
    try:
        model().fit(x)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1.5 * (
        2 * x.nbytes
    )  # one float64 copy (2 * nbytes) and small change; two would be 4 * nbytes


def test_preserves_dtype_tag():
    assert SparsePCA().__sklearn_tags__().transformer_tags.preserves_dtype == [
        "float64",
        "float32",
    ]


def test_spcakit_fit_result_stays_float64():
    result = spcakit.fit(planted().astype(np.float32), "tpower", 2, k=4, metrics=())
    assert result.loadings.dtype == np.float64


# -- sparse DataFrames --------------------------------------------------------------------------------------
def sparse_frame(dtype: type = np.float64) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    x = sp.random(300, 12, density=0.3, format="csr", random_state=rng).toarray()
    x[:, :3] += (rng.random((300, 1)) < 0.5) * rng.normal(
        3.0, 1.0, size=(300, 1)
    )  # a planted program, sparse rows
    genes = [f"gene{j:02d}" for j in range(12)]
    return pd.DataFrame.sparse.from_spmatrix(
        sp.csr_matrix(x.astype(dtype)), columns=genes
    )


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sparse_dataframe_keeps_its_names_without_densifying(dtype):
    df = sparse_frame(dtype)
    csr = df.sparse.to_coo().tocsr()
    expected = SparsePCA(n_components=2, method="tpower", k=3).fit(csr)

    with pytest.MonkeyPatch.context() as patch:

        def refuse(*args, **kwargs):
            raise AssertionError("a sparse DataFrame was densified")

        for owner, name in (
            (pd.DataFrame, "to_numpy"),
            (pd.DataFrame, "__array__"),
            (pd.arrays.SparseArray, "to_dense"),
            (pd.arrays.SparseArray, "__array__"),
        ):
            patch.setattr(owner, name, refuse)
        fitted = SparsePCA(n_components=2, method="tpower", k=3).fit(df)
        scores = fitted.transform(df)
        fitted.score(df)
        fitted.reconstruction_error(df)

    assert list(fitted.feature_names_in_) == list(df.columns)
    assert fitted.components_.dtype == dtype and scores.dtype == dtype
    np.testing.assert_array_equal(
        fitted.components_, expected.components_.astype(dtype)
    )
    assert list(fitted.get_feature_names_out()) == ["PC1", "PC2"]
    frame = fitted.result_.loadings_frame()
    assert list(frame.index) == list(df.columns)
    assert set(frame.index[frame["PC1"] != 0]) == {"gene00", "gene01", "gene02"}


def test_sparse_dataframe_names_are_checked_on_transform():
    df = sparse_frame()
    fitted = SparsePCA(n_components=2, method="tpower", k=3).fit(df)
    renamed = df.rename(columns={"gene00": "other"})
    with pytest.raises(ValueError, match="feature names"):
        fitted.transform(renamed)
    with pytest.warns(UserWarning, match="feature names"):
        fitted.transform(
            df.sparse.to_coo().tocsr()
        )  # fitted with names, given none: scikit-learn's warning
