"""The Python API takes the CLI's data sources as strings."""

from __future__ import annotations

import numpy as np
import pytest

import spcakit
from spcakit.inputs.datasets import pitprops
from spcakit.core.errors import InvalidDataError


def test_fit_accepts_a_source_string_like_the_cli():
    by_name = spcakit.fit("builtin:pitprops", "spcart", r=3)
    by_matrix = spcakit.fit(spcakit.Covariance(pitprops().matrix, pitprops().feature_names), "spcart", r=3)
    np.testing.assert_array_equal(by_name.loadings, by_matrix.loadings)
    assert by_name.feature_names[0] == "topdiam"


def test_fit_source_string_for_a_data_file(tmp_path):
    x = np.random.default_rng(0).standard_normal((20, 6))
    np.save(tmp_path / "x.npy", x)
    np.testing.assert_array_equal(spcakit.fit(str(tmp_path / "x.npy"), "pca", r=2).loadings, spcakit.fit(x, "pca", r=2).loadings)


def test_fit_unknown_source_string_says_what_is_valid():
    with pytest.raises(InvalidDataError, match="builtin:pitprops"):
        spcakit.fit("no-such-file.csv", "spcart", r=2)


def test_fit_computes_only_the_metrics_named():
    full = spcakit.fit("builtin:pitprops", "spcart", r=3)
    chosen = spcakit.fit("builtin:pitprops", "spcart", r=3, metrics=["cpev", "additional_variance"])
    assert set(chosen.metrics) == {"cpev", "additional_variance"}
    assert chosen.metrics["cpev"] == full.metrics["cpev"]
    assert np.array_equal(chosen.loadings, full.loadings)
    assert set(spcakit.fit("builtin:pitprops", "spcart", r=3, metrics="nz").metrics) == {"nz"}
    with pytest.raises(spcakit.UnknownNameError, match="did you mean 'additional_variance'"):
        spcakit.fit("builtin:pitprops", "spcart", metrics=["additonal_variance"])
    with pytest.raises(spcakit.InvalidParameterError, match="list of metric names"):
        spcakit.fit("builtin:pitprops", "spcart", metrics=[3])


def test_a_fit_on_dense_data_imports_no_scipy_submodule():
    # SciPy's linear algebra costs 0.3 s to import and its own BLAS (27 MiB resident): a fit of dense data with
    # up to NUMPY_EIGH_LIMIT variables (or a small Gram matrix of wide data) runs on NumPy alone
    import subprocess
    import sys

    code = (
        "import sys, numpy as np, spcakit\n"
        "for shape in ((200, 40), (60, 3000)):\n"
        "    x = np.random.default_rng(0).standard_normal(shape)\n"
        "    for method in ('spcart', 'tpower', 'rsvd-gpb'):\n"
        "        spcakit.fit(x, method, r=3, k=5)\n"
        "    spcakit.fit(x, 'pca', r=3)\n"
        "spcakit.fit(spcakit.datasets.pitprops().matrix, 'spcart', r=6, covariance=True)\n"
        "print(sorted(m for m in sys.modules if m.startswith('scipy.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "[]", out


def test_polar_of_a_nearly_orthonormal_block_equals_the_svd_one():
    from spcakit_spcart.linalg import polar

    rng = np.random.default_rng(5)
    q, _ = np.linalg.qr(rng.standard_normal((400, 6)))
    b = q + 1e-3 * rng.standard_normal((400, 6))  # orthonormal up to ~0.1: the Gram path
    w, _, vt = np.linalg.svd(b, full_matrices=False)
    np.testing.assert_allclose(polar(b), w @ vt, atol=1e-13)
    skewed = q * np.array([1.0, 1.0, 1.0, 1.0, 1.0, 3.0])  # far from orthonormal: the SVD path
    w, _, vt = np.linalg.svd(skewed, full_matrices=False)
    np.testing.assert_allclose(polar(skewed), w @ vt, atol=1e-13)
