"""Numeric extremes and missing values in pipelines, for any method.

- **Scale.** Data (or their covariance) multiplied by any power of ten: every method gives the loadings it gives at
  scale 1, variances scaled by the square and the same certificate (gap), wherever the data fit in double precision (powers of ten from -100 to
  100 for data: their variances are then within 1e-200 to 1e200); beyond, it refuses with spcakit's message. No
  NumPy warning reaches the caller (pytest turns them into errors).
- **Pipelines.** ``SparsePCA.fit_transform`` on data with missing entries equals ``fit(X).transform(X)``, with a
  finite score for every row that has an observed entry.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spcakit
from spcakit.core.errors import SpcakitError
from tests.fuzz.conftest import FUZZ

METHODS = ["spcart", "tpower", "greedy", "exact", "auto", "rsvd-gp", "st"]


def _aligned(x: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """``x`` with each column's sign that of ``reference``'s largest entry."""
    rows = np.argmax(np.abs(reference), axis=0)
    signs = np.sign(x[rows, np.arange(x.shape[1])] * reference[rows, np.arange(x.shape[1])])
    return x * np.where(signs == 0, 1.0, signs)


@settings(FUZZ, max_examples=min(FUZZ.max_examples, 60))
@given(method=st.sampled_from(METHODS), exponent=st.integers(-160, 160), covariance=st.booleans(),
       seed=st.integers(0, 2**16), r=st.integers(1, 3))  # fmt: skip
def test_every_method_is_scale_equivariant_wherever_the_data_fit(method, exponent, covariance, seed, r):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((30, 6)) @ np.diag([3.0, 2.5, 2.0, 1.5, 1.0, 0.5])
    x -= x.mean(axis=0)
    c = x.T @ x / 29
    base_input, scaled_input = (c, c * 10.0 ** (2 * exponent)) if covariance else (x, x * 10.0**exponent)
    if covariance and abs(exponent) > 150:  # the scaled covariance itself is out of double precision
        return
    base = spcakit.fit(base_input, method, covariance=covariance, r=r, k=3)
    fits = abs(exponent) <= 100
    try:
        scaled = spcakit.fit(scaled_input, method, covariance=covariance, r=r, k=3)
    except SpcakitError as refusal:
        assert not fits, f"data at 1e{exponent} fit in double precision, yet: {refusal}"
        assert str(refusal).strip()
        return
    u0, u1 = np.asarray(base.loadings), np.asarray(scaled.loadings)
    np.testing.assert_allclose(_aligned(u1, u0), u0, atol=1e-8)
    variances = np.asarray(base.metrics["additional_variance"], dtype=float)
    np.testing.assert_allclose(np.asarray(scaled.metrics["additional_variance"], dtype=float),
                               variances * 10.0 ** (2 * exponent), rtol=1e-7)  # fmt: skip
    # the certificate too (a metric that fails is left out with a warning: the key would be missing)
    np.testing.assert_allclose(scaled.metrics["gap"], base.metrics["gap"], rtol=1e-6, atol=1e-9)


@pytest.fixture(scope="module")
def sklearn():
    return pytest.importorskip("sklearn")


@pytest.mark.filterwarnings("ignore::spcakit.core.errors.MissingValueWarning")  # EM's convergence notes
@settings(FUZZ, max_examples=min(FUZZ.max_examples, 25))
@given(method=st.sampled_from(["spcart", "tpower"]), share=st.sampled_from([0.02, 0.1, 0.25]),
       seed=st.integers(0, 2**16), n_components=st.integers(1, 3))  # fmt: skip
def test_fit_transform_equals_fit_then_transform_on_data_with_missing_entries(sklearn, method, share, seed,
                                                                              n_components):  # fmt: skip
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((40, 8)) @ rng.standard_normal((8, 8))
    x[rng.random(x.shape) < share] = np.nan
    x[np.isnan(x).all(axis=1), 0] = 1.0  # every row has an observed entry
    x[0] = np.nan  # and one row has a single one
    x[0, 3] = 2.0
    estimator = spcakit.SparsePCA(n_components=n_components, k=3, method=method, missing="em")
    try:
        scores = estimator.fit_transform(x)
    except SpcakitError as refusal:
        assert str(refusal).strip()
        with pytest.raises(type(refusal)):
            spcakit.SparsePCA(n_components=n_components, k=3, method=method, missing="em").fit(x)
        return
    again = spcakit.SparsePCA(n_components=n_components, k=3, method=method, missing="em").fit(x).transform(x)
    assert np.all(np.isfinite(scores))
    np.testing.assert_allclose(scores, again, rtol=1e-10, atol=1e-10 * float(np.abs(again).max(initial=1.0)))
