"""The bounds for loadings under a constraint: orthogonal loadings or uncorrelated scores.

Checked against brute force (:func:`spcakit.testing.brute_force.best_nonredundant_pair`: every pair of supports, the
first loading's angle on a fine grid and the second loading exact given it) on random, Wishart (often rank
deficient), spiked, tied and Hotelling-deflated (indefinite) matrices: the bound is never below the best pair found,
at the tolerance the bound states (it is raised for rounding; the reference's own rounding is allowed for too).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spcakit.analysis.fantope import fantope_threshold_bounds
from spcakit.analysis.certificate import cumulative_bounds
from spcakit.testing import strategies as sps
from spcakit.testing.brute_force import best_nonredundant_pair, bound_allowance

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FAMILIES = sps.covariance_families((2, 7), indefinite=True)


def loadings_of(p: int, k1: int, k2: int) -> np.ndarray:
    """Two loadings with ``k1`` and ``k2`` nonzeros (the bounds read only their cardinalities and what they explain)."""
    x = np.zeros((p, 2))
    x[:k1, 0] = 1.0
    x[p - k2 :, 1] = 1.0
    return x / np.linalg.norm(x, axis=0)


@pytest.mark.parametrize("family", sorted(FAMILIES))
@SETTINGS
@given(data=st.data(), k1=st.integers(1, 2), k2=st.integers(1, 3), kind=st.sampled_from(("orthogonal", "uncorrelated")))
def test_the_total_bound_under_a_constraint_is_never_below_the_best_pair(family, data, k1, k2, kind):
    _, c = data.draw(FAMILIES[family])
    p = c.shape[0]
    k1, k2 = min(k1, p), min(k2, p)
    best = best_nonredundant_pair(c, k1, k2, kind)
    bounds = cumulative_bounds(c, loadings_of(p, k1, k2), top_eigenvalues=np.linalg.eigvalsh(c)[::-1], constraint=kind)
    assert bounds.bound[1] >= best - bound_allowance(c)


@SETTINGS
@given(sps.psd_matrices((3, 10)), st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), sps.seeds())
def test_the_fantope_bound_for_spans_is_never_below_a_span_of_sparse_loadings(c, k1, k2, k3, seed):
    """The variance of the span of three random sparse loadings (not orthogonal, overlapping or not) is within the
    bound for spans."""
    p = c.shape[0]
    ks = tuple(min(k, p) for k in (k1, k2, k3))
    rng = np.random.default_rng(seed)
    bound = fantope_threshold_bounds(c, [ks], orthonormal=False)[ks]
    for _ in range(20):
        u = np.zeros((p, 3))
        for t, k in enumerate(ks):
            u[rng.choice(p, size=k, replace=False), t] = rng.standard_normal(k)
        q, r = np.linalg.qr(u)
        q = q[:, np.abs(np.diagonal(r)) > 1e-10 * np.abs(r).max()]
        assert float(np.trace(q.T @ c @ q)) <= bound + bound_allowance(c)


@pytest.mark.parametrize("family", sorted(sps.covariance_families((2, 7))))
@SETTINGS
@given(data=st.data(), k1=st.integers(1, 2), k2=st.integers(1, 3), kind=st.sampled_from(("orthogonal", "uncorrelated")))
def test_the_fantope_bound_is_never_below_the_best_nonredundant_pair(family, data, k1, k2, kind):
    """Orthogonal loadings: the bound for orthonormal loadings; uncorrelated scores, which explain at most their span's
    variance (positive semi-definite C): the bound for spans."""
    _, c = data.draw(sps.covariance_families((2, 7))[family])
    p = c.shape[0]
    k1, k2 = min(k1, p), min(k2, p)
    best = best_nonredundant_pair(c, k1, k2, kind)
    bound = fantope_threshold_bounds(c, [(k1, k2)], orthonormal=kind == "orthogonal")[(k1, k2)]
    assert bound >= best - bound_allowance(c)


@SETTINGS
@given(sps.psd_matrices((3, 12)), st.integers(1, 4), st.integers(1, 4), st.sampled_from(("orthogonal", "uncorrelated")))
def test_the_bound_under_a_constraint_is_at_most_the_unconstrained_one(c, k1, k2, kind):
    p = c.shape[0]
    x = loadings_of(p, min(k1, p), min(k2, p))
    spectrum = np.linalg.eigvalsh(c)[::-1]
    free = cumulative_bounds(c, x, top_eigenvalues=spectrum)
    bound = cumulative_bounds(c, x, top_eigenvalues=spectrum, constraint=kind)
    assert bound.bound[0] <= free.bound[0] * (1 + 1e-12)  # the orthogonal one may add the Fantope (threshold) bound
    assert bound.bound[1] <= free.bound[1] * (1 + 1e-12)


def test_the_fantope_bound_is_ky_fan_without_sparsity_and_tighter_with_it():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((30, 9))
    c = a.T @ a / 30
    kyfan = float(np.sort(np.linalg.eigvalsh(c))[::-1][:3].sum())
    dense = fantope_threshold_bounds(c, [(9, 9, 9)], rhos=[0.0])[(9, 9, 9)]  # every cardinality p: no cap binds
    assert dense == pytest.approx(kyfan, rel=1e-12)
    at_zero = fantope_threshold_bounds(c, [(3, 3, 3)], rhos=[0.0])[(3, 3, 3)]
    assert at_zero <= dense
    assert fantope_threshold_bounds(c, [(3, 3, 3)])[(3, 3, 3)] <= at_zero


def test_a_large_blocks_left_out_eigenpairs_only_loosen_the_fantope_bound(monkeypatch):
    # above 128 variables a block keeps its 16 leading eigenpairs; the others count as one item of the smallest
    # computed eigenvalue, which can only raise the bound above the one from every eigenpair
    import spcakit.analysis.fantope as fantope
    from spcakit.numerics import thresholding

    rng = np.random.default_rng(4)
    a = rng.standard_normal((40, 150)) @ np.diag(rng.uniform(0.5, 2.0, 150))
    c = a.T @ a / 40
    groups, rhos = [(10, 10, 10), (10,)], [0.0, 0.05, 0.2]
    partial = fantope_threshold_bounds(c, groups, rhos=rhos)
    complete = thresholding.thresholded_blocks
    monkeypatch.setattr(fantope, "thresholded_blocks", lambda c, rho: complete(c, rho, complete=True))
    full = fantope_threshold_bounds(c, groups, rhos=rhos)
    for group in groups:
        assert partial[group] >= full[group] * (1 - 1e-12)
    import spcakit

    result = spcakit.fit(c, "tpower", r=3, k=10, covariance=True, constraint="orthogonal", metrics=["fve"])
    assert full[(10, 10, 10)] >= result.metrics["fve"] * np.trace(c) * (1 - 1e-12)
