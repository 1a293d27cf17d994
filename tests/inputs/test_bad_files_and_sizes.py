"""The input side, through the command line: outputs inside inputs, declared sizes, files that are not
files, Zarr stores read completely or refused, bounded parsing, grids checked before they are built, and
messages that name the real cause. Each input once destroyed a store, hung, or ended in an internal error or
a misleading message; now it exits 2 with the message shown here (or succeeds where the input is valid).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import spcakit
from spcakit.core.errors import ConstantColumnWarning, InvalidDataError
from spcakit.core import documents
from spcakit.inputs import limits
from spcakit.inputs.checks import check_frame_columns


def refused(text: str, code: int, *words: str) -> None:
    assert code == 2, text
    assert "Traceback" not in text and "Internal error" not in text, text
    for word in words:
        assert word in text, (word, text)


def tree_digest(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` and its content hash: a store must come out of a run unchanged."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


DATA = np.random.default_rng(0).standard_normal((40, 6))


@pytest.fixture
def store(tmp_path: Path) -> Path:
    zarr = pytest.importorskip("zarr")
    pytest.importorskip("dask.array")
    path = tmp_path / "s.zarr"
    array = zarr.open_array(str(path), mode="w", shape=DATA.shape, chunks=(10, 6), dtype="f8")
    array[:] = DATA
    return path


def chunk_files(store: Path) -> list[Path]:
    return sorted(p for p in store.rglob("*") if p.is_file() and not p.name.startswith(".") and "json" not in p.name)


# -- 1. outputs never inside an input -------------------------------------------------------------------------
@pytest.mark.parametrize("option", ["--out", "--save-model"])
@pytest.mark.parametrize("inside", ["zarr.json", "chunk", "new.json", "sub/new.json"])
def test_nothing_is_written_inside_a_store(cli, store, option, inside):
    target = chunk_files(store)[0] if inside == "chunk" else store / inside
    before = tree_digest(store)
    code, text = cli.main("run", "spcart", "-d", store, "-r", "1", option, target).code_and_output
    refused(text, code, f"{option} {target} lies inside the Zarr store {store}", "choose a path outside it")
    assert tree_digest(store) == before


def test_a_link_into_a_store_is_refused_too(cli, store, tmp_path):
    link = tmp_path / "result.json"
    link.symlink_to(chunk_files(store)[0])
    before = tree_digest(store)
    code, text = cli.main("run", "spcart", "-d", store, "-r", "1", "--out", link).code_and_output
    refused(text, code, "lies inside the Zarr store")
    assert tree_digest(store) == before


@pytest.mark.parametrize("command", [["path", "spcart", "-k", "1:2"], ["cv", "spcart", "-k", "1:2"]])
def test_path_and_cv_refuse_an_out_inside_the_store(cli, store, command):
    before = tree_digest(store)
    code, text = cli.main(*command, "-d", store, "--out", store / "levels.json").code_and_output
    refused(text, code, "lies inside the Zarr store")
    assert tree_digest(store) == before


def test_an_out_under_a_file_says_the_file_is_not_a_folder(cli, tmp_path):
    (tmp_path / "a.csv").write_text("x,y\n1,2\n")
    code, text = cli.main("run", "spcart", "--out", tmp_path / "a.csv" / "x.json").code_and_output
    refused(text, code, "a.csv is a file, not a folder")
    assert "does not exist" not in text


# -- 2. declared sizes and files that are not files -----------------------------------------------------------
def quickly(cli, *args: object) -> tuple[int, str]:
    """A refusal of a declared size must come before anything of that size is built: well within seconds."""
    start = time.monotonic()
    result = cli.main(*args).code_and_output
    assert time.monotonic() - start < 10, "the declared size was believed before it was checked"
    return result


def test_a_tiny_mtx_that_claims_a_hundred_million_columns(cli, tmp_path):
    path = tmp_path / "big.mtx"
    path.write_text("%%MatrixMarket matrix coordinate real general\n2 100000000 1\n1 1 1.0\n")
    assert path.stat().st_size < 80
    code, text = quickly(cli, "run", "spcart", "-d", path)
    refused(text, code, "declares a 2 x 100,000,000 matrix", "MAX_VARIABLES", "GiB")


def _sparse_npz(path: Path, fmt: str, shape: tuple[int, int]) -> Path:
    sp = pytest.importorskip("scipy.sparse")
    small = sp.random(5, 8 if fmt == "csc" else 50, density=0.3, random_state=0, format=fmt)
    pointers = small.indptr.tolist() + [small.indptr[-1]] * (shape[1 if fmt == "csc" else 0] + 1 - len(small.indptr))
    matrix = getattr(sp, f"{fmt}_array")((small.data, small.indices, np.asarray(pointers)), shape=shape)
    sp.save_npz(path, matrix)
    return path


def test_a_small_sparse_npz_with_a_billion_columns(cli, tmp_path):
    path = _sparse_npz(tmp_path / "wide.npz", "csr", (50, 10**9))
    code, text = quickly(cli, "run", "spcart", "-d", path)
    refused(text, code, "declares a 50 x 1,000,000,000 matrix", "MAX_VARIABLES")


def test_a_small_sparse_npz_with_a_billion_rows_is_measured_against_the_memory(cli, tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "memory_limit", lambda: 1 << 30)  # the same on every machine
    path = _sparse_npz(tmp_path / "tall.npz", "csc", (10**9, 8))
    code, text = quickly(cli, "run", "spcart", "-d", path)
    refused(text, code, "declares a 1,000,000,000 x 8 matrix", "needs about", "GiB of memory", "1 GiB available")


def test_a_generated_data_set_is_measured_before_it_is_made(cli):
    code, text = quickly(cli, "run", "spcart", "-d", "builtin:random?n=2&p=50000000")
    refused(text, code, "builtin:random?n=2&p=50000000 asks for a 2 x 50,000,000 matrix", "give a smaller n or p")


def test_a_csv_header_with_too_many_columns(cli, tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "MAX_VARIABLES", 3)
    path = tmp_path / "wide.csv"
    path.write_text("a,b,c,d\n1,2,3,4\n5,6,7,9\n")
    code, text = cli.main("run", "spcart", "-d", path, "-r", "1").code_and_output
    refused(text, code, "4 variables (columns), more than spcakit takes (3")


def test_estimated_bytes_grow_with_the_declared_shape():
    assert limits.estimated_bytes(100, 10) >= 8 * 100 * 10
    assert limits.estimated_bytes(10**9, 8, stored=3) >= 8 * 10**9  # the row pointers alone
    assert limits.estimated_bytes(50, 10**9, stored=3) >= limits.PER_VARIABLE_BYTES * 10**9


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
@pytest.mark.parametrize("name", ["z.csv", "z.npy", "z.mtx"])
def test_a_link_to_a_device_is_refused_at_once(cli, tmp_path, name):
    link = tmp_path / name
    link.symlink_to("/dev/zero")
    code, text = quickly(cli, "run", "spcart", "-d", link)
    refused(text, code, "a symbolic link to /dev/zero", "character device, not a regular file")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_named_pipe_is_read_to_its_end(cli, tmp_path):
    pipe = tmp_path / "data.csv"
    os.mkfifo(pipe)
    text = "a,b,c\n" + "\n".join(",".join(f"{v:.6f}" for v in row) for row in DATA[:, :3]) + "\n"

    def feed() -> None:
        with open(pipe, "w") as fh:
            fh.write(text)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    code, output = cli.main("run", "spcart", "-d", pipe, "-r", "1", "--json").code_and_output
    writer.join(timeout=10)
    assert code == 0, output
    document = json.loads(output)
    assert document["data"] == str(pipe) and document["input"]["shape"] == [40, 3]


def test_a_model_file_that_is_a_device_is_refused(cli, tmp_path):
    if not Path("/dev/zero").exists():
        pytest.skip("needs /dev/zero")
    link = tmp_path / "model.json"
    link.symlink_to("/dev/zero")
    code, text = quickly(cli, "transform", link, "-d", "builtin:pitprops")
    refused(text, code, "model file", "character device")


# -- 3. stores read completely or refused ---------------------------------------------------------------------
def test_a_store_with_a_missing_chunk_is_refused(cli, store):
    lost = chunk_files(store)[2]
    lost.unlink()
    key = lost.relative_to(store).as_posix()
    code, text = cli.main("run", "spcart", "-d", store, "-r", "1").code_and_output
    refused(text, code, f"{store}: the Zarr store holds 3 of its 4 chunks (missing: {key})", "--allow-missing-chunks")


def test_missing_chunks_read_as_the_fill_value_when_allowed(cli, store):
    chunk_files(store)[2].unlink()
    code, text = cli.main("run", "spcart", "-d", store, "-r", "1", "--json", "--allow-missing-chunks").code_and_output
    assert code == 0, text
    filled = DATA.copy()
    filled[20:30] = 0.0
    expected = spcakit.fit(filled, "spcart", r=1)
    assert np.allclose(np.abs(json.loads(text)["loadings"]), np.abs(expected.loadings), atol=1e-8)


def test_a_corrupt_chunk_is_a_data_error_naming_the_store_and_the_chunk(cli, store):
    damaged = chunk_files(store)[1]
    damaged.write_bytes(b"not a compressed chunk")
    key = damaged.relative_to(store).as_posix()
    code, text = cli.main("run", "spcart", "-d", store, "-r", "1").code_and_output
    refused(text, code, f"{store}: chunk {key} cannot be read", "the Zarr store is damaged")


def test_the_python_api_refuses_a_missing_chunk_too(store):
    chunk_files(store)[0].unlink()
    with pytest.raises(InvalidDataError, match="holds 3 of its 4 chunks"):
        spcakit.fit(str(store), "spcart", r=1)


# -- 4. bounded parsing -------------------------------------------------------------------------------------
DEEP = "[" * 5000 + "]" * 5000


def test_a_param_of_five_thousand_brackets(cli):
    code, text = cli.main("run", "spcart", "--param", f"tol={DEEP}").code_and_output
    refused(text, code, "--param tol: nests arrays or tables 5000 deep, more than 64")


def test_a_param_of_five_thousand_digits(cli):
    code, text = cli.main("run", "spcart", "--param", "tol=" + "9" * 5000).code_and_output
    refused(text, code, "--param tol: a number of 5,000 characters")


@pytest.fixture
def model_text(cli, tmp_path) -> str:
    path = tmp_path / "m.json"
    code, text = cli.main("run", "spcart", "-d", "builtin:random?n=50&p=6", "-r", "2", "--save-model", path).code_and_output
    assert code == 0, text
    return path.read_text()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: {**d, "format_version": "9" * 5000}, "a number of 5,000 characters"),
        (lambda d: {**d, "spec": DEEP}, "nests arrays or tables 5001 deep"),  # inside the top-level object
        (lambda d: {**d, "loadings": [[0.0] * len(row) for row in d["loadings"]]}, "'PC1', 'PC2' are all zero"),
        (lambda d: {**d, "scale": [1e-320] * len(d["feature_names"]), "input": {**d["input"], "standardize": True}},
         "scale must be at least 1.49e-154"),
    ],
    ids=["long-version", "deep", "zero-loadings", "tiny-scale"],
)
def test_degenerate_model_files_are_refused_at_load(cli, tmp_path, model_text, change, message):
    document = json.loads(model_text)
    text = json.dumps(change(document))
    text = text.replace(json.dumps("9" * 5000), "9" * 5000).replace(json.dumps(DEEP), DEEP)  # as raw JSON
    path = tmp_path / "bad.json"
    path.write_text(text)
    code, output = cli.main("transform", path, "-d", "builtin:random?n=50&p=6").code_and_output
    refused(output, code, str(path), message)


def test_nesting_is_measured_without_recursion_and_outside_strings():
    assert documents.nesting_depth(DEEP) == 5000
    assert documents.nesting_depth('{"a": "[[[[[[", "b": [1, [2]]}') == 3
    assert documents.nesting_depth('a = "[[[[" # [[[[\nb = [[1], {c = [2]}]\n', "toml") == 3
    with pytest.raises(InvalidDataError, match="5000 deep"):
        documents.check_toml_text(f"a = {DEEP}\n", "spec.toml")
    with pytest.raises(InvalidDataError, match="a number of 200 characters"):
        documents.check_toml_text("format_version = " + "1" * 200 + "\n", "spec.toml")
    documents.check_toml_text('name = "x"\nvalues = [[1, 2], [3]]\n', "spec.toml")  # an ordinary spec passes
    assert documents.load_json('{"a": [1, 2.5, {"b": null}]}', "x") == {"a": [1, 2.5, {"b": None}]}


# -- 5. grids checked before they are built -----------------------------------------------------------------
@pytest.mark.parametrize(
    "args",
    [
        ["path", "spcart", "-k", "1:1000000000000"],
        ["cv", "spcart", "-d", "builtin:random?n=30&p=6", "-k", "1:1000000000"],
        ["path", "spcart", "-k", "0:5"],
    ],
    ids=["path", "cv", "zero"],
)
def test_a_k_range_beyond_p_is_refused_before_the_grid_is_built(cli, args):
    code, text = quickly(cli, *args)
    refused(text, code, "is not a sparsity level", "is an integer in [1, p]")


# -- 6. messages that name the real cause ---------------------------------------------------------------------
def test_int64_near_two_to_the_63_is_lost_precision_not_constant(cli, tmp_path):
    values = (2**63 - 1 - np.random.default_rng(0).integers(0, 1000, size=(30, 3))).astype(np.int64)
    path = tmp_path / "big.npy"
    np.save(path, values)
    code, text = cli.main("run", "spcart", "-d", path, "-r", "1").code_and_output
    refused(text, code, "int64 integers beyond 2**53", "lost precision, not constant columns", "x - x.min(axis=0)")
    assert "constant (zero variance)" not in text


def test_a_large_offset_is_called_an_offset(cli, tmp_path):
    values = 2.0**48 + np.random.default_rng(0).integers(0, 10, size=(30, 3))
    path = tmp_path / "offset.npy"
    np.save(path, values)
    code, text = cli.main("run", "spcart", "-d", path, "-r", "1").code_and_output
    refused(text, code, "3 column(s) vary by less than 1e-12 of their magnitude", "a large offset", "281474976710656")
    assert "constant (zero variance)" not in text


@pytest.mark.parametrize("kind", ["dense", "sparse"])
def test_an_offset_column_among_others_gets_its_own_warning(kind):
    rng = np.random.default_rng(1)
    data: object = np.column_stack([rng.standard_normal((30, 3)), 2.0**48 + rng.integers(0, 10, size=30)])
    if kind == "sparse":
        data = pytest.importorskip("scipy.sparse").csr_array(data)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = spcakit.fit(data, "spcart", r=1)
    texts = [str(w.message) for w in caught if issubclass(w.category, ConstantColumnWarning)]
    assert any("1 column(s) vary by less than 1e-12 of their magnitude (3 (x4)" in t for t in texts), texts
    assert np.all(result.loadings[3] == 0)


def test_the_frame_check_names_categorical_and_datetime_columns():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"a": np.arange(5.0), "c": pd.Categorical(list("abcab")), "d": pd.date_range("2020", periods=5)})
    with pytest.raises(InvalidDataError, match=r"2 non-numeric columns: 'c' \(category\), 'd' \(datetime64"):
        check_frame_columns(frame, "X")
    check_frame_columns(frame[["a"]], "X")  # numeric columns pass
    check_frame_columns(np.zeros((2, 2)), "X")  # and so does anything that is not a frame


# -- round 2 leftovers: every reader and writer outside the first round's area ---------------------------------
def test_an_experiment_toml_nested_five_thousand_deep_is_refused(cli, tmp_path):
    path = tmp_path / "deep.toml"
    path.write_text(f'name = "x"\ntitle = "t"\npaper = "p"\ndata = "builtin:pitprops"\nr = 1\nextra = {DEEP}\n')
    code, text = cli.main("reproduce", path).code_and_output
    refused(text, code, f"{path}: nests arrays or tables 5000 deep, more than 64")


def _plot_input(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "in.json"
    path.write_text(text)
    return path


@pytest.mark.parametrize("kind", ["path", "cv"])
def test_plot_refuses_json_nested_five_thousand_deep(cli, tmp_path, kind):
    pytest.importorskip("matplotlib")
    path = _plot_input(tmp_path, '{"levels": ' + DEEP + "}")
    out = tmp_path / "f.png"
    code, text = cli.main("plot", kind, path, "--out", out).code_and_output
    refused(text, code, f"{path}: nests arrays or tables 5001 deep, more than 64")
    assert not out.exists()


def test_plot_refuses_a_json_number_of_five_thousand_digits(cli, tmp_path):
    pytest.importorskip("matplotlib")
    path = _plot_input(tmp_path, '{"levels": [' + "7" * 5000 + "]}")
    code, text = cli.main("plot", "path", path, "--out", tmp_path / "f.png").code_and_output
    refused(text, code, "a number of 5,000 characters")


def test_plot_refuses_a_device_at_once(cli, tmp_path):
    pytest.importorskip("matplotlib")
    link = tmp_path / "zero.json"
    link.symlink_to("/dev/zero")
    out = tmp_path / "f.png"
    code, text = quickly(cli, "plot", "path", link, "--out", out)
    refused(text, code, "is a character device, not a regular file", "/dev/zero")
    assert not out.exists()


@pytest.fixture
def model_of_store(cli, store, tmp_path) -> Path:
    model = tmp_path / "m.json"
    code, text = cli.main("run", "spcart", "-d", store, "-r", "1", "--save-model", model).code_and_output
    assert code == 0, text
    return model


def test_transform_writes_nothing_inside_the_store_it_reads(cli, store, model_of_store):
    before = tree_digest(store)
    for target in (store / "scores.csv", chunk_files(store)[0]):
        code, text = cli.main("transform", model_of_store, "-d", store, "--out", target).code_and_output
        refused(text, code, f"--out {target} lies inside the Zarr store {store}")
    assert tree_digest(store) == before


def test_no_writer_writes_inside_any_zarr_store(cli, store, model_of_store, tmp_path):
    """A store this command does not read is still a store: a file written there changes it or is read as
    part of it."""
    pytest.importorskip("matplotlib")
    result = tmp_path / "r.json"
    assert cli.main("run", "spcart", "-d", store, "-r", "1", "--json", "--out", result).code == 0
    experiment = tmp_path / "e.toml"
    experiment.write_text('name = "e"\ntitle = "t"\npaper = "p"\ndata = "builtin:pitprops"\nr = 1\ncolumns = ["nz"]\n'
                          '\n[[rows]]\nmethod = "spcart"\nparams = { k = 3 }\n')  # fmt: skip
    before = tree_digest(store)
    commands = [
        ["transform", model_of_store, "-d", "builtin:random?n=5&p=6", "--out", store / "c" / "s.csv"],
        ["plot", "loadings", result, "--out", store / "f.png"],
        ["path", "spcart", "-d", "builtin:pitprops", "-r", "1", "-k", "1:2", "--plot", store / "c" / "f.png"],
        ["reproduce", experiment, "--out", store / "outcome"],
    ]
    for command in commands:
        code, text = cli.main(*command).code_and_output
        refused(text, code, f"lies inside the Zarr store {os.path.realpath(store)}", "choose a path outside it")
    assert tree_digest(store) == before
    assert not (store / "outcome").exists()


def test_path_plot_inside_the_store_it_reads_names_the_option(cli, store):
    pytest.importorskip("matplotlib")
    before = tree_digest(store)
    code, text = cli.main("path", "spcart", "-d", store, "-r", "1", "-k", "1:2", "--plot", store / "f.png").code_and_output
    refused(text, code, f"--plot {store / 'f.png'} lies inside the Zarr store {store}")
    assert tree_digest(store) == before


def test_an_offset_column_is_never_also_called_constant():
    rng = np.random.default_rng(2)
    data = np.column_stack([rng.standard_normal((30, 3)), np.full(30, 5.0), 2.0**48 + rng.integers(0, 10, size=30)])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = spcakit.fit(data, "spcart", r=1)
    texts = [str(w.message) for w in caught if issubclass(w.category, ConstantColumnWarning)]
    offset = [t for t in texts if "a large offset, or precision lost" in t]
    note = [t for t in texts if "they get zero loadings" in t]
    assert len(offset) == 1 and "4 (x5)" in offset[0] and "3 (x4)" not in offset[0], texts
    assert len(note) == 1, texts
    assert "1 column(s) are constant (zero variance): 3 (x4); " in note[0], note  # the constant one, alone
    assert "1 column(s) vary too little for their magnitude (a large offset: see the warning about them): 4 (x5)" \
        in note[0], note
    assert note[0] in result.warnings and np.all(result.loadings[3:] == 0)


def test_a_refused_r_does_not_call_an_offset_column_constant():
    rng = np.random.default_rng(3)
    data = np.column_stack([rng.standard_normal((30, 2)), 2.0**48 + rng.integers(0, 10, size=30)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantColumnWarning)
        with pytest.raises(spcakit.core.errors.InvalidParameterError) as info:
            spcakit.fit(data, "spcart", r=3)
    assert "a large offset" in str(info.value) and "constant" not in str(info.value)


@pytest.mark.parametrize("method", ["fit", "transform", "score", "reconstruction_error"])
def test_the_estimator_names_a_categorical_or_datetime_column(method):
    pd = pytest.importorskip("pandas")
    numeric = pd.DataFrame(np.random.default_rng(4).standard_normal((20, 3)), columns=["a", "b", "c"])
    bad = numeric.assign(c=pd.Categorical(list("xyz" * 6 + "xy")))  # the fitted columns, one now a category
    model = spcakit.SparsePCA(n_components=1, k=2)
    if method == "fit":
        bad = bad.assign(when=pd.date_range("2020", periods=20))
        expected = r"X is a DataFrame with 2 non-numeric columns: 'c' \(category\), 'when' \(datetime64"
    else:
        model.fit(numeric)
        expected = r"X is a DataFrame with 1 non-numeric column: 'c' \(category\)"
    with pytest.raises(InvalidDataError, match=expected):
        getattr(model, method)(bad)


def test_an_experiment_spec_that_is_a_device_is_refused_at_once(cli, tmp_path):
    link = tmp_path / "zero.toml"
    link.symlink_to("/dev/zero")
    code, text = quickly(cli, "reproduce", link)
    refused(text, code, f"{link}: is a device or a socket, not a regular file")
