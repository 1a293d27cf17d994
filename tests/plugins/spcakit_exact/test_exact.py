"""The exact method (issue 26): branch and bound on the support, certified against brute force.

A wrong certificate is worse than none: every search here is compared with the optimum itself, the best
of all supports of the cardinality (small p), on random (Wishart), spiked and tied covariances, with and
without a generalized deflation's constraint; and with the published Pitprops optima.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spcakit
from spcakit.linalg import generalized_top
from spcakit.testing import strategies as sps
from spcakit_exact.search import PRUNE_RTOL, branch_and_bound

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PITPROPS_OPTIMA = {4: 2.937479, 5: 3.406155, 6: 3.770960, 7: 3.996190, 8: 4.068607, 9: 4.138647, 10: 4.172638}


def brute_force(a: np.ndarray, k: int, q: np.ndarray | None = None) -> float:
    def value(s):
        index = np.array(s)
        b = np.eye(k) if q is None else np.eye(k) - q[index] @ q[index].T
        return generalized_top(a[np.ix_(index, index)], b)[0]

    return max(value(s) for s in itertools.combinations(range(a.shape[0]), k))


def _check(a: np.ndarray, k: int, q: np.ndarray | None = None) -> None:
    found = branch_and_bound(a, k, constraint=q)
    optimum = brute_force(a, k, q)
    scale = max(abs(optimum), 1e-300)
    assert found.optimal and found.value == pytest.approx(optimum, rel=1e-9, abs=1e-12 * scale)
    # certified: the bound is the value up to the pruning tolerance and the rounding allowance
    assert found.bound >= optimum and found.bound - found.value <= 2 * PRUNE_RTOL * abs(found.value) + 1e-12 * np.abs(a).max()
    assert len(found.support) == k and np.count_nonzero(found.vector) <= k


@SETTINGS
@given(sps.psd_matrices((2, 10)), st.data())
def test_the_search_finds_the_optimum_of_random_covariances(a, data):
    _check(a, data.draw(st.integers(1, a.shape[0])))


@SETTINGS
@given(sps.tied_covariances((3, 10)), st.data())
def test_the_search_finds_the_optimum_of_tied_covariances(case, data):
    _, a = case
    _check(a, data.draw(st.integers(1, a.shape[0])))


@SETTINGS
@given(sps.seeds(), st.integers(4, 11), st.data())
def test_the_search_finds_the_optimum_of_spiked_covariances(seed, p, data):
    rng = np.random.default_rng(seed)
    spike = np.zeros(p)
    spike[rng.choice(p, size=3, replace=False)] = rng.standard_normal(3)
    a = np.eye(p) + 5 * np.outer(spike, spike) / (spike @ spike)
    _check(a, data.draw(st.integers(1, p)))


@SETTINGS
@given(sps.psd_matrices((3, 9)), sps.seeds(), st.data())
def test_the_search_finds_the_optimum_under_a_generalized_constraint(a, seed, data):
    p = a.shape[0]
    q = np.linalg.qr(np.random.default_rng(seed).standard_normal((p, 1)))[0]
    _check(a, data.draw(st.integers(1, p)), q)


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
    assert result.stopping_reason.startswith("optimal (certified: gap")
    assert not result.warnings


def test_exact_runs_every_deflator_and_says_when_a_limit_stopped_it():
    for deflator in ("generalized", "projection", "hotelling", "schur"):
        result = spcakit.fit("builtin:pitprops", "exact", r=3, k=4, deflator=deflator)
        assert result.metrics["pattern"] == [4, 4, 4] and result.stopping_reason.count("optimal (certified") == 3, deflator
    stopped = spcakit.fit("builtin:pitprops", "exact", r=1, k=6, node_limit=1)
    assert stopped.stopping_reason.startswith("node limit after 1 nodes: best ") and " gap " in stopped.stopping_reason
    assert any("not proven optimal; raise time_limit (--time-limit)" in str(w) for w in stopped.warnings)


def test_the_command_line_takes_a_time_limit():
    from typer.testing import CliRunner

    from spcakit.cli import app

    runner = CliRunner()
    done = runner.invoke(app, ["run", "exact", "-k", "4", "-r", "1", "--time-limit", "30", "--json"])
    assert done.exit_code == 0, done.output
    assert '"time_limit": 30.0' in done.output and "optimal (certified" in done.output
    twice = runner.invoke(app, ["run", "exact", "-k", "4", "--time-limit", "3", "--param", "time_limit=3"])
    assert twice.exit_code == 2 and "given twice" in twice.output
    other = runner.invoke(app, ["run", "spcart", "--time-limit", "3"])
    assert other.exit_code == 2 and "no part of method 'spcart' takes a parameter 'time_limit'" in other.output
