"""The ``swap`` refiner: its scores, its reach on small problems, matrix-free use, the CLI and the record.

Properties for random problems (CPEV never lower, cardinalities kept, unit columns, fixed point,
permutation equivariance) are in ``tests/properties/test_swap_properties.py``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from spcakit_deflation.secular import (
    bordered_top,
    hyperplane_tops,
    reduce_pencil,
    removal_tops,
)
from spcakit_deflation.swap import (
    ColumnCache,
    SupportSwap,
    _pencil_columns,
    _span_of_others,
)

import spcakit
from spcakit.analysis.metrics import cpev
from spcakit.numerics.linalg import added_variance_problem, generalized_top
from spcakit.testing import strategies as sps

#: Wishart draws of the exhaustive-optimum test: p variables, n samples, 100 covariances, cardinality 4.
WISHART = {"p": 14, "n": 20, "count": 100, "k": 4, "seed": 0}


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 12), sps.seeds())
def test_hyperplane_tops_are_the_top_eigenvalues_on_the_hyperplanes(m, seed):
    rng = np.random.default_rng(seed)
    values = np.sort(rng.standard_normal((6, m)) * 10.0 ** rng.uniform(-2, 2), axis=1)
    normals = rng.standard_normal((6, m)) * (rng.random((6, m)) < 0.8)  # some weights exactly 0
    normals[:, -1] += rng.random(6) < 0.5  # the top weight nonzero in about half of the rows
    normals[np.all(normals == 0, axis=1), 0] = 1.0
    weights = normals**2 / np.sum(normals**2, axis=1, keepdims=True)
    got = hyperplane_tops(values, weights)
    for row in range(6):
        h = normals[row] / np.linalg.norm(normals[row])
        basis = np.linalg.svd(np.eye(m) - np.outer(h, h))[0][:, : m - 1]  # orthonormal basis of h's complement
        expected = np.linalg.eigvalsh(basis.T @ np.diag(values[row]) @ basis)[-1]
        scale = np.abs(values[row]).max()
        assert got[row] == pytest.approx(expected, abs=1e-12 * scale)


def _restricted_top(arrow: np.ndarray, normal: np.ndarray) -> float:
    """The top eigenvalue of ``arrow`` on the hyperplane orthogonal to ``normal``, by a dense eigensolve."""
    h = normal / np.linalg.norm(normal)
    basis = np.linalg.svd(np.eye(h.size) - np.outer(h, h))[0][:, : h.size - 1]
    return float(np.linalg.eigvalsh(basis.T @ arrow @ basis)[-1])


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 25), st.integers(1, 8), st.floats(0.0, 1.0), sps.seeds())
def test_removal_tops_are_the_improving_tops_on_the_hyperplanes(k, n, share, seed):
    """Above the floor, the values equal a dense eigensolve of each arrow matrix on each hyperplane (1e-10 of the
    scale: both are backward stable, the secular function's pole at the top is regrouped so that it cancels exactly);
    below it, the floor itself. The floor runs from just above the support's top value to the arrows' tops."""
    rng = np.random.default_rng(seed)
    values = np.sort(rng.standard_normal(k) * 10.0 ** rng.uniform(-2, 2))
    scale = np.abs(values).max()
    basis = np.linalg.qr(rng.standard_normal((k, k)))[0]
    border = rng.standard_normal((k, n)) * scale * rng.uniform(0.01, 1.0)
    border[rng.random((k, n)) < 0.2] = 0.0  # some coordinates uncoupled
    corner = values[-1] + rng.standard_normal(n) * scale
    omega = rng.uniform(0.05, 1.0, n)
    normal_last = rng.standard_normal((k, n))
    tops = bordered_top(values, border, corner)
    floor = values[-1] + max(share * (float(tops.max()) - values[-1]), 1e-9 * scale)
    got = removal_tops(values, basis, border, corner, omega, normal_last, floor)
    if values[-1] - values[-2] <= 1e-6 * scale:
        assert got is None
        return
    assert got.shape == (n, k)
    for j in range(n):
        arrow = np.diag(np.append(values, corner[j]))
        arrow[:k, k] = arrow[k, :k] = border[:, j]
        for i in range(k):
            expected = _restricted_top(arrow, np.append(omega[j] * basis[i], normal_last[i, j]))
            if expected > floor + 1e-10 * scale:
                assert got[j, i] == pytest.approx(expected, abs=1e-10 * scale)
            elif expected < floor - 1e-10 * scale:
                assert got[j, i] == floor


def test_removal_tops_leave_what_they_cannot_score_to_the_arrow_eigensolve():
    """``None`` for one value, a floor not above the top value, and a top value repeated to 1e-6."""
    basis, border, corner, omega, normal_last = np.eye(3), np.ones((3, 2)), np.ones(2), np.ones(2), np.ones((3, 2))
    assert removal_tops(np.array([2.0]), np.eye(1), np.ones((1, 2)), corner, omega, np.ones((1, 2)), 3.0) is None
    assert removal_tops(np.array([0.0, 1.0, 2.0]), basis, border, corner, omega, normal_last, 2.0) is None
    repeated = np.array([0.0, 2.0 - 1e-7, 2.0])
    assert removal_tops(repeated, basis, border, corner, omega, normal_last, 2.5) is None
    assert removal_tops(np.array([0.0, 1.0, 2.0]), basis, border, corner, omega, normal_last, 2.5) is not None


@pytest.mark.parametrize("r", [1, 3])
def test_the_improving_swaps_scores_equal_a_fresh_eigensolve(r):
    """With a floor just above the support's value (the refiner's), every swap scored above it equals
    generalized_top of the swapped support's pencil, and every swap whose pencil is below it scores the floor."""
    rng = np.random.default_rng(11)
    p, k = 14, 5
    data = rng.standard_normal((40, p))
    problem = spcakit.as_problem(data)
    c = problem.covariance.matrix
    scored = 0
    for trial in range(6):
        x = _random_loadings(rng, p, k, r)
        t = trial % r
        support, q, cq, gram, diag_a, diag_b, a_cols, b_cols = _pencil_of(problem, x, t)
        b_ss = None if b_cols is None else b_cols[support]
        reduced = reduce_pencil(a_cols[support], b_ss)
        floor = reduced.top * (1 + 1e-9)
        outside = np.setdiff1d(np.arange(p), support)
        scores = SupportSwap._swap_values(reduced, a_cols, b_cols, support, diag_a, diag_b, outside, floor)
        for row, j in enumerate(outside):
            for position in range(k):
                swapped = np.sort(np.append(np.delete(support, position), j))
                value, _ = generalized_top(*added_variance_problem(c[:, swapped], swapped, q, cq, gram))
                if value > floor * (1 + 1e-9):
                    scored += 1
                    assert scores[row, position] == pytest.approx(value, rel=1e-9)
                elif value < floor * (1 - 1e-9):
                    assert scores[row, position] <= floor
    assert scored > 0  # random loadings leave improving swaps


def _random_loadings(rng: np.random.Generator, p: int, k: int, r: int) -> np.ndarray:
    """``r`` unit loadings of ``k`` random nonzeros each."""
    x = np.zeros((p, r))
    for t in range(r):
        x[rng.choice(p, k, replace=False), t] = rng.standard_normal(k)
    return x / np.linalg.norm(x, axis=0)


def _pencil_of(problem, x: np.ndarray, t: int) -> tuple:
    """Loading ``t``'s support and the pencil the refiner scores its swaps on: the others' span (basis, C times it,
    its Gram matrix), the pencil's diagonals and its columns on the support."""
    columns = ColumnCache(problem.covariance)
    span = _span_of_others(x, t, columns)
    q, cq, gram = span.basis, span.c_basis, span.gram
    c = problem.covariance.matrix
    diag_a = np.diag(c) - 2 * np.einsum("ij,ij->i", cq, q) + np.einsum("ij,ij->i", q @ gram, q)
    diag_b = 1.0 - np.einsum("ij,ij->i", q, q)
    support = np.flatnonzero(x[:, t])
    a_cols, b_cols = _pencil_columns(columns(support), support, q, cq, gram)
    return support, q, cq, gram, diag_a, diag_b, a_cols, b_cols


@pytest.mark.parametrize("r", [1, 3])
def test_the_secular_scores_equal_a_fresh_eigensolve_of_every_swapped_support(r):
    """Every swap value from the arrow matrices equals generalized_top of the swapped support's pencil.

    Both compute the top eigenvalue of one k x k pencil from the same products; they differ by rounding,
    amplified by the conditioning of P_SS (well conditioned here: Gaussian data, random sparse loadings).
    """
    rng = np.random.default_rng(7)
    p, k = 12, 4
    data = rng.standard_normal((40, p))
    problem = spcakit.as_problem(data)
    c = problem.covariance.matrix
    for trial in range(5):
        x = _random_loadings(rng, p, k, r)
        t = trial % r
        support, q, cq, gram, diag_a, diag_b, a_cols, b_cols = _pencil_of(problem, x, t)
        a_ss = a_cols[support]
        b_ss = None if b_cols is None else b_cols[support]
        reduced = reduce_pencil(a_ss, b_ss)
        outside = np.setdiff1d(np.arange(p), support)
        scores = SupportSwap._swap_values(reduced, a_cols, b_cols, support, diag_a, diag_b, outside, -np.inf)
        for row, j in enumerate(outside):
            for position in range(k):
                swapped = np.sort(np.append(np.delete(support, position), j))
                value, _ = generalized_top(*added_variance_problem(c[:, swapped], swapped, q, cq, gram))
                assert scores[row, position] == pytest.approx(value, rel=1e-9)


def wishart_covariances():
    rng = np.random.default_rng(WISHART["seed"])
    for _ in range(WISHART["count"]):
        a = rng.standard_normal((WISHART["n"], WISHART["p"]))
        yield a.T @ a / WISHART["n"]


def test_the_refined_first_loading_reaches_the_exhaustive_optimum_in_three_cases_out_of_four():
    """Done-when of issue 16: p = 14, k = 4, one loading from tpower, 100 Wishart covariances (n = 20).

    "Reaches" means the refined loading explains the optimum's variance up to the tie tolerance 1e-10
    (the optimum is the exhaustive search's value: no support explains more). Measured: tpower alone
    31 %, refined 80 % (other seeds: 25-34 % and 80-85 %).
    """
    k = WISHART["k"]
    reached = {"tpower": 0, "swap": 0}
    for covariance in wishart_covariances():
        problem = spcakit.as_problem(covariance, covariance=True)
        best = spcakit.fit(problem, "exhaustive", r=1, k=k, metrics=["cpev"]).metrics["cpev"]
        plain = spcakit.fit(problem, "tpower", r=1, k=k, metrics=["cpev"])
        refined = SupportSwap()(problem, plain.loadings)
        assert np.count_nonzero(refined.loadings) == k
        for name, value in (("tpower", plain.metrics["cpev"]), ("swap", refined.report["cpev_after"])):
            assert value <= best * (1 + 1e-10)  # nothing beats the exhaustive search
            reached[name] += value >= best * (1 - 1e-10)
    rates = {name: count / WISHART["count"] for name, count in reached.items()}
    print(f"exhaustive optimum reached: tpower {rates['tpower']:.0%}, tpower + swap {rates['swap']:.0%}")
    assert rates["swap"] >= 0.75
    assert rates["swap"] > rates["tpower"]


def test_swap_on_wide_data_forms_nothing_p_by_p():
    import tracemalloc

    rng = np.random.default_rng(0)
    p = 3000
    problem = spcakit.as_problem(rng.standard_normal((30, p)) + rng.standard_normal((30, 1)) * rng.standard_normal(p))
    x = np.zeros((p, 3))
    for t in range(3):
        x[rng.choice(p, 10, replace=False), t] = rng.standard_normal(10)
    x /= np.linalg.norm(x, axis=0)
    tracemalloc.start()
    refined = SupportSwap()(problem, x)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < p * p * 8 / 10  # far below one p x p matrix (72 MB)
    assert refined.report["cpev_after"] >= refined.report["cpev_before"]
    np.testing.assert_array_equal(np.count_nonzero(refined.loadings, axis=0), [10, 10, 10])


def test_dependent_and_full_loadings_are_handled():
    problem = spcakit.as_problem("builtin:pitprops")
    x = np.zeros((13, 3))
    x[[0, 1, 2], 0] = x[[0, 1, 2], 1] = 1 / np.sqrt(3)  # two equal loadings: the second adds nothing
    x[:, 2] = 1 / np.sqrt(13)  # a loading on every variable: nothing to swap
    refined = SupportSwap()(problem, x)
    np.testing.assert_array_equal(np.count_nonzero(refined.loadings, axis=0), [3, 3, 13])
    assert cpev(refined.loadings, problem.covariance) > cpev(x, problem.covariance)


@pytest.mark.parametrize(
    ("params", "message"),
    [({"max_sweeps": 0}, "max_sweeps"), ({"tol": -1.0}, "tol"), ({"candidates": 0}, "candidates"),
     ({"improvement": "worst"}, "improvement"), ({"polish": 1}, "polish")],
)  # fmt: skip
def test_parameters_are_checked(params, message):
    with pytest.raises(spcakit.InvalidParameterError, match=message):
        SupportSwap(**params)


def test_first_improvement_also_refines():
    problem = spcakit.as_problem("builtin:pitprops")
    start = spcakit.fit(problem, "tpower", r=4, k=3).loadings
    first = SupportSwap(improvement="first")(problem, start)
    assert first.report["cpev_after"] > first.report["cpev_before"]
    np.testing.assert_array_equal(np.count_nonzero(first.loadings, axis=0), [3, 3, 3, 3])


def test_without_polish_the_swaps_stop_where_no_swap_is_left():
    problem = spcakit.as_problem("builtin:pitprops")
    start = spcakit.fit(problem, "tpower", r=4, k=3).loadings
    unpolished = SupportSwap(polish=False)(problem, start)
    assert unpolished.report["cpev_after"] > unpolished.report["cpev_before"]
    np.testing.assert_array_equal(np.count_nonzero(unpolished.loadings, axis=0), [3, 3, 3, 3])
    again = SupportSwap(polish=False, max_sweeps=1)(problem, unpolished.loadings)
    assert again.report["swaps"] == 0


def test_fit_records_the_refinement_in_the_metrics():
    plain = spcakit.fit("builtin:pitprops", "tpower", r=4, k=3)
    refined = spcakit.fit("builtin:pitprops", "tpower", r=4, k=3, refiner="swap")
    m = refined.metrics
    assert m["pattern"] == plain.metrics["pattern"] == [3, 3, 3, 3]
    assert m["refiner_cpev_before"] == pytest.approx(plain.metrics["cpev"], rel=1e-12)
    assert m["refiner_cpev_after"] == pytest.approx(m["cpev"], rel=1e-12)
    assert m["cpev"] > plain.metrics["cpev"]
    assert isinstance(m["refiner_swaps"], int) and m["refiner_swaps"] > 0 and isinstance(m["refiner_sweeps"], int)
    assert refined.spec["refiner"]["name"] == "swap" and refined.spec["refiner"]["improvement"] == "best"
    assert not any(key.startswith("refiner_") for key in plain.metrics)


def test_the_cli_run_of_issue_16(cli):
    """``spcakit run spcart -d builtin:pitprops -r 6 -k 4 --refiner swap --json``: CPEV >= the unrefined run's, 4 nonzeros each."""
    command = ["run", "spcart", "-d", "builtin:pitprops", "-r", "6", "-k", "4", "--json"]
    plain = cli.invoke(*command)
    refined = cli.invoke(*command, "--refiner", "swap")
    assert plain.exit_code == 0 and refined.exit_code == 0, plain.output + refined.output
    before, after = json.loads(plain.stdout), json.loads(refined.stdout)
    assert after["metrics"]["pattern"] == [4] * 6
    assert after["metrics"]["cpev"] >= before["metrics"]["cpev"]
    assert after["metrics"]["refiner_cpev_before"] == pytest.approx(before["metrics"]["cpev"], rel=1e-12)
    assert after["metrics"]["refiner_swaps"] >= 1
    text = cli.invoke(*command[:-1], "--refiner", "swap")
    assert text.exit_code == 0 and "refiner_swaps" in text.stdout and "refiner_cpev_after" in text.stdout


def test_the_column_cache_gives_c_s_columns_in_the_order_asked_fetching_each_once():
    """Batches in any order, with repeats, past the store's growth: C's columns, each variable fetched from the
    operator in one batch only."""
    rng = np.random.default_rng(5)
    operator = spcakit.as_problem(rng.standard_normal((30, 40))).covariance
    c = operator.columns(np.arange(40))
    batches: list[set[int]] = []

    class Counting:
        p = operator.p

        def columns(self, index: np.ndarray) -> np.ndarray:
            batches.append({int(i) for i in index})
            return operator.columns(index)

    columns = ColumnCache(Counting())
    assert columns(np.array([], dtype=int)).shape == (40, 0)
    for _ in range(12):
        index = rng.choice(40, size=int(rng.integers(1, 9)), replace=True)
        # (a column fetched in another batch may differ from c's in the last bits: BLAS blocks by the batch's width)
        np.testing.assert_allclose(columns(index), c[:, index], rtol=1e-13, atol=1e-15 * float(np.abs(c).max()))
    assert sum(len(batch) for batch in batches) == len(set().union(*batches)) > 16  # none twice; the store grew
