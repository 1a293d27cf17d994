"""Fuzzing the input classes: Zarr stores with lost or damaged chunks and outputs aimed inside them,
files whose headers declare any shape, and text nested or numbered beyond reason.

Whatever arrives, the command line ends in 0 or 2 without a traceback, quickly (a declared size is never
believed before it is checked), and no file of an input changes.
"""

from __future__ import annotations

import hashlib
import json
import time
import tomllib
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spcakit.core.errors import InvalidDataError
from spcakit.core import documents
from spcakit.inputs import limits

from .conftest import EXAMPLES, FUZZ, assert_contract

#: Examples that write a store or run a fit each: fewer of them by default (the fuzz suite runs in CI in 60 s).
FEW = settings(FUZZ, max_examples=EXAMPLES or 15)
SOME = settings(FUZZ, max_examples=EXAMPLES or 40)
#: Memory the size checks assume, the same on every machine (a declared size above it is refused).
ONE_GIB = 1 << 30


def tree_digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


def timed(cli, *args: object) -> tuple[int, str]:
    start = time.monotonic()
    code, text = cli.main(*(str(a) for a in args)).code_and_output
    assert time.monotonic() - start < 20, f"{args}: too slow for what the file holds"
    return code, text


# -- stores ----------------------------------------------------------------------------------------------
@FEW
@given(
    rows=st.integers(2, 30), columns=st.integers(1, 6), chunk_rows=st.integers(1, 12),
    deleted=st.integers(0, 3), corrupted=st.integers(0, 2), garbage=st.binary(max_size=40),
    allow=st.booleans(), out_inside=st.sampled_from([None, "zarr.json", "chunk", "new.json", "c/new.json"]),
    seed=st.integers(0, 3),
)  # fmt: skip
def test_stores_with_lost_or_damaged_chunks(cli, tmp_path_factory, rows, columns, chunk_rows, deleted, corrupted,
                                             garbage, allow, out_inside, seed):  # fmt: skip
    zarr = pytest.importorskip("zarr")
    pytest.importorskip("dask.array")
    store = tmp_path_factory.mktemp("store") / "s.zarr"
    array = zarr.open_array(str(store), mode="w", shape=(rows, columns), chunks=(chunk_rows, columns), dtype="f8")
    array[:] = np.random.default_rng(seed).standard_normal((rows, columns))
    chunks = sorted(p for p in store.rglob("*") if p.is_file() and p.name != "zarr.json")
    rng = np.random.default_rng(seed)
    for path in rng.permutation(chunks)[:deleted]:
        Path(path).unlink()
    left = [p for p in chunks if p.exists()]
    for path in rng.permutation(left)[:corrupted]:
        Path(path).write_bytes(garbage)
    args = ["run", "spcart", "-d", store, "-r", "1", *(["--allow-missing-chunks"] if allow else [])]
    if out_inside is not None:
        left = [p for p in chunks if p.exists()]
        target = (left[0] if left else store / "c") if out_inside == "chunk" else store / out_inside
        args += ["--out", target]
    before = tree_digest(store)
    code, text = timed(cli, *args)
    assert_contract(code, text)
    assert tree_digest(store) == before
    if out_inside is not None:
        assert code == 2 and ("lies inside the Zarr store" in text or "is a directory" in text), text
    elif deleted and not allow:
        assert code == 2 and "chunks" in text, text


# -- declared sizes --------------------------------------------------------------------------------------
#: Small enough to fit in a moment, or far too large to be believed: nothing in between, which would be fitted.
dimension = st.integers(0, 40) | st.integers(10**8, 10**15) | st.sampled_from([10**9, 2**31, 2**63 - 1])


@SOME
@given(rows=dimension, columns=dimension, entries=dimension, field=st.sampled_from(["real", "integer", "pattern"]),
       lines=st.lists(st.tuples(st.integers(1, 60), st.integers(1, 60), st.floats(-10, 10)), max_size=5))  # fmt: skip
def test_mtx_headers_declare_any_shape(cli, tmp_path_factory, rows, columns, entries, field, lines):
    path = tmp_path_factory.mktemp("mtx") / "x.mtx"
    body = "".join(f"{i} {j}\n" if field == "pattern" else f"{i} {j} {int(v) if field == 'integer' else v}\n" for i, j, v in lines)
    path.write_text(f"%%MatrixMarket matrix coordinate {field} general\n{rows} {columns} {entries}\n{body}")
    with mock.patch.object(limits, "memory_limit", lambda: ONE_GIB):
        assert_contract(*timed(cli, "run", "spcart", "-d", path, "-r", "1"))


@SOME
@given(fmt=st.sampled_from(["csr", "csc", "coo"]), small=st.integers(2, 40), large=dimension,
       stored=st.integers(0, 6), seed=st.integers(0, 5))  # fmt: skip
def test_sparse_npz_shapes_are_checked_before_they_are_built(cli, tmp_path_factory, fmt, small, large, stored, seed):
    sp = pytest.importorskip("scipy.sparse")
    rng = np.random.default_rng(seed)
    large = max(large, 1)
    shape = (large, small) if fmt == "csc" else (small, large)
    inner, outer = (shape[0], shape[1]) if fmt == "csc" else (shape[1], shape[0])  # indices run along inner
    data = rng.standard_normal(stored)
    indices = rng.integers(0, min(inner, 2**31 - 1), size=stored)
    path = tmp_path_factory.mktemp("npz") / "x.npz"
    if fmt == "coo":
        np.savez(path, format=np.array("coo"), shape=np.array(shape, dtype=np.int64), data=data,
                 row=rng.integers(0, min(shape[0], 2**31 - 1), size=stored), col=indices)  # fmt: skip
    else:
        pointers = np.sort(rng.integers(0, stored + 1, size=outer + 1))
        pointers[0], pointers[-1] = 0, stored
        matrix = getattr(sp, f"{fmt}_array")((data, indices, pointers), shape=shape)
        sp.save_npz(path, matrix)
    with mock.patch.object(limits, "memory_limit", lambda: ONE_GIB):
        assert_contract(*timed(cli, "run", "spcart", "-d", path, "-r", "1"))


@SOME
@given(n=dimension, p=dimension)
def test_generated_data_are_measured_first(cli, n, p):
    with mock.patch.object(limits, "memory_limit", lambda: ONE_GIB):
        assert_contract(*timed(cli, "run", "spcart", "-d", f"builtin:random?n={n}&p={p}", "-r", "1"))


# -- nesting and numbers ---------------------------------------------------------------------------------
brackets = st.lists(st.sampled_from("[{"), min_size=0, max_size=40).map("".join)


@st.composite
def nested_text(draw: st.DrawFn) -> str:
    """Valid-looking or broken nesting, from shallow to far beyond any limit, with long numbers now and then."""
    depth = draw(st.integers(0, 70) | st.sampled_from([999, 1001, 5000, 20000]))
    number = draw(st.sampled_from(["1", "0.5", "-3e2", "9" * 101, "9" * 5000, '"a[b"']))
    closing = draw(st.booleans())
    return "[" * depth + number + ("]" * depth if closing else "")


@SOME
@given(value=nested_text() | brackets)
def test_param_values_of_any_nesting(cli, value):
    assert_contract(*timed(cli, "run", "spcart", "--param", f"tol={value}"))


@FEW
@given(value=nested_text(), key=st.sampled_from(["spec", "format_version", "seed", "loadings", "extra"]))
def test_model_files_of_any_nesting(cli, tmp_path_factory, value, key):
    folder = tmp_path_factory.mktemp("model")
    model = folder / "m.json"
    code, text = cli.main("run", "spcart", "-d", "builtin:random?n=20&p=4", "-r", "1", "--save-model", str(model)).code_and_output
    assert code == 0, text
    document = json.loads(model.read_text())
    document[key] = "PLACEHOLDER"
    model.write_text(json.dumps(document).replace('"PLACEHOLDER"', value))
    assert_contract(*timed(cli, "transform", model, "-d", "builtin:random?n=20&p=4"), allowed=(2,))


@FUZZ
@given(value=nested_text(), prefix=st.sampled_from(["a = ", "a = { b = ", 'name = "x"\nv = ', "# [[[\nv = "]))
def test_toml_text_is_measured_before_it_is_parsed(value, prefix):
    text = prefix + value.replace("{", "[").replace("}", "]") + ("}" if "{" in prefix else "") + "\n"
    try:
        documents.check_toml_text(text, "spec.toml")
    except InvalidDataError as exc:
        assert "spec.toml" in str(exc)
        return
    try:  # within the limits the parser itself never recurses too deep, nor meets a number too long
        tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        pass
