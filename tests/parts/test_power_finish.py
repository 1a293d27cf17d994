"""The power updater's finish on a stable support, and the deflated operators' submatrices and
row-restricted products it relies on.

Finishing steps to the leading eigenvector of C_SS once the supports have held for ``finish_after`` steps:
the point reached is a fixed point of the truncated power iteration (checked directly), the same loadings
as iterating on (Pitprops, every k), in fewer iterations.
"""

from __future__ import annotations

import numpy as np
import pytest

import spcakit
from spcakit.core.errors import InvalidParameterError
from spcakit.numerics.operators import DenseCovariance, GramCovariance, ProjectionDeflated, RankOneCorrected
from spcakit.numerics.operators.gram import GramFactor

PITPROPS = spcakit.datasets.pitprops().matrix


def _operators():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((40, 12)) * rng.uniform(0.5, 2.0, 12)
    gram = GramCovariance(x, 39.0, mean=x.mean(axis=0))
    dense = (x - x.mean(axis=0)).T @ (x - x.mean(axis=0)) / 39.0
    unit = rng.standard_normal(12)
    unit /= np.linalg.norm(unit)
    projector = np.eye(12) - np.outer(unit, unit)
    yield ProjectionDeflated(gram, unit), projector @ dense @ projector
    yield ProjectionDeflated(ProjectionDeflated(DenseCovariance(dense), unit), np.eye(12)[0]), (
        np.diag([0.0] + [1.0] * 11) @ projector @ dense @ projector @ np.diag([0.0] + [1.0] * 11))
    yield RankOneCorrected(gram, unit, 0.7), dense - 0.7 * np.outer(unit, unit)


@pytest.mark.parametrize("case", range(3))
def test_deflated_operators_give_their_submatrices_and_row_restricted_products(case):
    op, matrix = list(_operators())[case]
    rows = np.array([1, 4, 5, 9])
    np.testing.assert_allclose(op.submatrix(rows), matrix[np.ix_(rows, rows)], atol=1e-12 * np.abs(matrix).max())
    w = np.zeros((12, 2))
    w[rows] = np.random.default_rng(case).standard_normal((4, 2))
    np.testing.assert_allclose(op.matmat_rows(w, rows), matrix @ w, atol=1e-12 * np.abs(matrix).max())
    np.testing.assert_allclose(op.matmat_rows(w[:, 0], rows), matrix @ w[:, 0], atol=1e-12 * np.abs(matrix).max())
    np.testing.assert_allclose(op.diagonal(), np.diag(matrix), atol=1e-12 * np.abs(matrix).max())


@pytest.mark.parametrize("k", range(2, 11))
def test_finishing_gives_the_loadings_of_iterating_in_fewer_iterations(k):
    slow = spcakit.fit(spcakit.Covariance(PITPROPS), "tpower", r=6, k=k, finish_after=0)
    fast = spcakit.fit(spcakit.Covariance(PITPROPS), "tpower", r=6, k=k)
    assert fast.metrics["pattern"] == slow.metrics["pattern"]
    assert fast.metrics["cpev"] == pytest.approx(slow.metrics["cpev"], rel=1e-7)
    np.testing.assert_allclose(np.abs(fast.loadings), np.abs(slow.loadings), atol=1e-6)
    assert fast.iterations <= slow.iterations


def test_rsvd_gp_at_the_papers_lambda_gives_the_same_loadings():
    slow = spcakit.fit(spcakit.Covariance(PITPROPS), "rsvd-gp", r=6, lam=0.27, finish_after=0)
    fast = spcakit.fit(spcakit.Covariance(PITPROPS), "rsvd-gp", r=6, lam=0.27)
    assert fast.metrics["pattern"] == slow.metrics["pattern"] and fast.iterations < slow.iterations
    assert fast.metrics["cpev"] == pytest.approx(slow.metrics["cpev"], rel=1e-7)


def test_the_finished_first_loading_is_a_fixed_point_of_the_truncated_power_step():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((60, 30)) * rng.uniform(0.3, 3.0, 30)
    result = spcakit.fit(x, "tpower", r=1, k=6)
    assert result.stopping_reason == "relative change 0 < 1e-07"  # it stopped on the finished point
    loading = result.loadings[:, 0]
    c = np.cov(x, rowvar=False)
    z = c @ loading
    kept = np.argsort(-np.abs(z), kind="stable")[:6]
    step = np.zeros(30)
    step[kept] = z[kept]
    step /= np.linalg.norm(step) * np.sign(step @ loading)
    np.testing.assert_allclose(step, loading, atol=1e-12)


def test_finish_after_must_be_a_non_negative_integer():
    with pytest.raises(InvalidParameterError):
        spcakit.fit("builtin:pitprops", "tpower", r=1, k=3, finish_after=-1)


@pytest.mark.parametrize("standardize", [False, True])
def test_tpower_on_wide_data_reads_the_iterates_rows_alone_and_finds_what_dense_products_find(standardize, monkeypatch, count_calls):
    """A truncated iterate (k of p rows) is multiplied by C through the data's columns on its rows alone, through
    every deflation: the loadings of dense products, found in the same iterations."""
    from spcakit.numerics.operators import OperatorAccess

    rng = np.random.default_rng(8)
    x = rng.standard_normal((30, 4000)) + 2.0  # 18 rows at most: within ROWS_GATHER_SHARE of 4000, gathered
    x[:, :6] += 3.0 * rng.standard_normal((30, 1))  # a planted component on the first six variables
    calls = [count_calls(GramCovariance, "matmat_rows"), count_calls(GramFactor, "full"), count_calls(GramFactor, "outer")]
    fast = spcakit.fit(x, "tpower", r=3, k=6, standardize=standardize, finish_after=0)
    # every step but each component's first, from its dense start: the rows' product in full, or screened
    assert sum(call["n"] for call in calls) >= fast.iterations - 3
    monkeypatch.setattr(GramCovariance, "matmat_rows", lambda self, w, rows: OperatorAccess.matmat_rows(self, w, rows))
    dense = spcakit.fit(x, "tpower", r=3, k=6, standardize=standardize, finish_after=0)
    assert fast.iterations == dense.iterations
    np.testing.assert_allclose(fast.loadings, dense.loadings, atol=1e-10)


def test_the_step_that_confirms_a_finish_reuses_its_product(count_calls):
    """Finishing again on the fixed point just finished on finds the same eigenvectors and reuses their product
    with C: each component's last step makes no pass over the data; the loadings are those of iterating on. The
    deflation between the two components takes C x from that product too (no pass of its own)."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((30, 400))
    x[:, :5] += 4.0 * rng.standard_normal((30, 1))
    x[:, 5:10] += 3.0 * rng.standard_normal((30, 1))
    calls = [count_calls(GramCovariance, "matmat_rows"), count_calls(GramFactor, "full"), count_calls(GramFactor, "outer")]
    result = spcakit.fit(x, "tpower", r=2, k=5, metrics=["pattern"])  # the metrics make a product of their own
    # every step's product (full or screened, spcakit.numerics.operators.screen) but the two confirming steps' (the
    # deflation's C x is the first finish's product), and one of the result's: the loadings' span, which the rank check
    # (no loading beyond the covariance's rank) and the metrics share
    assert sum(call["n"] for call in calls) == result.iterations - 2 + 1
    iterated = spcakit.fit(x, "tpower", r=2, k=5, finish_after=0, metrics=["pattern"])
    assert result.metrics["pattern"] == iterated.metrics["pattern"]
    np.testing.assert_allclose(np.abs(result.loadings), np.abs(iterated.loadings), atol=1e-6)


def test_default_tpower_on_wide_standardised_data_with_constant_columns_follows_the_column_order():
    """What users run on the row-restricted products: the default fit, standardised data (every variable tied on
    variance), constant columns (the padded operator around the data's), and the columns in another order: the
    supports move with the columns and the CPEV is the same."""
    rng = np.random.default_rng(12)
    x = rng.standard_normal((200, 3000))
    x[:, :6] += 3.0 * rng.standard_normal((200, 1))
    x[:, 6:12] += 2.0 * rng.standard_normal((200, 1))
    x[:, [20, 700]] = 5.0  # constant
    order = rng.permutation(3000)
    first = spcakit.fit(x, "tpower", r=2, k=6, standardize=True)
    second = spcakit.fit(x[:, order], "tpower", r=2, k=6, standardize=True)
    supports = [set(np.flatnonzero(first.loadings[:, j])) for j in range(2)]
    assert supports == [set(range(6)), set(range(6, 12))]
    assert [set(order[np.flatnonzero(second.loadings[:, j])]) for j in range(2)] == supports
    assert second.metrics["cpev"] == pytest.approx(first.metrics["cpev"], rel=1e-9)
    # the bound metric (its eigenvalue asked for only when it could be the least) does not depend on the order either
    assert second.metrics["bound"] == pytest.approx(first.metrics["bound"], rel=1e-9)
    assert second.metrics["gap"] == pytest.approx(first.metrics["gap"], rel=1e-7, abs=1e-12)


@pytest.mark.parametrize("deflator", ["projection", "hotelling", "schur"])
def test_the_deflation_takes_the_finishs_product_only_for_the_loading_it_was_made_for(deflator, monkeypatch, count_calls):
    """The deflator gets C x from the loading's run (PowerUpdater.loading_product) when the run ended on a finish:
    within rounding of a fresh product, one pass over the data fewer per deflation, and the loadings are those of a
    product taken again. A run that did not end on a finish (finish_after=0) hands none, and no round sees the
    product of an earlier one. Projection, Hotelling's and Schur's deflations all take it."""
    from spcakit.core.records import LOADING_PRODUCT, known_product

    part = type(spcakit.core.plugins.get_registry().build("deflator", deflator))
    rng = np.random.default_rng(6)
    x = rng.standard_normal((40, 600))
    x[:, :5] += 4.0 * rng.standard_normal((40, 1))
    x[:, 5:10] += 3.0 * rng.standard_normal((40, 1))
    handed = []
    original = part.__call__

    def recording(self, problem, loading, previous, carry):
        product = known_product(carry, loading)
        fresh = problem.covariance.matmat(loading)
        handed.append(None if product is None else float(np.max(np.abs(product - fresh)) / np.max(np.abs(fresh))))
        assert carry.get(LOADING_PRODUCT) is None or product is not None  # never another loading's
        return original(self, problem, loading, previous, carry)

    monkeypatch.setattr(part, "__call__", recording)
    dense, rows = count_calls(GramCovariance, "matmat"), count_calls(GramCovariance, "matmat_rows")
    reused = spcakit.fit(x, "tpower", r=3, k=5, deflator=deflator, metrics=["pattern"])
    products = dense["n"] + rows["n"]
    assert len(handed) == 2 and all(h is not None and h < 1e-12 for h in handed), handed
    handed.clear()
    iterated = spcakit.fit(x, "tpower", r=3, k=5, deflator=deflator, finish_after=0, metrics=["pattern"])
    assert handed == [None, None]
    monkeypatch.setattr("spcakit.parts.updaters.PowerUpdater.loading_product", lambda *args: None)
    handed.clear()
    dense["n"] = rows["n"] = 0
    again = spcakit.fit(x, "tpower", r=3, k=5, deflator=deflator, metrics=["pattern"])
    assert handed == [None, None] and dense["n"] + rows["n"] == products + 2  # one product with the data per deflation
    np.testing.assert_array_equal(reused.loadings != 0, again.loadings != 0)
    np.testing.assert_allclose(reused.loadings, again.loadings, atol=1e-12)
    np.testing.assert_array_equal(reused.loadings != 0, iterated.loadings != 0)


def test_a_carry_without_a_key_keeps_the_others_and_a_known_product_is_refused_for_an_explicit_covariance():
    from spcakit.core.records import LOADING_PRODUCT, Carry, known_product

    x, product = np.array([1.0, 0.0]), np.array([2.0, 3.0])
    carry = Carry().set("a", 1).set(LOADING_PRODUCT, (x, product))
    assert carry.without(LOADING_PRODUCT).entries == (("a", 1),) and carry.without("missing") is carry
    assert known_product(carry, x) is product and known_product(carry, np.array([0.0, 1.0])) is None
    assert known_product(carry, x, DenseCovariance(np.eye(2))) is None  # explicit: it takes its own product
    assert known_product(carry, x, GramCovariance(np.eye(2), 1.0)) is product


def test_the_projection_deflation_keeps_a_unit_loading_and_its_product_without_copies():
    """A loading that is unit to rounding (as every driver hands it) is the deflated operator's vector itself, and
    the product its run made goes in as it is: dividing them by the length (1 to an ulp) copied two p-vectors per
    level, 29 MB over TPower's twenty levels on 100 000 variables, the fit's peak. A loading of another length is
    divided, and either way the operator is the projection of C off the unit loading."""
    from spcakit.parts.deflators import ProjectionDeflation
    from spcakit.inputs.problem import Problem
    from spcakit.core.records import LOADING_PRODUCT, Carry

    rng = np.random.default_rng(2)
    x = rng.standard_normal((30, 8))
    gram = GramCovariance(x, 29.0, mean=x.mean(axis=0))
    dense = (x - x.mean(axis=0)).T @ (x - x.mean(axis=0)) / 29.0
    problem = Problem(gram, tuple(f"v{i}" for i in range(8)))
    loading = np.zeros(8)
    loading[[1, 4, 6]] = rng.standard_normal(3)
    for length in (float(np.linalg.norm(loading)), 0.5):
        v = loading / length
        product = dense @ v
        carry = Carry().set(LOADING_PRODUCT, (v, product))
        deflated, _ = ProjectionDeflation()(problem, v, v[:, None], carry)
        kept = deflated.covariance.vector
        assert (kept is v) == (length != 0.5)
        unit = v / np.linalg.norm(v)
        projector = np.eye(8) - np.outer(unit, unit)
        np.testing.assert_allclose(deflated.covariance.matmat(np.eye(8)), projector @ dense @ projector, atol=1e-12)
