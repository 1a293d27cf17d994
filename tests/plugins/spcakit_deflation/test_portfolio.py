"""``auto``, the default method: the best of its members at the same k, each refined by swaps."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spcakit
from spcakit.numerics import ties
from spcakit.core.errors import InvalidParameterError
from spcakit.testing import strategies as sps
from spcakit_deflation.portfolio import BEST_PAIR_LIMIT, MEMBERS, STOP_GAP, PortfolioUpdater, member_runs
from spcakit_deflation.solvers import BACKWARD_LIMIT


def _member_cpevs(matrix, r, k, covariance):
    """CPEV of every member run, alone and refined by swaps, as auto runs them."""
    out = {}
    for label, name, params in member_runs(MEMBERS, matrix.shape[1]):
        for refiner in ("none", "swap"):
            result = spcakit.fit(matrix, name, r=r, k=k, covariance=covariance, refiner=refiner, metrics=["cpev"],
                                 **params)
            out[(label, refiner)] = result.metrics["cpev"]
    return out


@settings(max_examples=25, deadline=None, derandomize=True)
@given(data=st.data())
def test_auto_reaches_at_least_every_member_alone_and_refined(data):
    kind = data.draw(st.sampled_from(("data", "tied")))
    if kind == "data":
        matrix = data.draw(sps.data_matrices(n_range=(12, 30), p_range=(4, 9)))
        covariance = False
    else:
        _, matrix = data.draw(sps.tied_covariances(p=(4, 9), kinds=("correlation",)))
        covariance = True
    p = matrix.shape[1]
    r = data.draw(st.integers(1, min(3, p - 2)))
    k = data.draw(st.integers(1, p))
    auto = spcakit.fit(matrix, "auto", r=r, k=k, covariance=covariance, metrics=["cpev", "nz"])
    members = _member_cpevs(matrix, r, k, covariance)
    # members within the tie tolerance of spcakit.numerics.ties (1e-10, relative) tie, and the earlier one is kept;
    # a run that stopped at certified loadings is within STOP_GAP of what any loadings as sparse explain
    certified = "certified within" in auto.stopping_reason
    tolerance = STOP_GAP if certified else ties.RTOL
    assert auto.metrics["cpev"] >= max(members.values()) * (1 - tolerance), (auto.metrics["cpev"], members)
    assert np.all(np.count_nonzero(auto.loadings, axis=0) <= k)
    np.testing.assert_allclose(np.linalg.norm(auto.loadings, axis=0), 1.0, atol=1e-12)


def test_the_reason_names_the_kept_member_and_every_members_cpev():
    from sklearn.datasets import load_breast_cancer

    x = load_breast_cancer().data
    x = (x - x.mean(axis=0)) / x.std(axis=0, ddof=1)
    result = spcakit.fit(x, "auto", r=5, k=5)
    reason = result.stopping_reason
    assert reason.startswith("best of 5 by CPEV: ")
    kept = reason.split(": ", 1)[1].split(", refined by swap (", 1)[0]
    assert kept in {label for label, _, _ in member_runs(MEMBERS, 30)}
    for label in ("tpower", "greedy", "greedy backward", "spcart", "tpower-restarts"):
        assert f"{label} 0." in reason
    # the kept member's refined run is the result
    params = {l: p for l, _, p in member_runs(MEMBERS, 30)}[kept]
    name = {l: n for l, n, _ in member_runs(MEMBERS, 30)}[kept]
    alone = spcakit.fit(x, name, r=5, k=5, refiner="swap", **params)
    np.testing.assert_allclose(result.loadings, alone.loadings, atol=1e-12)


def test_member_runs_follow_the_size_of_the_problem():
    small = member_runs(MEMBERS, BACKWARD_LIMIT)
    assert [label for label, _, _ in small] == ["tpower", "greedy", "greedy backward", "spcart", "tpower-restarts"]
    assert dict((l, p) for l, _, p in small)["greedy backward"] == {"backward": True}
    middle = member_runs(MEMBERS, BACKWARD_LIMIT + 1)
    assert [label for label, _, _ in middle] == ["tpower", "greedy", "spcart", "tpower-restarts"]
    assert all(p == {} for _, _, p in middle)
    large = member_runs(MEMBERS, BEST_PAIR_LIMIT + 1)
    assert dict((l, p) for l, _, p in large)["greedy"] == {"start": "leading"}


def test_auto_is_the_default_of_fit_and_of_the_estimator():
    pytest.importorskip("sklearn")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((40, 8)) @ rng.standard_normal((8, 8))
    assert spcakit.fit(x, r=2, k=3).spec["name"] == "auto"
    model = spcakit.SparsePCA(n_components=2, k=3).fit(x)
    assert model.result_.spec["name"] == "auto"
    assert model.get_params()["method"] == "auto"


def test_members_can_be_chosen_and_a_portfolio_needs_its_driver():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((30, 6))
    only = spcakit.fit(x, "auto", r=2, k=2, **{"updater.methods": ["spcart"]})
    assert only.stopping_reason.startswith("best of 1 by CPEV: spcart, refined by swap")
    bare = spcakit.fit(x, "auto", r=2, k=2, **{"updater.refiner": "none"})
    assert " -> " not in bare.stopping_reason and "refined" not in bare.stopping_reason.split("(")[0]
    with pytest.raises(InvalidParameterError, match="nonempty list of method names"):
        PortfolioUpdater(methods=[])
    spec = spcakit.compose(driver="deflation", updater="portfolio", truncator="none", deflator="projection")
    with pytest.raises(InvalidParameterError, match="driver best-of"):
        spcakit.fit(x, spec, r=1, k=2)


def test_greedy_leading_start_is_order_free_and_cheap_on_ties():
    from sklearn.datasets import load_breast_cancer

    x = load_breast_cancer().data
    x = (x - x.mean(axis=0)) / x.std(axis=0, ddof=1)
    base = spcakit.fit(x, "greedy", r=2, k=4, start="leading")
    order = np.random.default_rng(3).permutation(x.shape[1])
    permuted = spcakit.fit(x[:, order], "greedy", r=2, k=4, start="leading")
    assert permuted.metrics["cpev"] == pytest.approx(base.metrics["cpev"], abs=1e-12)
    np.testing.assert_array_equal(permuted.loadings != 0, base.loadings[order] != 0)


def test_above_refine_all_only_the_best_member_alone_is_refined():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((60, 12)) @ rng.standard_normal((12, 12))
    every = spcakit.fit(x, "auto", r=3, k=3, metrics=["cpev"])
    one = spcakit.fit(x, "auto", r=3, k=3, metrics=["cpev"], **{"updater.refine_all": 2})
    assert every.stopping_reason.count(" -> ") == 5 and one.stopping_reason.count(" -> ") == 1
    alone = {label: spcakit.fit(x, name, r=3, k=3, metrics=["cpev"], **params).metrics["cpev"]
             for label, name, params in member_runs(MEMBERS, 12)}
    assert one.metrics["cpev"] >= max(alone.values()) * (1 - ties.RTOL)
    assert every.metrics["cpev"] >= one.metrics["cpev"] * (1 - ties.RTOL)


def test_members_ending_on_the_same_loadings_are_refined_once(monkeypatch):
    # greedy and greedy backward end on the same loadings here (the reason shows both): the refiner runs once for
    # them, and every member's refined CPEV and the kept loadings are those of refining each member on its own
    from spcakit_deflation.swap import SupportSwap

    from sklearn.datasets import load_breast_cancer

    x = load_breast_cancer().data
    x = (x - x.mean(axis=0)) / x.std(axis=0, ddof=1)
    runs = {label: spcakit.fit(x, name, r=2, k=5, refiner="none", metrics=["cpev"], **params)
            for label, name, params in member_runs(MEMBERS, x.shape[1])}
    assert np.array_equal(runs["greedy"].loadings, runs["greedy backward"].loadings)
    distinct = len({result.loadings.tobytes() for result in runs.values()})
    assert distinct < len(runs)
    calls = {"n": 0}
    original = SupportSwap.__call__

    def counted(self, problem, loadings):
        calls["n"] += 1
        return original(self, problem, loadings)

    monkeypatch.setattr(SupportSwap, "__call__", counted)
    result = spcakit.fit(x, "auto", r=2, k=5, metrics=["cpev"])
    assert calls["n"] == distinct
    monkeypatch.setattr(SupportSwap, "__call__", original)
    refined = {label: spcakit.fit(x, name, r=2, k=5, refiner="swap", metrics=["cpev"], **params)
               for label, name, params in member_runs(MEMBERS, x.shape[1])}
    for label, alone in refined.items():
        assert f"{label} {runs[label].metrics['cpev']:.6g} -> {alone.metrics['cpev']:.6g}" in result.stopping_reason
    best = max(alone.metrics["cpev"] for alone in refined.values())
    assert result.metrics["cpev"] == pytest.approx(best, rel=1e-12)


@pytest.mark.parametrize("constraint", ["orthogonal", "uncorrelated"])
def test_under_a_constraint_the_members_swaps_skip_the_polish(monkeypatch, constraint):
    # the members' loadings only start the constraint's refiner: their swaps stop where no swap is left, without
    # re-fitting to convergence first (unconstrained, the kept loadings are polished)
    from spcakit_deflation.swap import SupportSwap

    polished = []
    original = SupportSwap.__call__

    def recorded(self, problem, loadings):
        polished.append(self.polish)
        return original(self, problem, loadings)

    monkeypatch.setattr(SupportSwap, "__call__", recorded)
    spcakit.fit("builtin:pitprops", "auto", r=3, k=4, metrics=["fve"], constraint=constraint)
    assert polished and not any(polished)
    polished.clear()
    spcakit.fit("builtin:pitprops", "auto", r=3, k=4, metrics=["cpev"])
    assert polished and all(polished)


def test_auto_stops_at_the_first_certified_member_and_reports_its_certificate():
    every = spcakit.fit("builtin:pitprops", "auto", r=1, k=4, **{"updater.stop_gap": "none"})
    stopped = spcakit.fit("builtin:pitprops", "auto", r=1, k=4)
    # the cheapest members run first; TPower's loading is the optimum, which the default search proves
    assert "; stopped at tpower: certified within 1e-06" in stopped.stopping_reason
    assert "greedy not run" in stopped.stopping_reason and "tpower-restarts not run" in stopped.stopping_reason
    assert "not run" not in every.stopping_reason and "certified" not in every.stopping_reason
    assert stopped.metrics["gap"][0] <= STOP_GAP
    assert stopped.metrics["cpev"] >= every.metrics["cpev"] * (1 - STOP_GAP)
    assert stopped.metrics["bound"][0] == pytest.approx(every.metrics["bound"][0], rel=1e-9)


@settings(max_examples=20, deadline=None, derandomize=True)
@given(data=st.data())
def test_a_stop_is_only_claimed_where_the_result_is_certified(data):
    # tied correlations, rank-deficient data and plain data: where auto says it stopped at certified loadings, the
    # result's own certificate (the bound and gap metrics) says so, and brute force agrees for one loading
    from spcakit.testing import brute_force_optimum

    kind = data.draw(st.sampled_from(("data", "tied", "wide")))
    if kind == "tied":
        _, matrix = data.draw(sps.tied_covariances(p=(4, 9), kinds=("correlation",)))
        covariance = True
    else:
        matrix = data.draw(sps.data_matrices(n_range=(3, 6) if kind == "wide" else (12, 30), p_range=(4, 9)))
        covariance = False
    p = matrix.shape[1]
    r = data.draw(st.integers(1, 2))
    k = data.draw(st.integers(1, p))
    result = spcakit.fit(matrix, "auto", r=r, k=k, covariance=covariance)
    if "certified within" not in result.stopping_reason:
        return
    assert result.metrics["gap"][-1] <= STOP_GAP
    if r == 1:
        c = np.asarray(matrix, dtype=float) if covariance else np.cov(matrix, rowvar=False)
        x = result.loadings[:, 0]
        value = float(x @ c @ x)
        optimum = brute_force_optimum(c, int(np.count_nonzero(x)))[0]
        assert value >= optimum * (1 - STOP_GAP) - 1e-12 * np.abs(c).max()


def test_stop_gap_is_a_relative_gap_or_none():
    with pytest.raises(InvalidParameterError, match="stop_gap must be a relative gap in \\[0, 1\\) or none"):
        PortfolioUpdater(stop_gap=2)
    assert PortfolioUpdater(stop_gap="none").stop_gap is None


def test_under_orthogonality_on_wide_data_auto_also_runs_the_restarts_on_disjoint_supports_and_keeps_the_best():
    from spcakit_deflation.portfolio import DISJOINT_MEMBER

    rng = np.random.default_rng(4)
    n, p = 20, 60
    x = rng.standard_normal((n, p)) * rng.uniform(0.5, 2.0, p)
    x[:, :5] += 2 * rng.standard_normal(n)[:, None]
    assert member_runs(MEMBERS, p, disjoint=True)[-1] == ("tpower-restarts disjoint", *DISJOINT_MEMBER)
    assert all(label != "tpower-restarts disjoint" for label, _, _ in member_runs(MEMBERS, p))
    result = spcakit.fit(x, "auto", r=3, k=4, constraint="orthogonal", metrics=["fve"])
    assert "tpower-restarts disjoint 0." in result.stopping_reason
    name, params = DISJOINT_MEMBER
    alone = spcakit.fit(x, name, r=3, k=4, metrics=["fve"], **params)
    supports = [set(np.flatnonzero(u)) for u in alone.loadings.T]
    assert all(not (a & b) for i, a in enumerate(supports) for b in supports[i + 1 :])  # disjoint: orthogonal
    assert result.metrics["fve"] >= alone.metrics["fve"] * (1 - 1e-12)  # the best member: never below it
    # not without the constraint, nor for uncorrelated scores, nor on data of more rows than half the variables
    assert "tpower-restarts disjoint" not in spcakit.fit(x, "auto", r=3, k=4).stopping_reason
    assert "tpower-restarts disjoint" not in spcakit.fit(x, "auto", r=3, k=4, constraint="uncorrelated").stopping_reason
    members = ("tpower", "greedy")  # the user's members: without tpower-restarts, not its disjoint run either
    chosen = spcakit.fit(x, "auto", r=3, k=4, constraint="orthogonal", **{"updater.methods": list(members)})
    assert "tpower-restarts" not in chosen.stopping_reason
    tall = np.vstack([x, x + 0.1 * rng.standard_normal((n, p))])
    assert "tpower-restarts disjoint" not in spcakit.fit(tall[:, :30], "auto", r=3, k=4, constraint="orthogonal").stopping_reason


def test_the_restarts_on_disjoint_supports_follow_the_variables_in_any_order_on_standardised_wide_data():
    # gene-like data: 15 rows, 60 variables, standardised (tied variances), a constant column; the member runs, and
    # permuting the columns permutes the loadings
    rng = np.random.default_rng(7)
    x = rng.standard_normal((15, 60)) @ np.diag(rng.uniform(0.5, 2.0, 60))
    x[:, :8] += 1.5 * rng.standard_normal(15)[:, None]
    x[:, 30] = 3.0
    order = rng.permutation(60)
    fits = []
    for data in (x, x[:, order]):
        with pytest.warns(spcakit.ConstantColumnWarning, match="1 column"):  # named, given zero loadings
            fits.append(spcakit.fit(data, "auto", r=3, k=4, standardize=True, constraint="orthogonal", metrics=["fve"]))
    assert all("tpower-restarts disjoint 0." in fit.stopping_reason for fit in fits)
    np.testing.assert_allclose(np.abs(fits[1].loadings), np.abs(fits[0].loadings[order]), atol=1e-10)
    assert fits[1].metrics["fve"] == pytest.approx(fits[0].metrics["fve"], rel=1e-10)
