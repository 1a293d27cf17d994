"""``spcakit.information_k``: the extended BIC finds a planted support size on wide data; the criterion is its
formula; inputs without rows are refused."""

from __future__ import annotations

import math

import numpy as np
import pytest

import spcakit
from spcakit.core.errors import InvalidParameterError
from spcakit.testing.planted import planted_supports
from spcakit.workflows.paths.criteria import criterion_values


def test_ebic_lands_on_a_planted_support_of_ten():
    hits = 0
    for seed in range(10):
        x, _ = planted_supports(60, 2000, [10], [30.0], seed=100 + seed)
        hits += abs(spcakit.information_k(x, "tpower", 1, k="1:30").chosen - 10) <= 2
    assert hits >= 9


def test_the_criteria_are_their_formulas():
    cpev, nz, n, p = [0.1, 0.3, 0.31], [1, 5, 6], 50, 400
    ebic = criterion_values(cpev, nz, n, p, "ebic")
    gic = criterion_values(cpev, nz, n, p, "gic")
    for i in range(3):
        likelihood = n * p * math.log(1 - cpev[i])
        assert ebic[i] == pytest.approx(likelihood + nz[i] * (math.log(n) + 2 * math.log(p)))
        assert gic[i] == pytest.approx(likelihood + nz[i] * math.log(p) * math.log(math.log(n)))


def test_the_choice_is_the_least_value_of_its_path():
    x, _ = planted_supports(80, 300, [6], [25.0], seed=1)
    choice = spcakit.information_k(x, "tpower", 1, k="2:12", criterion="gic")
    assert choice.levels == tuple(range(2, 13))
    assert choice.chosen == choice.levels[int(np.argmin(choice.values))]
    assert np.count_nonzero(choice.result.loadings) == choice.chosen
    assert "same noise variance" in choice.reason


def test_covariances_and_unknown_criteria_are_refused():
    with pytest.raises(InvalidParameterError, match="number of rows"):
        spcakit.information_k("builtin:pitprops", "tpower", 1, k="1:5")
    with pytest.raises(InvalidParameterError, match="criterion must be one of"):
        spcakit.information_k(np.random.default_rng(0).standard_normal((20, 5)), "tpower", 1, criterion="aic")
