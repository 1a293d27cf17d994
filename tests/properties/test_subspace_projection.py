"""Properties of SPCA-SP's parts (Xu, Yang & Zhang, *Fast Deflation Sparse PCA via Subspace Projections*).

eq. (11) :math:`P_t^\\top \\tilde z_i = 0` for every :math:`i \\le t`; Remark 1's
update spans what eq. (10)'s QR of the whole :math:`B_t` spans; the bounds of
Prop. 3.2 for the three truncations; LinearTimeSVD's basis lies in the row
space of the data; the subspace power step solves the projected eigenproblem.
"""

from __future__ import annotations

import math

import attrs
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spcakit.core.run import build_parts
from spcakit.workflows.configure import configure
from spcakit.core.drivers import DeflationDriver
from spcakit.core.errors import InvalidParameterError
from spcakit.core.plugins import get_registry
from spcakit.core.records import Carry
from spcakit.testing import strategies as sps
from spcakit.parts import truncators as tr
from spcakit_subspace import bounds
from spcakit_subspace import parts as sp
from spcakit_subspace.subspace import SUBSPACE, SearchSubspace

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def run_recording(problem, r, truncator, lam, seed=0, **params):
    """Run spca-sp and return the loadings and the search subspace after every deflation."""
    registry = get_registry()
    spec = configure(registry.method("spca-sp"), truncator=truncator, lam=lam, params=params, registry=registry)
    parts = build_parts(spec, registry, problem)
    seen = []

    def recording(current, x, previous, carry):
        after, next_carry = parts.deflator(current, x, previous, carry)
        assert after is current  # the covariance is not deflated: only the carried subspace moves
        seen.append((next_carry.get(SUBSPACE), previous.copy()))
        return after, next_carry

    try:
        outcome = DeflationDriver()(problem, r, attrs.evolve(parts, deflator=recording), np.random.default_rng(seed))
    except InvalidParameterError as exc:
        # legitimate only when a loading left inside P used the last search direction up
        assert "used up" in str(exc) and seen and seen[-1][0].dimension == 0, exc
        return None, seen
    return outcome.loadings, seen


@st.composite
def spca_sp_cases(draw):
    problem = draw(st.one_of(sps.covariance_problems((4, 14)), sps.data_problems((3, 30), (4, 14))))
    rank = problem.max_rank
    m = draw(st.integers(1, max(1, min(rank, problem.p - 1, 5))))
    r = draw(st.integers(1, max(1, min(4, problem.p - m))))
    kind = draw(st.sampled_from(["sparsity", "energy", "hard"]))
    lam = {"sparsity": draw(st.integers(0, problem.p - 1)),
           "energy": draw(st.floats(0.0, 0.5)),
           "hard": draw(st.floats(0.0, 0.9 / math.sqrt(problem.p)))}[kind]
    return problem, m, r, kind, lam


@SETTINGS
@given(spca_sp_cases(), sps.seeds())
def test_each_new_search_subspace_is_orthogonal_to_every_loading_so_far_eq_11(case, seed):
    problem, m, r, kind, lam = case
    loadings, seen = run_recording(problem, r, kind, lam, seed=seed, m=m)
    assert len(seen) == r - 1 or loadings is None
    for after, previous in seen:
        basis = after.basis
        assert basis.shape[1] <= m
        np.testing.assert_allclose(basis.T @ basis, np.eye(basis.shape[1]), atol=1e-10)
        unit = previous / np.linalg.norm(previous, axis=0)
        np.testing.assert_allclose(basis.T @ unit, 0.0, atol=1e-9)


@SETTINGS
@given(spca_sp_cases(), sps.seeds())
def test_remark_1_update_spans_the_same_subspace_as_the_qr_of_the_whole_b_t_eq_10(case, seed):
    problem, m, r, kind, lam = case
    loadings, seen = run_recording(problem, r, kind, lam, seed=seed, m=m)
    basis_before = [s[0].basis for s in seen]
    initial = sp.LinearTimeSVDInitializer(m=m).prepare(problem, r, np.random.default_rng(seed), Carry()).get(SUBSPACE).basis
    for t, (after, previous) in enumerate(seen, start=1):
        prior = initial if t == 1 else basis_before[t - 2]
        b_t = np.column_stack([previous / np.linalg.norm(previous, axis=0), prior])
        q, upper = np.linalg.qr(b_t)
        if np.abs(np.diag(upper)).min() < 1e-6 or prior.shape[1] < m or t + m > problem.p:
            continue  # rank-deficient B_t: eq. (10)'s extra columns are arbitrary
        reference = q[:, t : t + m]
        ours = after.basis
        np.testing.assert_allclose(ours @ ours.T, reference @ reference.T, atol=1e-8)


@SETTINGS
@given(sps.orthonormal_matrices((2, 30), 2), st.data())
def test_prop_3_2_orthogonality_bounds_of_the_three_truncations(pair, data):
    a, b = pair[:, 0], pair[:, 1]
    d = b.size
    kind = data.draw(st.sampled_from(["sparsity", "energy", "hard"]))
    if kind == "sparsity":
        kappa = data.draw(st.integers(1, d - 1))
        truncated = tr.SparsityTruncation(n_zeros=kappa)(b[:, None])[:, 0]
        bound = bounds.truncation_orthogonality_bound("sparsity", kappa, d)
    elif kind == "energy":
        kappa = data.draw(st.floats(1e-6, 1 - 1e-6))
        truncated = tr.EnergyTruncation(energy=kappa)(b[:, None])[:, 0]
        bound = bounds.truncation_orthogonality_bound("energy", kappa, d)
    else:
        kappa = data.draw(st.floats(1e-6, 0.999 * float(np.abs(b).max())))
        truncated = tr.HardThreshold(threshold=kappa)(b[:, None])[:, 0]
        bound = bounds.truncation_orthogonality_bound("hard", kappa, d, nonzeros=int(np.count_nonzero(truncated)))
    assert bounds.pair_orthogonality(a, truncated) >= bound - 1e-12


@SETTINGS
@given(sps.data_matrices((3, 30), (3, 25)), sps.seeds(), st.data())
def test_linear_time_svd_basis_is_orthonormal_and_lies_in_the_row_space(x, seed, data):
    x = x - x.mean(axis=0)
    rank = np.linalg.matrix_rank(x)
    m = data.draw(st.integers(1, max(1, rank)))
    c = data.draw(st.integers(m, min(x.shape)))
    basis = sp.linear_time_svd(x, m, c, np.random.default_rng(seed))
    assert 1 <= basis.shape[1] <= m
    np.testing.assert_allclose(basis.T @ basis, np.eye(basis.shape[1]), atol=1e-10)
    _, _, vt = np.linalg.svd(x, full_matrices=False)
    row_space = vt[:rank].T
    np.testing.assert_allclose(row_space @ (row_space.T @ basis), basis, atol=1e-8)


@SETTINGS
@given(sps.covariance_problems((2, 15)), sps.seeds(), st.sampled_from(["eigh", "power"]), st.data())
def test_subspace_power_step_is_the_top_eigenvector_of_the_projected_covariance(problem, seed, solver, data):
    m = data.draw(st.integers(1, problem.p))
    rng = np.random.default_rng(seed)
    basis, _ = np.linalg.qr(rng.standard_normal((problem.p, m)))
    updater = sp.SubspacePowerUpdater(solver=solver, tol=1e-13, max_iter=20000)
    state = updater.init(problem, basis[:, :1], Carry().set(SUBSPACE, SearchSubspace(basis)))
    z, objective, state_after = updater.propose(problem, basis[:, :1], state)
    assert state_after is state
    small = basis.T @ problem.covariance.matmat(basis)
    values = np.linalg.eigvalsh((small + small.T) / 2)
    gap = values[-1] - values[-2] if m > 1 else np.inf
    if gap < 1e-3 * max(values[-1], 1e-12):
        return  # no well-defined top eigenvector: the power method may stall between the two
    assert abs(objective - values[-1]) <= 1e-8 * max(1.0, abs(values[-1]))
    np.testing.assert_allclose(np.linalg.norm(z), 1.0, atol=1e-10)
    np.testing.assert_allclose(basis @ (basis.T @ z[:, 0]), z[:, 0], atol=1e-10)


def test_prop_3_2_bound_refuses_what_it_cannot_bound():
    import pytest

    with pytest.raises(ValueError, match="number of nonzeros"):
        bounds.truncation_orthogonality_bound("hard", 0.1, 10)
    with pytest.raises(ValueError, match="valid: sparsity, energy, hard"):
        bounds.truncation_orthogonality_bound("soft", 0.1, 10)
