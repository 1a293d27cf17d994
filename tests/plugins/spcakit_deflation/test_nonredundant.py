"""The ``orthogonal`` and ``uncorrelated`` refiners (:mod:`spcakit_deflation.nonredundant`).

For random problems (explicit covariances and centred data, full or low rank, tied entries) and random sparse
loadings whose cardinalities leave room for the constraint, the refined loadings

* satisfy the constraint to rounding (:func:`~spcakit.analysis.metrics.constraint_tolerance`: 1e-10 summed over the
  pairs, or for scores of almost no variance their correlations' rounding floor), have unit columns and at most the input's number of nonzeros each;
* are each the best loading on their support given the others (the top eigenvalue of :math:`C_{SS}` on the null
  space of the others' conditions, recomputed here with SciPy's ``null_space``), and no single swap of one variable
  improves any of them by more than the refiner's tolerance: each swap is evaluated here by brute force;
* report the variance they explain as it is.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.linalg import null_space
from spcakit_deflation.nonredundant import OrthogonalRefiner, UncorrelatedRefiner
from spcakit_deflation.null_space import null_space_tops, removal_scores

from spcakit.analysis.metrics import (
    constraint_tolerance,
    fraction_explained,
    loading_products,
    redundancy,
)
from spcakit.core.errors import InvalidParameterError
from spcakit.inputs.dense import covariance_problem
from spcakit.testing import strategies as sps

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
REFINERS = {"orthogonal": OrthogonalRefiner, "uncorrelated": UncorrelatedRefiner}


def loadings_with_room(p: int, r: int, seed: int, kind: str) -> np.ndarray:
    """``r`` random unit loadings whose cardinalities leave room for the constraint: their sum is at most ``p``
    (orthogonal: disjoint supports exist) and, for uncorrelated scores, each is at least ``r`` (``r - 1`` linear
    conditions leave a nonzero vector on any support)."""
    rng = np.random.default_rng(seed)
    low = r if kind == "uncorrelated" else 1
    k = rng.integers(low, max(low, p // r) + 1, size=r)
    x = np.zeros((p, r))
    for t in range(r):
        support = rng.choice(p, size=int(k[t]), replace=False)
        x[support, t] = rng.standard_normal(int(k[t])) + 0.1
    return x / np.linalg.norm(x, axis=0)


def value_given(c: np.ndarray, support: np.ndarray, w: np.ndarray) -> float:
    """The best :math:`y^\\top C_{SS} y` over unit :math:`y` on ``support`` with :math:`W_S^\\top y = 0` (by SciPy)."""
    basis = null_space(w[support].T, rcond=1e-12) if w.shape[1] else np.eye(support.size)
    if basis.shape[1] == 0:
        return -np.inf
    return float(np.linalg.eigvalsh(basis.T @ c[np.ix_(support, support)] @ basis)[-1])


def allowed(kind: str, problem, loadings: np.ndarray) -> float:
    """The violation the constraint may show to rounding (1e-10, or the correlations' own rounding floor)."""
    return constraint_tolerance(kind, loading_products(loadings, problem.covariance))


def conditions(kind: str, c: np.ndarray, others: np.ndarray) -> np.ndarray:
    return others if kind == "orthogonal" else c @ others


@SETTINGS
@given(sps.problems((2, 12)), st.integers(1, 3), sps.seeds(), st.sampled_from(sorted(REFINERS)))
def test_refined_loadings_meet_the_constraint_to_rounding(problem, r, seed, kind):
    r = min(r, problem.p if kind == "orthogonal" else max(1, problem.p // 2))
    x = loadings_with_room(problem.p, r, seed, kind)
    refined = REFINERS[kind]()(problem, x)
    out = refined.loadings
    assert out.shape == x.shape
    np.testing.assert_allclose(np.linalg.norm(out, axis=0), 1.0, rtol=1e-12)
    assert np.all(np.count_nonzero(out, axis=0) <= np.count_nonzero(x, axis=0))
    assert redundancy(problem.covariance, out)[kind] <= allowed(kind, problem, out)
    assert refined.report["fve_after"] == pytest.approx(fraction_explained(out, problem.covariance), rel=1e-9, abs=1e-12)


@SETTINGS
@given(sps.problems((2, 9)), st.integers(2, 3), sps.seeds(), st.sampled_from(sorted(REFINERS)))
def test_no_single_swap_improves_a_refined_loading(problem, r, seed, kind):
    r = min(r, problem.p if kind == "orthogonal" else max(1, problem.p // 2))
    c = np.asarray(problem.covariance.submatrix(np.arange(problem.p)))
    refiner = REFINERS[kind]()
    out = refiner(problem, loadings_with_room(problem.p, r, seed, kind)).loadings
    scale = float(np.abs(c).max()) or 1.0
    for t in range(r):
        w = conditions(kind, c, np.delete(out, t, axis=1))
        support = np.flatnonzero(out[:, t])
        value = value_given(c, support, w)
        assert float(out[:, t] @ c @ out[:, t]) == pytest.approx(value, rel=1e-9, abs=1e-12 * scale)
        for i in support:
            for j in np.setdiff1d(np.arange(problem.p), support):
                swapped = np.sort(np.append(np.setdiff1d(support, [i]), j))
                assert value_given(c, swapped, w) <= value + refiner.tol * abs(value) + 1e-9 * scale


@settings(max_examples=40, deadline=None)
@given(st.integers(6, 30), st.integers(2, 6), st.integers(1, 3), st.sampled_from([1, 3, 64]), st.booleans(),
       sps.seeds(), st.sampled_from(sorted(REFINERS)))  # p = 30, k = 5: 25 k^2 > REMOVAL_DIRECT, the null-space route
def test_the_swap_chosen_is_the_best_single_swap(p, k, m, candidates, twins, seed, kind):
    """A loading ascends by the best swap there is (all swaps of one variable evaluated here by brute force), whatever
    the batch of entering variables scored at once (``candidates``): the batches go by decreasing bound, and stop
    where no later variable can beat the best found. The other loadings overlap the support or not; ``twins``: pairs
    of identical variables, whose bounds tie exactly, and a support variable that orthogonality sets to zero, whose
    removal loses nothing: a swap then reaches its bound (batches in increasing order stopped at such a tie)."""
    k = min(k, p - 3)  # room for other loadings outside the support
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((p + 3, p))
    if twins:
        a[:, 1::2] = a[:, 0:-1:2]
    c = a.T @ a
    support = np.sort(rng.choice(p, size=k, replace=False))
    others = np.zeros((p, m))
    outside = np.setdiff1d(np.arange(p), support)
    for s in range(m):  # on some variables outside the support, and (twins: alone) on the support's first
        rows = rng.choice(outside, size=min(outside.size, 3), replace=False)
        others[rows, s] = rng.standard_normal(rows.size)
        others[support[0], s] = 1.0 if twins or rng.random() < 0.5 else 0.0
    w = conditions(kind, c, others)
    refiner = REFINERS[kind](candidates=candidates)
    value = value_given(c, support, w)
    diagonal = np.diagonal(c).copy()
    scale = float(np.abs(w).max(initial=0.0)) or 1.0
    chosen = refiner._best_swap(support, value, c[:, support], w, scale, diagonal)
    swaps = {(i, j): value_given(c, np.sort(np.append(np.delete(support, i), j)), w)
             for i in range(k) for j in np.setdiff1d(np.arange(p), support)}
    best = max(swaps.values())
    tolerance = 1e-9 * float(np.abs(diagonal).max())
    if chosen is None:  # no swap beats the loading (with no room on the support, none has room either)
        assert best <= (value + refiner.tol * abs(value) + tolerance if np.isfinite(value) else -np.inf)
    else:
        assert swaps[(chosen[0], chosen[1])] >= best - tolerance


def test_null_space_tops_are_the_constrained_top_eigenvalues():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((20, 5, 5))
    a = a @ np.swapaxes(a, 1, 2)
    w = rng.standard_normal((20, 5, 2))
    w[:5, :, 1] = w[:5, :, 0]  # rank one: one condition
    w[5:8] = 0.0  # no condition
    values, vectors = null_space_tops(a, w, 1.0, vectors=True)
    for b in range(20):
        expected = value_given(a[b], np.arange(5), w[b])
        assert values[b] == pytest.approx(expected, rel=1e-10)
        assert np.abs(w[b].T @ vectors[b]).max() <= 1e-12
        assert float(vectors[b] @ a[b] @ vectors[b]) == pytest.approx(expected, rel=1e-10)
    full = rng.standard_normal((1, 3, 3))  # three conditions on three variables: only y = 0
    assert null_space_tops(np.eye(3)[None], full, 1.0)[0][0] == -np.inf


def test_null_space_tops_count_only_the_conditions_a_rank_deficient_w_has():
    """Three other loadings that meet a support of three in two of its variables give a W of rank 2 with three
    columns: the third variable is free. Counting W's third direction, which is rounding (its Gram matrix resolves
    singular values only to sqrt(eps); the SVD does), as a condition left no room at all (-inf)."""
    rng = np.random.default_rng(5)
    k = 3
    a = rng.standard_normal((40, k, k + 2))
    a = a @ np.swapaxes(a, 1, 2)
    w = np.zeros((40, k, 3))
    w[:, :2, :] = rng.standard_normal((40, 2, 3))  # rank 2 on every support
    values = null_space_tops(a, w, 1.0)[0]
    for b in range(40):
        assert values[b] == pytest.approx(value_given(a[b], np.arange(k), w[b]), rel=1e-10)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 12), st.integers(0, 4), st.sampled_from([1, 3, 40]), sps.seeds())  # 40 x k^2 > REMOVAL_DIRECT from k = 4
def test_removal_scores_are_the_constrained_values_of_every_removal(k, m, count, seed):
    """Every removal's score equals the constrained top eigenvalue of its k x k problem (SciPy's null space), and is
    -inf exactly where no unit vector meets the conditions; both routes (small batches solve the k x k problems,
    larger ones take the secular equation on the null space of the (k+1)-variable conditions). The conditions
    include zero rows (other loadings off some variables) and repeated columns (rank-deficient W)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((count, k + 1, k + 3))
    a = x @ np.swapaxes(x, 1, 2) * 10.0 ** rng.uniform(-3, 3)
    w = rng.standard_normal((count, k + 1, m))
    w[:, rng.random(k + 1) < 0.4, :] = 0.0
    if m >= 2:
        w[..., 1] = 2.0 * w[..., 0]
    scores = removal_scores(a, w, 1.0)
    assert scores.shape == (count, k)
    scale = float(np.abs(a).max())
    for b in range(count):
        for i in range(k):
            kept = np.delete(np.arange(k + 1), i)
            expected = value_given(a[b], kept, w[b])
            if np.isinf(expected):
                assert scores[b, i] == -np.inf
            else:
                assert scores[b, i] == pytest.approx(expected, abs=1e-10 * scale)


def test_a_loading_that_cannot_be_uncorrelated_is_refused_with_the_k_it_needs():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((40, 6))
    c = a.T @ a / 40
    x = np.zeros((6, 4))
    for t in range(4):  # four loadings of two variables: the fourth would need three conditions on two variables
        x[[t, (t + 1) % 6], t] = [1.0, 0.5]
    with pytest.raises(InvalidParameterError, match="raise k to at least 4"):
        UncorrelatedRefiner()(covariance_problem(c), x / np.linalg.norm(x, axis=0))


def test_loadings_too_sparse_to_be_uncorrelated_one_at_a_time_are_made_so_together():
    # four loadings of three variables: one at a time the fourth meets three conditions on three variables (only 0 in
    # general), but together the loadings have 4 x (3 - 1) = 8 degrees of freedom for the 6 conditions
    found = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        a = rng.standard_normal((40 if seed % 2 else 6, 10))  # full rank, or rank 6
        problem = covariance_problem(a.T @ a / a.shape[0])
        x = np.zeros((10, 4))
        for t in range(4):
            x[rng.choice(10, size=3, replace=False), t] = rng.standard_normal(3) + 0.1
        x /= np.linalg.norm(x, axis=0)
        try:
            fitted = UncorrelatedRefiner(joint_swaps=0)(problem, x)
        except InvalidParameterError as exc:  # none found from these loadings: refused, saying what it needs
            assert "raise k to at least 4" in str(exc)
            continue
        found += 1
        swapped = UncorrelatedRefiner()(problem, x)  # then raised by joint swaps
        for refined in (fitted, swapped):
            u = refined.loadings
            products = loading_products(u, problem.covariance)
            assert redundancy(problem.covariance, u)["uncorrelated"] <= constraint_tolerance("uncorrelated", products)
            np.testing.assert_allclose(np.linalg.norm(u, axis=0), 1.0, rtol=1e-12)
            assert np.all(np.count_nonzero(u, axis=0) <= 3)  # the given cardinality at most
            assert refined.report["jointly"] == 1
            assert refined.report["fve_after"] == pytest.approx(fraction_explained(u, problem.covariance), rel=1e-10)
        assert np.all((fitted.loadings != 0) <= (x != 0))  # without swaps, on the given supports
        # the swaps never lower the variance explained, and each one kept raised it
        assert swapped.report["fve_after"] >= fitted.report["fve_after"] * (1 - 1e-12)
        if swapped.report["swaps"] == 0:
            np.testing.assert_array_equal(swapped.loadings, fitted.loadings)
    assert found >= 30  # 37 of these 40 (the others: the solve ends at a least residual that is not 0)


@SETTINGS
@given(sps.problems((6, 12)), sps.seeds())
def test_loadings_fitted_together_meet_the_constraint_whenever_they_are_returned(problem, seed):
    # any covariance of the strategies (tied, low rank, data or matrix): whatever the joint solve returns is uncorrelated
    rng = np.random.default_rng(seed)
    x = np.zeros((problem.p, 4))
    for t in range(4):
        x[rng.choice(problem.p, size=3, replace=False), t] = rng.standard_normal(3) + 0.1
    x /= np.linalg.norm(x, axis=0)
    try:
        refined = UncorrelatedRefiner()(problem, x)
    except InvalidParameterError as exc:
        assert "raise k to at least 4" in str(exc)
        return
    u = refined.loadings
    products = loading_products(u, problem.covariance)
    assert redundancy(problem.covariance, u)["uncorrelated"] <= constraint_tolerance("uncorrelated", products)
    np.testing.assert_allclose(np.linalg.norm(u, axis=0), 1.0, rtol=1e-12)
    assert np.all(np.count_nonzero(u, axis=0) <= 3)
    if "jointly" in refined.report and refined.report["swaps"] == 0:  # fitted together, no swap: the given supports
        assert np.all((u != 0) <= (x != 0))


def test_swaps_between_supports_worth_rounding_end():
    # a covariance of rank 2 (drawn by hypothesis): the supports {3, 4, 5} and {1, 4, 5} of the third loading are both
    # worth +-5.6e-16 given the others, and each swap to the other looked like a gain: the refiner swapped forever
    a = np.array([[3.2683, 0.1326, 0.0507, 0.0414, 0.0205, 2.2408], [0.0, 0.1817, 0.0446, 0.1233, -0.4396, 0.5244]])
    c = a.T @ a
    x = np.zeros((6, 4))
    x[[0, 1, 4], 0] = [0.29, 0.96, -0.04]
    x[[2, 3, 5], 1] = [0.57, -0.33, 0.76]
    x[[3, 4, 5], 2] = [-0.05, 0.06, -1.0]
    x[[0, 2, 3], 3] = [0.40, -0.17, 0.90]
    x /= np.linalg.norm(x, axis=0)
    try:
        refined = UncorrelatedRefiner()(covariance_problem(c), x)
    except InvalidParameterError:
        return  # no room found: refused, in finite time
    assert refined.report["swaps"] < 50


def test_one_loading_is_the_best_reachable_by_swaps_from_its_support():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((30, 8))
    c = a.T @ a / 30
    x = np.zeros((8, 1))
    x[[0, 1, 2], 0] = 1 / np.sqrt(3)
    out = OrthogonalRefiner()(covariance_problem(c), x).loadings[:, 0]
    assert float(out @ c @ out) >= float(x[:, 0] @ c @ x[:, 0])
    support = np.flatnonzero(out)
    assert float(out @ c @ out) == pytest.approx(np.linalg.eigvalsh(c[np.ix_(support, support)])[-1], rel=1e-12)


@SETTINGS
@given(sps.problems((4, 14)), st.integers(2, 3), sps.seeds(), st.sampled_from(sorted(REFINERS)))
def test_loadings_that_meet_the_constraint_never_end_explaining_less(problem, r, seed, kind):
    # disjoint supports are orthogonal; on them, the top eigenvectors of one shared support are also uncorrelated
    rng = np.random.default_rng(seed)
    c = np.asarray(problem.covariance.submatrix(np.arange(problem.p)))
    x = np.zeros((problem.p, r))
    if kind == "orthogonal":
        for t, support in enumerate(np.array_split(rng.permutation(problem.p), r)):
            x[support, t] = rng.standard_normal(support.size) + 0.1
        x /= np.linalg.norm(x, axis=0)
    else:
        support = rng.choice(problem.p, size=max(r, problem.p // 2), replace=False)
        x[support] = np.linalg.eigh(c[np.ix_(support, support)])[1][:, -r:]
    before = fraction_explained(x, problem.covariance)
    refined = REFINERS[kind]()(problem, x)
    assert refined.report["fve_after"] >= before - 1e-12 * max(abs(before), 1.0)
    assert redundancy(problem.covariance, refined.loadings)[kind] <= allowed(kind, problem, refined.loadings)


@SETTINGS
@given(sps.problems((4, 12)), st.integers(2, 3), sps.seeds(), sps.seeds(), st.sampled_from(sorted(REFINERS)))
def test_visits_shared_between_starts_change_no_result(problem, r, seed, other_seed, kind):
    r = min(r, problem.p if kind == "orthogonal" else max(1, problem.p // 2))
    refiner = REFINERS[kind]()
    starts = [loadings_with_room(problem.p, r, s, kind) for s in (seed, other_seed)]
    alone = [refiner(problem, x).loadings for x in starts]
    visits: dict = {}
    shared = [refiner(problem, x, visits=visits).loadings for x in starts]
    for own, read in zip(alone, shared, strict=True):
        np.testing.assert_array_equal(read, own)
    # the same start again reads every visit: nothing is added
    kept = len(visits)
    np.testing.assert_array_equal(refiner(problem, starts[0], visits=visits).loadings, alone[0])
    assert len(visits) == kept


@SETTINGS
@given(sps.problems((4, 12)), st.integers(2, 3), sps.seeds())
def test_orthogonal_loadings_fitted_together_never_explain_less_and_stay_orthogonal(problem, r, seed):
    r = min(r, problem.p)
    x = loadings_with_room(problem.p, r, seed, "orthogonal")
    alone = OrthogonalRefiner(jointly=False)(problem, x)
    together = OrthogonalRefiner()(problem, x)
    out = together.loadings
    assert together.report["fve_after"] >= alone.report["fve_after"] * (1 - 1e-12) - 1e-15
    assert redundancy(problem.covariance, out)["orthogonal"] <= allowed("orthogonal", problem, out)
    np.testing.assert_allclose(np.linalg.norm(out, axis=0), 1.0, rtol=1e-12)
    assert np.all(np.count_nonzero(out, axis=0) <= np.count_nonzero(x, axis=0))
