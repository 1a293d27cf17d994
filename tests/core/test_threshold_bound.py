"""The threshold bound (spcakit.bounds.threshold_bound, thresholded_spectrum): never below the optimum.

Any rho >= 0 gives a valid bound, so the tests draw rho freely as well as take the default grid, and compare
with brute force (every support of the cardinality: spcakit.testing.brute_force_optimum, support_values) on
random, Wishart (n < p), spiked and tied covariances and correlations up to p = 16; at a node of the exact
search, with some variables fixed in, against the best support that contains them.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spcakit
from spcakit.bounds import (
    COMPONENT_SIZE,
    spectral_knapsack,
    sparse_variance_bound,
    threshold_bound,
    thresholded_spectrum,
)
from spcakit.testing import brute_force_optimum, support_values
from spcakit.testing import strategies as sps

SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FAMILIES = {name: st.one_of(any_p, sps.covariance_families(16)[name])
            for name, any_p in sps.covariance_families((2, 16)).items()}  # fmt: skip
PITPROPS_OPTIMA = {4: 2.937479, 5: 3.406155, 6: 3.770960, 7: 3.996190, 8: 4.068607, 9: 4.138647, 10: 4.172638}


def _rounding(c: np.ndarray) -> float:
    """The reference's own rounding (p eps lambda_max), as in test_bounds."""
    return c.shape[0] * np.finfo(float).eps * max(float(np.linalg.eigvalsh(c)[-1]), 0.0)


@pytest.mark.parametrize("family", sorted(FAMILIES))
@SETTINGS
@given(data=st.data())
def test_the_threshold_bound_is_never_below_the_optimum(family, data):
    _, c = data.draw(FAMILIES[family], label="(kind, C)")
    scale = float(np.diag(c).max())
    share = data.draw(st.floats(0.0, 2.0), label="rho / max C_ii")
    for k in range(1, c.shape[0] + 1):
        optimum = brute_force_optimum(c, k)[0]
        grid, _ = threshold_bound(c, k)
        drawn, _ = threshold_bound(c, k, [share * scale])
        assert min(grid, drawn) >= optimum - _rounding(c), (k, grid, drawn, optimum)


@pytest.mark.parametrize("family", sorted(FAMILIES))
@SETTINGS
@given(data=st.data())
def test_with_variables_fixed_in_it_bounds_every_support_that_contains_them(family, data):
    _, c = data.draw(FAMILIES[family], label="(kind, C)")
    p = c.shape[0]
    k = data.draw(st.integers(1, p), label="k")
    fixed_at = data.draw(st.lists(st.integers(0, p - 1), max_size=k, unique=True), label="fixed")
    rho = data.draw(st.floats(0.0, 2.0), label="rho share") * float(np.diag(c).max())
    fixed = np.zeros(p, dtype=bool)
    fixed[fixed_at] = True
    rest = [i for i in range(p) if not fixed[i]]
    supports = np.array([sorted(fixed_at + list(more)) for more in itertools.combinations(rest, k - len(fixed_at))])
    best = float(support_values(c, supports).max())
    spectrum = thresholded_spectrum(c, rho, k, fixed)
    bound = spectral_knapsack(spectrum.values, spectrum.capacities) + rho * (k - 1)
    assert bound >= best - _rounding(c), (k, fixed_at, rho, bound, best)


def test_components_give_the_spectrum_of_the_whole_thresholded_matrix():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((40, COMPONENT_SIZE + 60)) * rng.uniform(0.2, 3.0, COMPONENT_SIZE + 60)
    c = x.T @ x / 40
    rho = float(np.quantile(np.abs(c[np.triu_indices_from(c, 1)]), 0.97))
    whole = np.sign(c) * np.maximum(np.abs(c) - rho, 0.0)
    whole[np.diag_indices_from(whole)] = np.diag(c)
    spectrum = thresholded_spectrum(c, rho, 5)  # above COMPONENT_SIZE: decomposed by connected components
    np.testing.assert_allclose(np.sort(spectrum.values), np.linalg.eigvalsh(whole), atol=1e-10 * np.abs(c).max())
    assert spectrum.top.max() > 0 and np.isclose(np.linalg.norm(spectrum.top), 1.0)


def test_on_pitprops_it_lies_above_the_optima_and_below_the_plain_eigenvalue():
    c = spcakit.datasets.pitprops().matrix
    top = float(np.linalg.eigvalsh(c)[-1])
    for k, optimum in PITPROPS_OPTIMA.items():
        bound, rho = threshold_bound(c, k)
        assert optimum <= bound <= top * (1 + 1e-12) and rho >= 0, (k, bound)
        assert bound <= sparse_variance_bound(c, k).value * (1 + 1e-12)


def test_the_knapsack_fills_the_largest_values_first():
    assert spectral_knapsack(np.array([1.0, 5.0, 3.0]), np.array([1.0, 0.25, 0.5])) == pytest.approx(0.25 * 5 + 0.5 * 3 + 0.25)
    assert spectral_knapsack(np.array([-2.0, -1.0]), np.array([1.0, 1.0])) == 0.0  # negative values count as 0
