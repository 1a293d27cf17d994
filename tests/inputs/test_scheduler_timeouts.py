"""Every wait on a cluster is bounded.

Stub servers on 127.0.0.1 stand in for what ``--scheduler`` may point at: a port that accepts connections and
never answers, an HTTP server. A ``distributed.LocalCluster`` in this process is the real scheduler whose
worker is lost, or whose computation stalls. Every timeout here is short (the defaults are documented in
docs/cli.md): no test waits more than a few seconds.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import spcakit
from spcakit.core.errors import InvalidParameterError
from spcakit.inputs import clusters
from spcakit.inputs.dask_arrays import ClusterError, connected, scheduler_address  # re-exported from clusters

dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")
zarr = pytest.importorskip("zarr")


class Stub:
    """A TCP server on 127.0.0.1 in a thread: ``reply`` is sent on each connection (after waiting ``delay``
    seconds for a request), or nothing when it is ``None``; :meth:`stop` closes everything."""

    def __init__(self, reply: bytes | None, delay: float = 0.2) -> None:
        self.reply, self.delay = reply, delay
        self.server = socket.create_server(("127.0.0.1", 0))
        self.address = f"tcp://127.0.0.1:{self.server.getsockname()[1]}"
        self.connections: list[socket.socket] = []
        self.running = True
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        self.server.settimeout(0.05)
        while self.running:
            try:
                connection, _ = self.server.accept()
            except (TimeoutError, OSError):
                continue
            self.connections.append(connection)
            if self.reply is not None:
                connection.settimeout(self.delay)
                with contextlib.suppress(OSError):
                    connection.recv(65536)
                with contextlib.suppress(OSError):
                    connection.sendall(self.reply)

    def stop(self) -> None:
        self.running = False
        self.thread.join(timeout=5)
        for connection in self.connections:
            connection.close()
        self.server.close()


@pytest.fixture
def silent():
    stub = Stub(None)
    yield stub
    stub.stop()


@pytest.fixture
def http():
    stub = Stub(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    yield stub
    stub.stop()


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("stores") / "x.zarr"
    z = zarr.create_array(store=str(path), shape=(40, 5), chunks=(10, 5), dtype="float64")
    z[:] = np.random.default_rng(29).standard_normal((40, 5))
    return path


@contextlib.contextmanager
def elapsed(at_most: float):
    start = time.monotonic()
    yield
    assert time.monotonic() - start < at_most


# -- connecting -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("address,message", [
    ("foo", "--scheduler foo: no host and port"),
    ("http://127.0.0.1:8787", "not http:// \\(a dashboard's http:// address is not the scheduler's\\)"),
    ("tcp://127.0.0.1:99999", "no host and port \\(1-65535\\)"),
    ("tcp://127.0.0.1:", "no host and port"),
    ("  ", "takes a scheduler's address"),
])  # fmt: skip
def test_an_address_that_is_no_scheduler_address_is_refused_before_connecting(address, message, monkeypatch):
    def no_client(*args, **kwargs):
        raise AssertionError("a client was made")

    monkeypatch.setattr(distributed, "Client", no_client)
    with elapsed(1.0), pytest.raises(InvalidParameterError, match=message):
        with connected(address):
            pass


def test_scheduler_addresses_are_read_as_host_and_port():
    assert scheduler_address("tcp://10.0.0.5:8786") == ("10.0.0.5", 8786)
    assert scheduler_address("node7:8786") == ("node7", 8786)
    assert scheduler_address("tcp://[::1]:8786") == ("::1", 8786)


def test_a_port_that_never_answers_is_refused_within_the_timeout(silent):
    with elapsed(3.0), pytest.raises(ClusterError, match=rf"--scheduler {silent.address}: no dask.distributed "
                                                         r"scheduler answered there within 0.5 s \(the port accepted"):
        with connected(silent.address, timeout=0.5):
            pass
    assert silent.connections  # it did connect, and waited no longer than asked


def test_an_http_server_is_refused_with_what_it_sent(http):
    with elapsed(3.0), pytest.raises(ClusterError, match=r"it sent 'HTTP/1.1'... \(an HTTP server's reply\), which "
                                                         "no scheduler sends"):
        with connected(http.address, timeout=2):
            pass


def test_the_cli_refuses_a_silent_port_with_exit_2_within_the_timeout(cli, silent, store, monkeypatch, tmp_path):
    monkeypatch.setenv("SPCAKIT_SCHEDULER_TIMEOUT", "0.5")
    out = tmp_path / "r.json"
    with elapsed(5.0):
        code, text, err = cli.main("run", "spcart", "-d", store, "--scheduler", silent.address, "--out", out)
    assert code == 2 and not text and not out.exists()
    assert f"Error: --scheduler {silent.address}: no dask.distributed scheduler answered there within 0.5 s" in err
    assert "Traceback" not in err and "Internal error" not in err


@pytest.mark.parametrize("value", ["abc", "0", "-1", "nan"])
def test_a_bad_timeout_setting_is_refused(value, monkeypatch, silent):
    monkeypatch.setenv("SPCAKIT_SCHEDULER_TIMEOUT", value)
    with pytest.raises(InvalidParameterError, match=f"the environment variable SPCAKIT_SCHEDULER_TIMEOUT is a number "
                                                    f"of seconds above 0; got '{value}'"):
        with connected(silent.address):
            pass


def test_a_refused_address_prints_no_client_traceback_later(store):
    """``--scheduler foo`` used to print a ``Client.__del__`` traceback about 20 s after the error."""
    done = subprocess.run([sys.executable, "-m", "spcakit", "run", "spcart", "-d", str(store), "--scheduler", "foo"],
                          capture_output=True, text=True, timeout=60, env={**os.environ, "SPCAKIT_SCHEDULER_TIMEOUT": "1"})  # fmt: skip
    assert done.returncode == 2 and "--scheduler foo: no host and port" in done.stderr
    assert "Exception ignored" not in done.stderr and "Traceback" not in done.stderr


# -- computing --------------------------------------------------------------------------------------------------
def local_cluster(workers: int):
    return distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=False, protocol="tcp://",
                                    host="127.0.0.1", dashboard_address=None)  # fmt: skip


def test_a_scheduler_without_workers_ends_the_fit_naming_it():
    with local_cluster(0) as cluster:
        x = da.from_array(np.random.default_rng(1).standard_normal((40, 5)), chunks=(10, 5))
        with elapsed(6.0), pytest.raises(ClusterError, match=rf"--scheduler {cluster.scheduler_address}: the "
                                                             r"scheduler has had no worker \(a lost worker\?\) for 0.5 s"):
            with connected(cluster.scheduler_address, timeout=0.5):
                spcakit.fit(x, "spcart", r=1)


def test_a_worker_lost_mid_computation_ends_it_naming_the_scheduler():
    with local_cluster(1) as cluster:
        (worker,) = cluster.workers.values()
        killer = threading.Timer(0.3, lambda: cluster.sync(worker.close))
        killer.start()
        try:
            with elapsed(6.0), pytest.raises(ClusterError, match="has had no worker"):
                with connected(cluster.scheduler_address, timeout=0.5):
                    dask.compute(dask.delayed(time.sleep)(1.5))
        finally:
            killer.join()


def test_a_stalled_computation_is_cancelled_after_the_compute_timeout(monkeypatch):
    monkeypatch.setenv("SPCAKIT_COMPUTE_TIMEOUT", "0.5")
    with local_cluster(1) as cluster:
        with elapsed(5.0), pytest.raises(ClusterError, match=r"a computation on the cluster did not finish within "
                                                             r"0.5 s \(stalled workers\?\); it was cancelled"):
            with connected(cluster.scheduler_address):
                dask.compute(dask.delayed(time.sleep)(1.5))


def test_a_healthy_cluster_still_computes_and_persists(monkeypatch):
    monkeypatch.setattr(clusters, "SCHEDULER_TIMEOUT", 2.0)
    x = np.random.default_rng(2).standard_normal((30, 40))  # wide: persisted on the workers
    with local_cluster(1) as cluster, connected(cluster.scheduler_address) as client:
        result = spcakit.fit(da.from_array(x, chunks=(15, 40)), "spcart", r=1)
        assert client.status == "running"
    np.testing.assert_allclose(result.loadings, spcakit.fit(x, "spcart", r=1).loadings, rtol=0, atol=1e-8)
    assert dask.config.get("scheduler", None) is None  # the block's scheduler is gone with it
