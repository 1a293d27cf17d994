"""Results at extreme scales: the same loadings for C and s C wherever both fit in double precision, without NumPy
warnings, and data too small for a covariance refused as such."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spcakit
from spcakit.core.errors import InvalidDataError
from spcakit.core.records import column_norms

#: Every kind of method: power steps (tpower, restarted), greedy selection, the exact search, the PCA start and
#: rotation (spcart), the default portfolio.
METHODS = ("tpower", "tpower-restarts", "greedy", "exact", "spcart", "auto")


def _data(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((50, 6))
    x[:, :3] += 2.0 * rng.standard_normal((50, 1))
    return x


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("scale", [1e200, 1e-200, 1e120])
def test_a_covariance_at_an_extreme_scale_gives_the_same_loadings(method, scale):
    c = np.cov(_data(), rowvar=False)
    base = spcakit.fit(c, method, r=2, k=3, covariance=True, metrics=["cpev"])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no NumPy warning reaches the user
        scaled = spcakit.fit(c * scale, method, r=2, k=3, covariance=True, metrics=["cpev"])
    np.testing.assert_array_equal(scaled.loadings != 0, base.loadings != 0)
    np.testing.assert_allclose(scaled.loadings, base.loadings, atol=1e-9)
    assert scaled.metrics["cpev"] == pytest.approx(base.metrics["cpev"], rel=1e-9)
    assert any("divided by it" in w for w in scaled.warnings) == (not 1e-100 <= scale <= 1e100)


@pytest.mark.parametrize("method", METHODS)
def test_data_at_1e100_give_the_loadings_of_the_data_at_1(method):
    x = _data(1)
    base = spcakit.fit(x, method, r=2, k=3, metrics=["cpev"])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        scaled = spcakit.fit(x * 1e100, method, r=2, k=3, metrics=["cpev"])
    np.testing.assert_allclose(scaled.loadings, base.loadings, atol=1e-9)


@pytest.mark.parametrize("scale", [1e280, 1e-280, 1e120])
def test_the_certificate_of_a_covariance_at_an_extreme_scale_is_its_certificate_at_1(scale):
    # the default bound's search squares entries: at 1e280 it overflowed and `bound`/`gap` were left out
    c = np.cov(_data(), rowvar=False)
    base = spcakit.fit(c, "spcart", r=2, k=3, covariance=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # RuntimeWarning, and the MetricWarning of a metric left out
        scaled = spcakit.fit(c * scale, "spcart", r=2, k=3, covariance=True)
    np.testing.assert_allclose(scaled.metrics["gap"], base.metrics["gap"], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(np.asarray(scaled.metrics["bound"]) / scale, base.metrics["bound"], rtol=1e-9)


@pytest.mark.parametrize("exponent", [-6, -3, 3, 6])
def test_greedy_keeps_its_support_for_data_at_any_scale(exponent):
    # its tie tolerance was 1e-12 absolute below 1: at 1e-6 (variances near 1e-11) it chose another support
    rng = np.random.default_rng(0)
    x = rng.standard_normal((30, 6)) @ np.diag([3.0, 2.5, 2.0, 1.5, 1.0, 0.5])
    base = spcakit.fit(x, "greedy", r=1, k=3, metrics=["cpev"])
    scaled = spcakit.fit(x * 10.0**exponent, "greedy", r=1, k=3, metrics=["cpev"])
    np.testing.assert_array_equal(scaled.loadings != 0, base.loadings != 0)
    np.testing.assert_allclose(scaled.loadings, base.loadings, atol=1e-9)


def test_data_too_small_for_a_covariance_are_called_too_small():
    x = _data(2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(InvalidDataError, match=r"6 column\(s\) have standard deviations below 1.49e-154"):
            spcakit.fit(x * 1e-310, "tpower", r=1, k=2)
        one = x.copy()
        one[:, 4] *= 1e-310
        with pytest.raises(InvalidDataError, match=r"1 column\(s\) .* 4 \(x5\): values at most .*e-310; rescale them"):
            spcakit.fit(one, "tpower", r=1, k=2)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(exponent=st.integers(-300, 300), p=st.integers(1, 6), r=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_column_norms_hold_from_the_smallest_to_the_largest_doubles(exponent, p, r, seed):
    x = np.random.default_rng(seed).standard_normal((p, r))
    expected = np.linalg.norm(x, axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        norms = column_norms(x * 10.0**exponent)
    np.testing.assert_allclose(norms / 10.0**exponent, expected, rtol=1e-13)
