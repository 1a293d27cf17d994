r"""Magdon-Ismail & Boutsidis, *Optimal Sparse Linear Encoders and Sparse PCA* (NIPS 2016):
the guarantees of the encoder parts, as Hypothesis properties.

* black-box encoder (§2.1): :math:`H^\top H = I`, at most ``r`` nonzero rows, and
  Theorem 5, :math:`\ell(H, X) \le \|X - X_{C,k}\|_F^2` (with equality);
* every encoder: :math:`\ell(H, X) \ge \|X - X_k\|_F^2` (normalized loss >= 1);
* Theorem 6(i) for ``dual-set-columns``:
  :math:`\|X - X_{C,k}\|_F^2 \le (1 + (1 - \sqrt{k/r})^{-2})\|X - X_k\|_F^2`;
* iterative encoder (§3): unit features with at most :math:`r_i` nonzeros each, and a loss
  that never increases as features are added; the ``residual`` deflator's
  :math:`\Delta_t` is the paper's :math:`X - XH_t(XH_t)^+X`;
* the metrics (registered by the plugin): normalized loss >= 1, symmetric explained variance
  in [0, 1], the same on the data and on its covariance (:math:`X = C^{1/2}`), and on an
  explicit and a matrix-free covariance.

The parts get the run's carry as the drivers hand it: the column selectors' ``prepare``
makes it, and the ``residual`` deflator returns it with the number of features found
(:data:`spcakit_encoders.carry.FEATURES_FOUND`).

Every reference quantity is computed here independently, by dense SVDs and pseudo-inverses.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import spcakit
from spcakit.inputs.datasets import square_root
from spcakit.analysis.metrics import compute_metrics
from spcakit.numerics.operators import DenseCovariance, GramCovariance
from spcakit.inputs.problem import Problem
from spcakit.core.records import Carry
from spcakit.testing import strategies as sps
from spcakit.testing.contracts import check_deflator_contract, check_initializer_contract
from spcakit_encoders.carry import FEATURES_FOUND, features_found
from spcakit_encoders.encoder import cssp_encoder
from spcakit_encoders.metrics import ENCODER_METRICS, METRICS, data_divisor, encoder_metrics

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
SELECTORS = ("dual-set-columns", "leverage-columns", "leverage-sampling")


# -- independent references ----------------------------------------------------------------------
def best_rank_k_loss(x: np.ndarray, k: int) -> float:
    """||X - X_k||_F^2 from the full SVD."""
    s = np.linalg.svd(x, compute_uv=False)
    return float(np.sum(s[k:] ** 2))


def column_space_loss(x: np.ndarray, columns, k: int) -> float:
    """||X - X_{C,k}||_F^2: project X on span(C), take the best rank-k part of the projection."""
    q, _ = np.linalg.qr(x[:, list(columns)])
    xc = q @ (q.T @ x)
    u, s, vt = np.linalg.svd(xc, full_matrices=False)
    xck = (u[:, :k] * s[:k]) @ vt[:k]
    return float(np.sum((x - xck) ** 2))


def pinv_loss(x: np.ndarray, h: np.ndarray) -> float:
    """Definition 1 literally: ||X - XH(XH)^+ X||_F^2.

    Singular values of XH below 1e-10 of the largest are rounding (centred data have exact rank n - 1,
    stored with ~1e-16 noise), so the pseudo-inverse drops them instead of amplifying them.
    """
    b = x @ h
    return float(np.sum((x - b @ np.linalg.pinv(b, rcond=1e-10) @ x) ** 2))


def centred_rank(x: np.ndarray) -> int:
    return int(np.linalg.matrix_rank(x, tol=1e-7 * np.linalg.norm(x, 2)))


@st.composite
def encoder_cases(draw, k_max: int = 3):
    """Centred data with a decaying spectrum (sometimes n < p, sometimes a duplicated column), k and r."""
    n = draw(st.integers(4, 30))
    p = draw(st.integers(2, 24))
    rng = np.random.default_rng(draw(sps.seeds()))
    rank = min(n, p)
    spectrum = 10.0 ** rng.uniform(-1.0, 1.0, rank) * np.sort(rng.uniform(0.2, 1.0, rank))[::-1]
    left, _ = np.linalg.qr(rng.standard_normal((n, rank)))
    right, _ = np.linalg.qr(rng.standard_normal((p, rank)))
    x = (left * spectrum) @ right.T + 0.05 * rng.standard_normal((n, p))
    if p > 3 and draw(st.booleans()):
        x[:, -1] = x[:, 0]  # a duplicated variable: selections must skip linearly dependent columns
    x = x - x.mean(axis=0)
    available = centred_rank(x)
    assume(available >= 1)
    k = draw(st.integers(1, min(k_max, available)))
    r = draw(st.integers(k, available))
    return x, k, r


def select(name: str, x: np.ndarray, k: int, r: int, seed: int = 0) -> list[int]:
    problem = spcakit.as_problem(x, center=False)
    part = spcakit.get_registry().build("initializer", spcakit.core.specs.PartRef(name, {"sparsity": r}))
    carry = part.prepare(problem, k, np.random.default_rng(seed), Carry())
    x0 = part(problem, k, np.random.default_rng(seed), carry)
    return [int(j) for j in np.flatnonzero(np.any(x0 != 0, axis=1))]


# -- the black-box encoder (Sec. 2.1, Theorem 5) ----------------------------------------------------
@SETTINGS
@given(encoder_cases(), st.sampled_from(SELECTORS), sps.seeds())
def test_batch_encoder_is_orthonormal_r_sparse_and_meets_theorem_5(case, selector, seed):
    x, k, r = case
    columns = select(selector, x, k, r, seed)
    assert len(columns) == r == len(set(columns))
    h, explained = cssp_encoder(x, columns, k)
    scale = float(np.sum(x**2))
    np.testing.assert_allclose(h.T @ h, np.eye(k), atol=1e-9)
    rows = np.flatnonzero(np.any(h != 0, axis=1))
    assert set(rows) <= set(columns) and rows.size <= r
    loss = pinv_loss(x, h)
    reference = column_space_loss(x, columns, k)
    # Theorem 5, and in fact equality: span(XH) is the top-k left singular subspace of X_C
    assert loss <= reference + 1e-8 * scale
    assert loss == pytest.approx(reference, rel=1e-6, abs=1e-8 * scale)
    assert loss >= best_rank_k_loss(x, k) - 1e-8 * scale
    assert explained == pytest.approx(scale - loss, rel=1e-6, abs=1e-8 * scale)


@SETTINGS
@given(encoder_cases())
def test_dual_set_selection_meets_theorem_6i(case):
    x, k, r = case
    assume(r > k)
    columns = select("dual-set-columns", x, k, r)
    bound = (1.0 + (1.0 - math.sqrt(k / r)) ** -2) * best_rank_k_loss(x, k)
    assert column_space_loss(x, columns, k) <= bound + 1e-8 * float(np.sum(x**2))


@SETTINGS
@given(encoder_cases(), st.sampled_from(SELECTORS))
def test_selectors_keep_the_initializer_contract(case, selector):
    x, k, r = case
    problem = spcakit.as_problem(x, center=False)
    part = spcakit.get_registry().build("initializer", spcakit.core.specs.PartRef(selector, {"sparsity": r}))
    x0 = check_initializer_contract(part, problem, k)  # prepare, then the start, as the drivers call them
    assert np.count_nonzero(np.any(x0 != 0, axis=1)) == r


# -- the methods, through fit ------------------------------------------------------------------------
@SETTINGS
@given(encoder_cases(), st.booleans())
def test_batch_method_loss_is_at_least_pcas_and_metrics_match_the_definitions(case, as_covariance):
    x, k, r = case
    if as_covariance:  # the covariance input: X = C^(1/2), same Gram matrix
        result = spcakit.fit(spcakit.Covariance(x.T @ x), "encoder-batch", r=k, sparsity=r)
        reference_x = square_root(x.T @ x)
    else:
        result = spcakit.fit(x, "encoder-batch", r=k, sparsity=r)
        reference_x = x
    h = result.loadings
    scale = float(np.sum(x**2))
    np.testing.assert_allclose(h.T @ h, np.eye(k), atol=1e-9)
    assert np.count_nonzero(np.any(h != 0, axis=1)) <= r
    m = result.metrics
    optimum = best_rank_k_loss(reference_x, k)
    assert m["loss"] == pytest.approx(pinv_loss(reference_x, h), rel=1e-6, abs=1e-8 * scale)
    assert m["loss"] >= optimum - 1e-8 * scale
    assume(optimum > 1e-6 * scale)
    assert m["normalized_loss"] >= 1.0 - 1e-7
    assert m["normalized_loss"] == pytest.approx(pinv_loss(reference_x, h) / optimum, rel=1e-5)


@st.composite
def iterative_cases(draw):
    x, k, r = draw(encoder_cases(k_max=4))
    available = centred_rank(x)
    # each round needs r_i independent columns of the residual, whose rank drops by one per round
    assume(available - k + 1 >= 1)
    sparsities = [draw(st.integers(1, available - k + 1)) for _ in range(k)]
    return x, k, sparsities


@SETTINGS
@given(iterative_cases(), st.booleans())
def test_iterative_features_are_unit_r_i_sparse_and_the_loss_never_increases(case, as_list):
    x, k, sparsities = case
    sparsity = sparsities if as_list else min(sparsities)
    result = spcakit.fit(x, "encoder-iterative", r=k, sparsity=sparsity, center=False, order="method")
    h = result.loadings
    np.testing.assert_allclose(np.linalg.norm(h, axis=0), 1.0, atol=1e-12)
    limits = sparsities if as_list else [sparsity] * k
    assert all(np.count_nonzero(h[:, j]) <= limits[j] for j in range(k))
    scale = float(np.sum(x**2))
    losses = [pinv_loss(x, h[:, :t]) for t in range(1, k + 1)]
    assert all(b <= a + 1e-9 * scale for a, b in zip(losses, losses[1:]))
    assert losses[0] <= scale + 1e-9 * scale
    # round 1 is the batch encoder with k = 1 on X itself
    first = select("dual-set-columns", x, 1, limits[0])
    assert losses[0] == pytest.approx(column_space_loss(x, first, 1), rel=1e-6, abs=1e-8 * scale)
    assert result.metrics["loss"] == pytest.approx(losses[-1], rel=1e-6, abs=1e-8 * scale)


# -- the residual deflator ---------------------------------------------------------------------------
@SETTINGS
@given(sps.data_matrices((3, 20), (2, 15)), sps.seeds(), st.integers(1, 4))
def test_residual_deflation_is_the_papers_residual_and_a_schur_complement(a, seed, rounds):
    problem = spcakit.as_problem(a)
    x = problem.data
    rng = np.random.default_rng(seed)
    deflator = spcakit.get_registry().build("deflator", "residual")
    found = np.zeros((problem.p, 0))
    current, carry = problem, Carry()
    scale = float(np.sum(x**2))
    rank = centred_rank(x)
    assume(rank >= 2)
    for _ in range(min(rounds, rank - 1)):  # something is left after every round
        h = rng.standard_normal(problem.p) * (rng.random(problem.p) < 0.6)
        if not h.any():
            h[rng.integers(problem.p)] = 1.0
        h /= np.linalg.norm(h)
        found = np.column_stack([found, h])
        before = float(np.sum(current.data**2))
        current, carry = check_deflator_contract(deflator, current, h, found, carry, annihilates=True, keeps_psd=True)
        # the carry says how many features were found, for the residual it returned
        assert features_found(carry, current) == found.shape[1]
        assert carry.get(FEATURES_FOUND).count == found.shape[1]
        b = x @ found
        expected = x - b @ np.linalg.pinv(b, rcond=1e-12) @ x
        np.testing.assert_allclose(current.data, expected, atol=1e-8 * math.sqrt(scale))
        assert float(np.sum(current.data**2)) <= before + 1e-9 * scale  # the loss never increases
        np.testing.assert_allclose(current.data @ found, 0.0, atol=1e-8 * math.sqrt(scale))  # every feature annihilated
        dense = current.covariance.matmat(np.eye(problem.p))
        np.testing.assert_allclose(dense, current.data.T @ current.data / (x.shape[0] - 1), atol=1e-8 * scale)


# -- the metrics ------------------------------------------------------------------------------------
@SETTINGS
@given(sps.data_matrices((3, 25), (2, 15)), sps.seeds(), st.integers(1, 3))
def test_metrics_bounds_and_data_covariance_agreement(a, seed, k):
    a = a - a.mean(axis=0)
    k = min(k, a.shape[1])
    rng = np.random.default_rng(seed)
    h = rng.standard_normal((a.shape[1], k)) * (rng.random((a.shape[1], k)) < 0.5)
    h[0] += 1.0  # no zero column
    problem = spcakit.as_problem(a, center=False)
    on_data = encoder_metrics(h, problem.covariance, a)
    gram = spcakit.as_problem(a.T @ a, covariance=True).covariance
    on_cov = encoder_metrics(h, gram)  # X = (A^T A)^(1/2): the same loss
    scale = float(np.sum(a**2))
    assert on_data["loss"] == pytest.approx(pinv_loss(a, h), rel=1e-6, abs=1e-9 * scale)
    assert on_cov["loss"] == pytest.approx(on_data["loss"], rel=1e-6, abs=1e-9 * scale)
    assert on_cov["symmetric_explained_variance"] == pytest.approx(on_data["symmetric_explained_variance"], rel=1e-6, abs=1e-9)
    assert -1e-12 <= on_data["symmetric_explained_variance"] <= 1.0 + 1e-9
    assume(best_rank_k_loss(a, k) > 1e-6 * scale)
    assert on_data["normalized_loss"] >= 1.0 - 1e-7
    assert on_cov["normalized_loss"] == pytest.approx(on_data["normalized_loss"], rel=1e-5)


@SETTINGS
@given(sps.covariance_problems((2, 15)), st.integers(1, 3))
def test_pca_is_the_optimal_encoder(problem, k):
    k = min(k, problem.p)
    values, vectors = problem.covariance.top_eigenpairs(k)
    assume(values[-1] > 1e-6 * max(values[0], 1e-300))
    m = encoder_metrics(vectors, problem.covariance)
    assert m["symmetric_explained_variance"] == pytest.approx(1.0, abs=1e-8)
    assert m["normalized_loss"] == pytest.approx(1.0, abs=1e-6)


@SETTINGS
@given(sps.data_matrices((3, 30), (2, 15)), sps.seeds())
def test_registered_metrics_are_the_criteria_and_agree_between_operators(a, seed):
    """The three registered metrics are :func:`encoder_metrics` of the run's covariance (the loss scaled to
    the data when the problem has some, which are never read for it), agree with :func:`encoder_metrics` on
    the data, and agree between an explicit covariance and the matrix-free one of the same data."""
    a = a - a.mean(axis=0)
    x = np.random.default_rng(seed).standard_normal((a.shape[1], 2 if a.shape[1] > 1 else 1))
    assert tuple(m.name for m in METRICS) == ENCODER_METRICS
    assert [m.name for m in spcakit.get_registry().metrics() if m.name in ENCODER_METRICS] == list(ENCODER_METRICS)
    names = spcakit.as_problem(a, center=False).feature_names
    gram = Problem(GramCovariance(a, a.shape[0] - 1.0), names)
    dense = Problem(DenseCovariance(a.T @ a / (a.shape[0] - 1.0)), names)
    with_data = Problem(dense.covariance, names, a)
    left, right, on_data = (compute_metrics(problem, x, METRICS) for problem in (gram, dense, with_data))
    for key in ENCODER_METRICS:
        assert left[key] == pytest.approx(right[key], rel=1e-9, abs=1e-12)
    assert right == encoder_metrics(x, dense.covariance)
    # with data the loss is on the data's scale, ||A||_F^2 / tr C = n - 1 times that of X = C^(1/2); the ratios agree
    assert data_divisor(with_data) == pytest.approx(a.shape[0] - 1, rel=1e-9)  # columns never constant: tr C > 0
    assert on_data == {**right, "loss": right["loss"] * data_divisor(with_data)}
    # the data path: exact formulas both, they differ by rounding (squared by the covariance path, see the module)
    reference = encoder_metrics(x, dense.covariance, a)
    assert on_data["loss"] == pytest.approx(reference["loss"], rel=1e-6, abs=1e-9 * float(np.sum(a**2)))
    assert on_data["symmetric_explained_variance"] == pytest.approx(reference["symmetric_explained_variance"], rel=1e-6, abs=1e-9)
