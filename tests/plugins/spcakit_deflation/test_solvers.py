r"""The rank-one solvers of the deflation library and the deflators in use.

* ``generalized_top`` solves the pencil :math:`(A_{SS}, B_{SS})`: it matches
  ``scipy.linalg.eigh(A, B)`` for positive definite ``B`` and handles the
  singular :math:`B = I - qq^\top` of generalized deflation;
* ``exhaustive`` is the exact optimum of
  :math:`\max x^\top A x` s.t. :math:`x^\top B x = 1`, :math:`\operatorname{card}(x) \le k`
  (checked against a brute force written here, independently of the library);
  ``greedy`` never beats it, and backward elimination never loses to forward-only;
* every deflator runs through :func:`spcakit.fit`, the CLI and ``compose``, on
  Pitprops (Mackey §4.1) and matrix-free on wide data.
"""

from __future__ import annotations

import itertools
import json
import tracemalloc

import numpy as np
import pytest
import scipy.linalg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spcakit
from spcakit.inputs.datasets import pitprops
from spcakit.core.errors import InvalidParameterError
from spcakit.analysis.metrics import compute_metrics
from spcakit.numerics.operators import DenseCovariance, GramCovariance
from spcakit.inputs.dense import covariance_problem, data_problem
from spcakit.core.records import CONSTRAINT, Carry
from spcakit.testing import strategies as sps
from spcakit_deflation.solvers import ENUMERATED_KEY, EXHAUSTIVE_LIMIT, generalized_top

SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DEFLATORS = (
    "hotelling",
    "projection",
    "schur",
    "orthogonalized-hotelling",
    "orthogonalized-projection",
    "generalized",
)


def solver(name: str, **params):
    return spcakit.get_registry().build("updater", {"name": name, **params})


def solve(name: str, problem, carry: Carry | None = None, **params) -> tuple[np.ndarray, float]:
    """One step of the solver as the driver takes it: ``init`` from the run's carry, then ``propose``."""
    carry = Carry() if carry is None else carry
    part = solver(name, **params)
    x0 = np.ones((problem.p, 1))
    state = part.init(problem, x0, carry)
    z, value, after = part.propose(problem, x0, state)
    assert z.shape == (problem.p, 1)
    if name == "exhaustive":  # the carry and the optimum it found, raised for rounding (for the `enumerated` stopper)
        assert [entry for entry in after.entries if entry[0] != ENUMERATED_KEY] == list(state.entries)
        assert after.get(ENUMERATED_KEY) >= float(value) and after.get(ENUMERATED_KEY) == pytest.approx(float(value))
    else:
        assert after is state  # the solvers' state is the carry, read and passed on unchanged
    return z[:, 0], float(value)


# -- generalized_top ------------------------------------------------------------------------------
@st.composite
def symmetric_and_pd(draw):
    a = draw(sps.psd_matrices((1, 8)))
    p = a.shape[0]
    rng = np.random.default_rng(draw(sps.seeds()))
    a = a - draw(st.floats(0.0, 2.0)) * np.eye(p) * float(np.abs(a).max())  # indefinite too
    g = rng.standard_normal((p, p))
    b = g @ g.T / p + rng.uniform(0.05, 1.0) * np.eye(p)
    b /= np.linalg.eigvalsh(b)[-1]  # eigenvalues in (0, 1], like a constraint B_SS
    return (a + a.T) / 2, (b + b.T) / 2


@SETTINGS
@given(symmetric_and_pd())
def test_generalized_top_matches_scipy_for_positive_definite_b(pair):
    a, b = pair
    value, y = generalized_top(a, b)
    ref_values, ref_vectors = scipy.linalg.eigh(a, b)
    scale = max(float(np.abs(a).max()), 1e-300) * np.linalg.cond(b)
    assert value == pytest.approx(float(ref_values[-1]), abs=1e-9 * scale)
    assert float(y @ b @ y) == pytest.approx(1.0, abs=1e-9 * np.linalg.cond(b))
    np.testing.assert_allclose(a @ y, value * (b @ y), atol=1e-8 * scale * max(1.0, np.abs(y).max()))
    assert float(y @ a @ y) == pytest.approx(value, abs=1e-9 * scale)


@SETTINGS
@given(sps.psd_matrices((2, 10)), sps.seeds(), st.data())
def test_generalized_top_on_a_singular_projection_constraint(a0, seed, data):
    p = a0.shape[0]
    q = np.random.default_rng(seed).standard_normal(p)
    q /= np.linalg.norm(q)
    b = np.eye(p) - np.outer(q, q)  # singular: B q = 0
    a = b @ a0 @ b
    scale = float(np.abs(a0).max()) * p
    value, y = generalized_top(a, b)
    assert float(y @ b @ y) == pytest.approx(1.0, abs=1e-9)
    assert float(y @ a @ y) == pytest.approx(value, abs=1e-9 * scale)
    # max x^T B A0 B x s.t. ||Bx|| = 1 is the top eigenvalue of B A0 B
    assert value == pytest.approx(float(np.linalg.eigvalsh(a)[-1]), abs=1e-9 * scale)
    # on a support S: the best of x^T A x over x on S with x^T B x = 1 (the pencil (A_SS, B_SS))
    support = np.sort(data.draw(st.lists(st.integers(0, p - 1), min_size=1, max_size=p, unique=True)))
    a_ss, b_ss = a[np.ix_(support, support)], b[np.ix_(support, support)]
    value_s, y_s = generalized_top(a_ss, b_ss)
    expected = brute_value(a0, np.eye(p) - b, support)
    assert value_s == pytest.approx(expected, abs=1e-9 * scale)
    if expected > 0:
        assert float(y_s @ b_ss @ y_s) == pytest.approx(1.0, abs=1e-9)
        assert float(y_s @ a_ss @ y_s) == pytest.approx(value_s, abs=1e-9 * scale)


def test_generalized_top_of_an_explained_support_is_zero():
    # B_SS = 0: the support lies in span(Q) and carries no more variance
    value, y = generalized_top(np.zeros((1, 1)), np.zeros((1, 1)))
    assert value == 0.0 and np.array_equal(y, np.zeros(1))


# -- a brute force independent of the library -------------------------------------------------
def brute_value(a0: np.ndarray, qq: np.ndarray, support) -> float:
    r"""max (Bx)^T A0 (Bx) over x on ``support`` with ||Bx|| = 1, B = I - qq (qq = QQ^T).

    :math:`\{Bx : \operatorname{supp} x \subseteq S\}` is the range of :math:`B_{:,S}`:
    its top Rayleigh quotient of :math:`A_0` is the value. ``B`` is a projection
    (singular values 0 or 1): directions with :math:`\|Bx\| \le 10^{-5}\|x\|`
    (:math:`x^\top Bx \le 10^{-10}`, the solvers' cut-off) count as already explained,
    since rounding decides their direction.
    """
    p = a0.shape[0]
    b = np.eye(p) - qq
    u, sing, _ = np.linalg.svd(b[:, list(support)], full_matrices=False)
    basis = u[:, sing > 1e-5]
    if basis.shape[1] == 0:
        return 0.0
    return float(np.linalg.eigvalsh(basis.T @ a0 @ basis)[-1])


@st.composite
def small_problems(draw, p_range=(2, 9), constrained: bool | None = None):
    """A covariance problem with p <= 9, maybe after 1-2 rounds of generalized deflation, its carry, and k."""
    a0 = draw(sps.psd_matrices(p_range, ridge=True))
    p = a0.shape[0]
    problem = covariance_problem(a0)
    carry = Carry()
    rounds = draw(st.integers(0, min(2, p - 1))) if constrained is None else (min(2, p - 1) if constrained else 0)
    rng = np.random.default_rng(draw(sps.seeds()))
    loadings = []
    for _ in range(rounds):
        x = np.zeros(p)
        support = rng.choice(p, size=draw(st.integers(1, p)), replace=False)
        x[support] = rng.standard_normal(support.size)
        x /= np.linalg.norm(x)
        loadings.append(x)
        problem, carry = spcakit.get_registry().build("deflator", "generalized")(
            problem, x, np.column_stack(loadings), carry
        )
    k = draw(st.integers(1, p))
    return a0, problem, carry, k


def constraint_projector(problem, carry: Carry) -> np.ndarray:
    """QQ^T of the constraint B = I - QQ^T that generalized deflation carries (zero when it carries none)."""
    q = carry.get(CONSTRAINT)
    return np.zeros((problem.p, problem.p)) if q is None else q @ q.T


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_problems())
def test_exhaustive_is_optimal(case):
    a0, problem, carry, k = case
    p = problem.p
    qq = constraint_projector(problem, carry)
    scale = float(np.abs(a0).max()) * p
    z, value = solve("exhaustive", problem, carry, k=k)
    brute = {s: brute_value(a0, qq, s) for j in range(1, k + 1) for s in itertools.combinations(range(p), j)}
    best = max(brute.values())
    assert value >= best - 1e-9 * scale, "exhaustive missed a better support"
    assert value == pytest.approx(best, abs=1e-9 * scale)
    # the loading is k-sparse, unit, and attains the value: (z^T A z) / (z^T B z)
    assert np.count_nonzero(z) <= k
    assert np.linalg.norm(z) == pytest.approx(1.0)
    b = np.eye(p) - qq
    a = problem.covariance.matmat(np.eye(p))
    if value > 1e-9 * scale:
        assert float(z @ a @ z) / float(z @ b @ z) == pytest.approx(value, rel=1e-8, abs=1e-9 * scale)
    # greedy (forward, and with backward elimination) never beats the optimum
    for backward in (False, True):
        zg, greedy_value = solve("greedy", problem, carry, k=k, backward=backward)
        assert greedy_value <= value + 1e-9 * scale
        assert np.count_nonzero(zg) <= k
        support = tuple(np.flatnonzero(zg))
        assert greedy_value == pytest.approx(brute_value(a0, qq, support), abs=1e-9 * scale)


@SETTINGS
@given(small_problems(p_range=(2, 12)))
def test_greedy_with_backward_elimination_is_at_least_forward_only(case):
    a0, problem, carry, k = case
    scale = float(np.abs(a0).max()) * problem.p
    _, forward = solve("greedy", problem, carry, k=k)
    _, both = solve("greedy", problem, carry, k=k, backward=True)
    assert both >= forward - 1e-12 * scale


#: A 6 x 6 correlation matrix (found by the tied-matrix invariance test) on which, with the generalized deflation,
#: the second round's backward elimination may remove any variable of the first loading at the same value.
TIED_REMOVALS = np.array([
    [1.0, -0.07515586, 0.05752669, 0.22467437, 0.06059602, -0.18773037],
    [-0.07515586, 1.0, 0.14454863, 0.05240504, 0.00436593, -0.09892952],
    [0.05752669, 0.14454863, 1.0, 0.15465173, -0.20764712, -0.13596393],
    [0.22467437, 0.05240504, 0.15465173, 1.0, -0.25077961, 0.04492706],
    [0.06059602, 0.00436593, -0.20764712, -0.25077961, 1.0, 0.03455982],
    [-0.18773037, -0.09892952, -0.13596393, 0.04492706, 0.03455982, 1.0],
])


@pytest.mark.parametrize("permutation", [[0, 1, 3, 2, 4, 5], [5, 4, 3, 2, 1, 0], [2, 0, 4, 1, 5, 3]])
def test_greedy_backward_breaks_tied_removals_by_the_values(permutation):
    """Removals tied on the value go to the loading most outside the earlier span: the same supports in any order
    (before, the smaller index won, and the swap refiner then reached 0.443559 or 0.443749 by the order)."""
    perm = np.asarray(permutation)
    runs = []
    for matrix, order in ((TIED_REMOVALS, np.arange(6)), (TIED_REMOVALS[np.ix_(perm, perm)], perm)):
        result = spcakit.fit(matrix, "greedy", r=2, k=5, covariance=True, backward=True, refiner="swap")
        loadings = np.empty_like(result.loadings)
        loadings[order] = result.loadings
        runs.append((loadings, result.metrics["cpev"]))
    np.testing.assert_array_equal(runs[0][0] != 0, runs[1][0] != 0)
    assert runs[1][1] == pytest.approx(runs[0][1], abs=1e-12)
    assert runs[0][1] == pytest.approx(0.4437493, abs=1e-7)  # the swap refiner's end from the loading kept


def test_greedy_and_exhaustive_with_k_equal_p_give_the_top_eigenvalue():
    a0 = pitprops().matrix
    problem = covariance_problem(a0)
    top = float(np.linalg.eigvalsh(a0)[-1])
    for name in ("greedy", "exhaustive"):
        z, value = solve(name, problem, k=problem.p)
        assert value == pytest.approx(top, rel=1e-12)
        assert float(z @ a0 @ z) == pytest.approx(top, rel=1e-12)


# -- parameter errors ----------------------------------------------------------------------------
def test_exhaustive_refuses_large_problems():
    problem = covariance_problem(np.eye(40))
    with pytest.raises(InvalidParameterError, match="limit") as info:
        solve("exhaustive", problem, k=20)
    assert f"{EXHAUSTIVE_LIMIT:,}" in str(info.value)
    with pytest.raises(InvalidParameterError, match="limit"):
        spcakit.fit(spcakit.Covariance(np.eye(40)), "exhaustive", r=1, k=20)


@pytest.mark.parametrize("method", ["greedy", "exhaustive"])
def test_greedy_and_exhaustive_need_k_and_fit_gives_the_default(method):
    c = spcakit.Covariance(pitprops().matrix)
    result = spcakit.fit(c, method, r=1)  # no k: spcakit.workflows.configure.default_k, ceil(sqrt(13)) = 4
    assert result.spec["default_k"] == {"k": 4, "rule": "ceil(sqrt(p))"} and result.spec["updater"]["k"] == 4
    assert np.count_nonzero(result.loadings) == 4
    with pytest.raises(InvalidParameterError, match="cardinality"):
        solve(method, covariance_problem(np.eye(3)))


@pytest.mark.parametrize("method", ["greedy", "exhaustive"])
@pytest.mark.parametrize("k", [0, -1, 14, 100, 2.5, True, "3"])
def test_k_out_of_range_is_refused(method, k):
    c = spcakit.Covariance(pitprops().matrix)  # p = 13
    with pytest.raises(InvalidParameterError, match=r"k must be an integer in \[1, 13\]"):
        spcakit.fit(c, method, r=1, k=k)


def test_greedy_backward_must_be_a_boolean():
    with pytest.raises(InvalidParameterError, match="backward"):
        solver("greedy", k=2, backward="yes")


# -- Pitprops through spcakit.fit (Mackey §4.1) -------------------------------------------------
@pytest.fixture(scope="module")
def pitprops_cov():
    return spcakit.Covariance(pitprops().matrix, feature_names=pitprops().feature_names)


@pytest.fixture(scope="module")
def greedy_runs(pitprops_cov):
    return {d: spcakit.fit(pitprops_cov, "greedy", r=6, k=4, deflator=d) for d in DEFLATORS}


def test_pitprops_greedy_loadings_have_cardinality_4_for_every_deflator(greedy_runs):
    for d, result in greedy_runs.items():
        assert result.loadings.shape == (13, 6), d
        assert result.metrics["pattern"] == [4] * 6, d
        assert result.spec["deflator"]["name"] == d
        np.testing.assert_allclose(np.linalg.norm(result.loadings, axis=0), 1.0, atol=1e-12)


def test_pitprops_first_component_is_the_exhaustive_optimum_for_every_deflator(greedy_runs, pitprops_cov):
    exhaustive = spcakit.fit(pitprops_cov, "exhaustive", r=1, k=4)
    optimum = exhaustive.metrics["additional_variance"][0]
    # the paper prints 2.938; the published 3-decimal correlation matrix gives 2.93748
    assert optimum == pytest.approx(2.938, abs=1e-3)
    firsts = {d: r.metrics["additional_variance"][0] for d, r in greedy_runs.items()}
    for d, value in firsts.items():
        assert value == pytest.approx(firsts["generalized"], abs=1e-12), d
        assert value == pytest.approx(optimum, abs=1e-10), d
        np.testing.assert_array_equal(greedy_runs[d].loadings[:, 0] != 0, exhaustive.loadings[:, 0] != 0)


def test_pitprops_cumulative_variance_is_nondecreasing_and_ends_at_cpev(greedy_runs):
    for d, result in greedy_runs.items():
        cumulative = np.asarray(result.metrics["cumulative_variance"])
        additional = np.asarray(result.metrics["additional_variance"])
        assert cumulative.shape == (6,) and additional.shape == (6,)
        assert np.all(np.diff(cumulative) >= -1e-12), d
        assert np.all(additional >= -1e-12), d
        assert cumulative[-1] == pytest.approx(result.metrics["cpev"], abs=1e-10), d
        np.testing.assert_allclose(cumulative, np.cumsum(additional) / 13.0, atol=1e-12)  # tr C = 13


def test_pitprops_generalized_deflation_explains_the_most_variance(greedy_runs):
    # Alg. 1 maximises the additional variance on every round; with greedy it wins on Pitprops (Table 2)
    best = greedy_runs["generalized"].metrics["cpev"]
    for d, result in greedy_runs.items():
        assert result.metrics["cpev"] <= best + 1e-12, d


@pytest.mark.parametrize("deflator", DEFLATORS)
def test_tpower_with_cardinality_k_runs_with_every_deflator(pitprops_cov, deflator):
    result = spcakit.fit(pitprops_cov, "tpower", r=6, k=4, deflator=deflator, metrics="all")
    assert result.metrics["pattern"] == [4] * 6
    assert result.spec["deflator"]["name"] == deflator
    assert result.spec["truncator"]["k"] == 4
    cumulative = result.metrics["cumulative_variance"]
    assert np.all(np.diff(cumulative) >= -1e-12)
    assert cumulative[-1] == pytest.approx(result.metrics["cpev"], abs=1e-10)


def test_composed_power_energy_schur_runs(pitprops_cov):
    spec = spcakit.compose(driver="deflation", updater="power", truncator="energy", deflator="schur")
    assert spec.deflator.name == "schur" and spec.truncator.name == "energy"
    result = spcakit.fit(pitprops_cov, spec, r=3)
    assert result.spec["deflator"]["name"] == "schur"
    assert result.loadings.shape == (13, 3)
    np.testing.assert_allclose(np.linalg.norm(result.loadings, axis=0), 1.0, atol=1e-12)
    assert all(0 < n < 13 for n in result.metrics["pattern"])  # energy truncation zeroed something
    # no 3-dimensional subspace explains more than the top 3 eigenvalues (Ky Fan)
    top3 = float(np.sum(np.linalg.eigvalsh(pitprops().matrix)[-3:])) / 13.0
    assert 0 < result.metrics["cpev"] <= top3 + 1e-12


# -- the CLI ---------------------------------------------------------------------------------------


def ok(cli, *args: str):
    result = cli.invoke(*args)
    assert result.exit_code == 0, f"exit {result.exit_code}\n{result.output}\n{result.exception!r}"
    return result


def cli_json(cli, *args: str) -> dict:
    return json.loads(ok(cli, *args, "--json").stdout)


def test_cli_rsvd_gp_with_schur_deflation(cli):
    assert ok(cli, "run", "rsvd-gp", "--deflator", "schur", "-r", "3").stdout.strip()
    doc = cli_json(cli, "run", "rsvd-gp", "--deflator", "schur", "-r", "3")
    assert doc["spec"]["deflator"]["name"] == "schur"
    assert np.asarray(doc["loadings"]).shape == (13, 3)


def test_cli_tpower_with_generalized_deflation_and_k(cli):
    doc = cli_json(cli, "run", "tpower", "--deflator", "generalized", "--param", "k=3", "-r", "3")
    assert doc["spec"]["deflator"]["name"] == "generalized"
    assert doc["metrics"]["pattern"] == [3, 3, 3]


def test_cli_greedy_reports_additional_and_cumulative_variance(cli, greedy_runs):
    doc = cli_json(cli, "run", "greedy", "--param", "k=4", "-r", "6")
    metrics = doc["metrics"]
    assert len(metrics["additional_variance"]) == 6
    assert len(metrics["cumulative_variance"]) == 6
    assert metrics["pattern"] == [4] * 6
    # the same run as the API's (greedy's default deflator is generalized)
    expected = greedy_runs["generalized"].metrics
    np.testing.assert_allclose(metrics["additional_variance"], expected["additional_variance"], atol=1e-12)
    np.testing.assert_allclose(metrics["cumulative_variance"], expected["cumulative_variance"], atol=1e-12)


def test_cli_compose_power_energy_schur(cli):
    ok(cli, "compose", "--driver", "deflation", "--updater", "power", "--truncator", "energy", "--deflator", "schur")
    doc = cli_json(cli, "compose", "--driver", "deflation", "--updater", "power", "--truncator", "energy", "--deflator", "schur")
    assert doc["spec"]["deflator"]["name"] == "schur"
    assert doc["spec"]["truncator"]["name"] == "energy"


# -- matrix-free ------------------------------------------------------------------------------------
WIDE_P = 3000
#: 1/20 of a dense p x p float64 matrix (3.6 MB for p = 3000)
PEAK_LIMIT = 8 * WIDE_P * WIDE_P / 20


def traced(fn):
    tracemalloc.start()
    try:
        out = fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < PEAK_LIMIT, f"peak {peak / 1e6:.1f} MB suggests a p x p allocation"
    return out


@pytest.fixture(scope="module")
def wide_data():
    return np.random.default_rng(0).standard_normal((30, WIDE_P))


@pytest.fixture(scope="module")
def wide_greedy_first(wide_data):
    """The first greedy component on wide data (the same for every deflator), fitted under tracemalloc."""
    result = traced(lambda: spcakit.fit(wide_data, "greedy", r=1, k=5))
    assert result.metrics["pattern"] == [5]
    return result.loadings[:, 0]


@pytest.mark.slow
@pytest.mark.parametrize("deflator", DEFLATORS)
def test_wide_data_greedy_with_every_deflator_never_forms_the_covariance(wide_data, wide_greedy_first, deflator):
    # the deflation driver's second round, part by part (round one is shared): deflate, solve, score
    problem = data_problem(wide_data)
    assert isinstance(problem.covariance, GramCovariance)
    x1 = wide_greedy_first
    deflate = spcakit.get_registry().build("deflator", deflator)
    greedy = solver("greedy", k=5)

    def second_round():
        deflated, carry = deflate(problem, x1, x1[:, None], Carry())
        z, value, _ = greedy.propose(deflated, x1[:, None], greedy.init(deflated, x1[:, None], carry))
        x2 = z[:, 0] / np.linalg.norm(z)
        loadings = np.column_stack([x1, x2])
        return deflated, x2, float(value), compute_metrics(problem, loadings, spcakit.get_registry().metrics())

    deflated, x2, value, metrics = traced(second_round)
    assert not isinstance(deflated.covariance, DenseCovariance)
    assert np.count_nonzero(x2) == 5 and metrics["pattern"] == [5, 5]
    assert value > 0 and np.isfinite(value)
    assert metrics["cumulative_variance"][1] >= metrics["cumulative_variance"][0]
    if deflator == "generalized":  # Alg. 1's rank-one value is the additional variance itself
        assert metrics["additional_variance"][1] == pytest.approx(value, rel=1e-8)


@pytest.mark.parametrize("deflator", DEFLATORS)
def test_wide_data_tpower_with_every_deflator_never_forms_the_covariance(wide_data, deflator):
    result = traced(lambda: spcakit.fit(wide_data, "tpower", r=3, k=5, deflator=deflator))
    assert result.loadings.shape == (WIDE_P, 3)
    assert result.metrics["pattern"] == [5] * 3
    assert result.spec["deflator"]["name"] == deflator


def test_exhaustive_reports_its_optimum_as_the_bound_of_the_first_loading():
    """Every support enumerated: the reason says optimal and the first bound is the optimum it found (never below
    brute force), so the first loading's gap is 0 under any deflation; the later bounds are those of the loadings
    together, the same with the optimum given by hand."""
    from spcakit.analysis.certificate import cumulative_bounds
    from spcakit.testing import brute_force_optimum

    rng = np.random.default_rng(7)
    x = rng.standard_normal((9, 11)) * np.linspace(2.0, 0.5, 11)
    c = x.T @ x / 9
    optimum = brute_force_optimum(c, 3)[0]
    for deflator in ("generalized", "projection"):
        result = spcakit.fit(c, "exhaustive", r=3, k=3, covariance=True, deflator=deflator)
        assert result.stopping_reason.startswith("optimal (every support enumerated)") and not result.warnings
        assert result.metrics["bound"][0] == pytest.approx(optimum, rel=1e-12) and result.metrics["bound"][0] >= optimum
        assert result.metrics["gap"][0] == pytest.approx(0.0, abs=1e-12)
        by_hand = cumulative_bounds(c, result.loadings, top_eigenvalues=np.linalg.eigvalsh(c)[::-1], first=optimum)
        assert result.metrics["bound"] == pytest.approx(list(by_hand.bound), rel=1e-12)
        assert np.all(np.array(result.metrics["bound"]) >= np.cumsum(result.metrics["additional_variance"]))
