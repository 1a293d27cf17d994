"""Writing never loses the result.

The console script runs in a child process where the standard output itself is under test (an encoding
that cannot hold the names, a full device, a closed descriptor); the pieces it is made of are tested here
directly: :class:`~spcakit.output.stdout.GuardedStdout`, :func:`~spcakit.output.json_values.json_value` and the rule for
write-protected files.
"""

from __future__ import annotations

import errno
import io
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from spcakit.output.stdout import GuardedStdout
from spcakit.output.json_values import NotJsonError, json_value
from spcakit.output.files import OutputError, check_output, write_output

GREEK = ("α", "β", "γ", "δ")


def spcakit_process(*args: object, env: dict[str, str] | None = None, **kwargs) -> subprocess.CompletedProcess:
    """The console script (``python -m spcakit``) in a child process: stdout as bytes (when captured), stderr
    as text (its escapes kept)."""
    done = subprocess.run([sys.executable, "-m", "spcakit", *map(str, args)], env={**os.environ, **(env or {})},
                          stderr=subprocess.PIPE, timeout=120, **kwargs)  # fmt: skip
    done.stderr = done.stderr.decode("latin-1")
    return done


@pytest.fixture(scope="module")
def greek(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("greek") / "greek.csv"
    values = np.random.default_rng(6).standard_normal((25, len(GREEK)))
    path.write_text(",".join(GREEK) + "\n" + "\n".join(",".join(repr(v) for v in row) for row in values.tolist()) + "\n",
                    encoding="utf-8")  # fmt: skip
    return path


# -- encodings -------------------------------------------------------------------------------------------------
def test_names_the_output_encoding_cannot_hold_are_escaped_with_a_warning(greek):
    done = spcakit_process("run", "spcart", "-d", greek, "-r", "1", "-k", "4", env={"PYTHONIOENCODING": "latin-1"},
                           stdout=subprocess.PIPE)  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = done.stdout.decode("latin-1")
    assert "\\u03b1" in text and "Component 1" in text and "Metrics" in text  # the whole table, α escaped
    assert "warning: the standard output's encoding (iso8859-1) cannot write" in done.stderr  # Python's name of it
    assert "PYTHONIOENCODING=utf-8" in done.stderr and "Traceback" not in done.stderr


def test_json_output_stays_valid_and_reads_back_the_names_in_any_encoding(greek):
    done = spcakit_process("run", "spcart", "-d", greek, "-r", "1", "--json", env={"PYTHONIOENCODING": "ascii"},
                           stdout=subprocess.PIPE)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.decode("ascii"))["feature_names"] == list(GREEK)


def test_the_escape_is_json_for_characters_beyond_the_basic_plane():
    raw = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    seen = []
    guard = GuardedStdout(raw, on_escape=lambda char, encoding: seen.append((char, encoding)))
    guard.write(json.dumps({"name": "é😀"}, ensure_ascii=False))
    guard.write("ω")
    guard.flush()
    written = raw.buffer.getvalue().decode("ascii")
    assert json.loads(written[: -len("\\u03c9")]) == {"name": "é😀"} and written.endswith("\\u03c9")
    assert seen == [("é", "ascii")]  # one warning, at the first


# -- standard output that cannot be written ---------------------------------------------------------------------
class Failing(io.StringIO):
    def write(self, text):
        raise OSError(errno.ENOSPC, "No space left on device")


def test_a_guarded_stream_records_a_failure_instead_of_raising():
    guard = GuardedStdout(Failing())
    assert guard.write("result\n") == len("result\n") and guard.write("more") == 4
    assert guard.failure is not None and guard.failure.errno == errno.ENOSPC
    closed = GuardedStdout(None)
    assert closed.write("") == 0 and closed.failure is None  # nothing to write, nothing lost
    closed.write("x")
    assert closed.failure is not None and closed.failure.errno == errno.EBADF
    with pytest.raises(TypeError):
        closed.write(b"bytes")  # a text stream: click and rich recognise it as one


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_device_is_exit_2_with_a_message():
    with open("/dev/full", "w") as full:
        done = spcakit_process("run", "spcart", "-d", "builtin:pitprops", stdout=full)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        "Error: cannot write to standard output (No space left on device); nothing was kept: run again with --out "
        "FILE to write the result to a file"
    )
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr


def test_a_closed_standard_output_is_exit_2_and_the_out_file_keeps_the_result(tmp_path):
    out = tmp_path / "r.json"
    command = [sys.executable, "-m", "spcakit", "run", "spcart", "-d", "builtin:pitprops", "--out", str(out)]
    done = subprocess.run(["sh", "-c", 'exec "$@" >&-', "sh", *command], stderr=subprocess.PIPE, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 2
    assert f"Error: cannot write to standard output (standard output is closed); the result is in --out {out}" \
        in done.stderr
    assert json.loads(out.read_text())["method"] == "spcart"


# -- JSON values -----------------------------------------------------------------------------------------------
def test_json_value_makes_plain_json_and_says_where_it_cannot():
    seen = []
    value = json_value({"a": (np.int64(3), {2, 1}), "b": [np.float32(0.5), float("nan")], "c": np.bool_(True)},
                       seen.append)  # fmt: skip
    assert value == {"a": [3, [1, 2]], "b": [0.5, None], "c": True}
    assert len(seen) == 1 and math_isnan(seen[0])
    assert json.loads(json.dumps(value, allow_nan=False)) == value
    with pytest.raises(NotJsonError, match=r"\.b\[1\] is a object, which JSON cannot hold"):
        json_value({"b": [1, object()]})
    with pytest.raises(NotJsonError, match="key 3"):
        json_value({3: "x"})


def math_isnan(value: float) -> bool:
    return value != value


# -- write-protected targets -----------------------------------------------------------------------------------
@pytest.fixture
def protected(tmp_path: Path) -> Path:
    path = tmp_path / "kept.json"
    path.write_text("previous\n")
    path.chmod(0o444)
    yield path
    path.chmod(0o644)


def test_a_write_protected_file_is_never_replaced_even_by_root(protected):
    with pytest.raises(OutputError, match=r"--out .*kept.json is write-protected \(mode 444\); spcakit never replaces "
                                          r"a read-only file: make it writable \(chmod u\+w"):
        check_output(protected)
    with pytest.raises(PermissionError, match="write-protected"):
        write_output(protected, "new")
    assert protected.read_text() == "previous\n" and stat.S_IMODE(protected.stat().st_mode) == 0o444


def test_the_cli_refuses_a_write_protected_out_before_any_work(protected):
    done = spcakit_process("run", "spcart", "-d", "builtin:pitprops", "--out", protected, stdout=subprocess.PIPE)
    assert done.returncode == 2 and "is write-protected (mode 444)" in done.stderr and not done.stdout
    assert protected.read_text() == "previous\n"


def test_a_writable_file_and_a_long_name_are_still_written(tmp_path):
    long = tmp_path / ("r" * 240 + ".json")
    write_output(long, "{}")
    assert long.read_text() == "{}" and [p.name for p in tmp_path.iterdir()] == [long.name]  # no temporary left


# -- the figure's resolution and size --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def path_json(cli, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("plot") / "p.json"
    ran = cli.main("path", "spcart", "-d", "builtin:pitprops", "-r", "1", "-k", "1:3", "--json", "--out", path)
    assert ran.code == 0, ran.output
    return path


def plot_refused(cli, *args: object) -> str:
    ran = cli.main(*args)
    err = ran.err
    assert ran.code == 2, err
    assert "Traceback" not in err and "Internal error" not in err and "MemoryError" not in err
    return err


@pytest.mark.parametrize("dpi", ["100000", "5", "0", "nan", "inf"])
def test_a_dpi_outside_the_range_is_refused_before_any_work(cli, path_json, tmp_path, dpi):
    pytest.importorskip("matplotlib")
    out = tmp_path / "f.png"
    err = plot_refused(cli, "plot", "path", path_json, "--out", out, "--dpi", dpi)
    assert "dpi must be a positive number of dots per inch from 10 to 2400 (spcakit.plotting.DPI_RANGE" in err
    assert not out.exists()


@pytest.mark.parametrize("size", [["--dpi", "2400"], ["--width", "1000", "--height", "1000"], ["--width", "700"]])
def test_a_figure_of_too_many_pixels_is_refused_before_it_is_rendered(cli, path_json, tmp_path, size):
    pytest.importorskip("matplotlib")
    from spcakit import plotting

    out = tmp_path / "f.png"
    err = plot_refused(cli, "plot", "path", path_json, "--out", out, *size)
    assert f"spcakit renders at most {plotting.MAX_PIXELS:,} pixels" in err and "lower the dpi, the width or the height" in err
    assert not out.exists()


def test_the_pixel_rule_holds_in_the_api_too(tmp_path):
    pytest.importorskip("matplotlib")
    from spcakit import plotting
    from spcakit.core.errors import InvalidParameterError

    figure = plotting.plot_tradeoff([1, 2, 3], [0.2, 0.3, 0.4], ceiling=0.5)
    with pytest.raises(InvalidParameterError, match=r"the figure would be [\d,]+ x [\d,]+ pixels"):
        plotting.save(figure, tmp_path / "f.png", dpi=2400)
    with pytest.raises(InvalidParameterError, match="from 10 to 2400"):
        plotting.save(figure, tmp_path / "f.png", dpi=True)
    assert not (tmp_path / "f.png").exists()
    plotting.save(figure, tmp_path / "f.png", dpi=10)  # the range's ends are valid
    assert (tmp_path / "f.png").stat().st_size > 0


# -- python -m spcakit.cli ------------------------------------------------------------------------------------
def test_python_m_spcakit_cli_guards_its_standard_output_too(tmp_path):
    out = tmp_path / "r.json"
    command = [sys.executable, "-m", "spcakit.cli", "run", "spcart", "-d", "builtin:pitprops", "--out", str(out)]
    done = subprocess.run(["sh", "-c", 'exec "$@" >&-', "sh", *command], stderr=subprocess.PIPE, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert f"Error: cannot write to standard output (standard output is closed); the result is in --out {out}" \
        in done.stderr
    assert json.loads(out.read_text())["method"] == "spcart"
