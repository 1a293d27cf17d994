"""Fuzzing plugin metrics and what answers at a ``--scheduler`` address.

A plugin metric that returns anything, or raises anything, never costs the result: the run exits 0, its JSON is
valid (no NaN, no Infinity), and the metric is either recorded as JSON or left out with a warning naming it and
its plugin. A server that answers a scheduler's connection with any bytes is refused with a message naming
the address, within the timeout, and nothing else escapes.
"""

from __future__ import annotations

import contextlib
import json
import math
import socket
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spcakit
from spcakit.core.errors import InvalidParameterError
from spcakit.core.protocols import Metric

from .conftest import EXAMPLES, FUZZ, assert_contract, installed

PLUGIN = "fuzz-metrics"
#: what the metric under test returns or raises this example (set by the test before each run)
BEHAVIOUR: dict[str, object] = {}


class _Opaque:
    pass


def _compute(problem, loadings, context):
    action = BEHAVIOUR.get("action")
    if isinstance(action, BaseException):
        raise action
    return action


def _format(value):
    action = BEHAVIOUR.get("format")
    if isinstance(action, BaseException):
        raise action
    return action if action is not None else str(value)


class _Plugin:
    @spcakit.hookimpl
    def spcakit_register_metrics(self, register):
        register(Metric(name="fuzzed", label="fuzzed", compute=_compute, format=_format))


@pytest.fixture(scope="module", autouse=True)
def fuzz_plugin():
    with installed(_Plugin(), PLUGIN):
        yield


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("metrics") / "x.npy"
    np.save(path, np.random.default_rng(10).standard_normal((30, 5)))
    return path


numbers = st.one_of(st.integers(-(2**70), 2**70), st.floats(allow_nan=True, allow_infinity=True),
                    st.sampled_from([np.float64(np.nan), np.float32(np.inf), np.int64(7), np.bool_(True)]))  # fmt: skip
values = st.recursive(
    st.one_of(st.none(), st.booleans(), numbers, st.text(max_size=5), st.binary(max_size=3), st.just(_Opaque())),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.frozensets(st.integers(0, 9), max_size=4),
                            st.dictionaries(st.one_of(st.text(max_size=3), st.integers(0, 3)), inner, max_size=3),
                            st.lists(st.floats(), max_size=4).map(np.array)),
    max_leaves=8,
)  # fmt: skip
raised = st.sampled_from([ZeroDivisionError("metric"), ValueError("metric"), MemoryError(), RecursionError(),
                          KeyError("metric"), AssertionError()])  # fmt: skip
formats = st.one_of(st.none(), st.just(7), st.just(b"bytes"), raised)


def _finite_json(text: str) -> object:
    def refuse(name):
        raise AssertionError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


@FUZZ
@given(action=st.one_of(values, raised), shown=formats, as_json=st.booleans())
def test_a_metric_never_costs_the_result(cli, data, tmp_path_factory, action, shown, as_json):
    out = tmp_path_factory.mktemp("out") / "r.json"
    BEHAVIOUR.update(action=action, format=shown)
    try:
        code, text = cli.main("run", "spcart", "-d", data, "-r", "1", *(["--json"] if as_json else []), "--out", out).code_and_output
    finally:
        BEHAVIOUR.clear()
    assert code == 0, text
    assert_contract(code, text)
    document = _finite_json(out.read_text(encoding="utf-8"))
    metrics = document["metrics"]
    assert metrics["cpev"] > 0
    if "fuzzed" in metrics:
        assert json.loads(json.dumps(metrics["fuzzed"], allow_nan=False)) == metrics["fuzzed"]
    else:
        assert f"metric 'fuzzed' (plugin '{PLUGIN}')" in text
    if isinstance(action, float) and not math.isfinite(action):
        assert metrics["fuzzed"] is None and "recorded as null" in text


# -- what answers at a scheduler's address ---------------------------------------------------------------------
class _Server:
    """A TCP server on 127.0.0.1 sending ``reply`` to each connection, then closing it (or keeping it open)."""

    def __init__(self) -> None:
        self.reply, self.keep_open = b"", False
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.05)
        self.address = f"tcp://127.0.0.1:{self.server.getsockname()[1]}"
        self.running, self.open = True, []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while self.running:
            try:
                connection, _ = self.server.accept()
            except OSError:
                continue
            with contextlib.suppress(OSError):
                connection.sendall(self.reply)
            if self.keep_open:
                self.open.append(connection)
            else:
                connection.close()

    def stop(self) -> None:
        self.running = False
        self.thread.join(timeout=5)
        for connection in self.open:
            connection.close()
        self.server.close()


@pytest.fixture(scope="module")
def server():
    stub = _Server()
    yield stub
    stub.stop()


TIMEOUT = 0.3


@settings(FUZZ, max_examples=EXAMPLES or 30)
@given(reply=st.one_of(st.binary(max_size=64), st.sampled_from([
           b"HTTP/1.1 400 Bad Request\r\n\r\n", b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}", b"SSH-2.0-OpenSSH\r\n",
           (40).to_bytes(8, "little") + b"\x00" * 12, (2**40).to_bytes(8, "little"), (5).to_bytes(8, "little") + b"x" * 5,
       ])),  # fmt: skip
       keep_open=st.booleans())
def test_any_reply_at_the_address_is_refused_in_time(server, reply, keep_open):
    from spcakit.inputs.dask_arrays import ClusterError, connected

    server.reply, server.keep_open = reply, keep_open
    start = time.monotonic()
    with pytest.raises((ClusterError, InvalidParameterError)) as info:
        with connected(server.address, timeout=TIMEOUT):
            pass
    assert time.monotonic() - start < TIMEOUT + 3  # a greeting that passes the probe meets the client's own timeout
    assert f"--scheduler {server.address}" in str(info.value)
