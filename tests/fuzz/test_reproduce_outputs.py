"""``spcakit reproduce --out`` against any state of the output folder and any experiment name.

A sweep writes a set of four files (``NAME.csv``, ``.json``, ``.svg``, ``.md``). Each may already exist as a file, a
write-protected file, a link to the data, a link to a file elsewhere, a dangling link or a folder; the data file
itself may sit in the output folder under an output's name; the spec's ``name`` may be any short text, path-like
ones included. Whatever is drawn, the command exits 0 or 2 with a message, and:

- the data file never changes, and no file outside the output folder is created or changed, except the target of a
  link the user placed there (written through, as ``run --out`` does);
- a refusal or a failure leaves every file of the output folder as it was (the set is written all or nothing);
- links stay links, and no temporary file is left behind.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fuzz.conftest import FUZZ, assert_contract, digest

pytest.importorskip("matplotlib")

SWEEP = """name = "{name}"
kind = "sweep"
title = "A one-row sweep"
data = "{data}"
r = 2
columns = ["nz", "cpev"]

[[rows]]
label = "TPower, r = 3"
method = "tpower"
params = {{ k = 3 }}

[sweep]
dataset = "d"
series = ["TPower"]
panels = [{{ column = "cpev", label = "CPEV" }}]
plot_title = "d"
reduced = [3]
"""

SUFFIXES = ("csv", "json", "svg", "md")
STATES = ("absent", "absent", "absent", "file", "file", "read-only", "link-to-data", "link-elsewhere", "dangling-link", "folder")
NAMES = st.one_of(  # a plain name most often, so that most examples reach the writer
    st.just("mini"), st.just("mini"), st.just("mini"),
    st.sampled_from(["../../escaped", "/tmp/absolute-name", "a/b", ".hidden", "x\\y", "..", ".", "~", "-n"]),
    st.text(alphabet="ab./\\~-_ ", min_size=1, max_size=8),
)


def _toml_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _snapshot(root: Path) -> dict[Path, object]:
    """Every entry under ``root``: a file's digest, a link's target, a folder as ``"dir"``."""
    out: dict[Path, object] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for entry in [*dirnames, *filenames]:
            path = Path(dirpath) / entry
            out[path] = ("link", os.readlink(path)) if path.is_symlink() else ("dir" if path.is_dir() else digest(path))
    return out


@settings(FUZZ, max_examples=min(FUZZ.max_examples, 60))
@given(name=NAMES, states=st.fixed_dictionaries({s: st.sampled_from(STATES) for s in SUFFIXES}),
       data_in_out=st.booleans())  # fmt: skip
def test_reproduce_writes_only_inside_its_folder_and_all_or_nothing(cli, tmp_path_factory, name, states, data_in_out):
    root = tmp_path_factory.mktemp("reproduce")
    out = root / "out"
    out.mkdir()
    plain = "/" not in name and "\\" not in name and name not in (".", "..") and not name.startswith(".")
    stem = name if plain else "mini"
    data = (out / f"{stem}.csv") if data_in_out else (root / "d.csv")
    np.savetxt(data, np.random.default_rng(4).standard_normal((30, 6)), delimiter=",", header="a,b,c,d,e,f",
               comments="")  # fmt: skip
    elsewhere = root / "elsewhere.txt"
    elsewhere.write_text("someone else's file\n")
    for suffix, state in states.items():
        path = out / f"{stem}.{suffix}"
        if path == data or state == "absent":
            continue
        if state in ("file", "read-only"):
            path.write_text(f"old {suffix}\n")
            if state == "read-only":
                path.chmod(0o444)
        elif state == "link-to-data":
            path.symlink_to(data)
        elif state == "link-elsewhere":
            path.symlink_to(elsewhere)
        elif state == "dangling-link":
            path.symlink_to(root / "nowhere.txt")
        else:
            path.mkdir()
    spec = root / "spec.toml"
    spec.write_text(SWEEP.format(name=_toml_string(name), data=_toml_string(str(data))), encoding="utf-8")
    linked_elsewhere = any(state == "link-elsewhere" for state in states.values())
    before = _snapshot(root)
    before_data = digest(data)
    try:
        code, text = cli.main("reproduce", spec, "--out", out, "--reduced").code_and_output
    finally:
        for path in out.glob("*"):
            if path.is_file() and not path.is_symlink():
                path.chmod(0o644)
    assert_contract(code, text)
    after = _snapshot(root)
    assert digest(data) == before_data, "the data file changed"
    outside = {p for p in set(before) | set(after) if out not in p.parents and p != out}
    changed_outside = {p for p in outside if before.get(p) != after.get(p)}
    allowed = {elsewhere, root / "nowhere.txt"} if code == 0 else set()  # targets of links the user placed
    assert changed_outside <= allowed, f"written outside --out: {changed_outside}"
    if elsewhere in changed_outside:
        assert linked_elsewhere
    if (root / "nowhere.txt") in changed_outside:
        assert "dangling-link" in states.values()
    if code != 0:
        assert after == before, "a refusal changed the output folder"
    else:
        assert plain, f"the experiment name {name!r} should have been refused"
        for suffix in SUFFIXES:
            assert (out / f"{stem}.{suffix}").exists(), f"{stem}.{suffix} was not written"
    for suffix, state in states.items():
        path = out / f"{stem}.{suffix}"
        if state.endswith("link") or state.startswith("link"):
            assert path.is_symlink() or path == data, f"the link {path.name} was replaced"
    leftovers = [p for p in root.rglob("*") if p.suffix == ".tmp" or (p.name.startswith(".") and p.parent == out)]
    assert not leftovers, f"temporary files left behind: {leftovers}"
