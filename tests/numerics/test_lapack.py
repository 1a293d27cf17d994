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
