"""Cross-validation of ``scipy.sparse`` and Dask data: never densified whole.

The curves are checked against the same cross-validation of the data made dense (a separate computation:
the dense path centres all the rows first and scores each fold's rows in one array, the sparse and Dask
paths centre each block of held-out rows by the training rows' statistics), the choice against planted
supports on sparse data, the memory by spying on the blocks and by the traced allocations, and the
command line on sparse and Zarr files.

Tolerances: both computations add the same squares of the same numbers, centred by means that differ in
the last bits (the dense path centres twice), in another order; their fold errors agree to about 1e-15
(measured: at most 3e-15 relative). ``RTOL = 1e-8`` leaves room for the loadings of an iterative fit,
which move by rounding too, and is far below anything that would change a choice (the folds' standard
errors are about 1e-2).
"""

from __future__ import annotations

import json
import re
import tracemalloc
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from spcakit.workflows.cv import cross_validate, held_out
from spcakit.core.errors import ConstantColumnWarning, InvalidParameterError
from spcakit.inputs.datasets import planted_support

#: Relative tolerance of a fold error against the dense computation (see the module's description).
RTOL = 1e-8


def sparse_planted(n: int, p: int, size: int, sd: float, seed: int, cut: float = 1.0) -> np.ndarray:
    """A planted support of ``size`` variables (:func:`~spcakit.inputs.datasets.planted_support`, one factor of
    standard deviation ``sd`` plus unit noise) made sparse by zeroing every entry of magnitude below ``cut``:
    about a third of the entries stay (a standard normal exceeds 1 in magnitude with probability 0.32), more
    in the support's columns. Returned dense; the tests make it sparse."""
    x = planted_support(n, p, [size], [sd], seed).matrix
    x[np.abs(x) < cut] = 0.0
    return x


def with_odd_columns(x: np.ndarray) -> np.ndarray:
    """``x`` with an all-zero column (3), a constant column (7) and a column with a single entry (5, row 17:
    constant among the training rows of the fold that holds row 17 out)."""
    x = x.copy()
    x[:, 3] = 0.0
    x[:, 5] = 0.0
    x[17, 5] = 2.5
    x[:, 7] = 1.5
    return x


def assert_same_curve(found: Any, dense: Any) -> None:
    assert found.levels.tolist() == dense.levels.tolist()
    np.testing.assert_allclose(found.fold_errors, dense.fold_errors, rtol=RTOL, atol=0)
    assert found.nz.tolist() == dense.nz.tolist()
    assert (found.chosen, found.least) == (dense.chosen, dense.least)
    assert found.warnings == dense.warnings
    assert found.fold_sizes == dense.fold_sizes and found.n_samples == dense.n_samples and found.p == dense.p


@pytest.fixture(scope="module")
def odd() -> np.ndarray:
    return with_odd_columns(sparse_planted(200, 40, 6, 3.0, seed=2))


def run(data: Any, **kwargs: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantColumnWarning)
        return cross_validate(data, kwargs.pop("method", "spcart"), kwargs.pop("r", 1), k=kwargs.pop("k", "1:12"),
                              seed=kwargs.pop("seed", 0), **kwargs)  # fmt: skip


# -- the same numbers as the dense computation -----------------------------------------------------------------
@pytest.mark.parametrize("kind", ["csr", "csc", "coo", "csr_matrix"])
@pytest.mark.parametrize(
    "options", [{}, {"standardize": True}, {"center": False}, {"center": False, "standardize": True}]
)
def test_sparse_equals_dense(odd: np.ndarray, kind: str, options: dict[str, Any]) -> None:
    matrix = sp.csr_matrix(odd) if kind == "csr_matrix" else getattr(sp, f"{kind}_array")(odd)
    found, dense = run(matrix, **options), run(odd, **options)
    assert_same_curve(found, dense)
    # the folds' constant column 5 is named (once, for its fold), as for dense data
    assert len(found.warnings) == 1 and "5 (x06)" in found.warnings[0]
    np.testing.assert_allclose(found.result.loadings, dense.result.loadings, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("method, r, grid", [("tpower", 2, {"k": "2:8"}), ("spcart", 1, {"k": None, "lam": [0.3, 0.2, 0.1]})])
def test_sparse_equals_dense_other_methods_and_grids(odd: np.ndarray, method: str, r: int, grid: dict[str, Any]) -> None:
    found = run(sp.csr_array(odd), method=method, r=r, folds=4, seed=5, **grid)
    assert_same_curve(found, run(odd, method=method, r=r, folds=4, seed=5, **grid))


def test_sparse_columns_drop_and_integer_entries() -> None:
    x = np.round(sparse_planted(150, 20, 5, 3.0, seed=4) * 3)  # integers: converted to float64 once
    names = [f"g{j}" for j in range(20)]
    matrix = sp.csr_array(x.astype(np.int64))
    for selection in ({"drop": ["g0", "g4"]}, {"columns": names[10:] + names[:3]}):
        found = run(matrix, feature_names=names, **selection)
        dense = run(x, feature_names=names, **selection)
        assert_same_curve(found, dense)
        assert found.result.feature_names == dense.result.feature_names


@pytest.mark.parametrize("kind", ["csr", "dask"])
def test_the_folds_constant_columns_are_warned_about(odd: np.ndarray, kind: str) -> None:
    data = sp.csr_array(odd) if kind == "csr" else pytest.importorskip("dask.array").from_array(odd, chunks=(64, 40))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cross_validate(data, "spcart", 1, k="1:4")
    messages = [str(w.message) for w in caught if issubclass(w.category, ConstantColumnWarning)]
    # column 5 (one stored entry) is constant among the training rows of the fold holding out its row
    assert [m for m in messages if "training rows" in m] == [m for m in messages if re.search(
        r"^fold \d of 5 \(160 training rows\): 1 column\(s\) are constant among the training rows: 5 \(x06\)", m)]  # fmt: skip
    assert len([m for m in messages if "training rows" in m]) == 1
    # the refit names the columns constant in all the rows (all-zero 3, constant 7)
    assert any("3 (x04), 7 (x08)" in m for m in messages)


# -- the planted support ---------------------------------------------------------------------------------------
# (size, method): 3 data sets each (data seeds 0, 1, 2, fold seed the same), 12 runs in all; every one must
# choose k within one of the planted size. n = 300, p = 60, about 34 % of the entries stored.
@pytest.mark.parametrize("size, method", [(6, "spcart"), (10, "spcart"), (6, "tpower"), (10, "tpower")])
def test_cv_on_csr_finds_the_planted_support(size: int, method: str) -> None:
    chosen = []
    for seed in range(3):
        x = sp.csr_array(sparse_planted(300, 60, size, 4.0, seed=seed))
        assert 0.2 < x.nnz / (300 * 60) < 0.5  # sparse, not a dense matrix in another format
        cv = cross_validate(x, method, 1, k="1:20", rule="1se", seed=seed)
        chosen.append(int(cv.chosen))
    assert all(abs(k - size) <= 1 for k in chosen), (size, method, chosen)


# -- memory: one block of held-out rows at a time --------------------------------------------------------------
def spy_blocks(monkeypatch: pytest.MonkeyPatch, rows: int, p: int) -> list[tuple[int, int]]:
    """Blocks of ``rows`` rows of ``p`` variables, and a record of the shape of every dense block scored."""
    monkeypatch.setattr(held_out, "HELD_OUT_BLOCK_BYTES", 8 * p * rows)
    shapes: list[tuple[int, int]] = []
    scored = held_out.residual_sums

    def spy(block: np.ndarray, span: Any) -> tuple[float, float]:
        shapes.append(block.shape)
        return scored(block, span)

    monkeypatch.setattr(held_out, "residual_sums", spy)
    return shapes


def test_the_held_out_rows_are_scored_a_block_at_a_time(odd: np.ndarray, monkeypatch: pytest.MonkeyPatch) -> None:
    whole = run(sp.csr_array(odd), k="1:5")
    shapes = spy_blocks(monkeypatch, 7, odd.shape[1])
    blocked = run(sp.csr_array(odd), k="1:5")
    assert max(rows for rows, _ in shapes) <= 7
    # 200 rows in blocks of 7 (29 blocks), each split among the 5 folds: every held-out row once per level
    assert sum(rows for rows, _ in shapes) == 200 * 5
    assert len(shapes) >= 29 * 5
    np.testing.assert_allclose(blocked.fold_errors, whole.fold_errors, rtol=1e-12, atol=0)


def test_sparse_cross_validation_never_holds_the_dense_matrix(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(0)
    n, p = 60_000, 100  # dense: 46 MiB; stored: about 0.7 MiB
    x = sp.random_array((n, p), density=0.01, format="csr", rng=rng)
    signal = sp.csr_array(np.outer(rng.random(n) < 0.05, np.r_[np.ones(5), np.zeros(p - 5)]))
    x = sp.csr_array(x + signal)
    monkeypatch.setattr(held_out, "HELD_OUT_BLOCK_BYTES", 1 << 22)  # 4 MiB: 5242 rows, a third per fold
    tracemalloc.start()
    try:
        cross_validate(x, "spcart", 1, k="1:3", folds=3, metrics=[])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # the folds' training rows (3 sparse copies), the problems' checks, and a fold's share of a block of
    # held-out rows made dense with its residuals (2 x 1.3 MiB) take about 8 MiB: within a quarter of the
    # dense matrix's 46 MiB. Densifying the rows would not fit, nor would one fold's 20 000 held-out rows
    # (15 MiB, and as much for their residuals: 37 MiB measured with unbounded blocks)
    assert peak < n * p * 8 / 4, f"peak {peak / 2**20:.1f} MiB"


# -- Dask ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "chunks, options",
    [((64, 40), {}), ((33, 16), {"standardize": True}), ((200, 40), {"center": False}),
     ((50, 7), {"center": False, "standardize": True})],
)  # fmt: skip
def test_dask_equals_dense(odd: np.ndarray, chunks: tuple[int, int], options: dict[str, Any]) -> None:
    da = pytest.importorskip("dask.array")
    import dask

    with dask.config.set(scheduler="threads"):
        found = run(da.from_array(odd, chunks=chunks), **options)
    assert_same_curve(found, run(odd, **options))


def test_dask_reads_the_rows_once_per_level_and_per_fold(odd: np.ndarray, monkeypatch: pytest.MonkeyPatch) -> None:
    da = pytest.importorskip("dask.array")
    from dask.callbacks import Callback

    computes: list[int] = []

    class Count(Callback):
        def _start(self, dsk: Any) -> None:
            computes.append(len(dsk))

    shapes = spy_blocks(monkeypatch, 9, odd.shape[1])
    with Count():
        found = run(da.from_array(odd, chunks=(50, 40)), k="1:6", folds=4)
    # one pass for the problem of all rows, one per fold's training rows, one per level for the held-out rows
    assert len(computes) == 1 + 4 + 6
    assert max(rows for rows, _ in shapes) <= 9
    assert sum(rows for rows, _ in shapes) == 200 * 6
    assert_same_curve(found, run(odd, k="1:6", folds=4))


def test_a_zarr_store_by_path(odd: np.ndarray, tmp_path: Path) -> None:
    da = pytest.importorskip("dask.array")
    pytest.importorskip("zarr")
    store = tmp_path / "odd.zarr"
    da.from_array(odd, chunks=(40, 40)).to_zarr(str(store))
    found = run(str(store), drop=["x01"])
    assert_same_curve(found, run(odd, drop=["x01"]))
    assert found.source == str(store)


# -- weights are not taken -------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["sample_weight", "weights"])
def test_weights_are_refused_clearly(odd: np.ndarray, name: str) -> None:
    with pytest.raises(InvalidParameterError, match=rf"takes no observation weights \({name}=\).*unweighted.*"
                                                    r"sample_weight=w"):  # fmt: skip
        cross_validate(sp.csr_array(odd), "spcart", 1, k="1:3", **{name: np.ones(odd.shape[0])})


# -- the command line ------------------------------------------------------------------------------------------
def cli_json(cli, path: Path, *extra: str) -> dict[str, Any]:
    result = cli.invoke("cv", "spcart", "--data", str(path), "-k", "1:8", "--json", *extra)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize("suffix", [".npz", ".mtx", ".zarr"])
def test_cli_cv_on_sparse_and_zarr_files(cli, odd: np.ndarray, tmp_path: Path, suffix: str) -> None:
    np.save(tmp_path / "odd.npy", odd)
    path = tmp_path / f"odd{suffix}"
    if suffix == ".npz":
        sp.save_npz(path, sp.csr_array(odd))
    elif suffix == ".mtx":
        scipy.io.mmwrite(path, sp.coo_array(odd))
    else:
        da = pytest.importorskip("dask.array")
        pytest.importorskip("zarr")
        da.from_array(odd, chunks=(64, 20)).to_zarr(str(path))
    dense = cli_json(cli, tmp_path / "odd.npy", "--standardize")
    found = cli_json(cli, path, "--standardize")
    np.testing.assert_allclose(found["fold_errors"], dense["fold_errors"], rtol=RTOL, atol=0)
    assert (found["chosen"], found["least"], found["warnings"]) == (dense["chosen"], dense["least"], dense["warnings"])
    assert found["data"] == str(path) and found["n_samples"] == 200
    np.testing.assert_allclose(found["result"]["loadings"], dense["result"]["loadings"], rtol=1e-8, atol=1e-10)
