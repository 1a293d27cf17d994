"""SPCA-SP (Xu, Yang & Zhang): the method as a user runs it — parameters, seeds, errors, composition."""

from __future__ import annotations

import numpy as np
import pytest

import spcakit
from spcakit.core.errors import InvalidParameterError
from spcakit.analysis.metrics import orthogonality
from spcakit.core.records import Carry
from spcakit.parts.truncators import HardThreshold
from spcakit_subspace.parts import HouseholderSubspaceDeflation, LinearTimeSVDInitializer, SubspacePowerUpdater
from spcakit_subspace.subspace import SUBSPACE, SearchSubspace

WIDE = "builtin:random?n=30&p=200&seed=3"


def wide(seed: int = 3) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((30, 200))


def test_same_seed_same_loadings_and_the_seed_matters_when_rows_are_sampled():
    x = wide()
    first = spcakit.fit(x, "spca-sp", r=4, truncator="sparsity", lam=150, m=6, c=12, seed=7)
    again = spcakit.fit(x, "spca-sp", r=4, truncator="sparsity", lam=150, m=6, c=12, seed=7)
    other = spcakit.fit(x, "spca-sp", r=4, truncator="sparsity", lam=150, m=6, c=12, seed=8)
    np.testing.assert_array_equal(first.loadings, again.loadings)
    assert not np.allclose(first.loadings, other.loadings)


def test_exact_initial_subspace_ignores_the_seed_and_sampling_all_rows_approximates_it():
    x = wide()
    exact = [spcakit.fit(x, "spca-sp", r=3, truncator="energy", lam=0.1, m=5, exact=True, seed=s).loadings for s in (0, 1)]
    np.testing.assert_array_equal(exact[0], exact[1])
    pca = spcakit.fit(x, "pca", r=3).metrics["cpev"]
    sampled = spcakit.fit(x, "spca-sp", r=3, truncator="energy", lam=0.1, m=5, c=30, seed=0).metrics["cpev"]
    assert 0.5 * pca < sampled <= pca + 1e-12


def test_loadings_are_unit_and_follow_the_sparsity_truncation():
    result = spcakit.fit(wide(), "spca-sp", r=5, truncator="sparsity", lam=170, m=8)
    np.testing.assert_allclose(np.linalg.norm(result.loadings, axis=0), 1.0, atol=1e-12)
    assert result.metrics["pattern"] == [30] * 5
    assert result.metrics["orthogonality"] == pytest.approx(orthogonality(result.loadings))


def test_no_truncation_gives_the_principal_subspace_of_an_exact_p0():
    # with P0 = top-m eigenvectors and nothing truncated, SPCA-SP is PCA inside P0: r <= m loadings = top-r PCs
    c = spcakit.fit("builtin:pitprops", "pca", r=3).loadings
    sp = spcakit.fit("builtin:pitprops", "spca-sp", r=3, truncator="none", m=5).loadings
    np.testing.assert_allclose(np.abs(sp.T @ c), np.eye(3), atol=1e-8)


@pytest.mark.parametrize(
    "params,phrases",
    [
        ({"m": 0}, ["linear-time-svd: m must be a positive integer", "got 0"]),
        ({"m": 2.5}, ["linear-time-svd: m must be a positive integer", "got 2.5"]),
        ({"m": 40}, ["m=40 exceeds the rank", "1 <= m <= 29"]),
        ({"m": 6, "c": 3}, ["c=3", "m <= c <= min(n, d) = 30"]),
        ({"m": 6, "c": 31}, ["c=31", "m <= c <= min(n, d) = 30"]),
        ({"c": 0}, ["linear-time-svd: c must be a positive integer", "got 0"]),
        ({"exact": "yes"}, ["exact must be true or false"]),
        ({"solver": "lanczos"}, ["subspace-power: solver must be one of eigh, power", "'lanczos'"]),
        ({"max_iter": 0}, ["subspace-power: max_iter must be a positive integer"]),
    ],
)
def test_bad_subspace_parameters_say_what_is_valid(params, phrases):
    with pytest.raises(InvalidParameterError) as info:
        spcakit.fit(wide(), "spca-sp", r=2, **params)
    for phrase in phrases:
        assert phrase in str(info.value)


def test_cli_bad_m_exits_2_with_one_error_line(cli):
    result = cli.invoke("run", "spca-sp", "--data", WIDE, "--param", "m=0")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "m must be a positive integer" in result.stderr


def test_a_used_up_subspace_is_a_clear_error():
    # nothing truncated: every loading lies inside P and takes one of its m = 2 directions
    with pytest.raises(InvalidParameterError, match="used up after 2 loadings"):
        spcakit.fit("builtin:pitprops", "spca-sp", r=3, truncator="none", m=2)


def test_other_deflators_compose_with_the_subspace_power_step():
    # Schur deflation of the covariance with a fixed P0: each loading is sought in span(P0) of the deflated C
    result = spcakit.fit("builtin:pitprops", "spca-sp", r=4, deflator="schur", truncator="sparsity", lam=9, m=6)
    assert result.metrics["pattern"] == [4] * 4
    assert result.spec["deflator"]["name"] == "schur"


def test_subspace_power_outside_spca_sp_says_what_it_needs():
    spec = spcakit.compose(driver="deflation", initializer="max-diagonal", updater="subspace-power",
                           truncator="hard", deflator="projection")
    with pytest.raises(InvalidParameterError, match="linear-time-svd"):
        spcakit.fit("builtin:pitprops", spec, r=2)


def test_cli_text_reports_orthogonality(cli):
    result = cli.invoke("run", "spca-sp", "--data", "builtin:pitprops", "-r", "6", "--truncator", "sparsity", "--lam", "10", "--param", "m=5")
    assert result.exit_code == 0, result.output
    assert "orth." in result.stdout and "0.9567" in result.stdout


def test_householder_subspace_outside_spca_sp_says_what_it_needs():
    with pytest.raises(InvalidParameterError, match="linear-time-svd"):
        spcakit.fit("builtin:pitprops", "rsvd-gp", r=2, deflator="householder-subspace")


def test_prepare_puts_the_search_subspace_in_the_carry_and_the_deflator_hands_on_the_next():
    problem = spcakit.as_problem(wide())
    initializer = LinearTimeSVDInitializer(m=4, c=10)
    carry = initializer.prepare(problem, 2, np.random.default_rng(0), Carry())
    subspace = carry.get(SUBSPACE)
    assert isinstance(subspace, SearchSubspace) and subspace.dimension == 4
    np.testing.assert_allclose(subspace.image, problem.covariance.matmat(subspace.basis), atol=1e-10)
    x = initializer(problem, 1, np.random.default_rng(0), carry)
    np.testing.assert_array_equal(x, subspace.basis[:, :1])
    state = SubspacePowerUpdater().init(problem, x, carry)
    z, _, same = SubspacePowerUpdater().propose(problem, x, state)
    assert same is state
    loading = HardThreshold(0.05)(z)[:, 0]
    after, next_carry = HouseholderSubspaceDeflation()(problem, loading, loading[:, None], carry)
    assert after is problem and carry.get(SUBSPACE) is subspace  # the carry is immutable
    np.testing.assert_allclose(next_carry.get(SUBSPACE).basis.T @ loading, 0.0, atol=1e-10)
