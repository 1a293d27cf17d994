"""Properties of the ``swap`` refiner: block coordinate ascent on CPEV by support swaps.

For random problems (explicit covariances and centred data, full or low rank) and random sparse
loadings, the refined loadings

* explain at least the input's variance (CPEV, up to the refiner's own tie tolerance
  ``KEEP_RTOL = 1e-12``, relative: the input is returned when it explains more than that);
* keep each loading's number of nonzeros, and have unit columns;
* are a fixed point: refining them again returns them unchanged (exactly: every move must gain more
  than a tolerance far above rounding, ``REFIT_RTOL = 1e-10`` for a re-fit and ``tol = 1e-9`` for a
  swap, and a refined result has none left);
* are permutation-equivariant: refining the problem with its variables permuted gives the refined
  loadings with their rows permuted, when there are no exact ties: Gaussian factors, a ridge when the
  covariance is drawn, and supports small enough that no two give the same added variance (see the
  test). The supports are then equal and the loadings agree to the refiner's convergence tolerance
  (1e-6: a re-fit is made only when it gains more than 1e-10 of the span's variance, so the loadings
  it leaves are accurate to about the square root of that).
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from spcakit.analysis.metrics import cpev
from spcakit.inputs.dense import covariance_problem, data_problem
from spcakit.testing import strategies as sps
from spcakit_deflation.swap import KEEP_RTOL, SupportSwap

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
#: Loadings of a refined permuted problem agree with the permuted refined loadings to this (see the module).
EQUIVARIANCE_ATOL = 1e-6


def sparse_loadings(p: int, r: int, seed: int) -> np.ndarray:
    """``r`` unit loadings with random supports (at least one nonzero each) and Gaussian values."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((p, r)) * (rng.random((p, r)) < 0.4)
    x[rng.integers(p, size=r), np.arange(r)] = rng.standard_normal(r) + 3.0  # no empty loading
    return x / np.linalg.norm(x, axis=0)


@SETTINGS
@given(sps.problems((2, 24)), st.integers(1, 4), sps.seeds())
def test_swap_never_lowers_cpev_and_keeps_cardinalities_and_unit_columns(problem, r, seed):
    r = min(r, problem.p)
    x = sparse_loadings(problem.p, r, seed)
    refined = SupportSwap()(problem, x)
    out = refined.loadings
    assert out.shape == x.shape
    np.testing.assert_array_equal(np.count_nonzero(out, axis=0), np.count_nonzero(x, axis=0))
    np.testing.assert_allclose(np.linalg.norm(out, axis=0), 1.0, rtol=1e-12)
    before, after = cpev(x, problem.covariance), cpev(out, problem.covariance)
    assert after >= before - KEEP_RTOL * max(abs(before), abs(after))
    assert refined.report["cpev_before"] == before and refined.report["cpev_after"] == after
    assert refined.report["swaps"] >= 0 and refined.report["sweeps"] >= 0


@SETTINGS
@given(sps.problems((2, 24)), st.integers(1, 4), sps.seeds())
def test_a_refined_result_is_a_fixed_point(problem, r, seed):
    r = min(r, problem.p)
    refined = SupportSwap()(problem, sparse_loadings(problem.p, r, seed))
    again = SupportSwap()(problem, refined.loadings)
    np.testing.assert_array_equal(again.loadings, refined.loadings)
    assert again.report["swaps"] == 0


@st.composite
def problem_makers(draw):
    """``(p, rank, make)``: ``make(perm)`` builds the problem with its variables in the order ``perm``.

    A covariance with a ridge, centred data with more samples than variables (an explicit covariance),
    or wide data (a matrix-free operator of rank n - 1): Gaussian factors, no exact ties.
    """
    kind = draw(st.sampled_from(("covariance", "data", "wide data")))
    if kind == "covariance":
        c = draw(sps.psd_matrices((3, 20), ridge=True))
        return c.shape[0], c.shape[0], lambda perm: covariance_problem(c[np.ix_(perm, perm)])
    p = draw(st.integers(3, 20)) if kind == "data" else draw(st.integers(12, 30))
    n_range = (p + 5, p + 30) if kind == "data" else (8, p - 4)
    a = draw(sps.data_matrices(n_range, p))
    return p, min(p, a.shape[0] - 1), lambda perm: data_problem(a[:, perm])


@SETTINGS
@given(problem_makers(), st.integers(1, 3), st.integers(1, 5), sps.seeds(), sps.seeds())
def test_swap_is_permutation_equivariant(maker, r, k, seed, permutation_seed):
    """Supports of k variables with k + r - 1 < rank: two supports never give the same added variance.

    (With k + r - 1 >= rank, :math:`P e_S` spans the whole range of :math:`PCP` for many supports :math:`S`,
    exact ties that the tie rule breaks by variable index, which a permutation changes.)
    """
    p, rank, make = maker
    assume(k + r - 1 < rank)
    rng = np.random.default_rng(seed)
    x = np.zeros((p, r))
    for t in range(r):
        x[rng.choice(p, size=k, replace=False), t] = rng.standard_normal(k)
    x /= np.linalg.norm(x, axis=0)
    perm = np.random.default_rng(permutation_seed).permutation(p)
    out = SupportSwap()(make(np.arange(p)), x).loadings
    out_permuted = SupportSwap()(make(perm), x[perm]).loadings
    np.testing.assert_array_equal(out_permuted != 0, out[perm] != 0)
    np.testing.assert_allclose(out_permuted, out[perm], atol=EQUIVARIANCE_ATOL)
