"""Data input: CSV/TSV files read to the nearest double and refused by line and column, NumPy files checked
before anything is allocated, pandas DataFrames with their column names, and every kind of input that is
not a table of finite doubles refused with an :class:`~spcakit.InvalidDataError` saying what to do.
"""

from __future__ import annotations

import io
import math
import os
import sys
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

import spcakit
from spcakit.inputs import csv_files, datasets
from spcakit.inputs.datasets import load_source
from spcakit.core.errors import InvalidDataError
from spcakit.inputs.dense import DENSE_COVARIANCE_LIMIT
from spcakit.inputs.checks import GRAM_LIMIT
from spcakit.inputs import as_problem

X = np.random.default_rng(3).standard_normal((12, 4))
NAMES = ("height", "weight", "age", "score")


def write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, str):
        text = text.encode("utf-8")
    path.write_bytes(text)
    return path


def table(separator: str = ",", x: np.ndarray = X, names: tuple[str, ...] = NAMES, newline: str = "\n") -> str:
    """``x`` as a CSV table; ``repr`` writes the shortest digits that read back to the same double."""
    lines = [separator.join(names)] + [separator.join(repr(float(v)) for v in row) for row in x]
    return newline.join(lines) + newline


def refusal(source: object, **kwargs: object) -> str:
    with pytest.raises(InvalidDataError) as info:
        as_problem(source, **kwargs)
    return str(info.value)


# -- CSV: what is read ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "text"), [
    ("comma.csv", table(",")),
    ("semicolon.csv", table(";")),
    ("tab.tsv", table("\t")),
    ("tab.csv", table("\t")),
    ("crlf-bom.csv", "\ufeff" + table(",", newline="\r\n")),
    ("quoted.csv", "\n".join(",".join(f'"{cell}"' for cell in line.split(",")) for line in table(",").splitlines())),
    ("blank-lines.csv", "\n\n" + table(",").replace("\n", "\n\n  \n", 3) + ",,,\n"),
    ("spaces.csv", table(", ")),
])  # fmt: skip
def test_csv_separators_and_quirks_read_the_same_numbers(tmp_path, name, text):
    path = write(tmp_path / name, text)
    dataset = load_source(str(path))
    assert dataset.feature_names == NAMES and not dataset.is_covariance
    np.testing.assert_array_equal(dataset.matrix, X)  # repr round-trips: the reader must give every bit
    careful, names = csv_files._read_checked(path, csv_files.csv_layout(path))  # the reader that names lines
    np.testing.assert_array_equal(careful, X)
    assert names == NAMES


@pytest.mark.parametrize(("text", "names"), [
    (",a,b\nr1,1,2\nr2,3,5\nr3,4,4\n", ("a", "b")),  # empty header cell (R's write.csv, pandas' to_csv)
    ("a,b\nr1,1,2\nr2,3,5\nr3,4,4\n", ("a", "b")),  # header one cell short (R's write.table)
    ("id,a,b\nr1,1,2\nr2,3,5\nr3,4,4\n", ("a", "b")),  # every first value is text
    ("date;a;b\n2024-01-01;1;2\n2024-01-02;3;5\n2024-01-03;4;4\n", ("a", "b")),
])  # fmt: skip
def test_a_first_column_of_row_labels_is_dropped(tmp_path, text, names):
    dataset = load_source(str(write(tmp_path / "labels.csv", text)))
    assert dataset.feature_names == names
    np.testing.assert_array_equal(dataset.matrix, [[1, 2], [3, 5], [4, 4]])


def test_a_numeric_first_column_with_a_name_is_data(tmp_path):
    dataset = load_source(str(write(tmp_path / "ids.csv", "id,a\n1,2\n2,5\n3,4\n")))
    assert dataset.feature_names == ("id", "a")
    np.testing.assert_array_equal(dataset.matrix, [[1, 2], [2, 5], [3, 4]])


def test_the_fast_reader_reads_clean_files_without_the_careful_reader(tmp_path, monkeypatch):
    def careful(*args):
        raise AssertionError("the cell-by-cell reader ran on a clean file")

    monkeypatch.setattr(csv_files, "_read_checked", careful)
    x = np.random.default_rng(0).standard_normal((300, 7)) * 1e3
    names = tuple(f"v{j}" for j in range(7))
    lines = [",".join(("", *names))] + [f"s{i}," + ",".join(repr(float(v)) for v in row) for i, row in enumerate(x)]
    dataset = load_source(str(write(tmp_path / "clean.csv", "\n".join(lines) + "\n")))
    np.testing.assert_array_equal(dataset.matrix, x)
    assert dataset.feature_names == names


def test_every_cell_is_read_as_the_double_nearest_its_digits(tmp_path, monkeypatch):
    """Python's ``float`` rounds correctly: the fast reader must agree with it bit for bit (-0.0 included)."""
    monkeypatch.setattr(csv_files, "_read_checked", lambda *args: pytest.fail("the careful reader ran"))
    tricky = ["-0.0", "+1.5", "0.1000000000000000055511151231257827", "9007199254740993", "4.9e-324", "2.4e-324",
              "2.2250738585072011e-308", "1.7976931348623157e308", "1E+2", "-.5", "5.", "0.30000000000000001665"]
    rng = np.random.default_rng(5)
    digits = [f"{'-' if rng.random() < 0.5 else ''}{rng.integers(10**17, 10**18)}e{rng.integers(-340, 290)}"
              for _ in range(12 * 23)]
    cells = np.array(tricky + digits).reshape(-1, 12)
    path = write(tmp_path / "digits.csv", "\n".join([",".join(f"c{j}" for j in range(12))] + [",".join(r) for r in cells]))
    expected = np.vectorize(float)(cells)
    read = load_source(str(path)).matrix
    np.testing.assert_array_equal(np.ascontiguousarray(read).view(np.int64), expected.view(np.int64))


# -- CSV: what is refused, by line and column -------------------------------------------------------------
BAD_CSV = {
    "no-header": ("1.5,2,3\n4,5,6\n", ["header line is missing", "Add a header line", "x1,x2,x3"]),
    "no-header-semicolon": ("1.5;2;3\n4;5;6\n", ["header line is missing", "x1;x2;x3"]),
    "no-header-labels": ("s1,1,2\ns2,3,4\n", ["header line is missing"]),
    "empty": ("", ["empty"]),
    "blank": ("\n  \n", ["empty"]),
    "header-only": ("a,b\n", ["no data rows"]),
    "text-cell": ("a,b\n1,2\n3,x\n", ["1 cell is not a number", "line 3, column 'b': 'x'"]),
    "missing": ("a,b\n1,NA\n,3\n4,nan\n5,inf\n6,7\n", [
        "4 cells are not numbers", "line 2, column 'b': 'NA' (a missing value)", "line 3, column 'a': empty",
        "line 4, column 'b': 'nan'", "line 5, column 'b': 'inf' (not finite)", "fill in or remove"]),
    "many": ("a,b\n" + "1,x\n" * 9, ["9 cells are not numbers", "line 6, column 'b'", "and 4 more"]),
    "blank-lines-counted": ("a,b\n\n1,2\n\n  \n3,x\n", ["line 6, column 'b': 'x'"]),
    "quoted-newline-counted": (',a\n"r\n1",1\nr2,x\n', ["line 4, column 'a': 'x'"]),
    "ragged": ("a,b,c\n1,2,3\n4,5\n6,7,8,9\n1,2,3\n", [
        "2 lines have the wrong number of fields", "line 3 has 2", "line 4 has 4", "the header has 3",
        "comma-separated"]),
    "decimal-comma": ("a;b\n1,5;2\n3;4,25\n", ["line 2, column 'a': '1,5'", "decimal commas are not read"]),
    "space-separated": ("a b\n1 2\n3 4\n", ["'1 2'", "spaces do not separate fields"]),
    "labels-then-a-number": ("id,a\nr1,1\n7,2\nr3,3\n", ["line 2, column 'id': 'r1'", "row labels only when"]),
    "trailing-separators": ("a,b\n1,2,\n3,4,\n", ["end with a separator"]),
    "unnamed-column": ("a,,c\n1,2,3\n4,5,6\n", ["no name for column(s) 2", "give every column a name"]),
    "trailing-header-separator": ("a,b,\n1,2,3\n", ["no name for column(s) 3", "separator at the end"]),
    "header-quote": ('a,"b\n1,2\n', ["line 1 (the header)", "quote"]),
    "old-mac-lines": ("a,b\r1,2\r3,4\r", ["lone carriage return"]),
    "huge-field": ('a,b\n1,2\n3,"4\n' + "5,6\n" * 40000, ["line 3", "longer than 131,072 characters", "quote"]),
}  # fmt: skip


@pytest.mark.parametrize("case", list(BAD_CSV))
def test_bad_csv_is_refused_with_lines_and_columns(tmp_path, case):
    text, phrases = BAD_CSV[case]
    path = write(tmp_path / f"{case}.csv", text)
    with pytest.raises(InvalidDataError) as info:
        load_source(str(path))
    message = str(info.value)
    assert message.startswith(str(path))
    for phrase in phrases:
        assert phrase in message, f"{phrase!r} not in {message!r}"


def test_text_that_is_not_utf8_is_named_by_line(tmp_path):
    path = write(tmp_path / "latin1.csv", b"a,b\n1,2\n3,4\n\xe9t\xe9,5\n")
    message = refusal(str(path))
    assert "line 4 is not UTF-8" in message and "byte 0xe9" in message and "save the file as UTF-8" in message
    message = refusal(str(write(tmp_path / "head.csv", b"h\xe9ight,b\n1,2\n")))
    assert "line 1 is not UTF-8" in message
    message = refusal(str(write(tmp_path / "u16.csv", "a,b\n1,2\n3,5\n".encode("utf-16"))))
    assert "UTF-16" in message and "CSV UTF-8" in message


def test_a_csv_covariance_reads_its_names_with_a_semicolon(tmp_path):
    c = datasets.pitprops()
    rows = [";".join(("",) + c.feature_names)] + [
        ";".join((name, *(repr(float(v)) for v in row))) for name, row in zip(c.feature_names, c.matrix)]  # fmt: skip
    problem = as_problem(str(write(tmp_path / "pitprops.csv", "\n".join(rows) + "\n")), covariance=True)
    assert problem.feature_names == c.feature_names
    np.testing.assert_array_equal(problem.covariance.explicit(), c.matrix)


# -- NumPy files ------------------------------------------------------------------------------------------
def test_npy_of_text_or_dates_is_refused_as_not_numeric(tmp_path):
    np.save(tmp_path / "s.npy", np.array([["a", "b"], ["c", "d"]]))
    np.save(tmp_path / "d.npy", np.array([["2020-01-01", "2021-01-01"]] * 3, dtype="datetime64[D]"))
    assert "must be numeric; got an array of text" in refusal(str(tmp_path / "s.npy"))
    assert "must be numeric; got an array of dates or times" in refusal(str(tmp_path / "d.npy"))


@pytest.mark.parametrize("layout", ["C", "F", ">f8", "f4"])
def test_a_mapped_npy_is_a_read_only_plain_array_of_the_same_numbers(tmp_path, layout):
    data = np.random.default_rng(3).standard_normal((40, 7))
    stored = np.asfortranarray(data) if layout == "F" else data.astype(layout) if layout != "C" else data
    path = tmp_path / "x.npy"
    np.save(path, stored)
    before = path.read_bytes()
    mapped = load_source(str(path), mapped=True).matrix
    read = load_source(str(path)).matrix
    assert type(mapped) is np.ndarray and not mapped.flags.writeable and read.flags.writeable
    assert mapped.dtype == read.dtype and np.array_equal(mapped, read)
    # a fit from the path (which maps it) equals a fit of the array, and leaves the file as it was
    assert np.array_equal(spcakit.fit(str(path), "spcart", r=2, k=3).loadings,
                          spcakit.fit(np.array(read), "spcart", r=2, k=3).loadings)  # fmt: skip
    assert path.read_bytes() == before


def test_a_fit_from_a_path_and_spcakit_run_map_the_npy_file(cli, tmp_path, monkeypatch):
    from spcakit.inputs import numpy_files

    np.save(tmp_path / "x.npy", X)
    calls: list[bool] = []
    real = numpy_files.load_npy
    monkeypatch.setattr(numpy_files, "load_npy", lambda path, *, mapped=False: calls.append(mapped) or real(path, mapped=mapped))
    spcakit.fit(str(tmp_path / "x.npy"), "spcart", r=1, k=2)
    assert cli.main("run", "spcart", "-d", str(tmp_path / "x.npy"), "-r", "1", "-k", "2").code == 0
    assert calls == [True, True]
    assert load_source(str(tmp_path / "x.npy")).matrix.flags.writeable and calls[-1] is False  # the public default reads


def test_an_empty_npy_is_read_not_mapped(tmp_path):
    np.save(tmp_path / "e.npy", np.zeros((0, 3)))
    assert load_source(str(tmp_path / "e.npy"), mapped=True).matrix.shape == (0, 3)


def test_a_truncated_npy_is_refused_before_allocating(tmp_path):
    np.save(tmp_path / "x.npy", X)
    whole = (tmp_path / "x.npy").read_bytes()
    message = refusal(str(write(tmp_path / "cut.npy", whole[:-8])))
    assert "cut short" in message and "12 x 4" in message and "376 bytes of data follow" in message
    # a header declaring 8 TB: refused from the header alone (no MemoryError, no time spent)
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": (10**6, 10**6)})
    message = refusal(str(write(tmp_path / "huge.npy", header.getvalue() + b"\0" * 64)))
    assert "cut short" in message and "7.45e+03 GiB" in message and "64 bytes of data follow" in message


def test_files_that_are_not_what_their_suffix_says(tmp_path):
    np.save(tmp_path / "x.npy", X)
    np.savez(tmp_path / "x.npz", X=X)
    (tmp_path / "npy-named.npz").write_bytes((tmp_path / "x.npy").read_bytes())
    (tmp_path / "npz-named.npy").write_bytes((tmp_path / "x.npz").read_bytes())
    assert "rename it to .npy" in refusal(str(tmp_path / "npy-named.npz"))
    assert "rename it to .npz" in refusal(str(tmp_path / "npz-named.npy"))
    assert "not a valid .npz" in refusal(str(write(tmp_path / "text.npz", "not a zip file\n")))
    assert "does not start with NumPy's signature" in refusal(str(write(tmp_path / "text.npy", "not numpy\n")))


def test_a_truncated_or_damaged_npz_is_refused(tmp_path):
    np.savez_compressed(tmp_path / "x.npz", X=np.random.default_rng(0).standard_normal((200, 20)))
    whole = (tmp_path / "x.npz").read_bytes()
    for cut in (10, len(whole) // 2, len(whole) - 30):
        message = refusal(str(write(tmp_path / f"cut{cut}.npz", whole[:cut])))
        assert "npz" in message and ("damaged" in message or "truncated" in message or "cut short" in message), message
    damaged = bytearray(whole)
    damaged[len(whole) // 2: len(whole) // 2 + 40] = b"\0" * 40
    message = refusal(str(write(tmp_path / "damaged.npz", bytes(damaged))))
    assert "array 'X' cannot be read" in message and "damaged or truncated zip" in message


def test_an_npz_without_arrays_or_with_a_python_object(tmp_path):
    with zipfile.ZipFile(tmp_path / "docs.npz", "w") as archive:
        archive.writestr("readme.txt", "hello")
    assert "holds no NumPy arrays (files: readme.txt)" in refusal(str(tmp_path / "docs.npz"))
    np.savez(tmp_path / "objects.npz", X=X, names=np.array(list(NAMES), dtype=object))
    message = refusal(str(tmp_path / "objects.npz"))
    assert "array 'names'" in message and "Python objects" in message and "pickle" not in message


@pytest.mark.parametrize("key", ["feature_names", "names", "genes", "accession", "columns"])
def test_an_npz_names_array_of_the_wrong_length_is_refused(tmp_path, key):
    np.savez(tmp_path / "x.npz", X=X, **{key: np.array(["a", "b", "c"])})
    message = refusal(str(tmp_path / "x.npz"))
    assert f"the names array {key!r} has 3 entries but the array 'X' has 4 columns" in message
    np.savez(tmp_path / "y.npz", X=X, **{key: np.array(list(NAMES))})
    assert as_problem(str(tmp_path / "y.npz")).feature_names == NAMES


def test_an_npz_names_array_must_be_one_dimensional_and_a_vector_is_not_data(tmp_path):
    np.savez(tmp_path / "x.npz", X=X, names=np.array([list(NAMES)]))
    assert "'names' must be 1-D" in refusal(str(tmp_path / "x.npz"))
    np.savez(tmp_path / "v.npz", X=np.arange(4.0), names=np.array(list(NAMES)))
    assert "2-D array" in refusal(str(tmp_path / "v.npz"))


def test_a_damaged_w0_file_is_a_parameter_error(tmp_path):
    parts = pytest.importorskip("spcakit_fspca.parts")
    path = write(tmp_path / "w0.npz", b"PK\x03\x04 truncated")
    with pytest.raises(spcakit.InvalidParameterError, match="w0 must be a d x m matrix.*npz"):
        parts.read_start(str(path))


# -- sources ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("source", "phrase"), [("", "is empty"), ("   ", "is only whitespace"), ("\t\n", "is only whitespace")])
def test_an_empty_source_says_so_and_lists_what_is_valid(source, phrase):
    message = refusal(source)
    assert f"the data source {phrase}" in message and ".npy, .npz, .csv or .tsv" in message and "builtin:zou" in message


@pytest.mark.parametrize(("name", "advice"), [
    ("x.xlsx", "save it as CSV"), ("x.csv.gz", "decompress it first"), ("x.txt", "rename it to .csv"), ("x", "(none)"),
])  # fmt: skip
def test_unsupported_suffixes_get_advice(tmp_path, name, advice):
    message = refusal(str(write(tmp_path / name, "a,b\n1,2\n")))
    assert "unsupported file type" in message and advice in message and ".npy, .npz, .csv or .tsv" in message


def test_paths_folders_nul_and_unreadable_files(tmp_path, monkeypatch):
    path = write(tmp_path / "x.csv", table())
    assert as_problem(path).feature_names == NAMES  # a pathlib.Path works like its string
    assert "is a folder" in refusal(str(tmp_path))
    assert "NUL character" in refusal("x\0.csv")

    def denied(path: Path, *_: object) -> None:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(csv_files, "load_csv", denied)
    assert "cannot read it (permission denied; check the file's and its folders' permissions)" in refusal(str(path))


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads any file")
def test_a_file_without_read_permission(tmp_path):
    path = write(tmp_path / "x.csv", table())
    path.chmod(0)
    try:
        assert "permission denied" in refusal(str(path))
    finally:
        path.chmod(0o600)


# -- arrays that are not tables of numbers ------------------------------------------------------------------
@pytest.mark.parametrize(("data", "phrase"), [
    (np.array([["1.5", "2"], ["3", "4"]]), "array of text"),
    (np.array([[b"a", b"b"]]), "array of bytes"),
    (np.array([["2020-01-01"], ["2021-01-01"]], dtype="datetime64[D]"), "dates or times"),
    (np.array([[1, 2]], dtype="timedelta64[s]"), "time spans"),
    (np.zeros((3, 2), dtype=[("a", float), ("b", int)]), "structured records"),
    (np.array([[{"a": 1}, 2.0]], dtype=object), "Python objects that are not numbers"),
    ([[1.0, 2.0], [3.0]], "rectangular array of numbers"),
    (np.array([[10**400, 1]], dtype=object), "too large for double precision"),
    ({"a": [1, 2]}, "Python objects that are not numbers"),
    (np.ma.masked_array(X, mask=X > 1.5), "masked array with 4 masked entries"),
])  # fmt: skip
def test_arrays_of_non_numbers_are_refused(data, phrase):
    for kwargs in ({}, {"covariance": True}):
        assert phrase in refusal(data, **kwargs)
    with pytest.raises(InvalidDataError, match=phrase):
        spcakit.Covariance(data)


def test_booleans_count_as_zero_and_one_and_objects_holding_numbers_are_numbers():
    flags = np.random.default_rng(1).random((20, 3)) > 0.5
    as_floats = spcakit.fit(flags.astype(float), "spcart", r=2)
    np.testing.assert_array_equal(spcakit.fit(flags, "spcart", r=2).loadings, as_floats.loadings)
    np.testing.assert_array_equal(spcakit.fit(flags.astype(object), "spcart", r=2).loadings, as_floats.loadings)


@pytest.mark.parametrize("kind", ["csr_matrix", "csc_array", "coo_matrix"])
def test_a_sparse_covariance_is_refused_with_the_dense_size(kind):
    sparse = pytest.importorskip("scipy.sparse")
    matrix = getattr(sparse, kind)(np.eye(1000, 300))
    message = refusal(matrix, covariance=True)
    assert f"scipy.sparse {kind} of shape (1000, 300) with 300 stored entries" in message
    assert "must be dense here" in message and ".toarray()" in message and "2.29 MiB" in message
    with pytest.raises(InvalidDataError, match="toarray"):
        spcakit.Covariance(matrix)
    assert as_problem(matrix).input.kind == "data"  # as data it is taken, sparse (tests/inputs/test_sparse.py)


# -- pandas DataFrames -------------------------------------------------------------------------------------
@pytest.fixture
def pd():
    return pytest.importorskip("pandas")


def test_a_dataframe_gives_its_column_names(pd):
    frame = pd.DataFrame(X, columns=list(NAMES), index=[f"s{i}" for i in range(12)])
    result = spcakit.fit(frame, "spcart", r=2)
    assert result.feature_names == NAMES
    np.testing.assert_allclose(result.loadings, spcakit.fit(X, "spcart", r=2).loadings, atol=1e-12)
    assert as_problem(frame, feature_names=list("abcd")).feature_names == tuple("abcd")
    multi = pd.DataFrame(X, columns=pd.MultiIndex.from_tuples([("body", "h"), ("body", "w"), ("x", "age"), ("x", 1)]))
    assert as_problem(multi).feature_names == ("body/h", "body/w", "x/age", "x/1")


def test_a_dataframe_with_text_columns_is_refused_by_name(pd):
    frame = pd.DataFrame(X, columns=list(NAMES)).assign(
        city=["Oslo"] * 12, when=pd.Timestamp("2024-01-01"), kind=pd.Categorical(["a", "b"] * 6))
    message = refusal(frame)
    assert "3 non-numeric columns: 'city'" in message and "'when' (datetime64" in message and "'kind' (category)" in message
    assert "df.drop(columns=['city', 'when', 'kind'])" in message and "select_dtypes('number')" in message


def test_a_dataframe_of_booleans_and_nullable_numbers(pd):
    flags = np.random.default_rng(1).random((12, 2)) > 0.5
    frame = pd.DataFrame({"a": X[:, 0], "flag": flags[:, 0], "other": pd.array(flags[:, 1], dtype="boolean"),
                          "count": pd.array(np.arange(12) % 5, dtype="Int64")})  # fmt: skip
    expected = np.column_stack([X[:, 0], flags, np.arange(12) % 5]).astype(float)
    np.testing.assert_allclose(as_problem(frame).data, expected - expected.mean(axis=0), atol=1e-12)
    frame.loc[4, "count"] = pd.NA
    message = refusal(frame)
    assert "NaN at row 4, column 3 ('count')" in message and "df.dropna()" in message


def test_a_dataframe_with_nan_names_the_columns(pd):
    frame = pd.DataFrame(X.copy(), columns=list(NAMES))  # a copy: pandas < 3 writes through to X
    frame.iloc[2, 1] = np.nan
    frame.iloc[5, 3] = np.inf
    message = refusal(frame)
    assert "2 NaN or infinite entries (first: NaN at row 2, column 1 ('weight')" in message
    assert "by column: 1 ('weight'): 1, 3 ('score'): 1" in message


def test_a_series_is_refused(pd):
    message = refusal(pd.Series(X[:, 0], name="height"))
    assert "pandas Series" in message and "to_frame()" in message


def test_a_square_dataframe_as_covariance_keeps_its_names(pd):
    c = datasets.pitprops()
    frame = pd.DataFrame(c.matrix, index=list(c.feature_names), columns=list(c.feature_names))
    for given in (spcakit.Covariance(frame), frame):
        problem = as_problem(given, covariance=True)
        assert problem.feature_names == c.feature_names
        np.testing.assert_array_equal(problem.covariance.explicit(), c.matrix)
    assert spcakit.fit(spcakit.Covariance(frame), "spcart", r=2).feature_names == c.feature_names
    shuffled = frame.iloc[::-1]  # rows reversed, columns not: not a covariance any more
    with pytest.raises(InvalidDataError, match="one order along the rows and another along the columns"):
        spcakit.Covariance(shuffled)
    assert "another along the columns" in refusal(shuffled, covariance=True)


def test_pandas_is_not_imported_for_arrays_or_small_csv_files(tmp_path):
    import subprocess

    path = write(tmp_path / "x.csv", table())
    code = (
        "import sys, numpy as np, spcakit\n"
        "spcakit.as_problem(np.eye(3) + 1, covariance=True)\n"
        "assert 'pandas' not in sys.modules, 'pandas imported for an array'\n"
        f"spcakit.as_problem({str(path)!r})\n"
        "assert 'pandas' not in sys.modules, 'pandas imported for a small CSV file'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# -- double precision --------------------------------------------------------------------------------------
OVERFLOW_SHAPES = [(40, 5), (5, 8), (3, DENSE_COVARIANCE_LIMIT + 1)]  # dense Gram, matrix-free n < p, p > the limit


@pytest.mark.parametrize("shape", OVERFLOW_SHAPES, ids=["dense", "n<p", "wide"])
@pytest.mark.parametrize("value", [1e155, 1e200, 1e250, 1e300, 1.7e308])
def test_data_whose_covariance_overflows_are_refused_without_warnings(value, shape):
    x = np.random.default_rng(0).uniform(-1.0, 1.0, shape) * value
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning may escape on the way
        message = refusal(x)
        assert "too large" in message and "in double precision" in message and "divide by a power of 10" in message
        assert "too large for a covariance in double precision" in refusal(x, center=False)


def test_centring_and_means_of_huge_values_do_not_overflow_silently():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # the mean of (1.7e308, -1.7e308, -1.7e308) is -5.7e307: 1.7e308 minus it overflows
        spread = np.array([[1.7e308, 1.0], [-1.7e308, 2.0], [-1.7e308, 4.0]])
        assert "too large to centre" in refusal(spread)
        # a plain sum of these overflows; the scaled mean shows the column is constant (and left out)
        constant = np.column_stack([np.full(30, 1.5e308), np.arange(30.0)])
        assert as_problem(constant).constant_columns == (0,)
        assert "2 column(s) are constant" in refusal(constant[:, [0, 0]])
        # relative spread 1e-8 (not rounding noise): the centred values, about 1e300, have squares beyond range
        assert "too large" in refusal(constant + np.column_stack([np.arange(30.0) * 1e299, np.zeros(30)]))


def test_the_limit_is_the_sum_of_squares_and_values_just_below_it_work():
    x = np.random.default_rng(0).standard_normal((40, 5))
    x /= np.linalg.norm(x - x.mean(axis=0))  # centred sum of squares 1
    below = x * math.sqrt(GRAM_LIMIT) * 0.99
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no metric left out (MetricWarning), no NumPy overflow
        result, unit = spcakit.fit(below, "spcart", r=2), spcakit.fit(x, "spcart", r=2)
    assert all(np.all(np.isfinite(value)) for value in result.metrics.values())
    assert result.metrics["gap"] == pytest.approx(unit.metrics["gap"], rel=1e-6, abs=1e-12)  # the bound, at any scale
    np.testing.assert_allclose(result.loadings, unit.loadings, atol=1e-10)  # loadings do not depend on the scale
    assert result.metrics["cpev"] == pytest.approx(unit.metrics["cpev"], rel=1e-10)
    assert result.metrics["ev"] == pytest.approx(unit.metrics["ev"] * 0.99**2 * GRAM_LIMIT, rel=1e-10)
    assert "too large" in refusal(x * math.sqrt(GRAM_LIMIT) * 1.01)


def test_variances_that_underflow_are_refused_and_small_data_work():
    x = np.random.default_rng(0).standard_normal((30, 4))
    message = refusal(x * 1e-160)
    assert "4 column(s) have standard deviations below 1.49e-154" in message and "multiply by a power of 10" in message
    one = x.copy()
    one[:, 2] *= 1e-160
    assert "1 column(s)" in refusal(one) and "2 (x3)" in refusal(one)
    np.testing.assert_allclose(spcakit.fit(x * 1e-100, "spcart", r=2).loadings, spcakit.fit(x, "spcart", r=2).loadings,
                               atol=1e-10)  # fmt: skip


def test_an_explicit_covariance_too_large_for_products_is_refused():
    message = refusal(spcakit.Covariance(np.eye(3) * 1e306))
    assert "covariance matrix's entries (up to 1e+306) are too large" in message
    # (not a flat leading eigenvector: its entries would all sit at the default threshold 1/sqrt(3), zeroed)
    assert spcakit.fit(spcakit.Covariance(np.diag([3.0, 2.0, 1.0]) * 1e300 + 1e299), "spcart", r=1).r == 1


# -- the command line -------------------------------------------------------------------------------------
def test_cli_reads_a_semicolon_csv_and_a_tsv(cli, tmp_path):
    import json

    for name, separator in (("x.csv", ";"), ("x.tsv", "\t")):
        path = write(tmp_path / name, table(separator))
        code, out, err = cli.main("run", "spcart", "-d", str(path), "-r", "2", "--json")
        assert code == 0, err
        assert json.loads(out)["feature_names"] == list(NAMES)


@pytest.mark.parametrize(("make", "phrase"), [
    (lambda d: "", "the data source is empty"),
    (lambda d: str(write(d / "h.csv", "1,2\n3,4\n")), "header line is missing"),
    (lambda d: str(write(d / "f.csv", 'a,b\n1,"2\n' + "3,4\n" * 40000)), "longer than 131,072 characters"),
    (lambda d: (np.save(d / "s.npy", np.array([["a", "b"]] * 3)), str(d / "s.npy"))[1], "array of text"),
    (lambda d: (np.savez(d / "n.npz", X=X, names=np.array(["a"])), str(d / "n.npz"))[1], "'names' has 1 entry but"),
    (lambda d: (np.save(d / "o.npy", X * 1e200), str(d / "o.npy"))[1], "too large for a covariance"),
])  # fmt: skip
def test_cli_refuses_bad_data_with_exit_2_and_one_line(cli, tmp_path, make, phrase):
    code, out, err = cli.main("run", "spcart", "-d", make(tmp_path))
    assert code == 2 and out == "" and "Traceback" not in err
    assert err.startswith("Error: ") and len(err.strip().splitlines()) == 1 and phrase in err
