"""``spcakit.anndata``: sparse PCA of an AnnData, written into it as scanpy's ``pca`` does.

The data are :func:`spcakit.anndata.simulated_counts`: Poisson counts with six planted gene programs of 20-30
genes, log-normalised (counts scaled to the median total per cell, then ``log1p``: scanpy's
``normalize_total`` and ``log1p``), kept sparse. A program is recovered when the support of the component
matched to it (one component per program, by the largest total overlap) holds its genes.
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment

anndata = pytest.importorskip("anndata")

import spcakit  # noqa: E402
import spcakit.anndata as sa  # noqa: E402
from spcakit.core.errors import InvalidDataError, InvalidParameterError  # noqa: E402
from spcakit.numerics.operators import sparse as sparse_operators  # noqa: E402


def normalised(adata, dtype=np.float32):
    """``adata`` with X scaled to the median total count per cell and log1p-transformed, CSR of ``dtype``."""
    counts = adata.X.tocsr()
    totals = np.asarray(counts.sum(axis=1)).ravel()
    x = sp.csr_matrix(sp.diags(np.median(totals) / np.maximum(totals, 1)) @ counts, dtype=dtype)
    x.data = np.log1p(x.data)
    out = adata.copy()
    out.layers["counts"] = counts
    out.X = x
    return out


def recovery(adata, key="spca_loadings"):
    """For each planted program (in order P1, P2, ...): the fraction of its genes in the support of the component
    matched to it, components matched one to one by the largest Jaccard overlap of supports."""
    supports = adata.varm[key] != 0
    program = adata.var["program"].astype(str).to_numpy()
    labels = sorted(set(program) - {"none"})
    jaccard = np.zeros((len(labels), supports.shape[1]))
    recall = np.zeros_like(jaccard)
    for i, label in enumerate(labels):
        genes = program == label
        for t in range(supports.shape[1]):
            both = np.sum(genes & supports[:, t])
            jaccard[i, t] = both / np.sum(genes | supports[:, t])
            recall[i, t] = both / genes.sum()
    rows, cols = linear_sum_assignment(-jaccard)
    return recall[rows, cols]


@pytest.fixture(scope="module")
def cells():
    """3000 cells x 500 genes, six programs, log-normalised (float32 CSR), raw counts in layers["counts"]."""
    return normalised(sa.simulated_counts(n_cells=3000, n_genes=500, seed=1))


@pytest.fixture
def small():
    """400 cells x 120 genes (four programs of 10-15 genes), log-normalised: for the checks of what is written."""
    return normalised(sa.simulated_counts(n_cells=400, n_genes=120, n_programs=4, program_size=(10, 15), seed=2))


# -- the planted programs ------------------------------------------------------------------------------------
def test_the_planted_programs_are_recovered(cells):
    # measured: every program's genes all in its component (recall 1.0); 0.9 leaves room for a weakly
    # expressed program gene that the Poisson noise hides on another seed
    adata = cells.copy()
    assert sa.sparse_pca(adata, n_components=6, k=30) is None
    assert np.all(recovery(adata) >= 0.9), recovery(adata)
    assert list(adata.uns["spca"]["nonzeros"]) == [30] * 6


@pytest.mark.slow
def test_twenty_thousand_cells_of_2000_genes_recover_the_programs():
    # the case; its time (under 30 s: 6-15 s measured) is a benchmark's to record
    # (benchmarks/single_cell.py, docs/benchmarks.md), not a test's to assert on a shared machine
    adata = normalised(sa.simulated_counts(n_cells=20_000, n_genes=2000, seed=0))
    assert sp.issparse(adata.X)
    sa.sparse_pca(adata, k=30)
    assert np.all(recovery(adata) >= 0.95), recovery(adata)


# -- what is written, and where -------------------------------------------------------------------------------
def test_obsm_varm_and_uns_as_scanpy_writes_them(small, tmp_path):
    sa.sparse_pca(small, n_components=4, k=12, seed=3)
    x = small.X.toarray().astype(np.float64)
    scores, loadings, info = small.obsm["X_spca"], small.varm["spca_loadings"], small.uns["spca"]
    assert scores.shape == (400, 4) and loadings.shape == (120, 4)
    assert scores.dtype == np.float32 and loadings.dtype == np.float32  # float32 data, float32 results
    # the scores are the centred cells projected on the loadings, as scanpy's X_pca (float32: 1e-4 relative)
    expected = (x - x.mean(axis=0)) @ loadings.astype(np.float64)
    assert np.allclose(scores, expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())
    assert np.allclose(np.linalg.norm(loadings, axis=0), 1, atol=1e-6)
    assert list(np.count_nonzero(loadings, axis=0)) == [12] * 4 == list(info["nonzeros"])
    assert info["params"] == {"method": "auto", "n_components": 4, "k": 12, "zero_center": True,
                              "use_highly_variable": False, "seed": 3}  # fmt: skip
    # variance: the additional variances, summing to the CPEV's share of the total (the covariance of the data)
    total = np.var(x, axis=0, ddof=1).sum()
    assert info["total_variance"] == pytest.approx(total, rel=1e-6)
    assert info["variance_ratio"] == pytest.approx(info["variance"] / total, rel=1e-6)
    assert info["variance_ratio"].sum() == pytest.approx(info["cpev"], rel=1e-9)
    assert np.all(info["bound"] >= info["variance"] * (1 - 1e-9)) and info["gap"].shape == (4,)
    # everything written is h5ad-writable and reads back the same
    small.write_h5ad(tmp_path / "spca.h5ad")
    back = anndata.read_h5ad(tmp_path / "spca.h5ad")
    assert np.array_equal(back.varm["spca_loadings"], loadings)
    assert back.uns["spca"]["params"]["k"] == 12 and back.uns["spca"]["cpev"] == info["cpev"]


def test_the_gene_names_are_the_variables_names(small):
    sa.sparse_pca(small, n_components=4, k=12)
    loadings = small.varm["spca_loadings"]
    for j in range(4):
        genes = set(small.var_names[loadings[:, j] != 0])
        assert len(genes) == 12 and genes <= set(small.var_names)
    # the same fit through spcakit.fit on the matrix with the names, as a check that rows are genes
    result = spcakit.fit(small.X, "tpower", r=2, k=5, feature_names=list(small.var_names))
    sa.sparse_pca(small, n_components=2, k=5, method="tpower", key_added="tp")
    assert np.allclose(small.varm["tp"], result.loadings, atol=1e-6)


def test_float64_data_give_float64_results(small):
    small.X = small.X.astype(np.float64)
    sa.sparse_pca(small, n_components=2, k=5)
    assert small.obsm["X_spca"].dtype == np.float64 and small.varm["spca_loadings"].dtype == np.float64


def test_a_layer(small):
    reference = small.copy()
    sa.sparse_pca(reference, n_components=3, k=8)
    swapped = small.copy()
    swapped.layers["lognorm"], swapped.X = swapped.X, swapped.layers["counts"]
    sa.sparse_pca(swapped, n_components=3, k=8, layer="lognorm")
    assert np.array_equal(swapped.varm["spca_loadings"], reference.varm["spca_loadings"])
    assert np.allclose(swapped.obsm["X_spca"], reference.obsm["X_spca"])
    assert swapped.uns["spca"]["params"]["layer"] == "lognorm"
    with pytest.raises(InvalidParameterError, match=r"no layer 'logged'; its layers: 'counts', 'lognorm'"):
        sa.sparse_pca(swapped, layer="logged")


def test_highly_variable_genes(small):
    hvg = np.zeros(120, dtype=bool)
    hvg[small.var["program"].astype(str).to_numpy() != "none"] = True
    hvg[:10] = True
    # without the column, None fits every gene; True asks for it
    sa.sparse_pca(small, n_components=3, k=8)
    assert small.uns["spca"]["params"]["use_highly_variable"] is False
    with pytest.raises(InvalidParameterError, match=r"use_highly_variable=True needs adata.var\['highly_variable'\]"):
        sa.sparse_pca(small, n_components=3, k=8, use_highly_variable=True)
    small.var["highly_variable"] = hvg
    for flag in (None, True):  # with the column, None uses it, as scanpy does
        sa.sparse_pca(small, n_components=3, k=8, use_highly_variable=flag, key_added="hv")
        assert small.varm["hv"].shape == (120, 3)
        assert not small.varm["hv"][~hvg].any()  # zero loadings for the genes left out
        assert small.uns["hv"]["params"]["use_highly_variable"] is True
    # the same as fitting the AnnData cut to those genes
    cut = small[:, hvg].copy()
    sa.sparse_pca(cut, n_components=3, k=8, use_highly_variable=False)
    assert np.allclose(small.varm["hv"][hvg], cut.varm["spca_loadings"], atol=1e-6)
    assert np.allclose(small.obsm["hv"], cut.obsm["X_spca"], rtol=1e-4, atol=1e-4)
    # False fits every gene although the column is there
    sa.sparse_pca(small, n_components=3, k=8, use_highly_variable=False, key_added="all")
    assert small.varm["all"][~hvg].any() or small.uns["all"]["params"]["use_highly_variable"] is False
    assert small.uns["all"]["params"]["use_highly_variable"] is False
    small.var["highly_variable"] = False
    with pytest.raises(InvalidDataError, match="marks no gene"):
        sa.sparse_pca(small, n_components=3, k=8)


def test_key_added_and_copy(small):
    out = sa.sparse_pca(small, n_components=2, k=5, key_added="sp", copy=True)
    assert isinstance(out, anndata.AnnData) and out is not small
    assert set(out.obsm) >= {"sp"} and "sp" in out.varm and "sp" in out.uns
    assert "X_spca" not in out.obsm and "spca_loadings" not in out.varm and "spca" not in out.uns
    assert "sp" not in small.obsm and "sp" not in small.uns  # the original is untouched
    assert sa.sparse_pca(small, n_components=2, k=5) is None and "X_spca" in small.obsm


def test_uncentred_and_standardised_scores(small):
    x = small.X.toarray().astype(np.float64)
    sa.sparse_pca(small, n_components=2, k=5, zero_center=False, key_added="raw")
    assert np.allclose(small.obsm["raw"], x @ small.varm["raw"], rtol=1e-4, atol=1e-5)
    assert small.uns["raw"]["params"]["zero_center"] is False
    assert small.uns["raw"]["total_variance"] == pytest.approx(np.sum(x**2) / x.shape[0], rel=1e-6)
    sa.sparse_pca(small, n_components=2, k=5, standardize=True, key_added="std")
    mean, deviation = x.mean(axis=0), x.std(axis=0, ddof=1)
    keep = deviation > 0
    z = np.zeros_like(x)
    z[:, keep] = (x[:, keep] - mean[keep]) / deviation[keep]
    assert np.allclose(small.obsm["std"], z @ small.varm["std"], rtol=1e-4, atol=1e-4)
    assert small.uns["std"]["params"]["standardize"] is True


def test_the_covariance_route_equals_the_data_route(small):
    # many cells: the genes' covariance is formed; weights (all 1) send the data to spcakit.fit as they are
    sa.sparse_pca(small, n_components=3, k=8, method="tpower", key_added="cov")
    sa.sparse_pca(small, n_components=3, k=8, method="tpower", key_added="data", sample_weight=np.ones(400))
    assert np.allclose(small.varm["cov"], small.varm["data"], atol=1e-6)
    assert np.allclose(small.obsm["cov"], small.obsm["data"], rtol=1e-4, atol=1e-4)
    # fewer cells than genes: the data route, with the same result as spcakit.fit
    few = small[:60].copy()
    with pytest.warns(spcakit.ConstantColumnWarning, match=r"\(g023\)"):  # a gene with no count in those cells
        sa.sparse_pca(few, n_components=2, k=5, method="tpower")
    with pytest.warns(spcakit.ConstantColumnWarning):
        result = spcakit.fit(few.X, "tpower", r=2, k=5)
    assert np.allclose(few.varm["spca_loadings"], result.loadings, atol=1e-6)


@pytest.mark.parametrize("center", [True, False])
def test_sparse_covariance_by_either_product(monkeypatch, center):
    # a dense top (the dense product) over a sparse bottom (the sparse product), blocks of 50 rows
    rng = np.random.default_rng(0)
    top = sp.random(150, 40, density=0.7, random_state=rng, format="csr")
    bottom = sp.random(350, 40, density=0.03, random_state=rng, format="csr")
    x = sp.vstack([top, bottom], format="csr").astype(np.float32)
    monkeypatch.setattr(sparse_operators, "GRAM_DENSE_BLOCK_BYTES", 8 * 40 * 50)
    dense = x.toarray().astype(np.float64)
    expected = np.cov(dense, rowvar=False) if center else dense.T @ dense / 500
    for columns in (None, np.array([5, 0, 39, 12])):
        covariance, mean = sa.sparse_covariance(x, columns, center=center)
        pick = slice(None) if columns is None else columns
        assert np.allclose(covariance, expected[np.ix_(np.arange(40)[pick], np.arange(40)[pick])], rtol=1e-10, atol=1e-12)
        assert np.allclose(mean, dense.mean(axis=0)[pick] if center else 0, rtol=1e-6)
    # all rows by one product or the other: the same covariance
    monkeypatch.setattr(sparse_operators, "SPARSE_PAIR_COST", 1e-9)
    assert np.allclose(sa.sparse_covariance(x, center=center)[0], expected, rtol=1e-10, atol=1e-12)
    monkeypatch.setattr(sparse_operators, "SPARSE_PAIR_COST", 1e9)
    assert np.allclose(sa.sparse_covariance(x, center=center)[0], expected, rtol=1e-10, atol=1e-12)


# -- never dense ---------------------------------------------------------------------------------------------
class NeverDense(sp.csr_matrix):
    """A CSR matrix that refuses to be densified beyond ``LIMIT`` rows at a time (a slice keeps the class)."""

    LIMIT = 0

    def toarray(self, *args, **kwargs):
        if self.shape[0] > NeverDense.LIMIT:
            raise AssertionError(f"densified {self.shape[0]} rows at once")
        return super().toarray(*args, **kwargs)

    def todense(self, *args, **kwargs):
        raise AssertionError("todense")


def test_sparse_data_are_never_densified(cells, monkeypatch):
    adata = cells.copy()
    monkeypatch.setattr(sparse_operators, "GRAM_DENSE_BLOCK_BYTES", 8 * 500 * 200)  # blocks of 200 rows
    monkeypatch.setattr(NeverDense, "LIMIT", 200)
    adata.X = NeverDense(adata.X)
    sa.sparse_pca(adata, n_components=6, k=30)
    assert np.all(recovery(adata) >= 0.9)
    monkeypatch.setattr(NeverDense, "LIMIT", 0)  # the sparse products alone: nothing densified at all
    monkeypatch.setattr(sparse_operators, "SPARSE_PAIR_COST", 1e-9)
    sa.sparse_pca(adata, n_components=6, k=30, key_added="sparse")
    assert np.allclose(adata.varm["sparse"], adata.varm["spca_loadings"], atol=1e-6)


def test_peak_memory_stays_below_a_dense_copy():
    import tracemalloc

    adata = normalised(sa.simulated_counts(n_cells=40_000, n_genes=250, seed=4))
    dense_bytes = 40_000 * 250 * 4  # X densified as float32: 40 MB (measured peak: about half)
    tracemalloc.start()
    try:
        sa.sparse_pca(adata, n_components=4, k=20, method="tpower")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < dense_bytes, f"peak {peak / 2**20:.1f} MiB against {dense_bytes / 2**20:.1f} MiB dense"


# -- refusals ------------------------------------------------------------------------------------------------
def test_bad_arguments_are_refused_with_what_is_valid(small):
    with pytest.raises(InvalidDataError, match="takes an anndata.AnnData; got numpy.ndarray"):
        sa.sparse_pca(np.ones((5, 3)))
    for bad in (0, 1.5, True, "3"):
        with pytest.raises(InvalidParameterError, match="n_components must be a positive integer"):
            sa.sparse_pca(small, n_components=bad)
    with pytest.raises(InvalidParameterError, match=r"n_components=121 .* valid: 1 <= n_components <= 120"):
        sa.sparse_pca(small, n_components=121)
    for bad in (0, 121, 2.5, "all"):
        with pytest.raises(InvalidParameterError, match=r"k \(nonzero genes per component\) must be an integer in \[1, 120\]"):
            sa.sparse_pca(small, n_components=2, k=bad)
    with pytest.raises(InvalidParameterError, match="k lists 3 cardinalities"):
        sa.sparse_pca(small, n_components=2, k=[4, 5, 6])
    with pytest.raises(InvalidParameterError, match="sparse_pca sets center itself: center: use zero_center"):
        sa.sparse_pca(small, n_components=2, center=False)
    with pytest.raises(InvalidParameterError, match="key_added must be a nonempty string"):
        sa.sparse_pca(small, n_components=2, key_added="")
    with pytest.raises(InvalidParameterError, match="use_highly_variable must be True, False or None"):
        sa.sparse_pca(small, n_components=2, use_highly_variable="yes")
    small.X = small.X.copy()
    small.X.data[small.X.indices == 7] = np.nan
    with pytest.raises(InvalidDataError, match=r"NaN or infinite values in 1 gene\(s\) fitted: g008"):
        sa.sparse_pca(small, n_components=2)


def test_without_anndata_the_message_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "anndata", None)  # import anndata now fails
    with pytest.raises(sa.AnnDataDependencyError, match=r"pip install anndata .*pip install -e '\.\[anndata\]'"):
        sa.sparse_pca(object())


class AnnData:
    """Stands for an AnnData (recognised by its class) whose contents must not be read: the refusal comes before
    any conversion (converting one took 10-24 s, then failed)."""

    __module__ = "anndata._core.anndata"

    def __getattr__(self, name: str):
        raise AssertionError(f"the AnnData's {name!r} was read before it was refused")


def test_sparse_pca_estimator_and_fit_point_to_sparse_pca(small):
    pytest.importorskip("sklearn")
    for adata in (small, AnnData()):
        with pytest.raises(InvalidDataError, match=r"SparsePCA takes a matrix, not an AnnData: use spcakit.anndata.sparse_pca"):
            spcakit.SparsePCA(n_components=2, k=5).fit(adata)
        with pytest.raises(InvalidDataError, match=r"not an AnnData: use spcakit.anndata.sparse_pca"):
            spcakit.fit(adata, r=2, k=5)
        with pytest.raises(InvalidDataError, match=r"not an AnnData"):
            spcakit.as_problem(adata)
    model = spcakit.SparsePCA(n_components=2, k=5, method="tpower").fit(small.X)
    with pytest.raises(InvalidDataError, match="not an AnnData"):
        model.transform(small)


def test_import_spcakit_does_not_import_anndata():
    code = ("import sys, spcakit; spcakit.fit; spcakit.SparsePCA; "
            "print(sorted(m for m in ('anndata', 'scanpy') if m in sys.modules))")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


# -- with scanpy ---------------------------------------------------------------------------------------------
def test_with_scanpy_normalisation_hvg_and_embedding_plot(tmp_path):
    sc = pytest.importorskip("scanpy")
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    adata = sa.simulated_counts(n_cells=3000, n_genes=2000, seed=5)
    sc.pp.normalize_total(adata)
    sc.pp.log1p(adata)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sc.pp.highly_variable_genes(adata, n_top_genes=500)
    assert sp.issparse(adata.X)
    sa.sparse_pca(adata, n_components=6, k=30)  # the highly variable genes, as scanpy's pca
    assert adata.uns["spca"]["params"]["use_highly_variable"] is True
    assert not adata.varm["spca_loadings"][~adata.var["highly_variable"].to_numpy()].any()
    assert np.all(recovery(adata) >= 0.9)
    figure = sc.pl.embedding(adata, basis="X_spca", color="program", return_fig=True, show=False)
    figure.savefig(tmp_path / "spca.png")
    assert (tmp_path / "spca.png").stat().st_size > 1000


@pytest.mark.slow
def test_the_single_cell_pages_steps_run_at_twenty_thousand_cells(tmp_path):
    """docs/single-cell.md's path at 20 000 cells: normalise, log1p, highly variable genes, sparse_pca, scanpy's
    default neighbours on the sparse scores (pynndescent's approximate ones at this size: the scanpy extra keeps
    pynndescent below 0.7, whose sparse-array graph scanpy 1.11 cannot read), and the embedding plot."""
    sc = pytest.importorskip("scanpy")
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    adata = sa.simulated_counts(n_cells=20000, n_genes=2000, seed=0)
    sc.pp.normalize_total(adata)
    sc.pp.log1p(adata)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sc.pp.highly_variable_genes(adata, n_top_genes=500)
    sa.sparse_pca(adata, n_components=6, k=30)
    assert adata.obsm["X_spca"].shape == (20000, 6)
    assert np.all(recovery(adata) >= 0.9)
    sc.pp.neighbors(adata, use_rep="X_spca")
    assert adata.obsp["connectivities"].shape == (20000, 20000) and adata.obsp["connectivities"].nnz > 0
    figure = sc.pl.embedding(adata, basis="X_spca", color="program", components=["1,2", "3,4", "5,6"],
                             return_fig=True, show=False)  # fmt: skip
    figure.savefig(tmp_path / "embedding.png", dpi=80)
    assert (tmp_path / "embedding.png").stat().st_size > 1000


def test_the_covariance_is_formed_only_when_it_is_no_larger_than_the_data(cells, small, monkeypatch):
    # p^2 at most the stored entries: the genes' covariance; else the sparse matrix itself (never a p x p matrix
    # larger than the data), with the same loadings
    formed = []
    original = sa.sparse_covariance
    monkeypatch.setattr(sa, "sparse_covariance", lambda *a, **kw: formed.append(1) or original(*a, **kw))
    adata = cells.copy()
    assert 500**2 <= adata.X.nnz
    sa.sparse_pca(adata, n_components=2, k=10, method="tpower")
    assert formed == [1]
    sparse = small.copy()
    assert 120**2 > sparse.X.nnz  # 400 cells, 27 % stored
    sa.sparse_pca(sparse, n_components=2, k=10, method="tpower")
    assert formed == [1]  # not formed again
    reference = spcakit.fit(sparse.X, "tpower", r=2, k=10)
    assert np.allclose(np.abs(sparse.varm["spca_loadings"]), np.abs(reference.loadings), atol=1e-6)


@pytest.mark.parametrize("key", ["a/b", ".", "..", "x\0y"])
def test_a_key_that_an_h5ad_file_cannot_hold_is_refused_before_any_work(small, key):
    with pytest.raises(InvalidParameterError, match="cannot be written to an .h5ad file"):
        sa.sparse_pca(small, n_components=2, k=5, key_added=key)
    assert "X_spca" not in small.obsm and key not in small.obsm


def test_a_plain_key_is_written_and_read_back_from_an_h5ad_file(small, tmp_path):
    sa.sparse_pca(small, n_components=2, k=5, key_added="X_spca_k5")
    small.write_h5ad(tmp_path / "a.h5ad")
    back = anndata.read_h5ad(tmp_path / "a.h5ad")
    np.testing.assert_array_equal(back.obsm["X_spca_k5"], small.obsm["X_spca_k5"])


@pytest.mark.parametrize(("cells", "zero_center", "message"), [
    (0, True, "has 0 cells .*at least 2 cells"),
    (1, True, "has 1 cell and .*at least 2 cells"),
    (0, False, "has 0 cells .*at least 1 cell"),
])  # fmt: skip
def test_an_anndata_too_small_to_fit_says_what_it_needs(cells, zero_center, message):
    adata = anndata.AnnData(np.ones((cells, 5), dtype=np.float32))
    with pytest.raises(InvalidDataError, match=message):
        sa.sparse_pca(adata, n_components=1, k=2, zero_center=zero_center)


def test_non_numeric_expression_values_are_named_as_such():
    adata = anndata.AnnData(np.array([[1, "a"], [2, "b"], [3, "c"]], dtype=object))
    with pytest.raises(InvalidDataError, match="adata.X holds object values, not real numbers"):
        sa.sparse_pca(adata, n_components=1, k=1)


@pytest.mark.parametrize("sparse", [False, True])
def test_a_view_is_fitted_as_the_data_it_shows(small, sparse):
    adata = small.copy()
    if not sparse:
        adata.X = adata.X.toarray() if sp.issparse(adata.X) else adata.X
    view = adata[:300, :100]
    assert view.is_view
    fitted = sa.sparse_pca(view, n_components=2, k=5, copy=True)
    alone = sa.sparse_pca(view.copy(), n_components=2, k=5, copy=True)
    np.testing.assert_allclose(fitted.obsm["X_spca"], alone.obsm["X_spca"], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(fitted.varm["spca_loadings"], alone.varm["spca_loadings"], atol=1e-6)  # float32 data


def test_orthogonal_components_of_single_cell_counts(small, tmp_path):
    sa.sparse_pca(small, n_components=4, k=12, seed=3, constraint="orthogonal")
    loadings, info = small.varm["spca_loadings"].astype(np.float64), small.uns["spca"]
    assert info["params"]["constraint"] == "orthogonal"
    assert info["orthogonality_violation"] <= 1e-10
    np.testing.assert_allclose(loadings.T @ loadings, np.eye(4), atol=1e-6)  # stored as float32
    small.write_h5ad(tmp_path / "orthogonal.h5ad")
    assert anndata.read_h5ad(tmp_path / "orthogonal.h5ad").uns["spca"]["params"]["constraint"] == "orthogonal"


def test_scanpys_mask_var_chooses_the_genes_as_use_highly_variable_does():
    adata = sa.simulated_counts(n_cells=300, n_genes=120, n_programs=2, seed=2)
    chosen = np.zeros(120, dtype=bool)
    chosen[::3] = True
    adata.var["chosen"] = chosen
    by_name = sa.sparse_pca(adata, n_components=2, k=5, method="tpower", mask_var="chosen", copy=True)
    by_array = sa.sparse_pca(adata, n_components=2, k=5, method="tpower", mask_var=chosen, copy=True)
    adata.var["highly_variable"] = chosen
    by_flag = sa.sparse_pca(adata, n_components=2, k=5, method="tpower", use_highly_variable=True, copy=True)
    for other in (by_array, by_flag):
        assert np.array_equal(by_name.varm["spca_loadings"], other.varm["spca_loadings"])
    assert not by_name.varm["spca_loadings"][~chosen].any()
    with pytest.raises(spcakit.InvalidParameterError, match="give mask_var or use_highly_variable, not both"):
        sa.sparse_pca(adata, n_components=2, k=5, mask_var="chosen", use_highly_variable=True, copy=True)
    with pytest.raises(spcakit.InvalidParameterError, match="names no column of adata.var"):
        sa.sparse_pca(adata, n_components=2, k=5, mask_var="missing", copy=True)
    with pytest.raises(spcakit.InvalidDataError, match="must be 120 booleans"):
        sa.sparse_pca(adata, n_components=2, k=5, mask_var=np.ones(5, dtype=bool), copy=True)
