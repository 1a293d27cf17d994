"""Tables 1-2 of Xu, Yang & Zhang, *Fast Deflation Sparse PCA via Subspace Projections*."""

from __future__ import annotations

import os

import numpy as np
import pytest

import spcakit
from spcakit.inputs.datasets import pitprops, square_root
from spcakit.analysis.metrics import cpev
from spcakit.numerics.operators import DenseCovariance
from spcakit.workflows.reproduce import run_experiment

pytestmark = pytest.mark.reproduction
SEEDS = 200 if os.environ.get("SPCAKIT_FULL") == "1" else 40


def test_table_1_supports_and_cpev():
    outcome = run_experiment("spca-sp-table1")
    assert all(row.required_matched for row in outcome.rows), [(r.row.label, r.ours) for r in outcome.rows]
    t_s = outcome.rows[0]
    # the paper's 0.9943 comes from a finite sample of the model; the exact covariance gives 0.9945
    assert abs(t_s.raw["cpev"] - 0.9943) < 5e-4


def test_table_2_rows_that_do_not_depend_on_sampling_match():
    outcome = run_experiment("spca-sp-table2")
    by_label = {row.row.label: row for row in outcome.rows}
    for row in outcome.rows:
        assert row.required_matched, (row.row.label, row.ours, row.row.paper)
    sp = by_label["SPCA-SP T_S, kappa_S = 10"]
    # exact P0: orthogonality within 0.001 of the paper, CPEV 0.026 lower (docs/reproductions.md)
    assert abs(sp.raw["orthogonality"] - 0.9576) < 1e-3
    assert 0.75 < sp.raw["cpev"] < 0.7865


def test_table_2_t_s_cpev_is_within_the_spread_of_row_sampling():
    # The paper samples c = 11 of 13 rows; with A = C^(1/2) our CPEV over seeds spans the paper's 0.7865.
    c = pitprops().matrix
    root = square_root(c)
    values = [
        cpev(spcakit.fit(root, "spca-sp", r=6, truncator="sparsity", lam=10, m=5, c=11, seed=s, center=False).loadings,
             DenseCovariance(c))
        for s in range(SEEDS)
    ]
    assert min(values) < 0.7865 < max(values) + 0.005
    assert np.median(values) < 0.7865
