"""Criteria and bounds of :mod:`spcakit.analysis.metrics` on hand-computed examples and random inputs.

Reference numbers come from the SPCArt paper (Hu, Pan, Wang & Wu), Table 4
(Pitprops, p = 13): the loading patterns (nonzeros per loading) determine
NZ and STD, which the paper prints to four decimals.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import spcakit
from spcakit.analysis import metrics
from spcakit.numerics.operators import DenseCovariance, GramCovariance
from spcakit.core.plugins import get_registry
from spcakit_spcart import bounds as spcart_bounds
from spcakit.inputs.problem import Problem, default_feature_names
from spcakit.testing import strategies as sps

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def with_pattern(pattern: list[int], p: int, seed: int = 0) -> np.ndarray:
    """Loadings with the given number of nonzeros per column, at random rows, nonzero values."""
    rng = np.random.default_rng(seed)
    x = np.zeros((p, len(pattern)))
    for j, k in enumerate(pattern):
        x[rng.choice(p, size=k, replace=False), j] = rng.uniform(0.1, 1.0, k) * rng.choice([-1, 1], k)
    return x


# -- sparsity criteria (Table 4) -----------------------------------------------------------------
TABLE4 = [  # (algorithm, NZ, loading pattern, STD) from the paper's Table 4, Pitprops, p = 13
    ("ALSPCA", 17, [7, 2, 2, 2, 1, 3], 0.1644),
    ("GPower T-l0", 19, [7, 1, 2, 1, 6, 2], 0.2030),
    ("rSVD-GP T-l0", 17, [6, 1, 2, 4, 2, 2], 0.1411),
    ("GPowerB T-l0", 17, [7, 2, 4, 1, 1, 2], 0.1782),
    ("rSVD-GPB T-l0", 18, [5, 3, 4, 1, 3, 2], 0.1088),
    ("SPCArt T-l0", 18, [4, 2, 4, 3, 3, 2], 0.0688),
    ("SPCArt T-sp", 18, [3, 3, 3, 3, 3, 3], 0.0),
]



def all_metrics(x: np.ndarray, covariance) -> dict:
    """Every registered metric of loadings ``x`` on ``covariance``, as ``spcakit.fit`` computes them."""
    problem = Problem(covariance, default_feature_names(covariance.p))
    return metrics.compute_metrics(problem, x, get_registry().metrics())

@pytest.mark.parametrize(("algorithm", "nz", "pattern", "std"), TABLE4, ids=[row[0] for row in TABLE4])
def test_table4_patterns_give_the_published_nz_and_std(algorithm, nz, pattern, std):
    x = with_pattern(pattern, 13)
    c = DenseCovariance(np.eye(13))
    values = all_metrics(x, c)
    assert values["pattern"] == pattern == metrics.pattern(x)
    assert values["nz"] == nz == sum(pattern)
    assert values["std"] == pytest.approx(std, abs=5e-5)  # the paper rounds to 4 decimals (ddof=1)
    assert values["sp"] == pytest.approx(1 - nz / (13 * 6))
    assert values["worst_sp"] == pytest.approx(1 - max(pattern) / 13)


def test_std_uses_the_sample_standard_deviation():
    # SPCArt T-l0 row: sparsities 1 - (4,2,4,3,3,2)/13; deviations from the mean nnz 3 are (1,-1,1,0,0,-1)
    x = with_pattern([4, 2, 4, 3, 3, 2], 13)
    assert metrics.sparsity_std(x) == pytest.approx(math.sqrt(4 / 5) / 13)  # ddof=1; ddof=0 gives sqrt(4/6)/13
    assert metrics.sparsity_std(x[:, :1]) == 0.0


def test_sparsity_criteria_on_a_small_example():
    x = np.array([[1.0, 0.5], [0.0, -0.5], [0.0, 0.5], [0.0, 0.0]])
    np.testing.assert_allclose(metrics.sparsity(x), [0.75, 0.25])
    values = all_metrics(x, DenseCovariance(np.eye(4)))
    assert values["sp"] == pytest.approx(0.5)
    assert values["worst_sp"] == pytest.approx(0.25)
    assert values["std"] == pytest.approx(math.sqrt(0.125))
    assert values["nz"] == 4 and values["pattern"] == [1, 3]


# -- NOR, EV, CPEV ------------------------------------------------------------------------
def test_nonorthogonality_on_small_examples():
    e1, e2 = np.eye(3)[:, 0], np.eye(3)[:, 1]
    assert metrics.nonorthogonality(np.column_stack([e1, e1 + e2])) == pytest.approx(1 / math.sqrt(2))
    three = np.column_stack([e1, e2, e1 + e2])
    assert metrics.nonorthogonality(three) == pytest.approx(2 * (0 + 2 / math.sqrt(2)) / 6)
    assert metrics.nonorthogonality(np.eye(3)) == 0.0
    assert metrics.nonorthogonality(e1[:, None]) == 0.0


def test_ev_and_cpev_on_small_examples():
    c = DenseCovariance(np.diag([3.0, 2.0, 1.0]))
    e1, e2, e3 = np.eye(3).T
    x = np.column_stack([e1, (e2 + e3) / math.sqrt(2)])
    assert metrics.explained_variance(x, c) == pytest.approx(3 + 1.5)
    assert metrics.cpev(x, c) == pytest.approx(4.5 / 6)
    # CPEV uses the span: [e1, e1 + e2] spans {e1, e2}; EV uses the vectors as they are
    y = np.column_stack([e1, e1 + e2])
    assert metrics.cpev(y, c) == pytest.approx(5 / 6)
    assert metrics.explained_variance(y, c) == pytest.approx(3 + 5)
    # a repeated direction adds nothing to the span
    assert metrics.cpev(np.column_stack([e1, 2 * e1]), c) == pytest.approx(3 / 6)


@st.composite
def loadings_and_covariance(draw):
    c = draw(sps.psd_matrices((2, 15), ridge=True))
    p = c.shape[0]
    r = draw(st.integers(1, min(4, p)))
    rng = np.random.default_rng(draw(sps.seeds()))
    x = rng.standard_normal((p, r))
    x[rng.random((p, r)) < 0.4] = 0.0
    assume(np.linalg.matrix_rank(x) == r)
    return x, c, rng


@SETTINGS
@given(loadings_and_covariance())
def test_cpev_is_invariant_to_column_scaling_and_rotation(case):
    x, c, rng = case
    op = DenseCovariance(c)
    r = x.shape[1]
    base = metrics.cpev(x, op)
    scales = rng.uniform(0.1, 10.0, r) * rng.choice([-1.0, 1.0], r)
    rotation, _ = np.linalg.qr(rng.standard_normal((r, r)))
    mixing = rng.standard_normal((r, r)) + 3 * np.eye(r)  # any invertible change of basis
    for y in (x * scales, x @ rotation, x @ mixing):
        assert metrics.cpev(y, op) == pytest.approx(base, rel=1e-7, abs=1e-12)
    # bounded by the top-r eigenvalues (Ky Fan): CPEV(X) <= CPEV(V)
    top = np.linalg.eigvalsh(c)[::-1][:r].sum() / np.trace(c)
    assert 0.0 <= base <= top + 1e-9
    # NOR is invariant to column scaling and sign flips, and in [0, 1]
    assert metrics.nonorthogonality(x * scales) == pytest.approx(metrics.nonorthogonality(x), abs=1e-12)
    assert 0.0 <= metrics.nonorthogonality(x) <= 1.0 + 1e-12


@SETTINGS
@given(sps.data_matrices((3, 30), (2, 15)), sps.seeds())
def test_metrics_agree_between_data_and_covariance_operators(a, seed):
    a = a - a.mean(axis=0)
    gram = GramCovariance(a, a.shape[0] - 1.0)
    dense = DenseCovariance(a.T @ a / (a.shape[0] - 1.0))
    x = np.random.default_rng(seed).standard_normal((a.shape[1], 2 if a.shape[1] > 1 else 1))
    left, right = all_metrics(x, gram), all_metrics(x, dense)
    assert list(left) == list(right) == [m.name for m in get_registry().metrics()]
    for key in left:
        if key in ("bound", "gap"):
            continue  # the explicit covariance also gives Gershgorin's bound: tighter, on the same achieved values
        assert left[key] == pytest.approx(right[key], rel=1e-9, abs=1e-12)
    achieved = [np.asarray(m["bound"]) * (1 - np.asarray(m["gap"])) for m in (left, right)]
    np.testing.assert_allclose(achieved[0], achieved[1], rtol=1e-9, atol=1e-12)
    assert np.all(np.asarray(right["bound"]) <= np.asarray(left["bound"]) * (1 + 1e-9) + 1e-12)


# -- Theorem 12 ----------------------------------------------------------------------------
# EV(X) = tr(X'CX) >= tr(X'V L V'X) (C - V L V' is PSD) = tr(L^(1/2) V'XX'V L^(1/2))
#       >= lambda_min(V'XX'V) tr(L) = d_min^2 EV(V),
# with L the top-r eigenvalues: the bound holds for any X, orthonormal or not (the paper says
# "Theorem 12 applies to any matrix X"), so it is asserted for random X with unit columns and for
# arbitrary column lengths alike.
@SETTINGS
@given(sps.psd_matrices((2, 15)), sps.seeds(), st.booleans())
def test_theorem12_lower_bound_holds_for_any_x(c, seed, unit_columns):
    p = c.shape[0]
    rng = np.random.default_rng(seed)
    r = int(rng.integers(1, min(4, p) + 1))
    values, vectors = np.linalg.eigh(c)
    v, ev_v = vectors[:, ::-1][:, :r], float(values[::-1][:r].sum())
    x = rng.standard_normal((p, r))
    x[rng.random((p, r)) < 0.5] = 0.0
    x[rng.integers(p), :] += 1.0  # no zero column
    x = x / np.linalg.norm(x, axis=0) if unit_columns else x * rng.uniform(0.1, 3.0, r)
    op = DenseCovariance(c)
    bound = spcart_bounds.ev_dmin(x, v, ev_v)
    assert bound <= metrics.explained_variance(x, op) + 1e-9 * max(1.0, ev_v)
    # d_min^2 is the smallest eigenvalue of V'XX'V
    d_min2 = np.linalg.eigvalsh(v.T @ x @ x.T @ v)[0]
    assert bound == pytest.approx(max(d_min2, 0.0) * ev_v, rel=1e-7, abs=1e-9 * max(1.0, ev_v))


@SETTINGS
@given(sps.psd_matrices((2, 15)), sps.seeds())
def test_theorem12_is_tight_for_rotations_of_the_pca_loadings(c, seed):
    p = c.shape[0]
    rng = np.random.default_rng(seed)
    r = int(rng.integers(1, p + 1))
    values, vectors = np.linalg.eigh(c)
    v, ev_v = vectors[:, ::-1][:, :r], float(values[::-1][:r].sum())
    rotation, _ = np.linalg.qr(rng.standard_normal((r, r)))
    x = v @ rotation
    assert spcart_bounds.ev_dmin(x, v, ev_v) == pytest.approx(ev_v, rel=1e-9, abs=1e-12)
    assert metrics.explained_variance(x, DenseCovariance(c)) == pytest.approx(ev_v, rel=1e-9, abs=1e-12)


def test_theorem13_bound_formula():
    assert spcart_bounds.ev_cos(0.0, 5, 7.0) == pytest.approx(7.0)
    assert spcart_bounds.ev_cos(0.3, 1, 2.0) == pytest.approx(math.cos(0.3) ** 2 * 2.0)
    theta = 0.1
    assert spcart_bounds.ev_cos(theta, 4, 1.0) == pytest.approx(math.cos(theta) ** 2 - math.sqrt(3) * math.sin(2 * theta))
    assert spcart_bounds.ev_cos(theta, 9, 1.0) < spcart_bounds.ev_cos(theta, 4, 1.0) < spcart_bounds.ev_cos(theta, 1, 1.0)


# -- angles and the bounds of Props. 6-11 ---------------------------------------------------------
@SETTINGS
@given(st.integers(2, 20).flatmap(lambda p: st.tuples(sps.dense_vectors(p), sps.dense_vectors(p))), st.floats(0.01, 100.0))
def test_deviation_is_the_sine_of_the_angle_between_lines(pair, c):
    x, z = pair
    dev = metrics.deviation(x, z)
    assert 0.0 <= dev <= 1.0
    assert dev == pytest.approx(metrics.deviation(z, x), abs=1e-12)
    assert dev == pytest.approx(metrics.deviation(-c * x, z), abs=1e-7)  # lines, not vectors
    assert math.sin(metrics.angle(x, z)) == pytest.approx(dev, abs=1e-12)
    assert 0.0 <= metrics.angle(x, z) <= math.pi / 2
    residual = z - (z @ x) / (x @ x) * x
    assert dev == pytest.approx(float(np.linalg.norm(residual) / np.linalg.norm(z)), abs=1e-7)
    assert metrics.deviation(x, x) == pytest.approx(0.0, abs=1e-15)
    assert metrics.deviation(np.zeros_like(z), z) == 1.0


def test_deviation_is_accurate_for_small_angles():
    theta = 1e-9
    assert metrics.deviation(np.array([1.0, 0.0]), np.array([math.cos(theta), math.sin(theta)])) == pytest.approx(theta, rel=1e-6)
    assert metrics.deviation(np.array([1.0, 1.0]), np.array([1.0, 1.0])) <= 1e-15


def test_deviation_of_orthogonal_vectors_is_one():
    assert metrics.deviation(np.array([1.0, 0.0]), np.array([0.0, 3.0])) == 1.0
    assert metrics.angle(np.array([1.0, 0.0]), np.array([0.0, 3.0])) == pytest.approx(math.pi / 2)


@SETTINGS
@given(st.floats(0.0, math.pi / 2), st.floats(0.0, math.pi / 2), st.floats(0.0, 0.5))
def test_nonorthogonality_bound_of_prop6(a, b, extra):
    bound = spcart_bounds.nonorthogonality_bound(a, b)
    assert bound == spcart_bounds.nonorthogonality_bound(b, a)
    assert 0.0 <= bound <= 1.0
    if a + b <= math.pi / 2:
        assert bound == pytest.approx(math.sin(a + b))
    else:
        assert bound == 1.0
    # nondecreasing in each angle
    assert spcart_bounds.nonorthogonality_bound(min(a + extra, math.pi / 2), b) >= bound - 1e-15


@SETTINGS
@given(st.integers(2, 500), st.floats(0.0, 1.0, exclude_max=True))
def test_hard_bounds_of_prop7(p, lam):
    lo, hi = spcart_bounds.hard_sparsity_bounds(lam, p)
    dev = spcart_bounds.hard_deviation_bound(lam, p)
    if lam < 1 / math.sqrt(p):
        assert (lo, hi) == (0.0, 1 - 1 / p)
        assert dev == pytest.approx(math.sqrt(p - 1) * lam) and dev < 1.0
    else:
        assert lo == pytest.approx(1 - 1 / (p * lam**2)) and hi == 1.0 and dev == 1.0
        assert 0.0 <= lo + 1e-12 and lo < 1.0
    # the two regimes meet continuously at lambda = 1/sqrt(p) for the lower sparsity bound
    assert spcart_bounds.hard_sparsity_bounds(1 / math.sqrt(p), p)[0] == pytest.approx(0.0, abs=1e-12)


@SETTINGS
@given(st.integers(1, 500), st.data())
def test_sparsity_and_energy_bounds_of_props10_and_11(p, data):
    k = data.draw(st.integers(0, max(p - 1, 0)))
    min_s, max_dev = spcart_bounds.sparsity_truncation_bounds(k, p)
    assert min_s == pytest.approx(k / p) and max_dev == pytest.approx(math.sqrt(k / p))
    lam = data.draw(st.floats(0.0, 1.0, exclude_max=True))
    lo, hi, dev = spcart_bounds.energy_truncation_bounds(lam, p)
    assert lo == math.floor(lam * p) / p and hi == 1 - 1 / p and dev == pytest.approx(math.sqrt(lam))
    assert lo <= hi + 1e-12


def test_soft_deviation_bounds_of_prop8_on_an_example():
    z = np.array([0.8, 0.6, 0.0])
    x = np.array([0.1, 0.0, 0.0])  # S_0.7(z): only the 0.8 entry survives, shrunk by 0.7
    lo, hi = spcart_bounds.soft_deviation_bounds(z, x, 0.7)
    assert lo == pytest.approx(0.6)  # the truncated part is (0, 0.6, 0)
    assert hi == pytest.approx(math.sqrt(0.36 + 0.49 * 1))
    assert lo - 1e-12 <= metrics.deviation(x, z) < hi


# -- registered metrics ----------------------------------------------------------------------------
def test_metrics_are_registered_once_and_rendered_from_the_registry():
    registry = get_registry()
    names = [m.name for m in registry.metrics()]
    assert names[: len(metrics.CORE_METRICS)] == [m.name for m in metrics.CORE_METRICS]  # the core's generic criteria come first
    assert len(names) == len(set(names))
    plugins = {m: registry.metric_plugin(m) for m in names}
    assert {plugins[m.name] for m in metrics.CORE_METRICS} == {"core"}
    # paper-specific metrics belong to their plugins
    assert plugins["loss"] == "encoders" and plugins["objective"] == "fspca"
    with pytest.raises(spcakit.DuplicateNameError, match="'core'.*'again'"):
        registry.register_metric(metrics.CORE_METRICS[0], plugin="again")


def test_the_shared_spectrum_is_computed_once_per_run(monkeypatch):
    """PCA's start decomposes the covariance; the default metrics' bound takes the top eigenvalue it kept (no second
    decomposition), and with every metric NEV and the encoder criteria share one spectrum."""
    import spcakit.numerics.operators.dense as dense_module

    calls = []
    original = dense_module.leading_eigenpairs

    def counted(matrix, r, **options):
        calls.append((r, options))
        return original(matrix, r, **options)

    monkeypatch.setattr(dense_module, "leading_eigenpairs", counted)
    c = np.diag([5.0, 4.0, 3.0, 2.0, 1.0])
    default = spcakit.fit(spcakit.Covariance(c), "pca", r=2)
    assert calls == [(2, {})] and default.metrics["bound"][0] == pytest.approx(5.0, rel=1e-12)  # the start's alone
    calls.clear()
    every = spcakit.fit(spcakit.Covariance(c), "pca", r=2, metrics="all")
    assert calls == [(2, {}), (2, {"vectors": False})]  # the start's, then one spectrum for all the metrics
    assert every.metrics["normalized_explained_variance"] == pytest.approx(1.0, rel=1e-12)


def _additional_by_gram_schmidt(x: np.ndarray, c: np.ndarray) -> list[float]:
    """Mackey's definition step by step: the part of each unit loading orthogonal to the earlier ones."""
    basis = np.zeros((x.shape[0], 0))
    out = []
    for t in range(x.shape[1]):
        v = x[:, t] / np.linalg.norm(x[:, t])
        q = v - basis @ np.linalg.lstsq(basis, v, rcond=None)[0] if basis.shape[1] else v
        norm = np.linalg.norm(q)
        if norm <= 1e-10:
            out.append(0.0)
            continue
        q = q / norm
        out.append(float(q @ c @ q))
        basis = np.column_stack([basis, q])
    return out


@pytest.mark.parametrize("dependent", [False, True])
def test_additional_variances_follow_the_definition(dependent):
    rng = np.random.default_rng(7)
    a = rng.standard_normal((40, 9))
    c = a.T @ a / 39
    x = rng.standard_normal((9, 5))
    if dependent:  # the third loading adds no direction: 0, and the later ones are measured against the first two
        x[:, 2] = 0.3 * x[:, 0] - 2.0 * x[:, 1]
    got = metrics.additional_variances(x, DenseCovariance(c))
    want = _additional_by_gram_schmidt(x, c)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    assert (got[2] == 0.0) is dependent
    assert math.isclose(sum(got), metrics.cpev(x, DenseCovariance(c)) * np.trace(c), rel_tol=1e-10)


# -- sparse loadings: the metrics work on their nonzero rows alone ------------------------------------------------
@pytest.mark.parametrize("centred", [False, True])
def test_cpev_and_additional_variances_of_sparse_loadings_equal_the_dense_formulas(centred):
    rng = np.random.default_rng(7)
    a = rng.standard_normal((25, 60)) + (3.0 if centred else 0.0)
    op = GramCovariance(a, 24.0, mean=a.mean(axis=0) if centred else None)
    dense = op.matmat(np.eye(60))
    x = with_pattern([3, 5, 4], 60, seed=2)  # 12 of 60 rows at most: the restricted path
    assert metrics.support_rows(x) is not None
    u, sing, _ = np.linalg.svd(x, full_matrices=False)
    expected = float(np.trace(u.T @ dense @ u) / np.trace(dense))
    assert metrics.cpev(x, op) == pytest.approx(expected, rel=1e-12)
    q, _ = np.linalg.qr(x / np.linalg.norm(x, axis=0))
    np.testing.assert_allclose(metrics.additional_variances(x, op), np.diag(q.T @ dense @ q), rtol=1e-12)
    # a loading in the span of the others adds nothing, on the restricted path as on the full one
    collinear = np.column_stack([x, x[:, 0] + x[:, 1]])
    assert metrics.additional_variances(collinear, op)[-1] == 0.0
    assert metrics.cpev(collinear, op) == pytest.approx(expected, rel=1e-12)


def test_dense_loadings_keep_the_full_path():
    x = np.random.default_rng(1).standard_normal((10, 2))
    assert metrics.support_rows(x) is None
    c = np.cov(np.random.default_rng(2).standard_normal((30, 10)), rowvar=False)
    u, _, _ = np.linalg.svd(x, full_matrices=False)
    assert metrics.cpev(x, DenseCovariance(c)) == pytest.approx(float(np.trace(u.T @ c @ u) / np.trace(c)), rel=1e-12)


def test_loadings_on_fewer_variables_than_loadings_get_one_additional_variance_each():
    # two loadings on the same single variable: the second adds nothing (a QR of the 1 x 2 support rows has one column)
    c = np.diag([5.0, 4.0, 3.0, 2.0, 1.0, 1.0])
    x = np.zeros((6, 2))
    x[0] = 1.0
    assert metrics.additional_variances(x, DenseCovariance(c)) == [5.0, 0.0]


@pytest.mark.parametrize("pattern", [[3, 5, 4], [60, 60]], ids=["sparse", "dense"])
def test_cpev_and_ev_from_the_shared_span_equal_their_own_products(pattern):
    """The default metrics read CPEV and EV off the span that the bounds and additional variances share (one
    product with C for all of them): the same numbers as :func:`metrics.cpev` and :func:`metrics.explained_variance`,
    and :func:`metrics.span_cpev` declines a span in which some loading adds no new direction."""
    rng = np.random.default_rng(11)
    a = rng.standard_normal((25, 60)) + 2.0
    op = GramCovariance(a, 24.0, mean=a.mean(axis=0))
    x = with_pattern(pattern, 60, seed=3) * [[2.0, 0.5, 3.0][: len(pattern)]]  # columns of unequal length
    span = metrics.loading_span(x, op)
    assert metrics.span_cpev(span, op) == pytest.approx(metrics.cpev(x, op), rel=1e-12)
    assert metrics.span_explained_variance(span, x) == pytest.approx(metrics.explained_variance(x, op), rel=1e-12)
    collinear = np.column_stack([x, x[:, 0] - 2 * x[:, 1]])
    span = metrics.loading_span(collinear, op)
    assert metrics.span_cpev(span, op) is None
    assert metrics.span_explained_variance(span, collinear) == pytest.approx(
        metrics.explained_variance(collinear, op), rel=1e-12)
    # a fit reports them so, the rank-deficient case by cpev's own rank decision
    problem = Problem(op, default_feature_names(60))
    for loadings in (x, collinear):
        got = metrics.compute_metrics(problem, loadings, [m for m in metrics.CORE_METRICS if m.name in ("cpev", "ev")])
        assert got["cpev"] == pytest.approx(metrics.cpev(loadings, op), rel=1e-12)
        assert got["ev"] == pytest.approx(metrics.explained_variance(loadings, op), rel=1e-12)


def test_every_metric_is_computed_on_an_equicorrelated_covariance_above_the_numpy_eigh_limit():
    """The eigenvalue-only metrics (the encoders' losses, FSPCA's normalised variance) take the r leading eigenvalues
    from LAPACK's subset driver above 500 variables, which raised ``LinAlgError: Internal Error`` when the top
    eigenvalue repeats (a 600-variable equicorrelated correlation matrix): four metrics were left out with a
    MetricWarning. ``spcakit.numerics.linalg.leading_subset`` falls back to the full decomposition."""
    import warnings

    p = 600
    c = np.full((p, p), -1.0 / (p - 1))
    np.fill_diagonal(c, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = spcakit.fit(spcakit.Covariance(c), "spcart", r=2, k=5, metrics="all")
    for name in ("loss", "normalized_loss", "symmetric_explained_variance", "normalized_explained_variance"):
        assert name in result.metrics



def test_scores_with_no_variance_to_rounding_are_uncorrelated_with_every_other():
    # a covariance of rank 2 and four loadings: two scores are zero to rounding, and their correlation, the ratio of
    # two roundings, came out anywhere up to 1; it is 0, as for a score of exactly no variance
    a = np.array([[3.0, 1.0, 0.5, 0.2], [0.0, 1.0, -1.0, 0.5]])
    null = np.linalg.svd(a)[2][2:].T  # two unit directions with A u = 0
    u = np.column_stack([a[0] / np.linalg.norm(a[0]), a[1] / np.linalg.norm(a[1]), null])
    correlations = metrics.score_correlations(metrics.loading_products(u, DenseCovariance(a.T @ a)))
    assert np.all(correlations[2:, :2] == 0.0) and np.all(correlations[:2, 2:] == 0.0)
    assert correlations[2, 3] == 0.0 and correlations[3, 2] == 0.0
    z = a @ u[:, :2]  # the two scores with variance: their correlation as it is
    assert correlations[0, 1] == pytest.approx(float(z[:, 0] @ z[:, 1]) / np.prod(np.linalg.norm(z, axis=0)), rel=1e-12)
