"""The ``support-refit`` refiner: GPower's pattern filling, generalised to the added variance."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spcakit
from spcakit.analysis.metrics import additional_variances, cpev
from spcakit.numerics.operators import densify
from spcakit.core.plugins import get_registry
from spcakit.testing import strategies as sps
from spcakit_spcart.refiners import SupportRefit

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def sparse_loadings(p: int, r: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((p, r)) * (rng.random((p, r)) < 0.5)
    x[rng.integers(p, size=r), np.arange(r)] += 1.0  # no empty loading
    return x / np.linalg.norm(x, axis=0)


@SETTINGS
@given(sps.problems((2, 25)), st.integers(1, 4), sps.seeds())
def test_refit_keeps_supports_unit_columns_and_never_lowers_cpev(problem, r, seed):
    r = min(r, problem.p)
    x = sparse_loadings(problem.p, r, seed)
    refined = SupportRefit()(problem, x)
    assert refined.shape == x.shape
    assert np.all((refined != 0) <= (x != 0))  # zeros stay zeros
    np.testing.assert_allclose(np.linalg.norm(refined, axis=0), 1.0, rtol=1e-12)
    c = problem.covariance
    assert cpev(refined, c) >= cpev(x, c) - 1e-12 * max(1.0, cpev(x, c))


@SETTINGS
@given(sps.covariance_problems((2, 20)), sps.seeds())
def test_the_first_loading_is_the_leading_eigenvector_on_its_support(problem, seed):
    x = sparse_loadings(problem.p, 1, seed)
    refined = SupportRefit()(problem, x)[:, 0]
    support = np.flatnonzero(x[:, 0])
    c_ss = densify(problem.covariance)[np.ix_(support, support)]
    top = np.linalg.eigvalsh(c_ss)[-1]
    assert float(refined @ problem.covariance.matmat(refined)) == pytest.approx(top, rel=1e-9, abs=1e-12)


@SETTINGS
@given(sps.covariance_problems((3, 15)), sps.seeds())
def test_each_loading_maximises_its_added_variance_on_its_support(problem, seed):
    """No vector on S_t adds more variance to the earlier refitted loadings than the refitted x_t."""
    x = sparse_loadings(problem.p, 2, seed)
    refined = SupportRefit()(problem, x)
    if np.array_equal(refined, x):  # the guard returned the input (CPEV would have dropped)
        return
    c = problem.covariance
    added = additional_variances(refined, c)[1]
    rng = np.random.default_rng(seed)
    support = np.flatnonzero(x[:, 1])
    for _ in range(20):
        trial = refined.copy()
        trial[:, 1] = 0.0
        trial[support, 1] = rng.standard_normal(support.size)
        assert additional_variances(trial, c)[1] <= added * (1 + 1e-9) + 1e-12


def test_a_fixed_point_is_returned_unchanged():
    problem = spcakit.as_problem(np.diag([5.0, 4.0, 3.0, 2.0]), covariance=True)
    x = np.eye(4)[:, :2]
    np.testing.assert_allclose(SupportRefit()(problem, x), x, atol=1e-14)


def test_refit_on_wide_data_forms_nothing_p_by_p():
    import tracemalloc

    rng = np.random.default_rng(0)
    a = rng.standard_normal((30, 3000))
    problem = spcakit.as_problem(a)
    x = sparse_loadings(3000, 3, 1) * (rng.random((3000, 3)) < 0.01)
    x[0] = 1.0
    x /= np.linalg.norm(x, axis=0)
    tracemalloc.start()
    SupportRefit()(problem, x)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 3000 * 3000 * 8 / 10  # far below one p x p matrix (72 MB)


def test_gpower_defaults_refit_and_the_experiments_pin_the_published_runs():
    registry = get_registry()
    for name in ("gpower-l0", "gpower-l1", "gpower-l0-block", "gpower-l1-block"):
        assert registry.method(name).refiner.name == "support-refit"
    plain = spcakit.fit("builtin:pitprops", "gpower-l1", r=3, lam=0.3, refiner="none")
    refit = spcakit.fit("builtin:pitprops", "gpower-l1", r=3, lam=0.3)
    assert refit.metrics["pattern"] == plain.metrics["pattern"]
    assert refit.metrics["cpev"] > plain.metrics["cpev"]
    assert refit.spec["refiner"]["name"] == "support-refit" and plain.spec["refiner"] is None


def test_any_method_takes_a_refiner_by_configuration():
    base = spcakit.fit("builtin:pitprops", "spcart", r=4)
    refit = spcakit.fit("builtin:pitprops", "spcart", r=4, refiner="support-refit")
    assert refit.metrics["pattern"] == base.metrics["pattern"]
    assert refit.metrics["cpev"] >= base.metrics["cpev"]
    spec = spcakit.compose(driver="deflation", truncator="energy", refiner="support-refit")
    assert spec.refiner.name == "support-refit"
    with pytest.raises(spcakit.UnknownNameError, match="unknown refiner 'nope'"):
        spcakit.fit("builtin:pitprops", "spcart", r=2, refiner="nope")


def test_the_cli_takes_a_refiner(cli):
    import json


    plain = cli.invoke("run", "gpower-l1", "--lam", "0.3", "-r", "3", "--refiner", "none", "--json")
    refit = cli.invoke("run", "spcart", "-r", "3", "--refiner", "support-refit", "--json")
    assert plain.exit_code == 0 and refit.exit_code == 0, plain.output + refit.output
    assert json.loads(plain.stdout)["spec"]["refiner"] is None
    assert json.loads(refit.stdout)["spec"]["refiner"] == {"name": "support-refit"}
    bad = cli.invoke("run", "spcart", "--refiner", "nope")
    assert bad.exit_code == 2 and "unknown refiner 'nope'" in bad.output
