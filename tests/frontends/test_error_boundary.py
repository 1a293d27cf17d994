"""The command line's one error boundary: 0, 2 (bad input), 130 (interrupted) or 1 (internal, named)."""

from __future__ import annotations


import attrs
import numpy as np
import pytest

import spcakit
from spcakit.core.errors import PartFailure
from spcakit.core.plugins import PluginSession


def test_success_bad_input_and_usage_errors(cli, tmp_path):
    assert cli.main("run", "spcart", "-r", "2").code == 0
    code, text = cli.main("run", "nope").code_and_output
    assert code == 2 and "unknown method 'nope'" in text
    code, text = cli.main("run", "spcart", "--bogus").code_and_output
    assert code == 2 and "No such option" in text and "Traceback" not in text
    empty = tmp_path / "empty.npy"
    empty.write_bytes(b"")
    code, text = cli.main("run", "spcart", "-d", str(empty)).code_and_output
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
    session = spcakit.core.plugins.get_session()
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


def test_the_cli_reports_an_internal_error_without_traceback_unless_debug(cli, broken_registry, monkeypatch):
    monkeypatch.delenv("SPCAKIT_DEBUG", raising=False)
    code, text = cli.main("run", "spcart", "-r", "2", "--truncator", "test-broken-truncator").code_and_output
    assert code == 1 and "Internal error" in text and "'broken-test'" in text and "Traceback" not in text
    code, text = cli.main("run", "spcart", "-r", "2", "--truncator", "test-broken-truncator", "--debug").code_and_output
    assert code == 1 and "Traceback" in text


def test_an_interruption_says_interrupted_and_exits_130(cli, monkeypatch):
    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("spcakit.cli.common.fit", interrupt)  # the fit every command runs through
    code, text = cli.main("run", "spcart").code_and_output
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


# -- part results are checked at the boundary -----------------------------------------------------------
@spcakit.part("test-shrinking-truncator")
class Shrinking(spcakit.Truncator):
    """returns one row too few"""

    def __call__(self, z):
        return z[:-1]


@spcakit.part("test-nan-truncator")
class NaNTruncator(spcakit.Truncator):
    """returns NaN"""

    def __call__(self, z):
        return np.full_like(z, np.nan)


@spcakit.part("test-answer-stopper")
class Answer(spcakit.Stopper):
    """returns 42 instead of a reason"""

    def __call__(self, state):
        return 42


@spcakit.part("test-nan-start")
class NaNStart(spcakit.Initializer):
    """starts from NaN"""

    def __call__(self, problem, r, rng, carry):
        return np.full((problem.p, r), np.nan)


@spcakit.part("test-bare-deflator")
class Bare(spcakit.Deflator):
    """returns the problem without the carry"""

    def __call__(self, problem, x, previous, carry):
        return problem


class _GarbagePlugin:
    @spcakit.hookimpl
    def spcakit_register_parts(self, register):
        register([Shrinking, NaNTruncator, Answer, NaNStart, Bare])


@pytest.fixture
def garbage():
    session = spcakit.core.plugins.get_session()
    session.add(_GarbagePlugin(), "garbage-test")
    try:
        yield
    finally:
        session.remove("garbage-test")


@pytest.mark.parametrize(("method", "options", "message"), [
    ("spcart", {"truncator": "test-shrinking-truncator"}, "truncator 'test-shrinking-truncator'.*shape"),
    ("spcart", {"truncator": "test-nan-truncator"}, "truncator 'test-nan-truncator'.*NaN"),
    ("spcart", {"stopper": "test-answer-stopper"}, "stopper 'test-answer-stopper'.*got 42"),
    ("tpower", {"deflator": "test-bare-deflator", "truncator.k": 3}, "deflator 'test-bare-deflator'.*\\(problem, carry\\)"),
])  # fmt: skip
def test_garbage_from_a_part_is_named_with_its_plugin(garbage, method, options, message):
    with pytest.raises(PartFailure, match=message) as info:
        spcakit.fit("builtin:pitprops", method, r=2, **options)
    assert "plugin 'garbage-test'" in str(info.value)


def test_a_nan_start_is_named(garbage):
    spec = spcakit.compose(driver="block", initializer="test-nan-start")
    with pytest.raises(PartFailure, match="initializer 'test-nan-start'.*NaN"):
        spcakit.fit("builtin:pitprops", spec, r=2)


# -- inputs: sizes, built-in parameters, constant columns at any scale ----------------------------------
@pytest.mark.parametrize(("source", "message"), [
    ("builtin:random?n=1000000000", "would take 373 GiB"),
    ("builtin:zou?h3_noise=-1", "a number in \\[0, 1e\\+12\\]"),
    ("builtin:zou?h3_noise=1e308", "a number in \\[0, 1e\\+12\\]"),
    ("builtin:zou?h3_noise=abc", "must be a number; got 'abc'"),
])  # fmt: skip
def test_built_in_generators_check_their_parameters_before_allocating(source, message):
    with pytest.raises(spcakit.InvalidDataError, match=message):
        spcakit.fit(source)


def test_constant_columns_are_detected_relative_to_each_column():
    x = np.random.default_rng(0).standard_normal((40, 5))
    small = spcakit.fit(x * 1e-13, "spcart", r=2)  # valid data at a small scale are not "constant"
    np.testing.assert_allclose(small.loadings, spcakit.fit(x, "spcart", r=2).loadings, atol=1e-10)
    big = x.copy()
    big[:, 0] *= 1e150  # one huge column does not make the others look constant
    assert spcakit.fit(big, "spcart", r=1).metrics["nz"] >= 1
    for value in (3.7, 0.0, 1e200):
        z = x.copy()
        z[:, 2] = value
        with pytest.warns(spcakit.ConstantColumnWarning, match=r"constant \(zero variance\): 2 \(x3\)"):
            result = spcakit.fit(z, "spcart", r=2)
        assert np.all(result.loadings[2] == 0)
        with pytest.raises(spcakit.InvalidDataError, match="constant"):
            spcakit.fit(np.tile(z[:, 2:3], (1, 3)), "spcart", r=1)  # every column constant


def test_data_whose_covariance_overflows_is_bad_input_not_a_crash():
    x = np.random.default_rng(0).standard_normal((40, 5)) * 1e160
    with pytest.raises(spcakit.InvalidDataError, match="too large for a covariance"):
        spcakit.fit(x, "spcart", r=2)


# -- listing parts works whatever one plugin's defaults do ------------------------------------------------
class _Unprintable:
    def __repr__(self):
        raise RuntimeError("no repr")


def _failing_factory():
    raise RuntimeError("factory fails")


@spcakit.part("test-odd-defaults")
class OddDefaults(spcakit.Truncator):
    """defaults that fail to compute or to print"""

    computed: object = attrs.field(factory=_failing_factory)
    shown: object = attrs.field(factory=_Unprintable)
    from_self: object = attrs.field(default=attrs.Factory(lambda self: self.shown, takes_self=True))

    def __call__(self, z):
        return z


class _OddPlugin:
    @spcakit.hookimpl
    def spcakit_register_parts(self, register):
        register(OddDefaults)


def test_listing_parts_survives_defaults_that_fail_to_compute_or_print(cli):
    session = spcakit.core.plugins.get_session()
    session.add(_OddPlugin(), "odd-test")
    try:
        for args in (("parts", "--role", "truncator"), ("parts", "--json")):
            code, text = cli.main(*args).code_and_output
            assert code == 0 and "test-odd-defaults" in text and "Traceback" not in text
            assert "<computed>" in text and "<_Unprintable>" in text
    finally:
        session.remove("odd-test")


# -- Ctrl-C at any moment, start-up included --------------------------------------------------------------
#: A child process that sends itself SIGINT at one moment of ``spcakit run``: when it first imports the module
#: named by its first argument, or (``step``) at the method's first update step; then runs the command line.
INTERRUPTED_AT = """
import importlib.abc, os, signal, sys

stage = sys.argv[1]


def interrupt():
    os.kill(os.getpid(), signal.SIGINT)  # a real SIGINT, delivered as a Ctrl-C would be


class InterruptOnImport(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == stage:
            sys.meta_path.remove(self)
            interrupt()
        return None


if stage == "step":
    import spcakit.core.drivers as drivers

    first_step = drivers.block_step

    def block_step(*args, **kwargs):
        interrupt()
        return first_step(*args, **kwargs)

    drivers.block_step = block_step
else:
    sys.meta_path.insert(0, InterruptOnImport())
sys.argv = ["spcakit", "run", "spcart", "-d", "builtin:random?n=300&p=40", "-r", "3"]
from spcakit.__main__ import main

main()
"""


@pytest.mark.parametrize("stage", ["typer", "spcakit.cli", "spcakit_spcart", "spcakit.workflows.fit", "step"])
def test_ctrl_c_during_start_up_or_run_says_interrupted_without_traceback(stage):
    """SIGINT while the command line imports its modules (typer, its own), loads the plugins, or runs: exit 130,
    "interrupted", no traceback. The process interrupts itself at that moment, so no test depends on timing."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", INTERRUPTED_AT, stage], capture_output=True, text=True, timeout=120)
    assert done.returncode == 130, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr and "KeyboardInterrupt" not in done.stderr
    assert "interrupted" in done.stderr
    assert done.stdout == ""  # nothing of a result was printed


def test_the_console_script_imports_with_the_collector_paused_and_runs_with_it_on():
    """``python -m spcakit``: the command line's imports with the cyclic garbage collector off (their objects are no
    garbage), then frozen, and the command with the collector on."""
    import subprocess
    import sys
    import textwrap

    probe = textwrap.dedent("""
        import gc, sys
        seen = {}

        class Spy:  # sees the import of the command line's package
            def find_spec(self, name, path=None, target=None):
                if name == "spcakit.cli":
                    seen["importing"] = gc.isenabled()
                return None

        sys.meta_path.insert(0, Spy())
        sys.argv = ["spcakit", "methods"]
        from spcakit.__main__ import main
        try:
            main()
        except SystemExit as exc:
            seen["code"] = exc.code
        print(seen["importing"], seen["code"], gc.isenabled(), gc.get_freeze_count() > 0, file=sys.stderr)
    """)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.stderr.strip().splitlines()[-1] == "False 0 True True", done.stderr


def test_a_command_that_gave_up_a_decomposition_at_its_time_limit_exits_at_once_with_its_status():
    """A decomposition abandoned at a time limit may still run in LAPACK when the command ends: the process ends
    with the command's exit status after its output (``os._exit``), neither waiting for it (the limit would be
    overrun) nor letting the libraries' exit handlers free its buffers under it. A subprocess stands a worker that
    is still running beside a command that succeeds; no timing is involved."""
    import subprocess
    import sys
    import textwrap

    probe = textwrap.dedent("""
        import sys, threading
        import spcakit.cli, spcakit.__main__
        from spcakit.numerics import linalg
        release = threading.Event()
        worker = threading.Thread(target=release.wait, daemon=True)  # stands for LAPACK, never released
        worker.start()
        linalg._abandon(worker)
        def command():
            print("the result")
            sys.exit(0)
        spcakit.cli.main = command
        spcakit.__main__.main()
        print("not reached: the process ends above")
    """)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "the result\n"
