"""Dense data held once: the implicitly centred GramCovariance, its eigensolvers, and the fast column ranking."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spcakit
from spcakit.numerics import operators, ties
from spcakit.numerics.operators import KRYLOV_BLOCK, GramCovariance, block_krylov_top, densify
from spcakit.inputs import as_problem


def centred_reference(x: np.ndarray, standardize: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    centred = x - x.mean(axis=0)
    if not standardize:
        return centred, None
    deviations = np.sqrt(np.einsum("ij,ij->j", centred, centred) / (x.shape[0] - 1))
    return centred / deviations, deviations


@pytest.mark.parametrize("shape", [(7, 30), (40, 9)])
@pytest.mark.parametrize("standardize", [False, True])
@pytest.mark.parametrize("offset", [0.0, 3.0, 1e7])  # 1e7: means dominate, products centre by blocks
def test_implicitly_centred_gram_matches_the_centred_copy(shape, standardize, offset):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape) * rng.uniform(0.5, 2.0, shape[1]) + offset
    centred, deviations = centred_reference(x, standardize)
    n, p = shape
    op = GramCovariance(x, n - 1.0, mean=x.mean(axis=0), column_scale=deviations)
    reference = GramCovariance(centred, n - 1.0)
    assert op._implicit() == (offset < 1e3)
    dense = centred.T @ centred / (n - 1)
    scale = float(np.abs(dense).max())
    v = rng.standard_normal((p, 3))
    tol = 1e-8 * scale * (1 + offset) if op._implicit() else 1e-10 * scale
    np.testing.assert_allclose(op.matmat(v), reference.matmat(v), atol=tol * np.abs(v).sum())
    np.testing.assert_allclose(op.matmat(v[:, 0]), reference.matmat(v[:, 0]), atol=tol * np.abs(v).sum())
    np.testing.assert_allclose(op.diagonal(), np.diag(dense), rtol=1e-10)
    assert op.trace() == pytest.approx(np.trace(dense), rel=1e-10)
    index = np.array([p - 1, 0, 2])
    np.testing.assert_allclose(op.columns(index), dense[:, index], atol=1e-9 * scale)
    np.testing.assert_allclose(op.submatrix(index), dense[np.ix_(index, index)], atol=1e-10 * scale)
    w = np.zeros((p, 2))
    w[index] = rng.standard_normal((3, 2))
    np.testing.assert_allclose(op.matmat_rows(w, index), dense @ w, atol=1e-9 * scale * np.abs(w).sum())
    r = min(n, p) - 2
    values, vectors = op.top_eigenpairs(r)
    expected = np.linalg.eigvalsh(dense)[::-1][:r]
    np.testing.assert_allclose(values, expected, atol=1e-10 * scale * p)
    np.testing.assert_allclose(np.einsum("ij,ij->j", vectors, dense @ vectors), values, atol=1e-9 * scale * p)
    np.testing.assert_allclose(vectors.T @ vectors, np.eye(r), atol=1e-10)


def test_gram_covariance_without_mean_is_the_former_operator_bit_for_bit():
    a = np.random.default_rng(2).standard_normal((12, 20))
    v = np.random.default_rng(3).standard_normal((20, 4))
    op = GramCovariance(a, 11.0)
    assert np.array_equal(op.matmat(v), a.T @ (a @ v) / 11.0)
    assert np.array_equal(op.diagonal(), np.einsum("ij,ij->j", a, a) / 11.0)
    assert op == GramCovariance(a, 11.0) and op != GramCovariance(a, 11.0, mean=a.mean(axis=0))


@pytest.mark.parametrize("centring", ["none", "mean", "standardised"])
def test_one_pass_row_block_product_equals_the_two_passes(monkeypatch, centring):
    # blocks of 16 rows of a 203 x 50 matrix (the last one short): each block's two products in one pass
    rng = np.random.default_rng(11)
    x = rng.standard_normal((203, 50)) * rng.uniform(0.5, 2.0, 50) + rng.uniform(-3.0, 3.0, 50)
    mean = None if centring == "none" else x.mean(axis=0)
    deviations = x.std(axis=0, ddof=1) if centring == "standardised" else None
    op = GramCovariance(x, 202.0, mean=mean, column_scale=deviations)
    v = rng.standard_normal((50, 5))
    monkeypatch.setattr(operators.gram, "ROW_BLOCK_BYTES", 0)  # every block too thin: the two passes
    assert op._row_block_height(v) == 0
    two_passes, two_passes_vector = op.matmat(v), op.matmat(v[:, 1])
    monkeypatch.setattr(operators.gram, "ROW_BLOCK_BYTES", 16 * 50 * 8)
    assert op._row_block_height(v) == 16 and op._row_block_height(v[:, 1]) == 16
    scale = float(np.abs(two_passes).max())
    np.testing.assert_allclose(op.matmat(v), two_passes, rtol=0, atol=1e-13 * scale)
    assert op.matmat(v[:, 1]).shape == (50,)
    np.testing.assert_allclose(op.matmat(v[:, 1]), two_passes_vector, rtol=0, atol=1e-13 * scale)
    assert op._row_block_height(rng.standard_normal((50, operators.ROW_BLOCK_WIDTH + 1))) == 0  # bound by arithmetic
    assert GramCovariance(np.asfortranarray(x), 202.0, mean=mean)._row_block_height(v) == 0  # rows not contiguous
    assert GramCovariance(x[:63], 62.0, mean=mean)._row_block_height(v) == 0  # fewer than four blocks


@pytest.mark.parametrize("standardize", [False, True])
def test_wide_data_are_held_once(standardize):
    # the operator references the caller's array; building the problem allocates far less than the data
    x = np.random.default_rng(4).standard_normal((100, 60_000))  # 48 MB
    as_problem(x, standardize=standardize)  # the modules a build imports lazily (the hashing thread's) are not data
    tracemalloc.start()
    try:
        problem = as_problem(x, standardize=standardize)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < x.nbytes / 4, f"building the problem took {peak / 1e6:.1f} MB for {x.nbytes / 1e6:.1f} MB of data"
    assert isinstance(problem.covariance, GramCovariance) and problem.covariance.data is x
    assert not problem.data_in_memory and problem.n_samples == 100 and problem.max_rank == 99
    centred, deviations = centred_reference(x, standardize)
    if standardize:
        np.testing.assert_allclose(problem.input.scale, deviations, rtol=1e-12)
        np.testing.assert_allclose(problem.covariance.diagonal(), 1.0, rtol=1e-12)  # a correlation matrix
    np.testing.assert_allclose(problem.data, centred, atol=1e-12)  # made on first read
    assert problem.data_in_memory


def test_wide_fit_equals_the_fit_on_the_centred_copy():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((30, 500)) + rng.uniform(-20, 20, 500)
    centred = x - x.mean(axis=0)
    for method, kwargs in (("spcart", {"k": 10}), ("rsvd-gp", {}), ("rsvd-gpb", {})):
        implicit = spcakit.fit(x, method, r=3, **kwargs)
        explicit = spcakit.fit(spcakit.Problem(GramCovariance(centred, 29.0), tuple(f"x{j}" for j in range(500))),
                               method, r=3, **kwargs)  # fmt: skip
        np.testing.assert_array_equal(implicit.loadings != 0, explicit.loadings != 0)
        np.testing.assert_allclose(implicit.loadings, explicit.loadings, atol=1e-10)


# -- the block Krylov eigensolver ------------------------------------------------------------------------
def spectra(p: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(6)
    clustered = 4.0 - np.sort(rng.uniform(0, 0.05, p))  # the edge of a square Gaussian matrix's spectrum
    low_rank = np.concatenate([np.sort(rng.exponential(size=p // 3))[::-1] + 1, np.zeros(p - p // 3)])
    repeated = np.ones(p)
    repeated[:4] = 6.0
    return {"clustered": clustered, "low_rank": low_rank, "repeated": repeated}


@pytest.mark.parametrize("kind", ["clustered", "low_rank", "repeated"])
@pytest.mark.parametrize("r", [1, 5, 12])
def test_block_krylov_finds_the_leading_eigenpairs(kind, r):
    p = 300
    values = spectra(p)[kind]
    basis, _ = np.linalg.qr(np.random.default_rng(7).standard_normal((p, p)))
    c = (basis * values) @ basis.T
    products = []

    def matmat(v):
        products.append(v.shape[1] if v.ndim == 2 else 1)
        return c @ v

    found, vectors = block_krylov_top(matmat, p, r)
    expected = np.sort(values)[::-1][:r]
    np.testing.assert_allclose(found, expected, atol=1e-12 * expected[0] * p)
    assert np.all(np.diff(found) <= 1e-12 * expected[0])
    np.testing.assert_allclose(vectors.T @ vectors, np.eye(r), atol=1e-12)
    residuals = np.linalg.norm(c @ vectors - vectors * found, axis=0)
    assert residuals.max() <= 1e-9 * expected[0]
    assert all(width == max(r, KRYLOV_BLOCK) for width in products)  # BLAS-3 blocks, never one vector at a time
    again = block_krylov_top(lambda v: c @ v, p, r)
    assert np.array_equal(again[0], found) and np.array_equal(again[1], vectors)  # fixed start: same digits


def test_block_krylov_tests_convergence_after_every_block_once_near(monkeypatch):
    # the clustered edge of a Gaussian spectrum needs several restarts; once a restart's residuals are within
    # KRYLOV_NEAR of the tolerance, a Rayleigh-Ritz test after each block stops before the next restart
    p, r = 600, 10
    values = spectra(p)["clustered"]
    basis, _ = np.linalg.qr(np.random.default_rng(7).standard_normal((p, p)))
    c = (basis * values) @ basis.T
    columns = {}
    for near in (0.0, operators.eigen.KRYLOV_NEAR):  # 0: tested at restarts only
        monkeypatch.setattr(operators.eigen, "KRYLOV_NEAR", near)
        widths: list[int] = []

        def matmat(v, widths=widths):
            widths.append(v.shape[1])
            return c @ v

        found, vectors = block_krylov_top(matmat, p, r)
        residuals = np.linalg.norm(c @ vectors - vectors * found, axis=0)
        assert residuals.max() <= operators.KRYLOV_TOL * found[0] * (1 + 1e-6)
        np.testing.assert_allclose(found, np.sort(values)[::-1][:r], rtol=1e-12)
        columns[near] = sum(widths)
    assert columns[operators.KRYLOV_NEAR] < columns[0.0]


def test_block_krylov_on_a_small_operator_takes_the_dense_matrix():
    c = np.diag(np.arange(10.0))
    values, vectors = block_krylov_top(lambda v: c @ v, 10, 4)
    np.testing.assert_allclose(values, [9, 8, 7, 6])
    np.testing.assert_allclose(np.abs(vectors), np.eye(10)[:, [9, 8, 7, 6]])


@pytest.mark.parametrize("shape", [(501, 500), (300, 700)])
def test_large_data_start_by_block_krylov_matches_the_dense_solver(monkeypatch, shape):
    # min(n, p) above DENSE_GRAM_LIMIT: the products, not the small Gram matrix (limit lowered to test it)
    monkeypatch.setattr(operators.gram, "DENSE_GRAM_LIMIT", 100)
    x = np.random.default_rng(8).standard_normal(shape) + 5.0
    op = GramCovariance(x, shape[0] - 1.0, mean=x.mean(axis=0))
    values, vectors = op.top_eigenpairs(6)
    dense = densify(op)
    expected_values, expected_vectors = np.linalg.eigh(dense)
    np.testing.assert_allclose(values, expected_values[::-1][:6], rtol=1e-12)
    # the eigenvalues are distinct here: each eigenvector agrees up to sign, to residual / gap
    cosines = np.abs(np.einsum("ij,ij->j", vectors, expected_vectors[:, ::-1][:, :6]))
    np.testing.assert_allclose(cosines, 1.0, atol=1e-9)


# -- column ranking without a full partition ------------------------------------------------------------
def top_k_by_sorting(m: np.ndarray, k: int) -> np.ndarray:
    mask = np.zeros(m.shape, dtype=bool)
    ranks = ties.order_columns(m)
    np.put_along_axis(mask, ranks[:k], True, axis=0)
    return mask


@pytest.mark.parametrize("k", [1, 5, 40, 63, 64, 200, 999])
def test_top_k_mask_by_slab_maxima_keeps_what_a_sort_keeps(k):
    rng = np.random.default_rng(k)
    p = 1000
    cases = [
        rng.standard_normal((p, 4)),
        np.sort(np.abs(rng.standard_normal((p, 3))), axis=0),  # largest entries all in the last slab
        rng.integers(0, 6, (p, 3)).astype(float),  # ties everywhere, ties at the boundary
        np.round(rng.standard_normal((p, 2)), 1) * (1 + 1e-13 * rng.standard_normal((p, 2))),  # near ties
        -np.abs(rng.standard_normal((p, 2))),  # negative scores: the tolerance is relative to max |s|
    ]
    for m in cases:
        np.testing.assert_array_equal(ties.top_k_mask(m, k), top_k_by_sorting(m, k))
        np.testing.assert_array_equal(ties.top_k_mask(m[:, 0], k), top_k_by_sorting(m[:, :1], k)[:, 0])


@pytest.mark.parametrize("sample", [8, 64, 4096])
@pytest.mark.parametrize("k", [1, 5, 40, 63, 200, 500, 999])
def test_top_k_mask_by_band_keeps_what_a_sort_keeps(k, sample, monkeypatch):
    # the band path on every row (its thresholds lowered), with coarse samples (8 scores of 1000) that often
    # miss the band and send a row to the whole partition, and fine ones
    monkeypatch.setattr(ties, "BAND_MIN_SCORES", 1)
    monkeypatch.setattr(ties, "BAND_MIN_RANK", 0)
    monkeypatch.setattr(ties, "BAND_SAMPLE", sample)
    rng = np.random.default_rng(k)
    p = 1000
    misleading = rng.random((p, 2))
    misleading[:: max(1, p // sample)] += 10.0  # every sampled score above every other: the band's counts fail
    cases = [
        rng.standard_normal((p, 4)),
        np.sort(np.abs(rng.standard_normal((p, 3))), axis=0),  # sorted: the sample is the row's quantiles
        rng.integers(0, 6, (p, 3)).astype(float),  # ties everywhere, ties at the boundary
        np.round(rng.standard_normal((p, 2)), 1) * (1 + 1e-13 * rng.standard_normal((p, 2))),  # near ties
        -np.abs(rng.standard_normal((p, 2))),  # negative scores
        np.full((p, 2), 3.0),  # one tie group
        misleading,
    ]
    for m in cases:
        np.testing.assert_array_equal(ties.top_k_mask(m, k), top_k_by_sorting(m, k))


@given(st.data())
@settings(max_examples=60, deadline=None)
def test_kth_and_next_by_band_are_the_sorted_values(data):
    p = data.draw(st.integers(2, 400), label="p")
    k = data.draw(st.integers(1, p - 1), label="k")
    levels = data.draw(st.sampled_from([None, 1, 3, 50]), label="distinct values")  # None: continuous
    seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((3, p)) if levels is None else rng.integers(0, levels, (3, p)).astype(float)
    for sample in (2, 16, 4096):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(ties, "BAND_SAMPLE", sample)
            kth, after = ties._kth_and_next_by_band(rows, k)
        descending = -np.sort(-rows, axis=1)
        np.testing.assert_array_equal(kth, descending[:, k - 1])
        np.testing.assert_array_equal(after, descending[:, k])


def test_long_rows_take_the_band_with_the_default_constants():
    rng = np.random.default_rng(3)
    m = np.abs(rng.standard_normal((ties.BAND_MIN_SCORES + 5, 2)))
    for k in (ties.BAND_MIN_RANK, 3000, m.shape[0] - 2):
        np.testing.assert_array_equal(ties.top_k_mask(m, k), top_k_by_sorting(m, k))


def test_sparsity_truncation_of_a_tall_block_keeps_k_per_column():
    from spcakit.parts.truncators import truncate_by_sparsity

    z = np.random.default_rng(9).standard_normal((50_000, 6))
    out = truncate_by_sparsity(z, 50_000 - 30)
    assert np.all(np.count_nonzero(out, axis=0) == 30)
    kept = np.abs(out) > 0
    assert np.all(np.where(kept, np.abs(z), np.inf).min(axis=0) > np.where(kept, 0, np.abs(z)).max(axis=0))


@pytest.mark.parametrize("shape", [(12, 60), (60, 12)])
def test_eigenvalues_after_eigenpairs_reuse_the_small_gram(shape, monkeypatch):
    # the start's eigenpairs and the metrics' eigenvalues come from one small Gram matrix (on 500 x 100 000 data
    # a second one cost twelve passes), with the values a fresh operator gives
    x = np.random.default_rng(3).standard_normal(shape)
    op, fresh = (GramCovariance(x, shape[0] - 1.0, mean=x.mean(axis=0)) for _ in range(2))
    formed = []
    original = GramCovariance._small_gram
    monkeypatch.setattr(GramCovariance, "_small_gram", lambda self: formed.append(1) or original(self))
    values, _ = op.top_eigenpairs(5)
    assert len(formed) == 1
    np.testing.assert_allclose(op.top_eigenvalues(3), values[:3], rtol=0, atol=0)
    np.testing.assert_allclose(op.top_eigenvalues(5), fresh.top_eigenvalues(5), rtol=1e-12, atol=1e-12 * values[0])
    assert len(formed) == 2  # the fresh operator's; the first operator formed none again
    op.top_eigenvalues(6)  # more than were found: formed again
    assert len(formed) == 3
