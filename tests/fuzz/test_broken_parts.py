"""Fuzzing plugin parts that return garbage or raise: the run fails with the part and its plugin named.

A part whose output happens to be usable may succeed; anything else is a PartFailure from the API and
exit 1 ("Internal error", the part and the plugin named, no traceback) from the command line.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import spcakit
from spcakit.core.errors import PartFailure, SpcakitError

from .conftest import FUZZ, assert_contract, installed

PLUGIN = "fuzz-garbage"
#: what the part under test returns or raises this example (set by the test before each run)
BEHAVIOUR: dict[str, object] = {}


class _PluginError(Exception):
    pass


class _PluginBase(BaseException):
    """A BaseException subclass that is not an exit or an interruption."""


class _Raise:
    def __init__(self, make):
        self.make = make

    def __repr__(self):
        return f"raises {type(self.make()).__name__}"


def _act(default):
    action = BEHAVIOUR.get("action")
    if isinstance(action, _Raise):
        raise action.make()
    if callable(action):
        return action(default)
    return default


@spcakit.part("fuzz-truncator")
class FuzzTruncator(spcakit.Truncator):
    """returns what the test says"""

    def __call__(self, z):
        return _act(z)


@spcakit.part("fuzz-stopper")
class FuzzStopper(spcakit.Stopper):
    """returns what the test says"""

    def __call__(self, state):
        if state.iteration >= 5:  # a stopper that never stops is a hang, not garbage: out of scope here
            return "max-iterations"
        return _act(None)


@spcakit.part("fuzz-initializer")
class FuzzInitializer(spcakit.Initializer):
    """returns what the test says"""

    def __call__(self, problem, r, rng, carry):
        return _act(np.linalg.qr(rng.standard_normal((problem.p, r)))[0])


@spcakit.part("fuzz-deflator")
class FuzzDeflator(spcakit.Deflator):
    """returns what the test says"""

    def __call__(self, problem, x, previous, carry):
        return _act((problem, carry))


class _Plugin:
    @spcakit.hookimpl
    def spcakit_register_parts(self, register):
        register([FuzzTruncator, FuzzStopper, FuzzInitializer, FuzzDeflator])


@pytest.fixture(scope="module", autouse=True)
def fuzz_plugin():
    with installed(_Plugin(), PLUGIN):
        yield


def _array(shape, fill):
    return lambda default: np.full(shape, fill)


garbage = st.one_of(
    st.sampled_from([None, 42, "text", [], {}, (1, 2), b"bytes", object()]).map(lambda g: (lambda default: g)),
    st.tuples(st.integers(0, 14), st.integers(0, 4), st.sampled_from([0.0, 1.0, np.nan, np.inf, -np.inf, 1e308]))
    .map(lambda t: _array(t[:2], t[2])),
    st.sampled_from([np.float32, np.int64, np.complex128, object, bool]).map(
        lambda dt: (lambda default: np.asarray(default).astype(dt) if not isinstance(default, tuple) else default)),
    st.sampled_from([  # a fresh exception each time (a raised instance keeps its old traceback)
        lambda: _PluginError("boom"), lambda: ZeroDivisionError("division"), lambda: np.linalg.LinAlgError("singular"),
        MemoryError, RecursionError, lambda: _PluginBase("base"), GeneratorExit, StopIteration,
        lambda: SystemExit(3), AssertionError,
    ]).map(lambda make: _Raise(make)),
    st.just(lambda default: default),  # a well-behaved part: must succeed
)

ROLES = {
    "truncator": ("spcart", {"truncator": "fuzz-truncator"}, ["--truncator", "fuzz-truncator"]),
    "stopper": ("spcart", {"stopper": "fuzz-stopper"}, None),
    "initializer": (None, {"initializer": "fuzz-initializer"}, ["--initializer", "fuzz-initializer"]),
    "deflator": ("tpower", {"deflator": "fuzz-deflator", "truncator.k": 3}, ["--deflator", "fuzz-deflator"]),
}


def _fit(role):
    method, options, _ = ROLES[role]
    options = dict(options)
    if method is None:
        method = spcakit.compose(driver="block", initializer=options.pop("initializer"))
    return spcakit.fit("builtin:pitprops", method, r=2, seed=0, **options)


@FUZZ
@given(role=st.sampled_from(sorted(ROLES)), action=garbage)
def test_the_api_names_the_part_and_its_plugin(role, action):
    BEHAVIOUR["action"] = action
    try:
        result = _fit(role)
    except PartFailure as exc:
        assert f"plugin {PLUGIN!r}" in str(exc) and f"fuzz-{role}" in str(exc)
    except SpcakitError:
        pass  # e.g. a part's output made the problem invalid, reported as such
    else:
        assert np.all(np.isfinite(result.loadings)) and result.loadings.shape == (13, 2)
    finally:
        BEHAVIOUR.clear()


@FUZZ
@given(role=st.sampled_from(sorted(r for r, (_, _, cli) in ROLES.items() if cli)), action=garbage)
def test_the_command_line_names_the_part_and_exits_1(cli, role, action):
    method, _, options = ROLES[role]
    args = ["run", method] if method else ["compose", "--driver", "block"]
    if role == "deflator":
        args += ["--param", "k=3"]
    BEHAVIOUR["action"] = action
    try:
        code, text = cli.main(*args, "-r", "2", *options).code_and_output
    finally:
        BEHAVIOUR.clear()
    if code == 1:
        assert "Internal error" in text and f"fuzz-{role}" in text and PLUGIN in text and "Traceback" not in text
    else:
        assert_contract(code, text)
