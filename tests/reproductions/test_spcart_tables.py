"""Tables 3 and 4 of Hu, Pan, Wang & Wu, *Sparse PCA via Rotation and Truncation*.

The experiment specs in ``specs/experiments/`` hold the paper's numbers as
printed; these tests run them and require the rows the paper's method
defines exactly to print as in the paper. Every other row is compared in
``docs/reproductions.md`` with the reason for any difference.
"""

from __future__ import annotations

import numpy as np
import pytest

import spcakit
from spcakit.inputs.datasets import pitprops, zou_covariance
from spcakit.workflows.reproduce import run_experiment

pytestmark = pytest.mark.reproduction


@pytest.fixture(scope="module")
def table4():
    return run_experiment("spcart-table4")


@pytest.mark.parametrize(
    "label",
    ["PCA (reference)", "T-l0 SPCArt, lambda = 1/sqrt(p)", "T-sp SPCArt, lambda = 10", "T-l0 rSVD-GP, lambda = 0.27"],
)
def test_table4_required_rows_print_as_in_paper(table4, label):
    row = next(r for r in table4.rows if r.row.label == label)
    assert row.row.must_match, "the spec must mark this row as required"
    for column in row.row.must_match:
        assert row.ours[column] == row.row.paper[column], (label, column, row.ours[column], row.row.paper[column])


def test_table4_rsvd_gp_pattern_is_a_reordering_of_the_papers(table4):
    """Ties between equal variances decide the order of rSVD-GP's loadings (docs/reproductions.md)."""
    row = next(r for r in table4.rows if r.row.label == "T-l0 rSVD-GP, lambda = 0.27")
    assert sorted(row.ours["pattern"]) == sorted(row.row.paper["pattern"])


@pytest.mark.parametrize("label", ["T-l0 GPower, gamma = 0.1, inferred tie order", "T-l0 rSVD-GP, lambda = 0.27, inferred tie order",
                                   "T-sp rSVD-GP (TPower), lambda = 10, inferred tie order"])
def test_table4_deflation_rows_match_exactly_with_the_inferred_tie_order(table4, label):
    row = next(r for r in table4.rows if r.row.label == label)
    assert row.matched, (label, row.ours, row.row.paper)


def test_gpower_metrics_match_whatever_the_tie_order(table4):
    """GPower-l0 with relative gamma reaches the paper's loadings; only their order depends on ties."""
    row = next(r for r in table4.rows if r.row.label == "T-l0 GPower, gamma = 0.1")
    assert all(row.matches[c] for c in ("nz", "std", "nor", "cpev")), row.ours
    assert sorted(row.ours["pattern"]) == sorted(row.row.paper["pattern"])


def test_table4_block_rows_match_the_paper(table4):
    # rSVD-GPB is a block method (no tie-breaking): all its columns print as published.
    for label in ("T-l0 rSVD-GPB, lambda = 0.3", "T-sp rSVD-GPB, lambda = 10"):
        row = next(r for r in table4.rows if r.row.label == label)
        assert row.matched, (label, row.ours, row.row.paper)


def test_table3_supports_match_the_generating_model():
    outcome = run_experiment("spcart-table3")
    for row in outcome.rows:
        if "support" in row.row.paper:
            assert row.ours["support"] == row.row.paper["support"], row.row.label
            # CPEV differs from the paper by the covariance used (exact vs the paper's), at most 6e-4
            assert abs(row.raw["cpev"] - float(row.row.paper["cpev"])) < 6e-4, row.row.label


def test_table3_with_noise_free_h3_prints_exactly_as_published():
    outcome = run_experiment("spcart-table3-h3-noise-free")
    assert len(outcome.rows) == 9
    for row in outcome.rows:
        assert row.matched, (row.row.label, row.ours, row.row.paper)


def test_spcart_first_iteration_is_simple_thresholding():
    c = spcakit.Covariance(pitprops().matrix)
    st = spcakit.fit(c, "st", r=6)
    one_step = spcakit.fit(c, "spcart", r=6, n=1)
    np.testing.assert_allclose(st.loadings, one_step.loadings, atol=1e-12)


def test_tpower_is_rsvd_gp_with_truncation_by_sparsity():
    c = spcakit.Covariance(zou_covariance().matrix)
    a = spcakit.fit(c, "tpower", r=2, lam=4)
    b = spcakit.fit(c, "rsvd-gp", r=2, truncator="sparsity", lam=4)
    np.testing.assert_array_equal(a.loadings, b.loadings)
