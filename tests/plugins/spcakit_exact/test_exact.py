"""The exact method: branch and bound on the support, certified against brute force.

A wrong certificate is worse than none: every search here is compared with the optimum itself, the best
of all supports of the cardinality (spcakit.testing.brute_force_optimum, p up to 16), on random, Wishart
(n < p too), spiked and tied covariances and correlations, with and without a generalized deflation's
constraint; and with the published Pitprops optima.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spcakit.analysis.search.tree import PRUNE_RTOL, branch_and_bound

import spcakit
from spcakit.core.errors import ConstantColumnWarning, InvalidParameterError
from spcakit.numerics import thresholding
from spcakit.numerics.linalg import RANGE_TOL
from spcakit.testing import brute_force_optimum, support_values
from spcakit.testing import strategies as sps

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
#: Under a constraint the search has the eigenvalue bound alone: at p = 16, k = 8 up to 3 500 nodes (1.7 s).
CONSTRAINED_SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
#: Each family, half of the draws at p = 16, half at p = 2..16.
FAMILIES = {name: st.one_of(any_p, sps.covariance_families(16)[name])
            for name, any_p in sps.covariance_families((2, 16)).items()}  # fmt: skip
#: Generous: the searches here take 0.1 s at most (p = 16; 1.7 s under a constraint); a limit that stopped one
#: would fail the test.
TIME_LIMIT = 60.0
PITPROPS_OPTIMA = {4: 2.937479, 5: 3.406155, 6: 3.770960, 7: 3.996190, 8: 4.068607, 9: 4.138647, 10: 4.172638}


def brute_force(a: np.ndarray, k: int, q: np.ndarray | None = None) -> float:
    return brute_force_optimum(a, k, constraint=q)[0]


def _pencil_amplification(q: np.ndarray | None, supports: list[tuple[int, ...]]) -> float:
    r"""How much a pencil's value amplifies the rounding of :math:`A`: :math:`1/\lambda_{\min}^+(B_{SS})`, the largest
    over ``supports`` (1 without a constraint). The value is the top eigenvalue of :math:`W^\top A_{SS} W` with
    :math:`W = V_+\Lambda_+^{-1/2}` (:func:`spcakit.numerics.linalg.generalized_top`), so a change :math:`\delta A` moves it
    by up to :math:`\|\delta A\|/\lambda_{\min}^+(B_{SS})`: two computations of it (the search's and brute force's,
    batched) agree only to that."""
    if q is None or q.shape[1] == 0:
        return 1.0
    smallest = 1.0
    for support in supports:
        qs = q[list(support)]
        values = np.linalg.eigvalsh(np.eye(len(support)) - qs @ qs.T)
        kept = values[values > RANGE_TOL]
        if kept.size:
            smallest = min(smallest, float(kept.min()))
    return 1.0 / smallest


def _check(a: np.ndarray, k: int, q: np.ndarray | None = None) -> None:
    found = branch_and_bound(a, k, constraint=q, time_limit=TIME_LIMIT)
    optimum, best = brute_force_optimum(a, k, constraint=q)
    # rounding: far above the eigenvalues' (a few p eps of the largest entry), far below PRUNE_RTOL's; under a
    # constraint, plus 4 p eps times the pencil's amplification on the supports compared (a tied correlation matrix
    # whose B_SS has an eigenvalue of 2e-7: the two computations of one support's value 1.4e-11 apart, relative;
    # the allowance there 7e-8)
    scale = max(float(np.abs(a).max()), abs(optimum))
    amplification = _pencil_amplification(q, [found.support, best])
    rounding = 1e-12 * scale + (4 * a.shape[0] * np.finfo(float).eps * scale * amplification if amplification > 1 else 0.0)
    assert found.optimal and not found.stopped, (k, found, optimum, best)
    # finished: nothing was left above the incumbent times 1 + PRUNE_RTOL, so the value is the optimum to that
    assert optimum * (1 - PRUNE_RTOL) - rounding <= found.value <= optimum + rounding, (k, found, optimum, best)
    # the support has k variables and attains the value; the vector is its unit maximiser
    assert len(found.support) == k and list(found.support) == sorted(set(found.support))
    assert support_values(a, np.array([found.support]), q)[0] == pytest.approx(found.value, rel=1e-12, abs=rounding)
    assert np.count_nonzero(found.vector) <= k and set(np.flatnonzero(found.vector)) <= set(found.support)
    if q is None:
        assert float(found.vector @ a @ found.vector) == pytest.approx(found.value, rel=1e-9, abs=rounding)
    # certified: the bound is the value up to the pruning tolerance and the rounding allowance
    assert found.bound >= optimum and found.bound - found.value <= 2 * PRUNE_RTOL * abs(found.value) + 1e-12 * np.abs(a).max()


@pytest.mark.parametrize("family", sorted(FAMILIES))
@SETTINGS
@given(data=st.data())
def test_the_search_finds_the_optimum(family, data):
    _, a = data.draw(FAMILIES[family], label="(kind, A)")
    _check(a, data.draw(st.integers(1, a.shape[0]), label="k"))


@pytest.mark.parametrize("family", sorted(FAMILIES))
@SETTINGS
@given(data=st.data())
def test_the_search_finds_the_optimum_with_the_threshold_blocks_decomposed_in_part(family, data):
    # every block of the threshold bound above one variable gets 1 or 2 leading eigenpairs only (PARTIAL_BLOCK):
    # the item for the rest and the completion on reaching it keep the bound valid, so the search still certifies
    _, a = data.draw(FAMILIES[family], label="(kind, A)")
    pairs = data.draw(st.integers(1, 2), label="pairs computed")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(thresholding, "PARTIAL_BLOCK", 1)
        patch.setattr(thresholding, "PARTIAL_PAIRS", pairs)
        _check(a, data.draw(st.integers(1, a.shape[0]), label="k"))


@SETTINGS
@given(a=sps.hotelling_deflated_covariances((2, 16)), data=st.data())
def test_the_search_finds_the_optimum_of_an_indefinite_matrix_a_hotelling_deflation_leaves(a, data):
    # no trace bound holds there (a support's diagonal may sum to less than its top eigenvalue)
    _check(a, data.draw(st.integers(1, a.shape[0]), label="k"))


def _constraint(data, p: int) -> np.ndarray:
    """Q of B = I - QQ^T as a generalized deflation builds it: the previous loadings (sparse or dense), made
    orthonormal one after the other (q_t = B_{t-1} x_t / ||B_{t-1} x_t||)."""
    rng = np.random.default_rng(data.draw(sps.seeds(), label="seed of Q"))
    t = data.draw(st.integers(1, min(2, p - 1)), label="t")
    x = rng.standard_normal((p, t))
    for j in range(t):
        x[rng.permutation(p)[data.draw(st.integers(1, p), label="nonzeros"):], j] = 0.0
    return np.linalg.qr(x)[0]


@pytest.mark.parametrize("family", sorted(FAMILIES))
@CONSTRAINED_SETTINGS
@given(data=st.data())
def test_the_search_finds_the_optimum_under_a_generalized_deflations_constraint(family, data):
    """A = (I - QQ^T) C (I - QQ^T), the matrix the generalized deflation leaves with its constraint Q."""
    _, c = data.draw(FAMILIES[family], label="(kind, C)")
    p = c.shape[0]
    q = _constraint(data, p)
    b = np.eye(p) - q @ q.T
    a = b @ c @ b
    _check((a + a.T) / 2, data.draw(st.integers(1, p), label="k"), q)


#: A Wishart matrix (X'X of 2 rows, rounded to 0.1) and a constraint Q that A does not vanish on: branch and
#: bound certifies (1, 2) at 17.08 while (0, 3) reaches 304.72 (its B_SS has eigenvalue 0.004: a finite value).
#: The root's bound is the pencil's top on the range of the singular B (U = all p variables), below the value
#: of a support whose B_SS is regular: no bound. psd_matrices() rarely shows it (the earlier test's 60 draws
#: passed, and 500 more); a Wishart matrix with n < 2p and a random Q (p = 3..10) in about 1 of 10 (A, k) pairs.
NOT_ANNIHILATED = (
    np.array([[1.3, -2.2099999999999995, -1.57, -0.18000000000000002],
              [-2.2099999999999995, 14.69, 5.83, -0.1],
              [-1.57, 5.83, 2.8100000000000005, 0.1],
              [-0.18000000000000002, -0.1, 0.1, 0.04000000000000001]]),
    np.array([[-0.839664201465694], [-0.0], [0.05997601439040672], [0.5397841295136605]]),
    2,
)  # fmt: skip


def test_a_matrix_that_does_not_vanish_on_the_constraint_is_refused():
    """Any A with AQ != 0 was once certified wrongly (found (1, 2) at 17.08, "optimal"; (0, 3) reaches 304.72):
    the eigenvalue bound on the range of a singular B_UU bounds only an A that vanishes on span(Q)."""
    a, q, k = NOT_ANNIHILATED
    assert np.linalg.norm(a @ q) > 1.0  # A is not a deflation's: it does not vanish on span(Q)
    assert brute_force_optimum(a, k, constraint=q) == (pytest.approx(304.72211879064844, rel=1e-12), (0, 3))
    with pytest.raises(InvalidParameterError, match="does not vanish on the constraint's span"):
        branch_and_bound(a, k, constraint=q, time_limit=TIME_LIMIT)
    projector = np.eye(a.shape[0]) - q @ q.T
    _check(projector @ a @ projector, k, q)  # the deflation's A: accepted and solved


def test_a_limit_returns_the_best_support_with_a_bound_above_the_optimum():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((30, 14))
    a = x.T @ x
    found = branch_and_bound(a, 5, node_limit=1)
    optimum = brute_force(a, 5)
    assert not found.optimal and found.stopped == "node limit" and found.nodes == 1
    assert found.value <= optimum * (1 + 1e-12) and found.bound >= optimum
    assert found.gap == pytest.approx((found.bound - found.value) / found.bound)


@pytest.mark.parametrize("k", sorted(PITPROPS_OPTIMA))
def test_exact_reproduces_the_pitprops_optima_and_certifies_them(k):
    result = spcakit.fit("builtin:pitprops", "exact", r=1, k=k)
    variance = float(result.loadings[:, 0] @ spcakit.datasets.pitprops().matrix @ result.loadings[:, 0])
    assert round(variance, 6) == pytest.approx(PITPROPS_OPTIMA[k], abs=5e-7)
    assert result.stopping_reason.startswith("optimal (certified: ") and result.metrics["gap"][0] <= 1e-6
    assert not result.warnings


def test_exact_runs_every_deflator_and_says_when_a_limit_stopped_it():
    for deflator in ("generalized", "projection", "hotelling", "schur"):
        result = spcakit.fit("builtin:pitprops", "exact", r=3, k=4, deflator=deflator)
        assert result.metrics["pattern"] == [4, 4, 4] and result.stopping_reason.count("optimal (certified") == 3, deflator
    stopped = spcakit.fit("builtin:pitprops", "exact", r=1, k=6, node_limit=1)
    assert stopped.stopping_reason.startswith("node limit after 1 nodes: best variance ") and " at most " in stopped.stopping_reason
    assert "gap" not in stopped.stopping_reason  # the gap metric is the one gap of the loading
    assert any("not proven optimal; raise time_limit (--time-limit)" in str(w) for w in stopped.warnings)


def test_a_later_loadings_certificate_says_what_it_is_for():
    """The search certifies a later loading for the covariance the earlier loadings left, while the ``bound`` and
    ``gap`` metrics are for the loadings together: its reason says so under every deflation, also when a limit
    stopped it (and the result still warns); the first loading's reason does not, and no reason prints a gap."""
    from spcakit.workflows.fit import DEFLATED_CERTIFICATE

    for deflator in ("projection", "generalized"):
        result = spcakit.fit("builtin:pitprops", "exact", r=2, k=5, deflator=deflator)
        first, second = result.stopping_reason.split("; component 2: ")
        assert DEFLATED_CERTIFICATE not in first and second.startswith("optimal (certified") and second.endswith(DEFLATED_CERTIFICATE)
        assert "gap" not in first
    stopped = spcakit.fit("builtin:pitprops", "exact", r=2, k=5, node_limit=1)
    assert stopped.stopping_reason.endswith(DEFLATED_CERTIFICATE) and "node limit after 1 nodes" in stopped.stopping_reason
    assert any(str(w).startswith("component 2 stopped before converging") for w in stopped.warnings)


def _joint_lower(c: np.ndarray, loadings: np.ndarray, t: int) -> float:
    """A lower bound on the most variance any ``t + 1`` loadings with the cardinalities of the first ``t + 1``
    explain together: the first ``t``'s, plus the best unit variance of a loading of the next cardinality in what
    they leave (brute force; its added variance is at least that)."""
    earlier = float(np.trace(_projection(loadings[:, :t]) @ c)) if t else 0.0
    return earlier + _left_optimum(c, loadings, t, int(np.count_nonzero(loadings[:, t])))


def _projection(x: np.ndarray) -> np.ndarray:
    u, sv, _ = np.linalg.svd(x, full_matrices=False)
    u = u[:, sv > 1e-10 * max(float(sv.max(initial=0.0)), 1e-300)]
    return u @ u.T


def _left_optimum(c: np.ndarray, loadings: np.ndarray, t: int, k: int) -> float:
    """The bound metric's problem for loading ``t``: the best ``k``-sparse unit variance of
    (I - P) C (I - P), P the projection onto the earlier loadings' span (brute force)."""
    q = np.linalg.qr(loadings[:, :t])[0] if t else np.zeros((c.shape[0], 0))
    left = c - q @ (q.T @ c) - (c @ q) @ q.T + q @ (q.T @ c @ q) @ q.T
    return brute_force((left + left.T) / 2, k)


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_the_generalized_deflation_of_a_rank_one_covariance_is_searched_to_the_end(k):
    """A rank-1 covariance and r = 3: the later searches get (I - QQ^T) C (I - QQ^T), which vanishes on Q to the
    rounding of C's scale but can be rounding alone (1e-17) itself; the search's check against its own scale refused
    it ("does not vanish on the constraint's span") in 120 of 240 such fits. Now every fit ends, with each bound above
    the brute-force optimum of its problem and as much variance as the projection deflation's loadings explain.
    From k = 3 on p = 5 two loadings span the covariance's one direction, so the third would explain only rounding:
    both deflations refuse r = 3 as above the rank, as every method does (tests/workflows/test_rank.py)."""
    for seed in range(5):
        g = np.random.default_rng(seed).standard_normal((5, 1)) * 0.3
        c = g @ g.T
        if k >= 3:
            for deflator in ("generalized", "projection"):
                with pytest.raises(InvalidParameterError, match=r"r=3 exceeds the numerical rank of the covariance \(1\)"):
                    spcakit.fit(c, "exact", r=3, k=k, covariance=True, deflator=deflator, node_limit=1)
            continue
        result = spcakit.fit(c, "exact", r=3, k=k, covariance=True, deflator="generalized", node_limit=1)
        projected = spcakit.fit(c, "exact", r=3, k=k, covariance=True, node_limit=1)
        assert result.metrics["cpev"] == pytest.approx(projected.metrics["cpev"], abs=1e-9)
        for t in range(3):
            joint = _joint_lower(c, result.loadings, t)
            assert result.metrics["bound"][t] >= joint * (1 - 1e-12) - 1e-12 * float(np.abs(c).max())


@pytest.mark.parametrize("deflator", ["generalized", "projection"])
@pytest.mark.parametrize("seed", range(3))
def test_the_bound_metric_takes_the_first_searchs_certificate(seed, deflator):
    """A search stopped by a node limit has a bound far tighter than the fast ones: the result's first ``bound`` and
    ``gap`` take it. Every bound stays above a brute-force lower bound on the most any loadings as sparse explain
    together, and each gap is that of the variance the first t loadings explain together."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((8, 14)) * np.linspace(2.0, 0.5, 14)  # low rank, as gene expression
    c = x.T @ x / 8
    k, r = 4, 3
    limited = spcakit.fit(c, "exact", r=r, k=k, covariance=True, deflator=deflator, node_limit=2)
    fast = spcakit.fit(c, "spcart", r=r, k=k, covariance=True)  # any loadings: the metric's bounds of its own
    first = limited.stopping_reason.split("; ")[0]
    searched = float(first.split("at most ")[1].split(" ")[0])
    assert limited.metrics["bound"][0] <= searched * (1 + 1e-5)  # the search's certificate, to the digits printed
    together = np.cumsum(limited.metrics["additional_variance"])
    for t in range(r):
        bound = limited.metrics["bound"][t]
        assert bound >= _joint_lower(c, limited.loadings, t) * (1 - 1e-12), t
        assert (1 - limited.metrics["gap"][t]) * bound == pytest.approx(together[t], rel=1e-9)
    assert fast.metrics["bound"][0] >= limited.metrics["bound"][0] * (1 - 1e-12)  # spcart's gets the default search


#: Families at p = 4..11 (brute force of every support, for every loading and both methods, stays fast).
SMALL_FAMILIES = sps.covariance_families((4, 11))


@pytest.mark.parametrize("family", sorted(SMALL_FAMILIES))
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_certificate_the_metrics_take_is_above_brute_force_on_every_family(family, data):
    """The certificates the metrics take (exact's search stopped by a node limit, or finished; exhaustive's
    enumeration) on every family, the tied correlations of standardised data among them: each loading's
    ``bound`` is at least a brute-force lower bound on the most any loadings as sparse explain together (the first's:
    the optimum itself) and its ``gap`` never claims more than the loadings achieve."""
    _, c = data.draw(SMALL_FAMILIES[family], label="covariance")
    p = c.shape[0]
    k = data.draw(st.integers(1, p - 1), label="k")
    r = data.draw(st.integers(1, min(3, p - k + 1)), label="r")
    deflator = data.draw(st.sampled_from(["generalized", "projection"]), label="deflator")
    method = data.draw(st.sampled_from(["exact", "exhaustive"]), label="method")
    options = {"node_limit": data.draw(st.integers(1, 4), label="node limit")} if method == "exact" else {}
    result = spcakit.fit(c, method, r=r, k=k, covariance=True, deflator=deflator, **options)
    rounding = 1e-12 * max(1.0, float(np.abs(c).max()))
    together = np.cumsum(result.metrics["additional_variance"])
    for t in range(r):
        joint = _joint_lower(c, result.loadings, t)
        bound = result.metrics["bound"][t]
        assert bound >= joint * (1 - 1e-12) - rounding, (t, bound, joint, result.stopping_reason)
        assert (1 - result.metrics["gap"][t]) * bound <= together[t] * (1 + 1e-9) + rounding, (t, result.metrics["gap"])


@pytest.mark.parametrize("method", ["exact", "exhaustive"])
def test_certificates_on_standardised_data_with_tied_and_constant_columns_hold_in_any_column_order(method):
    """What users run: data, standardised, with a constant column and two copies of a column (tied), in two
    column orders. The bounds are above the brute-force optimum of the correlation matrix the fit used, the first
    loading is certified optimal (gap within the search's pruning tolerance) and the values agree across the orders."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((40, 9)) @ rng.standard_normal((9, 9)) * rng.uniform(0.5, 3.0, 9)
    x = np.column_stack([x, x[:, 2] * 3.0 + 1.0, np.full(40, 5.0)])  # a copy (tied, correlation 1) and a constant
    order = rng.permutation(x.shape[1])
    with pytest.warns(ConstantColumnWarning):
        runs = [spcakit.fit(data, method, r=2, k=3, standardize=True) for data in (x, x[:, order])]
    z = (x - x.mean(axis=0))[:, :-1]
    c = np.zeros((11, 11))
    c[:10, :10] = np.corrcoef(z, rowvar=False)
    for result, perm in zip(runs, (np.arange(11), order)):
        cov = c[np.ix_(perm, perm)]
        assert not result.loadings[np.flatnonzero(perm == 10)].any()  # the constant column
        assert 0.0 <= result.metrics["gap"][0] <= 2 * PRUNE_RTOL  # certified: the search prunes to PRUNE_RTOL
        for t in range(2):
            optimum = _left_optimum(cov, result.loadings, t, 3)
            assert result.metrics["bound"][t] >= optimum * (1 - 1e-12), (t, result.metrics["bound"], optimum)
    assert runs[0].metrics["bound"] == pytest.approx(runs[1].metrics["bound"], rel=1e-9)
    assert runs[0].metrics["additional_variance"] == pytest.approx(runs[1].metrics["additional_variance"], rel=1e-9)


def test_the_command_line_takes_a_time_limit(cli):


    done = cli.invoke("run", "exact", "-k", "4", "-r", "1", "--time-limit", "30", "--json")
    assert done.exit_code == 0, done.output
    assert '"time_limit": 30.0' in done.output and "optimal (certified" in done.output
    twice = cli.invoke("run", "exact", "-k", "4", "--time-limit", "3", "--param", "time_limit=3")
    assert twice.exit_code == 2 and "given twice" in twice.output
    other = cli.invoke("run", "spcart", "--time-limit", "3")
    assert other.exit_code == 2 and "no part of method 'spcart' takes a parameter 'time_limit'" in other.output


def _wishart(p: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((p // 2, p)) * np.linspace(2.0, 0.5, p)  # low rank, as gene expression
    return a.T @ a / (p // 2)


@pytest.mark.parametrize("seed", range(4))
def test_the_warm_start_power_runs_end_on_fixed_points_that_follow_the_variables(seed):
    from spcakit.analysis.search.nodes import SearchProblem
    from spcakit.analysis.search.tree import _truncated_power

    a, k = _wishart(40, seed), 6
    problem = SearchProblem(a, k, None)
    permutation = np.random.default_rng(seed + 10).permutation(40)
    permuted = SearchProblem(a[np.ix_(permutation, permutation)], k, None)
    for start, permuted_start in zip(problem.leading.T, permuted.leading.T):
        support = _truncated_power(problem, start)
        _, vector = problem.value(support)
        # a fixed point: the k largest entries of A x, x the best vector on the support, are the support
        assert set(np.argsort(-np.abs(a[:, support] @ vector))[:k]) == set(support)
        # the starts are the matrix's eigenvectors, so the permuted matrix's run ends on the permuted support
        assert set(permutation[_truncated_power(permuted, permuted_start)]) == set(support)


@pytest.mark.parametrize("seed", range(4))
def test_the_warm_start_is_the_best_of_the_greedy_selection_and_the_power_runs(seed):
    from spcakit.analysis.search.nodes import SearchProblem
    from spcakit.analysis.search.tree import _greedy, _truncated_power, _warm_start

    problem = SearchProblem(_wishart(60, seed), 8, None)
    value, support = _warm_start(problem)  # the swaps can only improve on the best of the two
    found = [problem.value(_truncated_power(problem, start))[0] for start in problem.leading.T]
    assert value >= max([_greedy(problem)[0], *found]) * (1 - 1e-12)
    assert value == pytest.approx(problem.value(support)[0], rel=1e-12)
    # a deadline already past: the greedy selection takes the variables of largest variance, the power runs still run
    past, _ = _warm_start(problem, deadline=0.0)
    assert past >= max(found) * (1 - 1e-12)


@pytest.mark.parametrize("k", [1, 5, 12])
def test_the_greedy_selection_stopped_by_its_deadline_completes_the_support_by_variance(k):
    from spcakit.analysis.search.nodes import SearchProblem
    from spcakit.analysis.search.tree import _greedy

    a = _wishart(30, 7)
    problem = SearchProblem(a, k, None)
    value, support = _greedy(problem, deadline=0.0)
    largest = np.sort(np.argsort(-np.diag(a), kind="stable")[:k])
    np.testing.assert_array_equal(support, largest)
    assert value == pytest.approx(problem.value(largest)[0], rel=1e-12)
    _, full_support = _greedy(problem)  # without a deadline: k steps (at k = 1 the same variable, the largest variance)
    assert len(full_support) == k and (k > 1 or np.array_equal(full_support, largest))


@pytest.mark.parametrize("limit", [2.5, 0, -1, True])
def test_a_node_limit_that_is_no_positive_integer_is_refused(limit):
    with pytest.raises(spcakit.InvalidParameterError, match="branch-and-bound: node_limit must be a positive integer"):
        spcakit.fit("builtin:pitprops", "exact", r=1, k=4, node_limit=limit)


def _low_rank_standardised_data(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((20, 150)) @ np.diag(rng.uniform(0.5, 2.0, 150))
    x[:, :30] += rng.standard_normal((20, 1)) * 0.8  # a block of correlated genes
    return x


@pytest.mark.parametrize("seed", range(6))
def test_the_search_starts_from_the_default_and_never_returns_less(seed):
    """Stopped after one node, the search still returns at least the default method's first loading (it starts from
    it); on seed 5 its own warm start alone reaches less (5.108 against 5.239)."""
    x = _low_rank_standardised_data(seed)
    default = spcakit.fit(x, r=1, k=8, standardize=True).metrics["additional_variance"][0]
    seeded = spcakit.fit(x, "exact", r=1, k=8, standardize=True, node_limit=1).metrics["additional_variance"][0]
    assert seeded >= default * (1 - 1e-12)
    if seed == 5:
        alone = spcakit.fit(x, "exact", r=1, k=8, standardize=True, node_limit=1, from_default=False)
        assert alone.metrics["additional_variance"][0] < default * (1 - 1e-3)


def test_each_component_gets_its_share_of_what_is_left(monkeypatch):
    """The time limit is for the whole fit: a component gets what is left since the run began over the components
    left (here 10 s, 4 s gone, component 2 of 3: 3 s), nothing once it is spent, the whole limit without the driver's
    word, and no limit without one."""
    import time

    from spcakit.core.records import COMPONENT, Carry
    from spcakit_exact.parts import BranchAndBound

    monkeypatch.setattr(time, "perf_counter", lambda: 104.0)
    part = BranchAndBound(k=2, time_limit=10)
    assert part._share(Carry().set(COMPONENT, (1, 3, 100.0))) == pytest.approx(3.0)
    assert part._share(Carry().set(COMPONENT, (2, 3, 90.0))) == 0.0
    assert part._share(Carry()) == 10.0
    assert BranchAndBound(k=2, time_limit=None)._share(Carry().set(COMPONENT, (0, 1, 100.0))) is None


def test_the_deflation_driver_tells_each_component_its_place_and_the_runs_start(monkeypatch):
    from spcakit.core.records import COMPONENT
    from spcakit_exact.parts import BranchAndBound

    told = []
    original = BranchAndBound._share
    monkeypatch.setattr(BranchAndBound, "_share", lambda self, state: told.append(state.get(COMPONENT)) or original(self, state))
    spcakit.fit("builtin:pitprops", "exact", r=3, k=4)
    assert [entry[:2] for entry in told] == [(0, 3), (1, 3), (2, 3)]
    assert len({entry[2] for entry in told}) == 1  # one start for the whole run


def test_exact_takes_more_variables_than_it_would_form_when_it_reads_the_covariance_from_few_rows():
    from spcakit_exact.parts import EXACT_P_LIMIT

    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, EXACT_P_LIMIT + 1))  # C would be 8001 x 8001 (0.5 GB): read from the 4 rows instead
    result = spcakit.fit(x, "exact", r=1, k=2, time_limit=None)
    default = spcakit.fit(x, r=1, k=2)
    assert result.stopping_reason.startswith("optimal (certified")
    assert result.metrics["cpev"] >= default.metrics["cpev"] * (1 - 1e-12)
    assert np.count_nonzero(result.loadings) == 2
