"""``spcakit.stable_k``: a choice of ``k`` that lands on a planted support size on wide data, and stays small on
the colon data, where cross-validation keeps adding genes."""

from __future__ import annotations

import numpy as np
import pytest

import spcakit
from spcakit.core.errors import InvalidParameterError
from spcakit.testing.planted import planted_supports


@pytest.mark.slow
def test_the_choice_lands_near_a_planted_support_of_ten_on_wide_data():
    hits = 0
    for seed in range(10):
        x, _ = planted_supports(60, 2000, [10], [30.0], seed=100 + seed)
        choice = spcakit.stable_k(x, "tpower", r=1, n_resamples=50, seed=seed)
        hits += abs(choice.chosen - 10) <= 2
    assert hits >= 9


def test_the_choice_reports_its_levels_thresholds_and_reason():
    x, _ = planted_supports(60, 400, [6], [30.0], seed=0)
    choice = spcakit.stable_k(x, "tpower", r=1, k="2:12", n_resamples=20, seed=0)
    assert choice.levels == tuple(range(2, 13))
    assert len(choice.stable_sizes) == len(choice.thresholds) == 11
    assert all(0.6 <= t for t in choice.thresholds)
    assert abs(choice.chosen - 6) <= 2
    assert f"k = {choice.chosen}" in choice.reason
    assert choice.stability.result.metrics["pattern"][0] == choice.chosen
    # the threshold at each level is the least that keeps Meinshausen & Bühlmann's bound at error_bound (or 0.6)
    for level, threshold in zip(choice.levels, choice.thresholds):
        assert threshold == pytest.approx(max(0.6, 0.5 + level**2 / (2 * 400 * 1.0)))


def test_the_automatic_grid_stops_where_no_threshold_keeps_the_bound():
    x, _ = planted_supports(40, 100, [4], [20.0], seed=1)
    choice = spcakit.stable_k(x, "tpower", r=1, n_resamples=10, seed=0)
    assert max(choice.levels) == 10  # floor(sqrt(p * error_bound)) = floor(sqrt(100))
    assert "k above 10 was not tried" in choice.reason


def test_colon_data_get_a_small_k_and_a_reason(load_shared):
    x = np.log2(load_shared("colon_alon_62x2000.npz")["X"])
    choice = spcakit.stable_k(x, "tpower", r=1, n_resamples=30, seed=0)
    assert choice.chosen <= 50
    assert "Meinshausen & Bühlmann" in choice.reason


@pytest.mark.parametrize("options,match", [
    ({"error_bound": 0}, "error_bound must be a positive number"),
    ({"min_threshold": 0.4}, "min_threshold must be in"),
])  # fmt: skip
def test_bad_options_are_refused(options, match):
    x = np.random.default_rng(0).standard_normal((20, 10))
    with pytest.raises(InvalidParameterError, match=match):
        spcakit.stable_k(x, "tpower", r=1, **options)
