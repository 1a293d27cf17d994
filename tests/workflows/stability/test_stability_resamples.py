"""The pure pieces of a stability analysis: resampled rows, matching, summaries and Meinshausen & Bühlmann's bound."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spcakit.workflows.stability.resamples import (
    false_selection_bound,
    matched,
    resample_rows,
    resample_seed,
    sparse_columns,
    summarise,
    threshold_for_bound,
)  # fmt: skip


@pytest.mark.parametrize("n", [4, 5, 31, 62])
def test_subsamples_hold_half_the_rows_once_each(n):
    for rows in resample_rows(n, 20, "subsample", seed=3):
        assert rows.size == n // 2
        assert np.unique(rows).size == rows.size
        assert np.all(np.diff(rows) > 0) and rows.min() >= 0 and rows.max() < n


def test_bootstrap_samples_hold_n_rows_with_repeats():
    draws = resample_rows(50, 40, "bootstrap", seed=1)
    assert all(rows.size == 50 and np.all(np.diff(rows) >= 0) for rows in draws)
    assert any(np.unique(rows).size < rows.size for rows in draws)  # 50 draws of 50 rows repeat one almost surely


def test_resamples_depend_only_on_the_seed_and_their_position():
    long, short = resample_rows(40, 100, "subsample", 7), resample_rows(40, 50, "subsample", 7)
    assert all(np.array_equal(a, b) for a, b in zip(long[:50], short))
    other = resample_rows(40, 50, "subsample", 8)
    assert not all(np.array_equal(a, b) for a, b in zip(short, other))
    assert resample_seed(7, 3) == resample_seed(7, 3) != resample_seed(7, 4)


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 5), st.integers(0, 2**32 - 1))
def test_matching_undoes_a_permutation_and_sign_flips(r, seed):
    rng = np.random.default_rng(seed)
    reference = np.linalg.qr(rng.standard_normal((12, r)))[0]
    order = rng.permutation(r)
    signs = rng.choice([-1.0, 1.0], size=r)
    shuffled = reference[:, order] * signs + 1e-3 * rng.standard_normal((12, r))
    back = matched(reference, shuffled)
    assert np.allclose(back, reference, atol=1e-2)


def test_matching_pairs_components_by_their_overlap_not_their_order():
    reference = np.eye(4)[:, :2]
    swapped = np.column_stack([-np.eye(4)[:, 1] * 0.9 + 0.1 * np.eye(4)[:, 3], np.eye(4)[:, 0]])
    back = matched(reference, swapped)
    assert back[0, 0] > 0 and back[1, 1] > 0.8  # the second column went back first, its sign flipped back


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 30), st.floats(0.55, 0.95))
def test_summaries_equal_their_definitions(seed, count, level):
    rng = np.random.default_rng(seed)
    p, r = 9, 2
    reference = np.where(rng.random((p, r)) < 0.4, rng.standard_normal((p, r)), 0.0)
    dense = [np.where(rng.random((p, r)) < 0.4, rng.standard_normal((p, r)), 0.0) for _ in range(count)]
    out = summarise(reference, [sparse_columns(each) for each in dense], level)
    stacked = np.stack(dense)
    assert np.array_equal(out["probabilities"], (stacked != 0).mean(axis=0))
    tail = 100 * (1 - level) / 2
    assert np.allclose(out["intervals"][..., 0], np.percentile(stacked, tail, axis=0), rtol=0, atol=1e-12)
    assert np.allclose(out["intervals"][..., 1], np.percentile(stacked, 100 - tail, axis=0), rtol=0, atol=1e-12)
    assert np.array_equal(out["sizes"], (stacked != 0).sum(axis=1))
    for s in range(count):
        for j in range(r):
            a, b = stacked[s, :, j] != 0, reference[:, j] != 0
            expected = 1.0 if not (a | b).any() else (a & b).sum() / (a | b).sum()
            assert out["jaccard"][s, j] == pytest.approx(expected)


def test_error_bound_is_meinshausen_and_buhlmanns_and_inverts():
    assert false_selection_bound(10, 0.8, 1000) == pytest.approx(100 / (0.6 * 1000))
    assert math.isinf(false_selection_bound(10, 0.5, 1000))
    for q, bound, p in [(10, 1.0, 2000), (5, 0.2, 300), (30, 2.0, 5000)]:
        pi = threshold_for_bound(q, bound, p)
        assert false_selection_bound(q, pi, p) == pytest.approx(bound)
        assert false_selection_bound(q, min(1.0, pi + 0.01), p) < bound
