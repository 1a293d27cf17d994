"""scipy.sparse data matrices: the same results as the dense path, never densified, centred implicitly."""

from __future__ import annotations

import json
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest

sp = pytest.importorskip("scipy.sparse")

import spcakit  # noqa: E402
from spcakit.core.errors import InvalidDataError  # noqa: E402
from spcakit.numerics.operators import CenteredSparseGram, densify  # noqa: E402
from spcakit.inputs import as_problem
from spcakit.inputs.checks import content_sha256  # noqa: E402
from spcakit.inputs import sparse as sparse_inputs  # noqa: E402
from spcakit.inputs.sparse import sparse_content_sha256  # noqa: E402
from spcakit.numerics.operators import canonical_csr  # noqa: E402


def gaussian_sparse(n: int, p: int, density: float, seed: int = 0, fmt: str = "csr") -> object:
    rng = np.random.default_rng(seed)
    return sp.random_array((n, p), density=density, format=fmt, rng=rng, data_sampler=rng.standard_normal)


def integer_sparse(n: int = 60, p: int = 12, seed: int = 3) -> np.ndarray:
    """A dense integer matrix with about 70 % zeros and no empty column, for the format tests."""
    rng = np.random.default_rng(seed)
    dense = rng.integers(-4, 5, size=(n, p)) * (rng.random((n, p)) < 0.3)
    dense[0] = np.arange(1, p + 1)  # every column holds at least one entry
    return dense


X_SPARSE = gaussian_sparse(150, 25, 0.25)
X_DENSE = X_SPARSE.toarray()


# -- the operator ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("center", [True, False])
@pytest.mark.parametrize("standardize", [False, True])
def test_the_operator_is_the_dense_covariance(center, standardize, monkeypatch):
    monkeypatch.setattr(sparse_inputs, "explicit_covariance", lambda x: False)  # the matrix-free operator
    n = X_DENSE.shape[0]
    a = X_DENSE - X_DENSE.mean(axis=0) if center else X_DENSE
    s = n - 1 if center else n
    c = a.T @ a / s
    if standardize:
        d = np.sqrt(np.diag(c))
        c = c / np.outer(d, d)
    op = as_problem(X_SPARSE, center=center, standardize=standardize).covariance
    assert isinstance(op, CenteredSparseGram)
    scale = np.abs(c).max()
    v = np.random.default_rng(1).standard_normal((25, 4))
    # each entry of C V is a sum of 25 products: rounding is a few eps times |C| |V|
    np.testing.assert_allclose(op.matmat(v), c @ v, rtol=0, atol=1e-13 * scale * np.abs(v).sum(axis=0).max())
    np.testing.assert_allclose(op.matmat(v[:, 0]), c @ v[:, 0], rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(op.diagonal(), np.diag(c), rtol=1e-13)
    assert op.trace() == pytest.approx(np.trace(c), rel=1e-13)
    index = np.array([7, 2, 19, 3])
    np.testing.assert_allclose(op.columns(index), c[:, index], rtol=0, atol=1e-13 * scale)
    np.testing.assert_allclose(op.submatrix(index), c[np.ix_(index, index)], rtol=0, atol=1e-13 * scale)
    np.testing.assert_allclose(densify(op), c, rtol=0, atol=1e-13 * scale)
    values, vectors = op.top_eigenpairs(3)
    expected = np.linalg.eigvalsh(c)[::-1][:3]
    np.testing.assert_allclose(values, expected, rtol=1e-12)
    np.testing.assert_allclose(c @ vectors, vectors * values, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(op.top_eigenvalues(3), expected, rtol=1e-12)
    assert op.explicit() is None


@pytest.mark.parametrize("center", [True, False])
@pytest.mark.parametrize("standardize", [False, True])
@pytest.mark.parametrize("density", [0.25, 0.9])  # 0.9: every block densified (syrk); 0.25: sparse products
def test_data_with_few_columns_get_the_explicit_covariance(center, standardize, density):
    # p^2 = 625 is at most the stored entries (about 940 and 3400): the covariance is formed, a block at a time
    x = gaussian_sparse(150, 25, density, seed=5) + 3.0 * sp.random_array((150, 25), density=density, rng=6)
    dense = x.toarray()
    a = dense - dense.mean(axis=0) if center else dense
    c = a.T @ a / (149 if center else 150)
    if standardize:
        d = np.sqrt(np.diag(c))
        c = c / np.outer(d, d)
    problem = as_problem(x, center=center, standardize=standardize)
    assert sparse_inputs.explicit_covariance(canonical_csr(x)) and problem.covariance.explicit() is not None
    # the sparse products' centring subtracts sums of about n |mu|^2: rounding a few eps times that
    scale = np.abs(c).max() + (np.abs(dense).mean(axis=0) ** 2).max()
    np.testing.assert_allclose(problem.covariance.explicit(), c, rtol=0, atol=1e-13 * 150 * scale)
    assert not sparse_inputs.explicit_covariance(canonical_csr(gaussian_sparse(150, 25, 0.1)))  # 375 < 625


def test_the_explicit_covariance_gives_the_matrix_free_fit(monkeypatch):
    explicit = spcakit.fit(X_SPARSE, "tpower", r=2, k=4, seed=0)
    monkeypatch.setattr(sparse_inputs, "explicit_covariance", lambda x: False)
    matrix_free = spcakit.fit(X_SPARSE, "tpower", r=2, k=4, seed=0)
    np.testing.assert_allclose(np.abs(explicit.loadings), np.abs(matrix_free.loadings), atol=1e-10)
    assert explicit.metrics["cpev"] == pytest.approx(matrix_free.metrics["cpev"], rel=1e-10)


def test_the_operator_meets_the_operator_contract_and_can_be_built_by_hand(monkeypatch):
    from spcakit.testing.contracts import check_operator_contract

    monkeypatch.setattr(sparse_inputs, "explicit_covariance", lambda x: False)  # the matrix-free operator
    for op in (as_problem(X_SPARSE, standardize=True).covariance, as_problem(gaussian_sparse(60, 700, 0.2)).covariance):
        check_operator_contract(op, r=3)
    by_hand = CenteredSparseGram(sp.coo_matrix(X_DENSE), scale=150.0)  # any format: made canonical CSR
    assert by_hand == as_problem(X_SPARSE, center=False).covariance
    np.testing.assert_allclose(densify(by_hand), X_DENSE.T @ X_DENSE / 150, rtol=0, atol=1e-13 * np.abs(X_DENSE).max() ** 2)


def test_the_diagonal_is_computed_once_and_given_as_a_copy(count_calls):
    """Every deflation of the operator reads its diagonal (the max-diagonal start of each component): one pass
    over the stored entries, kept; a caller that writes into the copy it got changes nothing."""
    x = gaussian_sparse(60, 700, 0.2, seed=3)
    dense = x.toarray()
    op = CenteredSparseGram(x, scale=59.0, mean=dense.mean(axis=0))
    passes = count_calls(CenteredSparseGram, "_diagonal")
    first = op.diagonal()
    np.testing.assert_allclose(first, dense.var(axis=0, ddof=1), rtol=1e-12)
    first[:] = -1.0
    np.testing.assert_allclose(op.diagonal(), dense.var(axis=0, ddof=1), rtol=1e-12)
    assert passes["n"] == 1

def test_lanczos_eigenpairs_of_a_wide_matrix_match_the_dense_ones():
    x = gaussian_sparse(60, 700, 0.2, seed=4)  # p > DENSE_EIGEN_LIMIT and n < p: ARPACK on the products
    dense = x.toarray()
    a = dense - dense.mean(axis=0)
    op = as_problem(x).covariance
    values, vectors = op.top_eigenpairs(4)
    singular = np.linalg.svd(a, compute_uv=False)[:4]
    np.testing.assert_allclose(values, singular**2 / 59, rtol=1e-10)
    np.testing.assert_allclose(a.T @ (a @ vectors) / 59, vectors * values, rtol=0, atol=1e-10 * values[0])
    np.testing.assert_array_equal(op.top_eigenpairs(4)[1], vectors)  # a fixed start: the same digits again


# -- results equal the dense path's ------------------------------------------------------------------------
METHODS = [("spcart", {"k": 5}), ("tpower", {"k": 5}), ("greedy", {"k": 5}), ("fspca-ipu", {"k": 8})]


@pytest.mark.parametrize("method,kwargs", METHODS, ids=[m for m, _ in METHODS])
@pytest.mark.parametrize("center,standardize", [(True, False), (False, False), (True, True)])
def test_results_equal_the_dense_path(method, kwargs, center, standardize):
    sparse = spcakit.fit(X_SPARSE, method, r=3, center=center, standardize=standardize, metrics="all", **kwargs)
    dense = spcakit.fit(X_DENSE, method, r=3, center=center, standardize=standardize, metrics="all", **kwargs)
    # both paths apply the same covariance, rounded differently (a few eps relative); the methods' fixed
    # points are well separated here, so the loadings agree to a small multiple of that
    np.testing.assert_allclose(sparse.loadings, dense.loadings, rtol=0, atol=1e-10)
    np.testing.assert_array_equal(sparse.loadings != 0, dense.loadings != 0)
    for name in ("cpev", "ev", "loss", "normalized_loss"):
        assert sparse.metrics[name] == pytest.approx(dense.metrics[name], rel=1e-9), name
    np.testing.assert_allclose(sparse.input.mean if center else 0.0, X_DENSE.mean(axis=0) if center else 0.0, rtol=1e-13)
    if standardize:
        np.testing.assert_allclose(sparse.input.scale, X_DENSE.std(axis=0, ddof=1), rtol=1e-13)
    assert sparse.input.shape == dense.input.shape and sparse.input.kind == "data"


@pytest.mark.parametrize("method", ["spcart", "tpower"])
def test_wide_results_equal_the_dense_path(method):
    x = gaussian_sparse(80, 900, 0.15, seed=5)  # Lanczos on the sparse side, n x n Gram on the dense side
    sparse = spcakit.fit(x, method, r=3, k=20, standardize=True)
    dense = spcakit.fit(x.toarray(), method, r=3, k=20, standardize=True)
    np.testing.assert_allclose(sparse.loadings, dense.loadings, rtol=0, atol=1e-10)
    assert sparse.metrics["cpev"] == pytest.approx(dense.metrics["cpev"], rel=1e-10)


def test_the_rank_bound_of_sparse_data_is_checked():
    x = sp.csr_array(np.random.default_rng(2).standard_normal((6, 40)))
    with pytest.raises(spcakit.InvalidParameterError, match="n - 1 = 5"):
        spcakit.fit(x, "spcart", r=6)
    assert as_problem(x).max_rank == 5 and as_problem(x, center=False).max_rank == 6


# -- formats, the caller's matrix, the hash -------------------------------------------------------------
@pytest.mark.parametrize("kind", ["csr_matrix", "csc_matrix", "coo_matrix", "csr_array", "csc_array", "coo_array",
                                  "lil_array", "dok_array", "bsr_array"])  # fmt: skip
def test_every_format_gives_the_same_problem(kind):
    dense = integer_sparse()
    reference = as_problem(sp.csr_array(dense.astype(float)))
    problem = as_problem(getattr(sp, kind)(dense))  # integers: converted to float64 once
    assert problem.input.sha256 == reference.input.sha256
    assert problem.covariance == reference.covariance
    v = np.random.default_rng(0).standard_normal(12)
    np.testing.assert_array_equal(problem.covariance.matmat(v), reference.covariance.matmat(v))


def test_duplicates_explicit_zeros_and_unsorted_indices_are_canonicalised_in_a_copy():
    dense = integer_sparse()
    coo = sp.coo_array(dense)
    # each entry split in two stored halves, plus explicit zeros, in shuffled order
    order = np.random.default_rng(1).permutation(2 * coo.nnz + 5)
    rows = np.concatenate([coo.row, coo.row, np.arange(5)])[order]
    cols = np.concatenate([coo.col, coo.col, np.zeros(5, dtype=int)])[order]
    values = np.concatenate([coo.data / 2, coo.data / 2, np.zeros(5)])[order]
    messy = sp.coo_array((values, (rows, cols)), shape=dense.shape)
    reference_csr = sp.csr_array(dense.astype(float))
    spans = list(zip(reference_csr.indptr[:-1], reference_csr.indptr[1:]))
    csr = sp.csr_matrix(  # each row's entries in reverse column order
        (np.concatenate([reference_csr.data[a:b][::-1] for a, b in spans]),
         np.concatenate([reference_csr.indices[a:b][::-1] for a, b in spans]), reference_csr.indptr.copy()),
        shape=dense.shape,
    )  # fmt: skip
    assert not csr.has_sorted_indices
    before = (csr.data.copy(), csr.indices.copy(), csr.indptr.copy())
    reference = as_problem(reference_csr)
    for given in (messy, csr):
        problem = as_problem(given)
        assert problem.input.sha256 == reference.input.sha256
        assert problem.covariance == reference.covariance
    for array, saved in zip((csr.data, csr.indices, csr.indptr), before):
        np.testing.assert_array_equal(array, saved)  # the caller's arrays are untouched


def test_a_canonical_float_csr_is_used_without_a_copy():
    x = sp.csr_array(integer_sparse().astype(float))
    held = canonical_csr(x)
    assert held.data is x.data and held.indices is x.indices and held.indptr is x.indptr


def test_the_hash_is_the_documented_digest_and_differs_from_the_dense_hash():
    import hashlib

    x = canonical_csr(sp.csc_array(integer_sparse()))
    digest = hashlib.sha256(b"csr")
    digest.update(np.array(x.shape, dtype="<u8").tobytes())
    for part, dtype in ((x.indptr, "<i8"), (x.indices, "<i8"), (x.data, "<f8")):
        digest.update(part.astype(dtype).tobytes())
    assert sparse_content_sha256(x) == digest.hexdigest()
    assert sparse_content_sha256(x) != content_sha256(x.toarray())


# -- refusals -------------------------------------------------------------------------------------------------
def refusal(data: object, **kwargs: object) -> str:
    with pytest.raises(InvalidDataError) as info:
        as_problem(data, **kwargs)
    return str(info.value)


def test_nan_and_infinite_stored_values_are_refused_by_column():
    x = sp.csr_array(integer_sparse().astype(float))
    x.data[3] = np.nan
    x.data[10] = np.inf
    column, row = int(x.indices[3]), int(np.searchsorted(x.indptr, 3, side="right") - 1)
    names = [f"gene{j}" for j in range(12)]
    message = refusal(x, feature_names=names)
    assert "2 NaN or infinite stored entries" in message
    assert f"first: NaN at row {row}, column {column} ('gene{column}')" in message


def test_constant_columns_are_named_and_left_out():
    dense = integer_sparse()
    dense[:, 4] = 0  # no stored entry
    dense[:, 7] = 3  # every entry stored, all equal
    names = [f"v{j}" for j in range(12)]
    problem = as_problem(sp.csr_array(dense), feature_names=names)
    assert problem.constant_columns == (4, 7) and problem.varying.p == 10
    with pytest.warns(spcakit.ConstantColumnWarning, match=r"2 column\(s\) are constant \(zero variance\): 4 \(v4\), 7 \(v7\)"):
        result = spcakit.fit(sp.csr_array(dense), "spcart", r=2, k=3, feature_names=names)
    assert np.all(result.loadings[[4, 7]] == 0) and result.metrics["pattern"] == [3, 3]
    # without centring a column of equal nonzero values has variance about 0: only the empty one is constant
    assert as_problem(sp.csr_array(dense), center=False, feature_names=names).constant_columns == (4,)
    assert "12 column(s) are constant" in refusal(sp.csr_array((60, 12)))  # all of them: nothing to analyse


def test_other_bad_sparse_input_is_refused():
    assert "centring needs at least 2 samples" in refusal(sp.csr_array(np.ones((1, 3))))
    assert "is empty" in refusal(sp.csr_array((0, 4)))
    assert "complex" in refusal(sp.csr_array(np.eye(3) * 1j))
    message = refusal(sp.csr_array(np.eye(300, 200)), covariance=True)
    assert "scipy.sparse csr_array of shape (300, 200) with 200 stored entries, which must be dense here" in message
    assert ".toarray()" in message and "469 KiB" in message
    with pytest.raises(InvalidDataError, match="toarray"):
        spcakit.Covariance(sp.csr_array(np.eye(3)))


def test_columns_and_drop_choose_sparse_columns_by_name():
    names = [f"c{j}" for j in range(25)]
    chosen = ["c20", "c3", "c7", "c11", "c0"]
    by_name = spcakit.fit(X_SPARSE, "spcart", r=2, k=2, feature_names=names, columns=chosen)
    dense = spcakit.fit(X_DENSE[:, [20, 3, 7, 11, 0]], "spcart", r=2, k=2, feature_names=chosen)
    assert by_name.feature_names == tuple(chosen)
    np.testing.assert_allclose(by_name.loadings, dense.loadings, rtol=0, atol=1e-12)
    dropped = as_problem(X_SPARSE, feature_names=names, drop=["c0", "c24"])
    assert dropped.p == 23 and "c0" not in dropped.feature_names


# -- never densified -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("method,shape", [("spcart", (20000, 3000)), ("tpower", (20000, 3000)),
                                          ("fspca-ipu", (20000, 3000)), ("spcart", (1000, 10000))])  # fmt: skip
def test_sparse_data_are_never_densified(method, shape):
    n, p = shape
    x = gaussian_sparse(n, p, 20 / n, seed=6)  # about 20 entries per column, 60 000 or 400 000 in all
    problem = as_problem(x, standardize=True)
    tracemalloc.start()
    try:
        result = spcakit.fit(problem, method, r=3, k=10)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # anything n x p (480 / 80 MB) or p x p (72 / 800 MB) would exceed this tenth of the smaller
    assert peak < min(8 * n * p, 8 * p * p) / 10, f"peak {peak / 1e6:.1f} MB"
    assert result.loadings.shape == (p, 3) and 0 < result.metrics["cpev"] < 1


def test_import_and_the_dense_fit_path_leave_scipy_sparse_unimported():
    code = (
        "import sys, numpy as np, spcakit\n"
        "assert 'scipy.sparse' not in sys.modules, 'import spcakit imported scipy.sparse'\n"
        "x = np.random.default_rng(0).standard_normal((40, 8))\n"
        "for method in ('spcart', 'tpower', 'greedy', 'fspca-ipu'):\n"
        "    spcakit.fit(x, method, r=2, k=3)\n"
        "assert 'scipy.sparse' not in sys.modules, 'a dense fit imported scipy.sparse'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# -- files and the CLI ----------------------------------------------------------------------------------
def test_the_cli_reads_sparse_npz_and_matrix_market_files(cli, tmp_path):
    import scipy.io


    sp.save_npz(tmp_path / "x.npz", sp.csc_array(X_SPARSE))
    scipy.io.mmwrite(tmp_path / "x.mtx", X_SPARSE)
    np.save(tmp_path / "x.npy", X_DENSE)
    docs = {}
    for name in ("x.npz", "x.mtx", "x.npy"):
        out = cli.invoke("run", "spcart", "--data", str(tmp_path / name), "-r", "3", "-k", "5", "--json")
        assert out.exit_code == 0, out.output
        docs[name] = json.loads(out.stdout)
    assert docs["x.npz"]["input"]["sha256"] == docs["x.mtx"]["input"]["sha256"]  # one matrix, two formats
    for name in ("x.npz", "x.mtx"):
        assert docs[name]["feature_names"][:2] == ["x01", "x02"]
        np.testing.assert_allclose(docs[name]["loadings"], docs["x.npy"]["loadings"], rtol=0, atol=1e-10)
    dense_npz = tmp_path / "dense.npz"
    np.savez(dense_npz, X=X_DENSE)  # a NumPy archive is still read as one
    assert not sp.issparse(spcakit.datasets.load_source(dense_npz).matrix)


def test_damaged_sparse_files_are_refused(tmp_path):
    x = sp.csr_array(integer_sparse().astype(float))
    bad_index = tmp_path / "bad.npz"
    np.savez(bad_index, format=b"csr", shape=np.array(x.shape), data=x.data,
             indices=np.where(np.arange(x.nnz) == 5, 99, x.indices), indptr=x.indptr)  # fmt: skip
    with pytest.raises(InvalidDataError, match="damaged scipy.sparse csr archive"):
        as_problem(bad_index)
    unknown = tmp_path / "unknown.npz"
    np.savez(unknown, format=b"xyz", shape=np.array(x.shape), data=x.data)
    with pytest.raises(InvalidDataError, match="format 'xyz'"):
        as_problem(unknown)
    short = tmp_path / "short.mtx"
    short.write_text("%%MatrixMarket matrix coordinate real general\n1000 1000 500000\n1 1 2.5\n")
    with pytest.raises(InvalidDataError, match="cut short"):
        as_problem(short)
    not_mtx = tmp_path / "table.mtx"
    not_mtx.write_text("a,b\n1,2\n")
    with pytest.raises(InvalidDataError, match="not a Matrix Market file"):
        as_problem(not_mtx)


# -- the estimator ------------------------------------------------------------------------------------------
def test_the_estimator_fits_and_transforms_sparse_data_as_dense():
    pytest.importorskip("sklearn")
    for kwargs in ({}, {"standardize": True}, {"center": False}):
        sparse = spcakit.SparsePCA(3, method="tpower", k=5, **kwargs).fit(X_SPARSE)
        dense = spcakit.SparsePCA(3, method="tpower", k=5, **kwargs).fit(X_DENSE)
        np.testing.assert_allclose(sparse.components_, dense.components_, rtol=0, atol=1e-10)
        np.testing.assert_allclose(sparse.mean_, dense.mean_, rtol=1e-13, atol=1e-15)
        expected = dense.transform(X_DENSE)
        for given in (X_SPARSE, sp.csc_matrix(X_SPARSE), sp.coo_array(X_SPARSE)):
            np.testing.assert_allclose(sparse.transform(given), expected, rtol=0, atol=1e-10 * np.abs(expected).max())
        np.testing.assert_allclose(sparse.fit_transform(X_SPARSE), expected, rtol=0, atol=1e-10 * np.abs(expected).max())
        assert sparse.score(X_SPARSE) == pytest.approx(dense.score(X_DENSE), rel=1e-10)


@pytest.mark.parametrize("pair_cost", [1e-9, 1e9])  # every block by the sparse product, or densified (syrk)
@pytest.mark.parametrize("weighted", [False, True])
def test_the_sparse_gram_matrix_by_either_product(pair_cost, weighted, monkeypatch):
    from spcakit.numerics.operators import sparse as sparse_operators

    monkeypatch.setattr(sparse_operators, "SPARSE_PAIR_COST", pair_cost)
    monkeypatch.setattr(sparse_operators, "GRAM_DENSE_BLOCK_BYTES", 8 * 25 * 40)  # blocks of 40 rows
    monkeypatch.setattr(sparse_operators, "SPARSE_BLOCK_ENTRIES", 64)  # pieces of a block
    x = canonical_csr(gaussian_sparse(150, 25, 0.3, seed=8))
    w = np.random.default_rng(9).integers(0, 4, 150).astype(float) if weighted else np.ones(150)
    dense = x.toarray()
    mean = w @ dense / w.sum()
    centred = dense - mean
    expected = centred.T @ (centred * w[:, None])
    got = sparse_operators.sparse_gram(x, mean, row_weights=w if weighted else None)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12 * np.abs(expected).max())
    columns = np.array([4, 0, 21])
    np.testing.assert_allclose(sparse_operators.sparse_gram(x, mean[columns], columns, w if weighted else None),
                               expected[np.ix_(columns, columns)], rtol=0, atol=1e-12 * np.abs(expected).max())
