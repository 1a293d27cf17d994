"""Properties of every truncation of the SPCArt paper (Table 2, §3.3, §3.4).

Hu, Pan, Wang & Wu, *Sparse PCA via Rotation and Truncation*: hard (T-l0),
soft (T-l1), sparsity (T-sp), energy (T-en) and GPower's l0-penalty
truncations, in the relative and absolute forms, checked against their
definitions, the optimisation problems they solve, and the bounds of
Propositions 6-11 and Corollary 9 (through :mod:`spcakit.analysis.metrics`).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from spcakit.analysis import metrics

from spcakit.numerics import ties
from spcakit.core.records import unit_columns as normalize_columns
from spcakit.core.errors import InvalidParameterError, ZeroLoadingError
from spcakit.core.plugins import get_registry
from spcakit_spcart import bounds as spcart_bounds
from spcakit.testing import strategies as sps
from spcakit.testing.contracts import ContractViolation, check_truncator_contract
from spcakit.parts import truncators as tr
from spcakit_spcart.truncations import L0PenaltyTruncation

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FEW = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=0)


def thresholds(p: int) -> st.SearchStrategy[float]:
    """Relative thresholds in [0, 1), with extra weight around the paper's 1/sqrt(p)."""
    k = 1 / math.sqrt(p)
    return st.one_of(
        st.floats(min_value=0.0, max_value=1.0, exclude_max=True),
        st.just(k),
        st.floats(min_value=0.5 * k, max_value=min(2 * k, 0.999)),
    )


@st.composite
def truncation_cases(draw, p_range=(2, 25), r_range=(1, 4)):
    """A truncator of any kind and form, with a valid parameter, and an input Z."""
    z = draw(sps.dense_matrices(p_range, r_range))
    p = z.shape[0]
    kind = draw(st.sampled_from(
        ["none", "hard", "soft", "hard-abs", "soft-abs", "sparsity", "energy", "l0-penalty"]
    ))
    top = float(np.abs(z).max())
    if kind == "none":
        return tr.NoTruncation(), z, kind, None
    if kind in ("hard", "soft"):
        lam = draw(thresholds(p))
        maker = tr.HardThreshold if kind == "hard" else tr.SoftThreshold
        return maker(lam), z, kind, lam
    if kind in ("hard-abs", "soft-abs"):
        lam = draw(st.floats(min_value=0.0, max_value=1.2 * top))
        maker = tr.HardThreshold if kind == "hard-abs" else tr.SoftThreshold
        return maker(lam, form="absolute"), z, kind, lam
    if kind == "sparsity":
        lam = draw(st.integers(min_value=0, max_value=p - 1))
        return tr.SparsityTruncation(lam), z, kind, lam
    if kind == "energy":
        lam = draw(st.one_of(st.floats(min_value=0.0, max_value=1.0, exclude_max=True), st.just(1 - 5e-13)))
        return tr.EnergyTruncation(lam), z, kind, lam
    lam = draw(st.floats(min_value=0.0, max_value=1.2 * top * top))
    return L0PenaltyTruncation(lam), z, kind, lam


def may_zero(kind: str, lam: float | None, z: np.ndarray) -> np.ndarray:
    """Per column: whether the truncation's threshold reaches every entry (so it must zero it)."""
    top = np.abs(z).max(axis=0)
    if kind in ("hard", "soft"):
        return top <= lam * np.linalg.norm(z, axis=0) * (1 + 1e-12)
    if kind in ("hard-abs", "soft-abs"):
        return top <= lam
    if kind == "l0-penalty":
        return top * top <= lam * (1 + 1e-12)
    return np.zeros(z.shape[1], dtype=bool)


def near_threshold(kind: str, lam: float | None, z: np.ndarray) -> bool:
    """Whether an entry is so close to the threshold that rounding may decide its fate."""
    if kind in ("hard", "soft"):
        level = lam * np.linalg.norm(z, axis=0)
    elif kind in ("hard-abs", "soft-abs"):
        level = np.full(z.shape[1], lam)
    elif kind == "l0-penalty":
        level = np.full(z.shape[1], math.sqrt(lam))
    else:
        return False
    return bool(np.any(np.abs(np.abs(z) - level) <= 1e-9 * np.maximum(level, 1e-300)))


# -- contract, normalisation, purity -----------------------------------------------------
@SETTINGS
@given(truncation_cases())
def test_every_truncation_keeps_the_contract_and_normalises_to_unit_columns(case):
    truncator, z, kind, lam = case
    truncator.check(z.shape[0])
    out = check_truncator_contract(truncator, z)  # shape, only shrinks, pure, no silent zero column
    if out is None:
        # ZeroLoadingError is only allowed when the threshold reaches every entry of some column
        assert may_zero(kind, lam, z).any(), f"{kind} raised ZeroLoadingError although no column is below lambda"
        return
    loadings = normalize_columns(out)
    np.testing.assert_allclose(np.linalg.norm(loadings, axis=0), 1.0, rtol=0, atol=1e-12)


@SETTINGS
@given(truncation_cases())
def test_truncation_acts_column_by_column(case):
    truncator, z, kind, lam = case
    assume(not near_threshold(kind, lam, z))
    zeroing = may_zero(kind, lam, z)
    if zeroing.any():
        with pytest.raises(ZeroLoadingError):
            truncator(z)
    else:
        whole = truncator(z)
    for j in range(z.shape[1]):
        if zeroing[j]:
            with pytest.raises(ZeroLoadingError):
                truncator(z[:, j : j + 1].copy())
        elif not zeroing.any():
            # column norms may differ in the last bit between a block and a single column
            np.testing.assert_allclose(whole[:, j], truncator(z[:, j : j + 1].copy())[:, 0], rtol=1e-13, atol=0)


@SETTINGS
@given(sps.dense_matrices((2, 25), (1, 4)), st.integers(-20, 20), st.data())
def test_length_insensitive_truncations_commute_with_power_of_two_scaling(z, k, data):
    # Relative thresholds, T-sp and T-en see only z/||z||: T(c z) = c T(z) exactly for c = 2^k
    # (multiplying by a power of two is exact in floating point).
    p = z.shape[0]
    truncator = data.draw(st.sampled_from([
        tr.HardThreshold(data.draw(thresholds(p))),
        tr.SoftThreshold(data.draw(thresholds(p))),
        tr.SparsityTruncation(data.draw(st.integers(0, p - 1))),
        tr.EnergyTruncation(data.draw(st.floats(0.0, 0.99))),
    ]))
    c = 2.0**k
    try:
        base = truncator(z)
    except ZeroLoadingError:
        with pytest.raises(ZeroLoadingError):
            truncator(c * z)
        return
    np.testing.assert_array_equal(truncator(c * z), c * base)


@SETTINGS
@given(sps.dense_matrices((2, 25), (1, 3), ties=False), st.floats(1e-3, 1e3), st.data())
def test_relative_forms_are_invariant_to_positive_scaling(z, c, data):
    p = z.shape[0]
    lam = data.draw(thresholds(p))
    u = unit(z)
    # away from the threshold, rounding cannot move an entry across it
    assume(np.all(np.abs(np.abs(u) - lam) > 1e-9))
    for truncator in (tr.HardThreshold(lam), tr.SoftThreshold(lam)):
        try:
            a = normalize_columns(truncator(z))
        except ZeroLoadingError:
            continue
        b = normalize_columns(truncator(c * z))
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
    # the absolute form is not scale-invariant: it is the relative one at lambda/||z||
    col = z[:, :1]
    norm = float(np.linalg.norm(col))
    lam_abs = lam * norm
    try:
        rel = tr.HardThreshold(lam)(col)
    except ZeroLoadingError:
        return
    np.testing.assert_allclose(tr.HardThreshold(lam_abs, form="absolute")(col), rel, rtol=0, atol=0)


# -- definitions (Table 2) and the problems they solve ------------------------------------
@SETTINGS
@given(sps.unit_vectors((2, 25)), st.data())
def test_hard_and_soft_follow_table_2(u, data):
    lam = data.draw(thresholds(u.size))
    z = u[:, None]
    scale = np.linalg.norm(z, axis=0)
    # entries tied with the threshold (within 1e-10 of it, relative) follow the tie rule, checked on its own below
    assume(np.all(np.abs(np.abs(z) - lam * scale) > 1e-9 * lam * scale))
    expected_keep = np.abs(z) > lam * scale
    try:
        hard = tr.HardThreshold(lam)(z)
    except ZeroLoadingError:
        assert not expected_keep.any()
        with pytest.raises(ZeroLoadingError):
            tr.SoftThreshold(lam)(z)
        return
    np.testing.assert_array_equal(hard, np.where(expected_keep, z, 0.0))
    soft = tr.SoftThreshold(lam)(z)
    np.testing.assert_allclose(soft, np.sign(z) * np.maximum(np.abs(z) - lam * scale, 0), rtol=0, atol=1e-15)
    # Prop. 8: soft thresholding zeroes exactly the entries hard thresholding zeroes
    np.testing.assert_array_equal(soft != 0, hard != 0)


@SETTINGS
@given(st.floats(0.05, 20.0), st.integers(-4, 4), st.integers(-4, 4), st.permutations(range(4)))
def test_copies_at_the_threshold_are_zeroed_whatever_their_rounding(lam, ulps_a, ulps_b, order):
    """Two entries equal in exact arithmetic to the absolute threshold, each a few ulps off it (a duplicated variable's
    copies after rounding), are both zeroed by hard and by soft thresholding, in any order, as exact arithmetic zeroes
    an entry equal to the threshold; entries clearly above it are kept. (A plain comparison kept whichever copy rounded
    up: soft thresholding left it a nonzero of about 1e-16 lam, which changed the support and, with it, the CPEV of a
    duplicated matrix by its order.)"""
    at_a = lam + ulps_a * np.spacing(lam)
    at_b = lam - ulps_b * np.spacing(lam)
    z = np.array([at_a, -at_b, 2.5 * lam, 1.001 * lam])[list(order)]
    position = np.argsort(order)  # where each of the four entries above went
    hard = tr.HardThreshold(lam, form="absolute")(z[:, None])[:, 0]
    np.testing.assert_array_equal(hard[position], [0.0, 0.0, 2.5 * lam, 1.001 * lam])
    soft = tr.SoftThreshold(lam, form="absolute")(z[:, None])[:, 0]
    np.testing.assert_array_equal(soft[position][:2], [0.0, 0.0])
    np.testing.assert_allclose(soft[position][2:], [1.5 * lam, 0.001 * lam], rtol=1e-9)


@pytest.mark.parametrize("soft", [False, True])
def test_a_flat_vector_at_the_default_threshold_is_refused_whatever_its_rounding(soft):
    """Every entry of a flat unit vector equals the default relative threshold 1/sqrt(p): both thresholdings zero it
    whole and say so, whichever entries rounded above 1/sqrt(p) (a plain comparison kept those)."""
    p = 5
    rng = np.random.default_rng(0)
    for _ in range(5):
        flat = np.full((p, 1), 1 / np.sqrt(p)) * (1 + rng.integers(-3, 4, size=(p, 1)) * np.finfo(float).eps)
        with pytest.raises(ZeroLoadingError, match="thresholding zeroed loading 1 entirely"):
            (tr.SoftThreshold() if soft else tr.HardThreshold())(flat)


@SETTINGS
@given(sps.unit_vectors((2, 25), ties=False), st.data())
def test_hard_threshold_solves_the_l0_penalised_problem(u, data):
    # eq. (8) per column: min_x ||u - x||^2 + lam^2 ||x||_0 has value sum_i min(u_i^2, lam^2)
    lam = data.draw(thresholds(u.size))
    assume(np.abs(u).max() > lam * (1 + 1e-9))
    x = tr.HardThreshold(lam)(u[:, None])[:, 0]
    value = float(np.sum((u - x) ** 2) + lam**2 * np.count_nonzero(x))
    assert value == pytest.approx(float(np.sum(np.minimum(u**2, lam**2))), abs=1e-12)


@SETTINGS
@given(sps.unit_vectors((2, 25), ties=False), st.data(), sps.seeds())
def test_soft_threshold_solves_the_l1_penalised_problem_on_the_sphere(u, data, seed):
    # eq. (7): x* = S(u)/||S(u)|| maximises u.x - lam ||x||_1 over unit vectors x
    lam = data.draw(thresholds(u.size))
    assume(np.abs(u).max() > lam * (1 + 1e-9))
    best = normalize_columns(tr.SoftThreshold(lam)(u[:, None]))[:, 0]

    def f(x):
        return float(u @ x - lam * np.abs(x).sum())

    rng = np.random.default_rng(seed)
    candidates = [unit(rng.standard_normal(u.size)) for _ in range(20)]
    candidates.append(normalize_columns(tr.HardThreshold(lam)(u[:, None]))[:, 0])
    candidates.append(u)
    candidates += [unit(best + 0.01 * rng.standard_normal(u.size)) for _ in range(20)]
    for x in candidates:
        assert f(best) >= f(x) - 1e-12


@SETTINGS
@given(sps.dense_vectors((2, 25)), st.data())
def test_sparsity_truncation_zeroes_the_lambda_smallest(z, data):
    p = z.size
    lam = data.draw(st.integers(0, p - 1))
    x = tr.SparsityTruncation(lam)(z[:, None])[:, 0]
    nnz = np.count_nonzero(z)
    # exactly p - lam nonzeros when z has at least p - lam of them; otherwise z's own nonzeros
    assert np.count_nonzero(x) == min(nnz, p - lam)
    if nnz >= p - lam:
        assert np.count_nonzero(x) == p - lam
    kept, zeroed = x != 0, x == 0
    np.testing.assert_array_equal(x[kept], z[kept])
    if nnz >= p - lam:
        assert np.count_nonzero(zeroed) == lam
    if kept.any() and zeroed.any():
        assert np.abs(z[zeroed]).max() <= np.abs(z[kept]).min()


@SETTINGS
@given(sps.unit_vectors((2, 20), ties=False), st.data(), sps.seeds())
def test_sparsity_truncation_solves_the_l0_constrained_problem(u, data, seed):
    # Prop. 14: P(u)/||P(u)|| maximises u.x over unit x with at most p - lam nonzeros,
    # i.e. ||P(u)|| >= ||u_S|| for every support S of size p - lam.
    p = u.size
    lam = data.draw(st.integers(0, p - 1))
    best = float(np.linalg.norm(tr.SparsityTruncation(lam)(u[:, None])))
    rng = np.random.default_rng(seed)
    for _ in range(25):
        support = rng.choice(p, size=p - lam, replace=False)
        assert np.linalg.norm(u[support]) <= best + 1e-12


@SETTINGS
@given(sps.dense_vectors((2, 25)), st.floats(0.0, 1.0, exclude_max=True))
@example(np.array([np.nextafter(1000.0, 0.0), 1000.0]), 0.5)  # tied magnitudes: the tie rule picks which goes
def test_energy_truncation_removes_a_maximal_set_within_the_budget(z, lam):
    x = tr.EnergyTruncation(lam)(z[:, None])[:, 0]
    total = float(z @ z)
    zeroed, kept = x == 0, x != 0
    np.testing.assert_array_equal(x[kept], z[kept])
    removed = float(np.sum(z[zeroed] ** 2)) / total
    assert removed <= lam + 1e-9, "more than lambda of the energy was removed"
    assert kept.any()
    # the removed entries are the smallest ones (magnitudes tied within spcakit.numerics.ties.RTOL go by the tie rule) ...
    if zeroed.any():
        assert np.abs(z[zeroed]).max() <= np.abs(z[kept]).min() * (1 + ties.RTOL)
    # ... and the set is maximal: adding the next smallest entry would exceed lambda
    next_share = removed + float(np.min(z[kept] ** 2)) / total
    assert next_share > lam - 1e-9


def test_energy_close_to_one_never_zeroes_a_loading():
    truncator = tr.EnergyTruncation(1 - 5e-13)
    truncator.check(3)
    check_truncator_contract(truncator, np.array([[3.0], [4.0], [0.5]]))


def test_energy_zero_removes_nothing():
    z = np.array([[1e-6], [1.0], [1.0], [1.0]])
    np.testing.assert_array_equal(tr.EnergyTruncation(0.0)(z), z)


@SETTINGS
@given(sps.dense_vectors((2, 25)), st.floats(0.0, 1.2))
def test_l0_penalty_solves_its_problem_and_is_absolute(z, fraction):
    # eq. (24): H_sqrt(gamma)(z) minimises ||z - x||^2 + gamma ||x||_0, value sum_i min(z_i^2, gamma)
    gamma = fraction * float(np.max(z**2))
    truncator = L0PenaltyTruncation(gamma)
    try:
        x = truncator(z[:, None])[:, 0]
    except ZeroLoadingError:
        assert np.all(z**2 <= gamma * (1 + 1e-12))
        return
    value = float(np.sum((z - x) ** 2) + gamma * np.count_nonzero(x))
    assert value == pytest.approx(float(np.sum(np.minimum(z**2, gamma))), rel=1e-12, abs=1e-300)
    # absolute: the threshold does not follow the length of z
    assert np.count_nonzero(truncator(4.0 * z[:, None])) >= np.count_nonzero(x)


# -- bounds of §3.4 ------------------------------------------------------------------------
@SETTINGS
@given(sps.unit_vectors((2, 30)), st.data())
def test_prop7_hard_thresholding_sparsity_and_deviation(u, data):
    p = u.size
    lam = data.draw(thresholds(p))
    try:
        x = tr.HardThreshold(lam)(u[:, None])[:, 0]
    except ZeroLoadingError:
        # the output is zero only when no entry exceeds lambda, which needs lambda >= max|u| >= 1/sqrt(p)
        assert lam * (1 + 1e-12) >= np.abs(u).max() >= 1 / math.sqrt(p) * (1 - 1e-12)
        return
    s = float(metrics.sparsity(x[:, None])[0])
    dev = metrics.deviation(x, u)
    truncated = np.where(x == 0, u, 0.0)
    assert dev == pytest.approx(float(np.linalg.norm(truncated)), abs=1e-12)  # sin(theta) = ||z_bar||
    lo, hi = spcart_bounds.hard_sparsity_bounds(lam, p)
    if lam < 1 / math.sqrt(p):
        assert (lo, hi) == (0.0, 1 - 1 / p)
        assert 0.0 <= s <= 1 - 1 / p
        assert dev <= spcart_bounds.hard_deviation_bound(lam, p) + 1e-12
        assert spcart_bounds.hard_deviation_bound(lam, p) == pytest.approx(math.sqrt(p - 1) * lam)
    else:
        assert hi == 1.0 and spcart_bounds.hard_deviation_bound(lam, p) == 1.0
        # strict in exact arithmetic (k lam^2 < ||u||^2 = 1 for the k kept entries); the
        # tolerance covers ties with lambda (e.g. a uniform u at lambda = 1/sqrt(p)) under rounding
        assert s > lo - 1e-9
        assert s <= hi


@SETTINGS
@given(sps.unit_vectors((2, 30)), st.data())
def test_prop8_soft_thresholding_relative_deviation_bounds(u, data):
    p = u.size
    lam = data.draw(thresholds(p))
    try:
        raw = tr.SoftThreshold(lam)(u[:, None])[:, 0]
    except ZeroLoadingError:
        return
    dev = metrics.deviation(raw, u)
    lo, hi = spcart_bounds.soft_deviation_bounds(u, raw, lam)
    assert lo == pytest.approx(float(np.linalg.norm(np.where(raw == 0, u, 0.0))))
    assert lo - 1e-12 <= dev <= hi + 1e-12
    # strict upper bound, quantified: hi^2 - sin^2 = lam^2 ||x||_1^2 / ||x||_2^2 >= lam^2
    assert hi**2 - dev**2 >= lam**2 - 1e-9
    # same sparsity bounds as T-l0
    s = float(metrics.sparsity(raw[:, None])[0])
    lo_s, hi_s = spcart_bounds.hard_sparsity_bounds(lam, p)
    assert lo_s - 1e-9 < s <= hi_s


@SETTINGS
@given(sps.unit_vectors((2, 30)), st.data())
def test_corollary9_soft_deviates_at_least_as_much_as_hard(u, data):
    lam = data.draw(thresholds(u.size))
    try:
        hard = tr.HardThreshold(lam)(u[:, None])[:, 0]
    except ZeroLoadingError:
        return
    soft = tr.SoftThreshold(lam)(u[:, None])[:, 0]
    assert metrics.deviation(soft, u) >= metrics.deviation(hard, u) - 1e-12


@SETTINGS
@given(sps.unit_vectors((2, 30)), st.data())
def test_prop10_sparsity_truncation_bounds(u, data):
    p = u.size
    lam = data.draw(st.integers(0, p - 1))
    x = tr.SparsityTruncation(lam)(u[:, None])[:, 0]
    s = float(metrics.sparsity(x[:, None])[0])
    min_s, max_dev = spcart_bounds.sparsity_truncation_bounds(lam, p)
    assert min_s == lam / p and max_dev == pytest.approx(math.sqrt(lam / p))
    assert min_s - 1e-12 <= s < 1
    assert np.count_nonzero(x) <= p - lam  # the same bound, in exact integer arithmetic
    assert metrics.deviation(x, u) <= max_dev + 1e-12


@SETTINGS
@given(sps.unit_vectors((2, 30)), st.floats(0.0, 1.0, exclude_max=True))
def test_prop11_energy_truncation_bounds(u, lam):
    p = u.size
    x = tr.EnergyTruncation(lam)(u[:, None])[:, 0]
    s = float(metrics.sparsity(x[:, None])[0])
    min_s, max_s, max_dev = spcart_bounds.energy_truncation_bounds(lam, p)
    assert (min_s, max_s) == (math.floor(lam * p) / p, 1 - 1 / p)
    assert min_s - 1e-12 <= s <= max_s + 1e-12
    assert math.floor(lam * p) <= p - np.count_nonzero(x) <= p - 1  # exact integer form
    # sin(theta) <= sqrt(lambda), up to the relative rounding slack of the energy budget
    assert metrics.deviation(x, u) <= max_dev * (1 + 1e-9) + 1e-12


@pytest.mark.parametrize("p", [2, 5, 13, 100])
def test_prop7_and_prop10_bounds_are_achieved(p):
    # "All the above bounds are achievable" (Prop. 7): one large entry, p-1 entries at lambda
    lam = 0.5 / math.sqrt(p)
    u = np.full(p, lam)
    u[0] = math.sqrt(1 - (p - 1) * lam**2)
    x = tr.HardThreshold(lam * (1 + 1e-12))(u[:, None])[:, 0]
    assert metrics.deviation(x, u) == pytest.approx(spcart_bounds.hard_deviation_bound(lam, p), rel=1e-9)
    # T-sp on the uniform vector reaches sin(theta) = sqrt(lam/p)
    uniform = np.full(p, 1 / math.sqrt(p))
    for k in {0, 1, p // 2, p - 1}:
        xs = tr.SparsityTruncation(k)(uniform[:, None])[:, 0]
        assert metrics.deviation(xs, uniform) == pytest.approx(spcart_bounds.sparsity_truncation_bounds(k, p)[1], abs=1e-12)


@SETTINGS
@given(sps.orthonormal_matrices((2, 25), (2, 5)), st.data())
def test_prop6_nonorthogonality_of_truncated_orthonormal_columns(z, data):
    p = z.shape[0]
    truncator = data.draw(st.sampled_from([
        tr.HardThreshold(data.draw(thresholds(p))),
        tr.SoftThreshold(data.draw(thresholds(p))),
        tr.SparsityTruncation(data.draw(st.integers(0, p - 1))),
        tr.EnergyTruncation(data.draw(st.floats(0.0, 0.999))),
    ]))
    try:
        x = normalize_columns(truncator(z))
    except ZeroLoadingError:
        return
    r = z.shape[1]
    angles = [metrics.angle(x[:, i], z[:, i]) for i in range(r)]
    for i in range(r):
        for j in range(i + 1, r):
            cos = abs(float(x[:, i] @ x[:, j]))
            assert cos <= spcart_bounds.nonorthogonality_bound(angles[i], angles[j]) + 1e-12


# -- ZeroLoadingError ---------------------------------------------------------------------
@SETTINGS
@given(sps.dense_vectors((2, 25)), st.floats(1e-9, 0.5), st.booleans())
def test_thresholds_at_or_above_every_entry_raise_zero_loading_error(z, margin, soft):
    u = np.abs(z) / np.linalg.norm(z)
    top = float(u.max())
    assume(top * (1 + margin) < 1)
    maker = tr.SoftThreshold if soft else tr.HardThreshold
    with pytest.raises(ZeroLoadingError, match="zeroed loading 1"):
        maker(top * (1 + margin))(z[:, None])
    with pytest.raises(ZeroLoadingError):
        maker(float(np.abs(z).max()), form="absolute")(z[:, None])  # |z_i| <= lambda for all i
    with pytest.raises(ZeroLoadingError):
        L0PenaltyTruncation(float(np.abs(z).max()) ** 2)(z[:, None])
    # just below the largest entry, one entry survives
    kept = maker(top * (1 - margin))(z[:, None])
    assert np.count_nonzero(kept) >= 1


@FEW
@given(sps.orthonormal_matrices((3, 20), (2, 4)))
def test_zero_loading_error_names_the_column_and_other_columns_are_not_the_cause(z):
    # make the last column uniform in magnitude so that lambda just above 1/sqrt(p) zeroes it only
    p, r = z.shape
    z = z.copy()
    z[:, -1] = 1 / math.sqrt(p)
    others_max = np.abs(z[:, :-1]).max(axis=0)
    assume(np.all(others_max > 1.5 / math.sqrt(p)))
    with pytest.raises(ZeroLoadingError, match=f"loading {r}"):
        tr.HardThreshold(1.2 / math.sqrt(p))(z)


# -- parameter validation ----------------------------------------------------------------
@SETTINGS
@given(st.integers(2, 50), st.one_of(st.floats(max_value=-1e-12, allow_nan=False, allow_infinity=False),
                                     st.floats(min_value=1.0, allow_nan=False, allow_infinity=False)))
def test_relative_thresholds_outside_unit_interval_are_rejected(p, lam):
    for maker in (tr.HardThreshold, tr.SoftThreshold):
        with pytest.raises(InvalidParameterError, match=r"\[0, 1\)"):
            maker(lam).check(p)
    with pytest.raises(InvalidParameterError, match=r"\[0, 1\)"):
        tr.EnergyTruncation(lam).check(p)


@SETTINGS
@given(st.integers(2, 50), st.data())
def test_valid_parameters_are_accepted(p, data):
    for truncator in (
        tr.HardThreshold(), tr.SoftThreshold(),
        tr.HardThreshold(data.draw(st.floats(0.0, 1.0, exclude_max=True))),
        tr.SoftThreshold(data.draw(st.floats(0.0, 1.0, exclude_max=True))),
        tr.HardThreshold(data.draw(st.floats(0.0, 1e6)), form="absolute"),
        tr.SparsityTruncation(data.draw(st.integers(0, p - 1))),
        tr.SparsityTruncation(float(data.draw(st.integers(0, p - 1)))),
        tr.EnergyTruncation(data.draw(st.floats(0.0, 1.0, exclude_max=True))),
        L0PenaltyTruncation(data.draw(st.floats(0.0, 1e6))),
        tr.NoTruncation(),
    ):
        assert truncator.check(p) is None


@SETTINGS
@given(st.integers(2, 50), st.data())
def test_sparsity_parameter_must_be_an_integer_in_range(p, data):
    bad = data.draw(st.one_of(st.integers(max_value=-1), st.integers(min_value=p)))
    with pytest.raises(InvalidParameterError, match=rf"\[0, {p - 1}\]"):
        tr.SparsityTruncation(bad).check(p)
    frac = data.draw(st.floats(0.0, float(p - 1)).filter(lambda v: not v.is_integer()))
    with pytest.raises(InvalidParameterError, match=rf"integer.*\[0, {p - 1}\]"):
        tr.SparsityTruncation(frac).check(p)
    with pytest.raises(InvalidParameterError, match=rf"\[0, {p - 1}\]"):
        tr.SparsityTruncation(None).check(p)
    with pytest.raises(InvalidParameterError, match="integer"):
        tr.SparsityTruncation(True).check(p)


def test_absolute_forms_and_l0_penalty_need_a_nonnegative_lambda():
    for maker in (tr.HardThreshold, tr.SoftThreshold):
        with pytest.raises(InvalidParameterError, match=">= 0"):
            maker(None, form="absolute").check(5)
        with pytest.raises(InvalidParameterError, match=">= 0"):
            maker(-0.1, form="absolute").check(5)
    for gamma in (None, -1.0):
        with pytest.raises(InvalidParameterError, match=">= 0"):
            L0PenaltyTruncation(gamma).check(5)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), "abc", [0.1]])
def test_non_numeric_thresholds_are_invalid_parameters(value):
    for truncator in (tr.HardThreshold, tr.SoftThreshold, tr.EnergyTruncation):
        with pytest.raises(InvalidParameterError, match=r"must be a (finite )?number"):
            truncator(value).check(10)


def test_non_numeric_sparsity_is_an_invalid_parameter():
    with pytest.raises(InvalidParameterError):
        tr.SparsityTruncation("abc").check(10)


def test_unknown_form_is_rejected_with_the_valid_forms():
    with pytest.raises(InvalidParameterError, match="relative, absolute"):
        tr.HardThreshold(0.1, form="scaled")


def test_registry_builds_every_truncation_with_its_lambda():
    registry = get_registry()
    lam_names = {info.name: info.lam for info in registry.parts("truncator")}
    assert {"none", "hard", "soft", "sparsity", "energy", "l0-penalty"} <= set(lam_names)
    z = np.array([[0.8], [0.1], [-0.5], [0.3]])
    values = {"hard": 0.2, "soft": 0.2, "sparsity": 2, "energy": 0.05, "l0-penalty": 0.05}
    for name, value in values.items():
        built = registry.build("truncator", {"name": name, lam_names[name]: value})
        built.check(4)
        assert check_truncator_contract(built, z) is not None
    with pytest.raises(InvalidParameterError, match=r"\[0, 3\]"):
        registry.build("truncator", {"name": "sparsity", "n_zeros": 4}).check(4)


@SETTINGS
@given(sps.dense_vectors((2, 25)), st.floats(0.0, 1.0, exclude_max=True))
def test_absolute_forms_threshold_z_itself(z, fraction):
    # GPower's form: H_lambda(z), S_lambda(z) on z as it is, whatever its length
    lam = fraction * float(np.abs(z).max())
    assume(np.all(np.abs(np.abs(z) - lam) > 1e-9 * lam))  # ties with lambda: the tie rule, checked on its own
    col = z[:, None]
    hard = tr.HardThreshold(lam, form="absolute")(col)
    np.testing.assert_array_equal(hard, np.where(np.abs(col) > lam, col, 0.0))
    soft = tr.SoftThreshold(lam, form="absolute")(col)
    np.testing.assert_array_equal(soft, np.sign(col) * np.maximum(np.abs(col) - lam, 0.0))
    # the same lambda on a longer z keeps at least as many entries
    assert np.count_nonzero(tr.HardThreshold(lam, form="absolute")(4.0 * col)) >= np.count_nonzero(hard)


# -- the contract check itself catches broken truncators ------------------------------------------
class _Broken:
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, z):
        return self.fn(z)

    def check(self, p):
        return None


def _mutating(z):
    z[0] = 0.0
    return z


_COUNTER = [0]


def _impure(z):
    _COUNTER[0] += 1
    return z * (1.0 if _COUNTER[0] % 2 else 0.5)


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (_mutating, "modified its input"),
        (lambda z: 2.0 * z, "grew"),
        (lambda z: -z, "changed sign"),
        (lambda z: np.zeros_like(z), "zeroed column"),
        (_impure, "different result"),
        (lambda z: z[:-1], "shape"),
        (lambda z: z.tolist(), "numpy array"),
        (lambda z: np.full_like(z, np.nan), "non-finite"),
    ],
)
def test_truncator_contract_catches_broken_truncators(fn, message):
    z = np.array([[0.9, 0.1], [0.1, -0.8], [-0.4, 0.3]])
    with pytest.raises(ContractViolation, match=message):
        check_truncator_contract(_Broken(fn), z)


def test_truncator_contract_requires_check_to_raise_invalid_parameter_error():
    class BadCheck(_Broken):
        def check(self, p):
            raise ValueError("nope")

    with pytest.raises(ContractViolation, match="InvalidParameterError"):
        check_truncator_contract(BadCheck(lambda z: z), np.ones((3, 1)))
    with pytest.raises(InvalidParameterError):
        check_truncator_contract(tr.SparsityTruncation(5), np.ones((3, 1)))


@pytest.mark.parametrize("energy, kept", [(0.5, [0, 1]), (0.25, [0, 1, 2]), (0.74, [0, 1])])
def test_energy_truncation_keeps_the_smaller_indices_of_tied_entries(energy, kept):
    z = np.array([[2.0, -1.0], [-2.0, 1.0], [2.0, -1.0], [-2.0, 1.0]])  # four tied entries per column, 25 % each
    x = tr.EnergyTruncation(energy)(z)
    for column in range(2):
        assert np.flatnonzero(x[:, column]).tolist() == kept


@SETTINGS
@given(truncation_cases())
def test_kept_mask_agrees_with_the_truncation(case):
    # a truncation that only selects entries gives their mask (the driver then zeroes the rest in place of z);
    # it must select exactly what the truncation keeps, ties included
    truncator, z, kind, _ = case
    kept = truncator.kept(z)
    if kind not in ("sparsity", "energy"):
        assert kept is None
        return
    assert kept.dtype == bool and kept.shape == z.shape
    np.testing.assert_array_equal(np.where(kept, z, 0.0), truncator(z))


def test_selection_ranks_a_large_z_a_few_columns_at_a_time():
    # blocks of RANK_BLOCK_BYTES of magnitudes give the same selection as one block of all columns
    rng = np.random.default_rng(0)
    z = rng.standard_normal((tr.RANK_BLOCK_BYTES // 8 // 3 + 1, 7))  # three columns fill a block: three blocks
    z[:5, 1] = z[0, 1]  # a tie at the top
    whole = np.stack([ties.top_k_mask(np.abs(z[:, [j]]), 40)[:, 0] for j in range(z.shape[1])], axis=1)
    np.testing.assert_array_equal(tr.sparsity_mask(z, z.shape[0] - 40), whole)
    np.testing.assert_array_equal(tr.truncate_by_sparsity(z, z.shape[0] - 40), np.where(whole, z, 0.0))


@SETTINGS
@given(st.data())
def test_sparsity_mask_is_laid_out_as_z_and_keeps_the_same_entries_in_either_layout(data):
    # the mask comes in z's layout (C order: compared in place; Fortran order: ranked column by column), and
    # both keep each column's k largest magnitudes by the tie rule, ties across the boundary included
    p = data.draw(st.integers(2, 60), label="p")
    r = data.draw(st.integers(2, 6), label="r")
    k = data.draw(st.integers(1, p - 1), label="k")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    z = rng.standard_normal((p, r))
    levels = data.draw(st.sampled_from([None, 2, 5]), label="distinct magnitudes")
    if levels is not None:  # few distinct magnitudes, both signs: ties at the boundary
        z = rng.integers(1, levels + 1, size=(p, r)) * rng.choice([-1.0, 1.0], size=(p, r))
    expected = np.stack([ties.top_k_mask(np.abs(z[:, [j]]), k)[:, 0] for j in range(r)], axis=1)
    in_c = tr.sparsity_mask(np.ascontiguousarray(z), p - k)
    in_f = tr.sparsity_mask(np.asfortranarray(z), p - k)
    np.testing.assert_array_equal(in_c, expected)
    np.testing.assert_array_equal(in_f, expected)
    assert in_c.flags.c_contiguous and in_f.flags.f_contiguous


def test_sparsity_mask_through_the_band_is_the_same_in_either_layout():
    # long columns and a large k go through the band selection (spcakit.numerics.ties); one column tied at its boundary
    rng = np.random.default_rng(5)
    p, r, k = ties.BAND_MIN_SCORES + 100, 3, 2000
    z = rng.standard_normal((p, r))
    z[:, 1] = np.round(z[:, 1], 1)  # magnitudes on a grid of 0.1: the boundary is tied
    expected = np.stack([ties.top_k_mask(np.abs(z[:, [j]]), k)[:, 0] for j in range(r)], axis=1)
    assert np.count_nonzero(expected, axis=0).tolist() == [k] * r
    for layout in (np.ascontiguousarray, np.asfortranarray):
        np.testing.assert_array_equal(tr.sparsity_mask(layout(z), p - k), expected)
