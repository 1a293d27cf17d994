"""FSPCA (Tian, Wang, Nie & Li, *Learning Feature Sparse Principal Subspace*): the methods
``fspca-go``, ``fspca-ipu``, ``fspca-exhaustive``, the ``row-sparse`` truncation, the
``multistart`` driver, the FSPCA metrics, and their command-line use.
"""

from __future__ import annotations

import json
import math
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import spcakit
from spcakit.inputs.datasets import pitprops
from spcakit.core.errors import InvalidParameterError
from spcakit.numerics.operators import DenseCovariance
from spcakit.core.plugins import get_registry
from spcakit_fspca import algorithms as alg
from spcakit_fspca import metrics
from spcakit_fspca.parts import SubspaceStart

PITPROPS = spcakit.Covariance(pitprops().matrix, pitprops().feature_names)


def run_json(cli, *args: Any) -> dict[str, Any]:
    result = cli.invoke(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def assert_feasible(w: np.ndarray, k: int) -> None:
    """W^T W = I and at most k nonzero rows (problem (3.1))."""
    assert np.allclose(w.T @ w, np.eye(w.shape[1]), atol=1e-10)
    assert metrics.row_support(w).size <= k


def random_psd(rng: np.random.Generator, d: int, rank: int | None = None) -> np.ndarray:
    b = rng.standard_normal((d, rank or d))
    a = b @ b.T
    return (a + a.T) / 2


# -- registration --------------------------------------------------------------------
def test_the_plugin_registers_three_methods_and_its_parts():
    registry = get_registry()
    names = ("fspca-go", "fspca-ipu", "fspca-exhaustive")
    assert set(names) <= set(registry.method_names())
    assert {name: registry.method_plugin(name) for name in names} == dict.fromkeys(names, "fspca")
    for role, name in [("truncator", "row-sparse"), ("updater", "go"), ("updater", "ipu"),
                       ("updater", "exhaustive-support"), ("initializer", "subspace-start"),
                       ("stopper", "support-fixed-point"), ("driver", "multistart")]:  # fmt: skip
        assert registry.part(role, name).plugin == "fspca"
    assert registry.part("updater", "ipu").parameters() == {"k": None, "epsilon": 0.1, "epsilon_form": "relative"}
    assert registry.part("updater", "go").parameters() == {"k": None, "epsilon": 0.0, "epsilon_form": "relative"}
    assert registry.part("initializer", "subspace-start").parameters() == {"start": None, "restarts": None, "w0": None}
    assert registry.part("stopper", "support-fixed-point").parameters() == {"max_iter": 100, "tol": 1e-12}
    assert registry.part("driver", "multistart").cls.deflates is False
    assert registry.part("truncator", "row-sparse").summary.startswith("l2,0: keep the k rows of largest norm")


def test_the_plugin_registers_the_fspca_metrics():
    registry = get_registry()
    objective, nev = registry.metric("objective"), registry.metric("normalized_explained_variance")
    assert (objective.label, nev.label) == ("objective", "NEV")
    assert objective.description == "FSPCA objective tr(W^T C W)"
    assert nev.description == "normalized explained variance tr(W^T C W) / tr(C_r)"
    assert objective.format(123.456789) == "123.457" and nev.format(0.123456) == "0.1235"
    # the plugin's own records, their format() contained by the registry (a format that raises shows JSON)
    for registered, own in zip((objective, nev), metrics.METRICS):
        assert (registered.name, registered.compute, registered.default_for) == (own.name, own.compute, own.default_for)


def test_ipu_is_the_default_composition_of_the_multistart_driver():
    spec = spcakit.compose(driver="multistart")
    ipu = get_registry().method("fspca-ipu")
    roles = ("initializer", "updater", "truncator", "stopper")
    assert [getattr(spec, role) for role in roles] == [getattr(ipu, role) for role in roles]
    assert spec.deflator is None
    composed = spcakit.fit(PITPROPS, spec, r=2, k=5)
    np.testing.assert_array_equal(composed.loadings, spcakit.fit(PITPROPS, "fspca-ipu", r=2, k=5).loadings)
    with pytest.raises(InvalidParameterError, match="never deflates"):
        spcakit.compose(driver="multistart", deflator="schur")


def test_subspace_start_resolves_its_defaults_and_says_how_many_starts():
    assert (SubspaceStart().start, SubspaceStart().starts()) == ("low-rank", 1)
    assert (SubspaceStart(restarts=4).start, SubspaceStart(restarts=4.0).starts()) == ("random", 4)
    given = SubspaceStart(w0=[[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    assert given.start == "given" and given.starts() == 1 and given.w0.shape == (3, 2)
    assert given == SubspaceStart(start="given", w0=np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]))
    with pytest.raises(InvalidParameterError, match="only used with start = given"):
        SubspaceStart(start="random", w0=[[1.0]])


# -- the three methods on Pitprops -----------------------------------------------------
@pytest.mark.parametrize("k", [2, 3, 4, 5, 6, 9, 13])
def test_go_ipu_and_the_exhaustive_optimum_on_pitprops(k):
    go = spcakit.fit(PITPROPS, "fspca-go", r=2, k=k)
    ipu = spcakit.fit(PITPROPS, "fspca-ipu", r=2, k=k)
    best = spcakit.fit(PITPROPS, "fspca-exhaustive", r=2, k=k)
    for result in (go, ipu, best):
        assert_feasible(result.loadings, k)
        assert result.metrics["objective"] == pytest.approx(metrics.fspca_objective(result.loadings, DenseCovariance(PITPROPS.matrix)))
    # IPU starts at Go on A + 0.1 I and only climbs (Thm. 5.5); nothing beats the exhaustive optimum
    go_eps = spcakit.fit(PITPROPS, "fspca-go", r=2, k=k, epsilon=0.1)
    assert go_eps.metrics["objective"] <= ipu.metrics["objective"] + 1e-12
    assert ipu.metrics["objective"] <= best.metrics["objective"] + 1e-12
    assert go.metrics["objective"] <= best.metrics["objective"] + 1e-12
    if k == 13:  # no sparsity: PCA, NEV = 1
        assert best.metrics["normalized_explained_variance"] == pytest.approx(1.0)
        assert go.metrics["normalized_explained_variance"] == pytest.approx(1.0)


def test_the_first_ipu_step_from_the_low_rank_start_is_go_on_a_plus_eps():
    # W0 = U_m gives P_0 = (A + eps I)_m, so step 1 of Alg. 2 is Alg. 1 on it (with the refinement)
    for k in (3, 5, 8):
        first = spcakit.fit(PITPROPS, "fspca-ipu", r=3, k=k, max_iter=1)
        go = spcakit.fit(PITPROPS, "fspca-go", r=3, k=k, epsilon=0.1)
        np.testing.assert_allclose(first.loadings, go.loadings, atol=1e-10)
        assert first.objective_history == pytest.approx(go.objective_history)
        assert "iteration cap (1)" in first.stopping_reason


def test_ipu_stops_at_a_fixed_point_and_records_an_ascending_objective():
    rng = np.random.default_rng(3)
    a = random_psd(rng, 40)
    result = spcakit.fit(spcakit.Covariance(a), "fspca-ipu", r=4, k=10, start="random", seed=5)
    history = np.asarray(result.objective_history)
    assert result.stopping_reason.startswith("fixed point")
    assert len(history) == result.iterations >= 2
    assert np.all(np.diff(history[1:]) >= -1e-9 * history[0])  # Thm. 5.5 (step 1 leaves a dense start)
    assert history[-1] == history[-2]  # the last step found the same support again
    assert history[-1] == pytest.approx(result.metrics["objective"])


def test_restarts_keep_the_best_of_the_random_starts():
    rng = np.random.default_rng(7)
    a = random_psd(rng, 25)
    cov = spcakit.Covariance(a)
    best = spcakit.fit(cov, "fspca-ipu", r=3, k=6, restarts=8, seed=11)
    # the same starts, one at a time: the driver draws them from one generator, in turn
    draws = np.random.default_rng(11)
    singles = []
    for _ in range(8):
        w0 = np.linalg.qr(draws.standard_normal((25, 3)))[0]
        singles.append(spcakit.fit(cov, "fspca-ipu", r=3, k=6, w0=w0))
    values = [s.metrics["objective"] for s in singles]
    assert best.metrics["objective"] == pytest.approx(max(values), rel=1e-12)
    assert best.iterations == sum(s.iterations for s in singles)
    assert best.objective_history == singles[int(np.argmax(values))].objective_history
    assert "best of 8 starts" in best.stopping_reason
    again = spcakit.fit(cov, "fspca-ipu", r=3, k=6, restarts=8, seed=11)
    np.testing.assert_array_equal(again.loadings, best.loadings)


def test_a_given_start_at_the_optimum_stays_optimal():
    rng = np.random.default_rng(2)
    a = random_psd(rng, 12)
    optimum = alg.exhaustive_search(DenseCovariance(a), 2, 4)
    result = spcakit.fit(spcakit.Covariance(a), "fspca-ipu", r=2, k=4, w0=optimum.loadings)
    # g(W; W*) <= f(W) and Go maximises g: the first step cannot leave the optimal value
    assert result.metrics["objective"] == pytest.approx(optimum.objective, rel=1e-12)


def test_eps_does_not_change_the_rank_deficient_optimum_of_go():
    # scheme C of Table 1: rank(A) = m, so Go (eps = 0) is globally optimal (Thm. 4.2)
    rng = np.random.default_rng(0)
    q = np.linalg.qr(rng.standard_normal((14, 3)))[0]
    a = (q * [300.0, 180.0, 60.0]) @ q.T
    go = spcakit.fit(spcakit.Covariance(a), "fspca-go", r=3, k=5)
    best = alg.exhaustive_search(DenseCovariance(a), 3, 5)
    assert go.metrics["objective"] == pytest.approx(best.objective, rel=1e-10)
    np.testing.assert_array_equal(metrics.row_support(go.loadings), best.support)


def test_wide_data_never_forms_the_covariance():
    rng = np.random.default_rng(0)
    n, p = 40, 6000
    x = rng.standard_normal((n, p))
    for method, kwargs in [("fspca-go", {}), ("fspca-ipu", {}), ("fspca-ipu", {"restarts": 2, "seed": 0})]:
        tracemalloc.start()
        try:
            result = spcakit.fit(x, method, r=3, k=50, **kwargs)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 8 * p * p / 20, f"{method}: peak {peak / 1e6:.1f} MB suggests a p x p allocation"
        assert_feasible(result.loadings, 50)


def test_data_and_its_covariance_give_the_same_subspace():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((60, 15)) @ rng.standard_normal((15, 15))
    c = np.cov(x, rowvar=False)
    for method in ("fspca-go", "fspca-ipu", "fspca-exhaustive"):
        from_data = spcakit.fit(x, method, r=2, k=4)
        from_cov = spcakit.fit(spcakit.Covariance(c), method, r=2, k=4)
        np.testing.assert_allclose(from_data.loadings, from_cov.loadings, atol=1e-8)


# -- row-sparse truncation ------------------------------------------------------------
def test_row_sparse_spcart_shares_one_support():
    result = spcakit.fit(PITPROPS, spcakit.compose(updater="rotation", truncator="row-sparse"), r=3, k=5)
    supports = {tuple(np.flatnonzero(result.loadings[:, j])) for j in range(3)}
    assert len(supports) == 1 and len(supports.pop()) <= 5
    assert np.allclose(np.linalg.norm(result.loadings, axis=0), 1.0)


def test_row_sparse_keeps_the_largest_rows_and_breaks_ties_by_index():
    truncate = get_registry().build("truncator", spcakit.core.specs.PartRef("row-sparse", {"k": 2}))
    z = np.array([[1.0, 0.0], [0.0, 2.0], [0.6, 0.8], [0.8, 0.6], [0.1, 0.1]])
    # row norms 1, 2, 1, 1, 0.14: row 1, then the first of the tied rows 0, 2, 3
    np.testing.assert_array_equal(metrics.row_support(truncate(z)), [0, 1])
    np.testing.assert_array_equal(truncate(z)[[0, 1]], z[[0, 1]])


def test_top_k_indices_prefer_the_smaller_index_even_through_rounding():
    assert alg.top_k_indices(np.array([1.0, 3.0, 1.0, 3.0, 2.0]), 3).tolist() == [1, 3, 4]
    assert alg.top_k_indices(np.array([1.0, 1.0 + 1e-15, 1.0, 0.5]), 2).tolist() == [0, 1]
    assert alg.top_k_indices(np.ones(6), 4).tolist() == [0, 1, 2, 3]
    # Go on a matrix with equal variances picks the first k variables (Alg. 1, line 2)
    v = np.ones(8) / math.sqrt(8)
    go = alg.go(DenseCovariance(np.outer(v, v)), 1, 3)
    assert go.support.tolist() == [0, 1, 2]


# -- metrics ---------------------------------------------------------------------------
def test_fspca_metrics_are_reported_by_fspca_runs_and_by_every_run_on_request():
    assert "objective" in spcakit.fit(PITPROPS, "fspca-ipu", r=3, k=6).metrics
    assert "objective" not in spcakit.fit(PITPROPS, "tpower", r=3, k=6).metrics
    for method in ("spcart", "tpower", "fspca-ipu"):
        k = {} if method == "spcart" else {"k": 6}
        result = spcakit.fit(PITPROPS, method, r=3, metrics=["ev", "objective", "normalized_explained_variance"], **k)
        m = result.metrics
        assert m["objective"] == pytest.approx(m["ev"])
        top3 = np.linalg.eigvalsh(PITPROPS.matrix)[::-1][:3].sum()
        assert m["normalized_explained_variance"] == pytest.approx(m["objective"] / top3)
    pca = spcakit.fit(PITPROPS, "pca", r=4, metrics="all")
    assert pca.metrics["normalized_explained_variance"] == pytest.approx(1.0)


def test_intersection_ratio_relative_error_and_hit_frequency():
    assert metrics.intersection_ratio(np.array([0, 2, 5, 7]), np.array([0, 1, 5, 7])) == 0.75
    assert metrics.intersection_ratio([1, 2], [3, 4], k=2) == 0.0
    assert metrics.relative_error(9.0, 10.0) == pytest.approx(0.1)
    assert metrics.hit_frequency([0.0, 5e-4, 1e-3, 2e-3]) == 0.75
    assert math.isnan(metrics.hit_frequency([]))


def test_thm_5_1_bound_terms():
    lam = np.array([10.0, 5.0, 2.0, 1.0, 0.5, 0.5])  # d = 6
    terms = metrics.fspca_bound_terms(lam, m=2, k=3)
    tail = 2.0 + 1.0  # r = min(rank, 2m) = 4: lambda_3 + lambda_4
    assert terms["d_g1_over_k"] == pytest.approx(6 * tail / 15 / 3)
    assert terms["d_g2_over_m"] == pytest.approx(6 * tail / 19 / 2)
    assert terms["one_minus_inverse_kappa"] == pytest.approx(1 - 0.5 / 10)
    assert terms["one_minus_k_over_d"] == pytest.approx(0.5)
    assert metrics.fspca_approximation_bound(lam, 2, 3) == pytest.approx(min(terms.values()))
    # rank(A) <= m: Go is exact, the bound is 0 (Thm. 4.2, Remark 5.2)
    assert metrics.fspca_approximation_bound([4.0, 1.0, 0.0, 0.0], 2, 2) == 0.0
    # a singular A has infinite condition number
    assert metrics.fspca_bound_terms([4.0, 3.0, 2.0, 0.0], 1, 2)["one_minus_inverse_kappa"] == 1.0
    with pytest.raises(ValueError):
        metrics.fspca_bound_terms(lam, 3, 2)


def test_go_is_within_the_thm_5_1_factor_of_the_optimum():
    rng = np.random.default_rng(8)
    for _ in range(10):
        q = np.linalg.qr(rng.standard_normal((10, 10)))[0]
        lam = np.sort(rng.exponential(size=10) ** 3)[::-1]
        a = (q * lam) @ q.T
        eps = metrics.fspca_approximation_bound(lam, 2, 4)
        go = alg.go(DenseCovariance(a), 2, 4)
        best = alg.exhaustive_search(DenseCovariance(a), 2, 4)
        assert go.objective >= (1 - eps) * best.objective - 1e-10


# -- errors people can act on -----------------------------------------------------------
@pytest.mark.parametrize(
    "args,message",
    [
        (["run", "fspca-go", "-r", "3", "--param", "k=2"], "k must be an integer in [3, 13]"),
        (["run", "fspca-go", "-r", "3", "--param", "k=2"], "the m = r = 3 loadings share k of the d = 13 variables"),
        (["run", "fspca-ipu", "-r", "2", "--param", "k=14"], "k must be an integer in [2, 13]"),
        (["run", "fspca-ipu", "-r", "2", "--param", "k=4", "--param", "epsilon=-1"], "epsilon must be a number >= 0"),
        (["run", "fspca-ipu", "-r", "2", "--param", "k=4", "--param", "restarts=0"], "restarts must be a positive integer"),
        (["run", "fspca-ipu", "-r", "2", "--param", "k=4", "--param", "start=best"],
         "start must be one of low-rank, random, given"),
        (["run", "fspca-ipu", "-r", "2", "--param", "k=4", "--param", "restarts=3", "--param", "start=low-rank"],
         "needs random starts"),
        (["run", "fspca-ipu", "-r", "2", "--param", "k=4", "--param", "w0=[[1,0],[0,1]]"], "the problem needs d x m = 13 x 2"),
        (["run", "fspca-ipu", "-r", "2", "--param", "k=4", "--param", "start=given"], "needs w0"),
        (["run", "fspca-exhaustive", "-d", "builtin:random?n=40&p=60&seed=0", "-r", "2", "--param", "k=30"],
         "C(60, 30) = 118,264,581,564,861,424 row supports"),
        (["compose", "--truncator", "row-sparse", "-r", "2", "--param", "k=0"], "must be an integer in [1, 13]"),
    ],
)
def test_bad_parameters_exit_with_code_2_and_say_what_is_valid(cli, args, message):
    result = cli.invoke(*args)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output


def test_exhaustive_refuses_large_problems_in_python_too():
    with pytest.raises(InvalidParameterError, match="Use fspca-ipu"):
        alg.exhaustive_search(DenseCovariance(np.eye(40)), 2, 12)


# -- command line ------------------------------------------------------------------------
def test_cli_runs_the_three_methods_with_params(cli, tmp_path: Path):
    ipu = run_json(cli, "run", "fspca-ipu", "-r", "2", "--param", "k=5")
    go = run_json(cli, "run", "fspca-go", "-r", "2", "--param", "k=5")
    best = run_json(cli, "run", "fspca-exhaustive", "-r", "2", "--param", "k=5")
    for doc in (ipu, go, best):
        assert doc["metrics"]["pattern"] == [5, 5]
        assert 0 < doc["metrics"]["normalized_explained_variance"] <= 1 + 1e-12
    assert go["metrics"]["objective"] <= ipu["metrics"]["objective"] + 1e-12 <= best["metrics"]["objective"] + 2e-12
    assert ipu["spec"]["updater"] == {"name": "ipu", "k": 5, "epsilon": 0.1, "epsilon_form": "relative"}
    assert ipu["spec"]["driver"] == "multistart"
    restarted = run_json(cli, "run", "fspca-ipu", "-r", "2", "--param", "k=5", "--param", "restarts=5", "--seed", "3")
    assert restarted["spec"]["initializer"]["restarts"] == 5
    assert "best of 5 starts" in restarted["stopping_reason"]
    # a user-given start from a file
    path = tmp_path / "w0.npy"
    np.save(path, np.asarray(best["loadings"]))
    given = run_json(cli, "run", "fspca-ipu", "-r", "2", "--param", "k=5", "--param", f"w0={path}")
    assert given["metrics"]["objective"] == pytest.approx(best["metrics"]["objective"], rel=1e-12)
    text = cli.invoke("run", "fspca-ipu", "-r", "2", "--param", "k=5").stdout
    assert "fixed point" in ipu["stopping_reason"] and "NEV" in text and "objective" in text
