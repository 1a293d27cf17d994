"""Every input of a list of once-failing examples, through the command line, as a regression table.

Each row is an input that once gave a traceback, "Aborted.", a destroyed file, a silent misreading or a
misleading message; now it gives exit 2 with the message shown here, or succeeds where the input was in
fact valid. (Damaged plugins, --out and Ctrl-C have their own tests: test_error_boundary.py,
test_output.py, test_plugins.py.)
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

import spcakit


def _npz_bytes() -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, X=np.random.default_rng(0).standard_normal((10, 3)))
    return buffer.getvalue()


def _write(tmp_path: Path, name: str, content: object) -> Path:
    path = tmp_path / name
    if isinstance(content, np.ndarray):
        np.save(path, content)
    elif isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(str(content))
    return path


GAUSS = np.random.default_rng(1).standard_normal((30, 4))
EXPERIMENT = 'name = "x"\ntitle = "x"\ndata = "builtin:pitprops"\ncovariance = true\nr = 2\n[[rows]]\nmethod = "spcart"\n'

# (file name, content, extra arguments, message that must appear)
REFUSED = [
    ("strings.npy", np.array([["a", "b"], ["c", "d"]]), [], "must be numeric"),
    ("dates.npy", np.array(["2020-01-01", "2021-01-01"], dtype="datetime64[D]").reshape(2, 1), [], "must be numeric"),
    ("huge.npy", GAUSS * 1e155, [], "double precision"),
    ("huger.npy", GAUSS * 1e300, [], "double precision"),
    ("cut.npz", _npz_bytes()[:100], [], "not a valid .npz archive"),
    ("notzip.npz", b"this is not a zip archive", [], "not a valid .npz archive"),
    ("field.csv", "a,b\n" + "1" * 140_000 + ",2\n3,4\n", [], "131"),
    ("empty.npy", b"", [], "empty or cut short"),
    ("empty.npz", b"", [], "empty"),
    ("noheader.csv", "1,2,3\n4,5,6\n7,8,10\n", [], "header"),
    ("garbage.npy", b"\x93NUMPY\x01\x00v\x00{'descr': '|O', 'fortran_order': False, 'shape': (2,), }" + b" " * 40 + b"\n", [], ""),
]  # fmt: skip


@pytest.mark.parametrize(("name", "content", "extra", "message"), REFUSED, ids=[r[0] for r in REFUSED])
def test_bad_files_are_refused_with_exit_2(cli, tmp_path, name, content, extra, message):
    path = _write(tmp_path, name, content)
    code, text = cli.main("run", "spcart", "-d", path, "-r", "1", *extra).code_and_output
    assert code == 2 and "Traceback" not in text and "Aborted" not in text, text
    assert message.lower() in text.lower()
    assert "allow_pickle" not in text and "pickle.load" not in text  # never numpy's unsafe advice


def test_a_wrongly_named_npz_names_array_is_refused(cli, tmp_path):
    path = tmp_path / "x.npz"
    np.savez(path, X=GAUSS, names=np.array(["a", "b", "c"]))
    code, text = cli.main("run", "spcart", "-d", path, "-r", "1").code_and_output
    assert code == 2 and "'names' has 3" in text and "4 columns" in text


@pytest.mark.parametrize("content", [_npz_bytes()[:100], b"not a zip"])
def test_a_damaged_w0_file_is_bad_input(cli, tmp_path, content):
    path = _write(tmp_path, "w0.npz", content)
    code, text = cli.main("run", "fspca-ipu", "-r", "1", "--param", f"w0={path}").code_and_output
    assert code == 2 and "w0" in text and "Traceback" not in text


@pytest.mark.parametrize(("source", "message"), [
    ("builtin:random?n=1000000000", "373 GiB"),
    ("builtin:zou?h3_noise=1e308", "a number in [0, 1e+12]"),
    ("builtin:zou?h3_noise=-1", "a number in [0, 1e+12]"),
    ("", "the data source is empty"),
])  # fmt: skip
def test_built_in_sources_and_an_empty_source(cli, source, message):
    code, text = cli.main("run", "spcart", "-d", source, "-r", "1").code_and_output
    assert code == 2 and message in text and "is a folder" not in text


@pytest.mark.parametrize(("spec", "message"), [
    (EXPERIMENT.replace("r = 2", "r = 2.7"), "r: must be a positive integer; got 2.7"),
    (EXPERIMENT.replace("covariance = true", 'covariance = "no"'), 'covariance: must be true or false; got "no"'),
    (EXPERIMENT.replace('title = "x"', 'titel = "x"'), "did you mean 'title'"),
    (EXPERIMENT + "parmas = { k = 3 }\n", "did you mean 'params'"),
    (EXPERIMENT.replace("r = 2", 'r = "two"'), "r: must be a positive integer"),
])  # fmt: skip
def test_experiment_specs_with_wrong_types_or_typos(cli, tmp_path, spec, message):
    code, text = cli.main("reproduce", _write(tmp_path, "x.toml", spec)).code_and_output
    assert code == 2 and message in text, text


def test_experiment_spec_files_that_cannot_be_read(cli, tmp_path):
    not_utf8 = _write(tmp_path, "latin.toml", EXPERIMENT.replace('title = "x"', 'title = "caf\xe9"').encode("latin-1"))
    folder = tmp_path / "folder.toml"
    folder.mkdir()
    for path, message in ((not_utf8, "UTF-8"), (folder, "folder")):
        code, text = cli.main("reproduce", path).code_and_output
        assert code == 2 and message in text and "Traceback" not in text, text


@pytest.mark.parametrize("separator", [";", "\t"])
def test_semicolon_and_tab_csv_files_are_read(cli, tmp_path, separator):
    rows = [separator.join(["a", "b", "c"])] + [separator.join(f"{v:.6f}" for v in row) for row in GAUSS[:, :3]]
    code, text = cli.main("run", "spcart", "-d", _write(tmp_path, "x.csv", "\n".join(rows) + "\n"), "-r", "1").code_and_output
    assert code == 0 and "3 variables" in text, text


@pytest.mark.parametrize("scale", [1e-13, 1e150])
def test_valid_data_at_extreme_scales_is_not_called_constant(cli, tmp_path, scale):
    x = GAUSS.copy()
    x[:, 0] *= scale  # one column far from the others (1e150), or everything tiny (1e-13, below)
    if scale < 1:
        x *= scale
    code, text = cli.main("run", "spcart", "-d", _write(tmp_path, "x.npy", x), "-r", "1").code_and_output
    assert code == 0 and "constant" not in text, text


def test_a_dataframe_is_fitted_with_its_column_names():
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame(GAUSS, columns=["w", "x", "y", "z"])
    result = spcakit.fit(frame, "spcart", r=1)
    assert result.feature_names == ("w", "x", "y", "z")


def test_a_sparse_covariance_is_refused_with_toarray_advice():
    from scipy import sparse

    with pytest.raises(spcakit.InvalidDataError, match=r"toarray\(\)"):
        spcakit.fit(sparse.csr_matrix(GAUSS.T @ GAUSS), "spcart", r=1, covariance=True)
    dense = spcakit.fit(GAUSS, "spcart", r=1)  # sparse data are taken as they are (tests/inputs/test_sparse.py)
    np.testing.assert_allclose(spcakit.fit(sparse.csr_matrix(GAUSS), "spcart", r=1).loadings, dense.loadings, atol=1e-12)


def test_computation_interrupted_exits_130(cli, monkeypatch):
    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("spcakit.cli.common.fit", interrupt)  # the fit every command runs through
    code, text = cli.main("run", "spcart").code_and_output
    assert code == 130 and "interrupted" in text


def test_a_stopper_returning_42_is_refused(cli):
    @spcakit.part("example-answer-stopper")
    class Answer(spcakit.Stopper):
        """returns 42"""

        def __call__(self, state):
            return 42

    class Plugin:
        @spcakit.hookimpl
        def spcakit_register_parts(self, register):
            register(Answer)

    session = spcakit.core.plugins.get_session()
    session.add(Plugin(), "example-42")
    try:
        code, text = cli.main("compose", "-r", "1", "--stopper", "example-answer-stopper").code_and_output
    finally:
        session.remove("example-42")
    assert code == 1 and "example-answer-stopper" in text and "example-42" in text and "42" in text


def test_dropping_a_first_text_column_read_as_row_labels_is_a_note_not_an_error(cli, tmp_path):
    """A first column of text is read as the rows' labels; ``--drop`` of it (with a text ID column after it, which the
    message asks to drop) runs, and says the first column was never a variable."""
    rows = ["site,id,a,b,c"] + [f"s{i % 2},r{i},{v[0]:.6f},{v[1]:.6f},{v[2]:.6f}" for i, v in enumerate(GAUSS[:, :3])]
    path = _write(tmp_path, "labelled.csv", "\n".join(rows) + "\n")
    refused = cli.main("run", "spcart", "-d", path, "-r", "1")
    assert refused.code == 2 and "--drop id" in refused.err
    ran = cli.main("run", "spcart", "-d", path, "-r", "1", "--drop", "site,id")
    assert ran.code == 0, ran.err
    assert "3 variables" in ran.out
    assert ran.err.count("note: --drop site: the first column holds text") == 1
