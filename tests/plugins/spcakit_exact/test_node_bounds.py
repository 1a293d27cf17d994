"""The exact search's node pieces against brute force: the split bound, the one-place completions and the pairs.

A node fixes the variables ``I`` in and allows ``U``; its optimum is the best :math:`\\lambda_{\\max}(A_{SS})` over
the supports :math:`I \\subseteq S \\subseteq U` of ``k`` variables. A bound below it would be a wrong certificate,
so each piece is compared with that optimum, enumerated, on every covariance family (p up to 12), at nodes drawn at
random (any ``I`` and ``U``).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spcakit import thresholding
from spcakit.testing import strategies as sps
from spcakit_exact.search import _Problem

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FAMILIES = sps.covariance_families((2, 12))


def _node(data: st.DataObject, family: str, *, free_places: tuple[int, int] = (1, 12), fixed_least: int = 0):
    """A covariance, ``k`` and a node ``(included, allowed)`` with ``k - |I|`` in ``free_places`` free places and at
    least ``fixed_least`` fixed in (``None`` for both when ``k`` is too small for that)."""
    _, a = data.draw(FAMILIES[family], label="(kind, A)")
    p = a.shape[0]
    k = data.draw(st.integers(1, p), label="k")
    order = data.draw(st.permutations(range(p)), label="order")
    if k < free_places[0] + fixed_least:
        return a, k, None, None
    fixed = k - data.draw(st.integers(free_places[0], min(free_places[1], k - fixed_least)), label="free places")
    extra = data.draw(st.integers(k - fixed, p - fixed), label="|U \\ I|")
    included, allowed = np.zeros(p, dtype=bool), np.zeros(p, dtype=bool)
    included[list(order[:fixed])] = True
    allowed[list(order[: fixed + extra])] = True
    return a, k, included, allowed


def _supports(k: int, included: np.ndarray, allowed: np.ndarray):
    fixed = list(np.flatnonzero(included))
    for chosen in itertools.combinations(np.flatnonzero(allowed & ~included), k - len(fixed)):
        yield np.array(sorted(fixed + list(chosen)))


def _top(a: np.ndarray, support: np.ndarray) -> float:
    return float(np.linalg.eigvalsh(a[np.ix_(support, support)])[-1])


def _rounding(a: np.ndarray) -> float:
    return 64 * a.shape[0] * np.finfo(float).eps * max(float(np.abs(a).max()), np.finfo(float).tiny)


@SETTINGS
@given(family=st.sampled_from(sorted(FAMILIES)), data=st.data())
def test_the_split_bound_is_never_below_the_nodes_optimum(family, data):
    a, k, included, allowed = _node(data, family, fixed_least=1)
    if included is None:
        return
    problem = _Problem(a, k, None)
    bound, weights = problem.split_bound(included, allowed)
    optimum = max(_top(a, s) for s in _supports(k, included, allowed))
    assert bound >= optimum - _rounding(a), (bound, optimum)
    # the couplings are weights of the free variables only
    assert np.all(weights[~(allowed & ~included)] == 0) and np.all(weights >= 0)


@SETTINGS
@given(family=st.sampled_from(sorted(FAMILIES)), data=st.data())
def test_the_split_bound_with_the_allowed_sets_threshold_decomposition_is_never_below_the_nodes_optimum(family, data):
    a, k, included, allowed = _node(data, family, fixed_least=1)
    if included is None:
        return
    problem = _Problem(a, k, None)
    scale = max(float(np.abs(np.diag(a)).max()), np.finfo(float).tiny)
    rho = scale * data.draw(st.sampled_from([1e-3, 0.05, 0.2, 0.5, 1.0]), label="rho share")
    # the blocks decomposed in full, or in part (one or two leading eigenpairs and an item for the rest)
    partial = data.draw(st.sampled_from([None, 1, 2]), label="pairs computed")
    with pytest.MonkeyPatch.context() as patch:
        if partial:
            patch.setattr(thresholding, "PARTIAL_BLOCK", 1)
            patch.setattr(thresholding, "PARTIAL_PAIRS", partial)
        problem.threshold(allowed, included, (rho,))  # keeps U's decomposition at rho, as a node's refinement does
    assert problem.free_threshold(allowed, included, rho, 1) < np.inf
    m = k - int(included.sum())
    free = np.flatnonzero(allowed & ~included)
    free_optimum = max(_top(a, np.array(j)) for j in itertools.combinations(free, m))
    assert problem.free_threshold(allowed, included, rho, m) >= free_optimum - _rounding(a)
    bound, _ = problem.split_bound(included, allowed, rho)
    optimum = max(_top(a, s) for s in _supports(k, included, allowed))
    assert bound >= optimum - _rounding(a), (bound, optimum)
    # nothing kept for that rho: no threshold part, and the bound is that without it
    assert problem.free_threshold(allowed, included, rho * 1.5, m) == np.inf


def test_the_split_bound_is_exact_when_the_free_variables_do_not_touch_the_fixed_ones():
    # A = diag(5, 1, 1) with a 2 x 2 free block [[2, 1], [1, 2]] apart from variable 0: at I = {0}, k = 3 the best
    # support {0, 3, 4} has the value max(5, 3) = 5 = lambda_I, and sigma = 0
    a = np.zeros((5, 5))
    a[0, 0], a[1, 1], a[2, 2] = 5.0, 1.0, 1.0
    a[3:, 3:] = [[2.0, 1.0], [1.0, 2.0]]
    included = np.array([True, False, False, False, False])
    bound, _ = _Problem(a, 3, None).split_bound(included, np.ones(5, dtype=bool))
    assert bound == 5.0


@SETTINGS
@given(family=st.sampled_from(sorted(FAMILIES)), data=st.data())
def test_the_completions_are_the_values_of_the_supports_with_one_more_variable(family, data):
    a, k, included, allowed = _node(data, family, free_places=(1, 1))
    if included is None:
        return
    problem = _Problem(a, k, None)
    candidates = np.flatnonzero(allowed & ~included)
    values = problem.completions(included, candidates)
    expected = [_top(a, np.sort(np.append(np.flatnonzero(included), j))) for j in candidates]
    np.testing.assert_allclose(values, expected, rtol=0, atol=_rounding(a))


@SETTINGS
@given(family=st.sampled_from(sorted(FAMILIES)), data=st.data())
def test_a_node_with_one_or_two_free_places_is_solved_by_enumeration_above_the_floor(family, data):
    a, k, included, allowed = _node(data, family, free_places=(1, 2))
    if included is None:
        return
    problem = _Problem(a, k, None)
    values = [_top(a, s) for s in _supports(k, included, allowed)]
    optimum = max(values)
    # a floor below the optimum, at it, and above it (the node is then solved with nothing found)
    for floor in (min(values) - 1.0, float(np.median(values)), optimum * (1 + 1e-6) + 1.0):
        solved, best, pair = problem.completed(included, allowed & ~included, floor)
        assert solved
        if optimum > floor + _rounding(a):
            assert abs(best - optimum) <= _rounding(a), (floor, best, optimum)
            support = np.sort(np.concatenate([np.flatnonzero(included), pair]))
            assert abs(_top(a, support) - optimum) <= _rounding(a)
        else:
            assert best <= optimum + _rounding(a)
