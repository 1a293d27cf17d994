"""Non-negative loadings: the ``nonnegative`` truncator and every method that takes ``nonnegative=True``.

The truncator (:mod:`spcakit.parts.nonnegative`) is checked against its definition: it obeys the truncation
contract, keeps each column of one sign, and with the truncation by sparsity keeps the ``k`` largest positive
entries of the better side, the maximiser of :math:`\\langle v, z\\rangle` over unit ``k``-sparse vectors of one
sign (checked by enumerating the supports). The truncated power method with it never lowers its objective.
Every method that takes ``nonnegative=True`` returns non-negative unit loadings with at most ``k`` nonzeros on
random data, tied correlation matrices and standardised data.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import spcakit
from spcakit.workflows.configure import methods_taking_nonnegative, takes_k
from spcakit.core.errors import ZeroLoadingError
from spcakit.parts import truncators as tr
from spcakit.parts.nonnegative import NonNegative, truncate_nonnegative
from spcakit.core.plugins import get_registry
from spcakit.testing import EXAMPLE_LAMBDAS
from spcakit.testing import strategies as sps
from spcakit.testing.contracts import check_truncator_contract

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FEW = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def one_signed(x: np.ndarray) -> bool:
    """Every column of ``x`` has entries of one sign only (zeros aside)."""
    return bool(np.all((x >= 0).all(axis=0) | (x <= 0).all(axis=0)))


def top_positive_norm(v: np.ndarray, k: int) -> float:
    """The norm of the ``k`` largest positive entries of ``v`` (by sorting: independent of the part)."""
    positive = np.sort(v[v > 0])[::-1][:k]
    return float(np.linalg.norm(positive))


@st.composite
def inner_truncations(draw, p: int):
    kind = draw(st.sampled_from(["none", "sparsity", "hard", "energy"]))
    if kind == "none":
        return tr.NoTruncation()
    if kind == "sparsity":
        return tr.SparsityTruncation(k=draw(st.integers(1, p)))
    if kind == "hard":
        return tr.HardThreshold(draw(st.floats(0.0, 0.9)))
    return tr.EnergyTruncation(draw(st.floats(0.0, 0.9)))


# -- the operator ----------------------------------------------------------------------------------------------
@SETTINGS
@given(st.data())
def test_the_truncator_keeps_one_sign_and_obeys_the_contract(data):
    z = data.draw(sps.dense_matrices((2, 20), (1, 4)))
    inner = data.draw(inner_truncations(z.shape[0]))
    out = check_truncator_contract(NonNegative(inner), z)
    if out is None:  # refused: only when the inner truncation keeps nothing of either side
        with pytest.raises(ZeroLoadingError):
            truncate_nonnegative(z, inner)
        return
    assert one_signed(out)
    assert not np.any(np.signbit(out) & (out == 0))  # no -0.0
    # each column keeps only entries of the side it chose, as the inner truncation of that side does
    for j in range(z.shape[1]):
        side = 1.0 if np.any(out[:, j] > 0) else -1.0
        expected = np.maximum(np.asarray(inner(np.maximum(side * z[:, j : j + 1], 0.0)), dtype=float), 0.0)
        np.testing.assert_allclose(side * out[:, j : j + 1], expected, rtol=0, atol=0)


@SETTINGS
@given(sps.dense_matrices((2, 20), (1, 4)), st.data())
def test_by_sparsity_it_keeps_the_k_largest_positive_entries_of_the_better_side(z, data):
    k = data.draw(st.integers(1, z.shape[0]))
    out = truncate_nonnegative(z, tr.SparsityTruncation(k=k))
    assert np.all(np.count_nonzero(out, axis=0) <= k)
    for j in range(z.shape[1]):
        best = max(top_positive_norm(z[:, j], k), top_positive_norm(-z[:, j], k))
        assert abs(np.linalg.norm(out[:, j]) - best) <= 1e-12 * max(best, 1.0)
        side = 1.0 if np.any(out[:, j] > 0) else -1.0
        kept, dropped = side * out[:, j] > 0, (side * z[:, j] > 0) & (out[:, j] == 0)
        assert np.all(side * out[kept, j] == side * z[kept, j])  # kept as they are
        if dropped.any():  # the ones of that side left out are no larger than the ones kept
            assert kept.sum() == k and (side * z[dropped, j]).max() <= (side * z[kept, j]).min() * (1 + 1e-10)


@SETTINGS
@given(sps.dense_vectors((2, 8)), st.data())
def test_it_maximises_the_alignment_over_one_signed_k_sparse_unit_vectors(z, data):
    # max <v, z> over unit v with at most k nonzeros, all >= 0 or all <= 0: enumerate the supports and sides
    p = z.size
    k = data.draw(st.integers(1, p))
    out = truncate_nonnegative(z[:, None], tr.SparsityTruncation(k=k))[:, 0]
    best = 0.0
    for size in range(1, k + 1):
        for support in itertools.combinations(range(p), size):
            for side in (1.0, -1.0):
                part = np.maximum(side * z[list(support)], 0.0)
                best = max(best, float(np.linalg.norm(part)))  # the best unit v on it is part / ||part||
    unit = out / np.linalg.norm(out)
    assert abs(float(unit @ z) - best) <= 1e-12 * max(best, 1.0)


def test_a_column_with_no_positive_entry_is_flipped_not_emptied():
    z = np.array([[-3.0, 2.0], [-1.0, -5.0], [0.0, 1.0], [-2.0, 0.5]])
    out = truncate_nonnegative(z, tr.SparsityTruncation(k=2))
    np.testing.assert_array_equal(out[:, 0], [-3.0, 0.0, 0.0, -2.0])  # all of z's column is <= 0: its - side
    np.testing.assert_array_equal(out[:, 1], [0.0, -5.0, 0.0, 0.0])  # ||top-2 of z+|| = sqrt(5) < 5 = ||top-2 of (-z)+||


def test_ties_between_the_sides_keep_the_positive_side():
    z = np.array([[1.0], [-1.0], [0.0]])
    np.testing.assert_array_equal(truncate_nonnegative(z, tr.SparsityTruncation(k=1)), [[1.0], [0.0], [0.0]])


def test_a_zero_column_and_an_emptying_inner_truncation_are_refused_by_name():
    with pytest.raises(ZeroLoadingError, match="loading 2"):
        truncate_nonnegative(np.array([[1.0, 0.0], [2.0, 0.0]]))
    # an absolute threshold above every entry of both sides
    with pytest.raises(ZeroLoadingError, match="both sides of loading 1"):
        truncate_nonnegative(np.array([[0.5], [-0.4]]), tr.HardThreshold(1.0, form="absolute"))


def test_the_inner_truncation_is_a_truncation_and_is_wrapped_once():
    with pytest.raises(spcakit.InvalidParameterError, match="truncation part"):
        NonNegative("sparsity")
    with pytest.raises(spcakit.InvalidParameterError, match="already non-negative"):
        NonNegative(NonNegative())


@SETTINGS
@given(sps.data_problems((5, 30), (3, 12)), st.data())
def test_the_truncated_power_method_never_lowers_its_objective(problem, data):
    # <y, Cx> >= <x, Cx> for the maximiser y over a set that holds x, then f(y) >= 2<y, Cx> - f(x) >= f(x)
    k = data.draw(st.integers(1, problem.p))
    result = spcakit.fit(problem, "tpower", r=1, k=k, nonnegative=True, metrics=["cpev"],
                         **{"updater.finish_after": 0, "stopper.stoppers": [{"name": "max-iterations", "n": 30}]})
    history = np.asarray(result.objective_history)
    assert np.all(np.diff(history) >= -1e-10 * np.abs(history[1:]).max(initial=1.0))


# -- every method that takes it ----------------------------------------------------------------------------------
def _methods() -> list[str]:
    registry = get_registry()
    names = methods_taking_nonnegative(registry) + methods_taking_nonnegative(registry, without_refiner=True)
    return sorted(names)


METHODS = _methods()


def test_the_methods_that_truncate_take_it():
    assert {"auto", "tpower", "rsvd-gp", "rsvd-gpb", "spcart", "st", "spca-sp", "tpower-restarts"} <= set(METHODS)
    assert not {"greedy", "exhaustive", "pca", "fspca-go", "fspca-ipu", "encoder-batch", "exact"} & set(METHODS)


def _fit(method: str, data: np.ndarray, r: int, k: int, **options):
    registry = get_registry()
    spec = registry.method(method)
    refiner = {"refiner": "none"} if spec.refiner is not None else {}
    sparsity = {"k": k} if takes_k(spec, registry) else {"lam": EXAMPLE_LAMBDAS[method]}
    return spcakit.fit(data, method, r=r, nonnegative=True, metrics=["cpev"], **refiner, **sparsity, **options)


def _check(result, k: int | None) -> None:
    loadings = result.loadings
    assert np.all(loadings >= 0)  # exactly: not a single negative entry
    assert not np.any(np.signbit(loadings))  # and no -0.0, which would print as "-0"
    np.testing.assert_allclose(np.linalg.norm(loadings, axis=0), 1.0, rtol=0, atol=1e-10)
    if k is not None:
        assert np.all(np.count_nonzero(loadings, axis=0) <= k)
    assert result.spec["nonnegative"] is True


def _run_or_skip(method: str, data: np.ndarray, r: int, k: int, **options):
    try:
        return _fit(method, data, r, k, **options)
    except ZeroLoadingError:  # GPower's absolute penalties can empty a loading on any data: not this test's concern
        assume(method not in EXAMPLE_LAMBDAS)
        raise


def _k(method: str) -> bool:
    return takes_k(get_registry().method(method), get_registry())


@pytest.mark.parametrize("method", METHODS)
@FEW
@given(data=sps.data_matrices((4, 30), (3, 10)), draw=st.data())
def test_random_data(method, data, draw):
    r = draw.draw(st.integers(1, min(3, data.shape[1], data.shape[0] - 1)))
    k = draw.draw(st.integers(r, data.shape[1]))
    _check(_run_or_skip(method, data, r, k), k if _k(method) else None)


@pytest.mark.parametrize("method", METHODS)
@FEW
@given(case=sps.tied_correlations((3, 10)), draw=st.data())
def test_tied_correlations(method, case, draw):
    _, c = case
    rank = int(np.sum(np.linalg.eigvalsh(c) > 1e-8 * c.shape[0]))
    assume(rank >= 1)
    r = draw.draw(st.integers(1, min(2, rank)))
    k = draw.draw(st.integers(r, c.shape[0]))
    try:
        result = _run_or_skip(method, c, r, k, covariance=True)
    except ZeroLoadingError as exc:  # deflation left no variance for the next loading (rank-deficient ties)
        assume("no variance left" not in str(exc) and "rank" not in str(exc))
        raise
    _check(result, k if _k(method) else None)


@pytest.mark.parametrize("method", METHODS)
@FEW
@given(data=sps.data_matrices((6, 30), (3, 10)), draw=st.data())
def test_standardised_data(method, data, draw):
    r = draw.draw(st.integers(1, min(3, data.shape[1], data.shape[0] - 1)))
    k = draw.draw(st.integers(r, data.shape[1]))
    _check(_run_or_skip(method, data, r, k, standardize=True), k if _k(method) else None)
