"""Tian, Wang, Nie & Li, *Learning Feature Sparse Principal Subspace* (NeurIPS 2020): Table 2
(synthetic schemes A-F), Fig. 2 (normalized explained variance on three real data sets) and
Fig. 4 (convergence on Lymphoma), run from the specs ``specs/experiments/fspca-*.toml``
(``spcakit reproduce fspca-table2``). ``docs/reproductions.md`` has ours beside the paper's and why
they differ.

Reduced by default (3 realizations per scheme, one k per data set); ``SPCAKIT_FULL=1`` runs
the paper's 100 realizations and compares the rows that match the paper's construction.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from spcakit.workflows.reproduce import load_experiment
from spcakit.workflows.reproduce.studies import run_curve, run_realizations, run_traces

pytestmark = pytest.mark.reproduction
FULL = os.environ.get("SPCAKIT_FULL") == "1"
REALIZATIONS = 100 if FULL else 3
TABLE2 = load_experiment("fspca-table2")  # specs/experiments/fspca-table2.toml
GO, LOW_RANK, BEST, SINGLE, CONVEX = (row.label for row in TABLE2.rows)


@pytest.fixture(scope="module")
def table2():
    return run_realizations(TABLE2, REALIZATIONS).scores


def test_scheme_c_is_solved_exactly_by_every_method(table2):
    # rank(A) = m: Go is globally optimal (Thm. 4.2), and every IPU start reaches Go(A) in one step
    for name, scores in table2["C"].items():
        assert all(ir == 1.0 for ir in scores.ir), name
        assert max(abs(re) for re in scores.re) < 1e-9, name


def test_nothing_beats_the_exhaustive_optimum(table2):
    for scheme, rows in table2.items():
        for name, scores in rows.items():
            assert min(scores.re) >= -1e-9, (scheme, name)
            assert all(0.0 <= ir <= 1.0 for ir in scores.ir)


def test_ipu_started_at_go_is_never_worse_than_go(table2):
    for scheme, rows in table2.items():
        for go, ipu in zip(rows[GO].re, rows[LOW_RANK].re):
            assert ipu <= go + 1e-12, scheme


def test_best_of_20_is_the_best_of_its_single_starts(table2):
    for scheme, rows in table2.items():
        singles = np.asarray(rows[SINGLE].re).reshape(REALIZATIONS, 20)
        np.testing.assert_allclose(rows[BEST].re, singles.min(axis=1), atol=1e-12, err_msg=scheme)


@pytest.mark.skipif(not FULL, reason="the comparison with the paper needs its 100 realizations (SPCAKIT_FULL=1)")
def test_schemes_e_and_f_match_the_papers_low_rank_and_random_columns(table2):
    # E and F are fully specified (A = XX^T); A-D depend on how [43] draws the eigenspace (see the docs)
    paper = {  # (scheme, row): (IR, RE, HF) of Table 2; None where the text is illegible
        ("E", GO): (0.88, 0.01, 0.41),
        ("E", LOW_RANK): (0.88, 0.01, 0.42),
        ("F", LOW_RANK): (0.82, 0.03, 0.17),
        ("F", GO): (None, 0.03, None),
    }
    for (scheme, row), (ir, re, hf) in paper.items():
        s = table2[scheme][row].summary()
        if ir is not None:
            assert abs(s["ir"] - ir) <= 0.05, (scheme, row, s)
        assert abs(s["re"] - re) <= 0.01, (scheme, row, s)
        if hf is not None:
            assert abs(s["hf"] - hf) <= 0.15, (scheme, row, s)
    # the paper's Random Subspace IR is that of single starts, its RE and HF those of the best of 20
    for scheme, (ir, re, hf) in {"E": (0.83, 0.00, 0.89), "F": (0.62, 0.01, 0.44)}.items():
        assert abs(table2[scheme][SINGLE].summary()["ir"] - ir) <= 0.05, scheme
        best = table2[scheme][BEST].summary()
        assert abs(best["re"] - re) <= 0.01 and abs(best["hf"] - hf) <= 0.15, (scheme, best)


# -- Fig. 2 and Fig. 4 -------------------------------------------------------------------
def _covariances(load_shared):
    lymphoma = load_shared("lymphoma_cov_500.npz")["cov"]
    nus = np.cov(load_shared("nus_wide_2400x225.npz")["X"], rowvar=False)
    numbers = np.cov(load_shared("numerical_numbers_2000x216.npz")["X"], rowvar=False)
    return {"lymphoma": (lymphoma + lymphoma.T) / 2, "nus_wide": nus, "numerical_numbers": numbers}


KS = {"lymphoma": [10, 20, 50, 100, 200, 300], "nus_wide": [10, 20, 40, 60, 100, 150],
      "numerical_numbers": [10, 20, 40, 60, 100, 150]}  # fmt: skip
REDUCED_KS = {"lymphoma": [100], "nus_wide": [60], "numerical_numbers": [60]}
FIG2 = {"lymphoma": "fspca-fig2-lymphoma", "nus_wide": "fspca-fig2-nus-wide", "numerical_numbers": "fspca-fig2-numerical-numbers"}


def test_figure_2_normalized_explained_variance(load_shared):
    for name, a in _covariances(load_shared).items():
        ks = KS[name] if FULL else REDUCED_KS[name]
        curves = run_curve(load_experiment(FIG2[name]), tuple(ks), covariance=a).curves
        for i, k in enumerate(ks):
            go, ipu, greedy, bound = (curves[c][i] for c in ("Go", "IPU", "TPower (G)", "bound"))
            assert go <= ipu + 1e-12, (name, k)  # IPU starts at Go (same epsilon) and climbs
            assert ipu <= bound + 1e-12 and bound <= 1.0, (name, k)  # Thm. 5.1 caps the optimum
            assert 0.0 < greedy <= 1.0 + 1e-12
            if k >= 20:  # the paper's claim (1); at k = m = 10 TPower (G) is ahead on NUS-WIDE (docs)
                assert ipu >= greedy, (name, k, curves)


def test_figure_4_ipu_ascends_and_converges_within_ten_steps(load_shared):
    a = _covariances(load_shared)["lymphoma"]
    traces = run_traces(load_experiment("fspca-fig4-lymphoma"), (0, 1, 2, 3, 4) if FULL else (0,), covariance=a).traces
    for label, history in traces.items():
        h = np.asarray(history)
        assert np.all(np.diff(h[1:]) >= -1e-9 * h.max()), label  # Thm. 5.5 after the first step
        assert len(h) <= 10, label  # "IPU takes less than 10 steps to converge"
    go = traces["Go"][0]
    assert traces["IPU (Go start)"][0] == pytest.approx(go, rel=1e-12)  # step 1 from U_m is Go
    assert traces["IPU (Go start)"][-1] >= go
