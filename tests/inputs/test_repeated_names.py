"""Repeated variable names, as real gene tables have them (probes of one gene), are made unique the same way by every
entry point: the first column keeps its name, the later ones become ``NAME-1``, ``NAME-2``, ... in column order, with
one :class:`spcakit.DuplicateNamesWarning` at the caller's line (one ``warning:`` line on the command line)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import spcakit
from spcakit.inputs.names import SHOWN_NAMES, unique_names


def data(p: int = 6, n: int = 30, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, p))


def test_later_copies_get_the_next_free_suffix():
    with pytest.warns(spcakit.DuplicateNamesWarning) as caught:
        names = unique_names(["a", "b", "a", "c", "a-1", "b", "a"])
    assert names == ("a", "b", "a-2", "c", "a-1", "b-1", "a-3")  # a-1 is taken by a column of its own
    assert len(set(names)) == len(names)
    assert "2 variable name(s) are repeated ('a', 'b'): the 3 later column(s)" in str(caught[0].message)


def test_the_warning_lists_a_few_names_without_their_padding():
    padded = [f"GENE{i}   " for i in range(SHOWN_NAMES + 3)] * 2
    with pytest.warns(spcakit.DuplicateNamesWarning) as caught:
        unique_names(padded)
    message = str(caught[0].message)
    assert "'GENE0', 'GENE1'" in message and ", ...)" in message and "   '" not in message
    assert f"'GENE{SHOWN_NAMES}'" not in message


def test_fit_accepts_repeated_feature_names():
    with pytest.warns(spcakit.DuplicateNamesWarning) as caught:
        result = spcakit.fit(data(), r=2, k=2, feature_names=["x", "y", "x", "z", "y", "w"])
    assert result.feature_names == ("x", "y", "x-1", "z", "y-1", "w")
    assert len(caught) == 1 and caught[0].filename == __file__
    unique = spcakit.fit(data(), r=2, k=2, feature_names=["x", "y", "x-1", "z", "y-1", "w"])
    np.testing.assert_array_equal(result.loadings, unique.loadings)  # only the names change


def test_the_estimator_accepts_a_frame_with_repeated_columns():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(data(4), columns=["a", "b", "a", "c"])
    with pytest.warns(spcakit.DuplicateNamesWarning) as caught:
        model = spcakit.SparsePCA(n_components=2, k=2).fit(frame)
    assert list(model.feature_names_in_) == ["a", "b", "a-1", "c"] and len(caught) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # transform matches the same names, silently
        scores = model.transform(frame)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # scikit-learn: an array has no names to check
        np.testing.assert_allclose(scores, model.transform(frame.to_numpy()), rtol=1e-12)


def test_the_command_line_renames_repeated_csv_headers_and_warns_once(cli, tmp_path):
    path = tmp_path / "genes.csv"
    rows = data(4, n=12)
    path.write_text("g1,g2,g1,g3\n" + "\n".join(",".join(format(float(v), ".17g") for v in row) for row in rows) + "\n")
    ran = cli.main("run", "--data", str(path), "-r", "1", "-k", "2", "--drop", "g1-1")
    assert ran.code == 0, ran.output
    assert ran.err.count("warning: 1 variable name(s) are repeated ('g1')") == 1
    assert "3 variables" in ran.out


def test_anndata_with_repeated_gene_names_is_fitted():
    anndata = pytest.importorskip("anndata")
    import spcakit.anndata as sa

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # anndata's own note that the names are not unique
        adata = anndata.AnnData(np.abs(data(6, n=40)).astype(np.float32))
        adata.var_names = ["g1", "g2", "g1", "g3", "g4", "g2"]
    with pytest.warns(spcakit.DuplicateNamesWarning):
        sa.sparse_pca(adata, n_components=2, k=2)
    assert adata.varm["spca_loadings"].shape == (6, 2)
    assert list(adata.var_names) == ["g1", "g2", "g1", "g3", "g4", "g2"]  # the user's object keeps its names


def test_a_warning_is_printed_once_on_the_command_line(cli, tmp_path):
    path = tmp_path / "constant.csv"
    path.write_text("a,b,c\n1,2,5\n2,1,5\n3,3,5\n4,0,5\n")
    ran = cli.main("run", "--data", str(path), "-r", "1", "-k", "1")
    assert ran.code == 0, ran.output
    assert ran.output.count("1 column(s) are constant") == 1 and "warning:" in ran.err


def test_a_strict_policy_refuses_repeated_names_naming_a_few(tmp_path, cli):
    x = np.random.default_rng(0).standard_normal((20, 12))
    names = [f"g{j % 5}" for j in range(12)]  # five names, each repeated
    with pytest.raises(spcakit.InvalidDataError, match=r"5 variable name\(s\) are repeated \('g0', 'g1', 'g2', 'g3', 'g4'; 7 later"):
        spcakit.fit(x, "tpower", r=1, k=2, feature_names=names, duplicate_names="error")
    with pytest.warns(spcakit.DuplicateNamesWarning):
        renamed = spcakit.fit(x, "tpower", r=1, k=2, feature_names=names)
    assert len(set(renamed.feature_names)) == 12
    with pytest.raises(spcakit.InvalidParameterError, match="duplicate_names must be 'rename'"):
        spcakit.fit(x, "tpower", r=1, k=2, duplicate_names="strict")
    path = tmp_path / "dup.csv"
    path.write_text("a,b,a,c\n" + "\n".join(",".join(f"{v:.4f}" for v in row) for row in x[:, :4]) + "\n")
    refused = cli.main("run", "spcart", "-d", str(path), "-r", "1", "--duplicate-names", "error")
    assert refused.code == 2 and "--duplicate-names error" in refused.err and "'a'" in refused.err
    assert refused.out == ""
    assert cli.main("run", "spcart", "-d", str(path), "-r", "1").code == 0
