"""The exact search's node pieces against brute force: the split and Schur bounds, the one-place completions and the
pairs.

A node fixes the variables ``I`` in and allows ``U``; its optimum is the best :math:`\\lambda_{\\max}(A_{SS})` over
the supports :math:`I \\subseteq S \\subseteq U` of ``k`` variables. A bound below it would be a wrong certificate,
so each piece is compared with that optimum, enumerated, on every covariance family (p up to 12) and on Hotelling-deflated
ones (indefinite), at nodes drawn at random (any ``I`` and ``U``).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spcakit.analysis.search import nodes
from spcakit.analysis.search import tree as search
from spcakit.analysis.search.nodes import SearchProblem, descending_prefix, largest_free

from spcakit.numerics import thresholding
from spcakit.testing import strategies as sps

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

FAMILIES = sps.covariance_families((2, 12), indefinite=True)


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


def _optimum(a: np.ndarray, k: int, included: np.ndarray, allowed: np.ndarray) -> float:
    """The node's optimum, by enumeration of its supports."""
    return max(_top(a, s) for s in _supports(k, included, allowed))


def _rounding(a: np.ndarray) -> float:
    return 64 * a.shape[0] * np.finfo(float).eps * max(float(np.abs(a).max()), np.finfo(float).tiny)


@SETTINGS
@given(family=st.sampled_from(sorted(FAMILIES)), data=st.data())
def test_the_split_bound_is_never_below_the_nodes_optimum(family, data):
    a, k, included, allowed = _node(data, family, fixed_least=1)
    if included is None:
        return
    bound, weights = SearchProblem(a, k, None).split_bound(included, allowed)
    assert bound >= _optimum(a, k, included, allowed) - _rounding(a), bound
    # the couplings are weights of the free variables only
    assert np.all(weights[~(allowed & ~included)] == 0) and np.all(weights >= 0)


@SETTINGS
@given(family=st.sampled_from(sorted(FAMILIES)), data=st.data())
def test_the_split_bound_with_the_allowed_sets_threshold_decomposition_is_never_below_the_nodes_optimum(family, data):
    a, k, included, allowed = _node(data, family, fixed_least=1)
    if included is None:
        return
    problem = SearchProblem(a, k, None)
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
    assert bound >= _optimum(a, k, included, allowed) - _rounding(a), bound
    # nothing kept for that rho: no threshold part, and the bound is that without it
    assert problem.free_threshold(allowed, included, rho * 1.5, m) == np.inf


@SETTINGS
@given(family=st.sampled_from(sorted(FAMILIES)), data=st.data())
def test_the_schur_bound_is_never_below_the_nodes_optimum_whatever_floor_it_is_asked_to_prune_at(family, data):
    a, k, included, allowed = _node(data, family, fixed_least=1)
    if included is None:
        return
    problem = SearchProblem(a, k, None)
    optimum = _optimum(a, k, included, allowed)
    ceiling, _ = problem.split_bound(included, allowed)
    spread = max(abs(optimum), float(np.abs(a).max()), np.finfo(float).tiny)
    for floor in (optimum - 0.5 * spread, optimum - 1e-3 * spread, optimum, optimum + 1e-3 * spread, ceiling):
        bound = problem.schur_bound(included, allowed, floor, ceiling)
        assert optimum - _rounding(a) <= bound <= ceiling, (floor, bound, optimum, ceiling)


def test_the_schur_bound_prunes_where_the_split_bound_cannot():
    # two fixed variables and a free block whose best pair is not the pair most coupled to them: the split bound
    # takes the couplings of one pair and the free part of another, the Schur bound sees each pair whole
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 30)) * rng.gamma(1.0, 1.0, 30)
    a = x.T @ x / 8
    k = 4
    problem = SearchProblem(a, k, None)
    included, allowed = np.zeros(30, dtype=bool), np.ones(30, dtype=bool)
    included[np.argsort(-np.diag(a))[:2]] = True
    optimum = _optimum(a, k, included, allowed)
    ceiling, _ = problem.split_bound(included, allowed)
    schur = problem.schur_bound(included, allowed, optimum * (1 + 1e-9), ceiling)
    assert optimum - _rounding(a) <= schur < ceiling
    assert (schur - optimum) < 0.5 * (ceiling - optimum), (optimum, schur, ceiling)


@settings(max_examples=40, deadline=None)
@given(seed=sps.seeds(), p=st.integers(3, 10), data=st.data())
def test_an_indefinite_matrix_gets_no_trace_bound(seed, p, data):
    # a zero diagonal with random couplings: every support's diagonal sums to 0 while its top eigenvalue is positive,
    # so a trace bound (right for a covariance only) would prune every node; nodes and the whole search still hold
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((p, p))
    a = np.triu(a, 1) + np.triu(a, 1).T
    k = data.draw(st.integers(2, p), label="k")
    problem = SearchProblem(a, k, None)
    assert not problem.psd
    included, allowed = np.zeros(p, dtype=bool), np.ones(p, dtype=bool)
    included[data.draw(st.integers(0, p - 1), label="fixed")] = True
    optimum = _optimum(a, k, included, allowed)
    ceiling, _ = problem.split_bound(included, allowed)
    assert ceiling >= optimum - _rounding(a)
    assert problem.schur_bound(included, allowed, optimum * (1 - 1e-3) - 1e-3, ceiling) >= optimum - _rounding(a)
    assert problem.cheap_bounds(np.zeros(p, dtype=bool), allowed) >= max(_top(a, s) for s in _supports(k, np.zeros(p, dtype=bool), allowed)) - _rounding(a)
    found = search.branch_and_bound(a, k)
    assert found.optimal and found.value >= max(_top(a, s) for s in _supports(k, np.zeros(p, dtype=bool), allowed)) - _rounding(a)


@settings(max_examples=40, deadline=None)
@given(seed=sps.seeds(), p=st.integers(2, 9), data=st.data())
def test_a_finished_search_bounds_a_negative_optimum_from_above(seed, p, data):
    # a negative definite matrix (C - W of the Lagrangian dual with a large W): every support's value is negative, and
    # the bound of a finished search must still be at least the optimum (the value plus its tolerance, not times it)
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((p, p))
    a = (a + a.T) / 2
    a -= (float(np.linalg.eigvalsh(a)[-1]) + data.draw(st.floats(0.5, 50.0), label="shift")) * np.eye(p)
    k = data.draw(st.integers(1, p), label="k")
    optimum = max(_top(a, s) for s in _supports(k, np.zeros(p, dtype=bool), np.ones(p, dtype=bool)))
    assert optimum < 0
    found = search.branch_and_bound(a, k, task=None)
    assert found.optimal
    assert found.value == pytest.approx(optimum, rel=1e-12, abs=_rounding(a))
    assert found.bound >= found.value and found.bound >= optimum
    assert search.prune_level(found.value) > found.value
    assert search.prune_level(-np.inf) == -np.inf


def test_the_split_bound_is_exact_when_the_free_variables_do_not_touch_the_fixed_ones():
    # A = diag(5, 1, 1) with a 2 x 2 free block [[2, 1], [1, 2]] apart from variable 0: at I = {0}, k = 3 the best
    # support {0, 3, 4} has the value max(5, 3) = 5 = lambda_I, and sigma = 0
    a = np.zeros((5, 5))
    a[0, 0], a[1, 1], a[2, 2] = 5.0, 1.0, 1.0
    a[3:, 3:] = [[2.0, 1.0], [1.0, 2.0]]
    included = np.array([True, False, False, False, False])
    bound, _ = SearchProblem(a, 3, None).split_bound(included, np.ones(5, dtype=bool))
    assert bound == 5.0


@SETTINGS
@given(family=st.sampled_from(sorted(FAMILIES)), data=st.data())
def test_the_completions_are_the_values_of_the_supports_with_one_more_variable(family, data):
    a, k, included, allowed = _node(data, family, free_places=(1, 1))
    if included is None:
        return
    problem = SearchProblem(a, k, None)
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
    problem = SearchProblem(a, k, None)
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


@settings(max_examples=60, deadline=None)
@given(seed=sps.seeds(), rows=st.integers(1, 8), columns=st.integers(1, 12), width=st.integers(1, 12),
       count=st.integers(1, 12), ties=st.booleans())  # fmt: skip
def test_the_largest_free_entries_are_those_of_a_full_sort_whether_the_prefix_holds_them_or_not(seed, rows, columns, width,
                                                                                               count, ties):  # fmt: skip
    rng = np.random.default_rng(seed)
    matrix = rng.integers(0, 3, (rows, columns)).astype(float) if ties else rng.random((rows, columns))
    free = rng.random(columns) < 0.6
    count = min(count, int(free.sum()))
    if count == 0:
        return
    prefix = descending_prefix(matrix, min(width, columns))
    found = largest_free(prefix, matrix, np.arange(rows), free, count)
    expected = -np.sort(-matrix[:, free], axis=1)[:, :count]
    np.testing.assert_array_equal(np.sort(found, axis=1), np.sort(expected, axis=1))


@pytest.mark.parametrize("seed", range(6))
def test_the_split_bound_holds_where_the_rows_prefixes_run_out_of_free_variables(seed, monkeypatch):
    # each row's sorted prefix cut to 2 k = 6 entries: with the 30 variables most linked to the others fixed out,
    # most rows have fewer free ones there than they need, and are partitioned in full
    monkeypatch.setattr(nodes, "NEAR_SLACK", 0)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((60, 48)) * rng.gamma(1.0, 1.0, 48)
    a = x.T @ x / 60
    k = 3
    problem = SearchProblem(a, k, None)
    linked = np.argsort(-np.abs(a).sum(axis=1))
    included, allowed = np.zeros(48, dtype=bool), np.ones(48, dtype=bool)
    included[linked[0]] = True
    allowed[linked[1:31]] = False
    free = np.flatnonzero(allowed & ~included)
    assert ((allowed & ~included)[problem.near_rows[1][free]].sum(axis=1) < k - 1).any()  # the fallback is taken
    bound, _ = problem.split_bound(included, allowed)
    assert bound >= _optimum(a, k, included, allowed) - _rounding(a)
    # the same bound as with every row's prefix long enough
    monkeypatch.setattr(nodes, "NEAR_SLACK", 64)
    assert SearchProblem(a, k, None).split_bound(included, allowed)[0] == pytest.approx(bound, rel=1e-12)


@SETTINGS
@given(seed=st.integers(0, 2**16), p=st.integers(4, 11), data=st.data())
def test_the_search_on_the_eigenpairs_of_a_gram_matrix_certifies_the_brute_force_optimum(seed, p, data):
    """Data of n < p rows: the search takes the n eigenpairs of the n x n Gram matrix (the other p - n eigenvalues
    are 0) instead of decomposing the p x p covariance, and still proves the optimum: its bound is never below the
    brute force, its value equals it, and the decomposition it would have made gives the same certificate."""
    from spcakit.numerics.operators.gram import GramCovariance
    from spcakit.testing import brute_force_optimum, reference_rounding

    n = data.draw(st.integers(2, p // 2), label="n")
    k = data.draw(st.integers(1, p), label="k")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, p)) * rng.uniform(0.2, 3.0, p)
    if data.draw(st.booleans(), label="tied columns"):
        x[:, 1] = x[:, 0]  # repeated variables: ties
    op = GramCovariance(x, float(max(n - 1, 1)), x.mean(axis=0))
    spectrum = search.low_rank_spectrum(op)
    assert spectrum is not None and spectrum[0].shape[0] == op.rank_at_most()
    a = op.matmat(np.eye(p))
    optimum = brute_force_optimum(a, k)[0]
    found = search.branch_and_bound(a, k, spectrum=spectrum, task=None)
    rounding = reference_rounding(a) * (1 + k)
    assert found.bound >= optimum - rounding
    assert found.value == pytest.approx(optimum, rel=1e-9, abs=rounding)
    decomposed = search.branch_and_bound(a, k, task=None)
    assert found.bound == pytest.approx(decomposed.bound, rel=1e-9, abs=rounding)


def test_a_covariance_of_as_many_rows_as_variables_is_decomposed_by_the_search():
    from spcakit.numerics.operators.dense import DenseCovariance
    from spcakit.numerics.operators.gram import GramCovariance

    x = np.random.default_rng(0).standard_normal((12, 8))
    assert search.low_rank_spectrum(GramCovariance(x, 11.0, x.mean(axis=0))) is None  # n >= p / 2: no gain
    assert search.low_rank_spectrum(DenseCovariance(np.cov(x, rowvar=False))) is None  # no rank known


def test_the_cheap_bounds_of_a_large_node_are_taken_in_blocks_of_rows_and_equal_them_whole(monkeypatch):
    """Ctrl-C waits for one NumPy call: a node's Gershgorin sums partition its rows a block at a time (at p = 7129
    one partition of every row held an interrupt for 17 s), and give the same bound as a single partition."""
    from spcakit.numerics import linalg

    rng = np.random.default_rng(5)
    g = rng.standard_normal((300, 40))
    problem = SearchProblem(g @ g.T, 6, None)
    included, allowed = np.zeros(300, dtype=bool), np.ones(300, dtype=bool)
    included[[3, 17]] = True
    allowed[[5, 90, 91]] = False
    whole = problem.cheap_bounds(included, allowed)
    sizes: list[int] = []
    original = np.partition
    monkeypatch.setattr(nodes.np, "partition", lambda a, *args, **kw: sizes.append(np.asarray(a).size) or original(a, *args, **kw))
    monkeypatch.setattr(linalg, "INTERRUPTIBLE_ENTRIES", 4000)
    assert problem.cheap_bounds(included, allowed) == pytest.approx(whole, rel=1e-14)
    assert len(sizes) > 1 and max(sizes) <= 4000


def test_a_search_whose_decomposition_runs_past_the_time_limit_stops_with_a_valid_bound(monkeypatch):
    """A decomposition given up at the deadline (:class:`~spcakit.numerics.linalg.DeadlinePassed`) ends the search as
    its time limit does: the best support so far, and a bound that is still never below the optimum."""
    from spcakit.numerics.linalg import DeadlinePassed
    from spcakit.testing import brute_force_optimum, reference_rounding

    rng = np.random.default_rng(11)
    g = rng.standard_normal((30, 12))
    a = g.T @ g / 29

    def late(self, *args, **kwargs):
        raise DeadlinePassed("still running at the deadline")

    monkeypatch.setattr(nodes.SearchProblem, "threshold", late)
    monkeypatch.setattr(nodes.SearchProblem, "top", late)
    found = search.branch_and_bound(a, 4, time_limit=3600.0, task=None)
    optimum = brute_force_optimum(a, 4)[0]
    assert not found.optimal and "time limit" in found.stopped
    assert found.bound >= optimum - reference_rounding(a)
    assert found.value <= optimum + reference_rounding(a)


@SETTINGS
@given(seed=st.integers(0, 2**16), p=st.integers(4, 11), levels=st.integers(1, 3), data=st.data())
def test_a_projection_deflated_gram_matrix_gets_its_eigenpairs_from_the_rows_and_the_search_stays_exact(seed, p, levels,
                                                                                                       data):  # fmt: skip
    """The exact method's later loadings search P C P (projection deflation) of data with n <= p/2 rows: its n
    eigenpairs come from the n x n matrix F F^T (F = B P), equal the full decomposition's, and the search on them
    still proves the brute-force optimum."""
    from spcakit.numerics.operators.deflated import project_out
    from spcakit.numerics.operators.gram import GramCovariance
    from spcakit.testing import brute_force_optimum, reference_rounding

    n = data.draw(st.integers(2, p // 2), label="n")
    k = data.draw(st.integers(1, p), label="k")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, p)) * rng.uniform(0.2, 3.0, p)
    op = GramCovariance(x, float(max(n - 1, 1)), x.mean(axis=0), rng.uniform(0.5, 2.0, p))
    for _ in range(levels):
        unit = rng.standard_normal(p) * (rng.random(p) < 0.5)
        if not unit.any():
            unit[0] = 1.0
        op = project_out(op, unit / np.linalg.norm(unit))
    spectrum = search.low_rank_spectrum(op)
    assert spectrum is not None
    a = op.matmat(np.eye(p))
    a = (a + a.T) / 2
    full = np.linalg.eigvalsh(a)[::-1]
    scale = max(float(full[0]), 1e-300)
    np.testing.assert_allclose(spectrum[0], full[: spectrum[0].size], atol=1e-10 * scale)
    assert np.all(np.abs(full[spectrum[0].size :]) <= 1e-10 * scale)  # the rest are 0
    values, vectors = spectrum
    np.testing.assert_allclose(a @ vectors[:, values > 1e-8 * scale], vectors[:, values > 1e-8 * scale] * values[values > 1e-8 * scale], atol=1e-9 * scale)
    optimum = brute_force_optimum(a, k)[0]
    found = search.branch_and_bound(a, k, spectrum=spectrum, task=None)
    rounding = reference_rounding(a) * (1 + k)
    assert found.bound >= optimum - rounding
    assert found.value == pytest.approx(optimum, rel=1e-9, abs=rounding + 1e-12 * scale)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 9), sps.seeds(), st.data())
def test_the_off_diagonal_magnitudes_equal_the_absolute_matrix_with_its_diagonal_zeroed(p, seed, data):
    """Every way the search reads them (a slice of rows, rows by index, a submatrix by np.ix_ whose rows and columns
    may share variables) gives |a| with its diagonal 0, without the p x p matrix kept."""
    a = np.random.default_rng(seed).standard_normal((p, p))
    expected = np.abs(a)
    np.fill_diagonal(expected, 0.0)
    magnitudes = nodes.OffDiagonalMagnitudes(a)
    start = data.draw(st.integers(0, p - 1), label="start")
    assert np.array_equal(magnitudes[start:], expected[start:])
    rows = np.array(data.draw(st.lists(st.integers(0, p - 1), min_size=1, max_size=p, unique=True), label="rows"))
    cols = np.array(data.draw(st.lists(st.integers(0, p - 1), min_size=1, max_size=p, unique=True), label="cols"))
    assert np.array_equal(magnitudes[rows], expected[rows])
    assert np.array_equal(magnitudes[np.ix_(rows, cols)], expected[np.ix_(rows, cols)])
    assert np.array_equal(a, np.random.default_rng(seed).standard_normal((p, p)))  # the matrix is left as it was


def test_a_symmetric_matrix_is_searched_as_it_is_and_another_one_symmetrised_with_the_same_optimum():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((30, 12))
    symmetric = x.T @ x / 30
    symmetric = (symmetric + symmetric.T) / 2
    assert SearchProblem(symmetric, 4, None).a is symmetric  # no p x p copy
    skewed = symmetric.copy()
    skewed[0, 1] += 1e-3
    skewed[1, 0] -= 1e-3  # the same symmetric part
    problem = SearchProblem(skewed, 4, None)
    assert problem.a is not skewed
    assert np.array_equal(problem.a, problem.a.T)
    assert np.allclose(problem.a, symmetric, rtol=0, atol=1e-15)
    assert search.branch_and_bound(skewed, 4).value == pytest.approx(search.branch_and_bound(symmetric, 4).value,
                                                                      rel=1e-12)


def test_the_schur_bound_of_a_large_node_is_taken_in_blocks_of_rows_and_equals_it_whole(monkeypatch):
    """Near the root the free variables are nearly all of them: B(lambda), its magnitudes and their partition are
    taken a block of rows at a time (three p x p arrays at Golub's peak otherwise), with the same bound."""
    from spcakit.numerics import linalg

    rng = np.random.default_rng(8)
    g = rng.standard_normal((300, 40))
    problem = SearchProblem(g @ g.T / 40, 8, None)
    included, allowed = np.zeros(300, dtype=bool), np.ones(300, dtype=bool)
    included[[3, 17, 40]] = True
    allowed[[5, 90]] = False
    split = problem.split_bound(included, allowed)[0]
    whole = problem.schur_bound(included, allowed, 0.0, split)
    monkeypatch.setattr(linalg, "INTERRUPTIBLE_ENTRIES", 4000)
    assert problem.schur_bound(included, allowed, 0.0, split) == pytest.approx(whole, rel=1e-12)
    assert whole < split  # it tightens the split bound here, so the blocks' sums decided something
