"""TPower on a block of resamples at once: the weighted covariances it applies, and its loadings against
``tpower`` fitted on each resample's rows."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import spcakit
from spcakit.testing.planted import planted_supports
from spcakit.workflows.stability.batched import WeightedBlock, tpower_block
from spcakit.workflows.stability.resamples import matched, resample_rows


def counts_of(draws, n):
    counts = np.zeros((n, len(draws)))
    for s, rows in enumerate(draws):
        np.add.at(counts[:, s], rows, 1.0)
    return counts


def formed_covariance(x, rows, *, center, standardize):
    """The covariance spcakit.fit forms of the rows ``rows`` (repeats counted), by NumPy directly."""
    a = x[rows]
    if center:
        a = a - a.mean(axis=0)
    c = a.T @ a / (a.shape[0] - 1 if center else a.shape[0])
    if standardize:
        d = np.sqrt(np.diag(c))
        c = c / np.outer(d, d)
    return c


@pytest.mark.parametrize("scheme", ["subsample", "bootstrap"])
@pytest.mark.parametrize("center,standardize", [(True, False), (True, True), (False, False)])
def test_weighted_products_are_the_resamples_covariances(scheme, center, standardize):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((30, 8)) * np.linspace(0.5, 3, 8) + 4.0
    data = x - x.mean(axis=0) if center else x
    draws = resample_rows(30, 5, scheme, seed=2)
    block = WeightedBlock(data, counts_of(draws, 30), center=center, standardize=standardize)
    v = rng.standard_normal((8, 5))
    out = block.product(v)
    for s, rows in enumerate(draws):
        expected = formed_covariance(data, rows, center=center, standardize=standardize) @ v[:, s]
        assert np.allclose(out[:, s], expected, rtol=1e-10, atol=1e-10 * np.abs(expected).max())


def test_support_covariances_are_the_deflated_covariances_on_the_supports():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((25, 10))
    data = x - x.mean(axis=0)
    draws = resample_rows(25, 4, "bootstrap", seed=5)
    block = WeightedBlock(data, counts_of(draws, 25), center=True, standardize=True)
    earlier = [rng.standard_normal((10, 4)) for _ in range(2)]
    earlier = [u / np.linalg.norm(u, axis=0) for u in earlier]
    support = np.sort(np.stack([rng.choice(10, 3, replace=False) for _ in range(4)]), axis=1)
    got = block.support_covariances(support, earlier)
    for s, rows in enumerate(draws):
        c = formed_covariance(data, rows, center=True, standardize=True)
        projections = [np.eye(10) - np.outer(u[:, s], u[:, s]) for u in earlier]
        deflated = projections[1] @ projections[0] @ c @ projections[0] @ projections[1]
        assert np.allclose(got[s], deflated[np.ix_(support[s], support[s])], atol=1e-10)


@pytest.mark.parametrize("center", [True, False])
def test_block_loadings_are_tpowers_on_each_resample(center):
    x, _ = planted_supports(80, 150, [8, 8], [25.0, 12.0], seed=4)
    full = spcakit.fit(x, "tpower", r=2, k=8, metrics=[], center=center)
    data = x - x.mean(axis=0) if center else x
    draws = resample_rows(80, 12, "subsample", seed=0)
    loadings, tied = tpower_block(np.ascontiguousarray(data), counts_of(draws, 80), None, [8, 8], center=center,
                                  standardize=False)  # fmt: skip
    assert not tied.any()
    for s, rows in enumerate(draws):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            own = spcakit.fit(x[rows], "tpower", r=2, k=8, metrics=[], center=center).loadings
        assert np.allclose(matched(own, loadings[s]), own, atol=1e-9)
    assert full.loadings.shape == loadings[0].shape


def test_block_loadings_are_fixed_points_of_the_truncated_power_step():
    """Each loading keeps its support under its resample's deflated power step and is the leading eigenvector of
    the deflated covariance there, from either start."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((40, 60)) @ np.diag(np.linspace(2.0, 0.5, 60))
    data = x - x.mean(axis=0)
    draws = resample_rows(40, 6, "bootstrap", seed=1)
    full = spcakit.fit(x, "tpower", r=3, k=5, metrics=[])
    for starts in (None, full.loadings):
        loadings, _ = tpower_block(data, counts_of(draws, 40), starts, [5, 5, 5], center=True, standardize=False)
        for s, rows in enumerate(draws):
            c = formed_covariance(data, rows, center=True, standardize=False)
            for t in range(3):
                v = loadings[s][:, t]
                support = np.flatnonzero(v)
                assert support.size == 5
                z = c @ v
                outside = np.delete(np.abs(z), support)
                assert np.abs(z[support]).min() >= outside.max() - 1e-12 * np.abs(z).max()
                _, vectors = np.linalg.eigh(c[np.ix_(support, support)])
                assert abs(abs(vectors[:, -1] @ v[support]) - 1.0) < 1e-9
                c = (np.eye(60) - np.outer(v, v)) @ c @ (np.eye(60) - np.outer(v, v))


def test_standardised_starts_tie_and_are_left_to_tpower():
    x, _ = planted_supports(50, 40, [5], [10.0], seed=0)
    data = (x - x.mean(axis=0)) / x.std(axis=0, ddof=1)
    draws = resample_rows(50, 5, "subsample", seed=0)
    _, tied = tpower_block(data, counts_of(draws, 50), None, [5], center=True, standardize=True)
    assert tied.all()  # every variance is 1: tpower breaks the tie by the leading eigenvector
