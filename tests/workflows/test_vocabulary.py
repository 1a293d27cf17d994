"""One vocabulary across the entry points: ``n_components`` is accepted wherever the number of loadings is (``r`` is
its alias in the Python functions, ``-r`` on the command line), scanpy's ``n_comps`` by the AnnData entry point, and
another library's name for an argument gets a did-you-mean."""

from __future__ import annotations

import json

import numpy as np
import pytest

import spcakit
from spcakit.core.errors import InvalidParameterError


def data(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((40, 8))


def test_n_components_is_r():
    x = data()
    named, short = spcakit.fit(x, n_components=3, k=2), spcakit.fit(x, r=3, k=2)
    np.testing.assert_array_equal(named.loadings, short.loadings)
    assert spcakit.fit(x, k=2).r == 2  # neither: two loadings, as before
    assert spcakit.fit(x, r=3, n_components=3, k=2).r == 3
    with pytest.raises(InvalidParameterError, match="r=3 and n_components=4 name the same number"):
        spcakit.fit(x, r=3, n_components=4, k=2)


def test_path_target_and_cross_validation_take_n_components():
    assert spcakit.path("builtin:pitprops", "tpower", n_components=3, k=[2, 3]).levels[0].result.r == 3
    assert spcakit.target_k("builtin:pitprops", "tpower", n_components=3, cpev=0.5).result.r == 3
    assert spcakit.cross_validate(data(), "tpower", n_components=2, k=[2, 3], folds=3).result.r == 2


@pytest.mark.parametrize(("keyword", "meant"), [("n_comps", "n_components"), ("random_state", "seed"),
                                                ("n_component", "n_components"), ("sed", "seed")])
def test_another_librarys_name_gets_a_did_you_mean(keyword, meant):
    with pytest.raises(InvalidParameterError, match=f"has no argument '{keyword}': did you mean {meant}="):
        spcakit.fit(data(), "tpower", k=2, **{keyword: 3})


def test_a_part_parameter_still_passes():
    assert spcakit.fit(data(), "tpower", k=2, tol=1e-3).spec["stopper"]


def test_the_command_line_takes_n_components(cli):
    long = json.loads(cli.invoke("run", "tpower", "--n-components", "3", "-k", "3", "--json").stdout)
    short = json.loads(cli.invoke("run", "tpower", "-r", "3", "-k", "3", "--json").stdout)
    assert long["loadings"] == short["loadings"] and len(long["loadings"][0]) == 3


def test_anndata_takes_scanpys_n_comps():
    anndata = pytest.importorskip("anndata")
    import spcakit.anndata as sa

    adata = anndata.AnnData(np.abs(data()).astype(np.float32))
    sa.sparse_pca(adata, n_comps=3, k=2)
    assert adata.obsm["X_spca"].shape == (40, 3)
    with pytest.raises(InvalidParameterError, match="give one of them"):
        sa.sparse_pca(adata, n_components=4, n_comps=3, k=2)
