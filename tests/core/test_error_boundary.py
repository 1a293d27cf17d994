"""The command line's one error boundary: 0, 2 (bad input), 130 (interrupted) or 1 (internal, named)."""

from __future__ import annotations

import numpy as np
import pytest

import spcakit
from spcakit import cli
from spcakit.errors import PartFailure
from spcakit.plugins import PluginSession


def run_main(capsys, *args: str) -> tuple[int, str]:
    with pytest.raises(SystemExit) as info:
        cli.main(list(args))
    captured = capsys.readouterr()
    return info.value.code, captured.out + captured.err


def test_success_bad_input_and_usage_errors(capsys, tmp_path):
    assert run_main(capsys, "run", "spcart", "-r", "2")[0] == 0
    code, text = run_main(capsys, "run", "nope")
    assert code == 2 and "unknown method 'nope'" in text
    code, text = run_main(capsys, "run", "spcart", "--bogus")
    assert code == 2 and "No such option" in text and "Traceback" not in text
    empty = tmp_path / "empty.npy"
    empty.write_bytes(b"")
    code, text = run_main(capsys, "run", "spcart", "-d", str(empty))
    assert code == 2 and "empty or cut short" in text and "Aborted" not in text


@pytest.mark.parametrize(("content", "message"), [(b"", "empty or cut short"), (b"PK\x03\x04junk", "not a valid .npz")])
def test_damaged_numpy_files_are_bad_input(tmp_path, content, message):
    path = tmp_path / ("x.npz" if content else "x.npy")
    path.write_bytes(content)
    with pytest.raises(spcakit.InvalidDataError, match=message):
        spcakit.fit(str(path))


def test_object_arrays_are_refused_without_numpy_s_unsafe_advice(tmp_path):
    path = tmp_path / "x.npy"
    np.save(path, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(spcakit.InvalidDataError) as info:
        spcakit.fit(str(path))
    assert "pickle" not in str(info.value) and "numeric array" in str(info.value)


@spcakit.part("test-broken-truncator")
class Broken(spcakit.Truncator):
    """raises inside its step"""

    def __call__(self, z):
        return 1 / 0


class _BrokenPlugin:
    @spcakit.hookimpl
    def spcakit_register_parts(self, register):
        register(Broken)


@pytest.fixture
def broken_registry():
    session = spcakit.plugins.get_session()
    session.add(_BrokenPlugin(), "broken-test")
    try:
        yield session.registry
    finally:
        session.remove("broken-test")


def test_a_failing_part_is_named_with_its_plugin(broken_registry):
    with pytest.raises(PartFailure) as info:
        spcakit.fit("builtin:pitprops", "spcart", r=2, truncator="test-broken-truncator")
    message = str(info.value)
    assert "truncator 'test-broken-truncator' (plugin 'broken-test')" in message and "ZeroDivisionError" in message
    assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_the_cli_reports_an_internal_error_without_traceback_unless_debug(broken_registry, capsys, monkeypatch):
    monkeypatch.delenv("SPCAKIT_DEBUG", raising=False)
    code, text = run_main(capsys, "run", "spcart", "-r", "2", "--truncator", "test-broken-truncator")
    assert code == 1 and "Internal error" in text and "'broken-test'" in text and "Traceback" not in text
    code, text = run_main(capsys, "run", "spcart", "-r", "2", "--truncator", "test-broken-truncator", "--debug")
    assert code == 1 and "Traceback" in text


def test_an_interruption_says_interrupted_and_exits_130(capsys, monkeypatch):
    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "fit", interrupt)
    code, text = run_main(capsys, "run", "spcart")
    assert code == 130 and "interrupted" in text and "Traceback" not in text


class _ExitingPlugin:
    @spcakit.hookimpl
    def spcakit_register_parts(self, register):
        raise SystemExit(3)


def test_a_plugin_that_exits_is_contained_and_named():
    session = PluginSession()
    record = session.add(_ExitingPlugin(), "exiting")
    assert record.error is not None and "SystemExit" in record.error
    assert session.failures() == [record]
