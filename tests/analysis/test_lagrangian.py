"""The Lagrangian dual bound on what orthogonal sparse loadings explain together.

Checked against brute force (:func:`spcakit.testing.brute_force.best_nonredundant_pair`: every pair of supports, the
first loading's angle on a fine grid, the second exact given it) on random, Wishart (often rank deficient), spiked,
tied and Hotelling-deflated (indefinite) matrices, at the tolerance the bound states; and on Pitprops for how tight it
is, against the bounds without it.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spcakit
from spcakit.analysis.certificate import cumulative_bounds, with_total
from spcakit.analysis.lagrangian import DUAL_LIMIT, PATIENCE, orthogonal_dual_bound
from spcakit.numerics.linalg import sum_of_largest
from spcakit.testing import strategies as sps
from spcakit.testing.brute_force import best_nonredundant_pair, bound_allowance

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FAMILIES = sps.covariance_families((2, 7), indefinite=True)


def loadings_of(p: int, cardinalities: tuple[int, ...]) -> np.ndarray:
    """Loadings with those cardinalities (the bound reads their cardinalities; their supports start its search)."""
    x = np.zeros((p, len(cardinalities)))
    for t, k in enumerate(cardinalities):
        x[(np.arange(k) + 2 * t) % p, t] = 1.0
    return x / np.linalg.norm(x, axis=0)


@pytest.mark.parametrize("family", sorted(FAMILIES))
@SETTINGS
@given(data=st.data(), k1=st.integers(1, 2), k2=st.integers(1, 3))
def test_the_dual_bound_is_never_below_the_best_orthogonal_pair(family, data, k1, k2):
    _, c = data.draw(FAMILIES[family])
    p = c.shape[0]
    k1, k2 = min(k1, p), min(k2, p)
    bound = orthogonal_dual_bound(c, loadings_of(p, (k1, k2)))
    if bound is None:  # only for a zero diagonal
        assert not np.any(np.diagonal(c))
        return
    assert bound >= best_nonredundant_pair(c, k1, k2, "orthogonal") - bound_allowance(c)


@SETTINGS
@given(sps.psd_matrices((3, 9)), st.integers(-300, 300))
def test_the_dual_bound_scales_with_the_covariance(c, exponent):
    # it runs on C / 2^e whatever the scale: the same steps, the bound times the scale
    x = loadings_of(c.shape[0], (2, 2))
    plain = orthogonal_dual_bound(c, x)
    scaled = orthogonal_dual_bound(np.ldexp(c, exponent), x)
    if plain is None:
        assert scaled is None
    else:
        assert scaled == pytest.approx(np.ldexp(plain, exponent), rel=1e-12)


def test_the_dual_bound_declines_what_it_cannot_bound():
    c = np.eye(4)
    assert orthogonal_dual_bound(c, np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0], [0.0, 0.0]])) is not None
    assert orthogonal_dual_bound(c, np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]])) is None  # a zero loading
    assert orthogonal_dual_bound(np.zeros((4, 4)), loadings_of(4, (1, 1))) is None
    assert orthogonal_dual_bound(np.eye(DUAL_LIMIT + 1), loadings_of(DUAL_LIMIT + 1, (1, 1))) is None


def test_the_dual_bound_is_finite_where_the_supports_cover_fewer_variables_than_loadings():
    # two loadings of one nonzero on the same variable of a rank-one correlation matrix: mixtures on that support alone
    # cannot fill the Fantope, so without the largest variances' singletons the model would have no minimum
    c = np.ones((3, 3))
    x = np.zeros((3, 2))
    x[0] = 1.0
    bound = orthogonal_dual_bound(c, x)
    assert bound is not None and np.isfinite(bound)
    assert bound >= best_nonredundant_pair(c, 1, 1, "orthogonal") - bound_allowance(c)
    assert bound <= 2.0 * (1 + 1e-6)  # the optimum (two coordinate vectors), below Ky Fan's 3


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.integers(4, 9), st.integers(1, 3), st.integers(1, 3))
def test_a_projection_on_few_variables_takes_at_most_the_largest_diagonal_of_a_psd_matrix(seed, p, r, k):
    # tr(WP) <= sigma_m(W) for W >= 0 and P = sum_t u_t u_t^T, u_t orthonormal on at most m = sum of k_t variables: the
    # term of the dual that replaces Ky Fan's where the supports found spread over more than m variables
    rng = np.random.default_rng(seed)
    r, k = min(r, p), min(k, p)
    factor = rng.standard_normal((p, int(rng.integers(1, p + 1)))) * rng.exponential(size=(p, 1))
    weights = factor @ factor.T
    union = rng.choice(p, size=min(p, r * k), replace=False)  # at least r variables: k >= 1, p >= r
    u = np.zeros((p, r))
    u[union, :] = np.linalg.qr(rng.standard_normal((union.size, r)))[0]
    explained = float(np.einsum("ij,ij->", u, weights @ u))
    assert explained <= sum_of_largest(np.diagonal(weights), r * k) * (1 + 1e-12) + 1e-12 * np.abs(weights).max()


def test_the_dual_bound_is_tighter_with_the_largest_diagonal_where_supports_spread():
    # a scaled equicorrelated matrix (12 variables, correlation 0.5): many supports nearly tie, the rounds' W spreads over
    # more than the 4 variables two loadings of 2 nonzeros hold, and sigma_4(W) < Lambda_2(W) there; the bound stays
    # above the brute-force optimum
    p, k = 12, 2
    scales = np.exp(np.random.default_rng(p).uniform(-0.3, 0.3, p))
    c = (0.5 * np.eye(p) + 0.5 * np.ones((p, p))) * np.outer(scales, scales)
    x = loadings_of(p, (k, k))
    tighter = orthogonal_dual_bound(c, x)
    ky_fan = orthogonal_dual_bound(c, x, diagonal=False)
    assert tighter is not None and ky_fan is not None
    best = best_nonredundant_pair(c, k, k, "orthogonal")
    assert best - bound_allowance(c) <= tighter < ky_fan - 1e-4 * best


def test_the_dual_bound_is_the_answer_on_separate_blocks():
    # two uncoupled dense blocks of k variables, eigenvalues (5, 1, 1) and (3, 0.5, 0.5): the best orthogonal pair takes
    # each block's top eigenvector (5 + 3), and the dual started from them proves it (to its search's tolerance)
    rng = np.random.default_rng(0)
    c, x = np.zeros((8, 8)), np.zeros((8, 2))
    for t, (rows, values) in enumerate(((slice(0, 3), [5.0, 1.0, 1.0]), (slice(3, 6), [3.0, 0.5, 0.5]))):
        q = np.linalg.qr(rng.standard_normal((3, 3)))[0]
        c[rows, rows] = q @ np.diag(values) @ q.T
        x[rows, t] = q[:, 0]
    c[6:, 6:] = 0.1 * np.eye(2)
    bound = orthogonal_dual_bound(c, x)
    assert 8.0 - bound_allowance(c) <= bound <= 8.0 * (1 + 1e-6)


def test_certify_under_orthogonality_tightens_the_total_on_pitprops():
    # Pitprops, r = 5, k = 4: the default's total gap is 7.0 %; the dual brings it under 5 % (4.1 % measured)
    c = spcakit.datasets.pitprops().matrix
    fast = spcakit.fit(c, "auto", r=5, k=4, covariance=True, constraint="orthogonal")
    certified = spcakit.fit(c, "auto", r=5, k=4, covariance=True, constraint="orthogonal", bound="certify")
    np.testing.assert_allclose(certified.loadings, fast.loadings)
    assert certified.metrics["gap"][-1] < 0.05 < fast.metrics["gap"][-1]
    assert certified.metrics["gap"][:-1] == pytest.approx(fast.metrics["gap"][:-1])
    # the bound is a bound: what the loadings explain is below it
    u = certified.loadings / np.linalg.norm(certified.loadings, axis=0)
    assert float(np.einsum("ij,ij->", u, np.asarray(c) @ u)) <= certified.metrics["bound"][-1]


def test_a_total_bound_lowers_only_the_last_certificate_and_only_where_lower():
    c = spcakit.datasets.pitprops().matrix
    x = spcakit.fit(c, "tpower", r=3, k=4, covariance=True, constraint="orthogonal").loadings
    plain = cumulative_bounds(c, x, constraint="orthogonal")
    lowered = with_total(plain, plain.achieved[-1] * 1.01)
    assert lowered.bound[-1] == plain.achieved[-1] * 1.01
    assert lowered.gap[-1] == pytest.approx(0.01 / 1.01)
    assert lowered.which[-1] == "dual"
    assert lowered.bound[:-1] == plain.bound[:-1] and lowered.gap[:-1] == plain.gap[:-1]
    assert with_total(plain, plain.bound[-1] * 2) == plain
    assert with_total(plain, None) == plain


def test_the_dual_gives_up_above_a_ceiling_when_its_searches_stop_at_their_limit():
    c = spcakit.datasets.pitprops().matrix
    x = spcakit.fit(c, "tpower", r=5, k=4, covariance=True, constraint="orthogonal").loadings
    rounds = PATIENCE + 1  # past the rounds after which it may give up
    finished = orthogonal_dual_bound(c, x, rounds=rounds, ceiling=0.0)  # Pitprops' searches finish: it goes on
    assert finished is not None and finished == orthogonal_dual_bound(c, x, rounds=rounds)
    assert orthogonal_dual_bound(c, x, nodes=1, ceiling=0.0) is None  # one node each: they stop, it gives up
    assert orthogonal_dual_bound(c, x, nodes=1) is not None


@pytest.mark.parametrize("family", sorted(FAMILIES))
@SETTINGS
@given(data=st.data(), k=st.integers(1, 3))
def test_the_dual_bound_is_above_every_orthogonal_triple_found(family, data, k):
    # three loadings: no brute force, but every orthogonal triple with those cardinalities explains at most the bound;
    # those the orthogonal refiner reaches from tpower's and from random starts are checked
    _, c = data.draw(FAMILIES[family])
    p = c.shape[0]
    if p < 3:
        return
    k = min(k, p)
    bound = orthogonal_dual_bound(c, loadings_of(p, (k, k, k)))
    if bound is None:
        assert not np.any(np.diagonal(c))
        return
    psd = c if np.linalg.eigvalsh(c)[0] >= 0 else c - np.linalg.eigvalsh(c)[0] * np.eye(p)
    shift = float(np.trace(psd - c)) / p  # a shift of the diagonal adds it to every unit loading's variance
    for seed in range(3):
        try:
            found = spcakit.fit(psd, "tpower", r=3, k=k, covariance=True, constraint="orthogonal", seed=seed,
                                metrics=["fve"])
        except spcakit.InvalidParameterError:  # no three orthogonal loadings of k nonzeros explain anything
            continue
        u = found.loadings / np.linalg.norm(found.loadings, axis=0)
        explained = float(np.einsum("ij,ij->", u, c @ u))
        assert np.count_nonzero(u, axis=0).max() <= k
        assert explained <= bound + bound_allowance(c) + 3 * 1e-12 * abs(shift)


def test_cheap_rounds_reach_the_bound_of_deep_rounds_where_the_searches_finish(monkeypatch):
    # Pitprops (13 variables): each round's cheap search finishes or is searched deeper at the same W, so the rounds
    # end where rounds searching deeply every time end (a support found by either search counts as new)
    import spcakit.analysis.lagrangian as lagrangian

    c = spcakit.datasets.pitprops().matrix
    x = spcakit.fit(c, "auto", r=6, k=4, covariance=True, constraint="orthogonal").loadings
    cheap = orthogonal_dual_bound(c, x, rounds=30)
    monkeypatch.setattr(lagrangian, "PRICING_NODES", lagrangian.DUAL_NODES)
    deep = orthogonal_dual_bound(c, x, rounds=30)
    assert cheap is not None and deep is not None
    assert cheap <= deep * (1 + 1e-9)


def test_an_evaluation_searches_deepest_on_few_variables_and_never_below_the_least_limit():
    from spcakit.analysis.lagrangian import DEEP_VARIABLES, LEAST_DUAL_NODES, DUAL_NODES, evaluation_nodes

    limits = [evaluation_nodes(p) for p in range(1, 2 * DUAL_LIMIT)]
    assert all(later <= earlier for earlier, later in zip(limits, limits[1:]))  # a node costs more with p
    assert evaluation_nodes(DEEP_VARIABLES) == DUAL_NODES
    assert evaluation_nodes(DEEP_VARIABLES + 1) < DUAL_NODES
    assert evaluation_nodes(4 * DEEP_VARIABLES) == LEAST_DUAL_NODES == min(limits)
