"""The small dense helpers of :mod:`spcakit.numerics.linalg`."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spcakit.numerics.linalg import sum_of_largest


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=8), st.integers(-1, 10))
def test_the_sum_of_the_largest_values_is_the_best_subset_sum_of_that_size(values, count):
    # brute force over every subset of exactly min(count, n) entries: the largest such sum (0 for none)
    size = min(max(count, 0), len(values))
    best = max(sum(subset) for subset in itertools.combinations(values, size)) if size else 0.0
    scale = max(1.0, max(abs(v) for v in values)) * len(values)
    assert sum_of_largest(np.array(values), count) == pytest.approx(best, abs=1e-12 * scale)


def test_the_sum_of_the_largest_values_reads_a_matrix_as_its_entries():
    assert sum_of_largest(np.array([[3.0, -1.0], [5.0, 2.0]]), 2) == 8.0
