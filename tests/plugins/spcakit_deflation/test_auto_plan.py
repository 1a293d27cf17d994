"""``auto`` on large problems and the restarts' finish on a settled support."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import spcakit
from spcakit_deflation.portfolio import FULL_WORK_LIMIT, LARGE_ITERATIONS, PASS_MEMBERS, problem_work
from spcakit_deflation.restarts import truncated_power


def _spiked(n: int, p: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, p))
    x[:, : p // 4] += 2.0 * rng.standard_normal((n, 1))  # one correlated block
    return x


def test_problem_work_is_min_n_p_times_p_squared_whatever_the_storage():
    x = _spiked(30, 50, 0)
    dense = spcakit.as_problem(x)
    sparse = spcakit.as_problem(sp.csr_array(x))
    tall = spcakit.as_problem(_spiked(80, 20, 1))
    covariance = spcakit.as_problem(np.cov(x.T), covariance=True)
    assert problem_work(dense) == problem_work(sparse) == 30 * 50**2
    assert problem_work(tall) == 20**3  # the covariance is formed: p products cost p^3
    assert problem_work(covariance) == 50**3  # n unknown: the covariance's own size
    assert FULL_WORK_LIMIT >= problem_work(spcakit.as_problem(_spiked(72, 400, 2)))


def test_above_the_limit_auto_runs_the_pass_members_alone_and_unrefined():
    x = _spiked(40, 60, 3)
    large = spcakit.fit(x, "auto", r=2, k=5, metrics=["cpev"], full_work=1000.0)
    assert "a large problem" in large.stopping_reason and "unrefined" in large.stopping_reason
    assert large.stopping_reason.startswith(f"best of {len(PASS_MEMBERS)} by CPEV")
    # the kept loadings are exactly the better of the two members', unrefined
    members = [spcakit.fit(x, name, r=2, k=5, refiner="none", metrics=["cpev"]) for name in PASS_MEMBERS]
    best = max(members, key=lambda result: result.metrics["cpev"])
    np.testing.assert_allclose(large.loadings, best.loadings, atol=1e-12)
    full = spcakit.fit(x, "auto", r=2, k=5, metrics=["cpev"])
    assert "a large problem" not in full.stopping_reason
    assert full.metrics["cpev"] >= large.metrics["cpev"] * (1 - 1e-10)


@pytest.mark.parametrize("seed", range(12))
def test_the_restarts_finish_ends_where_the_iteration_ends(seed):
    """Jumping to the leading eigenvector of a settled support gives the iteration's own limit, start by start."""
    rng = np.random.default_rng(seed)
    p = int(rng.integers(15, 60))
    x = _spiked(int(rng.integers(10, 80)), p, seed)
    problem = spcakit.as_problem(np.corrcoef(x.T) if seed % 2 else np.cov(x.T), covariance=True)
    k = int(rng.integers(2, p // 3))
    starts = rng.standard_normal((p, 8))
    slow = truncated_power(problem, starts, k, tol=1e-12, max_iter=5000, finish_after=0)
    fast = truncated_power(problem, starts, k, tol=1e-12, max_iter=5000)
    assert np.array_equal(slow != 0, fast != 0)  # the same support from every start
    # the same unit vector up to the iteration's tolerance (each column's sign is the iteration's)
    np.testing.assert_allclose(fast, slow, atol=1e-6)


def test_above_the_limit_tpower_has_a_budget_of_iterations_and_auto_keeps_the_better_member():
    # Gaussian noise at a large k: TPower alone needs 327 iterations for 4 loadings to its 1e-7 rule; on a large
    # problem auto gives it LARGE_ITERATIONS over all loadings and keeps the better of it and SPCArt
    x = np.random.default_rng(4).standard_normal((40, 60))
    alone = spcakit.fit(x, "tpower", r=4, k=45, metrics=["cpev"])
    per_loading = -(-LARGE_ITERATIONS // 4)
    assert alone.iterations > 4 * per_loading
    large = spcakit.fit(x, "auto", r=4, k=45, metrics=["cpev"], full_work=1000.0)
    assert f"tpower at most {per_loading} iterations per loading" in large.stopping_reason
    capped = spcakit.fit(x, "tpower", r=4, k=45, metrics=["cpev"],
                         stopper={"name": "any-of", "stoppers": [{"name": "relative-change", "tol": 1e-7},
                                                                 {"name": "max-iterations", "n": per_loading}]})
    assert capped.iterations <= 4 * per_loading
    spcart = spcakit.fit(x, "spcart", r=4, k=45, metrics=["cpev"])
    best = max((capped, spcart), key=lambda result: result.metrics["cpev"])
    np.testing.assert_allclose(large.loadings, best.loadings, atol=1e-12)
    assert large.metrics["cpev"] >= spcart.metrics["cpev"]
    assert large.iterations <= 4 * per_loading + spcart.iterations
