"""Loadings beyond the covariance's numerical rank are refused the same way by every method; the rank is judged
against what rounding can produce, so data in mixed units keep their full rank."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spcakit
from spcakit.core.errors import InvalidParameterError
from spcakit.numerics.linalg import numerical_rank

#: Methods of every kind: a PCA start (spcart), power steps with projection deflation (tpower), greedy selection and
#: the exact search with Mackey's generalized deflation, and the default portfolio.
METHODS = ("spcart", "tpower", "greedy", "exact", "auto")


def _rank_one(p: int = 6) -> np.ndarray:
    v = np.arange(1.0, p + 1.0)
    return np.outer(v, v) / (v @ v)


@pytest.mark.parametrize("method", METHODS)
def test_every_method_refuses_loadings_beyond_a_rank_one_covariance(method):
    with pytest.raises(InvalidParameterError, match=r"r=3 exceeds the numerical rank of the covariance \(1\)"):
        spcakit.fit(_rank_one(), method, r=3, k=3, covariance=True)
    assert spcakit.fit(_rank_one(), method, r=1, k=3, covariance=True).r == 1


@pytest.mark.parametrize("method", METHODS)
def test_every_method_refuses_loadings_beyond_the_rank_of_data_with_few_rows(method):
    x = np.random.default_rng(0).standard_normal((3, 8))  # centred: rank 2
    with pytest.raises(InvalidParameterError, match=r"r=4 is larger than the rank of the centred data"):
        spcakit.fit(x, method, r=4, k=3)


@pytest.mark.parametrize("method", ("spcart", "tpower", "greedy", "auto"))
def test_data_in_mixed_units_keep_their_full_rank(method):
    # one column a million times another: the eigenvalues are 1e-12 apart, far above rounding (about 1e-14 here)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((50, 2)) * np.array([1e6, 1.0])
    result = spcakit.fit(x, method, r=2, k=1, metrics=["cpev"])
    assert result.metrics["cpev"] == pytest.approx(1.0, rel=1e-9)
    assert sorted(np.flatnonzero(result.loadings[:, j])[0] for j in range(2)) == [0, 1]


@settings(max_examples=40, deadline=None, derandomize=True)
@given(n=st.integers(2, 40), p=st.integers(1, 12), rank=st.integers(1, 12), scale=st.floats(-30, 30),
       seed=st.integers(0, 2**16))
def test_the_numerical_rank_of_a_formed_covariance_is_its_rank(n, p, rank, scale, seed):
    # rows in a random `rank`-dimensional subspace, each column at its own scale: C = X^T X / n has rank min(n, rank, p)
    rng = np.random.default_rng(seed)
    rank = min(rank, p)
    x = rng.standard_normal((n, rank)) @ rng.standard_normal((rank, p)) * 10.0**scale
    c = x.T @ x / n
    values = np.linalg.eigvalsh(c)[::-1]
    assert numerical_rank(values, n, p) == min(n, rank)


@pytest.mark.parametrize("method", METHODS)
def test_every_method_refuses_loadings_beyond_collinear_columns(method):
    # 200 rows, 6 columns, all combinations of 2: rank 2 although n - 1 = 199
    rng = np.random.default_rng(2)
    x = rng.standard_normal((200, 2)) @ rng.standard_normal((2, 6))
    with pytest.raises(InvalidParameterError, match=r"r=3 exceeds the numerical rank of the covariance \(2\)"):
        spcakit.fit(x, method, r=3, k=6)
    assert spcakit.fit(x, method, r=2, k=6, metrics=["cpev"]).metrics["cpev"] == pytest.approx(1.0, rel=1e-9)
