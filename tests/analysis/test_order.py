"""The order of the loadings: each the one that adds most variance to the span of those before it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spcakit
from spcakit.analysis.order import variance_order


def added_variances(c: np.ndarray, u: np.ndarray) -> list[float]:
    """Mackey's additional variances of the columns of ``u`` in their order, by Gram-Schmidt on the full vectors."""
    basis, out = [], []
    for j in range(u.shape[1]):
        w = u[:, j] - sum((q @ u[:, j]) * q for q in basis) if basis else u[:, j].copy()
        w = w / np.linalg.norm(w)
        basis.append(w)
        out.append(float(w @ c @ w))
    return out


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 5))
def test_each_loading_adds_the_most_of_those_left(seed, r):
    rng = np.random.default_rng(seed)
    p = 8
    a = rng.standard_normal((30, p)) * rng.uniform(0.2, 3.0, p)
    c = a.T @ a / 29
    u = np.where(rng.random((p, r)) < 0.6, rng.standard_normal((p, r)), 0.0)
    u[rng.integers(p), :] += 1.0  # no zero column
    u /= np.linalg.norm(u, axis=0)
    order = variance_order(u.T @ c @ u, u.T @ u)
    assert sorted(order) == list(range(r))
    chosen: list[int] = []
    for position in order:
        rest = [j for j in range(r) if j not in chosen]
        gains = {j: added_variances(c, u[:, [*chosen, j]])[-1] for j in rest}
        assert gains[position] >= max(gains.values()) - 1e-9 * np.abs(c).max()
        chosen.append(position)


def test_orthogonal_loadings_come_by_their_variance_and_ties_keep_the_methods_order():
    c = np.diag([1.0, 3.0, 2.0, 3.0])
    u = np.eye(4)
    assert variance_order(u.T @ c @ u, u.T @ u).tolist() == [1, 3, 2, 0]  # 3 and 3 tie: the earlier first


def test_fit_orders_by_variance_unless_asked_for_the_methods_order():
    by_variance = spcakit.fit("builtin:pitprops", "spcart", r=6)
    own = spcakit.fit("builtin:pitprops", "spcart", r=6, order="method")
    assert by_variance.metrics["pattern"] == [4, 4, 2, 3, 3, 2] and own.metrics["pattern"] == [4, 2, 4, 3, 3, 2]
    assert by_variance.metrics["cpev"] == pytest.approx(own.metrics["cpev"], rel=1e-12)
    added = by_variance.metrics["additional_variance"]
    own_variances = np.einsum("ij,ij->j", own.loadings, spcakit.datasets.pitprops().matrix @ own.loadings)
    assert added[0] == pytest.approx(own_variances.max(), rel=1e-12)
    # the same loadings, permuted
    matches = [int(np.argmax(np.abs(own.loadings.T @ by_variance.loadings[:, j]))) for j in range(6)]
    assert sorted(matches) == list(range(6))
    assert np.allclose(np.abs(by_variance.loadings), np.abs(own.loadings[:, matches]), atol=1e-12)


def test_cardinalities_listed_per_loading_keep_their_order():
    result = spcakit.fit("builtin:pitprops", "encoder-iterative", r=3, k=[3, 5, 8])
    assert result.metrics["pattern"] == [3, 5, 8]


def test_an_unknown_order_is_refused():
    with pytest.raises(spcakit.InvalidParameterError, match="order must be 'variance'"):
        spcakit.fit("builtin:pitprops", "spcart", r=2, order="random")
