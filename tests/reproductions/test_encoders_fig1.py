"""Fig. 1 of Magdon-Ismail & Boutsidis, *Optimal Sparse Linear Encoders and Sparse PCA*: k = 2,
normalized loss and symmetric explained variance against the sparsity r, for Batch, Iterative,
TPower, GPower-l0 and GPower-l1, on Pitprops, Lymphoma and Colon.

The figure's curves are not in our copy of the paper; the tests check its claims ("our algorithms
give the minimum information loss", "existing sparse-PCA algorithms do better at maximizing symmetric
explained variance", loss decreasing towards 1 as r grows) on our runs of the experiment specs, and
that the figure data in docs/figures are what the specs give now (``spcakit reproduce encoders-fig1-NAME``,
kind ``sweep``). Pitprops runs in full; Lymphoma
and Colon (../shared/data, skipped when absent) at r = 5, 20, 40 unless SPCAKIT_FULL=1.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from spcakit.workflows.reproduce import load_experiment
from spcakit.workflows.reproduce.sweeps import point, run_sweep

pytestmark = pytest.mark.reproduction

REPO = Path(__file__).resolve().parents[2]
FULL = os.environ.get("SPCAKIT_FULL") == "1"
REDUCED = (5, 20, 40)
ENCODERS = ("Batch", "Iterative")
MAXIMIZERS = ("TPower", "GPower-l0", "GPower-l1")
FILES = {"lymphoma": "lymphoma_cov_500.npz", "colon": "colon_alon_62x2000.npz"}


@pytest.fixture(scope="module", params=["pitprops", "lymphoma", "colon"])
def figure(request, shared_data):
    dataset = request.param
    if dataset in FILES and not (shared_data / FILES[dataset]).exists():
        pytest.skip(f"{shared_data / FILES[dataset]} is absent")
    spec = load_experiment(f"encoders-fig1-{dataset}")
    sparsities = None if FULL or dataset == "pitprops" else REDUCED
    return dataset, list(run_sweep(spec, sparsities, root=REPO).records)


def by_r(records):
    table: dict[int, dict[str, dict]] = {}
    for rec in records:
        table.setdefault(rec["r"], {})[rec["method"]] = rec
    return table


def test_every_method_runs_at_every_sparsity_within_its_budget(figure):
    dataset, records = figure
    table = by_r(records)
    every = sorted({point(row)[1] for row in load_experiment(f"encoders-fig1-{dataset}").rows})
    expected = every if (FULL or dataset == "pitprops") else list(REDUCED)
    assert sorted(table) == expected
    for r, row in table.items():
        assert set(row) == set(ENCODERS + MAXIMIZERS), (dataset, r)
        for method in ENCODERS + ("TPower",):
            assert row[method]["pattern"] == [r, r], (dataset, r, method)
        for method in ("GPower-l0", "GPower-l1"):  # gamma was tuned: the densest loadings with at most r nonzeros
            assert max(row[method]["pattern"]) <= r, (dataset, r, method, row[method]["pattern"])
        for rec in row.values():
            assert rec["normalized_loss"] >= 1.0 - 1e-9
            assert 0.0 <= rec["symmetric_explained_variance"] <= 1.0 + 1e-9


def test_an_encoder_has_the_lowest_loss_at_every_sparsity(figure):
    dataset, records = figure
    for r, row in by_r(records).items():
        best_encoder = min(row[m]["normalized_loss"] for m in ENCODERS)
        best_maximizer = min(row[m]["normalized_loss"] for m in MAXIMIZERS)
        assert best_encoder < best_maximizer, (dataset, r)


def test_a_variance_maximizer_has_the_highest_symmetric_explained_variance(figure):
    dataset, records = figure
    for r, row in by_r(records).items():
        best_encoder = max(row[m]["symmetric_explained_variance"] for m in ENCODERS)
        best_maximizer = max(row[m]["symmetric_explained_variance"] for m in MAXIMIZERS)
        assert best_maximizer > best_encoder, (dataset, r)


def test_encoder_loss_falls_towards_one_as_r_grows(figure):
    dataset, records = figure
    table = by_r(records)
    for method in ENCODERS:
        losses = [table[r][method]["normalized_loss"] for r in sorted(table)]
        assert all(b <= a + 1e-12 for a, b in zip(losses, losses[1:])), (dataset, method, losses)
        assert losses[-1] < 1.01, (dataset, method, losses)


def test_iterative_beats_batch_on_pitprops_and_colon(figure):
    """The paper: "The iterative algorithm has better empirical performance than the batch algorithm".
    True at every r on Pitprops and Colon; on Lymphoma the two are within 0.3% and Batch wins at
    r = 5, 20, 25 (docs/reproductions.md)."""
    dataset, records = figure
    table = by_r(records)
    gaps = [table[r]["Batch"]["normalized_loss"] - table[r]["Iterative"]["normalized_loss"] for r in table]
    if dataset == "lymphoma":
        assert max(abs(g) for g in gaps) < 3e-3
    else:
        assert min(gaps) > 0, (dataset, gaps)


def test_the_figure_data_in_the_docs_are_what_the_specs_give(figure):
    dataset, records = figure
    stored = json.loads((REPO / "docs" / "figures" / f"encoders-fig1-{dataset}.json").read_text(encoding="utf-8"))
    saved = {(rec["method"], rec["r"]): rec for rec in stored["records"]}
    for rec in records:
        old = saved[(rec["method"], rec["r"])]
        assert rec["pattern"] == old["pattern"], (dataset, rec["method"], rec["r"])
        for key in ("normalized_loss", "symmetric_explained_variance"):
            assert rec[key] == pytest.approx(old[key], rel=1e-6, abs=1e-9), (dataset, rec["method"], rec["r"], key)
