"""Screened products: a power step followed by a truncation to ``k``
computes :math:`Cw` exactly only where that truncation looks. It must keep exactly the entries the full product's
truncation keeps, with their values, on every operator kind a power run meets (data, projections by sparse loadings,
constant columns), and a default TPower fit must give the same loadings with or without it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spcakit
from spcakit.numerics import ties
from spcakit.numerics.operators import GramCovariance, PaddedCovariance, ProjectionDeflated, gram, screen, sparse_product
from spcakit.parts.truncators import EnergyTruncation, SparsityTruncation


def _unit_sparse(rng: np.random.Generator, p: int, size: int) -> np.ndarray:
    x = np.zeros(p)
    rows = rng.choice(p, size, replace=False)
    x[rows] = rng.standard_normal(size)
    return x / np.linalg.norm(x)


def _operator(rng: np.random.Generator, n: int, p: int, kind: str, levels: int):
    """A data operator (centred, standardised or neither), wrapped in ``levels`` projections by sparse loadings and,
    for ``padded``, in the zero rows of three constant columns."""
    x = rng.standard_normal((n, p)) @ np.diag(rng.uniform(0.5, 3.0, p)) + rng.uniform(-2, 2, p)
    x[:, : p // 4] += np.outer(rng.standard_normal(n), rng.standard_normal(p // 4))  # a factor: a support to settle on
    mean = None if kind == "raw" else x.mean(axis=0)
    scale = x.std(axis=0) if kind == "standardised" else None
    op = GramCovariance(x, float(n - 1), mean, scale)
    for _ in range(levels):
        op = ProjectionDeflated(op, _unit_sparse(rng, p, max(2, p // 10)))
    if kind == "padded":
        index = np.setdiff1d(np.arange(p + 3), [0, p // 2, p + 2])
        op = PaddedCovariance(op, index, p + 3)
    return op


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), kind=st.sampled_from(["centred", "raw", "standardised", "padded"]),
       levels=st.integers(0, 3), drift=st.sampled_from([1e-6, 1e-3, 3e-2]))
def test_a_screened_product_keeps_what_the_full_product_keeps_with_its_values(seed, kind, levels, drift):
    rng = np.random.default_rng(seed)  # the sizes from the seed: hypothesis's small examples alone rarely screen wrongly
    n, p, k = int(rng.integers(5, 40)), int(rng.integers(40, 200)), int(rng.integers(1, 12))
    op = _operator(rng, n, p, kind, levels)
    p = op.p
    support = rng.choice(np.flatnonzero(op.diagonal() > 0), min(k, 8), replace=False)
    w = np.zeros((p, 1))
    w[support, 0] = rng.standard_normal(support.size)
    kept, screened = None, 0
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(screen, "SCREEN_SHARE", 0.9)  # small p: let the screen compute most rows
        patch.setattr(gram, "ROWS_GATHER_SHARE", 0.9)  # (and the data's products gather the iterate's columns)
        patch.setattr(screen, "SCREEN_RESIDUAL", 1.0)  # and try at every step
        for _ in range(6):
            z, kept, was_screened = screen.screened_product(op, w, k, kept)
            full = sparse_product(op, w)
            screened += was_screened
            mask = ties.top_k_mask(np.abs(z), k)
            assert np.array_equal(mask, ties.top_k_mask(np.abs(full), k))
            scale = float(np.abs(full).max())
            np.testing.assert_allclose(z[mask], full[mask], rtol=0, atol=1e-11 * scale)
            np.testing.assert_allclose(z[support], full[support], rtol=0, atol=1e-11 * scale)
            if not was_screened:
                assert np.array_equal(z, full)  # the full product itself, as without a screen
            w[support, 0] += drift * rng.standard_normal(support.size)
    if drift == 1e-6 and kind != "padded":
        assert screened > 0  # with the supports settled the screen decides from few rows


class _KnownPartOperator:
    r""":math:`Cw = G_0(Aw) - R(Aw)` with :math:`G_0 z = M^\top z` bounded by the rows of :math:`M` and
    :math:`R(z) = 50\,(a^\top z)\,e_0` known exactly: a factor whose known part the screen must use."""

    def __init__(self, rng: np.random.Generator, n: int, p: int) -> None:
        self.a_mat, self.m_mat, self.a = rng.standard_normal((n, p)), rng.standard_normal((n, p)), rng.standard_normal(n)
        self.p = p
        outer = self

        class Known(screen.Factor):
            n_ = n

            def __init__(self) -> None:
                self.n, self.bounds = n, np.linalg.norm(outer.m_mat, axis=0)
                self.rounding = self.bounds

            def inner(self, w, rows):
                return outer.a_mat[:, rows] @ w[rows]

            def full(self, z):
                return outer.matmat_of(z)

            def outer(self, z, rows):
                return (outer.m_mat.T @ z - self.removed(z))[rows]

            def removed(self, z):
                out = np.zeros(outer.p)
                out[0] = 50.0 * float(outer.a @ z)
                return out

        self.known = Known()

    def factor(self):
        return self.known

    def matmat_of(self, z):
        return self.m_mat.T @ z - np.outer(np.eye(self.p)[0], 50.0 * (self.a @ z)).reshape(self.p, *np.shape(z)[1:])

    def matmat(self, v):
        return self.matmat_of(self.a_mat @ v)

    matmat_rows = lambda self, w, rows: self.matmat(w)  # noqa: E731


def test_the_screen_subtracts_the_part_of_the_product_its_factor_knows():
    rng = np.random.default_rng(1)
    op = _KnownPartOperator(rng, 8, 120)
    support = np.arange(10, 18)  # 8 = n columns: z can move in any direction
    w = np.zeros((120, 1))
    w[support, 0] = rng.standard_normal(8)
    first = op.a_mat[:, support] @ w[support, 0]
    op.a -= first * (op.a @ first) / (first @ first)  # R(z) = 0 at the first iterate: row 0 is small there
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(screen, "SCREEN_SHARE", 0.9)
        patch.setattr(screen, "SCREEN_RESIDUAL", 1.0)
        before, kept, _ = screen.screened_product(op, w, 3, None)
        w[support, 0] += np.linalg.solve(op.a_mat[:, support], 0.3 * op.a / np.linalg.norm(op.a))
        z, _, was_screened = screen.screened_product(op, w, 3, kept)
    full = sparse_product(op, w)
    top = set(np.flatnonzero(ties.top_k_mask(np.abs(full), 3)[:, 0]))
    assert was_screened and 0 in top and 0 not in set(np.flatnonzero(ties.top_k_mask(np.abs(before), 3)[:, 0]))
    assert set(np.flatnonzero(ties.top_k_mask(np.abs(z), 3)[:, 0])) == top


def test_a_tie_at_the_boundary_takes_the_full_product():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((30, 80))
    x[:, 7] = x[:, 3]  # two equal columns: their products tie exactly
    op = GramCovariance(x, 29.0, x.mean(axis=0))
    w = np.zeros((80, 1))
    w[3, 0] = 1.0  # (Cw)_3 = (Cw)_7 = the variance of column 3, the largest entry: a tie for k = 1
    kept = None
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(screen, "SCREEN_SHARE", 0.9)
        patch.setattr(gram, "ROWS_GATHER_SHARE", 0.9)
        for _ in range(3):
            z, kept, was_screened = screen.screened_product(op, w, 1, kept)
            assert not was_screened and np.array_equal(z, sparse_product(op, w))
        z, kept, was_screened = screen.screened_product(op, w, 2, kept)  # both kept: no tie at the boundary
        assert was_screened and set(np.flatnonzero(ties.top_k_mask(np.abs(z), 2))) == {3, 7}


def test_only_a_truncation_to_the_k_largest_tells_the_updater_its_k():
    assert SparsityTruncation(k=5).keeps(40) == 5
    assert SparsityTruncation(n_zeros=30).keeps(40) == 10
    assert EnergyTruncation(0.2).keeps(40) is None


@pytest.mark.parametrize("standardize", [False, True])
def test_default_tpower_gives_the_same_loadings_with_the_screen_and_screens_once_the_supports_settle(standardize,
                                                                                                     monkeypatch):
    rng = np.random.default_rng(5)
    n, p = 60, 4000
    x = rng.standard_normal((n, p))
    for block in range(4):  # four sparse factors over the noise
        cols = rng.choice(p, 15, replace=False)
        x[:, cols] += 3 * np.outer(rng.standard_normal(n), rng.uniform(0.5, 1.0, 15))
    x[:, 11] = 4.0  # a constant column
    calls = []
    real = screen.screened_product

    def counted(*args, **kwargs):
        out = real(*args, **kwargs)
        calls.append(out[2])
        return out

    monkeypatch.setattr("spcakit.parts.updaters.screened_product", counted)
    with pytest.warns(spcakit.ConstantColumnWarning):
        with_screen = spcakit.fit(x, "tpower", r=6, k=20, standardize=standardize)
    assert sum(calls) > 0 and len(calls) > sum(calls)
    monkeypatch.setattr(screen, "SCREEN_RESIDUAL", -1.0)  # never screen
    calls.clear()
    with pytest.warns(spcakit.ConstantColumnWarning):
        without = spcakit.fit(x, "tpower", r=6, k=20, standardize=standardize)
    assert sum(calls) == 0
    assert np.array_equal(with_screen.loadings != 0, without.loadings != 0)
    np.testing.assert_allclose(with_screen.loadings, without.loadings, rtol=0, atol=1e-12)
    assert with_screen.iterations == without.iterations


def _is_operator(o: object) -> bool:
    try:
        return isinstance(o, (ProjectionDeflated, GramCovariance))
    except ReferenceError:  # a weak proxy (another test's) whose object is gone: not an operator
        return False


def test_a_finished_chain_of_deflations_is_freed_without_the_garbage_collector():
    """The factors the screen uses refer to arrays, not back to their operators: once a fit returns, its chain of
    projections (each holding p-vectors) is freed at once, not when a collection finds a cycle."""
    import gc

    x = np.random.default_rng(0).standard_normal((40, 3000))
    gc.collect()
    gc.disable()
    try:
        spcakit.fit(x, "tpower", r=5, k=20)
        left = [o for o in gc.get_objects() if _is_operator(o)]
    finally:
        gc.enable()
    assert left == []
