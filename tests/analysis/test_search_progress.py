"""The exact search's progress: reported to a listener only, with numbers that move one way.

Within one search the node count and the best value never decrease and the bound never increases (so the
gap never increases); the bound a limit leaves stays above the optimum; ``spcakit.fit`` prints nothing, and
the command line draws nothing when stderr is not a terminal.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spcakit.analysis.search.tree import PRUNE_RTOL, TASK, branch_and_bound

import spcakit
from spcakit.numerics.linalg import generalized_top
from spcakit.output import progress
from spcakit.testing import strategies as sps

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _search_reports(a: np.ndarray, k: int, **limits) -> tuple[list[progress.Report], object]:
    seen: list[progress.Report] = []
    with progress.listen(seen.append):
        found = branch_and_bound(a, k, **limits)
    return seen, found


def _assert_monotone(seen: list[progress.Report]) -> list[progress.Report]:
    assert seen[0].task == f"{TASK} (warm start)" and seen[0].count == 0 and seen[0].best is None
    numbers = [r for r in seen if r.task == TASK]
    assert len(numbers) == len(seen) - 1 and numbers  # every other report is the search's, with numbers
    counts = [r.count for r in numbers]
    best = [r.best for r in numbers]
    bound = [r.bound for r in numbers]
    gaps = [r.gap for r in numbers]
    assert all(b >= a for a, b in itertools.pairwise(counts)), counts
    assert all(b > a for a, b in itertools.pairwise(counts[:-1])), counts  # one report per node; the last repeats
    assert all(b >= a for a, b in itertools.pairwise(best)), best
    assert all(b <= a for a, b in itertools.pairwise(bound)), bound
    assert all(b <= a for a, b in itertools.pairwise(gaps)), gaps
    return numbers


def _wishart(p: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((p, p))
    return x.T @ x / p


def test_a_limited_search_reports_increasing_nodes_a_growing_best_and_a_falling_bound():
    seen, found = _search_reports(_wishart(40, 0), 10, node_limit=120)  # 2989 nodes to finish
    numbers = _assert_monotone(seen)
    assert found.stopped == "node limit" and numbers[-1].count == found.nodes == 120
    assert numbers[-1].best == found.value and numbers[-1].bound <= numbers[0].bound
    assert numbers[-1].bound <= found.bound  # the Search's bound is the last one raised for rounding


def test_a_finished_search_reports_its_certificate_last():
    seen, found = _search_reports(spcakit.datasets.pitprops().matrix, 6)
    numbers = _assert_monotone(seen)
    assert found.optimal and numbers[-1].count == found.nodes
    assert numbers[-1].gap == pytest.approx(0.0, abs=2 * PRUNE_RTOL)


def _optimum(a: np.ndarray, k: int) -> float:
    return max(generalized_top(a[np.ix_(s, s)], np.eye(k))[0] for s in map(list, itertools.combinations(range(a.shape[0]), k)))


@SETTINGS
@given(sps.psd_matrices((3, 9)), st.data())
def test_every_reported_bound_and_the_one_a_limit_leaves_stay_above_the_optimum(a, data):
    k = data.draw(st.integers(1, a.shape[0]))
    seen, found = _search_reports(a, k, node_limit=data.draw(st.integers(0, 12)))
    numbers = _assert_monotone(seen)
    optimum = _optimum((a + a.T) / 2, k)
    slack = 2 * PRUNE_RTOL * abs(optimum) + 1e-12 * np.abs(a).max()  # pruning tolerance and rounding
    assert all(r.bound >= optimum - slack and r.best <= optimum + slack for r in numbers)
    assert found.bound >= optimum - slack


def test_fit_from_python_is_silent_and_reports_only_to_a_listener(capsys):
    assert not progress.listening()
    result = spcakit.fit("builtin:pitprops", "exact", r=2, k=5)
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""
    seen: list[progress.Report] = []
    with progress.listen(seen.append):
        again = spcakit.fit("builtin:pitprops", "exact", r=2, k=5)
    np.testing.assert_array_equal(result.loadings, again.loadings)  # listening changes nothing
    assert sum(r.task == f"{TASK} (warm start)" for r in seen) == 2  # one search per component
    assert capsys.readouterr().err == "" and not progress.listening()


def test_the_command_line_draws_no_progress_when_stderr_is_not_a_terminal(cli):
    outcome = cli.invoke("run", "exact", "-k", "6", "-r", "2", "--time-limit", "5")
    assert outcome.exit_code == 0, outcome.output
    assert "branch and bound" not in outcome.output and "(certified to 1e-6)" in outcome.output
