"""LAPACK's subset eigensolver called without Python's lock (spcakit.numerics.lapack): the numbers of SciPy's
``eigh(subset_by_index=...)``, the fallback where the subset comes out short, and a main thread that keeps running
(so Ctrl-C reaches it) while a worker thread is inside the routine."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings
from hypothesis import strategies as st

from spcakit.numerics import lapack
from spcakit.numerics.linalg import leading_subset
from spcakit.testing import strategies as sps

pytestmark = pytest.mark.skipif(not lapack.available(), reason="SciPy's Cython LAPACK is not available here")


@settings(max_examples=40, deadline=None)
@given(matrix=st.one_of(sps.psd_matrices((1, 30)), sps.tied_correlations((2, 30)).map(lambda kc: kc[1])), data=st.data())
def test_the_subset_is_scipys_subset(matrix, data):
    n = matrix.shape[0]
    count = data.draw(st.integers(1, n), label="count")
    found = lapack.syevr_top(matrix, count)
    expected_values, _ = scipy.linalg.eigh(matrix, subset_by_index=[n - count, n - 1])
    if found is None:  # fewer pairs than asked: SciPy's subset is short too, and leading_subset decomposes in full
        assert expected_values.shape[0] < count
        values, vectors = leading_subset(matrix, count)
        assert values.shape == (count,) and vectors.shape == (n, count)
        return
    values, vectors = found
    scale = max(float(np.abs(matrix).max(initial=0.0)), 1e-300)
    np.testing.assert_allclose(values, expected_values, atol=1e-12 * n * scale)
    np.testing.assert_allclose(matrix @ vectors, vectors * values, atol=1e-11 * n * scale)
    np.testing.assert_allclose(vectors.T @ vectors, np.eye(count), atol=1e-10 * n)
    values_only = lapack.syevr_top(matrix, count, vectors=False)
    assert values_only is None or np.allclose(values_only[0], values, atol=1e-12 * n * scale)


def test_a_short_subset_falls_back_to_the_whole_decomposition():
    # a repeated eigenvalue straddles the first index asked for: LAPACK returns fewer pairs than asked
    block = np.full((150, 150), -1 / 149)
    np.fill_diagonal(block, 1.0)
    values, vectors = leading_subset(block, 16)
    assert values.shape == (16,) and vectors.shape == (150, 16)
    np.testing.assert_allclose(block @ vectors, vectors * values, atol=1e-12)


def test_the_main_thread_runs_while_a_worker_is_inside_the_routine():
    matrix = np.random.default_rng(0).standard_normal((1500, 1500))
    matrix = matrix + matrix.T
    worker = threading.Thread(target=lambda: lapack.syevr_top(matrix, 16))
    steps = 0
    worker.start()
    while worker.is_alive():  # a routine that held Python's lock would allow one step at most
        worker.join(0.001)
        steps += 1
    assert steps >= 3


@settings(max_examples=40, deadline=None)
@given(matrix=st.one_of(sps.psd_matrices((1, 30)), sps.tied_correlations((2, 30)).map(lambda kc: kc[1])))
def test_the_in_place_decomposition_is_numpys_in_the_matrix_own_memory(matrix):
    """``syevd_in_place`` runs the driver NumPy's ``eigh`` runs, on the matrix itself: NumPy's eigenvalues, an
    orthonormal basis of eigenvectors that is a view of the (overwritten) input; a matrix it may not overwrite (not
    C-contiguous, read only, another dtype) is left alone."""
    n = matrix.shape[0]
    owned = np.ascontiguousarray(matrix, dtype=np.float64).copy()
    values, vectors = lapack.syevd_in_place(owned)
    expected = np.linalg.eigvalsh(matrix)
    scale = max(float(np.abs(matrix).max(initial=0.0)), 1e-300)
    np.testing.assert_allclose(values, expected, atol=1e-12 * n * scale)
    assert np.shares_memory(vectors, owned)
    np.testing.assert_allclose(matrix @ vectors, vectors * values, atol=1e-11 * n * scale)
    np.testing.assert_allclose(vectors.T @ vectors, np.eye(n), atol=1e-10 * n)
    frozen = matrix.copy()
    frozen.setflags(write=False)
    assert lapack.syevd_in_place(frozen) is None
    if n > 1:  # a strided view (of one entry it would count as contiguous)
        assert lapack.syevd_in_place(np.repeat(matrix, 2, axis=1)[:, ::2]) is None
    assert lapack.syevd_in_place(matrix.astype(np.float32)) is None
    np.testing.assert_array_equal(frozen, matrix)


def test_the_thresholded_blocks_decomposed_in_place_equal_numpys(monkeypatch):
    """Large blocks are decomposed in their own memory: the same eigenpairs as NumPy's ``eigh`` of the copy."""
    from spcakit.numerics import thresholding

    g = np.random.default_rng(2).standard_normal((200, 30))
    c = g @ g.T / 30
    monkeypatch.setattr(thresholding, "IN_PLACE_ORDER", 50)
    in_place = thresholding.thresholded_blocks(c, 0.05, complete=True)
    monkeypatch.setattr(thresholding, "IN_PLACE_ORDER", 10**9)
    copied = thresholding.thresholded_blocks(c, 0.05, complete=True)
    assert any(members.size >= 100 for members, _, _ in in_place.blocks)
    for (m1, v1, u1), (m2, v2, u2) in zip(in_place.blocks, copied.blocks, strict=True):
        assert np.array_equal(m1, m2)
        np.testing.assert_allclose(v1, v2, rtol=0, atol=1e-12 * float(np.abs(v2).max()))
        np.testing.assert_allclose(np.abs(u1.T @ u2).max(axis=0), 1.0, atol=1e-8)
