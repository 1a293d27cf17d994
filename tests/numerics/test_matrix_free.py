"""When n < p, no p x p matrix is allocated: peak memory stays far below 8 p^2 bytes."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import spcakit


@pytest.mark.parametrize("method,kwargs", [("spcart", {}), ("rsvd-gp", {}), ("tpower", {"lam": 5900}), ("rsvd-gpb", {}), ("spca-sp", {}), ("spca-sp", {"exact": True})])
def test_wide_data_never_forms_the_covariance(method, kwargs):
    rng = np.random.default_rng(0)
    n, p = 40, 6000
    x = rng.standard_normal((n, p))
    tracemalloc.start()
    try:
        result = spcakit.fit(x, method, r=3, **kwargs)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    dense_bytes = 8 * p * p  # 288 MB
    assert peak < dense_bytes / 20, f"peak {peak / 1e6:.1f} MB suggests a p x p allocation"
    assert result.loadings.shape == (p, 3)
    assert result.metrics["nz"] < 3 * p


def test_golub_leukemia_spcart_runs_matrix_free(load_shared):
    data = load_shared("golub_leukemia_72x7129_raw.npz")
    x = np.log2(np.clip(data["X"], 20, 16000))  # the usual thresholding of raw Affymetrix intensities
    x = x[:, x.std(axis=0) > 1e-6]
    result = spcakit.fit(x, "spcart", r=6)
    assert result.loadings.shape[1] == 6
    # T-l0 at 1/sqrt(p): Prop. 7 guarantees every loading has sparsity > 1 - 1/(p * lambda^2) = 0
    assert 0 < result.metrics["worst_sp"] < 1
    assert 0 < result.metrics["cpev"] <= spcakit.fit(x, "pca", r=6).metrics["cpev"] + 1e-12


def test_tall_data_get_an_explicit_covariance_wide_data_do_not():
    from spcakit.numerics.operators import DenseCovariance, GramCovariance

    rng = np.random.default_rng(2)
    tall = spcakit.as_problem(rng.standard_normal((50, 10)))
    wide = spcakit.as_problem(rng.standard_normal((10, 50)))
    assert isinstance(tall.covariance, DenseCovariance) and isinstance(wide.covariance, GramCovariance)
    centred = tall.data
    np.testing.assert_allclose(tall.covariance.matrix, centred.T @ centred / 49, atol=1e-12)


def test_an_explicit_covariance_keeps_its_eigenpairs_per_r(monkeypatch):
    # cross-validation fits each fold's covariance at every level: the eigenpairs are computed once per r, and
    # what callers get are copies (changing them changes nothing kept)
    from spcakit.numerics.operators import DenseCovariance, dense

    a = np.random.default_rng(2).standard_normal((30, 12))
    op = DenseCovariance(a.T @ a)
    calls = []
    original = dense.leading_eigenpairs
    monkeypatch.setattr(dense, "leading_eigenpairs", lambda *args, **kw: calls.append(args[1]) or original(*args, **kw))
    values, vectors = op.top_eigenpairs(3)
    values[0], vectors[0, 0] = -1.0, 7.0
    again, again_vectors = op.top_eigenpairs(3)
    assert calls == [3] and again[0] > 0 and again_vectors[0, 0] != 7.0
    np.testing.assert_allclose(again, np.linalg.eigvalsh(a.T @ a)[::-1][:3], rtol=1e-12)
    op.top_eigenpairs(2)
    op.top_eigenvalues(2)
    op.top_eigenvalues(2)
    assert calls == [3, 2, 2]
