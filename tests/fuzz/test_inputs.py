"""Fuzzing the data a user hands over: arrays, .npy/.npz files, CSV text, and where --out points.

Whatever arrives, the command line ends in 0 or 2 without a traceback and changes no file but a
successful ``--out``; the API returns a result or raises spcakit's own error, and never changes the
array it was given.
"""

from __future__ import annotations

import io
import zipfile

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import spcakit
from spcakit.core.errors import SpcakitError

from .conftest import FUZZ, assert_contract, digest

shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=6)
floats = st.floats(allow_nan=True, allow_infinity=True, width=64) | st.sampled_from([0.0, 1.0, 1e-300, 1e155, 1e308])
numeric_arrays = st.one_of(
    hnp.arrays(np.float64, shapes, elements=floats),
    hnp.arrays(np.float64, st.tuples(st.integers(2, 12), st.integers(1, 6)),
               elements=st.floats(-1e3, 1e3) | st.sampled_from([0.0, 1.0])),  # mostly valid data
    hnp.arrays(st.sampled_from([np.int64, np.int8, np.uint8, np.float32, np.float16, np.bool_, np.complex128]), shapes),
)
other_arrays = st.one_of(
    hnp.arrays(st.sampled_from(["U3", "S2", "datetime64[D]", "timedelta64[s]"]), shapes),
    hnp.arrays(np.dtype([("a", "f8"), ("b", "i4")]), st.tuples(st.integers(1, 4))),
)
arrays = numeric_arrays | other_arrays


@FUZZ
@given(x=arrays, covariance=st.booleans(), center=st.booleans())
def test_the_api_takes_any_array_and_never_changes_it(x, covariance, center):
    before = x.copy()
    try:
        result = spcakit.fit(x, "spcart", r=1, covariance=covariance, center=center)
    except SpcakitError:
        pass  # InvalidDataError, InvalidParameterError, ZeroLoadingError: a message, never a numpy traceback
    else:
        assert np.all(np.isfinite(result.loadings))
    assert x.tobytes() == before.tobytes() and x.shape == before.shape and x.dtype == before.dtype


@FUZZ
@given(x=arrays, r=st.integers(1, 3))
def test_npy_files(cli, tmp_path_factory, x, r):
    path = tmp_path_factory.mktemp("npy") / "x.npy"
    np.save(path, x)
    before = digest(path)
    assert_contract(*cli.main("run", "spcart", "-d", path, "-r", r).code_and_output)
    assert digest(path) == before


def _npy_bytes(x: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, x)
    return buffer.getvalue()


@FUZZ
@given(
    members=st.dictionaries(
        st.sampled_from(["X", "data", "cov", "C", "names", "feature_names", "other", "y"]),
        arrays | st.lists(st.text(max_size=4), max_size=7).map(np.array),
        max_size=3,
    ),
    cut=st.none() | st.integers(0, 400),
    junk=st.none() | st.binary(max_size=64),
)
def test_npz_archives(cli, tmp_path_factory, members, cut, junk):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for key, value in members.items():
            archive.writestr(f"{key}.npy", _npy_bytes(value))
        if junk is not None:
            archive.writestr("junk.npy", junk)
    content = buffer.getvalue()
    if cut is not None:
        content = content[:cut]
    path = tmp_path_factory.mktemp("npz") / "x.npz"
    path.write_bytes(content)
    assert_contract(*cli.main("run", "spcart", "-d", path, "-r", "1").code_and_output)
    assert path.read_bytes() == content


cell = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False, width=32).map(repr),
    st.integers(-99, 99).map(str),
    st.sampled_from(["", " ", "NA", "nan", "inf", "1,5", "1e999", "abc", '"3"', '"', "x\ny", "1;2", "\t", "-", "\u00e9"]),
)


@FUZZ
@given(
    header=st.one_of(st.none(), st.lists(st.text("abcxyz_ 1", min_size=0, max_size=4), min_size=1, max_size=5)),
    rows=st.lists(st.lists(cell, min_size=1, max_size=5), max_size=8),
    separator=st.sampled_from([",", ";", "\t", " "]),
    suffix=st.sampled_from([".csv", ".tsv"]),
    ending=st.sampled_from(["\n", "\r\n", "\r"]),
    encoding=st.sampled_from(["utf-8", "utf-8-sig", "latin-1", "utf-16"]),
)
def test_csv_text(cli, tmp_path_factory, header, rows, separator, suffix, ending, encoding):
    lines = ([separator.join(header)] if header is not None else []) + [separator.join(row) for row in rows]
    text = ending.join(lines) + ending
    path = tmp_path_factory.mktemp("csv") / f"x{suffix}"
    try:
        path.write_bytes(text.encode(encoding))
    except UnicodeEncodeError:
        path.write_bytes(text.encode("utf-8"))
    before = digest(path)
    assert_contract(*cli.main("run", "spcart", "-d", path, "-r", "1").code_and_output)
    assert digest(path) == before


@FUZZ
@given(raw=st.binary(max_size=300), suffix=st.sampled_from([".csv", ".npy", ".npz", ".tsv", ".txt", ""]))
def test_arbitrary_bytes_in_any_file_type(cli, tmp_path_factory, raw, suffix):
    path = tmp_path_factory.mktemp("raw") / f"x{suffix}"
    path.write_bytes(raw)
    assert_contract(*cli.main("run", "spcart", "-d", path, "-r", "1").code_and_output)
    assert path.read_bytes() == raw


# -- where --out points ------------------------------------------------------------------------------------
@FUZZ
@given(
    target=st.sampled_from(["new", "existing", "input", "input-link", "folder", "missing-folder", "link-to-existing",
                            "dangling-link", "read-only-folder"]),
    method=st.sampled_from(["spcart", "nope"]),
)
def test_out_never_destroys_a_file(cli, tmp_path_factory, target, method):
    root = tmp_path_factory.mktemp("out")
    data = root / "data.npy"
    np.save(data, np.random.default_rng(0).standard_normal((20, 5)))
    existing = root / "old.json"
    existing.write_text("previous result")
    paths = {
        "new": root / "new.json", "existing": existing, "input": data, "folder": root,
        "missing-folder": root / "no" / "such" / "x.json",
        "input-link": root / "link.npy", "link-to-existing": root / "link.json", "dangling-link": root / "dangling.json",
        "read-only-folder": root / "ro" / "x.json",
    }  # fmt: skip
    (root / "link.npy").symlink_to(data)
    (root / "link.json").symlink_to(existing)
    (root / "dangling.json").symlink_to(root / "nowhere.json")
    (root / "ro").mkdir()
    (root / "ro").chmod(0o555)
    files = [p for p in root.rglob("*") if p.is_file() and not p.is_symlink()]
    before = {p: digest(p) for p in files}
    code, text = cli.main("run", method, "-d", data, "-r", "2", "--out", paths[target]).code_and_output
    assert_contract(code, text)
    (root / "ro").chmod(0o755)
    changed = {p for p in files if digest(p) != before[p]}
    assert data not in changed
    if code != 0:
        assert not changed, f"a failed run changed {changed}"
    else:
        assert changed <= {existing}, changed  # only the --out target (through its link) may change
        if target in ("existing", "link-to-existing"):
            assert existing.read_text() != "previous result"
    assert (root / "link.npy").is_symlink() and (root / "link.json").is_symlink()
    leftovers = [p for p in root.rglob("*") if p.name.startswith(".") or p.suffix == ".tmp"]
    assert not leftovers, f"temporary files left behind: {leftovers}"
