"""``--out`` never destroys anything: not the input, not a symlink, not a device."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import numpy as np
import pytest

from spcakit.output.files import check_output, write_output


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "x.npy"
    np.save(path, np.random.default_rng(0).standard_normal((30, 6)))
    return path


@pytest.mark.parametrize("spelling", ["same", "dotted", "symlink", "hardlink"])
def test_out_refuses_the_input_file_under_any_name(cli, data: Path, spelling: str):
    before = data.read_bytes()
    out = {"same": data, "dotted": data.parent / "." / data.name}.get(spelling)
    if spelling == "symlink":
        out = data.parent / "link.npy"
        out.symlink_to(data)
    if spelling == "hardlink":
        out = data.parent / "hard.npy"
        os.link(data, out)
    result = cli.invoke("run", "spcart", "-d", str(data), "--out", str(out))
    assert result.exit_code == 2 and "would destroy the input" in result.output, result.output
    assert data.read_bytes() == before


def test_out_writes_through_a_symlink_and_keeps_the_link(cli, data: Path, tmp_path: Path):
    target = tmp_path / "result.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    result = cli.invoke("run", "spcart", "-d", str(data), "--json", "--out", str(link))
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and json.loads(target.read_text())["method"] == "spcart"


def test_out_streams_into_a_device_instead_of_replacing_it(cli, data: Path):
    before = os.stat("/dev/null")
    result = cli.invoke("run", "spcart", "-d", str(data), "--out", "/dev/null")
    assert result.exit_code == 0, result.output
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_ino == before.st_ino


def test_out_streams_into_a_fifo(tmp_path: Path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[str] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()), daemon=True)
    reader.start()
    write_output(fifo, '{"ok": true}\n')
    reader.join(timeout=10)
    assert received == ['{"ok": true}\n'] and stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_failed_write_keeps_the_old_file_and_prints_the_result(cli, data: Path, tmp_path: Path, monkeypatch):
    out = tmp_path / "result.json"
    out.write_text("previous")

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", refuse)  # the rename at the end of the atomic write fails
    result = cli.invoke("run", "spcart", "-d", str(data), "--out", str(out))
    assert result.exit_code == 2 and "cannot write --out" in result.output
    assert json.loads(result.stdout)["method"] == "spcart"  # the result is not lost
    assert out.read_text() == "previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.json", "x.npy"]  # no temporary file left


def test_an_atomic_write_keeps_the_permissions_of_the_file_it_replaces(tmp_path: Path):
    out = tmp_path / "r.json"
    out.write_text("old")
    out.chmod(0o640)
    write_output(out, "new")
    assert out.read_text() == "new" and stat.S_IMODE(out.stat().st_mode) == 0o640


def test_check_output_accepts_a_new_file_and_refuses_folders(tmp_path: Path):
    check_output(tmp_path / "new.json", [tmp_path / "absent.npy"])
    with pytest.raises(ValueError, match="is a directory"):
        check_output(tmp_path)
