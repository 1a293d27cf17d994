"""The search read from the data (:class:`~spcakit.analysis.search.gram.GramMatrix`, few rows, many variables): every
entry it is asked for equals the formed matrix's, and the optimum it certifies is brute force's, on data with fewer
rows than variables (rank-deficient), standardised (tied variances), with duplicated and constant columns; the
``exact`` method reads wide data this way and never forms ``p x p``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spcakit
from spcakit.analysis.search import GramMatrix, branch_and_bound, gram_search_matrix
from spcakit.analysis.search import tree as search
from spcakit.numerics.operators import GramCovariance, ProjectionDeflated
from spcakit.testing.brute_force import brute_force_optimum, reference_rounding

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def wide_factors(draw: st.DrawFn) -> np.ndarray:
    """``n x p`` factors with ``n < p``: Gaussian, standardised (tied diagonal), with a duplicated column or a zero one."""
    p = draw(st.integers(3, 12))
    n = draw(st.integers(1, p - 1))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    f = rng.standard_normal((n, p)) * 10.0 ** rng.uniform(-1, 1, p)
    kind = draw(st.sampled_from(["gaussian", "standardised", "duplicated", "constant"]))
    if kind == "standardised":
        f = f / np.maximum(np.linalg.norm(f, axis=0), 1e-300)
    elif kind == "duplicated":
        f[:, -1] = f[:, 0]
    elif kind == "constant":
        f[:, p // 2] = 0.0
    return f


@SETTINGS
@given(f=wide_factors(), data=st.data())
def test_every_entry_read_from_the_data_is_the_formed_matrix_s(f, data):
    a, g = f.T @ f, GramMatrix(f)
    p = a.shape[0]
    scale = max(float(np.abs(a).max()), 1e-300) * 1e-13
    rows = np.array(data.draw(st.lists(st.integers(0, p - 1), min_size=1, max_size=p), label="rows"))
    columns = np.array(data.draw(st.lists(st.integers(0, p - 1), min_size=1, max_size=p), label="columns"))
    np.testing.assert_allclose(g[np.ix_(rows, columns)], a[np.ix_(rows, columns)], rtol=0, atol=scale)
    np.testing.assert_allclose(g[:, columns], a[:, columns], rtol=0, atol=scale)
    np.testing.assert_allclose(g[rows], a[rows], rtol=0, atol=scale)
    np.testing.assert_allclose(g[1:p], a[1:p], rtol=0, atol=scale)
    stack = np.stack([rows[: min(rows.size, 3)]] * 2)
    np.testing.assert_allclose(g[stack[:, :, None], stack[:, None, :]], a[stack[:, :, None], stack[:, None, :]],
                               rtol=0, atol=scale)
    np.testing.assert_allclose(g.diagonal(), np.diag(a), rtol=0, atol=scale)
    v = np.arange(p, dtype=float)
    np.testing.assert_allclose(g @ v, a @ v, rtol=0, atol=scale * max(1.0, float(np.abs(v).sum())))
    values, vectors = g.spectrum()
    top = np.linalg.eigvalsh(a)[::-1][: values.size]
    np.testing.assert_allclose(values, top, rtol=0, atol=1e-10 * max(top[0], 1e-300))
    # the pairs given span A's range: A = V diag(values) V^T
    np.testing.assert_allclose((vectors * values) @ vectors.T, a, rtol=0, atol=1e-10 * max(top[0], 1e-300))


def test_a_gram_matrix_refuses_the_reads_it_does_not_compute():
    g = GramMatrix(np.ones((2, 5)))
    with pytest.raises(TypeError, match="whole columns"):
        g[1:3, [0, 1]]
    with pytest.raises(TypeError, match="not read by an index"):
        g[np.array([0, 1]), np.array([1, 2])]
    with pytest.raises(ValueError, match="2-D"):
        GramMatrix(np.ones(3))


@SETTINGS
@given(f=wide_factors(), data=st.data())
def test_the_search_read_from_the_data_certifies_brute_force_s_optimum(f, data):
    a = f.T @ f
    k = data.draw(st.integers(1, a.shape[0]), label="k")
    best, _ = brute_force_optimum(a, k)
    found = branch_and_bound(GramMatrix(f), k, task=None)
    tolerance = reference_rounding(a) + 1e-9 * abs(best)
    assert found.optimal
    assert found.value == pytest.approx(best, abs=tolerance)
    assert found.bound >= best - tolerance  # never below the optimum
    assert np.count_nonzero(found.vector) <= k


def test_a_covariance_of_few_rows_and_many_variables_is_read_from_its_data(monkeypatch):
    rng = np.random.default_rng(3)
    data = rng.standard_normal((6, 30))
    centred = data - data.mean(axis=0)
    covariance = GramCovariance(data, scale=5.0, mean=data.mean(axis=0))
    monkeypatch.setattr(search, "GRAM_SEARCH_P", 30)
    matrix = gram_search_matrix(covariance)
    assert isinstance(matrix, GramMatrix) and matrix.factor.shape == (6, 30)
    np.testing.assert_allclose(matrix[np.arange(30)], centred.T @ centred / 5.0, atol=1e-12)
    # a projection deflation of it too: (I - xx^T) C (I - xx^T)
    x = np.zeros(30)
    x[[2, 7]] = [0.6, 0.8]
    deflated = gram_search_matrix(ProjectionDeflated(covariance, x))
    projection = np.eye(30) - np.outer(x, x)
    np.testing.assert_allclose(deflated[np.arange(30)], projection @ (centred.T @ centred / 5.0) @ projection,
                               atol=1e-12)
    # too few variables, or as many rows as half of them: formed whole
    monkeypatch.setattr(search, "GRAM_SEARCH_P", 31)
    assert gram_search_matrix(covariance) is None
    monkeypatch.setattr(search, "GRAM_SEARCH_P", 10)
    assert gram_search_matrix(GramCovariance(rng.standard_normal((16, 30)))) is None


@pytest.mark.parametrize("standardize", [False, True])
def test_exact_on_wide_data_reads_the_covariance_from_the_data_with_the_same_optimum(monkeypatch, standardize):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((8, 40)) @ np.diag(rng.uniform(0.5, 2.0, 40))
    x[:, 5] = x[:, 3]  # a repeated variable: tied
    formed = spcakit.fit(x, "exact", r=2, k=3, standardize=standardize, time_limit=None)
    reads: list[object] = []
    original = search.SearchProblem.__init__

    def recorded(self, a, *args, **kwargs):
        reads.append(type(a).__name__)
        original(self, a, *args, **kwargs)

    monkeypatch.setattr(search, "GRAM_SEARCH_P", 40)
    monkeypatch.setattr(search.SearchProblem, "__init__", recorded)
    from_data = spcakit.fit(x, "exact", r=2, k=3, standardize=standardize, time_limit=None)
    assert "GramMatrix" in reads
    np.testing.assert_allclose(from_data.metrics["cpev"], formed.metrics["cpev"], rtol=1e-9)
    assert [set(np.flatnonzero(u)) for u in from_data.loadings.T] == [set(np.flatnonzero(u)) for u in formed.loadings.T]


def test_the_certify_bound_on_wide_data_is_read_from_the_data_with_the_same_certificate(monkeypatch):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((7, 36)) * 1e55  # C of 1e110: searched as C / 2^e (e even when read from F)
    formed = spcakit.fit(x, "tpower", r=1, k=4, bound="certify")
    monkeypatch.setattr(search, "GRAM_SEARCH_P", 36)
    reads: list[str] = []
    original = search.SearchProblem.__init__

    def recorded(self, a, *args, **kwargs):
        reads.append(type(a).__name__)
        original(self, a, *args, **kwargs)

    monkeypatch.setattr(search.SearchProblem, "__init__", recorded)
    from_data = spcakit.fit(x, "tpower", r=1, k=4, bound="certify")
    assert reads == ["GramMatrix"]
    best, _ = brute_force_optimum(np.cov(x / 1e55, rowvar=False), 4)
    assert from_data.metrics["bound"][0] == pytest.approx(formed.metrics["bound"][0], rel=1e-9)
    assert from_data.metrics["bound"][0] / 1e110 >= best * (1 - 1e-9)
