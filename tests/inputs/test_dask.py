"""Dask arrays and Zarr stores: the NumPy path's results, tall data read once, wide data kept distributed."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
zarr = pytest.importorskip("zarr")

import spcakit  # noqa: E402
from spcakit.inputs import dask_arrays  # noqa: E402
from spcakit.inputs.dask_arrays import DaskCovariance, block_moments, merge_moments  # noqa: E402
from spcakit.core.errors import InvalidDataError, InvalidParameterError  # noqa: E402
from spcakit.numerics.operators import DenseCovariance, densify  # noqa: E402
from spcakit.inputs import as_problem  # noqa: E402


def well_conditioned(n: int, p: int, seed: int = 0) -> np.ndarray:
    """Gaussian data with distinct column spreads (a well-separated spectrum) and nonzero column means."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, p)) * np.linspace(3.0, 0.5, p) + 2.0 + 0.1 * np.arange(p)


TALL = well_conditioned(300, 12)  # n >= p: the p x p covariance in one pass, then in memory
WIDE = well_conditioned(40, 60, seed=1)  # n < p: a distributed operator


def chunked(x: np.ndarray) -> object:
    """``x`` as a dask array chunked along both axes (the tall pass must merge the column chunks)."""
    return da.from_array(x, chunks=(x.shape[0] // 3 + 1, x.shape[1] // 2 + 1))


@pytest.fixture(scope="module")
def cluster():
    local = distributed.LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None,
                                     processes=True)  # fmt: skip
    client = distributed.Client(local, set_as_default=False)  # used where a test says so (as_current)
    try:
        yield local, client
    finally:
        client.close()
        local.close()


# -- results equal the NumPy path's, on a dask.distributed cluster ----------------------------------------
METHODS = [("spcart", 4), ("tpower", 4), ("fspca-ipu", 6)]


@pytest.mark.parametrize("shape", ["tall", "wide"])
@pytest.mark.parametrize("method,k", METHODS, ids=[m for m, _ in METHODS])
def test_results_on_a_cluster_equal_the_numpy_path(cluster, method, k, shape):
    x = TALL if shape == "tall" else WIDE
    _, client = cluster
    with client.as_current():  # two blocks of rows: each product is one round trip of few tasks
        on_dask = spcakit.fit(da.from_array(x, chunks=(x.shape[0] // 2, -1)), method, r=2, k=k)
    numpy = spcakit.fit(x, method, r=2, k=k)
    np.testing.assert_allclose(on_dask.loadings, numpy.loadings, rtol=0, atol=1e-10)
    np.testing.assert_array_equal(on_dask.loadings != 0, numpy.loadings != 0)
    assert on_dask.metrics["cpev"] == pytest.approx(numpy.metrics["cpev"], rel=1e-10)
    np.testing.assert_allclose(on_dask.input.mean, x.mean(axis=0), rtol=1e-13)
    assert on_dask.input.shape == x.shape and on_dask.input.kind == "data" and on_dask.input.sha256 is None


@pytest.mark.parametrize("center,standardize", [(True, True), (False, False), (False, True)])
@pytest.mark.parametrize("shape", ["tall", "wide"])
def test_centring_and_standardising_equal_the_numpy_path(center, standardize, shape):
    x = TALL if shape == "tall" else WIDE
    on_dask = spcakit.fit(chunked(x), "spcart", r=2, k=4, center=center, standardize=standardize)
    numpy = spcakit.fit(x, "spcart", r=2, k=4, center=center, standardize=standardize)
    np.testing.assert_allclose(on_dask.loadings, numpy.loadings, rtol=0, atol=1e-10)
    if standardize:
        np.testing.assert_allclose(on_dask.input.scale, numpy.input.scale, rtol=1e-13)


# -- the problem: one pass for tall data, a distributed operator for wide data -----------------------------
def counting_reads(x: np.ndarray) -> tuple[object, dict[int, int]]:
    """``x`` as a dask array whose every block read is counted (the threaded scheduler: one process)."""
    reads: dict[int, int] = {}
    lock = threading.Lock()

    def read(block, block_id=None):
        with lock:
            reads[block_id[0]] = reads.get(block_id[0], 0) + 1
        return block

    return da.from_array(x, chunks=(50, x.shape[1])).map_blocks(read, dtype=x.dtype), reads


def test_tall_data_are_read_once_and_the_method_runs_in_memory():
    x, reads = counting_reads(TALL)
    problem = as_problem(x)
    assert reads == {i: 1 for i in range(6)}  # every block of rows once, in one compute
    assert isinstance(problem.covariance, DenseCovariance) and problem.data is None
    assert problem.n_samples == 300 and problem.max_rank == 12
    a = TALL - TALL.mean(axis=0)
    np.testing.assert_allclose(problem.covariance.matrix, a.T @ a / 299, rtol=0, atol=1e-13 * np.abs(a).max() ** 2)
    spcakit.fit(problem, "tpower", r=2, k=4)
    assert reads == {i: 1 for i in range(6)}  # the fit never touched the data


@pytest.mark.parametrize("center", [True, False])
@pytest.mark.parametrize("standardize", [False, True])
def test_the_wide_operator_is_the_covariance(center, standardize):
    n = WIDE.shape[0]
    a = WIDE - WIDE.mean(axis=0) if center else WIDE
    c = a.T @ a / (n - 1 if center else n)
    if standardize:
        d = np.sqrt(np.diag(c))
        c = c / np.outer(d, d)
    op = as_problem(chunked(WIDE), center=center, standardize=standardize).covariance
    assert isinstance(op, DaskCovariance) and op.explicit() is None
    scale = np.abs(c).max()
    v = np.random.default_rng(1).standard_normal((60, 3))
    np.testing.assert_allclose(op.matmat(v), c @ v, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(op.matmat(v[:, 0]), c @ v[:, 0], rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(op.diagonal(), np.diag(c), rtol=1e-12)
    assert op.trace() == pytest.approx(np.trace(c), rel=1e-12)
    index = np.array([7, 2, 19, 3])
    np.testing.assert_allclose(op.columns(index), c[:, index], rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(op.submatrix(index), c[np.ix_(index, index)], rtol=0, atol=1e-12 * scale)
    w = np.zeros((60, 2))
    w[index] = v[index, :2]
    np.testing.assert_allclose(op.matmat_rows(w, index), c @ w, rtol=0, atol=1e-12 * scale)
    values, vectors = op.top_eigenpairs(3)
    np.testing.assert_allclose(values, np.linalg.eigvalsh(c)[::-1][:3], rtol=1e-11)
    np.testing.assert_allclose(c @ vectors, vectors * values, rtol=0, atol=1e-11 * scale)


def test_the_wide_operator_meets_the_contract_and_uses_lanczos_beyond_the_gram_limit(monkeypatch):
    from spcakit.testing.contracts import check_operator_contract

    monkeypatch.setattr(dask_arrays, "DENSE_GRAM_LIMIT", 10)  # n = 40 > 10: ARPACK on the products
    monkeypatch.setattr(dask_arrays, "DENSE_EIGEN_LIMIT", 10)
    op = as_problem(chunked(WIDE)).covariance
    check_operator_contract(op, r=3)
    a = WIDE - WIDE.mean(axis=0)
    values, vectors = op.top_eigenpairs(3)
    np.testing.assert_allclose(values, np.linalg.svd(a, compute_uv=False)[:3] ** 2 / 39, rtol=1e-10)
    np.testing.assert_allclose(op.top_eigenvalues(2), values[:2], rtol=1e-10)


def test_merged_moments_equal_those_of_all_rows():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((97, 5)) * 1e3 + 1e6  # large means: the merge must not lose the spread
    parts = [block_moments(x[i : i + 20], None, True) for i in range(0, 97, 20)]
    merged = merge_moments(merge_moments(*parts[:2]), merge_moments(*parts[2:]))
    a = x - x.mean(axis=0)
    assert merged.count == 97
    np.testing.assert_allclose(merged.mean, x.mean(axis=0), rtol=1e-15)
    np.testing.assert_allclose(merged.second, a.T @ a, rtol=1e-11)
    np.testing.assert_array_equal(merged.high, x.max(axis=0))
    np.testing.assert_array_equal(merged.low, x.min(axis=0))


def test_extreme_magnitudes_take_the_scaled_second_pass():
    x = TALL * 1e150  # squares overflow: each column is divided by its largest magnitude first
    on_dask = spcakit.fit(chunked(x), "spcart", r=2, k=4, standardize=True)
    numpy = spcakit.fit(x, "spcart", r=2, k=4, standardize=True)
    np.testing.assert_allclose(on_dask.loadings, numpy.loadings, rtol=0, atol=1e-10)
    with pytest.raises(InvalidDataError, match="too large for a covariance in double precision"):
        as_problem(chunked(x))


def test_columns_drop_float32_and_integers():
    names = [f"v{j}" for j in range(12)]
    picked = spcakit.fit(chunked(TALL), "spcart", r=2, k=3, feature_names=names, drop=["v0", "v5"])
    numpy = spcakit.fit(TALL, "spcart", r=2, k=3, feature_names=names, drop=["v0", "v5"])
    assert picked.feature_names == numpy.feature_names
    np.testing.assert_allclose(picked.loadings, numpy.loadings, rtol=0, atol=1e-10)
    single = TALL.astype(np.float32)
    np.testing.assert_allclose(spcakit.fit(chunked(single), "spcart", r=2, k=3).loadings,
                               spcakit.fit(single, "spcart", r=2, k=3).loadings, rtol=0, atol=1e-10)  # fmt: skip
    counts = np.random.default_rng(2).integers(0, 9, size=(80, 5))
    np.testing.assert_allclose(spcakit.fit(chunked(counts), "tpower", r=2, k=2).loadings,
                               spcakit.fit(counts, "tpower", r=2, k=2).loadings, rtol=0, atol=1e-10)  # fmt: skip


# -- bad input: the NumPy path's messages ------------------------------------------------------------------
def numpy_message(x: np.ndarray) -> str:
    with pytest.raises(InvalidDataError) as info:
        as_problem(x)
    return str(info.value)


@pytest.mark.parametrize("shape", ["tall", "wide"])
def test_non_finite_and_all_constant_columns_are_refused_as_for_numpy(shape):
    x = (TALL if shape == "tall" else WIDE).copy()
    x[7, 3], x[9, 1], x[2, 3] = np.nan, np.inf, np.nan
    with pytest.raises(InvalidDataError) as info:
        as_problem(chunked(x))
    message = str(info.value)
    assert "has 3 NaN or infinite entries (first: NaN at row 2, column 3 ('x" in message
    assert "by column: 1 ('x" in message and ": 1, 3 ('x" in message and ": 2" in message
    x = (TALL if shape == "tall" else WIDE).copy()
    x[:, 4] = 7.5  # welcome: left out of the fit, as for NumPy data
    assert as_problem(chunked(x)).constant_columns == as_problem(x).constant_columns == (4,)
    x[:] = 7.5  # all of them: refused
    with pytest.raises(InvalidDataError, match=r"\d+ column\(s\) are constant \(zero variance\): 0 \(x0?1\)"):
        as_problem(chunked(x))
    assert "are constant (zero variance): 0" in numpy_message(x)


@pytest.mark.parametrize("array,message", [
    (da.zeros(5), "must be a 2-D array"),
    (da.zeros((4, 3), dtype=complex), "is complex"),
    (da.from_array(np.array([["a", "b"]])), "must hold numbers"),
    (da.zeros((0, 3)), "is empty"),
    (da.ones((1, 3)), "centring needs at least 2 samples"),
], ids=["1-d", "complex", "text", "empty", "one-row"])  # fmt: skip
def test_other_bad_dask_input_is_refused(array, message):
    with pytest.raises(InvalidDataError, match=message):
        as_problem(array)


@pytest.mark.parametrize("x", [TALL, WIDE], ids=["tall", "wide"])
def test_cross_validation_takes_dask_input(x):
    # refused until issue 28; now the same curve as the dense rows' (tests/workflows/test_cv_sparse.py), to rounding
    cv = spcakit.cross_validate(chunked(x), "spcart", r=1, k="2,4", folds=2)
    dense = spcakit.cross_validate(x, "spcart", r=1, k="2,4", folds=2)
    np.testing.assert_allclose(cv.fold_errors, dense.fold_errors, rtol=1e-8, atol=0)
    assert cv.chosen == dense.chosen


def test_import_spcakit_imports_no_dask():
    code = (
        "import sys, numpy as np, spcakit, spcakit.cli\n"
        "spcakit.fit(np.random.default_rng(0).standard_normal((30, 4)), 'spcart', r=1)\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed', 'zarr'))\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# -- the command line: Zarr stores and --scheduler --------------------------------------------------------
@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    root = tmp_path_factory.mktemp("zarr")
    z = zarr.create_array(store=str(root / "tall.zarr"), shape=TALL.shape, chunks=(64, 12), dtype="float64")
    z[:] = TALL
    np.save(root / "tall.npy", TALL)
    zarr.create_array(store=str(root / "vector.zarr"), shape=(5,), dtype="float64")
    zarr.create_array(store=str(root / "flags.zarr"), shape=(4, 2), dtype="complex128")
    group = zarr.open_group(str(root / "group.zarr"), mode="w")
    group.create_array("X", shape=(4, 2), dtype="float64")
    (root / "folder.zarr").mkdir()
    return root


def test_the_cli_reads_a_zarr_store_as_the_same_array_in_memory(cli, stores, tmp_path):
    out = tmp_path / "r.json"
    code, text, _ = cli.main("run", "tpower", "--data", stores / "tall.zarr", "-k", "4", "--json", "--out", out)
    assert code == 0
    document = json.loads(text)
    code, text, _ = cli.main("run", "tpower", "--data", stores / "tall.npy", "-k", "4", "--json")
    np.testing.assert_allclose(document["loadings"], json.loads(text)["loadings"], rtol=0, atol=1e-10)
    assert document["input"]["sha256"] is None and document["data"] == str(stores / "tall.zarr")
    assert json.loads(out.read_text()) == document


def test_scheduler_runs_the_fit_on_that_cluster(cli, cluster, stores):
    local, client = cluster

    class BlocksDone(distributed.diagnostics.plugin.SchedulerPlugin):  # the scheduler runs in this process
        name = "blocks-done"
        count = 0

        def transition(self, key, start, finish, *args, **kwargs):
            self.count += finish == "memory" and "block_moments" in str(key)

    done = BlocksDone()
    local.scheduler.add_plugin(done)
    code, text, err = cli.main("compose", "--data", stores / "tall.zarr", "-k", "4", "--json",
                             "--scheduler", local.scheduler_address)  # fmt: skip
    assert code == 0, err
    local.scheduler.remove_plugin(name=done.name)
    assert done.count == 5  # the store's 5 blocks of rows, each read once, on the cluster
    numpy = spcakit.fit(TALL, spcakit.compose(), r=2, k=4)
    np.testing.assert_allclose(json.loads(text)["loadings"], numpy.loadings, rtol=0, atol=1e-10)
    import dask

    assert dask.config.get("scheduler", None) is None  # the command's client is closed: back to the default


@pytest.mark.parametrize("store,message", [
    ("missing.zarr", "missing.zarr: no such Zarr store"),
    ("vector.zarr", "vector.zarr: the Zarr array must be a 2-D array (rows x columns); got 1 dimension(s)"),
    ("flags.zarr", "flags.zarr: the Zarr array is complex"),
    ("group.zarr", "group.zarr: a Zarr group (X), not an array"),
    ("folder.zarr", "folder.zarr: not a readable Zarr store"),
], ids=["missing", "1-d", "complex", "group", "not-a-store"])  # fmt: skip
def test_bad_zarr_stores_are_refused_with_exit_2(cli, stores, tmp_path, store, message):
    out = tmp_path / "r.json"
    code, text, err = cli.main("run", "spcart", "--data", stores / store, "--out", out)
    assert code == 2 and message in err and not text and not out.exists()


def test_bad_schedulers_are_refused_with_exit_2(cli, stores, tmp_path, monkeypatch):
    monkeypatch.setattr(dask_arrays, "SCHEDULER_TIMEOUT", 0.5)
    out = tmp_path / "r.json"
    code, text, err = cli.main("run", "spcart", "--data", stores / "tall.zarr", "--scheduler", "tcp://127.0.0.1:9",
                             "--out", out)  # fmt: skip
    assert code == 2 and "--scheduler tcp://127.0.0.1:9: no dask.distributed scheduler answered" in err
    assert "leave --scheduler out to use the local threaded scheduler" in err and not out.exists() and not text
    code, _, err = cli.main("run", "spcart", "--data", stores / "tall.npy", "--scheduler", "tcp://127.0.0.1:9")
    assert code == 2 and "--scheduler runs the computations on data read by dask, a Zarr store" in err


def test_a_missing_extra_is_named(cli, stores, monkeypatch):
    monkeypatch.setitem(sys.modules, "dask.array", None)  # "import dask.array" now raises ImportError
    code, _, err = cli.main("run", "spcart", "--data", stores / "tall.zarr")
    assert code == 2 and "needs dask, distributed and zarr, which are not installed" in err
    assert "pip install dask distributed zarr" in err and "pip install -e '.[dask]'" in err
    with pytest.raises(InvalidParameterError, match=r"pip install -e '\.\[dask\]'"):
        dask_arrays.open_zarr(stores / "tall.zarr")


def test_the_covariance_of_a_store_can_be_densified_for_small_p(stores):
    problem = as_problem(str(stores / "tall.zarr"))
    a = TALL - TALL.mean(axis=0)
    np.testing.assert_allclose(densify(problem.covariance), a.T @ a / 299, rtol=0, atol=1e-12 * np.abs(a).max() ** 2)
    assert problem.source == str(stores / "tall.zarr")
