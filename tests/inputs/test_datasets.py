"""spcakit.datasets: the generated data sets."""

from __future__ import annotations

import numpy as np
import pytest

from spcakit.inputs.datasets import planted_support
from spcakit.core.errors import InvalidDataError


def test_planted_support_puts_each_factor_on_its_own_block():
    x = planted_support(20000, 12, [3, 4], [3.0, 2.0], seed=1, shuffle=False).matrix
    c = np.cov(x, rowvar=False)
    # each block: unit noise plus strength^2 / size on the diagonal and, off the diagonal, +-strength^2 / size
    np.testing.assert_allclose(np.abs(c[:3, :3]) - np.eye(3), 9.0 / 3, atol=0.15)
    np.testing.assert_allclose(np.abs(c[3:7, 3:7]) - np.eye(4), 4.0 / 4, atol=0.1)
    np.testing.assert_allclose(c[7:, 7:], np.eye(5), atol=0.05)  # noise only
    assert np.abs(c[:3, 3:]).max() < 0.1  # the blocks are disjoint


def test_planted_support_is_seeded_and_shuffles_the_columns():
    first = planted_support(50, 10, [4], [2.0], seed=3)
    assert np.array_equal(first.matrix, planted_support(50, 10, [4], [2.0], seed=3).matrix)
    plain = planted_support(50, 10, [4], [2.0], seed=3, shuffle=False).matrix
    assert sorted(map(tuple, first.matrix.T)) == sorted(map(tuple, plain.T))  # the same columns, reordered
    assert not np.array_equal(first.matrix, plain)


@pytest.mark.parametrize("n, p, sizes, strengths", [(1, 5, [2], [1.0]), (10, 5, [3, 3], [1.0, 1.0]),
                                                    (10, 5, [2], [1.0, 2.0]), (10, 5, [0], [1.0]), (10, 5, [], [])])
def test_planted_support_refuses_impossible_designs(n, p, sizes, strengths):
    with pytest.raises(InvalidDataError, match="planted_support needs"):
        planted_support(n, p, sizes, strengths)
