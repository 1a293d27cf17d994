"""Upper bounds on the sparse eigenvalue (spcakit.analysis.bounds): never below the optimum, checked against brute force.

A bound below an achievable value would be a silent wrong answer, so every test here compares with the
optimum itself: the largest eigenvalue of every k x k principal submatrix (p up to 16, every k, on random,
Wishart with n < p, spiked and tied covariances and correlations: spcakit.testing.brute_force_optimum), or the
published Pitprops optima (Li & Xie 2024, reproduced by ``exhaustive``).
"""

from __future__ import annotations

import itertools

import attrs
import numpy as np
import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

import spcakit
from spcakit.analysis.bounds import BOUNDS, component_bounds, relative_gap, sparse_variance_bound
from spcakit.core.errors import InvalidParameterError, ZeroLoadingError
from spcakit.testing import EXAMPLE_LAMBDAS, brute_force_optimum, left_by, reference_rounding
from spcakit.testing import strategies as sps

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
#: Per family of covariances: every k of a matrix at p = 16 is 65 535 submatrices (0.3 s); one k, 12 870 at most.
EVERY_K_SETTINGS = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FAMILY_SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
#: Each family, half of the draws at p = 16 (the largest the reference enumerates quickly), half at p = 2..16.
FAMILIES = {name: st.one_of(any_p, sps.covariance_families(16)[name])
            for name, any_p in sps.covariance_families((2, 16)).items()}  # fmt: skip
#: Pitprops: max x'Cx over unit x with at most k nonzeros (k = 4..10), as published and reproduced by exhaustive.
PITPROPS_OPTIMA = {4: 2.937479, 5: 3.406155, 6: 3.770960, 7: 3.996190, 8: 4.068607, 9: 4.138647, 10: 4.172638}


def brute_force(c: np.ndarray, k: int) -> float:
    """max over supports S of size k of lambda_max(C_SS) (every unit x with at most k nonzeros lies on one)."""
    return brute_force_optimum(c, k)[0]


def _check(c: np.ndarray, k: int) -> None:
    bound = sparse_variance_bound(c, k)
    optimum = brute_force(c, k)
    assert bound.value >= optimum - reference_rounding(c), (k, bound, optimum)
    assert bound.which in BOUNDS and bound.k == k
    assert bound.value == pytest.approx(min(bound.bounds.values()), rel=1e-10, abs=1e-300)


@pytest.mark.parametrize("family", sorted(FAMILIES))
@EVERY_K_SETTINGS
@given(data=st.data())
def test_the_bound_is_never_below_the_optimum_at_any_cardinality(family, data):
    _, c = data.draw(FAMILIES[family], label="(kind, C)")
    for k in range(1, c.shape[0] + 1):
        _check(c, k)


@pytest.mark.parametrize("family", sorted(FAMILIES))
@SETTINGS
@given(data=st.data())
def test_the_bound_is_exact_at_k_1_and_k_p(family, data):
    _, c = data.draw(FAMILIES[family], label="(kind, C)")
    p = c.shape[0]
    scale = float(np.abs(np.diag(c)).max())
    assert sparse_variance_bound(c, 1).value == pytest.approx(float(np.diag(c).max()), rel=1e-9, abs=1e-12 * scale)
    assert sparse_variance_bound(c, p).value == pytest.approx(float(np.linalg.eigvalsh(c)[-1]), rel=1e-9, abs=1e-12 * scale)


def test_the_reference_takes_the_best_of_every_support_of_at_most_k():
    """The reference enumerates supports of exactly k: by interlacing none of fewer variables does better."""
    rng = np.random.default_rng(2)
    for n in (2, 5, 12):  # rank-deficient and full-rank Wishart
        x = rng.standard_normal((n, 7))
        c = x.T @ x / n
        for k in range(1, 8):
            at_most_k = max(float(np.linalg.eigvalsh(c[np.ix_(s, s)])[-1])
                            for size in range(1, k + 1) for s in itertools.combinations(range(7), size))  # fmt: skip
            value, support = brute_force_optimum(c, k)
            assert value == pytest.approx(at_most_k, rel=1e-12) and len(support) == k
            assert float(np.linalg.eigvalsh(c[np.ix_(support, support)])[-1]) == value


def test_pitprops_optima_lie_below_the_bound_and_every_method_below_both():
    c = spcakit.datasets.pitprops().matrix
    for k, optimum in PITPROPS_OPTIMA.items():
        assert sparse_variance_bound(c, k).value >= optimum
    registry = spcakit.get_registry()
    for name in registry.method_names():
        result = spcakit.fit(c, name, r=1, covariance=True, lam=EXAMPLE_LAMBDAS.get(name))
        x = result.loadings[:, 0]
        k = int(np.count_nonzero(x))
        achieved = float(x @ c @ x) / float(x @ x)
        assert achieved <= sparse_variance_bound(c, k).value, name
        assert 0.0 <= relative_gap(x, c) <= 1.0, name


def test_the_gap_of_the_optimal_loading():
    c = spcakit.datasets.pitprops().matrix
    exact = spcakit.fit(c, "exhaustive", r=1, k=4, covariance=True).loadings[:, 0]
    bound = sparse_variance_bound(c, 4)
    assert relative_gap(exact, c) == pytest.approx((bound.value - PITPROPS_OPTIMA[4]) / bound.value, abs=1e-6)
    dense = np.linalg.eigh(c)[1][:, -1]  # k = p: the leading eigenvector is optimal and the bound exact
    assert relative_gap(dense, c) <= 1e-12


def test_an_operator_gives_the_bound_of_its_matrix():
    x = np.random.default_rng(5).standard_normal((40, 12))
    problem = spcakit.as_problem(x)
    dense = np.cov(x, rowvar=False)
    for k in (1, 3, 12):
        from_operator, from_matrix = sparse_variance_bound(problem.covariance, k), sparse_variance_bound(dense, k)
        assert from_operator.value == pytest.approx(from_matrix.value, rel=1e-10)


@pytest.mark.parametrize("k", [0, 14, 2.5, True, "3"])
def test_bad_cardinalities_are_refused(k):
    with pytest.raises(InvalidParameterError, match=r"k must be an integer in \[1, p\]"):
        sparse_variance_bound(spcakit.datasets.pitprops().matrix, k)


def test_bad_matrices_and_loadings_are_refused():
    with pytest.raises(InvalidParameterError, match="square"):
        sparse_variance_bound(np.ones((3, 4)), 2)
    with pytest.raises(InvalidParameterError, match="covariance operator"):
        sparse_variance_bound([[1.0]], 1)
    with pytest.raises(InvalidParameterError, match="nonzero vector of length p = 13"):
        relative_gap(np.zeros(13), spcakit.datasets.pitprops().matrix)


# -- one bound per component: on the covariance the previous loadings leave ------------------------------------
def _sparse_loadings(data, p: int) -> np.ndarray:
    r = data.draw(st.integers(1, min(4, p)))
    seed = data.draw(sps.seeds())
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((p, r))
    for j in range(r):
        k = data.draw(st.integers(1, p))
        x[rng.permutation(p)[k:], j] = 0.0
    return x


def _check_components(c: np.ndarray, x: np.ndarray, top_eigenvalue: float | None, gershgorin: bool | None = True) -> None:
    found = component_bounds(c, x, top_eigenvalue=top_eigenvalue, gershgorin=gershgorin)
    rounding = reference_rounding(c)  # lambda_max(C_t) <= lambda_max(C): the deflated references' rounding too
    for t in range(x.shape[1]):
        ct = left_by(c, x[:, :t])
        k = int(np.count_nonzero(x[:, t]))
        if k == 0:
            assert found.bound[t] == 0.0 and found.which[t] == "zero"
            continue
        unit = x[:, t] / np.linalg.norm(x[:, t])
        optimum = brute_force((ct + ct.T) / 2, k)
        assert found.bound[t] >= optimum - rounding, (t, found, optimum)
        assert found.achieved[t] == pytest.approx(float(unit @ ct @ unit), rel=1e-9, abs=1e-12 * np.abs(c).max())
        assert found.achieved[t] <= optimum * (1 + 1e-9) + 1e-12 * np.abs(c).max()
        assert 0.0 <= found.gap[t] <= 1.0, (t, found)


@pytest.mark.parametrize("family", sorted(FAMILIES))
@FAMILY_SETTINGS
@given(data=st.data())
def test_each_components_bound_is_never_below_the_optimum_left_by_the_previous_loadings(family, data):
    _, c = data.draw(FAMILIES[family], label="(kind, C)")
    top = data.draw(st.sampled_from([float(np.linalg.eigvalsh(c)[-1]), None]), label="top_eigenvalue")
    gershgorin = data.draw(st.sampled_from([True, None, False]), label="gershgorin")
    _check_components(c, _sparse_loadings(data, c.shape[0]), top, gershgorin)


@pytest.mark.parametrize("family", sorted(FAMILIES))
@EVERY_K_SETTINGS
@given(data=st.data())
def test_component_bounds_of_a_methods_loadings_hold_against_brute_force(family, data):
    """r = 2..3 loadings of a real method: each bound is above the best k_t-sparse variance of C_t (projection)."""
    _, c = data.draw(FAMILIES[family], label="(kind, C)")
    p = c.shape[0]
    method = data.draw(st.sampled_from(["greedy", "tpower", "spcart"]), label="method")
    r, k = data.draw(st.integers(2, min(3, p)), label="r"), data.draw(st.integers(1, p), label="k")
    try:
        result = spcakit.fit(spcakit.Covariance(c), method, r=r, k=k, metrics=[])
    except (InvalidParameterError, ZeroLoadingError) as exc:  # r above the rank: refused, with that reason
        if "rank" not in str(exc):
            raise
        reject()
    top = data.draw(st.sampled_from([float(np.linalg.eigvalsh(c)[-1]), None]), label="top_eigenvalue")
    gershgorin = data.draw(st.sampled_from([True, None, False]), label="gershgorin")
    _check_components(c, result.loadings, top, gershgorin)


@pytest.mark.parametrize("family", sorted(FAMILIES))
@FAMILY_SETTINGS
@given(data=st.data())
def test_the_top_eigenvalue_asked_for_only_when_it_can_be_the_least_gives_the_same_bounds(family, data):
    """A function for lambda_max(C) is called only when some loading's other bounds are not below a lower bound on
    it, and the bounds, gaps and names are exactly those of the value given outright; each lower bound is below
    lambda_max (a Rayleigh quotient), and the function is not called when the least other bound is below one."""
    from spcakit.analysis.bounds import spectrum_lower_bounds  # the rule the docstring describes

    _, c = data.draw(FAMILIES[family], label="(kind, C)")
    x = _sparse_loadings(data, c.shape[0])
    top = float(np.linalg.eigvalsh(c)[-1])
    calls = []
    given_outright = component_bounds(c, x, top_eigenvalue=top)
    lazy = component_bounds(c, x, top_eigenvalue=lambda: calls.append(1) or top)
    assert lazy == given_outright
    span = spcakit.analysis.metrics.loading_span(x, spcakit.numerics.operators.DenseCovariance(c))
    if span.independent:
        q, cq = span.full_q(), span.cq
        m = q.T @ cq
        lower = list(spectrum_lower_bounds(spcakit.numerics.operators.DenseCovariance(c), np.diag(c).copy(), cq, (m + m.T) / 2))
        assert all(value <= top * (1 + 1e-12) + reference_rounding(c) for value in lower), (lower, top)
        others = component_bounds(c, x, top_eigenvalue=None)
        least = max((b for b, w in zip(others.bound, others.which) if w != "zero"), default=None)
        if least is not None and least < max(lower) * (1 - 1e-6):  # settled by a lower bound, with room for rounding
            assert not calls
        if any(w == "eigenvalue" for w in given_outright.which):
            assert calls == [1]


def test_wide_data_asks_no_spectrum_when_a_power_step_settles_it():
    """Data of many more variables than samples: the sum of the k largest variances is below a power step's Rayleigh
    quotient, so the run's bound metrics take no Gram matrix of the rows (the spectrum), with the same bounds."""
    from spcakit.numerics.operators import GramCovariance

    rng = np.random.default_rng(5)
    x = rng.standard_normal((40, 4000))
    result = spcakit.fit(x, "tpower", r=3, k=20)
    calls = []
    original = GramCovariance._small_gram
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(GramCovariance, "_small_gram", lambda self: calls.append(1) or original(self))
        again = spcakit.fit(x, "tpower", r=3, k=20)
    assert not calls
    assert again.metrics["bound"] == result.metrics["bound"] and set(again.metrics) == set(result.metrics)
    centred = x - x.mean(axis=0)
    eigenvalue = float(np.linalg.eigvalsh(centred @ centred.T / 39)[-1])
    variances = np.sort(centred.var(axis=0, ddof=1))[::-1]
    assert result.metrics["bound"][0] == pytest.approx(variances[:20].sum(), rel=1e-9)  # the diagonal bound,
    assert result.metrics["bound"][0] < eigenvalue  # below lambda_max: the eigenvalue bound could not be the least


@pytest.mark.parametrize("kind", ["dense", "sparse", "dask"])
def test_the_lower_bounds_take_one_vector_product_with_every_kind_of_operator(kind):
    """The power step of the lower bounds multiplies one vector (shape (p,)): every operator kind takes it, and the
    bounds are those of the eigenvalue given outright."""
    import scipy.sparse as sparse

    rng = np.random.default_rng(0)
    x = rng.standard_normal((60, 300))
    if kind == "sparse":
        data = sparse.random(60, 300, density=0.1, format="csr", random_state=1)
    elif kind == "dask":
        da = pytest.importorskip("dask.array")
        data = da.from_array(x, chunks=(20, 300))
    else:
        data = x
    op = spcakit.as_problem(data).covariance
    loadings = np.zeros((300, 2))
    loadings[:5, 0], loadings[5:9, 1] = 1.0, 1.0
    top = float(np.linalg.eigvalsh(spcakit.numerics.operators.densify(op))[-1])
    assert component_bounds(op, loadings, top_eigenvalue=lambda: top) == component_bounds(op, loadings, top_eigenvalue=top)


def test_operators_keep_the_top_eigenvalue_a_direct_solver_found():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((30, 12))
    c = np.cov(x, rowvar=False)
    dense = spcakit.numerics.operators.DenseCovariance(c)
    assert dense.kept_top_eigenvalues(2) is None
    dense.top_eigenpairs(2)
    assert dense.kept_top_eigenvalues(2) == pytest.approx(np.linalg.eigvalsh(c)[::-1][:2], rel=1e-12)
    assert dense.kept_top_eigenvalues(3) is None  # only two were found
    problem = spcakit.as_problem(x)
    assert problem.covariance.kept_top_eigenvalues(1) is None
    problem.covariance.top_eigenpairs(3)
    assert problem.covariance.kept_top_eigenvalues(3) == pytest.approx(np.linalg.eigvalsh(c)[::-1][:3], rel=1e-10)


#: Found by the families above: tpower's loadings (r = 2, k = 2) on a rank-one 2 x 2 covariance; the second
#: loading's variance on what the first leaves (nothing) comes out -5.3e-19, its bound 4.9e-16, and its gap was once 1.0011.
RANK_ONE = (np.array([[0.02319674040936281, 0.05514969500354358], [0.05514969500354358, 0.13111707961159297]]),
            np.array([[0.3877136311009515, 0.7882054380161091], [0.9217798762494848, 0.6154122094026356]]))  # fmt: skip


def test_the_bounds_hold_when_the_previous_loadings_leave_nothing():
    c, x = RANK_ONE
    found = component_bounds(c, x, top_eigenvalue=float(np.linalg.eigvalsh(c)[-1]))
    assert found.bound[1] >= brute_force(left_by(c, x[:, :1]), 2) and found.bound[1] < 1e-15
    assert -1e-17 < found.achieved[1] < 0.0  # below 0 by rounding


def test_nothing_left_gives_a_gap_of_0_not_above_1():
    c, x = RANK_ONE  # the bound is within rounding of 0: every second loading is optimal
    assert component_bounds(c, x, top_eigenvalue=float(np.linalg.eigvalsh(c)[-1])).gap[1] == 0.0


def test_component_bounds_of_a_methods_loadings_on_pitprops():
    c = spcakit.datasets.pitprops().matrix
    result = spcakit.fit(spcakit.Covariance(c), "greedy", r=3, k=4)
    found = component_bounds(c, result.loadings, top_eigenvalue=float(np.linalg.eigvalsh(c)[-1]))
    assert found.gap[0] < 0.08 and found.bound[0] >= PITPROPS_OPTIMA[4]  # the first is the plain sparse eigenvalue
    for t in range(3):
        ct = left_by(c, result.loadings[:, :t])
        assert found.bound[t] >= brute_force(ct, int(np.count_nonzero(result.loadings[:, t])))
    # achieved = ||(I - P) x_t||^2 times the additional variance (Mackey's q_t = (I - P) x_t / ||(I - P) x_t||)
    _, triangle = np.linalg.qr(result.loadings)
    np.testing.assert_allclose(found.achieved, np.diag(triangle) ** 2 * result.metrics["additional_variance"], rtol=1e-9)


def test_a_zero_loading_gets_a_zero_bound_and_gap():
    c = np.diag([3.0, 2.0, 1.0])
    found = component_bounds(c, np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0]]))
    assert found.bound[1] == 0.0 and found.gap[1] == 0.0 and found.which[1] == "zero"
    assert found.gap[0] == pytest.approx(0.0, abs=1e-12)  # e_1 is optimal at k = 1 (the diagonal bound is exact)


def test_the_eigenvalue_bound_is_taken_only_from_a_direct_solver():
    from spcakit.inputs import as_problem
    from spcakit.analysis.metrics import MetricContext
    from spcakit.numerics.operators import DenseCovariance, GramCovariance, RankOneCorrected

    rng = np.random.default_rng(5)
    a = rng.standard_normal((40, 12))
    c = a.T @ a / 39
    x = np.linalg.qr(rng.standard_normal((12, 2)))[0]
    context = MetricContext(as_problem(c, covariance=True), x)
    assert context.exact_top_eigenvalues()[0] == pytest.approx(np.linalg.eigvalsh(c)[-1], rel=1e-12)
    # the policy's own choice: LAPACK for small explicit matrices and small Gram matrices, Lanczos beyond
    assert DenseCovariance(np.eye(3000)).direct_spectrum(10) is False and DenseCovariance(np.eye(3000)).direct_spectrum(200)
    assert GramCovariance(rng.standard_normal((50, 3000))).direct_spectrum(5)
    deflated = RankOneCorrected(DenseCovariance(np.eye(700)), np.eye(700)[:, 0], 1.0)
    assert deflated.direct_spectrum(3) is False and RankOneCorrected(DenseCovariance(c), x[:, 0], 1.0).direct_spectrum(3)

    class ProductsOnly:  # a third-party operator that does not say how its spectrum is found
        p = 12

        def matmat(self, v):
            return c @ v

        def diagonal(self):
            return np.diag(c).copy()

        def trace(self):
            return float(np.trace(c))

        def top_eigenpairs(self, r):
            values, vectors = np.linalg.eigh(c)
            return values[::-1][:r], vectors[:, ::-1][:, :r]

        def top_eigenvalues(self, r):
            return np.linalg.eigvalsh(c)[::-1][:r]

    problem = attrs.evolve(as_problem(c, covariance=True), covariance=ProductsOnly())
    assert MetricContext(problem, x).exact_top_eigenvalues() is None


@pytest.mark.parametrize("name", ["lymphoma_cov_500.npz", "nus_wide_2400x225.npz"])
def test_on_shared_data_no_method_reaches_above_any_methods_bound(load_shared, name):
    """The first loading's bound speaks of every loading with 10 nonzeros: no method's may exceed any method's bound."""
    arrays = load_shared(name)
    data = spcakit.Covariance(arrays["cov"]) if "cov" in arrays else arrays["X"]
    covariance = spcakit.as_problem(data).covariance
    variances, bounds = [], []
    for method in ("spcart", "tpower", "greedy"):
        result = spcakit.fit(data, method, r=2, k=10, metrics=["bound"])
        x = result.loadings[:, 0]
        assert np.count_nonzero(x) == 10, method
        variances.append(float(x @ covariance.matmat(x[:, None])[:, 0]))
        bounds.append(result.metrics["bound"][0])
    assert max(variances) <= min(bounds) * (1 + 1e-12), (variances, bounds)


@pytest.mark.parametrize("centred", [False, True])
def test_bounds_of_sparse_loadings_on_many_variables_read_the_diagonal_where_its_largest_can_be(centred, monkeypatch):
    """With few nonzero rows the diagonal bound looks at the loadings' rows and the k + |S| largest C_ii alone: the
    same bounds as from every row's projected diagonal. The case is the tight one: four loadings on the same three
    variables, the ones of largest variance, so that what the first three leave for the fourth lies wholly off them,
    on the variables of variance ranks 4 to 6."""
    from spcakit.analysis import bounds
    from spcakit.numerics.operators import GramCovariance

    rng = np.random.default_rng(5)
    a = rng.standard_normal((60, 400)) * rng.uniform(0.5, 2.0, 400) + (1.5 if centred else 0.0)
    rows = rng.choice(400, size=3, replace=False)
    a[:, rows] *= 10.0
    x = np.zeros((400, 4))
    x[rows, :3] = rng.standard_normal((3, 3))
    x[:, 3] = x[:, 0] + x[:, 1] - x[:, 2]  # adds no new direction
    op = GramCovariance(a, 59.0, mean=a.mean(axis=0) if centred else None)
    fast = component_bounds(op, x, gershgorin=False)
    assert isinstance(bounds._diagonal_candidates(op.diagonal(), x, 3), np.ndarray)  # the shortcut is taken
    monkeypatch.setattr(bounds, "_diagonal_candidates", lambda diagonal, basis, k: slice(None))
    every = component_bounds(op, x, gershgorin=False)
    assert fast.which == every.which == ("diagonal",) * 4
    np.testing.assert_array_equal(fast.bound, every.bound)
    np.testing.assert_array_equal(fast.gap, every.gap)
    left = np.sort(np.delete(op.diagonal(), rows))[::-1]
    assert fast.bound[3] == pytest.approx(left[:3].sum(), rel=1e-9)  # the three largest variances off the loadings


@SETTINGS
@given(st.integers(4, 30), st.integers(0, 5), st.integers(0, 2**32 - 1), st.data())
def test_the_diagonal_sums_are_those_of_the_projected_covariances(p, b, seed, data):
    # _diagonal_sums adds the projections up a basis column at a time; each loading's sum must be that of the k
    # largest entries (negative ones as 0) of diag((I - Q_j Q_j^T) C (I - Q_j Q_j^T)), formed explicitly
    from spcakit.analysis import bounds

    rng = np.random.default_rng(seed)
    a = rng.standard_normal((p + 3, p))
    c = a.T @ a
    b = min(b, p)
    q = np.linalg.qr(rng.standard_normal((p, b)))[0] if b else np.zeros((p, 0))
    r = data.draw(st.integers(1, 4))
    before = np.sort(np.array(data.draw(st.lists(st.integers(0, b), min_size=r, max_size=r))))
    nonzeros = np.array(data.draw(st.lists(st.integers(0, p), min_size=r, max_size=r)))
    sums = bounds._diagonal_sums(np.diag(c).copy(), q, c @ q, q.T @ c @ q, before, nonzeros)
    for t in range(r):
        projector = np.eye(p) - q[:, : before[t]] @ q[:, : before[t]].T
        diagonal = np.clip(np.diag(projector @ c @ projector), 0.0, None)
        expected = np.sort(diagonal)[::-1][: nonzeros[t]].sum()
        assert sums[t] == pytest.approx(expected, rel=1e-10, abs=1e-10 * np.trace(c))
