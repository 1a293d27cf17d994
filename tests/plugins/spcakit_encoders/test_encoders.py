"""The sparse linear encoder parts and methods of Magdon-Ismail & Boutsidis on fixed inputs:
errors people see, the CLI, seeding, composition with other parts, and memory on wide data."""

from __future__ import annotations

import json
import tracemalloc

import attrs
import numpy as np
import pytest

import spcakit
from spcakit.inputs.datasets import pitprops, square_root
from spcakit.core.errors import InvalidParameterError
from spcakit.numerics.operators import DenseCovariance
from spcakit.core.specs import PartRef
from spcakit.core.records import Carry
from spcakit_encoders.carry import FEATURES_FOUND, SQUARE_ROOT, features_found
from spcakit_encoders.columns import dual_set_columns, leverage_sampling_columns, top_leverage_columns
from spcakit_encoders.encoder import cssp_encoder


def pitprops_cov() -> spcakit.Covariance:
    d = pitprops()
    return spcakit.Covariance(d.matrix, d.feature_names)


def low_rank_data(n: int = 30, p: int = 12, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 4)) @ rng.standard_normal((4, p)) * 3 + rng.standard_normal((n, p))
    return x - x.mean(axis=0)


# -- the encoder ------------------------------------------------------------------------------------
def test_encoder_refuses_linearly_dependent_columns_and_says_which():
    x = low_rank_data()
    x[:, 5] = 2.0 * x[:, 3]
    with pytest.raises(InvalidParameterError, match="linearly dependent.*column 5"):
        cssp_encoder(x, [1, 3, 5], 2)
    with pytest.raises(InvalidParameterError, match="needs at least k columns"):
        cssp_encoder(x, [1], 2)


def test_encoder_on_every_column_is_pca():
    """With C = X (all columns, full rank) X_{C,k} = X_k: the encoder spans the top-k right singular vectors."""
    x = low_rank_data()
    h, explained = cssp_encoder(x, range(x.shape[1]), 3)
    _, s, vt = np.linalg.svd(x, full_matrices=False)
    # R^-1 (Q^T X)_k = W_k W_k^T has k equal singular values: U_R is some orthonormal basis of span(V_k)
    np.testing.assert_allclose(np.linalg.svd(h.T @ vt[:3].T, compute_uv=False), 1.0, atol=1e-8)
    assert explained == pytest.approx(float(np.sum(s[:3] ** 2)), rel=1e-12)
    result = spcakit.fit(pitprops_cov(), "encoder-batch", r=2, sparsity=13)
    assert result.metrics["normalized_loss"] == pytest.approx(1.0, abs=1e-12)
    assert result.metrics["symmetric_explained_variance"] == pytest.approx(1.0, abs=1e-12)


# -- column selection -------------------------------------------------------------------------------
@pytest.mark.parametrize("select", [top_leverage_columns, dual_set_columns, leverage_sampling_columns])
def test_selectors_never_take_a_duplicated_variable_twice(select):
    x = low_rank_data(p=8)
    x = np.column_stack([x, x[:, :4]])  # variables 8..11 duplicate 0..3: equal leverage, same column
    chosen = select(x, 2, 8, np.random.default_rng(1), "test")
    assert len(chosen) == 8
    assert np.linalg.matrix_rank(x[:, chosen]) == 8
    with pytest.raises(InvalidParameterError, match="only 8 of the 12 columns are linearly independent"):
        select(x, 2, 9, np.random.default_rng(1), "test")


def test_leverage_sampling_is_seeded_and_follows_the_leverage():
    x = low_rank_data(n=40, p=30, seed=3)
    draws = [tuple(leverage_sampling_columns(x, 2, 5, np.random.default_rng(seed))) for seed in range(200)]
    assert draws[7] == tuple(leverage_sampling_columns(x, 2, 5, np.random.default_rng(7)))
    assert len(set(draws)) > 20  # it is random
    _, _, vt = np.linalg.svd(x, full_matrices=False)
    leverage = np.sum(vt[:2] ** 2, axis=0)
    counts = np.bincount(np.concatenate(draws), minlength=30)
    top, bottom = np.argsort(-leverage)[:5], np.argsort(leverage)[:5]
    assert counts[top].sum() > 3 * counts[bottom].sum()
    sampled = spcakit.compose(driver="block", initializer="leverage-sampling", updater="encoder", truncator="none",
                              stopper={"name": "max-iterations", "n": 1})
    a = spcakit.fit(x, sampled, r=2, sparsity=5, seed=11)
    c = spcakit.fit(x, sampled, r=2, sparsity=5, seed=11)
    b = spcakit.fit(x, "encoder-batch", r=2, sparsity=5)
    assert np.array_equal(a.loadings, c.loadings)
    assert b.metrics["pattern"] == [5, 5]


def test_dual_set_beats_its_guarantee_on_pitprops():
    x = square_root(pitprops().matrix)
    s = np.linalg.svd(x, compute_uv=False)
    optimum = float(np.sum(s[2:] ** 2))
    for r in range(3, 11):
        columns = dual_set_columns(x, 2, r)
        q, _ = np.linalg.qr(x[:, columns])
        sc = np.linalg.svd(q.T @ x, compute_uv=False)
        loss = float(np.sum(x**2) - np.sum(sc[:2] ** 2))
        assert loss <= (1 + (1 - np.sqrt(2 / r)) ** -2) * optimum


# -- the methods ------------------------------------------------------------------------------------
def test_batch_features_share_one_support_iterative_ones_do_not():
    batch = spcakit.fit(pitprops_cov(), "encoder-batch", r=2, sparsity=5)
    iterative = spcakit.fit(pitprops_cov(), "encoder-iterative", r=2, sparsity=[3, 6])
    assert batch.metrics["pattern"] == [5, 5]
    assert np.array_equal(batch.loadings[:, 0] != 0, batch.loadings[:, 1] != 0)
    np.testing.assert_allclose(batch.loadings.T @ batch.loadings, np.eye(2), atol=1e-12)
    assert iterative.metrics["pattern"] == [3, 6]
    np.testing.assert_allclose(np.linalg.norm(iterative.loadings, axis=0), 1.0)
    # the iterative features are not orthogonal: orthogonalising would spread their supports
    assert abs(float(iterative.loadings[:, 0] @ iterative.loadings[:, 1])) > 1e-3


def test_covariance_input_equals_its_data():
    """For a covariance X = C^(1/2): the same encoder as for data with that Gram matrix."""
    x = low_rank_data(n=40, p=10, seed=5)
    from_data = spcakit.fit(x, "encoder-iterative", r=3, sparsity=4)
    from_cov = spcakit.fit(spcakit.Covariance(x.T @ x / 39), "encoder-iterative", r=3, sparsity=4)
    np.testing.assert_allclose(from_cov.loadings, from_data.loadings, atol=1e-8)
    for key in ("normalized_loss", "symmetric_explained_variance"):
        assert from_cov.metrics[key] == pytest.approx(from_data.metrics[key], rel=1e-9)
    assert from_cov.metrics["loss"] == pytest.approx(from_data.metrics["loss"] / 39, rel=1e-9)


def test_residual_deflation_of_the_covariance_is_the_schur_complement():
    """On C, the residual's Delta^T Delta is Mackey's Schur complement: TPower gives the same loadings with either."""
    with_residual = spcakit.fit(pitprops_cov(), "tpower", r=4, k=4, deflator="residual")
    with_schur = spcakit.fit(pitprops_cov(), "tpower", r=4, k=4, deflator="schur")
    np.testing.assert_allclose(with_residual.loadings, with_schur.loadings, atol=1e-10)


@pytest.mark.parametrize(
    "method,params,message",
    [
        ("encoder-batch", {"sparsity": 1}, "sparsity 1 is below the number of features k = 2"),
        ("encoder-batch", {"sparsity": 14}, "exceeds the number of variables p = 13"),
        ("encoder-batch", {"sparsity": [3, 4]}, "is the iterative encoder"),
        ("encoder-batch", {"sparsity": 2.5}, "must be a positive integer"),
        ("encoder-iterative", {"sparsity": [3, 4, 5]}, "got 3 sparsities .* for k = 2 features"),
        ("encoder-iterative", {"sparsity": [3, 0]}, "non-empty list of positive integers"),
    ],
)
def test_bad_sparsity_says_what_is_valid(method, params, message):
    with pytest.raises(InvalidParameterError, match=message):
        spcakit.fit(pitprops_cov(), method, r=2, **params)


def test_per_feature_sparsities_need_the_residual_deflator():
    with pytest.raises(InvalidParameterError, match="need the `residual` deflator"):
        spcakit.fit(pitprops_cov(), "encoder-iterative", r=2, sparsity=[3, 4], deflator="schur")
    # with one sparsity any deflator composes (Schur deflation keeps the same covariance as the residual)
    schur = spcakit.fit(pitprops_cov(), "encoder-iterative", r=3, sparsity=4, deflator="schur")
    residual = spcakit.fit(pitprops_cov(), "encoder-iterative", r=3, sparsity=4)
    np.testing.assert_allclose(schur.loadings, residual.loadings, atol=1e-8)


def test_the_carry_counts_the_features_for_per_feature_sparsities():
    """prepare records X = C^(1/2) and 0 features; the residual deflator records 1 for its residual;
    the selector then uses r_2. An entry made for another problem (another deflator's) is refused."""
    registry = spcakit.get_registry()
    problem = spcakit.as_problem(pitprops_cov())
    select = registry.build("initializer", PartRef("dual-set-columns", {"sparsity": [3, 6]}))
    deflate = registry.build("deflator", "residual")
    rng = np.random.default_rng(0)
    carry = select.prepare(problem, 2, rng, Carry())
    assert features_found(carry, problem) == 0
    np.testing.assert_allclose(carry.get(SQUARE_ROOT).matrix, square_root(problem.covariance.matrix), atol=1e-12)
    x0 = select(problem, 1, rng, carry)
    assert np.count_nonzero(x0) == 3
    encoder = registry.build("updater", "encoder")
    state = encoder.init(problem, x0, carry)
    assert state is carry.get(SQUARE_ROOT).matrix  # the square root is computed once, by prepare
    h, _, state = encoder.propose(problem, x0, state)
    residual, after = deflate(problem, h[:, 0], h, carry)
    assert after.get(FEATURES_FOUND).count == 1 and features_found(after, residual) == 1
    assert features_found(carry, problem) == 0  # the carry handed in is unchanged
    assert np.count_nonzero(select(residual, 1, rng, after)) == 6
    elsewhere = attrs.evolve(residual, covariance=DenseCovariance(residual.covariance.matmat(np.eye(problem.p))), data=None)
    with pytest.raises(InvalidParameterError, match="need the `residual` deflator"):
        select(elsewhere, 1, rng, after)


# -- CLI --------------------------------------------------------------------------------------------
def test_cli_runs_both_methods_and_reports_the_encoder_metrics(cli):
    out = cli.invoke("run", "encoder-batch", "-r", "2", "--param", "sparsity=5", "--json")
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["metrics"]["pattern"] == [5, 5]
    assert doc["metrics"]["normalized_loss"] >= 1.0
    out = cli.invoke("run", "encoder-iterative", "-r", "2", "--param", "sparsity=[3,6]")
    assert out.exit_code == 0, out.output
    assert "norm.loss" in out.stdout and "sym. EV" in out.stdout


def test_cli_bad_sparsity_exits_2_with_a_message(cli):
    out = cli.invoke("run", "encoder-batch", "-r", "3", "--param", "sparsity=2")
    assert out.exit_code == 2
    assert "sparsity 2 is below the number of features k = 3" in out.output


# -- memory -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["encoder-batch", "encoder-iterative"])
def test_wide_data_never_forms_a_p_by_p_matrix(method):
    rng = np.random.default_rng(0)
    n, p = 40, 6000
    x = rng.standard_normal((n, 5)) @ rng.standard_normal((5, p)) + rng.standard_normal((n, p))
    tracemalloc.start()
    try:
        result = spcakit.fit(x, method, r=3, sparsity=10)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * p * p / 20, f"peak {peak / 1e6:.1f} MB suggests a p x p allocation"
    assert result.metrics["normalized_loss"] >= 1.0
    assert max(result.metrics["pattern"]) <= 10


def test_initializer_parts_are_registered_with_their_paper():
    registry = spcakit.get_registry()
    for role, name in [("initializer", "dual-set-columns"), ("initializer", "leverage-columns"),
                       ("initializer", "leverage-sampling"), ("updater", "encoder"), ("deflator", "residual")]:
        info = registry.part(role, name)
        assert info.plugin == "encoders" and "Magdon-Ismail" in info.paper
    assert registry.build("initializer", PartRef("dual-set-columns", {"sparsity": [2, 3]})).sparsity == (2, 3)
